//! `a2a serve`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_conversation::{ConversationLog, HandlerBuilderExt as _, LogConfig};
use a2a_core::{AgentCard, AgentSkill, binding};
use a2a_gateway::config::GatewayConfig;
use a2a_grpc::router;
use a2a_server::auth::{ApiKeyAuth, Authenticate, BearerAuth, JwtAuth, Principal};
use a2a_server::cluster::ClusterConfig;
use a2a_server::http::{BodyBudget, DEFAULT_BACKLOG, HttpConfig, ServeConfig, TlsConfig, bind};
use a2a_server::{A2aService, DefaultRequestHandler, JobConfig};
use a2a_signing::{CardSigner, SigningAlgorithm};
use a2a_store_sql::{DurableStore, PostgresCluster, PushKey, StoreLocation};
use anyhow::Context as _;

use crate::cli::AuthArgs;
use crate::output::sayln;
use crate::{BuiltinAgent, ServeArgs};

/// The authentication `a2a serve` was asked for.
enum Auth {
    Bearer(BearerAuth),
    ApiKey(ApiKeyAuth),
    Jwt(Box<JwtAuth>),
}

impl Auth {
    fn enforce_on(self, service: A2aService) -> A2aService {
        match self {
            Auth::Bearer(auth) => service.with_authentication(auth),
            Auth::ApiKey(auth) => service.with_authentication(auth),
            Auth::Jwt(auth) => service.with_authentication(*auth),
        }
    }

    fn into_authenticate(self) -> Arc<dyn Authenticate> {
        match self {
            Auth::Bearer(auth) => Arc::new(auth),
            Auth::ApiKey(auth) => Arc::new(auth),
            Auth::Jwt(auth) => Arc::new(*auth),
        }
    }
}

/// The authentication `auth` asks for; `None` when it asks for none.
fn authentication(auth: &AuthArgs) -> anyhow::Result<Option<Auth>> {
    if !auth.bearer_tokens.is_empty() {
        let tokens = auth.bearer_tokens.iter().enumerate().try_fold(
            BearerAuth::new(),
            |tokens, (i, token)| {
                if token.trim().is_empty() {
                    anyhow::bail!("--auth-bearer-token must not be empty");
                }
                Ok(tokens.token(token.trim(), Principal::new(format!("bearer-{}", i + 1))))
            },
        )?;
        return Ok(Some(Auth::Bearer(tokens)));
    }
    if let Some((first, _)) = auth.api_keys.first().and_then(|k| k.split_once('=')) {
        let mut keys = ApiKeyAuth::new(first.trim())?;
        for (i, entry) in auth.api_keys.iter().enumerate() {
            let Some((header, key)) = entry.split_once('=').filter(|(_, k)| !k.is_empty()) else {
                anyhow::bail!("--auth-api-key takes HEADER=KEY, got {entry:?}");
            };
            if !header.trim().eq_ignore_ascii_case(first.trim()) {
                anyhow::bail!("every --auth-api-key must use the same header");
            }
            keys = keys.key(key, Principal::new(format!("api-key-{}", i + 1)));
        }
        return Ok(Some(Auth::ApiKey(keys)));
    }
    if let Some(entry) = auth.api_keys.first() {
        anyhow::bail!("--auth-api-key takes HEADER=KEY, got {entry:?}");
    }
    if let (Some(jwks), Some(audience), Some(issuer)) =
        (&auth.jwt_jwks, &auth.jwt_audience, &auth.jwt_issuer)
    {
        if !(jwks.starts_with("https://") || jwks.starts_with("http://")) {
            anyhow::bail!("--auth-jwt-jwks takes an http(s) URL, got {jwks:?}");
        }
        let jwt = JwtAuth::new(jwks.clone(), audience.clone(), issuer.clone());
        return Ok(Some(Auth::Jwt(Box::new(jwt))));
    }
    Ok(None)
}

/// The card; with TLS every interface URL is `https://` (gRPC's included,
/// since a bare `host:port` means plaintext to clients).
/// `public` (--public-url) replaces the listening address, so that every
/// node of a cluster behind one address serves the same card.
fn card(addr: SocketAddr, tls: bool, public: Option<&reqwest::Url>) -> AgentCard {
    let (jsonrpc, grpc) = match public {
        Some(url) => {
            let base = url.as_str().trim_end_matches('/');
            let grpc = match (url.scheme(), url.host_str(), url.port_or_known_default()) {
                ("http", Some(host), Some(port)) => format!("{host}:{port}"),
                _ => base.to_owned(),
            };
            (format!("{base}/"), grpc)
        }
        None if tls => (format!("https://{addr}/"), format!("https://{addr}")),
        None => (format!("http://{addr}/"), addr.to_string()),
    };
    AgentCard::new(
        "a2a echo agent",
        "The built-in agent of `a2a serve`: echoes your message back, streamed word by word.",
    )
    .with_interface(jsonrpc.clone(), binding::JSONRPC)
    .with_interface(jsonrpc.trim_end_matches('/'), binding::HTTP_JSON)
    .with_interface(grpc, binding::GRPC)
    .with_skill(
        AgentSkill::new(
            "echo",
            "Echo",
            "Repeats the message as an artifact; send `?` to be asked for input.",
        )
        .with_tags(["echo", "demo"]),
    )
    .with_streaming(true)
    .with_push_notifications(true)
}

