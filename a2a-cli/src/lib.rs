//! The `a2a` command line as a library: [`Cli`] is the argument model and
//! [`run`] executes it. `main.rs` only parses and reports errors.

mod agent;
mod cli;
mod commands;
mod connect;
mod gateway;
mod jobs;
mod log;
mod output;
mod serve;

pub use self::agent::BuiltinAgent;
pub use self::cli::{
    Cli, Command, GetArgs, JobShowArgs, JobsCommand, JobsListArgs, JobsPruneArgs, ListArgs,
    LogArgs, LogCommand, PushCommand, SendArgs, ServeArgs, StateArgs, Target, TaskArgs,
};

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(args).await,
        Command::Card(target) => commands::show_card(target).await,
        Command::Send(args) => commands::send(args).await,
        Command::Get(args) => commands::get(args).await,
        Command::List(args) => commands::list(args).await,
        Command::Cancel(args) => commands::cancel(args).await,
        Command::Subscribe(args) => commands::subscribe(args).await,
        Command::Push(command) => commands::push(command).await,
        Command::Jobs(command) => jobs::run(command).await,
        Command::Log(args) => log::run(&args),
    }
}
