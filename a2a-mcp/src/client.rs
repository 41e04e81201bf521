//! An MCP server's tools, for agents: [`McpToolbox`].
//!
//! A toolbox connects to one MCP server, over stdio (a child process this
//! toolbox runs: `command`) or streamable HTTP (`url`), lists its tools
//! once, and calls them. Every call has a time limit; a server that exits
//! or breaks the connection fails the calls with what it last wrote on its
//! standard error, instead of leaving them waiting.
//!
//! The child is the toolbox's: it gets only `PATH`, `HOME`, `LANG`, `LC_*`,
//! `TZ` and `TMPDIR` of this process's environment (which may hold secrets),
//! the variables `pass_env` names and what `env` sets; it is killed when
//! the last clone of the toolbox is dropped (and reaped by the runtime),
//! or stopped gracefully by [`McpToolbox::shutdown`].
//!
//! ```no_run
//! # async fn run() -> Result<(), a2a_mcp::McpError> {
//! use a2a_mcp::{McpServerConfig, McpToolbox};
//! let config = McpServerConfig::stdio(["npx", "-y", "@modelcontextprotocol/server-everything"]);
//! let toolbox = McpToolbox::connect("everything", &config).await?;
//! for tool in toolbox.tools() {
//!     println!("{}: {}", tool.name, tool.description);
//! }
//! let output = toolbox.call("echo", serde_json::json!({ "message": "hi" })).await?;
//! assert!(!output.is_error);
//! println!("{}", output.text);
//! # Ok(()) }
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParam, RawContent, ResourceContents};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::AsyncBufReadExt as _;

/// How long a tool call may take unless [`McpServerConfig::timeout_secs`] says.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long connecting (starting the child, the MCP handshake, the tool
/// list) may take unless [`McpServerConfig::startup_timeout_secs`] says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// The variables of this process's environment a child always gets.
const INHERITED: [&str; 5] = ["PATH", "HOME", "LANG", "TZ", "TMPDIR"];
/// How many lines of the child's standard error an error message quotes.
const STDERR_LINES: usize = 20;

/// One MCP server to connect to: a command (stdio) or a URL (streamable
/// HTTP). What `[mcp.NAME]` of a gateway file holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Stdio: the program and its arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Stdio: variables set for the child.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Stdio: variables of this process's environment passed on to the child.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pass_env: Vec<String>,
    /// Stdio: where the child runs (default: this process's directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<PathBuf>,
    /// Streamable HTTP: the server's endpoint (`https://host/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Streamable HTTP: the environment variable holding the bearer token
    /// to present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// Streamable HTTP: the bearer token itself, given by the program (a
    /// file names a variable instead; this one wins over it).
    #[serde(skip)]
    pub bearer_token: Option<String>,
    /// Seconds a tool call may take (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Seconds connecting may take (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_timeout_secs: Option<u64>,
}

impl McpServerConfig {
    /// A server run as `command` (program and arguments), spoken to on its
    /// standard input and output.
    pub fn stdio<S: Into<String>>(command: impl IntoIterator<Item = S>) -> McpServerConfig {
        McpServerConfig {
            command: command.into_iter().map(Into::into).collect(),
            ..McpServerConfig::default()
        }
    }

    /// A server at `url`, over streamable HTTP.
    pub fn http(url: impl Into<String>) -> McpServerConfig {
        McpServerConfig {
            url: Some(url.into()),
            ..McpServerConfig::default()
        }
    }

