//! The gateway configuration file (TOML): which agents to host, of which
//! kind, with which card.
//!
//! ```toml
//! [gateway]
//! default = "planner"            # the agent the root card points to (default: the first)
//! name = "team-a"                # the workspace its agents' conversations are keyed in (default: "default")
//!
//! [agents.planner]
//! kind = "rust"                  # a Rust agent the program registered
//! executor = "echo"              # under this name (`a2a serve` has "echo")
//! description = "Plans the work."
//! skills = [{ id = "plan", name = "Plan", description = "Breaks a goal into steps.", tags = ["plan"] }]
//!
//! [agents.coder]
//! kind = "process"               # a child process speaking the JSON-lines protocol
//! command = ["python3", "agents/coder.py"]   # run in the config file's directory
//! env = { CODER_MODEL = "small" }          # set for the child
//! pass_env = ["OPENAI_API_KEY"]  # passed on from the gateway's environment
//! on_crash = "fail"              # or "resume": re-send in-flight tasks to the restarted child
//! task_timeout_secs = 600        # fail a task the child says nothing about for this long (0: never)
//!
//! [agents.reviewer]
//! kind = "remote"                # a remote A2A agent the gateway forwards to
//! url = "http://127.0.0.1:9999"  # its base URL (its card is read from there)
//! bearer_token_env = "REVIEWER_TOKEN"   # credential the gateway presents, from the environment
//! allowed_origins = ["http://127.0.0.1:9998"]  # other origins its card's interfaces may be at
//! allowed_networks = ["10.0.0.0/8"]      # private networks it may be reached in (by name)
//! ```
//!
//! A remote agent's card is fetched from `url`, and only its interfaces on
//! that origin (or `allowed_origins`) are used: the gateway's credentials go
//! nowhere else, and no redirect to another origin is followed. It is reached
//! on public addresses only, plus `url`'s own host when that is an IP
//! address, plus loopback when that is loopback; a name in a private network
//! needs the network in `allowed_networks`.
//!
//! A process agent's child does not inherit the gateway's environment (it
//! holds the gateway's secrets): it gets `PATH`, `HOME`, `LANG`, `LC_*`,
//! `TZ` and `TMPDIR`, the variables `pass_env` names, what `env` sets, and
//! what the gateway sets for it (`A2A_AGENT_NAME`, `A2A_GATEWAY_URL`,
//! `A2A_AGENT_TOKEN`).
//!
//! Every error names the file, the line and column, and the field; a file
//! with any error yields no configuration at all.
//!
//! With the feature `schema`, `json_schema` gives the file's JSON Schema,
//! derived from the types below that read it, and `json_schema_with_hub`
//! the same with the `[hub]` table described by the type that reads it
//! (`a2a-hub`'s: it depends on this crate, so this one cannot name it). The
//! repository keeps the latter as `schema/gateway.schema.json`, and `a2a
//! config schema` prints it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use a2a_core::AgentSkill;
use serde::Deserialize;
use toml::Spanned;

use crate::gateway::{AgentKind, is_valid_agent_name};

/// A configuration error: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {}{message}", file.display(), field_prefix(.field))]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// 1-based line (0 when the file could not be read).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// The field, dotted (`agents.coder.command`); empty when the error is
    /// not about one field.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// An error at byte range `span` of `text`, the contents of `file`,
    /// about `field` (dotted; empty when it is about no one field): for the
    /// readers of other tables of the same file.
    pub fn at(
        file: &Path,
        text: &str,
        span: Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        let (line, column) = line_column(text, span.start);
        ConfigError {
            file: file.to_owned(),
            line,
            column,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

fn field_prefix(field: &str) -> String {
    match field.is_empty() {
        true => String::new(),
        false => format!("{field}: "),
    }
}

/// A whole gateway file, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// The file it was read from.
    pub path: PathBuf,
    /// The agent the root card points to (`None`: the first).
    pub default: Option<String>,
    /// The gateway's name: the workspace of its agents' conversations
    /// (`None`: `default`).
    pub name: Option<String>,
    /// The agents, in file order.
    pub agents: Vec<AgentConfig>,
    /// The `[mcp.NAME]` MCP servers, in file order ([`crate::mcp`]).
    pub mcp: Vec<crate::mcp::McpServer>,
}

/// One agent of the file.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    /// Its name (the table key).
    pub name: String,
    /// The card's display name (default: the agent's name).
    pub title: Option<String>,
    /// The card's description.
    pub description: Option<String>,
    /// The card's skills.
    pub skills: Vec<AgentSkill>,
    /// What the agent is.
    pub source: AgentSource,
    file: PathBuf,
    spans: Vec<(&'static str, (usize, usize))>,
}

impl AgentConfig {
    /// The agent's kind.
    pub fn kind(&self) -> AgentKind {
        match self.source {
            AgentSource::Rust { .. } => AgentKind::Rust,
            AgentSource::Process { .. } => AgentKind::Process,
            AgentSource::Remote { .. } => AgentKind::Remote,
            AgentSource::Model { .. } => AgentKind::Model,
        }
    }

    /// An error about this agent's `field` (`executor`, `command`, `url`...),
    /// located where the file sets it (or at the agent's table).
    pub fn error(&self, field: &str, message: impl Into<String>) -> ConfigError {
        let (line, column) = self
            .spans
            .iter()
            .find(|(name, _)| *name == field)
            .or_else(|| self.spans.iter().find(|(name, _)| *name == "agent"))
            .map(|(_, at)| *at)
            .unwrap_or((1, 1));
        ConfigError {
            file: self.file.clone(),
            line,
            column,
            field: format!("agents.{}.{field}", self.name),
            message: message.into(),
        }
    }
}

/// How to run an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSource {
    /// A Rust agent the program registered under `executor`.
    Rust {
        /// The registered name.
        executor: String,
    },
    /// A child process.
    Process {
        /// Program and arguments.
        command: Vec<String>,
        /// Environment variables set for the child.
        env: BTreeMap<String, String>,
        /// Variables of the gateway's environment passed on to the child.
        pass_env: Vec<String>,
        /// How long the child may say nothing about a task before it is
        /// failed (`None`: no limit).
        task_timeout: Option<Duration>,
        /// Where it runs: the config file's directory unless set.
        working_dir: PathBuf,
        /// Whether in-flight tasks are re-sent to a restarted child.
        resume_on_crash: bool,
    },
    /// A remote A2A agent.
    Remote {
        /// Its base URL (or its card's URL).
        url: String,
        /// A bearer token to present, read from the environment at load time.
        bearer_token: Option<String>,
        /// Other origins its card's interfaces may be at.
        allowed_origins: Vec<String>,
        /// Networks it may be reached in besides public addresses (CIDR).
        allowed_networks: Vec<String>,
    },
    /// An agent backed by an OpenAI-compatible chat completions endpoint
    /// (`a2a-model`).
    Model {
        /// The endpoint, model, prompt and limits, resolved (the API key
        /// read from the environment, the system prompt from its file).
        settings: Box<a2a_model::ModelSettings>,
    },
}

