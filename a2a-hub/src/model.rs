//! What the hub holds: channels, threads, messages, and the compact records
//! observers keep, as the API, the page and the store see them.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "lowercase")]
pub enum Sender {
    /// An agent of the gateway, by name.
    Agent(String),
    /// A person (the page, the command line, an A2A client that is no agent).
    Person(String),
    /// The hub itself: notices, mirrors, escalations. Never triggers an agent.
    Hub,
}

/// Who a call came from, as the loop guards count it: an identity the
/// gateway proved, or for a caller without authentication the address it
/// called from, never a name the caller merely chose (anyone can choose a
/// new name per call).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Caller {
    /// An agent (its secret, or code in process).
    Agent(String),
    /// A person the gateway authenticated, or whom code in process vouches
    /// for.
    Person(String),
    /// A caller without authentication, by its address when known (all
    /// such callers whose address is unknown share one budget).
    Anonymous(Option<std::net::IpAddr>),
}

impl Caller {
    /// The caller code in process stands for when it posts as `from`.
    pub fn vouched_for(from: &Sender) -> Caller {
        match from {
            Sender::Agent(name) => Caller::Agent(name.clone()),
            Sender::Person(name) => Caller::Person(name.clone()),
            Sender::Hub => Caller::Agent("hub".to_owned()),
        }
    }

    /// What the guards key the caller on.
    pub(crate) fn guard_key(&self) -> String {
        match self {
            Caller::Agent(name) => format!("agent:{name}"),
            Caller::Person(name) => format!("person:{name}"),
            Caller::Anonymous(Some(address)) => format!("address:{address}"),
            Caller::Anonymous(None) => "anonymous".to_owned(),
        }
    }
}

impl Sender {
    /// The name shown for it (`hub` for the hub).
    pub fn name(&self) -> &str {
        match self {
            Sender::Agent(name) | Sender::Person(name) => name,
            Sender::Hub => "hub",
        }
    }

    /// `agent`, `person` or `hub`.
    pub fn kind(&self) -> &'static str {
        match self {
            Sender::Agent(_) => "agent",
            Sender::Person(_) => "person",
            Sender::Hub => "hub",
        }
    }

    /// The agent's name, when an agent wrote it.
    pub fn agent(&self) -> Option<&str> {
        match self {
            Sender::Agent(name) => Some(name),
            _ => None,
        }
    }
}

/// What one handler is asked to do with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Mentioned first: it answers for the group.
    Primary,
    /// Mentioned after the first: it adds to the primary's answer.
    Secondary,
    /// A thread participant handling a message that mentions nobody.
    Participant,
    /// The channel's default agent handling a message that mentions nobody.
    Default,
}

impl Role {
    /// The name written in the message's metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Secondary => "secondary",
            Role::Participant => "participant",
            Role::Default => "default",
        }
    }
}

/// One message of a channel or thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HubMessage {
    /// The hub's id for it.
    pub id: String,
    /// Its channel.
    pub channel: String,
    /// Its thread, if it is in one (the thread's id is its A2A `contextId`).
    pub thread: Option<String>,
    /// Who wrote it.
    pub from: Sender,
    /// Its text, whole.
    pub text: String,
    /// When the hub took it.
    pub t: DateTime<Utc>,
    /// The agents it mentions (`@name`), in order.
    pub mentions: Vec<String>,
    /// The agents that handle it, in order (the first mentioned is primary).
    pub handlers: Vec<String>,
    /// The message it answers, when an agent's reply.
    pub reply_to: Option<String>,
    /// Why no agent was called, when none was: `paused`, `mirror`, `sink`...
    pub unrouted: Option<String>,
    /// Its line in the conversation log, when the hub keeps one:
    /// `a2a log chain ID` prints the exchange it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_id: Option<String>,
    /// Where each delivery of it to a handler stands, in handler order (as
    /// read from the record; a message just posted has none yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deliveries: Vec<DeliveryStatus>,
}

/// Where one delivery stands: the state of the agent's task for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryState {
    /// Being sent (and retried).
    Delivering,
    /// The agent took it and works on it.
    Working,
    /// The agent asked for input: the next message to it there continues
    /// its task.
    InputRequired,
    /// Followed again after the hub restarted (see the attempt).
    Resumed,
    /// The agent answered.
    Completed,
    /// The delivery or the agent's task failed (or was rejected).
    Failed,
    /// The agent's task was canceled.
    Canceled,
    /// The hub gave up on it: its task can no longer be read, or its
    /// message is gone.
    Abandoned,
}

impl DeliveryState {
    /// The name the API and the page use.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Delivering => "delivering",
            DeliveryState::Working => "working",
            DeliveryState::InputRequired => "input-required",
            DeliveryState::Resumed => "resumed",
            DeliveryState::Completed => "completed",
            DeliveryState::Failed => "failed",
            DeliveryState::Canceled => "canceled",
            DeliveryState::Abandoned => "abandoned",
        }
    }

    /// Whether nothing more will happen to the delivery (input-required
    /// waits for the next message, so it counts as settled too).
    pub fn is_settled(self) -> bool {
        !matches!(
            self,
            DeliveryState::Delivering | DeliveryState::Working | DeliveryState::Resumed
        )
    }
}

