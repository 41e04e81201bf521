//! The `a2a` command line as a library: [`Cli`] is the argument model and
//! [`run`] executes it. `main.rs` only parses and reports errors.

mod agent;
mod cli;
mod serve;

pub use self::agent::BuiltinAgent;
pub use self::cli::{Cli, Command, ServeArgs};

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
    }
}
