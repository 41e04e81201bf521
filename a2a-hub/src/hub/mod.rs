//! The hub: channels and threads in memory over their SQLite record. Each
//! concern has a room of its own:
//!
//! - `links`: how the hub reaches each agent, and which agents there are;
//! - `views`: channels, threads and history as listed;
//! - `posting`: a message's way in (validate, route, guard, record, fan
//!   out), with `observers` keeping what observers are told;
//! - `collaboration`: the collaborate call and the threads it opens;
//! - [`delivery`]: a message's way out to an agent and its answer's way
//!   back;
//! - `guards`: the loop guards;
//! - `log`: what goes to the conversation log.

mod cluster;
mod collaboration;
pub mod delivery;
mod guards;
mod links;
mod log;
mod observers;
mod operator;
mod posting;
mod views;

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use a2a_conversation::ConversationLog;
use chrono::{DateTime, Utc};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use self::guards::Window;
use self::links::Links;
use crate::config::{GuardConfig, HubConfig};
use crate::error::HubError;
use crate::model::{HubEvent, ObserverRecord, ThreadView};
use crate::store::postgres::{self, LoadWindow, PgSettings};
use crate::store::{GuardKind, Loaded, PendingDelivery, Sqlite, Store};

pub use self::links::AgentLink;
pub(crate) use self::log::with_request_line;
pub use self::operator::OPERATOR_TOKEN_FILE;
pub use self::posting::Post;
pub use self::views::ThreadPage;

/// The metadata key of what the hub tells an agent about a message it
/// delivers (see [`crate::HubContext`]).
pub const HUB_METADATA: &str = "a2a-hub";
/// The name the hub takes among a gateway's agents unless told otherwise.
pub const DEFAULT_HUB_NAME: &str = "hub";
/// The longest message the hub takes, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// How many messages a page of history holds at most.
pub const MAX_PAGE: usize = 1000;

/// The context of an agent's conversation at channel level.
fn channel_context(channel: &str) -> String {
    format!("{CHANNEL_CONTEXT_PREFIX}{channel}")
}

/// What every channel-level context starts with.
const CHANNEL_CONTEXT_PREFIX: &str = "hub-channel-";

/// The channel whose channel-level context `context` is, if it is one.
pub(crate) fn channel_of_context(context: &str) -> Option<&str> {
    context
        .strip_prefix(CHANNEL_CONTEXT_PREFIX)
        .filter(|c| !c.is_empty())
}

#[derive(Debug, Clone)]
struct ThreadState {
    view: ThreadView,
    /// RFC 3339 time, or [`guards::PAUSED_FOR_PERSON`].
    paused_until: Option<String>,
}

/// An agent's task that asked for input, and the status message that asked.
#[derive(Debug, Clone)]
struct Waiting {
    task: String,
    asked: Option<String>,
}

#[derive(Debug)]
struct State {
    threads: HashMap<String, ThreadState>,
    observed: HashMap<String, VecDeque<ObserverRecord>>,
    pairs: Window<(String, String)>,
    bursts: Window<String>,
    /// Threads opened without authentication, by address.
    anonymous_threads: Window<String>,
    /// (agent, context) → the agent's task that waits for input there.
    waiting: HashMap<(String, String), Waiting>,
    participant_seq: u64,
    /// Thread → the log line of its latest message, which a new post in
    /// it continues.
    log_tips: HashMap<String, String>,
    /// When expired observer records were last swept.
    swept: Option<DateTime<Utc>>,
}

impl State {
    /// The state the record holds, and the deliveries that were not done
    /// (not started, or waiting for an answer) when the hub last stopped.
    fn from_record(
        loaded: Loaded,
        guards: &GuardConfig,
        now: DateTime<Utc>,
    ) -> (State, Vec<PendingDelivery>) {
        let Loaded {
            threads,
            routes: _,
            observed,
            deliveries,
            participant_seq,
            guard_events,
        } = loaded;
        let threads = threads
            .into_iter()
            .map(|t| {
                let state = ThreadState {
                    view: t.view,
                    paused_until: t.paused_until,
                };
                (state.view.id.clone(), state)
            })
            .collect();
        let observed = observed
            .into_iter()
            .map(|(agent, records)| (agent, records.into()))
            .collect();
        let mut pairs = Window::new(guards.pair_window);
        let mut bursts = Window::new(guards.burst_window);
        let mut anonymous_threads = Window::new(guards.anonymous_window);
        for event in guard_events {
            match event.guard {
                GuardKind::Pair => match guards::pair_of_key(&event.key) {
                    Some(pair) => pairs.restore(pair, event.at, now),
                    None => {
                        tracing::warn!(key = %event.key, "skipping an unreadable pair guard event")
                    }
                },
                GuardKind::Burst => bursts.restore(event.key, event.at, now),
                GuardKind::AnonymousThread => anonymous_threads.restore(event.key, event.at, now),
            }
        }
        let state = State {
            threads,
            observed,
            pairs,
            bursts,
            anonymous_threads,
            waiting: HashMap::new(),
            participant_seq,
            log_tips: HashMap::new(),
            swept: None,
        };
        (state, deliveries)
    }
}

