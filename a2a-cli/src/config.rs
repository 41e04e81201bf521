//! `a2a config`: a gateway file checked as `a2a serve --config` checks it,
//! without serving; and the file's JSON Schema.

use std::path::Path;

use a2a_gateway::config::GatewayConfig;

use crate::cli::ConfigCommand;
use crate::output::outln;

pub(crate) fn run(command: &ConfigCommand) -> anyhow::Result<()> {
    match command {
        ConfigCommand::Check { file } => check(file),
        ConfigCommand::Schema => outln!("{}", schema()?),
    }
}

/// The gateway file's JSON Schema, as `schema/gateway.schema.json` holds it.
pub(crate) fn schema() -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(
        &a2a_hub::config::json_schema(),
    )?)
}

/// Loads `file` and runs the checks `a2a serve --config` runs before it
/// opens or starts anything; prints what the file declares.
fn check(file: &Path) -> anyhow::Result<()> {
    let config = GatewayConfig::load(file)?;
    let hub = crate::gateway::check(&config)?;
    let default = config
        .default
        .as_deref()
        .or_else(|| config.agents.first().map(|a| a.name.as_str()));
    outln!("{}: ok, {} agent(s)", file.display(), config.agents.len())?;
    for agent in &config.agents {
        let mark = match Some(agent.name.as_str()) == default {
            true => " (default)",
            false => "",
        };
        outln!("  {:<20} {}{mark}", agent.name, agent.kind())?;
    }
    match hub {
        Some(hub) => {
            let channels: Vec<&str> = hub.channels.iter().map(|c| c.name.as_str()).collect();
            outln!("hub: on (channels: {})", channels.join(", "))?;
        }
        None => outln!("hub: off")?,
    }
    for server in &config.mcp {
        let at = match &server.config.url {
            Some(url) => url.clone(),
            None => server.config.command.join(" "),
        };
        outln!("mcp: {} ({at})", server.name)?;
    }
    Ok(())
}