/// One delivery of a message to a handler, as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryStatus {
    /// The handler.
    pub agent: String,
    /// Where it stands.
    pub state: DeliveryState,
    /// The agent's task, once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Which time the hub follows it: 1, then one more after each restart
    /// that found it under way.
    pub attempt: u32,
    /// Why it failed, was canceled or abandoned (or what the agent asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When it came to stand there.
    pub at: DateTime<Utc>,
}

impl DeliveryStatus {
    /// `beta: working`, `beta: resumed (attempt 2)`, `beta: failed: 403 …`.
    pub fn describe(&self) -> String {
        let mut text = format!("{}: {}", self.agent, self.state.as_str());
        if self.state == DeliveryState::Resumed || self.attempt > 1 {
            text.push_str(&format!(" (attempt {})", self.attempt));
        }
        if let Some(reason) = &self.reason {
            text.push_str(": ");
            text.push_str(reason);
        }
        text
    }
}

/// A thread as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadView {
    /// Its id, also the A2A `contextId` its agents see.
    pub id: String,
    /// Its channel.
    pub channel: String,
    /// `alpha → beta · code review`.
    pub title: String,
    /// The agents that handle its messages that mention nobody, in the
    /// order they joined.
    pub participants: Vec<String>,
    /// Whether a loop guard paused it: no agent is called until a person
    /// resumes it or the cool-down passes.
    pub paused: bool,
    /// When it opened.
    pub created_at: DateTime<Utc>,
    /// When its last message came.
    pub last_activity: DateTime<Utc>,
    /// How many messages it has.
    pub messages: u64,
}

/// A channel as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelView {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The agent that handles its messages that mention nobody.
    pub default_agent: Option<String>,
    /// The agents in it (they observe what they do not handle).
    pub members: Vec<String>,
    /// Whether agents may open threads in it.
    pub threads_allowed: bool,
    /// Whether it is where collaborations without a channel go.
    pub is_default: bool,
    /// Whether it only records (operator notices): its messages call no agent.
    pub sink: bool,
}

/// What an observer keeps of a message it did not handle: never the whole
/// text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObserverRecord {
    /// Who wrote the message.
    pub from: String,
    /// Its first 50 characters.
    pub excerpt: String,
    /// The hub's id of the message.
    pub message_id: String,
    /// When it was written.
    pub t: DateTime<Utc>,
}

/// The longest excerpt an observer record keeps, in characters.
pub const EXCERPT_CHARS: usize = 50;

impl ObserverRecord {
    /// The record of `message`.
    pub fn of(message: &HubMessage) -> ObserverRecord {
        ObserverRecord {
            from: message.from.name().to_owned(),
            excerpt: message.text.chars().take(EXCERPT_CHARS).collect(),
            message_id: message.id.clone(),
            t: message.t,
        }
    }
}

/// What happens in the hub, as subscribers ([`crate::Hub::subscribe`], the
/// page's live feed) see it.
#[derive(Debug, Clone)]
pub enum HubEvent {
    /// A message was stored.
    Message(Arc<HubMessage>),
    /// A thread opened or changed (participants, paused, resumed).
    Thread(Arc<ThreadView>),
    /// A delivery of a message moved on: the message, with where each of
    /// its deliveries stands.
    Delivery(Arc<HubMessage>),
}

/// What `collaborate` is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Collaborate {
    /// The agent (or account) to work with.
    pub target: String,
    /// What to ask it.
    pub text: String,
    /// A thread to continue, whatever its age.
    #[serde(default)]
    pub thread: Option<String>,
    /// The channel to open the thread in (default: the default channel).
    #[serde(default)]
    pub channel: Option<String>,
}

impl Collaborate {
    /// Asks `target` for `text`.
    pub fn new(target: impl Into<String>, text: impl Into<String>) -> Self {
        Collaborate {
            target: target.into(),
            text: text.into(),
            ..Collaborate::default()
        }
    }

    /// Continues `thread`.
    #[must_use]
    pub fn in_thread(mut self, thread: impl Into<String>) -> Self {
        self.thread = Some(thread.into());
        self
    }

    /// Opens the thread in `channel`.
    #[must_use]
    pub fn in_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = Some(channel.into());
        self
    }
}

/// What `collaborate` answers, at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Collaboration {
    /// The thread the request went to.
    pub thread: String,
    /// Its channel.
    pub channel: String,
    /// Its title.
    pub title: String,
    /// The agent asked (an account resolved to its agent).
    pub target: String,
    /// Whether an earlier thread of the pair was continued.
    pub continued: bool,
    /// Whether the target took the message already (`false`: delivery is
    /// still being retried, and its outcome will be posted in the thread).
    pub delivered: bool,
    /// One line for a person: `delivered to beta in "alpha → beta · code review"`.
    pub confirmation: String,
}
