//! Command-line arguments.

use std::net::IpAddr;
use std::path::PathBuf;

use a2a_store_sql::StoreLocation;

/// `a2a`: serve and call A2A agents.
#[derive(Debug, clap::Parser)]
#[command(name = "a2a", version, about, after_help = crate::exit::HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Run an A2A server with the built-in agent until Ctrl-C.
    #[command(after_help = SERVE_EXAMPLES)]
    Serve(Box<ServeArgs>),
    /// Show an agent's card (and check its signature with --verify).
    #[command(after_help = CARD_EXAMPLES)]
    Card(CardArgs),
    /// Send a message (blocking, or streamed with --stream).
    #[command(after_help = SEND_EXAMPLES)]
    Send(SendArgs),
    /// Show a task.
    Get(GetArgs),
    /// List tasks.
    List(ListArgs),
    /// Cancel a task.
    Cancel(TaskArgs),
    /// Follow a task's events.
    Subscribe(TaskArgs),
    /// Manage a task's push-notification webhooks.
    #[command(subcommand)]
    Push(PushCommand),
    /// See and manage a server's durable executions.
    #[command(subcommand, after_help = JOBS_EXAMPLES)]
    Jobs(JobsCommand),
    /// Read the conversation log in a data directory.
    #[command(after_help = LOG_EXAMPLES)]
    Log(LogArgs),
    /// The conversations the gateway's agents keep, pair by pair (the
    /// conversation index of a data directory).
    #[command(after_help = CONVERSATIONS_EXAMPLES)]
    Conversations(ConversationsArgs),
    /// Talk to the collaboration hub of a running gateway: channels,
    /// threads, posting, collaborating, following it live.
    #[command(after_help = HUB_EXAMPLES)]
    Hub(HubArgs),
    /// Serve the agents of an A2A server (a gateway's every agent, or a lone
    /// agent) as MCP tools on standard input and output.
    #[command(after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),
    /// Check a gateway file (what `serve --config` reads) without serving,
    /// or print its JSON Schema.
    #[command(subcommand, after_help = CONFIG_EXAMPLES)]
    Config(ConfigCommand),
    /// Print the completion script of a shell.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per command.
    #[command(after_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

const SERVE_EXAMPLES: &str = "\
Examples:
  a2a serve                                  # the echo agent on 127.0.0.1:9999, state in ./.a2a
  a2a serve --config gateway.toml -p 8080    # the agents of a gateway file
  a2a serve --store memory --auth-bearer-token s3cret
  a2a serve --config gateway.toml --store postgres://a2a@db/a2a --node-id node-1";

const CARD_EXAMPLES: &str = "\
Examples:
  a2a card http://127.0.0.1:9999
  a2a card http://127.0.0.1:9999/agents/coder --json
  a2a card https://agent.example.com --verify --jwks https://agent.example.com/jwks.json";

const SEND_EXAMPLES: &str = "\
Examples:
  a2a send http://127.0.0.1:9999 \"hello\"
  a2a send http://127.0.0.1:9999/agents/coder \"fix the build\" --stream
  a2a send http://127.0.0.1:9999 \"summarize this\" --file notes.md --json
  a2a send http://127.0.0.1:9999 \"and in French?\" --task TASK_ID";

const JOBS_EXAMPLES: &str = "\
Examples:
  a2a jobs list --state-filter running
  a2a jobs show TASK_ID --agent coder
  a2a jobs cancel http://127.0.0.1:9999 TASK_ID --data-dir ./.a2a
  a2a jobs prune --older-than-days 3";

const LOG_EXAMPLES: &str = "\
Examples:
  a2a log today
  a2a log tail -n 50 --data-dir /var/lib/a2a
  a2a log date 2026-11-01 2026-11-07 --json
  a2a log search \"deploy failed\" --agent coder --since 2026-11-01";

const CONVERSATIONS_EXAMPLES: &str = "\
Examples:
  a2a conversations list
  a2a conversations show planner,coder
  a2a conversations list --store postgres://a2a@db/a2a --json";

const HUB_EXAMPLES: &str = "\
Examples:
  a2a hub channels
  a2a hub post \"@coder please review PR 12\" --channel dev
  a2a hub collaborate reviewer \"check the release notes\"
  a2a hub watch --url http://gateway.internal:9999 --token \"$A2A_TOKEN\"";

