//! `sdk`: the SDK serving the echo agent as `a2a serve` serves it.

use a2a_conversation::HandlerBuilderExt as _;
use std::net::SocketAddr;

use a2a_server::DefaultRequestHandler;
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind};

/// The loopback listener every server mode binds, on `port` (0: any free
/// port).
pub(crate) fn listen(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    bind(SocketAddr::from(([127, 0, 0, 1], port)), DEFAULT_BACKLOG)
}
use a2a_store_sql::StoreLocation;

use crate::agent::{Echo, card};

/// Serves the SDK on `listener` until the process ends.
pub(crate) async fn serve_sdk(
    listener: tokio::net::TcpListener,
    store: StoreLocation,
    conversation_log: Option<std::path::PathBuf>,
    gateway: bool,
    node_id: Option<String>,
    bearer_token: Option<String>,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    let log = match conversation_log {
        Some(dir) => Some(a2a_conversation::ConversationLog::open(
            dir,
            Default::default(),
        )?),
        None => None,
    };
    let (app, service) = if gateway {
        use a2a_gateway::{AgentDefinition, Gateway};
        let mut stores = std::collections::HashMap::new();
        for name in ["bench", "other"] {
            if let Some(store) = store.open_for_agent(name, None).await? {
                stores.insert(name, store);
            }
        }
        let gateway = Gateway::builder()
            .agent(AgentDefinition::new("bench", card(addr), Echo))
            .agent(AgentDefinition::new("other", card(addr), Echo))
            .handler_setup(move |name, mut builder| {
                if let Some(store) = stores.remove(name) {
                    builder = store.install(builder);
                }
                if let Some(log) = &log {
                    builder = builder.conversation_log(log.clone());
                }
                builder
            })
            .build(&format!("http://{addr}"))?;
        (
            gateway.router(HttpConfig::default()),
            gateway.service().clone(),
        )
    } else {
        let mut builder = DefaultRequestHandler::builder(Echo, card(addr));
        match node_id {
            Some(node) => {
                let (opened, bus) = store.open_cluster(None).await?;
                let mut jobs = a2a_server::JobConfig::default();
                jobs.node = node;
                builder = opened.install(
                    builder
                        .job_config(jobs)
                        .cluster(bus, a2a_server::cluster::ClusterConfig::default()),
                );
            }
            None => {
                if let Some(store) = store.open(None).await? {
                    builder = store.install(builder);
                }
            }
        }
        if let Some(log) = log {
            builder = builder.conversation_log(log);
        }
        let mut service = a2a_server::A2aService::new(builder.build());
        if let Some(token) = bearer_token {
            use a2a_server::auth::{BearerAuth, Principal};
            service = service
                .with_authentication(BearerAuth::new().token(token, Principal::new("bench")));
        }
        (
            a2a_grpc::router(service.clone(), HttpConfig::default()),
            service,
        )
    };
    // Served as `a2a serve` serves: its connection handling and limits.
    a2a_server::http::serve_with(
        listener,
        app,
        service,
        std::future::pending(),
        a2a_server::http::ServeConfig::default(),
    )
    .await?;
    Ok(())
}

/// The log `a2a serve` installs (a2a-cli/src/telemetry.rs), with its default
/// filter unless `RUST_LOG` says otherwise: the benchmark's server pays for
/// logging what the CLI's does. (Without any subscriber, the `log` fallback
/// that sqlx turns on in `tracing` makes every disabled span cost a record.)
pub(crate) fn install_log() {
    use tracing_subscriber::EnvFilter;
    const DEFAULT_LOG: &str =
        "info,a2a::server=warn,a2a::client=warn,a2a::execution=warn,a2a::push=warn";
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG.into());
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}
