//! MCP on both sides of a gateway.
//!
//! - `[mcp.NAME]` tables of a gateway file name MCP servers whose tools the
//!   gateway's agents may use: a command spoken to on stdio, or a URL over
//!   streamable HTTP. [`connect`] starts and connects them (the program
//!   does, before building the gateway, so that the agents it builds get
//!   them); [`GatewayBuilder::mcp_toolboxes`](crate::GatewayBuilder::mcp_toolboxes)
//!   hands them to the gateway, and [`Gateway::mcp_toolboxes`](crate::Gateway::mcp_toolboxes)
//!   gives them out.
//!
//!   ```toml
//!   [mcp.files]
//!   command = ["mcp-server-filesystem", "/srv/docs"]  # run in the file's directory
//!   env = { LOG_LEVEL = "warn" }       # set for the child
//!   pass_env = ["HTTPS_PROXY"]         # passed on from the gateway's environment
//!   timeout_secs = 60                  # a tool call's limit (default 120)
//!
//!   [mcp.search]
//!   url = "https://search.example.com/mcp"   # streamable HTTP
//!   bearer_token_env = "SEARCH_TOKEN"        # the token it is given, from the environment
//!   ```
//!
//! - The gateway's router serves its agents as MCP tools at `/mcp`, one
//!   tool per agent ([`a2a_mcp::http`]), authenticated as the agents are.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use a2a_mcp::{AgentTool, AgentTools, McpServerConfig, McpToolbox};
use a2a_server::http::HttpConfig;
use serde::Deserialize;
use toml::Spanned;

use crate::config::ConfigError;
use crate::gateway::{Gateway, is_valid_agent_name};

/// One `[mcp.NAME]` table, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServer {
    /// Its name (the table key).
    pub name: String,
    /// How to reach it.
    pub config: McpServerConfig,
    /// Where the table is, for errors about it.
    at: ConfigError,
}

impl McpServer {
    /// An error about this server, located at its table.
    pub fn error(&self, message: impl Into<String>) -> ConfigError {
        ConfigError {
            message: message.into(),
            ..self.at.clone()
        }
    }
}

/// One `[mcp.NAME]` table: an MCP server whose tools the agents may use.
/// Give `command` (stdio) or `url` (streamable HTTP).
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "McpServer", transform = command_or_url)
)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMcp {
    /// Stdio: the program and its arguments, run in the config file's
    /// directory.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Vec<String>>", extend("minItems" = 1))
    )]
    command: Option<Spanned<Vec<String>>>,
    /// Stdio: environment variables set for the child.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<BTreeMap<String, String>>")
    )]
    env: Option<Spanned<BTreeMap<String, String>>>,
    /// Stdio: variables of the gateway's environment passed on to the child
    /// (it inherits nothing else but PATH, HOME, LANG, LC_*, TZ and TMPDIR).
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    pass_env: Option<Spanned<Vec<String>>>,
    /// Stdio: where the child runs, relative to the config file's directory
    /// (default: that directory).
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    working_dir: Option<Spanned<String>>,
    /// Streamable HTTP: the server's MCP endpoint.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<String>", extend("pattern" = "^https?://"))
    )]
    url: Option<Spanned<String>>,
    /// Streamable HTTP: the environment variable holding the bearer token
    /// the gateway presents.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    bearer_token_env: Option<Spanned<String>>,
    /// Seconds a tool call may take (default 120).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 1))
    )]
    timeout_secs: Option<Spanned<i64>>,
    /// Seconds starting and connecting may take (default 30).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 1))
    )]
    startup_timeout_secs: Option<Spanned<i64>>,
}

/// The schema's rule that a server is a command or a URL, not both.
#[cfg(feature = "schema")]
fn command_or_url(schema: &mut schemars::Schema) {
    schema.insert(
        "oneOf".into(),
        serde_json::json!([{ "required": ["command"] }, { "required": ["url"] }]),
    );
}

/// The `[mcp.*]` tables of the file at `file` (its contents `text`),
/// checked, in file order.
pub(crate) fn read(
    file: &Path,
    text: &str,
    base: &Path,
    raw: BTreeMap<String, Spanned<RawMcp>>,
) -> Result<Vec<McpServer>, ConfigError> {
    let mut servers = Vec::with_capacity(raw.len());
    for (name, table) in raw {
        let span = table.span();
        let server = one(file, text, base, &name, span.clone(), table.into_inner())?;
        servers.push((span.start, server));
    }
    servers.sort_by_key(|(start, _)| *start);
    Ok(servers.into_iter().map(|(_, s)| s).collect())
}