// The doc comments of the raw types below are the descriptions of the JSON
// Schema (feature `schema`): editors show them to whoever writes the file.

/// An `a2a serve --config` file: the agents one server hosts, each under
/// /agents/NAME, and optionally their collaboration hub.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(title = "a2a gateway file")
)]
#[serde(deny_unknown_fields)]
struct RawFile {
    /// The gateway as a whole.
    #[serde(default)]
    gateway: Option<RawGateway>,
    /// The agents, by name (1 to 64 letters, digits, '-' or '_', starting
    /// with a letter or digit); each is served under /agents/NAME.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(
            with = "BTreeMap<String, RawAgent>",
            extend("propertyNames" = { "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$" })
        )
    )]
    agents: BTreeMap<String, Spanned<RawAgent>>,
    /// The collaboration hub: channels, threads, loop guards (`a2a-hub`
    /// reads and checks this table).
    #[allow(dead_code)]
    // Replaced by the hub's schema in `json_schema_with_hub`.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<BTreeMap<String, serde_json::Value>>")
    )]
    hub: Option<toml::Value>,
    /// MCP servers whose tools the agents may use, by name (see `a2a_gateway::mcp`).
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(
            with = "BTreeMap<String, crate::mcp::RawMcp>",
            extend("propertyNames" = { "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$" })
        )
    )]
    mcp: BTreeMap<String, Spanned<crate::mcp::RawMcp>>,
}

/// The `[gateway]` table.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "Gateway")
)]
#[serde(deny_unknown_fields)]
struct RawGateway {
    /// The agent the root card points to (default: the file's first).
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    default: Option<Spanned<String>>,
    /// The workspace the agents' conversations are keyed in (default:
    /// "default").
    name: Option<String>,
}

/// One `[agents.NAME]` table.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "Agent", transform = schema::fields_by_kind)
)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    /// What the agent is: "rust" (an agent the program registered),
    /// "process" (a child process speaking the JSON-lines protocol),
    /// "remote" (an A2A agent the gateway forwards to) or "model" (a model
    /// behind an OpenAI-compatible chat completions endpoint).
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::kind"))]
    kind: Spanned<String>,
    /// The card's display name (default: the agent's name).
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    title: Option<Spanned<String>>,
    /// The card's description.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    description: Option<Spanned<String>>,
    /// The card's skills.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<RawSkill>"))]
    skills: Vec<Spanned<RawSkill>>,
    /// Rust agents: the name the program registered the agent under
    /// (`a2a serve` has "echo").
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    executor: Option<Spanned<String>>,
    /// Process agents: the program and its arguments, run in the config
    /// file's directory.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<Vec<String>>", extend("minItems" = 1))
    )]
    command: Option<Spanned<Vec<String>>>,
    /// Process agents: environment variables set for the child.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<BTreeMap<String, String>>")
    )]
    env: Option<Spanned<BTreeMap<String, String>>>,
    /// Process agents: where the child runs, relative to the config file's
    /// directory (default: that directory).
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    working_dir: Option<Spanned<String>>,
    /// Process agents: what a crash does to in-flight tasks: "fail" them
    /// (the default) or "resume" them by re-sending to the restarted child.
    #[cfg_attr(feature = "schema", schemars(with = "Option<schema::OnCrash>"))]
    on_crash: Option<Spanned<String>>,
    /// Process agents: variables of the gateway's environment passed on to
    /// the child (it inherits nothing else but PATH, HOME, LANG, LC_*, TZ
    /// and TMPDIR).
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    pass_env: Option<Spanned<Vec<String>>>,
    /// Process agents: seconds the child may say nothing about a task before
    /// it is failed (default 600; 0: never).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 0))
    )]
    task_timeout_secs: Option<Spanned<i64>>,
    /// Remote agents: the agent's base URL (its card is read from there), or
    /// its card's URL.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<String>", extend("pattern" = "^https?://"))
    )]
    url: Option<Spanned<String>>,
    /// Remote agents: the environment variable holding the bearer token the
    /// gateway presents to the agent.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    bearer_token_env: Option<Spanned<String>>,
    /// Remote agents: other origins ("https://host", "http://host:port")
    /// the card's interfaces may be at.
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    allowed_origins: Option<Spanned<Vec<String>>>,
    /// Remote agents: private networks (CIDR, "10.0.0.0/8") the agent may be
    /// reached in, besides public addresses.
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    allowed_networks: Option<Spanned<Vec<String>>>,
    /// Model agents: the endpoint's base URL, up to and without
    /// /chat/completions ("http://127.0.0.1:11434/v1" for Ollama).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<String>", extend("pattern" = "^https?://"))
    )]
    base_url: Option<Spanned<String>>,
    /// Model agents: the model's name as the endpoint knows it.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    model: Option<Spanned<String>>,
    /// Model agents: the environment variable holding the API key (sent as
    /// a bearer token); none: no key.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    api_key_env: Option<Spanned<String>>,
    /// Model agents: the system prompt.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    system: Option<Spanned<String>>,
    /// Model agents: a file holding the system prompt, relative to the
    /// config file's directory (not with `system`).
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    system_file: Option<Spanned<String>>,
    /// Model agents: sampling temperature, 0 to 2 (default: the endpoint's).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<f64>", extend("minimum" = 0, "maximum" = 2))
    )]
    temperature: Option<Spanned<f64>>,
    /// Model agents: the most tokens of one answer (default: the endpoint's).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 1))
    )]
    max_tokens: Option<Spanned<i64>>,
    /// Model agents: seconds a request may take to answer (a streamed one:
    /// to start, and between chunks); default 120.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 1))
    )]
    request_timeout_secs: Option<Spanned<i64>>,
    /// Model agents: retries after 429, a 5xx, a timeout or a lost
    /// connection, with exponential backoff (Retry-After wins); default 3.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 0, "maximum" = 20))
    )]
    retries: Option<Spanned<i64>>,
    /// Model agents: the most earlier messages sent with a request (this
    /// task's and its context's earlier tasks'), newest kept; default 50.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 0))
    )]
    max_history_messages: Option<Spanned<i64>>,
    /// Model agents: a rough token budget of those messages (4 characters
    /// a token); default: none.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 0))
    )]
    max_history_tokens: Option<Spanned<i64>>,
    /// Model agents: the model turns one execution may take (tool rounds
    /// included) before its task fails; default 16.
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<u64>", extend("minimum" = 1))
    )]
    max_turns: Option<Spanned<i64>>,
    /// Model agents: the gateway's agents the model may call as tools
    /// (default: all the others).
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    tools: Option<Spanned<Vec<String>>>,
}

