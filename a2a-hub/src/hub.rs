//! The hub: channels and threads in memory over their SQLite record, the
//! routing of each message to its handlers, the observers' records, the
//! collaborate call, the loop guards and delivery to agents.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientBuilder, ClientError, RetryPolicy};
use a2a_conversation::{ConversationLog, EntryType, LogEntry};
use a2a_core::{Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse};
use a2a_gateway::{AgentKind, Gateway};
use chrono::{DateTime, Utc};
use tokio::sync::{broadcast, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{ChannelConfig, HubConfig};
use crate::delivery::{self, FailureClass, Undelivered};
use crate::error::{HubError, HubErrorKind};
use crate::guards::Window;
use crate::model::{
    ChannelView, Collaborate, Collaboration, HubEvent, HubMessage, ObserverRecord, Role, Sender,
    ThreadView,
};
use crate::routing::{self, Decision, Place};
use crate::store::{Loaded, Store, Write, stamp};

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
    format!("hub-channel-{channel}")
}

/// How the hub reaches one agent.
#[derive(Debug)]
pub struct AgentLink {
    endpoint: String,
    client: LinkClient,
}

enum LinkClient {
    Ready(Client),
    /// Connected on first use, and again after a failed attempt: a remote
    /// that is down when the hub starts does not stop the hub.
    Remote(Box<RemoteClient>),
}

struct RemoteClient {
    url: String,
    builder: ClientBuilder,
    client: tokio::sync::Mutex<Option<Client>>,
}

impl std::fmt::Debug for LinkClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkClient::Ready(_) => f.write_str("Ready"),
            LinkClient::Remote(remote) => write!(f, "Remote({})", remote.url),
        }
    }
}

impl AgentLink {
    /// An agent reached through `client`; `endpoint` says where, for the
    /// mapping table.
    pub fn client(endpoint: impl Into<String>, client: Client) -> Self {
        AgentLink {
            endpoint: endpoint.into(),
            client: LinkClient::Ready(client),
        }
    }

    /// A remote A2A agent at `url` (its card is read on first use),
    /// presenting `bearer` if given. The hub retries by its own policy, so
    /// the client does not.
    pub fn remote(url: impl Into<String>, bearer: Option<String>) -> Self {
        let url = url.into();
        let mut options = CallOptions::default();
        if let Some(token) = bearer {
            options = options.header("authorization", format!("Bearer {token}"));
        }
        let builder = ClientBuilder::new()
            .retry(RetryPolicy::none())
            .track_blocking_sends(false)
            .default_options(options);
        AgentLink {
            endpoint: url.clone(),
            client: LinkClient::Remote(Box::new(RemoteClient {
                url,
                builder,
                client: tokio::sync::Mutex::new(None),
            })),
        }
    }

    /// Where the agent is.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    async fn get(&self) -> Result<Client, ClientError> {
        match &self.client {
            LinkClient::Ready(client) => Ok(client.clone()),
            LinkClient::Remote(remote) => {
                let mut client = remote.client.lock().await;
                if let Some(client) = &*client {
                    return Ok(client.clone());
                }
                let connected = remote.builder.connect(&remote.url).await?;
                *client = Some(connected.clone());
                Ok(connected)
            }
        }
    }
}

#[derive(Debug, Clone)]
struct ThreadState {
    view: ThreadView,
    /// RFC 3339 time, or `person`.
    paused_until: Option<String>,
}

const PAUSED_FOR_PERSON: &str = "person";

/// An agent's task that asked for input, and the status message that asked.
#[derive(Debug, Clone)]
struct Waiting {
    task: String,
    asked: Option<String>,
}

#[derive(Debug)]
struct State {
    threads: HashMap<String, ThreadState>,
    /// (opener, target, channel) → (thread, last used).
    routes: HashMap<(String, String, String), (String, DateTime<Utc>)>,
    observed: HashMap<String, VecDeque<ObserverRecord>>,
    pairs: Window<(String, String)>,
    bursts: Window<String>,
    /// (agent, context) → the agent's task that waits for input there.
    waiting: HashMap<(String, String), Waiting>,
    participant_seq: u64,
    /// When expired observer records were last swept.
    swept: Option<DateTime<Utc>>,
}

/// The agents the hub reaches, by name.
#[derive(Debug, Default)]
struct Links {
    links: HashMap<String, Arc<AgentLink>>,
    /// Sorted.
    names: Vec<String>,
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
    pending: Mutex<Vec<crate::store::PendingDelivery>>,
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
}

impl HubBuilder {
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

    /// Opens the record and loads threads, participants, routes and
    /// observer records from it.
    pub fn open(self) -> Result<Hub, HubError> {
        for channel in [&self.config.default_channel, &self.config.operator_channel]
            .into_iter()
            .flatten()
        {
            if self.config.channel(channel).is_none() {
                return Err(HubError::invalid(format!(
                    "the hub names channel {channel:?}, which is not one of its channels"
                )));
            }
        }
        let store = Store::open(self.dir.as_deref())?;
        let now = self.config.clock.now();
        let since = |window: Duration| {
            now - chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX)
        };
        let loaded = store.load(
            since(self.config.reuse_window),
            since(self.config.observers.ttl),
            self.config.observers.max_per_agent,
        )?;
        let Loaded {
            threads,
            routes,
            observed,
            deliveries,
            participant_seq,
        } = loaded;
        let state = State {
            threads: threads
                .into_iter()
                .map(|t| {
                    (
                        t.view.id.clone(),
                        ThreadState {
                            view: t.view,
                            paused_until: t.paused_until,
                        },
                    )
                })
                .collect(),
            routes: routes
                .into_iter()
                .map(|(opener, target, channel, thread, at)| {
                    ((opener, target, channel), (thread, at))
                })
                .collect(),
            observed: observed
                .into_iter()
                .map(|(agent, records)| (agent, records.into()))
                .collect(),
            pairs: Window::new(self.config.guards.pair_window),
            bursts: Window::new(self.config.guards.burst_window),
            waiting: HashMap::new(),
            participant_seq,
            swept: None,
        };
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
                pending: Mutex::new(deliveries),
            }),
        })
    }
}