fn one(
    file: &Path,
    text: &str,
    base: &Path,
    name: &str,
    span: Range<usize>,
    raw: RawMcp,
) -> Result<McpServer, ConfigError> {
    let error = |at: Range<usize>, f: &str, message: String| {
        let field = match f.is_empty() {
            true => format!("mcp.{name}"),
            false => format!("mcp.{name}.{f}"),
        };
        ConfigError::at(file, text, at, &field, message)
    };
    if !is_valid_agent_name(name) {
        return Err(error(
            span,
            "",
            "an MCP server's name is 1 to 64 letters, digits, '-' or '_', starting with a letter or digit".into(),
        ));
    }
    let mut config = McpServerConfig::default();
    match (&raw.command, &raw.url) {
        (Some(_), Some(url)) => {
            return Err(error(
                url.span(),
                "url",
                "give `command` (stdio) or `url` (streamable HTTP), not both".into(),
            ));
        }
        (None, None) => {
            return Err(error(
                span,
                "command",
                "an MCP server needs `command` (stdio) or `url` (streamable HTTP)".into(),
            ));
        }
        _ => {}
    }
    let stdio_only = [
        ("env", raw.env.as_ref().map(Spanned::span)),
        ("pass_env", raw.pass_env.as_ref().map(Spanned::span)),
        ("working_dir", raw.working_dir.as_ref().map(Spanned::span)),
    ];
    let http_only = [(
        "bearer_token_env",
        raw.bearer_token_env.as_ref().map(Spanned::span),
    )];
    let (wrong, kind) = match raw.url.is_some() {
        true => (&stdio_only[..], "a `url` server"),
        false => (&http_only[..], "a `command` server"),
    };
    if let Some((f, Some(at))) = wrong.iter().find(|(_, at)| at.is_some()) {
        return Err(error(at.clone(), f, format!("`{f}` is not for {kind}")));
    }
    if let Some(command) = raw.command {
        if command
            .get_ref()
            .first()
            .is_none_or(|p| p.trim().is_empty())
        {
            return Err(error(
                command.span(),
                "command",
                "must name a program: [\"program\", \"arg\", ...]".into(),
            ));
        }
        config.command = command.into_inner();
        config.working_dir = Some(match raw.working_dir {
            Some(dir) => base.join(dir.into_inner()),
            None => base.to_owned(),
        });
    }
    if let Some(env) = raw.env {
        let at = env.span();
        if let Some(bad) = env.get_ref().keys().find(|k| !is_env_name(k)) {
            return Err(error(at, "env", format!("{bad:?} is not a variable name")));
        }
        config.env = env.into_inner();
    }
    if let Some(pass) = raw.pass_env {
        let at = pass.span();
        if let Some(bad) = pass.get_ref().iter().find(|k| !is_env_name(k)) {
            return Err(error(
                at,
                "pass_env",
                format!("{bad:?} is not a variable name"),
            ));
        }
        config.pass_env = pass.into_inner();
    }
    if let Some(url) = raw.url {
        let ok = url::Url::parse(url.get_ref()).is_ok_and(|u| {
            matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty())
        });
        if !ok {
            return Err(error(
                url.span(),
                "url",
                format!(
                    "must be an http:// or https:// URL, got {:?}",
                    url.get_ref()
                ),
            ));
        }
        config.url = Some(url.into_inner());
    }
    if let Some(var) = raw.bearer_token_env {
        // Read at load time, as a remote agent's is: a variable that is not
        // set is this file's mistake, said now.
        match std::env::var(var.get_ref()) {
            Ok(token) if !token.trim().is_empty() => {
                config.bearer_token = Some(token.trim().to_owned());
            }
            _ => {
                return Err(error(
                    var.span(),
                    "bearer_token_env",
                    format!("environment variable {} is not set", var.get_ref()),
                ));
            }
        }
        config.bearer_token_env = Some(var.into_inner());
    }
    for (f, value, slot) in [
        ("timeout_secs", raw.timeout_secs, &mut config.timeout_secs),
        (
            "startup_timeout_secs",
            raw.startup_timeout_secs,
            &mut config.startup_timeout_secs,
        ),
    ] {
        if let Some(secs) = value {
            match u64::try_from(*secs.get_ref()) {
                Ok(n) if n > 0 => *slot = Some(n),
                _ => {
                    return Err(error(
                        secs.span(),
                        f,
                        "must be a number of seconds, 1 or more".into(),
                    ));
                }
            }
        }
    }
    Ok(McpServer {
        name: name.to_owned(),
        config,
        at: error(span, "", String::new()),
    })
}

/// Whether `name` can be an environment variable's name.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Starts and connects every server, in order; the first that fails stops
/// the rest (those already started are stopped as their toolboxes drop),
/// its error located at its table.
pub async fn connect(servers: &[McpServer]) -> Result<Vec<McpToolbox>, ConfigError> {
    let mut toolboxes = Vec::with_capacity(servers.len());
    for server in servers {
        let toolbox = McpToolbox::connect(&server.name, &server.config)
            .await
            .map_err(|err| server.error(err.to_string()))?;
        toolboxes.push(toolbox);
    }
    Ok(toolboxes)
}

/// The gateway's agents as MCP tools at `/mcp`, authenticated as the
/// agents are (the root service's head check).
pub(crate) fn router(gateway: &Gateway, config: HttpConfig) -> axum::Router {
    let tools = gateway
        .agents()
        .iter()
        .map(|agent| AgentTool::service(&agent.name, agent.service().clone()))
        .collect();
    a2a_mcp::http::router(AgentTools::new(tools), gateway.service().clone(), config)
}