/// Ctrl-C, or SIGTERM (how service managers stop a process), listened for
/// from the call on: called before the banner says how to stop the server,
/// so that a signal sent as soon as it is read stops it cleanly instead of
/// killing it (the default action, until a listener is installed).
fn stop_signal() -> anyhow::Result<futures::future::BoxFuture<'static, ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for Ctrl-C")?;
        let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        Ok(Box::pin(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            sayln!("Shutting down.");
        }))
    }
    #[cfg(not(unix))]
    {
        Ok(Box::pin(async {
            let _ = tokio::signal::ctrl_c().await;
            sayln!("Shutting down.");
        }))
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let telemetry = crate::telemetry::Telemetry::init()?;
    // Flags are checked before anything is opened or bound.
    let auth = authentication(&args.auth)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(TlsConfig::from_pem_files(cert, key)?),
        _ => None,
    };
    let push_key = args
        .push_key_file
        .as_deref()
        .map(PushKey::from_file)
        .transpose()?;
    let card_signer = card_signer(&args)?;
    // Only --node-id reads it (the parser refuses it without), but a bad
    // value is refused before the cluster's database is opened.
    let lease = lease_timeout(args.lease_timeout)?;
    // A gateway file is read and checked whole before anything is opened or
    // bound (as `a2a config check` does).
    let gateway_config = match &args.config {
        Some(path) => {
            let config = GatewayConfig::load(path)?;
            let hub = crate::gateway::check(&config)?;
            Some((config, hub))
        }
        None => None,
    };
    let location = args.state.location()?;
    if let Some(node) = &args.node_id {
        check_node_id(node)?;
    }
    if args.node_id.is_some() && !matches!(location, StoreLocation::Postgres(_)) {
        anyhow::bail!(
            "--node-id needs a PostgreSQL --store (postgres://…): only a database several \
             servers share can hold a cluster, not {location}"
        );
    }
    // The budget every router built from a default config counts against:
    // the bindings', the gateway's agents' and the hub's.
    let budget_bytes = usize::try_from(args.body_budget_mib)
        .ok()
        .and_then(|mib| mib.checked_mul(1024 * 1024))
        .context("--body-budget-mib is too large for this machine")?;
    BodyBudget::shared().resize(budget_bytes);
    let listener = bind(SocketAddr::new(args.host, args.port), DEFAULT_BACKLOG)
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let log_dir = (!args.no_conversation_log).then(|| args.state.data_dir.clone());
    let log = match &log_dir {
        Some(dir) => Some(
            // A node writes its own files: nodes may share the directory.
            ConversationLog::open(dir, LogConfig::default().node(args.node_id.clone()))
                .with_context(|| {
                    format!("cannot open the conversation log in {}", dir.display())
                })?,
        ),
        None => None,
    };
    let authenticated = auth.is_some();
    let index =
        crate::conversations::open_index(&location, &args.state.data_dir, args.node_id.is_some())
            .await?;
    let mut conversations = a2a_gateway::Conversations::new(index.clone());
    if let Some(log) = &log {
        conversations = conversations.log(log.clone());
    }
    let hub_dir = match &location {
        StoreLocation::Memory => None,
        _ => Some(args.state.data_dir.join("hub")),
    };
    let mut hub = None;
    let (service, app, state) = match gateway_config {
        None => {
            let (state, store, bus) = match &args.node_id {
                Some(node) => open_node(&location, push_key, node).await?,
                None => {
                    let (state, store) = open_state(&location, push_key).await?;
                    (state, store, None)
                }
            };
            let mut card = card(addr, tls.is_some(), args.public_url.as_ref());
            if let Some(signer) = &card_signer {
                signer
                    .sign(&mut card)
                    .context("cannot sign the agent card")?;
            }
            let mut builder = DefaultRequestHandler::builder(BuiltinAgent, card);
            if let Some(store) = store {
                builder = store.install(builder);
            }
            let mut jobs = job_config(&args);
            if let (Some(bus), Some(node)) = (bus, &args.node_id) {
                node.clone_into(&mut jobs.node);
                let mut cluster = ClusterConfig::default();
                cluster.lease_timeout = lease;
                builder = builder.cluster(bus, cluster);
            }
            builder = builder.job_config(jobs);
            if let Some(log) = log {
                builder = builder.conversation_log(log);
            }
            let handler = builder.build();
            let name = a2a_server::RequestHandler::card(&handler).name.clone();
            let service =
                A2aService::from_shared(conversations.wrap(&name, std::sync::Arc::new(handler)));
            let service = match auth {
                Some(auth) => auth.enforce_on(service),
                None => service,
            };
            let app = router(service.clone(), HttpConfig::default());
            // The agent as an MCP tool at /mcp, authenticated as the bindings are.
            let tool = a2a_mcp::AgentTool::service(&name, service.clone());
            let app = app.merge(a2a_mcp::http::router(
                a2a_mcp::AgentTools::new(vec![tool]),
                service.clone(),
                HttpConfig::default(),
            ));
            sayln!("A2A server listening on {scheme}://{addr} (JSON-RPC at /, HTTP+JSON, gRPC)");
            sayln!("Agent card: {scheme}://{addr}{}", a2a_core::AGENT_CARD_PATH);
            sayln!(
                "MCP: {scheme}://{addr}{} (the agent as a tool)",
                a2a_mcp::http::MCP_PATH
            );
            (service, app, state)
        }
        Some((config, hub_config)) => {
            let local_url = format!("{scheme}://{addr}");
            // The cards name the public address: every node serves the same.
            let base_url = match &args.public_url {
                Some(url) => url.as_str().trim_end_matches('/').to_owned(),
                None => local_url.clone(),
            };
            let cluster = args.node_id.as_ref().map(|node| {
                let mut config = ClusterConfig::default();
                config.lease_timeout = lease;
                crate::gateway::Node {
                    name: node.clone(),
                    config,
                }
            });
            let (gateway, opened_hub) = crate::gateway::build(
                &config,
                hub_config,
                &base_url,
                crate::gateway::Setup {
                    location: &location,
                    push_key,
                    log,
                    auth: auth.map(Auth::into_authenticate),
                    hub_dir: hub_dir.as_deref(),
                    card_signer: card_signer.clone(),
                    jobs: job_config(&args),
                    conversations,
                    local_url: local_url.clone(),
                    cluster,
                },
            )
            .await?;
            let http = HttpConfig::default();
            let mut app = gateway.router(http.clone());
            if let Some(opened) = opened_hub {
                app = app.merge(a2a_hub::http::router_with_config(
                    opened.clone(),
                    gateway.clone(),
                    http,
                ));
                hub = Some(opened);
            }
            sayln!(
                "A2A gateway listening on {local_url} with {} agent(s) from {}:",
                gateway.agents().len(),
                config.path.display()
            );
            sayln!("{}", gateway.table().trim_end());
            if let Some(hub) = &hub {
                sayln!(
                    "Collaboration hub: {base_url}{} (page), agent {:?}; its agents:",
                    a2a_hub::http::HUB_PATH,
                    hub.name()
                );
                sayln!("{}", hub.mapping_table().trim_end());
                if hub.operator_token_is_new() {
                    // Shown once, when made: it lifts the loop guards'
                    // pauses where nobody is authenticated.
                    let kept = hub
                        .operator_token_file()
                        .map(|file| format!(" (kept in {})", file.display()))
                        .unwrap_or_default();
                    sayln!(
                        "Operator token{kept}, to resume paused threads without authentication: {}",
                        hub.operator_token()
                    );
                }
            }
            sayln!(
                "Root card: {base_url}{} (agent {}); list: {base_url}{}",
                a2a_core::AGENT_CARD_PATH,
                gateway.default_agent(),
                a2a_gateway::AGENTS_PATH
            );
            sayln!(
                "MCP: {base_url}{} (every agent as a tool); MCP servers connected: {}",
                a2a_mcp::http::MCP_PATH,
                gateway.mcp_toolboxes().len()
            );
            let state = match &location {
                StoreLocation::Sqlite(dir) => {
                    format!(
                        "SQLite in {}, one database per agent",
                        dir.join("agents").display()
                    )
                }
                StoreLocation::Postgres(_) => match &args.node_id {
                    Some(node) => format!(
                        "PostgreSQL, one schema per agent (a2a_agent_NAME), cluster node {node}"
                    ),
                    None => "PostgreSQL, one schema per agent (a2a_agent_NAME)".to_owned(),
                },
                StoreLocation::Memory => "in memory (lost on exit)".to_owned(),
            };
            (gateway.service().clone(), app, state)
        }
    };
    sayln!("State: {state}");
    match &log_dir {
        Some(dir) => sayln!(
            "Conversation log: {} (a2a log today)",
            dir.join(a2a_conversation::STREAM_DIR).display()
        ),
        None => sayln!("Conversation log: off"),
    }
    if !authenticated {
        sayln!(
            "Warning: no authentication (--auth-*): every caller is the same anonymous user \
             and sees every task."
        );
    }
    let stop = stop_signal()?;
    sayln!("Press Ctrl-C to stop.");
    let mut config = ServeConfig::default();
    config.grace = Duration::from_secs(args.shutdown_grace);
    if let Some(tls) = tls {
        config = config.with_tls(tls);
    }
    let grace = config.grace;
    a2a_server::http::serve_with(listener, app, service, stop, config).await?;
    if let Some(hub) = hub {
        hub.shutdown(grace).await;
    }
    if let Err(err) = index.flush().await {
        tracing::warn!(error = %err, "saving the conversation index failed");
    }
    // Flushing waits on the exporter's threads: not on the runtime's.
    let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
    Ok(())
}

