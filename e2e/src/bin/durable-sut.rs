//! A durable server for crash tests: the multi-turn `TurnAgent` on a SQLite
//! or PostgreSQL store. `cargo run -p e2e --bin durable-sut -- --store sqlite:DIR --effects FILE`
//! prints `listening on URL` once it serves. With `--node-id NAME` on a
//! PostgreSQL store it is a node of a cluster.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use a2a_core::{AgentCard, binding};
use a2a_server::cluster::ClusterConfig;
use a2a_server::http::{DEFAULT_BACKLOG, HttpConfig, bind, serve_until};
use a2a_server::{A2aService, DefaultRequestHandler, JobConfig};
use a2a_store_sql::StoreLocation;
use clap::Parser;

/// Serves the crash-test agent until Ctrl-C (or until it is killed).
#[derive(Debug, Parser)]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where state lives: sqlite:DIR or a postgres:// URL.
    #[arg(long)]
    store: StoreLocation,
    /// The file the agent notes its side effects in.
    #[arg(long)]
    effects: PathBuf,
    /// Most resumed executions at once after a restart.
    #[arg(long, default_value_t = 1024)]
    resume_parallelism: usize,
    /// Offer push notifications (webhooks on 127.0.0.1 allowed).
    #[arg(long)]
    push: bool,
    /// Join a cluster on the (PostgreSQL) store as this node.
    #[arg(long)]
    node_id: Option<String>,
    /// With --node-id: the lease timeout, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    lease_timeout_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // Logs (RUST_LOG, default warnings) on stderr; stdout carries the banner.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();
    let listener = bind(
        SocketAddr::from(([127, 0, 0, 1], args.port)),
        DEFAULT_BACKLOG,
    )?;
    let addr = listener.local_addr()?;
    let card = AgentCard::new("durable", "multi-turn crash-test agent")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_streaming(true)
        .with_push_notifications(args.push);
    let agent = e2e::TurnAgent::new(args.effects)?;
    let mut jobs = JobConfig::default();
    jobs.resume_parallelism = args.resume_parallelism;
    let builder = match &args.node_id {
        Some(node) => {
            node.clone_into(&mut jobs.node);
            let (store, bus) = args.store.open_cluster(None).await?;
            let mut cluster = ClusterConfig::default();
            cluster.lease_timeout = Duration::from_millis(args.lease_timeout_ms);
            // Webhooks on 127.0.0.1: the tests' receivers.
            let builder = DefaultRequestHandler::builder(agent, card)
                .push_address_policy(e2e::loopback_policy())
                .job_config(jobs)
                .cluster(bus, cluster);
            store.install(builder)
        }
        None => {
            let builder = DefaultRequestHandler::builder(agent, card)
                .push_address_policy(e2e::loopback_policy())
                .job_config(jobs);
            match args.store.open(None).await? {
                Some(store) => store.install(builder),
                None => anyhow::bail!("durable-sut needs a durable store"),
            }
        }
    };
    let service = A2aService::new(builder.build());
    let app = a2a_server::http::router(service.clone(), HttpConfig::default());
    println!("listening on http://{addr}");
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve_until(listener, app, service, stop, Duration::from_secs(5)).await?;
    Ok(())
}