/// The fields that belong to one kind of agent: on an agent of another kind
/// each is a mistake, not something to ignore.
const KIND_FIELDS: [(&str, AgentKind); 24] = [
    ("executor", AgentKind::Rust),
    ("command", AgentKind::Process),
    ("env", AgentKind::Process),
    ("working_dir", AgentKind::Process),
    ("on_crash", AgentKind::Process),
    ("pass_env", AgentKind::Process),
    ("task_timeout_secs", AgentKind::Process),
    ("url", AgentKind::Remote),
    ("bearer_token_env", AgentKind::Remote),
    ("allowed_origins", AgentKind::Remote),
    ("allowed_networks", AgentKind::Remote),
    ("base_url", AgentKind::Model),
    ("model", AgentKind::Model),
    ("api_key_env", AgentKind::Model),
    ("system", AgentKind::Model),
    ("system_file", AgentKind::Model),
    ("temperature", AgentKind::Model),
    ("max_tokens", AgentKind::Model),
    ("request_timeout_secs", AgentKind::Model),
    ("retries", AgentKind::Model),
    ("max_history_messages", AgentKind::Model),
    ("max_history_tokens", AgentKind::Model),
    ("max_turns", AgentKind::Model),
    ("tools", AgentKind::Model),
];

/// The kinds, as files write them.
const KINDS: [AgentKind; 4] = [
    AgentKind::Rust,
    AgentKind::Process,
    AgentKind::Remote,
    AgentKind::Model,
];

/// The field an agent of `kind` cannot do without.
fn required_field(kind: AgentKind) -> &'static str {
    match kind {
        AgentKind::Rust => "executor",
        AgentKind::Process => "command",
        AgentKind::Remote => "url",
        AgentKind::Model => "base_url",
    }
}

/// The fields an agent of `kind` needs besides [`required_field`] (for the
/// schema: the reader finds a missing one as it reads the agent's kind).
#[cfg(feature = "schema")]
fn also_required(kind: AgentKind) -> &'static [&'static str] {
    match kind {
        AgentKind::Model => &["model"],
        _ => &[],
    }
}

impl RawAgent {
    /// Where the file sets `field` of [`KIND_FIELDS`], if it does.
    fn span_of(&self, field: &str) -> Option<Range<usize>> {
        match field {
            "executor" => self.executor.as_ref().map(Spanned::span),
            "command" => self.command.as_ref().map(Spanned::span),
            "env" => self.env.as_ref().map(Spanned::span),
            "working_dir" => self.working_dir.as_ref().map(Spanned::span),
            "on_crash" => self.on_crash.as_ref().map(Spanned::span),
            "pass_env" => self.pass_env.as_ref().map(Spanned::span),
            "task_timeout_secs" => self.task_timeout_secs.as_ref().map(Spanned::span),
            "url" => self.url.as_ref().map(Spanned::span),
            "bearer_token_env" => self.bearer_token_env.as_ref().map(Spanned::span),
            "allowed_origins" => self.allowed_origins.as_ref().map(Spanned::span),
            "allowed_networks" => self.allowed_networks.as_ref().map(Spanned::span),
            "base_url" => self.base_url.as_ref().map(Spanned::span),
            "model" => self.model.as_ref().map(Spanned::span),
            "api_key_env" => self.api_key_env.as_ref().map(Spanned::span),
            "system" => self.system.as_ref().map(Spanned::span),
            "system_file" => self.system_file.as_ref().map(Spanned::span),
            "temperature" => self.temperature.as_ref().map(Spanned::span),
            "max_tokens" => self.max_tokens.as_ref().map(Spanned::span),
            "request_timeout_secs" => self.request_timeout_secs.as_ref().map(Spanned::span),
            "retries" => self.retries.as_ref().map(Spanned::span),
            "max_history_messages" => self.max_history_messages.as_ref().map(Spanned::span),
            "max_history_tokens" => self.max_history_tokens.as_ref().map(Spanned::span),
            "max_turns" => self.max_turns.as_ref().map(Spanned::span),
            "tools" => self.tools.as_ref().map(Spanned::span),
            _ => None,
        }
    }
}

