//! Command-line arguments.

use std::net::IpAddr;

/// `a2a`: serve and call A2A agents.
#[derive(Debug, clap::Parser)]
#[command(name = "a2a", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run an A2A server with the built-in agent until Ctrl-C.
    Serve(ServeArgs),
}

/// Arguments of `a2a serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port to listen on (0 picks a free one).
    #[arg(long, short, default_value_t = 9999)]
    pub port: u16,
    /// Seconds running tasks get to finish on shutdown.
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace: u64,
}
