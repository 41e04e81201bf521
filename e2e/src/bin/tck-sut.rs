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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let sut = e2e::start_tck_sut(SocketAddr::new(args.host, args.port)).await?;
    println!("tck-sut listening on http://{}", sut.addr);
    tokio::signal::ctrl_c().await?;
    Ok(())
}