/// One skill of an agent's card.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "Skill")
)]
#[serde(deny_unknown_fields)]
struct RawSkill {
    /// Its id, unique in the card.
    id: String,
    /// Its display name.
    name: String,
    /// What it does.
    description: String,
    /// Keywords.
    #[serde(default)]
    tags: Vec<String>,
    /// Example prompts.
    #[serde(default)]
    examples: Vec<String>,
}

/// The JSON Schema of gateway files (draft 7, which editors' TOML support
/// reads: taplo, Even Better TOML), derived from the types that read them.
/// It says what a file may hold and which fields each kind of agent takes;
/// what only loading can tell (that an executor exists, that a variable is
/// set) is `a2a config check`'s. The `[hub]` table is any table here (this
/// crate does not read it); `json_schema_with_hub` describes it too.
#[cfg(feature = "schema")]
pub fn json_schema() -> serde_json::Value {
    json_schema_with_hub::<BTreeMap<String, serde_json::Value>>()
}

/// [`json_schema`] with the `[hub]` table's schema `H`: the type the hub
/// reads that table into (`a2a_hub::config::json_schema` passes its own).
/// `H`'s definitions join the file's; the table keeps the description
/// this crate gives it.
#[cfg(feature = "schema")]
pub fn json_schema_with_hub<H: schemars::JsonSchema>() -> serde_json::Value {
    let mut generator = schemars::generate::SchemaSettings::draft07().into_generator();
    // First, so that the root schema below collects the hub's definitions.
    let hub = generator.subschema_for::<H>().to_value();
    let mut schema = generator.into_root_schema_for::<RawFile>().to_value();
    if let Some(serde_json::Value::Object(table)) = schema.pointer_mut("/properties/hub") {
        let description = table.remove("description");
        *table = match hub {
            serde_json::Value::Object(hub) => hub,
            // `true`: any value (the generator's schema of anything).
            _ => serde_json::Map::new(),
        };
        if let Some(description) = description {
            table.insert("description".into(), description);
        }
    }
    schema::without_null(&mut schema);
    schema
}

#[cfg(feature = "schema")]
mod schema {
    use schemars::{Schema, SchemaGenerator, json_schema};
    use serde_json::Value;

    use super::{KIND_FIELDS, KINDS, also_required, required_field};

    /// `kind`: one of the kinds.
    pub(super) fn kind(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = KINDS.iter().map(|k| k.as_str()).collect();
        json_schema!({ "type": "string", "enum": names })
    }

    /// Takes the null that schemars allows for every `Option` out of
    /// `schema`: TOML has no null, an absent key is what `None` reads.
    pub(super) fn without_null(schema: &mut Value) {
        let Value::Object(map) = schema else {
            if let Value::Array(items) = schema {
                items.iter_mut().for_each(without_null);
            }
            return;
        };
        if let Some(Value::Array(types)) = map.get_mut("type") {
            types.retain(|t| t != "null");
            if let [only] = types.as_slice() {
                let only = only.clone();
                map.insert("type".into(), only);
            }
        }
        if map.get("default") == Some(&Value::Null) {
            map.remove("default");
        }
        if let Some(Value::Array(cases)) = map.get_mut("anyOf") {
            cases.retain(|case| case.get("type").is_none_or(|t| t != "null"));
            if let [Value::Object(only)] = cases.as_slice() {
                let only = only.clone();
                map.remove("anyOf");
                map.extend(only);
            }
        }
        map.values_mut().for_each(without_null);
    }

    /// What a process agent's crash does to its in-flight tasks.
    #[derive(schemars::JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    pub(super) enum OnCrash {
        /// Fail them (the default).
        Fail,
        /// Re-send them to the restarted child.
        Resume,
    }

    /// An agent's table: for each kind, the field it needs, and no field of
    /// another kind (`false`: no value is valid).
    pub(super) fn fields_by_kind(schema: &mut Schema) {
        let cases: Vec<serde_json::Value> = KINDS
            .iter()
            .map(|&kind| {
                let foreign: serde_json::Map<String, serde_json::Value> = KIND_FIELDS
                    .iter()
                    .filter(|(_, owner)| *owner != kind)
                    .map(|(field, _)| ((*field).to_owned(), false.into()))
                    .collect();
                serde_json::json!({
                    "if": { "properties": { "kind": { "const": kind.as_str() } }, "required": ["kind"] },
                    "then": {
                        "required": std::iter::once(required_field(kind)).chain(also_required(kind).iter().copied()).collect::<Vec<_>>(),
                        "properties": foreign,
                    },
                })
            })
            .collect();
        schema.insert("allOf".into(), cases.into());
    }
}

/// Whether `text` is an origin: an http or https URL with a host and
/// nothing after it but `/`.
fn is_origin(text: &str) -> bool {
    url::Url::parse(text).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url.host().is_some()
            && url.path() == "/"
            && url.query().is_none()
            && url.username().is_empty()
    })
}

/// Whether `name` can be an environment variable's name: what shells
/// accept, so the child can read it.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Line and column (1-based) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.chars().count(), |nl| {
        before[nl + 1..].chars().count()
    }) + 1;
    (line, column)
}

struct Checker<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Checker<'_> {
    fn error(&self, span: Range<usize>, field: String, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.file, self.text, span, &field, message)
    }
}

