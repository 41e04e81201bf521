//! Building a client from the command line's target options.

use a2a_client::{CallOptions, Client, ClientBuilder, RootCertificates, TrustedKeys};
use a2a_core::{AgentCard, binding};
use anyhow::{Context as _, bail};

use crate::Target;

fn binding_name(transport: &str) -> anyhow::Result<&'static str> {
    Ok(
        match transport.to_ascii_lowercase().replace('-', "_").as_str() {
            "jsonrpc" | "json_rpc" => binding::JSONRPC,
            "http_json" | "http+json" | "rest" => binding::HTTP_JSON,
            "grpc" => binding::GRPC,
            other => bail!("unknown transport {other:?}; use jsonrpc, http_json or grpc"),
        },
    )
}

/// The service parameters every call of this invocation carries.
pub(crate) fn options(target: &Target) -> anyhow::Result<CallOptions> {
    let mut options = CallOptions::default();
    for header in &target.headers {
        let (name, value) = header
            .split_once(':')
            .with_context(|| format!("header {header:?} is not `Name: value`"))?;
        options = options.header(name.trim(), value.trim());
    }
    if let Some(token) = &target.token {
        options = options.header("authorization", format!("Bearer {token}"));
    }
    Ok(options)
}

/// A client builder with every binding, trusting `--tls-ca` besides the
/// system's roots.
fn builder(target: &Target) -> anyhow::Result<ClientBuilder> {
    let mut builder = a2a_grpc::register(ClientBuilder::new());
    if let Some(path) = &target.tls_ca {
        let roots = RootCertificates::system().add_pem_file(path)?;
        builder = builder.root_certificates(roots);
    }
    Ok(builder)
}

/// Fetches the card (with the same headers).
pub(crate) async fn card(target: &Target) -> anyhow::Result<AgentCard> {
    card_with(target, &builder(target)?).await
}

async fn card_with(target: &Target, builder: &ClientBuilder) -> anyhow::Result<AgentCard> {
    let mut resolver = builder.resolver();
    for (name, value) in options(target)?.headers {
        resolver = resolver.header(name, value);
    }
    resolver
        .resolve(&target.url)
        .await
        .with_context(|| format!("cannot get the agent card of {}", target.url))
}

/// The keys of `jwks`: an http(s) URL serving a JWKS (fetched as the
/// target's card is, trusting `--tls-ca`), or a JWKS file.
pub(crate) async fn trusted_keys(target: &Target, jwks: &str) -> anyhow::Result<TrustedKeys> {
    if jwks.starts_with("http://") || jwks.starts_with("https://") {
        return Ok(builder(target)?.fetch_trusted_keys(jwks).await?);
    }
    let text =
        std::fs::read_to_string(jwks).with_context(|| format!("cannot read the keys in {jwks}"))?;
    TrustedKeys::from_jwks_json(&text).with_context(|| format!("the keys in {jwks}"))
}

/// A client for the target, on the requested or preferred binding.
pub(crate) async fn client(target: &Target) -> anyhow::Result<(Client, CallOptions)> {
    let builder = builder(target)?;
    let card = card_with(target, &builder).await?;
    let mut builder = builder.default_options(options(target)?);
    if let Some(transport) = &target.transport {
        let wanted = binding_name(transport)?;
        if card.interface(wanted).is_none() {
            bail!("{} does not offer {wanted}", card.name);
        }
        builder = builder.prefer([wanted]);
    }
    Ok((builder.build(card)?, CallOptions::default()))
}