/// A message to post.
#[derive(Debug, Clone)]
pub struct Post {
    /// Who writes it.
    pub from: Sender,
    /// The channel (taken from the thread when one is given).
    pub channel: Option<String>,
    /// The thread, if it goes in one.
    pub thread: Option<String>,
    /// Its text.
    pub text: String,
    /// Whether it is an echo of what the hub already holds (a mirror or
    /// sink copied back): dropped, never routed.
    pub mirror: bool,
}

impl Post {
    /// `text` from `from`, at the level of `channel`.
    pub fn new(from: Sender, channel: impl Into<String>, text: impl Into<String>) -> Post {
        Post {
            from,
            channel: Some(channel.into()),
            thread: None,
            text: text.into(),
            mirror: false,
        }
    }

    /// `text` from `from` in `thread`.
    pub fn in_thread(from: Sender, thread: impl Into<String>, text: impl Into<String>) -> Post {
        Post {
            from,
            channel: None,
            thread: Some(thread.into()),
            text: text.into(),
            mirror: false,
        }
    }
}

/// A delivery under way: resolves when the agent took the message, or
/// could not.
type Delivering = (String, oneshot::Receiver<Result<(), Undelivered>>);
/// A stored message and its deliveries under way.
type Posted = (Arc<HubMessage>, Vec<Delivering>);