impl GatewayConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<GatewayConfig, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|err| ConfigError {
            file: path.to_owned(),
            line: 0,
            column: 0,
            field: String::new(),
            message: format!("cannot read the file: {err}"),
        })?;
        GatewayConfig::parse(path, &text)
    }

    /// Checks `text`, the contents of the file at `path` (relative paths in
    /// it are taken from the file's directory).
    pub fn parse(path: impl AsRef<Path>, text: &str) -> Result<GatewayConfig, ConfigError> {
        let file = path.as_ref();
        let checker = Checker { file, text };
        let raw: RawFile = toml::from_str(text).map_err(|err| {
            let span = err.span().unwrap_or(0..0);
            checker.error(span, String::new(), err.message().trim().to_owned())
        })?;
        let base = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        let mut agents = Vec::with_capacity(raw.agents.len());
        for (name, agent) in raw.agents {
            let span = agent.span();
            let agent = checker.agent(&name, span, agent.into_inner(), &base)?;
            agents.push((agent.0, agent.1));
        }
        if agents.is_empty() {
            return Err(checker.error(
                0..0,
                "agents".into(),
                "no agents: add an [agents.NAME] table",
            ));
        }
        // File order: the first agent is the default one.
        agents.sort_by_key(|(start, _)| *start);
        let agents: Vec<AgentConfig> = agents.into_iter().map(|(_, a)| a).collect();
        // A model agent's tools are the file's other agents.
        for agent in &agents {
            let AgentSource::Model { settings } = &agent.source else {
                continue;
            };
            for tool in settings.tools.iter().flatten() {
                if tool == &agent.name || !agents.iter().any(|a| &a.name == tool) {
                    let known: Vec<_> = agents
                        .iter()
                        .filter(|a| a.name != agent.name)
                        .map(|a| a.name.as_str())
                        .collect();
                    return Err(agent.error(
                        "tools",
                        format!(
                            "{tool:?} is not another agent of this file (the others: {})",
                            known.join(", ")
                        ),
                    ));
                }
            }
        }
        let name = raw.gateway.as_ref().and_then(|g| g.name.clone());
        let default = match raw.gateway.and_then(|g| g.default) {
            Some(default) if !agents.iter().any(|a| &a.name == default.get_ref()) => {
                let known: Vec<_> = agents.iter().map(|a| a.name.as_str()).collect();
                return Err(checker.error(
                    default.span(),
                    "gateway.default".into(),
                    format!(
                        "no agent named {:?} (agents: {})",
                        default.get_ref(),
                        known.join(", ")
                    ),
                ));
            }
            other => other.map(Spanned::into_inner),
        };
        let mcp = crate::mcp::read(file, text, &base, raw.mcp)?;
        Ok(GatewayConfig {
            path: file.to_owned(),
            default,
            name,
            agents,
            mcp,
        })
    }
}