const MCP_EXAMPLES: &str = "\
Examples:
  a2a mcp --url http://127.0.0.1:9999                # every agent of a gateway, one tool each
  a2a mcp --url http://127.0.0.1:9999/agents/coder   # one agent
  a2a mcp --url https://agents.example.com --bearer-token-env A2A_TOKEN";

const CONFIG_EXAMPLES: &str = "\
Examples:
  a2a config check gateway.toml
  a2a config schema > schema/gateway.schema.json";

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  a2a completions bash > ~/.local/share/bash-completion/completions/a2a
  a2a completions zsh > \"${fpath[1]}/_a2a\"
  a2a completions fish > ~/.config/fish/completions/a2a.fish";

const MAN_EXAMPLES: &str = "\
Examples:
  a2a man | man -l -
  a2a man --out-dir /usr/local/share/man/man1";

/// `a2a config`: gateway files.
#[derive(Debug, clap::Subcommand)]
pub enum ConfigCommand {
    /// Check a gateway file as `a2a serve --config` does, without serving.
    ///
    /// The same checks the server makes before it starts anything: the
    /// syntax, unknown keys, each agent's fields for its kind, the Rust
    /// agents this program has, the `[hub]` table. Exits 0 and summarizes the
    /// file, or fails naming the line, the column and the key. It starts no
    /// process and calls no remote agent.
    Check {
        /// The gateway file (TOML).
        file: PathBuf,
    },
    /// Print the JSON Schema of gateway files (for editors: taplo, Even
    /// Better TOML).
    Schema,
}

/// Arguments of `a2a completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    pub shell: clap_complete::Shell,
}

/// Arguments of `a2a man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `a2a.1` and a page per subcommand (`a2a-serve.1`, ...) into
    /// this directory instead of printing `a2a.1`.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Arguments of `a2a hub`.
#[derive(Debug, clap::Args)]
pub struct HubArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: HubCommand,
    /// Which server, and how to reach it.
    #[command(flatten)]
    pub server: HubServer,
}

/// The server whose hub `a2a hub` talks to (its API is under `/hub/api`).
#[derive(Debug, Clone, clap::Args)]
pub struct HubServer {
    /// The server's base URL (what `a2a serve --config FILE` prints as
    /// "listening on").
    #[arg(
        long,
        global = true,
        env = "A2A_HUB_URL",
        default_value = DEFAULT_HUB_URL
    )]
    pub url: String,
    /// Bearer token (sent as `Authorization: Bearer <token>`): a person's
    /// token, or an agent's secret to act as that agent.
    #[arg(long, global = true, env = "A2A_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Extra header `Name: value` (repeatable), e.g. an API key.
    #[arg(long = "header", short = 'H', global = true)]
    pub headers: Vec<String>,
    /// Also trust the CA certificates in this PEM file for https.
    #[arg(long, global = true, value_name = "FILE", env = "A2A_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
    /// Print JSON (for scripts) instead of text; `watch` prints one object
    /// per line.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Where `a2a hub` looks for the server unless told: `a2a serve`'s own
/// address and port.
pub const DEFAULT_HUB_URL: &str = "http://127.0.0.1:9999";