impl Hub {
    /// A builder for a hub set up by `config`.
    pub fn builder(config: HubConfig) -> HubBuilder {
        HubBuilder {
            config,
            dir: None,
            log: None,
            name: DEFAULT_HUB_NAME.to_owned(),
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

    /// Links every agent of `gateway` but the hub itself, through the
    /// gateway in this process (the agents see the caller `agent:<hub>`),
    /// except those `remote` links directly; logs the mapping table; and
    /// starts following the deliveries that were waiting for an answer when
    /// the hub last stopped.
    pub fn connect(
        &self,
        gateway: &Gateway,
        mut direct: HashMap<String, AgentLink>,
    ) -> Result<(), HubError> {
        let peers = gateway
            .peers(&self.inner.name)
            .map_err(|err| HubError::invalid(err.to_string()))?;
        for agent in gateway.agents() {
            if agent.name == self.inner.name {
                continue;
            }
            let link = match direct.remove(&agent.name) {
                Some(link) => link,
                None => {
                    let client = peers
                        .client(&agent.name)
                        .map_err(|err| HubError::invalid(err.to_string()))?;
                    let endpoint = match agent.kind {
                        AgentKind::Rust => format!("in-process ({})", agent.card_url),
                        _ => format!("{} via the gateway ({})", agent.endpoint, agent.card_url),
                    };
                    AgentLink::client(endpoint, client)
                }
            };
            self.link(&agent.name, link);
        }
        for (name, link) in direct {
            self.link(&name, link);
        }
        tracing::info!("collaboration hub agents:\n{}", self.mapping_table());
        self.resume_pending();
        Ok(())
    }

    /// Links agent `name` (replacing any earlier link).
    pub fn link(&self, name: &str, link: AgentLink) {
        let mut links = self.inner.links.write().unwrap_or_else(|e| e.into_inner());
        links.links.insert(name.to_owned(), Arc::new(link));
        let mut names: Vec<String> = links.links.keys().cloned().collect();
        names.sort();
        links.names = names;
    }

    /// The agents the hub reaches, sorted.
    pub fn agent_names(&self) -> Vec<String> {
        self.links().names.clone()
    }

    /// Whether `name` is an agent the hub reaches.
    pub fn is_agent(&self, name: &str) -> bool {
        self.links().links.contains_key(name)
    }

    fn links(&self) -> std::sync::RwLockReadGuard<'_, Links> {
        self.inner.links.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Every agent id and account, and where it leads: what the hub logs
    /// when it starts.
    pub fn mapping_table(&self) -> String {
        let links = self.links();
        let mut rows: Vec<(String, String)> = links
            .names
            .iter()
            .map(|name| (name.clone(), links.links[name].endpoint.clone()))
            .collect();
        for (account, agent) in &self.inner.config.accounts {
            rows.push((account.clone(), format!("account of agent {agent}")));
        }
        let width = rows
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let mut out = format!("{:<width$}  ENDPOINT\n", "AGENT");
        for (name, endpoint) in rows {
            out.push_str(&format!("{name:<width$}  {endpoint}\n"));
        }
        out
    }

    /// Follows what the hub receives from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<HubEvent> {
        self.inner.events.subscribe()
    }

    /// The channels.
    pub fn channels(&self) -> Vec<ChannelView> {
        let config = &self.inner.config;
        config
            .channels
            .iter()
            .map(|c| ChannelView {
                name: c.name.clone(),
                description: c.description.clone(),
                default_agent: c.default_agent.clone(),
                members: self.members(c),
                threads_allowed: config.threads_allowed(&c.name),
                is_default: config.default_channel.as_deref() == Some(&c.name),
                sink: config.is_sink(&c.name),
            })
            .collect()
    }

    fn members(&self, channel: &ChannelConfig) -> Vec<String> {
        match &channel.members {
            Some(members) => members.clone(),
            None if self.inner.config.is_sink(&channel.name) => Vec::new(),
            None => self.agent_names(),
        }
    }

    fn channel(&self, name: &str) -> Result<&ChannelConfig, HubError> {
        self.inner.config.channel(name).ok_or_else(|| {
            let known: Vec<&str> = self
                .inner
                .config
                .channels
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            HubError::not_found(format!(
                "no channel named {name:?} (channels: {}); add it as [hub.channels.{name}]",
                known.join(", ")
            ))
        })
    }

    /// The threads, of one channel or all, the most recently active first.
    pub fn threads(&self, channel: Option<&str>) -> Vec<ThreadView> {
        let state = self.state();
        let mut threads: Vec<ThreadView> = state
            .threads
            .values()
            .filter(|t| channel.is_none_or(|c| t.view.channel == c))
            .map(|t| t.view.clone())
            .collect();
        threads.sort_by(|a, b| b.last_activity.cmp(&a.last_activity).then(a.id.cmp(&b.id)));
        threads
    }

    /// The thread `id`.
    pub fn thread(&self, id: &str) -> Option<ThreadView> {
        self.state().threads.get(id).map(|t| t.view.clone())
    }

    /// The last `limit` messages of `channel` at channel level, or of
    /// `thread` (whose channel is then taken from it), oldest first.
    pub async fn messages(
        &self,
        channel: Option<&str>,
        thread: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HubMessage>, HubError> {
        let channel = match thread {
            Some(thread) => {
                self.thread(thread)
                    .ok_or_else(|| unknown_thread(thread))?
                    .channel
            }
            None => {
                let channel =
                    channel.ok_or_else(|| HubError::invalid("name a channel or a thread"))?;
                self.channel(channel)?.name.clone()
            }
        };
        self.inner
            .store
            .messages(channel, thread.map(str::to_owned), limit.min(MAX_PAGE))
            .await
    }

    /// The observer records agent `agent` holds now, oldest first.
    pub fn observed(&self, agent: &str) -> Vec<ObserverRecord> {
        let now = self.now();
        let ttl = self.ttl();
        self.state()
            .observed
            .get(agent)
            .map(|records| {
                records
                    .iter()
                    .filter(|r| now - r.t < ttl)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.inner.config.observers.ttl).unwrap_or(chrono::Duration::MAX)
    }

    /// The time now, to the microsecond: what the record keeps, so a time
    /// read back after a restart equals the one served before it.
    fn now(&self) -> DateTime<Utc> {
        use chrono::SubsecRound as _;
        self.inner.config.clock.now().trunc_subsecs(6)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts a message: stores it, then calls its handlers (without waiting
    /// for them) and records it for its observers. Answers once the message
    /// is on record.
    pub async fn post(&self, post: Post) -> Result<HubMessage, HubError> {
        let (message, _) = self.post_routed(post, None).await?;
        Ok((*message).clone())
    }

    /// [`Hub::post_routed_now`], boxed: posting a notice or an answer
    /// posts again.
    fn post_routed(
        &self,
        post: Post,
        reply_to: Option<String>,
    ) -> futures::future::BoxFuture<'_, Result<Posted, HubError>> {
        Box::pin(self.post_routed_now(post, reply_to))
    }

    async fn post_routed_now(
        &self,
        post: Post,
        reply_to: Option<String>,
    ) -> Result<Posted, HubError> {
        let text = post.text.trim_end().to_owned();
        if text.trim().is_empty() {
            return Err(HubError::invalid("the message has no text"));
        }
        if text.len() > MAX_TEXT_BYTES {
            return Err(HubError::invalid(format!(
                "the message has {} bytes; the hub takes at most {MAX_TEXT_BYTES}",
                text.len()
            )));
        }
        if let Sender::Person(name) = &post.from {
            self.check_person_name(name)?;
        }
        if let Some(agent) = post.from.agent() {
            if !self.is_agent(agent) {
                return Err(self.unknown_target(agent));
            }
        }
        let channel = match (&post.thread, &post.channel) {
            (Some(thread), _) => {
                self.thread(thread)
                    .ok_or_else(|| unknown_thread(thread))?
                    .channel
            }
            (None, Some(channel)) => self.channel(channel)?.name.clone(),
            (None, None) => self.default_channel()?,
        };
        let now = self.now();
        let id = uuid::Uuid::now_v7().to_string();
        if post.mirror {
            // An echo of what the hub holds: it has been routed once.
            tracing::debug!(%channel, from = post.from.name(), "dropped a mirrored message");
            return Ok((
                Arc::new(HubMessage {
                    id,
                    channel,
                    thread: post.thread,
                    from: post.from,
                    text,
                    t: now,
                    mentions: Vec::new(),
                    handlers: Vec::new(),
                    reply_to,
                    unrouted: Some("mirror".to_owned()),
                }),
                Vec::new(),
            ));
        }
        let mentions = {
            let links = self.links();
            routing::mentions(&text, |name| links.links.contains_key(name))
        };
        let channel_config = self.channel(&channel)?.clone();
        let members = self.members(&channel_config);
        let sink = self.inner.config.is_sink(&channel);
        let mut writes = Vec::new();
        let mut thread_events = Vec::new();
        let mut tripped = None;
        let mut channel_tripped = None;
        let (message, handlers) = {
            let mut state = self.state();
            let state = &mut *state;
            let mut unrouted = None;
            let decision = match &post.thread {
                Some(thread_id) => {
                    let thread = state
                        .threads
                        .get_mut(thread_id)
                        .ok_or_else(|| unknown_thread(thread_id))?;
                    let mut decision = routing::decide(
                        &post.from,
                        &mentions,
                        Place::Thread {
                            participants: &thread.view.participants,
                            members: &members,
                        },
                    );
                    // Mentioned agents join even when the thread is paused:
                    // a person resuming it finds them there.
                    for agent in &decision.joined {
                        state.participant_seq += 1;
                        thread.view.participants.push(agent.clone());
                        writes.push(Write::Participant {
                            thread: thread_id.clone(),
                            agent: agent.clone(),
                            seq: state.participant_seq,
                        });
                    }
                    thread.view.messages += 1;
                    thread.view.last_activity = now;
                    let paused = resume_if_cooled(thread, now);
                    if paused {
                        unrouted = Some("paused");
                    } else if !matches!(post.from, Sender::Hub) {
                        let burst = state.bursts.count(thread_id, Instant::now());
                        if burst > self.inner.config.guards.thread_burst as usize {
                            thread.paused_until = Some(match self.inner.config.guards.cool_down {
                                Some(cool) => stamp(
                                    now + chrono::Duration::from_std(cool)
                                        .unwrap_or(chrono::Duration::MAX),
                                ),
                                None => PAUSED_FOR_PERSON.to_owned(),
                            });
                            thread.view.paused = true;
                            unrouted = Some("paused");
                            tripped = Some((thread_id.clone(), burst));
                        }
                    }
                    if unrouted.is_some() {
                        decision
                            .observers
                            .extend(decision.handlers.drain(..).map(|(agent, _)| agent));
                    }
                    writes.push(Write::Thread {
                        view: thread.view.clone(),
                        paused_until: thread.paused_until.clone(),
                    });
                    thread_events.push(Arc::new(thread.view.clone()));
                    decision
                }
                None => {
                    let mut decision = routing::decide(
                        &post.from,
                        &mentions,
                        Place::Channel {
                            default_agent: channel_config.default_agent.as_deref(),
                            members: &members,
                        },
                    );
                    // Agents mentioning each other at channel level are
                    // held to the thread's burst limit too; people's
                    // messages always reach their handlers.
                    if post.from.agent().is_some() && !decision.handlers.is_empty() {
                        let key = format!("#{channel}");
                        let burst = state.bursts.count(&key, Instant::now());
                        let limit = self.inner.config.guards.thread_burst as usize;
                        if burst > limit {
                            decision
                                .observers
                                .extend(decision.handlers.drain(..).map(|(agent, _)| agent));
                            unrouted = Some("burst");
                            if burst == limit + 1 {
                                channel_tripped = Some(burst);
                            }
                        }
                    }
                    decision
                }
            };
            let Decision {
                mut handlers,
                mut observers,
                ..
            } = decision;
            if sink && !handlers.is_empty() {
                observers.extend(handlers.drain(..).map(|(agent, _)| agent));
                unrouted = Some("sink");
            }
            if matches!(post.from, Sender::Hub) {
                unrouted = Some("hub");
            }
            let message = Arc::new(HubMessage {
                id,
                channel: channel.clone(),
                thread: post.thread.clone(),
                from: post.from.clone(),
                text,
                t: now,
                mentions,
                handlers: handlers.iter().map(|(a, _)| a.clone()).collect(),
                reply_to,
                unrouted: unrouted.map(str::to_owned),
            });
            let record = ObserverRecord::of(&message);
            let keep = self.inner.config.observers.max_per_agent;
            let ttl = self.ttl();
            for agent in observers {
                let records = state.observed.entry(agent.clone()).or_default();
                records.push_back(record.clone());
                while records.len() > keep || records.front().is_some_and(|r| now - r.t >= ttl) {
                    records.pop_front();
                }
                writes.push(Write::Observed {
                    agent,
                    record: record.clone(),
                    keep,
                });
            }
            // Now and then, records past their day go from every agent, also
            // from those that observe nothing any more.
            if state
                .swept
                .is_none_or(|at| now - at >= chrono::Duration::minutes(10))
            {
                state.swept = Some(now);
                for records in state.observed.values_mut() {
                    records.retain(|r| now - r.t < ttl);
                }
                state.observed.retain(|_, records| !records.is_empty());
                writes.push(Write::ExpireObserved { before: now - ttl });
            }
            (message, handlers)
        };
        writes.insert(0, Write::Message(message.clone()));
        self.inner.store.write(writes).await?;
        for thread in thread_events {
            let _ = self.inner.events.send(HubEvent::Thread(thread));
        }
        let _ = self.inner.events.send(HubEvent::Message(message.clone()));
        self.log_message(&message).await;
        let mut delivering = Vec::with_capacity(handlers.len());
        for (agent, role) in handlers {
            let (done, receiver) = oneshot::channel();
            delivering.push((agent.clone(), receiver));
            let message = message.clone();
            self.spawn_delivery(move |hub| async move {
                hub.deliver(message, agent, role, done).await;
            });
        }
        if let Some((thread, burst)) = tripped {
            self.trip_burst(&thread, &channel, burst).await;
        }
        if let Some(burst) = channel_tripped {
            let guards = &self.inner.config.guards;
            let notice = format!(
                "loop guard: agents posted {burst} messages to each other in #{channel} within {} s \
                 (limit {}); their mentions call no agent until the window passes",
                guards.burst_window.as_secs(),
                guards.thread_burst
            );
            tracing::warn!(%channel, burst, "collaboration hub: agents' mentions in a channel held back by the loop guard");
            self.log_decision("channel_burst", &notice, None, &channel)
                .await;
            let _ = self
                .post_routed(Post::new(Sender::Hub, channel.clone(), notice), None)
                .await;
        }
        Ok((message, delivering))
    }

    fn check_person_name(&self, name: &str) -> Result<(), HubError> {
        if name.trim().is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
            return Err(HubError::invalid(
                "a person's name is 1 to 64 characters, none of them control characters",
            ));
        }
        if self.is_agent(name) || name == self.inner.name || name == "hub" {
            return Err(HubError::invalid(format!(
                "{name:?} is an agent's name; a person cannot post as an agent"
            )));
        }
        Ok(())
    }

    fn default_channel(&self) -> Result<String, HubError> {
        self.inner.config.default_channel.clone().ok_or_else(|| {
            HubError::invalid(
                "no channel given and the hub has no default channel: name one, or set \
                 default_channel = \"NAME\" under [hub] in the gateway file \
                 (HubConfig::default_channel in code)",
            )
        })
    }

    async fn trip_burst(&self, thread: &str, channel: &str, burst: usize) {
        let guards = &self.inner.config.guards;
        let until = match guards.cool_down {
            Some(cool) => format!("a person resumes it or {} s pass", cool.as_secs()),
            None => "a person resumes it".to_owned(),
        };
        let notice = format!(
            "loop guard: this thread took {burst} messages in {} s (limit {}); it is paused and \
             calls no agent until {until}",
            guards.burst_window.as_secs(),
            guards.thread_burst
        );
        tracing::warn!(%thread, %channel, burst, "collaboration hub: a thread was paused by the loop guard");
        self.log_decision("thread_paused", &notice, Some(thread), channel)
            .await;
        let _ = self
            .post_routed(Post::in_thread(Sender::Hub, thread, notice), None)
            .await;
    }

    /// Resumes a paused thread (a person's decision): its next messages
    /// reach their handlers again.
    pub async fn resume_thread(&self, thread: &str, by: &str) -> Result<ThreadView, HubError> {
        let view = {
            let mut state = self.state();
            let state = &mut *state;
            let entry = state
                .threads
                .get_mut(thread)
                .ok_or_else(|| unknown_thread(thread))?;
            entry.paused_until = None;
            entry.view.paused = false;
            state.bursts.reset(&thread.to_owned());
            entry.view.clone()
        };
        self.inner
            .store
            .write(vec![Write::Thread {
                view: view.clone(),
                paused_until: None,
            }])
            .await?;
        let _ = self
            .inner
            .events
            .send(HubEvent::Thread(Arc::new(view.clone())));
        self.log_decision(
            "thread_resumed",
            &format!("{by} resumed the thread"),
            Some(thread),
            &view.channel,
        )
        .await;
        Ok(view)
    }

    /// Asks `target` to work with `from`: opens (or continues) a thread,
    /// mentions the target in it and delivers the message over A2A. Answers
    /// as soon as the target took the message, or after
    /// [`HubConfig::collaborate_wait`] when delivery goes on in the
    /// background; never waits for the target's work. The answer, however
    /// late, lands in the thread, where `from` (a participant) hears of it.
    pub async fn collaborate(
        &self,
        from: Sender,
        request: Collaborate,
    ) -> Result<Collaboration, HubError> {
        let text = request.text.trim().to_owned();
        if text.is_empty() {
            return Err(HubError::invalid("collaborate needs a text: what to ask"));
        }
        let target = self.resolve(&request.target)?;
        if from.agent() == Some(target.as_str()) {
            return Err(HubError::invalid(format!(
                "{target} cannot collaborate with itself"
            )));
        }
        if let Sender::Person(name) = &from {
            self.check_person_name(name)?;
        }
        let opener = from.name().to_owned();
        let now = self.now();
        let (thread, channel, continued) = match &request.thread {
            Some(thread) => {
                let view = self.thread(thread).ok_or_else(|| unknown_thread(thread))?;
                (Some(view.id), view.channel, true)
            }
            None => {
                let channel = match &request.channel {
                    Some(channel) => self.channel(channel)?.name.clone(),
                    None => self.default_channel()?,
                };
                if !self.inner.config.threads_allowed(&channel) {
                    let allowed: Vec<String> = self
                        .channels()
                        .into_iter()
                        .filter(|c| c.threads_allowed)
                        .map(|c| c.name)
                        .collect();
                    return Err(HubError::invalid(format!(
                        "channel not allowed: agents may not open threads in {channel:?} \
                         (allowed: {}); add it to thread_channels under [hub]",
                        allowed.join(", ")
                    )));
                }
                let reuse = chrono::Duration::from_std(self.inner.config.reuse_window)
                    .unwrap_or(chrono::Duration::MAX);
                let state = self.state();
                let route = state
                    .routes
                    .get(&(opener.clone(), target.clone(), channel.clone()))
                    .filter(|(thread, at)| now - *at < reuse && state.threads.contains_key(thread))
                    .map(|(thread, _)| thread.clone());
                let continued = route.is_some();
                (route, channel, continued)
            }
        };
        // The pair guard counts every collaborate call, continued or not.
        let admitted = self.state().pairs.admit(
            &(opener.clone(), target.clone()),
            self.inner.config.guards.pair_limit,
            Instant::now(),
        );
        if let Err(wait) = admitted {
            let guards = &self.inner.config.guards;
            let message = format!(
                "refused by the loop guard: {opener} asked {target} {} times in the last {} s; \
                 talk in the thread you have, or try again in {} s",
                guards.pair_limit,
                guards.pair_window.as_secs(),
                wait.as_secs().max(1)
            );
            tracing::warn!(%opener, %target, "collaboration hub: collaborate refused by the pair guard");
            self.log_decision("collaborate_refused", &message, thread.as_deref(), &channel)
                .await;
            return Err(HubError::refused(message, wait));
        }
        let thread = match thread {
            Some(thread) => {
                let view = self
                    .thread(&thread)
                    .ok_or_else(|| unknown_thread(&thread))?;
                self.inner
                    .store
                    .write(vec![route_write(
                        &opener,
                        &target,
                        &view.channel,
                        &thread,
                        now,
                    )])
                    .await?;
                self.state().routes.insert(
                    (opener.clone(), target.clone(), view.channel.clone()),
                    (thread.clone(), now),
                );
                view
            }
            None => {
                self.open_thread(&from, &target, &channel, &text, now)
                    .await?
            }
        };
        let mention = format!("@{target}");
        let already = routing::mentions(&text, |name| name == target).contains(&target);
        let body = match already {
            true => text,
            false => format!("{mention} {text}"),
        };
        let (_, delivering) = self
            .post_routed(Post::in_thread(from, thread.id.clone(), body), None)
            .await?;
        let receiver = delivering
            .into_iter()
            .find(|(agent, _)| *agent == target)
            .map(|(_, receiver)| receiver);
        let delivered = match receiver {
            Some(receiver) => {
                match tokio::time::timeout(self.inner.config.collaborate_wait, receiver).await {
                    Ok(Ok(Ok(()))) => true,
                    Ok(Ok(Err(undelivered))) => {
                        return Err(HubError::new(
                            HubErrorKind::Undelivered,
                            format!(
                                "{target} {undelivered}; the operator was told, and the thread \
                                 {:?} keeps the message",
                                thread.title
                            ),
                        ));
                    }
                    // Still trying (a busy or failing agent): the outcome
                    // will be posted in the thread.
                    Ok(Err(_)) | Err(_) => false,
                }
            }
            // The thread is paused: the message waits there.
            None => false,
        };
        let confirmation = match (delivered, thread.paused) {
            (true, _) => format!("delivered to {target} in {:?}", thread.title),
            (false, true) => format!(
                "posted in {:?}, which the loop guard paused: {target} is called once a person resumes it",
                thread.title
            ),
            (false, false) => format!(
                "posted in {:?}; delivery to {target} is still being tried, and its outcome will be posted there",
                thread.title
            ),
        };
        Ok(Collaboration {
            thread: thread.id,
            channel: thread.channel,
            title: thread.title,
            target,
            continued,
            delivered,
            confirmation,
        })
    }

    async fn open_thread(
        &self,
        from: &Sender,
        target: &str,
        channel: &str,
        text: &str,
        now: DateTime<Utc>,
    ) -> Result<ThreadView, HubError> {
        let topic = topic_of(text);
        let opener = from.name();
        let id = uuid::Uuid::now_v7().to_string();
        let mut participants = Vec::new();
        if let Some(agent) = from.agent() {
            participants.push(agent.to_owned());
        }
        participants.push(target.to_owned());
        let view = ThreadView {
            id: id.clone(),
            channel: channel.to_owned(),
            title: format!("{opener} → {target} · {topic}"),
            participants: participants.clone(),
            paused: false,
            created_at: now,
            last_activity: now,
            messages: 0,
        };
        let mut writes = vec![Write::Thread {
            view: view.clone(),
            paused_until: None,
        }];
        {
            let mut state = self.state();
            for agent in &participants {
                state.participant_seq += 1;
                writes.push(Write::Participant {
                    thread: id.clone(),
                    agent: agent.clone(),
                    seq: state.participant_seq,
                });
            }
        }
        writes.push(route_write(opener, target, channel, &id, now));
        self.inner.store.write(writes).await?;
        {
            let mut state = self.state();
            state.threads.insert(
                id.clone(),
                ThreadState {
                    view: view.clone(),
                    paused_until: None,
                },
            );
            state.routes.insert(
                (opener.to_owned(), target.to_owned(), channel.to_owned()),
                (id.clone(), now),
            );
        }
        let _ = self
            .inner
            .events
            .send(HubEvent::Thread(Arc::new(view.clone())));
        // The hub's own line at channel level: people see the thread open;
        // being the hub's, it calls no agent.
        let _ = self
            .post_routed(
                Post::new(
                    Sender::Hub,
                    channel,
                    format!("{opener} opened the thread {:?} with {target}", view.title),
                ),
                None,
            )
            .await;
        Ok(view)
    }

    /// The agent `id` names: an agent, or an account standing for one.
    pub fn resolve(&self, id: &str) -> Result<String, HubError> {
        if self.is_agent(id) {
            return Ok(id.to_owned());
        }
        if let Some(agent) = self.inner.config.accounts.get(id) {
            if self.is_agent(agent) {
                return Ok(agent.clone());
            }
        }
        Err(self.unknown_target(id))
    }

    fn unknown_target(&self, id: &str) -> HubError {
        let known = self.agent_names().join(", ");
        let accounts: Vec<String> = self
            .inner
            .config
            .accounts
            .iter()
            .map(|(account, agent)| format!("{account} → {agent}"))
            .collect();
        let accounts = match accounts.is_empty() {
            true => String::new(),
            false => format!("; accounts: {}", accounts.join(", ")),
        };
        if let Some(file) = &self.inner.config.config_file {
            if added_since_start(file, id) {
                return HubError::invalid(format!(
                    "agent {id:?} is in {} but was added after the gateway started: restart \
                     `a2a serve` (or reload the gateway) to load it",
                    file.display()
                ));
            }
            return HubError::invalid(format!(
                "no agent or account named {id:?} (agents: {known}{accounts}); add it under \
                 [agents.{id}] in {}, or map the id to an agent under [hub.accounts]",
                file.display()
            ));
        }
        HubError::invalid(format!(
            "no agent or account named {id:?} (agents: {known}{accounts}); register it with \
             GatewayBuilder::agent, or map the id to an agent in HubConfig::accounts"
        ))
    }

    async fn deliver(
        &self,
        message: Arc<HubMessage>,
        agent: String,
        role: Role,
        done: oneshot::Sender<Result<(), Undelivered>>,
    ) {
        let link = self.links().links.get(&agent).cloned();
        let Some(link) = link else {
            let undelivered = Undelivered {
                class: FailureClass::Refused,
                attempts: 0,
                reason: format!("no link to agent {agent}"),
            };
            self.escalate(&message, &agent, &undelivered).await;
            let _ = done.send(Err(undelivered));
            return;
        };
        let context = message
            .thread
            .clone()
            .unwrap_or_else(|| channel_context(&message.channel));
        let waiting = self
            .state()
            .waiting
            .remove(&(agent.clone(), context.clone()));
        let stale = waiting.as_ref().and_then(|w| w.asked.clone());
        let request = self.request_for(&message, &agent, role, &context, waiting.map(|w| w.task));
        let policy = &self.inner.config.delivery;
        let sent = tokio::select! {
            () = self.inner.stop.cancelled() => return,
            sent = delivery::send_with_retries(link.endpoint(), || link.get(), &request, policy, |retry| {
                tracing::warn!(
                    %agent,
                    attempt = retry.attempt,
                    wait_ms = u64::try_from(retry.wait.as_millis()).unwrap_or(u64::MAX),
                    class = ?retry.class,
                    reason = %retry.reason,
                    "collaboration hub: delivery failed; retrying"
                );
            }) => sent,
        };
        let (client, response) = match sent {
            Ok(sent) => sent,
            Err(undelivered) => {
                self.escalate(&message, &agent, &undelivered).await;
                let _ = done.send(Err(undelivered));
                return;
            }
        };
        let _ = done.send(Ok(()));
        let task = match &response {
            SendMessageResponse::Message(_) => None,
            SendMessageResponse::Task(task)
                if delivery::settles(&task.status, stale.as_deref()) =>
            {
                None
            }
            SendMessageResponse::Task(task) => Some(task.id.clone()),
        };
        let answer = match task {
            None => response,
            Some(task_id) => {
                let pending = Write::Delivery {
                    message_id: message.id.clone(),
                    agent: agent.clone(),
                    task_id: task_id.clone(),
                };
                if let Err(err) = self.inner.store.write(vec![pending]).await {
                    tracing::warn!(error = %err, "collaboration hub: a delivery could not be recorded; it is followed but not resumed after a restart");
                }
                match delivery::follow(&client, &task_id, stale.as_deref(), &self.inner.stop).await
                {
                    Some(task) => SendMessageResponse::Task(task),
                    None => return,
                }
            }
        };
        self.answered(&message, &agent, &context, answer).await;
    }

    fn request_for(
        &self,
        message: &HubMessage,
        agent: &str,
        role: Role,
        context: &str,
        waiting: Option<String>,
    ) -> SendMessageRequest {
        let (title, participants) = match &message.thread {
            Some(thread) => self
                .thread(thread)
                .map(|t| (Some(t.title), t.participants))
                .unwrap_or_default(),
            None => (None, Vec::new()),
        };
        let observed = self.observed(agent);
        let hub = serde_json::json!({
            "hub": self.inner.name,
            "channel": message.channel,
            "thread": message.thread,
            "threadTitle": title,
            "messageId": message.id,
            "from": message.from.name(),
            "fromKind": message.from.kind(),
            "role": role.as_str(),
            "mentions": message.mentions,
            "participants": participants,
            "observed": observed,
        });
        let mut metadata = serde_json::Map::new();
        metadata.insert(HUB_METADATA.to_owned(), hub);
        let mut a2a = Message::user_text(message.text.clone())
            .with_message_id(format!("{}-{agent}", message.id))
            .with_context_id(context.to_owned());
        a2a.metadata = Some(metadata);
        if let Some(task) = waiting {
            a2a = a2a.with_task_id(task);
        }
        let mut request = SendMessageRequest::new(a2a);
        request.configuration = Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        });
        request
    }

    /// Posts what `agent` answered to `message` where the message was.
    async fn answered(
        &self,
        message: &HubMessage,
        agent: &str,
        context: &str,
        answer: SendMessageResponse,
    ) {
        let _ = self
            .inner
            .store
            .write(vec![Write::Delivered {
                message_id: message.id.clone(),
                agent: agent.to_owned(),
            }])
            .await;
        let (text, from) = match &answer {
            SendMessageResponse::Task(task) => {
                let state = task.state();
                if matches!(
                    state,
                    a2a_core::TaskState::InputRequired | a2a_core::TaskState::AuthRequired
                ) {
                    let waiting = Waiting {
                        task: task.id.clone(),
                        asked: task.status.message.as_ref().map(|m| m.message_id.clone()),
                    };
                    self.state()
                        .waiting
                        .insert((agent.to_owned(), context.to_owned()), waiting);
                }
                match (state, delivery::task_text(task)) {
                    (a2a_core::TaskState::Failed | a2a_core::TaskState::Rejected, text) => (
                        Some(format!(
                            "{agent} could not answer ({}): {}",
                            state_name(state),
                            text.unwrap_or_else(|| "no reason given".to_owned())
                        )),
                        Sender::Hub,
                    ),
                    (_, text) => (text, Sender::Agent(agent.to_owned())),
                }
            }
            SendMessageResponse::Message(_) => (
                delivery::answer_text(&answer),
                Sender::Agent(agent.to_owned()),
            ),
        };
        // An agent that has nothing to say posts nothing.
        let Some(text) = text else { return };
        let post = Post {
            from,
            channel: Some(message.channel.clone()),
            thread: message.thread.clone(),
            text,
            mirror: false,
        };
        if let Err(err) = self.post_routed(post, Some(message.id.clone())).await {
            tracing::warn!(%agent, error = %err, "collaboration hub: an agent's answer could not be posted");
        }
    }

    /// Tells the operator that `agent` did not get `message`: a notice in
    /// the operator's channel (a sink) and in the message's place, a
    /// warning in the log and a line on record.
    async fn escalate(&self, message: &HubMessage, agent: &str, undelivered: &Undelivered) {
        let notice = format!("delivery to {agent} failed: {agent} {undelivered}");
        tracing::warn!(%agent, message = %message.id, reason = %undelivered, "collaboration hub: delivery failed; escalated");
        self.log_decision(
            "escalated",
            &notice,
            message.thread.as_deref(),
            &message.channel,
        )
        .await;
        if let Some(operator) = self.inner.config.operator_channel.clone() {
            let where_ = match &message.thread {
                Some(thread) => format!(
                    " (thread {:?} in #{})",
                    self.thread(thread).map(|t| t.title).unwrap_or_default(),
                    message.channel
                ),
                None => format!(" (#{})", message.channel),
            };
            let _ = self
                .post_routed(
                    Post::new(Sender::Hub, operator, format!("{notice}{where_}")),
                    None,
                )
                .await;
        }
        let post = Post {
            from: Sender::Hub,
            channel: Some(message.channel.clone()),
            thread: message.thread.clone(),
            text: notice,
            mirror: false,
        };
        let _ = self.post_routed(post, Some(message.id.clone())).await;
    }

    fn resume_pending(&self) {
        let pending =
            std::mem::take(&mut *self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for delivery in pending {
            self.spawn_delivery(move |hub| async move {
                hub.resume_delivery(delivery).await;
            });
        }
    }

    async fn resume_delivery(&self, pending: crate::store::PendingDelivery) {
        let message = match self.inner.store.message(pending.message_id.clone()).await {
            Ok(Some(message)) => message,
            _ => {
                let _ = self
                    .inner
                    .store
                    .write(vec![Write::Delivered {
                        message_id: pending.message_id,
                        agent: pending.agent,
                    }])
                    .await;
                return;
            }
        };
        let link = self.links().links.get(&pending.agent).cloned();
        let Some(link) = link else { return };
        let Ok(client) = link.get().await else {
            return;
        };
        let context = message
            .thread
            .clone()
            .unwrap_or_else(|| channel_context(&message.channel));
        if let Some(task) =
            delivery::follow(&client, &pending.task_id, None, &self.inner.stop).await
        {
            self.answered(
                &message,
                &pending.agent,
                &context,
                SendMessageResponse::Task(task),
            )
            .await;
        }
    }

    async fn log_message(&self, message: &HubMessage) {
        let Some(log) = &self.inner.log else { return };
        let mut entry = LogEntry::new(
            message.t,
            EntryType::Request,
            message.from.name(),
            message.handlers.first().cloned(),
            message.text.clone(),
        )
        .meta("hubMessageId", message.id.clone())
        .meta("channel", message.channel.clone())
        .meta("handlers", message.handlers.clone());
        if let Some(thread) = &message.thread {
            entry = entry.meta("contextId", thread.clone());
        }
        if let Some(why) = &message.unrouted {
            entry = entry.meta("unrouted", why.clone());
        }
        if let Err(err) = log.append(entry).await {
            tracing::debug!(error = %err, "collaboration hub: a message was not logged");
        }
    }

    async fn log_decision(&self, what: &str, text: &str, thread: Option<&str>, channel: &str) {
        let Some(log) = &self.inner.log else { return };
        let kind = match what {
            "escalated" => EntryType::Error,
            _ => EntryType::Decision,
        };
        let mut entry = LogEntry::new(
            self.now(),
            kind,
            self.inner.name.clone(),
            None,
            text.to_owned(),
        )
        .meta("decision", what.to_owned())
        .meta("channel", channel.to_owned());
        if let Some(thread) = thread {
            entry = entry.meta("contextId", thread.to_owned());
        }
        let _ = log.append(entry).await;
    }

    fn spawn_delivery<F, Fut>(&self, work: F)
    where
        F: FnOnce(Hub) -> Fut,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        use std::sync::atomic::Ordering;
        self.inner.in_flight.fetch_add(1, Ordering::AcqRel);
        let hub = self.clone();
        let work = work(hub.clone());
        self.inner.tasks.spawn(async move {
            work.await;
            if hub.inner.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
                hub.inner.idle.notify_waiters();
            }
        });
    }