impl Checker<'_> {
    fn agent(
        &self,
        name: &str,
        span: Range<usize>,
        raw: RawAgent,
        base: &Path,
    ) -> Result<(usize, AgentConfig), ConfigError> {
        let field = |f: &str| format!("agents.{name}.{f}");
        if !is_valid_agent_name(name) {
            return Err(self.error(
                span,
                format!("agents.{name}"),
                "an agent name is 1 to 64 letters, digits, '-' or '_', starting with a letter or digit",
            ));
        }
        let mut spans = vec![("agent", line_column(self.text, span.start))];
        let mut note =
            |f: &'static str, s: Range<usize>| spans.push((f, line_column(self.text, s.start)));
        let Some(kind) = KINDS.into_iter().find(|k| k.as_str() == raw.kind.get_ref()) else {
            return Err(self.error(
                raw.kind.span(),
                field("kind"),
                format!(
                    "unknown kind {:?}: use \"rust\", \"process\", \"remote\" or \"model\"",
                    raw.kind.get_ref()
                ),
            ));
        };
        for (f, owner) in KIND_FIELDS {
            if let Some(at) = raw.span_of(f) {
                if owner != kind {
                    return Err(self.error(
                        at,
                        field(f),
                        format!("`{f}` is for {owner} agents, and this one is {kind}"),
                    ));
                }
                note(f, at);
            }
        }
        let missing = || {
            let f = required_field(kind);
            self.error(
                span.clone(),
                field(f),
                format!("a {kind} agent needs `{f}`"),
            )
        };
        let source = match kind {
            AgentKind::Rust => {
                let executor = raw.executor.ok_or_else(missing)?;
                AgentSource::Rust {
                    executor: executor.into_inner(),
                }
            }
            AgentKind::Process => {
                let command = raw.command.ok_or_else(missing)?;
                if command
                    .get_ref()
                    .first()
                    .is_none_or(|p| p.trim().is_empty())
                {
                    return Err(self.error(
                        command.span(),
                        field("command"),
                        "must name a program: [\"program\", \"arg\", ...]",
                    ));
                }
                let resume_on_crash = match raw.on_crash {
                    None => false,
                    Some(policy) => match policy.get_ref().as_str() {
                        "fail" => false,
                        "resume" => true,
                        other => {
                            return Err(self.error(
                                policy.span(),
                                field("on_crash"),
                                format!("unknown policy {other:?}: use \"fail\" or \"resume\""),
                            ));
                        }
                    },
                };
                let (env, env_at) = raw.env.map_or_else(Default::default, |e| {
                    let at = e.span();
                    (e.into_inner(), at)
                });
                let (pass_env, pass_env_at) = raw.pass_env.map_or_else(Default::default, |p| {
                    let at = p.span();
                    (p.into_inner(), at)
                });
                let names = env.keys().map(|k| ("env", k, env_at.clone()));
                let passed = pass_env
                    .iter()
                    .map(|k| ("pass_env", k, pass_env_at.clone()));
                if let Some((f, name, at)) =
                    names.chain(passed).find(|(_, name, _)| !is_env_name(name))
                {
                    return Err(self.error(
                        at,
                        field(f),
                        format!("{name:?} is not a variable name (letters, digits and '_', not starting with a digit)"),
                    ));
                }
                let task_timeout = match raw.task_timeout_secs {
                    None => Some(crate::process::DEFAULT_TASK_TIMEOUT),
                    Some(secs) => match u64::try_from(*secs.get_ref()) {
                        Ok(0) => None,
                        Ok(secs) => Some(Duration::from_secs(secs)),
                        Err(_) => {
                            return Err(self.error(
                                secs.span(),
                                field("task_timeout_secs"),
                                "must be a number of seconds, 0 or more (0: no timeout)",
                            ));
                        }
                    },
                };
                AgentSource::Process {
                    command: command.into_inner(),
                    env,
                    pass_env,
                    task_timeout,
                    working_dir: match raw.working_dir {
                        Some(dir) => base.join(dir.into_inner()),
                        None => base.to_owned(),
                    },
                    resume_on_crash,
                }
            }
            AgentKind::Remote => {
                let url = raw.url.ok_or_else(missing)?;
                let parsed = url::Url::parse(url.get_ref());
                if !parsed.is_ok_and(|u| {
                    matches!(u.scheme(), "http" | "https")
                        && u.host_str().is_some_and(|h| !h.is_empty())
                }) {
                    return Err(self.error(
                        url.span(),
                        field("url"),
                        format!(
                            "must be an http:// or https:// URL, got {:?}",
                            url.get_ref()
                        ),
                    ));
                }
                let bearer_token = match raw.bearer_token_env {
                    None => None,
                    Some(var) => match std::env::var(var.get_ref()) {
                        Ok(token) if !token.trim().is_empty() => Some(token.trim().to_owned()),
                        _ => {
                            return Err(self.error(
                                var.span(),
                                field("bearer_token_env"),
                                format!("environment variable {} is not set", var.get_ref()),
                            ));
                        }
                    },
                };
                let allowed_origins = match raw.allowed_origins {
                    None => Vec::new(),
                    Some(origins) => {
                        let at = origins.span();
                        let origins = origins.into_inner();
                        if let Some(bad) = origins.iter().find(|o| !is_origin(o)) {
                            return Err(self.error(
                                at,
                                field("allowed_origins"),
                                format!("{bad:?} is not an origin: use \"https://host\" or \"http://host:port\""),
                            ));
                        }
                        origins
                    }
                };
                let allowed_networks = match raw.allowed_networks {
                    None => Vec::new(),
                    Some(networks) => {
                        let at = networks.span();
                        let networks = networks.into_inner();
                        if let Some(bad) = networks
                            .iter()
                            .find(|n| n.parse::<a2a_server::push::IpNetwork>().is_err())
                        {
                            return Err(self.error(
                                at,
                                field("allowed_networks"),
                                format!("{bad:?} is not a network: use CIDR, \"10.0.0.0/8\" or \"fd00::/8\""),
                            ));
                        }
                        networks
                    }
                };
                AgentSource::Remote {
                    url: url.into_inner(),
                    bearer_token,
                    allowed_origins,
                    allowed_networks,
                }
            }
            AgentKind::Model => {
                let base_url = raw.base_url.ok_or_else(missing)?;
                let Some(model) = raw.model else {
                    return Err(self.error(
                        span.clone(),
                        field("model"),
                        "a model agent needs `model`",
                    ));
                };
                // Where each field is, for the errors resolving finds.
                let mut at: Vec<(&'static str, Range<usize>)> =
                    vec![("base_url", base_url.span()), ("model", model.span())];
                let mut number = |name: &'static str,
                                  value: Option<Spanned<i64>>,
                                  min: i64|
                 -> Result<Option<u64>, ConfigError> {
                    let Some(value) = value else { return Ok(None) };
                    at.push((name, value.span()));
                    match u64::try_from(*value.get_ref()) {
                        Ok(n) if *value.get_ref() >= min => Ok(Some(n)),
                        _ => Err(self.error(
                            value.span(),
                            field(name),
                            format!("must be a whole number, {min} or more"),
                        )),
                    }
                };
                let max_tokens = number("max_tokens", raw.max_tokens, 1)?;
                let request_timeout_secs =
                    number("request_timeout_secs", raw.request_timeout_secs, 1)?;
                let retries = number("retries", raw.retries, 0)?;
                let max_history_messages =
                    number("max_history_messages", raw.max_history_messages, 0)?;
                let max_history_tokens = number("max_history_tokens", raw.max_history_tokens, 0)?;
                let max_turns = number("max_turns", raw.max_turns, 1)?;
                let mut spanned = |name: &'static str, value: Option<Spanned<String>>| {
                    value.map(|v| {
                        at.push((name, v.span()));
                        v.into_inner()
                    })
                };
                let api_key_env = spanned("api_key_env", raw.api_key_env);
                let system = spanned("system", raw.system);
                let system_file = spanned("system_file", raw.system_file);
                let temperature = raw.temperature.map(|t| {
                    at.push(("temperature", t.span()));
                    // A sampling temperature is far inside f32's range.
                    #[allow(clippy::cast_possible_truncation)]
                    let t = *t.get_ref() as f32;
                    t
                });
                let tools = raw.tools.map(|t| {
                    at.push(("tools", t.span()));
                    t.into_inner()
                });
                let small = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
                let config = a2a_model::ModelConfig {
                    base_url: base_url.into_inner(),
                    model: model.into_inner(),
                    api_key_env,
                    system,
                    system_file: system_file.map(PathBuf::from),
                    temperature,
                    max_tokens: max_tokens.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
                    request_timeout_secs,
                    retries: retries.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
                    max_history_messages: max_history_messages.map(small),
                    max_history_tokens: max_history_tokens.map(small),
                    max_turns: max_turns.map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
                    tools,
                };
                let settings =
                    a2a_model::ModelSettings::from_config(&config, base).map_err(|problem| {
                        let where_ = at
                            .iter()
                            .find(|(name, _)| *name == problem.field)
                            .map_or_else(|| span.clone(), |(_, s)| s.clone());
                        self.error(where_, field(problem.field), problem.message)
                    })?;
                AgentSource::Model {
                    settings: Box::new(settings),
                }
            }
        };
        let mut skills = Vec::with_capacity(raw.skills.len());
        for skill in raw.skills {
            let at = skill.span();
            let skill = skill.into_inner();
            if skill.id.trim().is_empty() {
                return Err(self.error(at, field("skills"), "a skill needs a non-empty id"));
            }
            let mut card_skill =
                AgentSkill::new(skill.id, skill.name, skill.description).with_tags(skill.tags);
            card_skill.examples = skill.examples;
            skills.push(card_skill);
        }
        Ok((
            span.start,
            AgentConfig {
                name: name.to_owned(),
                title: raw.title.map(Spanned::into_inner),
                description: raw.description.map(Spanned::into_inner),
                skills,
                source,
                file: self.file.to_owned(),
                spans,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<GatewayConfig, ConfigError> {
        GatewayConfig::parse("conf/gateway.toml", text)
    }

    #[test]
    fn three_kinds_in_file_order() {
        let config = parse(
            r#"
[gateway]
default = "coder"

[agents.zeta]
kind = "rust"
executor = "echo"
description = "Echoes."
skills = [{ id = "echo", name = "Echo", description = "Says it back.", tags = ["demo"] }]

[agents.coder]
kind = "process"
command = ["python3", "coder.py"]
env = { MODEL = "small" }
on_crash = "resume"

[agents.alpha]
kind = "remote"
url = "http://127.0.0.1:9"
"#,
        )
        .unwrap();
        let names: Vec<_> = config.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["zeta", "coder", "alpha"]);
        assert_eq!(config.default.as_deref(), Some("coder"));
        assert_eq!(config.agents[0].skills[0].tags, ["demo"]);
        assert_eq!(
            config.agents[1].source,
            AgentSource::Process {
                command: vec!["python3".into(), "coder.py".into()],
                env: [("MODEL".to_owned(), "small".to_owned())].into(),
                pass_env: vec![],
                task_timeout: Some(Duration::from_secs(600)),
                working_dir: PathBuf::from("conf"),
                resume_on_crash: true,
            }
        );
        assert_eq!(config.agents[2].kind(), AgentKind::Remote);
    }

    #[track_caller]
    fn fails(text: &str, line: usize, field: &str, says: &str) {
        let err = parse(text).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (line, field), "{err}");
        assert!(err.message.contains(says), "{err}");
        assert!(
            err.to_string()
                .starts_with(&format!("conf/gateway.toml:{line}:")),
            "{err}"
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        fails(
            "[agents.a]\nkind = \"rust\"\nexecutor = 3\n",
            3,
            "",
            "string",
        );
        fails(
            "[agents.a]\nkind = \"robot\"\n",
            2,
            "agents.a.kind",
            "unknown kind",
        );
        fails(
            "[agents.a]\nkind = \"rust\"\n",
            1,
            "agents.a.executor",
            "needs `executor`",
        );
        fails(
            "[agents.a]\nkind = \"rust\"\nexecutor = \"echo\"\nurl = \"http://x\"\n",
            4,
            "agents.a.url",
            "for remote agents",
        );
        fails(
            "[agents.a]\nkind = \"process\"\ncommand = []\n",
            3,
            "agents.a.command",
            "program",
        );
        fails(
            "[agents.a]\nkind = \"remote\"\nurl = \"ftp://x\"\n",
            3,
            "agents.a.url",
            "http",
        );
        fails(
            "[agents.a]\nkind = \"process\"\ncommand = [\"x\"]\non_crash = \"retry\"\n",
            4,
            "agents.a.on_crash",
            "unknown policy",
        );
        fails(
            "[agents.a]\nkind = \"rust\"\nexecuter = \"echo\"\n",
            3,
            "",
            "unknown field",
        );
        fails(
            "[gateway]\ndefault = \"b\"\n[agents.a]\nkind = \"rust\"\nexecutor = \"e\"\n",
            2,
            "gateway.default",
            "no agent named \"b\"",
        );
        fails(
            "[agents.\"a b\"]\nkind = \"rust\"\nexecutor = \"e\"\n",
            1,
            "agents.a b",
            "agent name",
        );
        fails("[gateway]\n", 1, "agents", "no agents");
        fails(
            "[agents.a]\nkind = \"remote\"\nurl = \"http://x\"\nbearer_token_env = \"A2A_GATEWAY_TEST_UNSET_VAR\"\n",
            4,
            "agents.a.bearer_token_env",
            "not set",
        );
    }

    #[test]
    fn a_process_agent_lists_what_its_child_gets_and_its_task_timeout() {
        let config = parse(
            "[agents.a]\nkind = \"process\"\ncommand = [\"x\"]\nenv = { MODEL = \"small\" }\npass_env = [\"OPENAI_API_KEY\", \"_X1\"]\ntask_timeout_secs = 0\n",
        )
        .unwrap();
        let AgentSource::Process {
            pass_env,
            task_timeout,
            ..
        } = &config.agents[0].source
        else {
            panic!("a process agent");
        };
        assert_eq!(pass_env, &["OPENAI_API_KEY", "_X1"]);
        assert_eq!(*task_timeout, None);
        fails(
            "[agents.a]\nkind = \"process\"\ncommand = [\"x\"]\n\npass_env = [\"A=B\"]\n",
            5,
            "agents.a.pass_env",
            "not a variable name",
        );
        fails(
            "[agents.a]\nkind = \"process\"\ncommand = [\"x\"]\nenv = { \"1X\" = \"v\" }\n",
            4,
            "agents.a.env",
            "not a variable name",
        );
        fails(
            "[agents.a]\nkind = \"process\"\ncommand = [\"x\"]\ntask_timeout_secs = -1\n",
            4,
            "agents.a.task_timeout_secs",
            "0 or more",
        );
        fails(
            "[agents.a]\nkind = \"remote\"\nurl = \"http://x\"\npass_env = [\"K\"]\n",
            4,
            "agents.a.pass_env",
            "for process agents",
        );
    }

    #[test]
    fn a_remote_agent_lists_its_other_origins_and_networks() {
        let config = parse(
            "[agents.a]\nkind = \"remote\"\nurl = \"http://a.example\"\nallowed_origins = [\"https://b.example:8443\"]\nallowed_networks = [\"10.0.0.0/8\", \"fd00::/8\"]\n",
        )
        .unwrap();
        let AgentSource::Remote {
            allowed_origins,
            allowed_networks,
            ..
        } = &config.agents[0].source
        else {
            panic!("a remote agent");
        };
        assert_eq!(allowed_origins, &["https://b.example:8443"]);
        assert_eq!(allowed_networks, &["10.0.0.0/8", "fd00::/8"]);
        fails(
            "[agents.a]\nkind = \"remote\"\nurl = \"http://x\"\nallowed_origins = [\"https://b.example/path\"]\n",
            4,
            "agents.a.allowed_origins",
            "not an origin",
        );
        fails(
            "[agents.a]\nkind = \"remote\"\nurl = \"http://x\"\nallowed_networks = [\"10.0.0.0/33\"]\n",
            4,
            "agents.a.allowed_networks",
            "not a network",
        );
        fails(
            "[agents.a]\nkind = \"process\"\ncommand = [\"x\"]\nallowed_origins = []\n",
            4,
            "agents.a.allowed_origins",
            "for remote agents",
        );
    }

    #[test]
    fn later_checks_point_at_the_field() {
        let config = parse("\n[agents.a]\nkind = \"rust\"\nexecutor = \"nope\"\n").unwrap();
        let err = config.agents[0].error("executor", "no Rust agent registered as \"nope\"");
        assert_eq!((err.line, err.column), (4, 12));
        assert_eq!(err.field, "agents.a.executor");
    }

    #[test]
    fn every_field_of_a_kind_is_located() {
        let raw: RawAgent = toml::from_str(
            r#"
kind = "process"
executor = "e"
command = ["x"]
env = { A = "b" }
working_dir = "w"
on_crash = "fail"
pass_env = ["A"]
task_timeout_secs = 1
url = "http://x"
bearer_token_env = "T"
allowed_origins = []
allowed_networks = []
base_url = "http://m"
model = "m"
api_key_env = "K"
system = "s"
system_file = "f"
temperature = 0.5
max_tokens = 1
request_timeout_secs = 1
retries = 1
max_history_messages = 1
max_history_tokens = 1
max_turns = 1
tools = []
"#,
        )
        .unwrap();
        for (field, _) in KIND_FIELDS {
            assert!(raw.span_of(field).is_some(), "{field}");
        }
        for kind in KINDS {
            let text = format!("[agents.a]\nkind = \"{kind}\"\n");
            let err = parse(&text).unwrap_err();
            assert_eq!(err.field, format!("agents.a.{}", required_field(kind)));
        }
    }

    #[test]
    fn a_model_agent_is_resolved_and_its_mistakes_located() {
        let config = parse(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://127.0.0.1:11434/v1\"\nmodel = \"qwen\"\nsystem = \"Plan.\"\ntemperature = 0.25\nretries = 5\ntools = [\"n\"]\n\n[agents.n]\nkind = \"rust\"\nexecutor = \"e\"\n",
        )
        .unwrap();
        let AgentSource::Model { settings } = &config.agents[0].source else {
            panic!("a model agent");
        };
        assert_eq!(config.agents[0].kind(), AgentKind::Model);
        assert_eq!(settings.model, "qwen");
        assert_eq!(settings.system.as_deref(), Some("Plan."));
        assert_eq!(settings.temperature, Some(0.25));
        assert_eq!(settings.retries, 5);
        assert_eq!(settings.tools.as_deref(), Some(&["n".to_owned()][..]));
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://x\"\nmodel = \"x\"\ntools = [\"m\"]\n",
            5,
            "agents.m.tools",
            "not another agent",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://x/v1\"\n",
            1,
            "agents.m.model",
            "needs `model`",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nmodel = \"x\"\n",
            1,
            "agents.m.base_url",
            "needs `base_url`",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"ftp://x\"\nmodel = \"x\"\n",
            3,
            "agents.m.base_url",
            "http",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://x\"\nmodel = \"x\"\n\ntemperature = 9.0\n",
            6,
            "agents.m.temperature",
            "between 0 and 2",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://x\"\nmodel = \"x\"\nretries = -1\n",
            5,
            "agents.m.retries",
            "0 or more",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://x\"\nmodel = \"x\"\napi_key_env = \"A2A_GATEWAY_TEST_UNSET_VAR\"\n",
            5,
            "agents.m.api_key_env",
            "not set",
        );
        fails(
            "[agents.m]\nkind = \"model\"\nbase_url = \"http://x\"\nmodel = \"x\"\nsystem_file = \"no-such-prompt.md\"\n",
            5,
            "agents.m.system_file",
            "cannot read",
        );
        fails(
            "[agents.m]\nkind = \"rust\"\nexecutor = \"echo\"\nmodel = \"x\"\n",
            4,
            "agents.m.model",
            "for model agents",
        );
    }

    #[test]
    fn a_remote_url_needs_a_host() {
        for url in ["http://", "http://exa mple", "http//x", "mailto:x@y"] {
            let text = format!("[agents.a]\nkind = \"remote\"\nurl = \"{url}\"\n");
            assert_eq!(parse(&text).unwrap_err().field, "agents.a.url", "{url}");
        }
    }

    #[cfg(feature = "schema")]
    #[test]
    fn the_schema_knows_every_field_and_kind() {
        let schema = json_schema();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        let agent = &schema["definitions"]["Agent"];
        let mut fields: Vec<&str> = agent["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        fields.sort_unstable();
        let mut expected: Vec<&str> = ["kind", "title", "description", "skills"]
            .into_iter()
            .chain(KIND_FIELDS.iter().map(|(f, _)| *f))
            .collect();
        expected.sort_unstable();
        assert_eq!(fields, expected);
        assert_eq!(
            agent["properties"]["kind"]["enum"],
            serde_json::json!(["rust", "process", "remote", "model"])
        );
        assert_eq!(agent["additionalProperties"], false);
        assert_eq!(agent["required"], serde_json::json!(["kind"]));
        let cases = agent["allOf"].as_array().unwrap();
        assert_eq!(cases[2]["then"]["required"], serde_json::json!(["url"]));
        assert_eq!(cases[2]["then"]["properties"]["executor"], false);
        assert!(cases[2]["then"]["properties"].get("url").is_none());
    }

    #[test]
    fn korean_text_counts_columns_in_characters() {
        assert_eq!(line_column("가나\n다라 = 1", 13), (2, 3));
    }
}
