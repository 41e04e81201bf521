//! Building a client from the command line's target options.

use a2a_client::{CallOptions, CardResolver, Client, ClientBuilder};
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

/// Fetches the card (with the same headers).
pub(crate) async fn card(target: &Target) -> anyhow::Result<AgentCard> {
    let mut resolver = CardResolver::new();
    for (name, value) in options(target)?.headers {
        resolver = resolver.header(name, value);
    }
    resolver
        .resolve(&target.url)
        .await
        .with_context(|| format!("cannot get the agent card of {}", target.url))
}

/// A client for the target, on the requested or preferred binding.
pub(crate) async fn client(target: &Target) -> anyhow::Result<(Client, CallOptions)> {
    let card = card(target).await?;
    let mut builder = a2a_grpc::register(ClientBuilder::new()).default_options(options(target)?);
    if let Some(transport) = &target.transport {
        let wanted = binding_name(transport)?;
        if card.interface(wanted).is_none() {
            bail!("{} does not offer {wanted}", card.name);
        }
        builder = builder.prefer([wanted]);
    }
    Ok((builder.build(card)?, CallOptions::default()))
}