/// `a2a hub`: what to do.
#[derive(Debug, clap::Subcommand)]
pub enum HubCommand {
    /// List the channels: default agent, members, what they allow.
    Channels,
    /// List the threads, the most recently active first.
    Threads {
        /// Only the threads of this channel.
        #[arg(long)]
        channel: Option<String>,
    },
    /// Show the messages of a channel or a thread, oldest first.
    Messages {
        /// The channel (default: the default channel, unless --thread).
        #[arg(long)]
        channel: Option<String>,
        /// The thread.
        #[arg(long)]
        thread: Option<String>,
        /// At most this many, the latest (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Post a message; agents mentioned with @name handle it.
    Post(HubPostArgs),
    /// Follow the hub live (messages, threads opening, agents joining,
    /// threads paused and resumed) until Ctrl-C.
    Watch {
        /// Only this channel.
        #[arg(long)]
        channel: Option<String>,
    },
    /// Resume a thread a loop guard paused (a person only: with the
    /// server's authentication, your token; without, the operator token,
    /// read from the data directory unless `--token` gives it).
    Resume {
        /// The thread.
        thread: String,
        /// The server's data directory, whose `hub/operator-token` proves
        /// the operator when no `--token` is given.
        #[arg(long, env = "A2A_DATA_DIR", default_value = "./.a2a")]
        data_dir: PathBuf,
    },
    /// Ask an agent to work on something: opens (or continues) a thread
    /// with it and delivers the text; answers at once.
    Collaborate(HubCollaborateArgs),
}

/// Arguments of `a2a hub post`.
#[derive(Debug, clap::Args)]
pub struct HubPostArgs {
    /// The text (mention agents with @name).
    pub text: String,
    /// The channel (default: the thread's, else the default channel).
    #[arg(long)]
    pub channel: Option<String>,
    /// Post in this thread.
    #[arg(long)]
    pub thread: Option<String>,
    /// Who writes, when the server authenticates nobody (default
    /// `operator`; an agent's name is refused).
    #[arg(long = "as", value_name = "NAME")]
    pub from: Option<String>,
    /// Wait for each delivery's outcome and print it, with the answers
    /// (the default when stdout is a terminal, without --json).
    #[arg(long, overrides_with = "no_wait")]
    pub wait: bool,
    /// Print what was posted and whom it goes to, without waiting.
    #[arg(long, overrides_with = "wait")]
    pub no_wait: bool,
}

/// Arguments of `a2a hub collaborate`.
#[derive(Debug, clap::Args)]
pub struct HubCollaborateArgs {
    /// The agent (or account) to work with.
    pub target: String,
    /// What to ask it.
    pub text: String,
    /// The channel to open the thread in (default: the default channel).
    #[arg(long)]
    pub channel: Option<String>,
    /// Continue this thread, whatever its age.
    #[arg(long)]
    pub thread: Option<String>,
    /// Who asks, when the server authenticates nobody (default `operator`).
    #[arg(long = "as", value_name = "NAME")]
    pub from: Option<String>,
}

/// Arguments of `a2a log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// What to read.
    #[command(subcommand)]
    pub what: LogCommand,
    /// The data directory whose `stream/` holds the log. A cluster's nodes
    /// that share one data directory write their own files there, and all
    /// of them are read, merged in time order. Repeat the flag for nodes
    /// that each keep their own (`--data-dir A --data-dir B`): their logs
    /// are read as one, the same way.
    #[arg(
        long,
        env = "A2A_DATA_DIR",
        default_value = "./.a2a",
        global = true,
        value_name = "DIR"
    )]
    pub data_dir: Vec<PathBuf>,
    /// Print each line as JSON (as stored) instead of `time id kind from →
    /// to: text`.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `a2a log`: which lines.
#[derive(Debug, clap::Subcommand)]
pub enum LogCommand {
    /// Today's lines (UTC).
    Today,
    /// One day's lines, or the days from one date to another.
    Date {
        /// The day, `YYYY-MM-DD`.
        day: chrono::NaiveDate,
        /// The last day of a range, `YYYY-MM-DD`.
        to: Option<chrono::NaiveDate>,
    },
    /// A message and the messages it answers, back to the first (oldest first).
    Chain {
        /// The line's id: the short one `a2a log today` shows, an
        /// unambiguous prefix of it, or the whole `msg_…` id.
        id: String,
    },
    /// The latest lines.
    Tail {
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        lines: usize,
    },
    /// Lines with these words, across every day (live, archived, gzipped),
    /// through an index kept in the data directory.
    Search(crate::log::SearchArgs),
}

/// Arguments of `a2a conversations`.
#[derive(Debug, clap::Args)]
pub struct ConversationsArgs {
    /// What to show.
    #[command(subcommand)]
    pub what: ConversationsCommand,
    /// The data directory of the server (its `conversations.json` and log).
    #[arg(long, env = "A2A_DATA_DIR", default_value = "./.a2a", global = true)]
    pub data_dir: PathBuf,
    /// The server's store: `sqlite` (the index is the data directory's
    /// file) or the `postgres://…` URL it serves with (the index is a table
    /// of the store's schema; the messages still come from the data
    /// directory's log).
    #[arg(long, env = "A2A_STORE", default_value = "sqlite", global = true)]
    pub store: String,
    /// Print JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,
}

