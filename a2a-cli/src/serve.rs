//! `a2a serve`.

use std::net::SocketAddr;
use std::time::Duration;

use a2a_core::{AgentCard, AgentSkill, binding};
use a2a_grpc::router;
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind};
use a2a_server::{A2aService, DefaultRequestHandler, HandlerBuilder};
use a2a_store_sql::{PostgresStore, PushKey, SqliteOptions, SqliteStore};
use anyhow::Context as _;

use crate::{BuiltinAgent, ServeArgs, StoreChoice};

fn card(addr: SocketAddr) -> AgentCard {
    AgentCard::new(
        "a2a echo agent",
        "The built-in agent of `a2a serve`: echoes your message back, streamed word by word.",
    )
    .with_interface(format!("http://{addr}/"), binding::JSONRPC)
    .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
    .with_interface(addr.to_string(), binding::GRPC)
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

/// Ctrl-C, or SIGTERM (how service managers stop a process).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            println!("Shutting down.");
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
    println!("Shutting down.");
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    // Logs go to stderr: stdout carries the banner scripts read.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let push_key = args
        .push_key_file
        .as_deref()
        .map(PushKey::from_file)
        .transpose()?;
    let (state, with_state) = open_state(&args, push_key).await?;
    let listener = bind(SocketAddr::new(args.host, args.port), DEFAULT_BACKLOG)
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let card = card(addr);
    let builder = DefaultRequestHandler::builder(BuiltinAgent, card);
    let service = A2aService::new(with_state(builder).build());
    let app = router(service.clone(), HttpConfig::default());

    println!("A2A server listening on http://{addr} (JSON-RPC at /, HTTP+JSON, gRPC)");
    println!("Agent card: http://{addr}{}", a2a_core::AGENT_CARD_PATH);
    println!("State: {state}");
    println!("Press Ctrl-C to stop.");
    let grace = Duration::from_secs(args.shutdown_grace);
    a2a_server::http::serve_until(listener, app, service, stop_signal(), grace).await?;
    Ok(())
}

/// Puts the chosen stores into a handler builder.
type WithState = Box<dyn FnOnce(HandlerBuilder) -> HandlerBuilder>;

/// Opens the store `args` chose; returns a description of it for the banner.
async fn open_state(
    args: &ServeArgs,
    push_key: Option<PushKey>,
) -> anyhow::Result<(String, WithState)> {
    match &args.store {
        StoreChoice::Memory => Ok((
            "in memory (lost on exit)".to_owned(),
            Box::new(|builder| builder),
        )),
        StoreChoice::Sqlite => {
            let mut options = SqliteOptions::new(&args.data_dir);
            if let Some(key) = push_key {
                options = options.push_key(key);
            }
            let store = SqliteStore::open_with(options)
                .await
                .with_context(|| format!("cannot open the state in {}", args.data_dir.display()))?;
            let description = format!("SQLite in {}", args.data_dir.display());
            Ok((
                description,
                Box::new(move |builder| with_stores(builder, store)),
            ))
        }
        StoreChoice::Postgres(url) => {
            let store = PostgresStore::connect(url, push_key)
                .await
                .context("cannot open the state in PostgreSQL")?;
            Ok((
                "PostgreSQL".to_owned(),
                Box::new(move |builder| with_stores(builder, store)),
            ))
        }
    }
}

fn with_stores<S>(builder: HandlerBuilder, store: S) -> HandlerBuilder
where
    S: a2a_server::store::TaskStore
        + a2a_server::store::PushConfigStore
        + a2a_server::store::JobStore
        + Clone,
{
    builder
        .task_store(store.clone())
        .push_config_store(store.clone())
        .job_store(store)
}