struct Inner {
    config: HubConfig,
    name: String,
    store: Store,
    state: Mutex<State>,
    links: RwLock<Links>,
    events: broadcast::Sender<HubEvent>,
    log: Option<ConversationLog>,
    stop: CancellationToken,
    tasks: TaskTracker,
    /// Deliveries under way, and who waits for there to be none.
    in_flight: std::sync::atomic::AtomicUsize,
    idle: tokio::sync::Notify,
    pending: Mutex<Vec<PendingDelivery>>,
    operator: operator::OperatorToken,
    /// Where each pair's conversation is: the hub's routes (see
    /// `collaboration`).
    conversations: a2a_gateway::Conversations,
    /// Whether the cluster's work (listening to other nodes, renewing and
    /// taking over deliveries) has started.
    cluster_started: std::sync::atomic::AtomicBool,
}

/// The collaboration hub. Cheap to clone.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("name", &self.inner.name)
            .field("channels", &self.inner.config.channels.len())
            .finish_non_exhaustive()
    }
}

/// Builds a [`Hub`].
#[derive(Debug)]
pub struct HubBuilder {
    config: HubConfig,
    dir: Option<PathBuf>,
    log: Option<ConversationLog>,
    name: String,
    conversations: Option<a2a_gateway::Conversations>,
    postgres: Option<PgSettings>,
}

/// How long a delivery's lease lasts unless told otherwise: a node that
/// stops renewing it for this long is taken for dead.
pub const DEFAULT_LEASE_TIMEOUT: Duration = Duration::from_secs(10);

impl HubBuilder {
    /// Keeps the hub's record in PostgreSQL at `url` (a `postgres://` URL),
    /// in a schema of its own ([`HubBuilder::postgres_schema`], default
    /// `a2a_hub`), instead of SQLite: every node of a gateway cluster that
    /// opens the same schema is one hub. Posts on any node show live on
    /// every node's page and feed, loop guards count every node's events,
    /// and a delivery whose node dies is taken over by another. The data
    /// directory, if given, still holds the conversation index (unless
    /// [`HubBuilder::conversations`] says otherwise) and a copy of the
    /// operator token, which the nodes share through the record.
    #[must_use]
    pub fn postgres(mut self, url: impl Into<String>) -> Self {
        self.postgres = Some(PgSettings {
            url: url.into(),
            schema: postgres::DEFAULT_SCHEMA.to_owned(),
            node: None,
            lease: DEFAULT_LEASE_TIMEOUT,
        });
        self
    }

    /// The PostgreSQL schema of the hub's tables (lower-case letters,
    /// digits and `_`); only with [`HubBuilder::postgres`].
    #[must_use]
    pub fn postgres_schema(mut self, schema: impl Into<String>) -> Self {
        if let Some(pg) = &mut self.postgres {
            pg.schema = schema.into();
        }
        self
    }

    /// This node's name in the cluster, unique among its nodes (default:
    /// one made for each start). A node restarted under its name takes
    /// back the deliveries it was following at once; under another they
    /// are taken over once their lease expires. Only with
    /// [`HubBuilder::postgres`].
    #[must_use]
    pub fn node_id(mut self, node: impl Into<String>) -> Self {
        if let Some(pg) = &mut self.postgres {
            pg.node = Some(node.into());
        }
        self
    }

    /// How long a node may go without renewing the deliveries it follows
    /// before another takes them over (default
    /// [`DEFAULT_LEASE_TIMEOUT`]); only with [`HubBuilder::postgres`].
    #[must_use]
    pub fn lease_timeout(mut self, lease: Duration) -> Self {
        if let Some(pg) = &mut self.postgres {
            pg.lease = lease.max(Duration::from_millis(30));
        }
        self
    }

    /// Keeps the hub's record in `dir/hub.db` (default: in memory).
    #[must_use]
    pub fn data_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Writes every message, guard trip and escalation to `log`.
    #[must_use]
    pub fn conversation_log(mut self, log: ConversationLog) -> Self {
        self.log = Some(log);
        self
    }

    /// The hub's own agent name in the gateway (default `hub`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Keeps the pairs' conversations (the collaborate routes) in the
    /// gateway's conversation index (default: an index of the hub's own in
    /// its data directory, or in memory).
    #[must_use]
    pub fn conversations(mut self, conversations: a2a_gateway::Conversations) -> Self {
        self.conversations = Some(conversations);
        self
    }