    /// Checks that exactly one of `command` and `url` is given, and the
    /// fields of the other are not.
    pub fn check(&self) -> Result<(), McpError> {
        let stdio = !self.command.is_empty();
        match (stdio, &self.url) {
            (true, Some(_)) => Err(McpError::Config(
                "give `command` (stdio) or `url` (streamable HTTP), not both".into(),
            )),
            (false, None) => Err(McpError::Config(
                "give `command` (stdio) or `url` (streamable HTTP)".into(),
            )),
            (true, None) if self.command[0].trim().is_empty() => Err(McpError::Config(
                "`command` must name a program: [\"program\", \"arg\", ...]".into(),
            )),
            (true, None) if self.bearer_token_env.is_some() || self.bearer_token.is_some() => Err(
                McpError::Config("`bearer_token_env` is for a `url` server".into()),
            ),
            (false, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                Err(McpError::Config(format!(
                    "`url` must be an http:// or https:// URL, got {url:?}"
                )))
            }
            (false, Some(_))
                if !self.env.is_empty()
                    || !self.pass_env.is_empty()
                    || self.working_dir.is_some() =>
            {
                Err(McpError::Config(
                    "`env`, `pass_env` and `working_dir` are for a `command` server".into(),
                ))
            }
            _ => Ok(()),
        }
    }

    fn call_timeout(&self) -> Duration {
        self.timeout_secs
            .map_or(DEFAULT_CALL_TIMEOUT, Duration::from_secs)
    }

    fn startup_timeout(&self) -> Duration {
        self.startup_timeout_secs
            .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_secs)
    }
}

/// Why an MCP server could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The configuration cannot work.
    #[error("{0}")]
    Config(String),
    /// The child could not be started.
    #[error("cannot start the MCP server: {0}")]
    Spawn(String),
    /// The MCP handshake (or the tool list) failed.
    #[error("cannot connect to the MCP server: {0}")]
    Connect(String),
    /// The server did not answer in time.
    #[error("the MCP server did not answer {what} within {after:?}")]
    Timeout {
        /// What was asked (`the handshake`, `tools/call echo`).
        what: String,
        /// The limit.
        after: Duration,
    },
    /// The server went away (exited, or closed the connection).
    #[error("the MCP server is gone: {0}")]
    Closed(String),
    /// The server answered with an error, or something MCP does not allow.
    #[error("MCP error: {0}")]
    Protocol(String),
    /// No tool of that name.
    #[error("the MCP server has no tool {0:?}")]
    UnknownTool(String),
}

/// One tool of an MCP server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name, as calls give it.
    pub name: String,
    /// What it does (empty when the server says nothing).
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
}

/// What a tool call gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The result's content as text: text items as they are, others
    /// described (an image as `[image: image/png]`, a resource by its URI),
    /// one item a paragraph.
    pub text: String,
    /// The result's structured content, if the tool gave one.
    pub structured: Option<Value>,
    /// Whether the tool says it failed (its text says why).
    pub is_error: bool,
}

/// The standard error lines a child wrote last, and whether its stderr
/// has ended (so an exit's last words are read before they are reported).
#[derive(Default)]
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    ended: tokio::sync::Notify,
    done: std::sync::atomic::AtomicBool,
}

type Tail = Arc<StderrTail>;

/// A connected MCP server. Cheap to clone; the connection (and the child)
/// ends with the last clone.
#[derive(Debug, Clone)]
pub struct McpToolbox {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    peer: Peer<RoleClient>,
    tools: Vec<ToolSpec>,
    timeout: Duration,
    running: Mutex<Option<RunningService<RoleClient, ()>>>,
    child: Mutex<Option<tokio::process::Child>>,
    stderr: Tail,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolbox")
            .field("name", &self.name)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(child) = self
            .child
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            // `kill_on_drop` would too; saying it here keeps it true should
            // the child be moved out some day. The runtime reaps it.
            let _ = child.start_kill();
        }
    }
}