/// `a2a conversations`: which view.
#[derive(Debug, clap::Subcommand)]
pub enum ConversationsCommand {
    /// Every pair, its contextId and last activity, most recent first.
    List,
    /// One conversation and its messages, oldest first, from the log.
    Show {
        /// The pair (`alpha|beta`, `alpha,beta`, or the whole key
        /// `WORKSPACE::alpha|beta`) or the conversation's contextId.
        conversation: String,
    },
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
    /// Seconds running tasks get to finish on shutdown (the rest is resumed
    /// at the next start).
    #[arg(long, default_value_t = 10)]
    pub shutdown_grace: u64,
    /// Days an ended task (completed, failed, canceled, rejected) is kept
    /// after its last change, so clients can still read it; 0 keeps tasks
    /// for ever. Job records go after 7 days whatever this says.
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub task_retention_days: u64,
    /// MiB of request bodies the server holds at once, across every binding
    /// and the hub; a body with no room left is answered 503 with
    /// Retry-After. Bodies are read only from authenticated callers.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub body_budget_mib: u64,
    /// Where the state is kept.
    #[command(flatten)]
    pub state: StateArgs,
    /// A file holding the 32-byte key that encrypts push-notification
    /// credentials at rest (raw, 64 hex digits or base64).
    #[arg(long, env = "A2A_PUSH_KEY_FILE")]
    pub push_key_file: Option<std::path::PathBuf>,
    /// Sign the agent card (every agent's, with --config) with this private
    /// key: PEM, PKCS#8 for ES256 and EdDSA, PKCS#1 for RS256.
    #[arg(long, value_name = "FILE", requires = "card_key_id")]
    pub card_key: Option<std::path::PathBuf>,
    /// The signing key's id (`kid`): clients find its public key by it.
    #[arg(long, value_name = "KID", requires = "card_key")]
    pub card_key_id: Option<String>,
    /// The signing algorithm: ES256, EdDSA or RS256.
    #[arg(long, value_name = "ALG", default_value = "ES256")]
    pub card_key_alg: String,
    /// Who may call: without any of these every caller is the same
    /// anonymous user and all share one space of tasks.
    #[command(flatten)]
    pub auth: AuthArgs,
    /// Do not write the conversation log (by default every message in and
    /// out is logged under `--data-dir`/stream, one JSON line each).
    #[arg(long)]
    pub no_conversation_log: bool,
    /// Serve TLS with this certificate chain (PEM, the server's certificate
    /// first); needs --tls-key. Every binding then takes `https://` URLs,
    /// and the card says so.
    #[arg(long, value_name = "FILE", env = "A2A_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", env = "A2A_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Join a cluster as this node: servers sharing one PostgreSQL `--store`
    /// answer any request for any task and take over each other's work
    /// (with --config, every agent of the file, each in its own schema). Keep
    /// the name across restarts and give every node its own.
    #[arg(long, value_name = "NAME", env = "A2A_NODE_ID")]
    pub node_id: Option<String>,
    /// With --node-id: seconds a node may go silent before the others take
    /// its running tasks over.
    #[arg(long, value_name = "SECS", default_value_t = 5.0, requires = "node_id")]
    pub lease_timeout: f64,
    /// The address clients reach this server at (a load balancer in front of
    /// a cluster): the card names it instead of the listening address, so
    /// every node serves the same card.
    #[arg(long, value_name = "URL")]
    pub public_url: Option<reqwest::Url>,
    /// Host the agents of this gateway file (TOML) instead of the built-in
    /// echo agent: each under /agents/NAME with its own card and tasks.
    #[arg(long, value_name = "FILE", env = "A2A_GATEWAY_CONFIG")]
    pub config: Option<PathBuf>,
}

/// The authentication `a2a serve` enforces (one kind at a time); the card
/// declares the matching scheme.
#[derive(Debug, Default, clap::Args)]
pub struct AuthArgs {
    /// Accept `Authorization: Bearer TOKEN` (repeat for more tokens; each
    /// token is its own identity).
    #[arg(long = "auth-bearer-token", value_name = "TOKEN", env = "A2A_AUTH_BEARER_TOKEN",
          conflicts_with_all = ["api_keys", "jwt_jwks"])]
    pub bearer_tokens: Vec<String>,
    /// Accept an API key in a header, as HEADER=KEY (repeat for more keys;
    /// each key is its own identity, all in the same header).
    #[arg(
        long = "auth-api-key",
        value_name = "HEADER=KEY",
        conflicts_with = "jwt_jwks"
    )]
    pub api_keys: Vec<String>,
    /// Accept JWT bearer tokens signed by the keys at this JWKS URL (needs
    /// --auth-jwt-audience and --auth-jwt-issuer); the identity is `sub`.
    #[arg(long = "auth-jwt-jwks", value_name = "URL", requires_all = ["jwt_audience", "jwt_issuer"])]
    pub jwt_jwks: Option<String>,
    /// The `aud` a JWT must carry.
    #[arg(long = "auth-jwt-audience", requires = "jwt_jwks")]
    pub jwt_audience: Option<String>,
    /// The `iss` a JWT must carry.
    #[arg(long = "auth-jwt-issuer", requires = "jwt_jwks")]
    pub jwt_issuer: Option<String>,
}