/// The signer of `--card-key`, checked before anything is opened or bound.
/// The job settings of every handler `a2a serve` builds: the task retention
/// of `--task-retention-days` (0 keeps tasks for ever), the rest default.
fn job_config(args: &ServeArgs) -> JobConfig {
    let mut jobs = JobConfig::default();
    jobs.task_retention = (args.task_retention_days > 0)
        .then(|| Duration::from_secs(args.task_retention_days.saturating_mul(24 * 60 * 60)));
    jobs
}

fn card_signer(args: &ServeArgs) -> anyhow::Result<Option<std::sync::Arc<CardSigner>>> {
    let (Some(path), Some(kid)) = (&args.card_key, &args.card_key_id) else {
        return Ok(None);
    };
    let algorithm = SigningAlgorithm::from_name(&args.card_key_alg).with_context(|| {
        format!(
            "unknown --card-key-alg {:?}: use ES256, EdDSA or RS256",
            args.card_key_alg
        )
    })?;
    let pem = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the card key {}", path.display()))?;
    let signer = CardSigner::from_pem(&pem, algorithm, kid)
        .with_context(|| format!("the card key {}", path.display()))?;
    Ok(Some(std::sync::Arc::new(signer)))
}

/// Opens the PostgreSQL store at `location` as cluster node `node`.
async fn open_node(
    location: &StoreLocation,
    push_key: Option<PushKey>,
    node: &str,
) -> anyhow::Result<(String, Option<DurableStore>, Option<PostgresCluster>)> {
    let (store, bus) = location
        .open_cluster(push_key)
        .await
        .with_context(|| format!("cannot join the cluster on {location} as node {node}"))?;
    Ok((
        format!("PostgreSQL, cluster node {node}"),
        Some(store),
        Some(bus),
    ))
}