impl McpToolbox {
    /// Connects to the server `config` describes (starting it, for a
    /// command), and reads its tools. `name` names it in errors and logs.
    pub async fn connect(name: &str, config: &McpServerConfig) -> Result<McpToolbox, McpError> {
        config.check()?;
        let startup = config.startup_timeout();
        let stderr: Tail = Arc::default();
        let (running, child) = match &config.url {
            Some(url) => (connect_http(url, config).await?, None),
            None => {
                let (transport, child) = spawn(name, config, &stderr)?;
                let mut child = Some(child);
                let handshake = tokio::time::timeout(startup, ().serve(transport)).await;
                let running = match handshake {
                    Ok(Ok(running)) => running,
                    Ok(Err(err)) => {
                        let why = gone(&mut child, &stderr, &err.to_string()).await;
                        return Err(McpError::Connect(why));
                    }
                    Err(_) => {
                        return Err(McpError::Timeout {
                            what: "the handshake".into(),
                            after: startup,
                        });
                    }
                };
                (running, child)
            }
        };
        let peer = running.peer().clone();
        let listed = match tokio::time::timeout(startup, peer.list_all_tools()).await {
            Ok(Ok(tools)) => tools,
            Ok(Err(err)) => return Err(McpError::Connect(format!("listing the tools: {err}"))),
            Err(_) => {
                return Err(McpError::Timeout {
                    what: "tools/list".into(),
                    after: startup,
                });
            }
        };
        let tools = listed
            .into_iter()
            .map(|tool| ToolSpec {
                name: tool.name.into_owned(),
                description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema: Value::Object((*tool.input_schema).clone()),
            })
            .collect();
        Ok(McpToolbox {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                peer,
                tools,
                timeout: config.call_timeout(),
                running: Mutex::new(Some(running)),
                child: Mutex::new(child),
                stderr,
            }),
        })
    }

    /// The name it was connected under.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The server's tools, as listed when connecting.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.inner.tools.clone()
    }

    /// Calls `tool` with `args` (a JSON object, or null for none), within
    /// the configured time limit. A tool that fails says so in the output
    /// ([`ToolOutput::is_error`]); an error is about the server or the call.
    pub async fn call(&self, tool: &str, args: Value) -> Result<ToolOutput, McpError> {
        if !self.inner.tools.iter().any(|t| t.name == tool) {
            return Err(McpError::UnknownTool(tool.to_owned()));
        }
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(McpError::Protocol(format!(
                    "the arguments of {tool:?} must be a JSON object, got {other}"
                )));
            }
        };
        let request = CallToolRequestParam {
            name: tool.to_owned().into(),
            arguments,
        };
        let limit = self.inner.timeout;
        let result = match tokio::time::timeout(limit, self.inner.peer.call_tool(request)).await {
            Ok(Ok(result)) => result,
            Ok(Err(ServiceError::McpError(err))) => {
                return Err(McpError::Protocol(err.message.into_owned()));
            }
            Ok(Err(err @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                let mut child = self
                    .inner
                    .child
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let why = gone(&mut child, &self.inner.stderr, &err.to_string()).await;
                *self.inner.child.lock().unwrap_or_else(|e| e.into_inner()) = child;
                return Err(McpError::Closed(why));
            }
            Ok(Err(err)) => return Err(McpError::Protocol(err.to_string())),
            Err(_) => {
                return Err(McpError::Timeout {
                    what: format!("tools/call {tool}"),
                    after: limit,
                });
            }
        };
        let text = result
            .content
            .iter()
            .map(|content| match &content.raw {
                RawContent::Text(text) => text.text.clone(),
                RawContent::Image(image) => format!("[image: {}]", image.mime_type),
                RawContent::Audio(audio) => format!("[audio: {}]", audio.mime_type),
                RawContent::Resource(resource) => match &resource.resource {
                    ResourceContents::TextResourceContents { text, .. } => text.clone(),
                    ResourceContents::BlobResourceContents { uri, .. } => {
                        format!("[resource: {uri}]")
                    }
                },
                RawContent::ResourceLink(link) => format!("[link: {}]", link.uri),
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        Ok(ToolOutput {
            text,
            structured: result.structured_content,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    /// Ends the connection: closes the child's standard input and gives it
    /// `grace` to exit before killing it.
    pub async fn shutdown(&self, grace: Duration) {
        let running = self
            .inner
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(running) = running {
            // Ends the service's task, which drops the transport: the
            // child's stdin closes, which is how MCP asks it to exit.
            let _ = running.cancel().await;
        }
        let child = self
            .inner
            .child
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut child) = child {
            if tokio::time::timeout(grace, child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        }
    }
}

/// Starts the child of `config`: its stdout and stdin are the transport,
/// its stderr goes to the log and to `tail`.
fn spawn(
    name: &str,
    config: &McpServerConfig,
    tail: &Tail,
) -> Result<
    (
        (tokio::process::ChildStdout, tokio::process::ChildStdin),
        tokio::process::Child,
    ),
    McpError,
> {
    let mut command = tokio::process::Command::new(&config.command[0]);
    command
        .args(&config.command[1..])
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (key, value) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        let inherited = INHERITED.contains(&&*key_text)
            || key_text.starts_with("LC_")
            || config.pass_env.iter().any(|p| *p == key_text);
        if inherited {
            command.env(&key, value);
        }
    }
    command.envs(&config.env);
    if let Some(dir) = &config.working_dir {
        command.current_dir(dir);
    }
    let mut child = command
        .spawn()
        .map_err(|err| McpError::Spawn(format!("{:?}: {err}", config.command[0])))?;
    let (Some(stdout), Some(stdin), Some(stderr)) =
        (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(McpError::Spawn("the child's pipes are missing".into()));
    };
    let tail = tail.clone();
    let server = name.to_owned();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(mcp_server = %server, "{line}");
            let mut kept = tail.lines.lock().unwrap_or_else(|e| e.into_inner());
            if kept.len() == STDERR_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
        tail.done.store(true, std::sync::atomic::Ordering::Release);
        tail.ended.notify_waiters();
    });
    Ok(((stdout, stdin), child))
}

/// What to say about a server that went away: how the child ended (if it
/// did, within a moment) and its last standard error lines.
async fn gone(child: &mut Option<tokio::process::Child>, tail: &Tail, what: &str) -> String {
    let mut why = what.to_owned();
    if let Some(child) = child.as_mut() {
        // A child whose pipe closed is exiting: its status comes at once.
        if let Ok(Ok(status)) = tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
            why = format!("{why}; the server exited ({status})");
            // Its stderr ends with it (unless a grandchild holds the pipe):
            // wait for the reader to take the last lines.
            let ended = tail.ended.notified();
            if !tail.done.load(std::sync::atomic::Ordering::Acquire) {
                let _ = tokio::time::timeout(Duration::from_secs(1), ended).await;
            }
        }
    }
    let lines: Vec<String> = tail
        .lines
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect();
    if !lines.is_empty() {
        why = format!("{why}; its last words: {}", lines.join(" | "));
    }
    why
}

/// The connection to an HTTP server, handshake done.
async fn connect_http(
    url: &str,
    config: &McpServerConfig,
) -> Result<RunningService<RoleClient, ()>, McpError> {
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url);
    let token = match (&config.bearer_token, &config.bearer_token_env) {
        (Some(token), _) => Some(token.clone()),
        (None, Some(variable)) => Some(std::env::var(variable).map_err(|_| {
            McpError::Config(format!("the environment variable {variable} is not set"))
        })?),
        (None, None) => None,
    };
    if let Some(token) = token {
        transport = transport.auth_header(token);
    }
    // rmcp's HTTP client is reqwest 0.12 on rustls without a crypto
    // provider of its own: the process's default, or the one the
    // workspace's TLS uses when none was installed.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(transport);
    let startup = config.startup_timeout();
    match tokio::time::timeout(startup, ().serve(transport)).await {
        Ok(Ok(running)) => Ok(running),
        Ok(Err(err)) => Err(McpError::Connect(format!("{url}: {err}"))),
        Err(_) => Err(McpError::Timeout {
            what: "the handshake".into(),
            after: startup,
        }),
    }
}