/// Where a server's state is: `--store` and `--data-dir`.
#[derive(Debug, Clone, clap::Args)]
pub struct StateArgs {
    /// Where the state is kept: `sqlite` (a file in --data-dir), `memory`
    /// (lost on exit), or a `postgres://…` URL.
    #[arg(long, env = "A2A_STORE", default_value = "sqlite")]
    pub store: String,
    /// The data directory: the SQLite store (one server at a time) and the
    /// conversation log.
    #[arg(long, env = "A2A_DATA_DIR", default_value = "./.a2a")]
    pub data_dir: PathBuf,
}

impl StateArgs {
    /// The store these arguments name.
    pub fn location(&self) -> anyhow::Result<StoreLocation> {
        Ok(match self.store.as_str() {
            "sqlite" => StoreLocation::Sqlite(self.data_dir.clone()),
            other => other.parse()?,
        })
    }
}

/// `a2a jobs`: the durable executions of a server.
#[derive(Debug, clap::Subcommand)]
pub enum JobsCommand {
    /// List jobs, newest first, straight from the server's store.
    List(JobsListArgs),
    /// Show one job and its task, straight from the server's store.
    Show(JobShowArgs),
    /// Cancel a job's task through the running server (A2A CancelTask); on
    /// a gateway, through the agent that runs it.
    Cancel(JobsCancelArgs),
    /// Delete the records of jobs finished longer ago than an age, and
    /// ended tasks older than the task retention (stop the server first when
    /// its state is in SQLite; it also prunes on its own).
    Prune(JobsPruneArgs),
}