    /// Waits until no delivery is under way: every message posted so far
    /// has reached its handlers, and their answers (and what those set off)
    /// are posted, or have failed. A delivery whose agent never settles
    /// keeps it waiting.
    pub async fn wait_idle(&self) {
        use std::sync::atomic::Ordering;
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.inner.in_flight.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Stops following deliveries and waits for the hub's background work
    /// (up to `grace`). Deliveries still waiting for an answer are followed
    /// again on the next start.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.stop.cancel();
        self.inner.tasks.close();
        let _ = tokio::time::timeout(grace, self.inner.tasks.wait()).await;
    }
}

fn route_write(
    opener: &str,
    target: &str,
    channel: &str,
    thread: &str,
    at: DateTime<Utc>,
) -> Write {
    Write::Route {
        opener: opener.to_owned(),
        target: target.to_owned(),
        channel: channel.to_owned(),
        thread: thread.to_owned(),
        at,
    }
}

fn unknown_thread(thread: &str) -> HubError {
    HubError::not_found(format!("no thread {thread:?} in this hub"))
}

fn state_name(state: a2a_core::TaskState) -> &'static str {
    match state {
        a2a_core::TaskState::Rejected => "rejected",
        _ => "failed",
    }
}

/// Whether `thread` is paused now; a pause whose cool-down has passed is
/// lifted.
fn resume_if_cooled(thread: &mut ThreadState, now: DateTime<Utc>) -> bool {
    let Some(until) = &thread.paused_until else {
        return false;
    };
    if until == PAUSED_FOR_PERSON {
        return true;
    }
    let over = DateTime::parse_from_rfc3339(until).map_or(true, |t| now >= t.with_timezone(&Utc));
    if over {
        thread.paused_until = None;
        thread.view.paused = false;
    }
    !over
}

/// The topic a thread is named after: the text's first line, mentions
/// left out, cut to 48 characters.
fn topic_of(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or(text);
    let words: Vec<&str> = line
        .split_whitespace()
        .filter(|w| !w.starts_with('@'))
        .collect();
    let topic = words.join(" ");
    let mut cut: String = topic.chars().take(48).collect();
    if topic.chars().count() > 48 {
        cut.push('…');
    }
    cut
}

/// Whether the gateway file at `path` now has an agent table `id`.
fn added_since_start(path: &Path, id: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Ok(value) = text.parse::<toml::Table>() else {
        return false;
    };
    value
        .get("agents")
        .and_then(toml::Value::as_table)
        .is_some_and(|agents| agents.contains_key(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_is_the_first_line_without_mentions() {
        assert_eq!(topic_of("@beta please review\nthe code"), "please review");
        let long = "x".repeat(60);
        assert_eq!(topic_of(&long).chars().count(), 49);
    }
}
