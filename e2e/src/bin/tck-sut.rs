//! The A2A TCK's system under test: `cargo run -p e2e --bin tck-sut -- --port P`.

use std::net::{IpAddr, SocketAddr};

use clap::Parser;

/// Serves the conformance test agent until Ctrl-C.
#[derive(Debug, Parser)]
struct Args {
    /// Port to listen on.
    #[arg(long, default_value_t = 9999)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: IpAddr,
    /// Where state lives: memory, sqlite:DIR or a postgres:// URL.
    #[arg(long, default_value = "memory")]
    store: a2a_store_sql::StoreLocation,
    /// `minimal`: declare no streaming, no push notifications and no extended
    /// card; `required-extension`: require an extension. For the kit's tests
    /// of a capability's absence (`full`, the default, declares everything).
    #[arg(long, default_value = "full")]
    capabilities: String,
    /// Join a cluster on the (PostgreSQL) store as this node (with
    /// --gateway: every agent of the gateway, each in its own schema).
    #[arg(long)]
    node_id: Option<String>,
    /// The address the card names instead of the listening one (a proxy in
    /// front of a cluster), as host:port.
    #[arg(long)]
    public_addr: Option<SocketAddr>,
    /// Serve the agent as agent `tck` of a gateway (beside another agent):
    /// its card at /agents/tck, and the root card pointing there.
    #[arg(long)]
    gateway: bool,
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
    let capabilities = match args.capabilities.as_str() {
        "full" => e2e::TckCapabilities::Full,
        "minimal" => e2e::TckCapabilities::Minimal,
        "required-extension" => e2e::TckCapabilities::RequiredExtension,
        other => {
            anyhow::bail!("--capabilities is full, minimal or required-extension, not {other:?}")
        }
    };
    let addr = SocketAddr::new(args.host, args.port);
    if args.gateway {
        let node = args.node_id.as_ref().map(|name| e2e::TckGatewayNode {
            name: name.clone(),
            public_addr: args.public_addr,
        });
        let addr = e2e::start_tck_gateway_node(addr, &args.store, capabilities, node).await?;
        println!("tck-sut listening on http://{addr} (agent tck of a gateway: /agents/tck)");
    } else if let Some(node) = &args.node_id {
        let (store, bus) = args.store.open_cluster(None).await?;
        let node = e2e::TckNode {
            name: node.clone(),
            bus,
            public_addr: args.public_addr,
        };
        let sut = e2e::start_tck_node(addr, store, node, capabilities).await?;
        println!("tck-sut listening on http://{}", sut.addr);
    } else {
        let store = args.store.open(None).await?;
        let sut = e2e::start_tck_sut_with(addr, store, capabilities).await?;
        println!("tck-sut listening on http://{}", sut.addr);
    }
    tokio::signal::ctrl_c().await?;
    Ok(())
}