/// Arguments of `a2a jobs list`.
#[derive(Debug, clap::Args)]
pub struct JobsListArgs {
    /// The server's store.
    #[command(flatten)]
    pub state: StateArgs,
    /// On a gateway's data directory: only this agent's jobs (default:
    /// every agent's).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Only jobs in this state: pending, running, completed, failed,
    /// abandoned, canceled.
    #[arg(long)]
    pub state_filter: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// Print JSON (for scripts) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `a2a jobs show`.
#[derive(Debug, clap::Args)]
pub struct JobShowArgs {
    /// The server's store.
    #[command(flatten)]
    pub state: StateArgs,
    /// The job's task id.
    pub task_id: String,
    /// On a gateway's data directory: look only in this agent's store
    /// (default: every agent's).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Print JSON (for scripts) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `a2a jobs prune`.
#[derive(Debug, clap::Args)]
pub struct JobsPruneArgs {
    /// The server's store.
    #[command(flatten)]
    pub state: StateArgs,
    /// On a gateway's data directory: only this agent's store (default:
    /// every agent's).
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Delete the records of jobs finished longer ago than this many days
    /// (their tasks stay until the task retention).
    #[arg(long, default_value_t = 7)]
    pub older_than_days: u64,
    /// Delete ended tasks (completed, failed, canceled, rejected) whose
    /// last change is older than this many days; 0 keeps them.
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub task_retention_days: u64,
    /// Print JSON (for scripts) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `a2a jobs cancel`.
#[derive(Debug, clap::Args)]
pub struct JobsCancelArgs {
    /// The server and the task.
    #[command(flatten)]
    pub task: TaskArgs,
    /// The gateway agent that runs the task: the request goes to
    /// `URL/agents/NAME` instead of URL.
    #[arg(long, value_name = "NAME", conflicts_with = "data_dir")]
    pub agent: Option<String>,
    /// The server's data directory: on a gateway's, the agent whose store
    /// holds the task's job is the one asked to cancel it.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// `a2a card`.
#[derive(Debug, Clone, clap::Args)]
pub struct CardArgs {
    /// The agent.
    #[command(flatten)]
    pub target: Target,
    /// Check the card's signature against the keys of `--jwks`; fail when
    /// none of its signatures verifies.
    #[arg(long, requires = "jwks")]
    pub verify: bool,
    /// The trusted public keys: a JWKS file, or an http(s) URL serving one.
    #[arg(long, value_name = "FILE|URL")]
    pub jwks: Option<String>,
}

/// Which agent to talk to, and how.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// The agent's base URL (its card is at /.well-known/agent-card.json), or the card's URL.
    pub url: String,
    /// Print JSON (for scripts) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Binding to use: jsonrpc, http_json or grpc (default: the card's preference).
    #[arg(long, global = true)]
    pub transport: Option<String>,
    /// Extra header `Name: value` (repeatable).
    #[arg(long = "header", short = 'H', global = true)]
    pub headers: Vec<String>,
    /// Bearer token (sent as `Authorization: Bearer <token>`).
    #[arg(long, global = true, env = "A2A_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Also trust the CA certificates in this PEM file for https, on every
    /// binding (for a server with a private or self-signed certificate).
    #[arg(long, global = true, value_name = "FILE", env = "A2A_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
}

/// Arguments of `a2a mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The server: a gateway's base URL (each of its agents becomes a tool),
    /// or one agent's base or card URL.
    #[arg(long)]
    pub url: String,
    /// Bearer token presented to the agents (sent as `Authorization: Bearer <token>`).
    #[arg(long, value_name = "TOKEN", conflicts_with = "bearer_token_env")]
    pub bearer_token: Option<String>,
    /// The environment variable holding the bearer token.
    #[arg(long, value_name = "NAME")]
    pub bearer_token_env: Option<String>,
    /// Also trust the CA certificates in this PEM file for https.
    #[arg(long, value_name = "FILE", env = "A2A_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
}

/// Arguments of `a2a send`.
#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// The agent.
    #[command(flatten)]
    pub target: Target,
    /// The message text.
    pub text: String,
    /// Stream the events as they happen.
    #[arg(long)]
    pub stream: bool,
    /// Continue this task.
    #[arg(long = "task")]
    pub task_id: Option<String>,
    /// Send within this context.
    #[arg(long = "context")]
    pub context_id: Option<String>,
    /// Attach a file (repeatable).
    #[arg(long = "file")]
    pub files: Vec<PathBuf>,
    /// Attach a JSON value as a data part.
    #[arg(long)]
    pub data: Option<String>,
    /// Return as soon as the task exists.
    #[arg(long)]
    pub no_wait: bool,
}

/// A task of an agent.
#[derive(Debug, clap::Args)]
pub struct TaskArgs {
    /// The agent.
    #[command(flatten)]
    pub target: Target,
    /// The task id.
    pub task_id: String,
}

/// Arguments of `a2a get`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// The task.
    #[command(flatten)]
    pub task: TaskArgs,
    /// How many recent history messages to show.
    #[arg(long)]
    pub history: Option<i32>,
}

/// Arguments of `a2a list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// The agent.
    #[command(flatten)]
    pub target: Target,
    /// Only tasks of this context.
    #[arg(long = "context")]
    pub context_id: Option<String>,
    /// Only tasks in this state (e.g. TASK_STATE_WORKING, or `working`).
    #[arg(long)]
    pub status: Option<String>,
    /// Tasks per page (1-100).
    #[arg(long)]
    pub page_size: Option<i32>,
    /// Continue from this page token.
    #[arg(long)]
    pub page_token: Option<String>,
    /// Follow the page tokens to the end.
    #[arg(long)]
    pub all: bool,
    /// Include artifacts.
    #[arg(long)]
    pub artifacts: bool,
}

/// `a2a push ...`.
#[derive(Debug, clap::Subcommand)]
pub enum PushCommand {
    /// Register a webhook for a task.
    Set {
        /// The task.
        #[command(flatten)]
        task: TaskArgs,
        /// The webhook URL.
        webhook: String,
        /// A token echoed to the webhook.
        #[arg(long = "push-token")]
        push_token: Option<String>,
        /// `Scheme credentials` sent as the webhook's Authorization (e.g. "Bearer abc").
        #[arg(long)]
        auth: Option<String>,
    },
    /// Show one webhook config.
    Get {
        /// The task.
        #[command(flatten)]
        task: TaskArgs,
        /// The config id.
        config_id: String,
    },
    /// List a task's webhook configs.
    List(TaskArgs),
    /// Delete a webhook config.
    Delete {
        /// The task.
        #[command(flatten)]
        task: TaskArgs,
        /// The config id.
        config_id: String,
    },
}
