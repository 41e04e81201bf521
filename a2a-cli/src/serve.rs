//! `a2a serve`.

use std::net::SocketAddr;
use std::time::Duration;

use a2a_core::{AgentCard, AgentSkill, binding};
use a2a_grpc::router;
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind};
use a2a_server::{A2aService, DefaultRequestHandler};
use a2a_store_sql::{DurableStore, PushKey, StoreLocation};
use anyhow::Context as _;

use crate::{BuiltinAgent, ServeArgs};

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
    let (state, store) = open_state(&args, push_key).await?;
    let listener = bind(SocketAddr::new(args.host, args.port), DEFAULT_BACKLOG)
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let addr = listener.local_addr()?;
    let card = card(addr);
    let mut builder = DefaultRequestHandler::builder(BuiltinAgent, card);
    if let Some(store) = store {
        builder = store.install(builder);
    }
    let service = A2aService::new(builder.build());
    let app = router(service.clone(), HttpConfig::default());

    println!("A2A server listening on http://{addr} (JSON-RPC at /, HTTP+JSON, gRPC)");
    println!("Agent card: http://{addr}{}", a2a_core::AGENT_CARD_PATH);
    println!("State: {state}");
    println!("Press Ctrl-C to stop.");
    let grace = Duration::from_secs(args.shutdown_grace);
    a2a_server::http::serve_until(listener, app, service, stop_signal(), grace).await?;
    Ok(())
}

/// Opens the store `args` chose; returns a description of it for the banner.
async fn open_state(
    args: &ServeArgs,
    push_key: Option<PushKey>,
) -> anyhow::Result<(String, Option<DurableStore>)> {
    let location = args.state.location()?;
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
