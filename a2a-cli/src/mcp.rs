//! `a2a mcp --url URL`: the agents of an A2A server as MCP tools, served on
//! standard input and output (an MCP client starts this command).
//!
//! A gateway lists its agents at `/agents` (name and card URL of each):
//! every agent becomes a tool. Any other server (or a URL that is one
//! agent's) is one agent: the card at the URL. Tool calls go to the agents
//! over A2A with the given bearer token, as `a2a send` would.
//!
//! Standard output is the MCP channel: nothing else may be written there
//! (logs go to standard error).

use a2a_mcp::{AgentTool, AgentTools};
use anyhow::Context as _;

use crate::{McpArgs, Target};

/// The gateway's list of agents, when the URL is a gateway's.
#[derive(serde::Deserialize)]
struct Listing {
    agents: Vec<Listed>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Listed {
    name: String,
    card_url: String,
}

pub(crate) async fn run(args: McpArgs) -> anyhow::Result<()> {
    let _telemetry = crate::telemetry::Telemetry::init()?;
    let token = match (&args.bearer_token, &args.bearer_token_env) {
        (Some(token), _) => Some(token.clone()),
        (None, Some(variable)) => Some(
            std::env::var(variable)
                .with_context(|| format!("the environment variable {variable} is not set"))?,
        ),
        (None, None) => None,
    };
    let target = |url: &str| Target {
        url: url.to_owned(),
        json: false,
        transport: None,
        headers: Vec::new(),
        token: token.clone(),
        tls_ca: args.tls_ca.clone(),
    };
    let base = args.url.trim_end_matches('/');
    let mut tools = Vec::new();
    match listing(base, token.as_deref(), &args).await {
        Some(listing) if !listing.agents.is_empty() => {
            for agent in listing.agents {
                let (client, _) = crate::connect::client(&target(&agent.card_url))
                    .await
                    .with_context(|| format!("agent {:?}", agent.name))?;
                tools.push(AgentTool::client(&agent.name, client)?);
            }
        }
        _ => {
            let (client, _) = crate::connect::client(&target(base)).await?;
            let name = client.card().map(|c| c.name.clone()).unwrap_or_default();
            tools.push(AgentTool::client(&name, client)?);
        }
    }
    let names: Vec<&str> = tools.iter().map(AgentTool::name).collect();
    tracing::info!(url = %base, tools = ?names, "serving MCP on stdio");
    AgentTools::new(tools).serve_stdio().await?;
    Ok(())
}

/// `GET BASE/agents`, if the server is a gateway (anything else: `None`).
async fn listing(base: &str, token: Option<&str>, args: &McpArgs) -> Option<Listing> {
    let mut http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(30));
    if let Some(path) = &args.tls_ca {
        let pem = std::fs::read(path).ok()?;
        for cert in reqwest::Certificate::from_pem_bundle(&pem).ok()? {
            http = http.add_root_certificate(cert);
        }
    }
    let mut request = http
        .build()
        .ok()?
        .get(format!("{base}{}", a2a_gateway::AGENTS_PATH));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let body = response.bytes().await.ok()?;
    serde_json::from_slice(&body).ok()
}