/// `--node-id`, checked.
fn check_node_id(node: &str) -> anyhow::Result<()> {
    if node.is_empty() || node.len() > 200 || node.chars().any(char::is_control) {
        anyhow::bail!("--node-id {node:?}: use a short printable name, unique in the cluster");
    }
    Ok(())
}

/// `--lease-timeout`, checked.
fn lease_timeout(secs: f64) -> anyhow::Result<Duration> {
    if !(0.1..=3600.0).contains(&secs) {
        anyhow::bail!("--lease-timeout {secs}: use between 0.1 and 3600 seconds");
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Opens the store at `location`; returns a description of it for the banner.
async fn open_state(
    location: &StoreLocation,
    push_key: Option<PushKey>,
) -> anyhow::Result<(String, Option<DurableStore>)> {
    let description = match &location {
        StoreLocation::Memory => "in memory (lost on exit)".to_owned(),
        StoreLocation::Sqlite(dir) => format!("SQLite in {}", dir.display()),
        StoreLocation::Postgres(_) => "PostgreSQL".to_owned(),
    };
    let store = location
        .open(push_key)
        .await
        .with_context(|| format!("cannot open the state ({location})"))?;
    Ok((description, store))
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Command};

    fn serve_args(args: &[&str]) -> ServeArgs {
        let argv = ["a2a", "serve"].iter().chain(args);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Serve(args) => *args,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn task_retention_is_30_days_unless_told_and_0_keeps_tasks() {
        let day = Duration::from_secs(24 * 60 * 60);
        assert_eq!(job_config(&serve_args(&[])).task_retention, Some(30 * day));
        let told = serve_args(&["--task-retention-days", "90"]);
        assert_eq!(job_config(&told).task_retention, Some(90 * day));
        let kept = serve_args(&["--task-retention-days", "0"]);
        assert_eq!(job_config(&kept).task_retention, None);
        assert_eq!(
            job_config(&kept).retention,
            7 * day,
            "job records keep their own retention"
        );
    }
}
