//! The hub's HTTP API from both ends: the bodies, queries and event names
//! that [`crate::http`] serves, and [`HubApiClient`], which calls them with
//! the same types, so that the two cannot drift apart.
//!
//! ```no_run
//! # async fn demo() -> Result<(), a2a_hub::api::HubApiError> {
//! use a2a_hub::api::{FeedEvent, HubApiClient, PostMessage};
//!
//! let hub = HubApiClient::builder("http://127.0.0.1:9999")
//!     .bearer_token("s3cret")
//!     .build()?;
//! let mut feed = hub.feed(None).await?;
//! let posted = hub.post(&PostMessage::new("@beta how is the build?")).await?;
//! loop {
//!     if let FeedEvent::Message(message) = feed.next().await? {
//!         if message.reply_to.as_deref() == Some(posted.id.as_str()) {
//!             println!("{}: {}", message.from.name(), message.text);
//!             break;
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

mod client;
mod feed;

use serde::{Deserialize, Serialize};

use crate::model::{ChannelView, Collaboration, HubMessage, ThreadView};

pub use self::client::{HubApiClient, HubApiClientBuilder, HubApiError, HubApiErrorKind};
pub use self::feed::{FeedEvent, HubFeed};

/// Where the API is, under a server's base URL.
pub const API_PATH: &str = "/hub/api";
/// The live feed's event that carries a [`HubMessage`].
pub const MESSAGE_EVENT: &str = "message";
/// The live feed's event that carries a [`ThreadView`].
pub const THREAD_EVENT: &str = "thread";
/// The live feed's event that says how many events a reader missed.
pub const LAGGED_EVENT: &str = "lagged";
/// The feed's event of a delivery that moved on: the message (as in
/// `message` events) with where each of its deliveries stands.
pub const DELIVERY_EVENT: &str = "delivery";

/// `GET /hub/api/channels`: the channels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelList {
    /// The channels, as configured.
    pub channels: Vec<ChannelView>,
}

/// `GET /hub/api/threads`: a page of threads, the most recently active
/// first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadList {
    /// The threads.
    pub threads: Vec<ThreadView>,
    /// Where the next page starts ([`ThreadsQuery::cursor`]); absent on the
    /// last page.
    #[serde(
        default,
        rename = "nextCursor",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_cursor: Option<String>,
}

/// The query of `GET /hub/api/threads`: a channel, and a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadsQuery {
    /// Only this channel's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// How many threads a page holds (default 100, at most
    /// [`crate::MAX_PAGE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The `nextCursor` of the page before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `GET /hub/api/messages`: a page of history, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageList {
    /// The messages.
    pub messages: Vec<HubMessage>,
}

/// `POST /hub/api/messages` (201): the message as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostedMessage {
    /// The message.
    pub message: HubMessage,
}

/// `POST /hub/api/collaborate`: what became of the collaboration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollaborationAnswer {
    /// The collaboration.
    pub collaboration: Collaboration,
}

/// `POST /hub/api/threads/{id}/resume`: the thread, resumed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumedThread {
    /// The thread.
    pub thread: ThreadView,
}

/// The query of `GET /hub/api/threads` and `GET /hub/api/events`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelQuery {
    /// Only this channel's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

/// The query of `GET /hub/api/messages`: a channel (its channel-level
/// messages) or a thread, and how many.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagesQuery {
    /// The channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The thread (its channel is taken from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// How many of the last messages (default 100, at most
    /// [`crate::MAX_PAGE`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// The body of `POST /hub/api/messages`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// The text; `@name` mentions call agents.
    pub text: String,
    /// The channel (default: the thread's, else the default channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Who writes, when the server authenticates nobody (default
    /// `operator`); never an agent's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

impl PostMessage {
    /// `text`, for the default channel.
    pub fn new(text: impl Into<String>) -> Self {
        PostMessage {
            text: text.into(),
            ..PostMessage::default()
        }
    }
}

/// The body of `POST /hub/api/collaborate`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollaborateRequest {
    /// The agent (or account) to work with.
    pub target: String,
    /// What to ask it.
    pub text: String,
    /// A thread to continue, whatever its age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// The channel to open the thread in (default: the default channel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Who asks, when the server authenticates nobody (default
    /// `operator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

impl CollaborateRequest {
    /// Asks `target` for `text`.
    pub fn new(target: impl Into<String>, text: impl Into<String>) -> Self {
        CollaborateRequest {
            target: target.into(),
            text: text.into(),
            ..CollaborateRequest::default()
        }
    }
}

/// An error answer: `{"error": {"message"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What an [`ErrorBody`] says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// What went wrong and, where there is one, the fix.
    pub message: String,
    /// Never in the hub's own errors: the A2A binding's errors (a route the
    /// server does not know) carry a status, which tells them apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<serde_json::Value>,
}