    /// Opens the record and loads threads, participants, routes and
    /// observer records from it.
    pub fn open(mut self) -> Result<Hub, HubError> {
        self.check_channels()?;
        let (store, operator, loaded) = match &self.postgres {
            Some(settings) => {
                let opened = postgres::open(settings, self.window(), operator::fresh())?;
                let (token, created) = opened.operator;
                let operator =
                    operator::OperatorToken::shared(token, created, self.dir.as_deref())?;
                (Store::Postgres(opened.record), operator, opened.loaded)
            }
            None => {
                let store = Sqlite::open(self.dir.as_deref())?;
                let operator = operator::OperatorToken::load_or_create(self.dir.as_deref())?;
                let window = self.window();
                let loaded = store.load(window.routes_since, window.observed_since, window.keep)?;
                (Store::Sqlite(store), operator, loaded)
            }
        };
        let conversations = self.conversations.take().unwrap_or_else(|| {
            a2a_gateway::Conversations::new(match &self.dir {
                Some(dir) => a2a_conversation::ConversationIndex::open(dir),
                None => a2a_conversation::ConversationIndex::in_memory(),
            })
        });
        collaboration::import_routes(&conversations, &loaded.routes);
        let (state, pending) =
            State::from_record(loaded, &self.config.guards, self.config.clock.now());
        let (events, _) = broadcast::channel(1024);
        Ok(Hub {
            inner: Arc::new(Inner {
                config: self.config,
                name: self.name,
                store,
                state: Mutex::new(state),
                links: RwLock::new(Links::default()),
                events,
                log: self.log,
                stop: CancellationToken::new(),
                tasks: TaskTracker::new(),
                in_flight: std::sync::atomic::AtomicUsize::new(0),
                idle: tokio::sync::Notify::new(),
                pending: Mutex::new(pending),
                operator,
                conversations,
                cluster_started: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// The default and operator channels must be channels of the hub.
    fn check_channels(&self) -> Result<(), HubError> {
        let config = &self.config;
        for channel in [&config.default_channel, &config.operator_channel]
            .into_iter()
            .flatten()
        {
            if config.channel(channel).is_none() {
                return Err(HubError::invalid(format!(
                    "the hub names channel {channel:?}, which is not one of its channels"
                )));
            }
        }
        Ok(())
    }

    /// What of the record is still current: routes within the reuse
    /// window, observer records within their time to live.
    fn window(&self) -> LoadWindow {
        let config = &self.config;
        let now = config.clock.now();
        let since = |window: Duration| {
            now.checked_sub_signed(
                chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX),
            )
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
        };
        LoadWindow {
            routes_since: since(config.reuse_window),
            observed_since: since(config.observers.ttl),
            keep: config.observers.max_per_agent,
        }
    }
}

impl Hub {
    /// A builder for a hub set up by `config`.
    pub fn builder(config: HubConfig) -> HubBuilder {
        HubBuilder {
            config,
            dir: None,
            log: None,
            name: DEFAULT_HUB_NAME.to_owned(),
            conversations: None,
            postgres: None,
        }
    }

    /// The hub's agent name in its gateway.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Its setup.
    pub fn config(&self) -> &HubConfig {
        &self.inner.config
    }

    /// Follows what the hub receives from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        self.inner.events.subscribe()
    }

    /// How long an observer record lasts.
    fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.inner.config.observers.ttl).unwrap_or(chrono::Duration::MAX)
    }

    /// The time now, to the microsecond: what the record keeps, so a time
    /// read back after a restart equals the one served before it.
    /// The operator token: what proves a person where the gateway
    /// authenticates nobody (resuming a paused thread asks for it). Kept in
    /// [`OPERATOR_TOKEN_FILE`] in the hub's directory, readable by its owner
    /// only; a hub in memory makes one for its lifetime.
    pub fn operator_token(&self) -> &str {
        &self.inner.operator.token
    }

    /// Where the operator token is kept (`None` for a hub in memory).
    pub fn operator_token_file(&self) -> Option<&Path> {
        self.inner.operator.file.as_deref()
    }

    /// Whether this start made the operator token (so it is shown once).
    pub fn operator_token_is_new(&self) -> bool {
        self.inner.operator.created
    }

    /// Whether `presented` is the operator token (compared in constant
    /// time).
    pub fn is_operator_token(&self, presented: &str) -> bool {
        self.inner.operator.matches(presented)
    }

    fn now(&self) -> DateTime<Utc> {
        use chrono::SubsecRound as _;
        self.inner.config.clock.now().trunc_subsecs(6)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn unknown_thread(thread: &str) -> HubError {
    HubError::not_found(format!("no thread {thread:?} in this hub"))
}
