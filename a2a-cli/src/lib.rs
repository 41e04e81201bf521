#![doc = include_str!("../README.md")]
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
mod cli;
mod commands;
mod config;
mod connect;
mod conversations;
mod docs;
pub mod exit;
mod gateway;
mod hub;
mod jobs;
mod log;
mod mcp;
mod output;
mod serve;
mod telemetry;

pub use self::agent::BuiltinAgent;
pub use self::cli::{
    CardArgs, Cli, Command, CompletionsArgs, ConfigCommand, ConversationsArgs,
    ConversationsCommand, DEFAULT_HUB_URL, GetArgs, HubArgs, HubCollaborateArgs, HubCommand,
    HubPostArgs, HubServer, JobShowArgs, JobsCancelArgs, JobsCommand, JobsListArgs, JobsPruneArgs,
    ListArgs, LogArgs, LogCommand, ManArgs, McpArgs, PushCommand, SendArgs, ServeArgs, StateArgs,
    Target, TaskArgs,
};
pub use self::log::SearchArgs;

/// Runs a parsed command line. A command whose standard output was closed
/// under it (`a2a log today | head -1`) has done all anyone wanted: `Ok`.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match execute(cli).await {
        Err(err) if output::is_stdout_closed(&err) => Ok(()),
        done => done,
    }
}

async fn execute(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Card(args) => commands::show_card(args).await,
        Command::Send(args) => commands::send(args).await,
        Command::Get(args) => commands::get(args).await,
        Command::List(args) => commands::list(args).await,
        Command::Cancel(args) => commands::cancel(args).await,
        Command::Subscribe(args) => commands::subscribe(args).await,
        Command::Push(command) => commands::push(command).await,
        Command::Jobs(command) => jobs::run(command).await,
        Command::Log(args) => log::run(&args),
        Command::Conversations(args) => conversations::run(&args).await,
        Command::Hub(args) => hub::run(args).await,
        Command::Mcp(args) => commands::mcp(args).await,
        Command::Config(command) => config::run(&command),
        Command::Completions(args) => docs::completions(&args),
        Command::Man(args) => docs::man(&args),
    }
}
