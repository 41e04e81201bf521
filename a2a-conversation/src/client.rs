//! Talking to an agent as an agent, through an `a2a-client` [`Client`]:
//! continuing the conversation the pair already has (the conversation
//! index), and logging both sides of it.

use a2a_client::{CallOptions, Client, ClientError};
use a2a_core::{Message, SendMessageRequest, SendMessageResponse};

use crate::{
    ChainTip, ConversationIndex, ConversationLog, EntryType, LogEntry, Route, RouteKey,
    metadata_keys, parts_content,
};

/// Who is speaking (an agent's name), in which work session, with the index
/// of its conversations and, optionally, the log its exchanges go to.
/// Cheap to clone.
///
/// ```no_run
/// # async fn demo(client: a2a_client::Client) -> Result<(), a2a_client::ClientError> {
/// use a2a_conversation::{ClientExt as _, ConversationIndex, ConversationLog, Conversations, LogConfig};
///
/// let log = ConversationLog::open("./.a2a", LogConfig::default()).expect("log");
/// let alpha = Conversations::new("alpha", "ws-1", ConversationIndex::open("./.a2a")).log(log);
/// // The first call starts a conversation with the agent; later calls continue it.
/// client.send_in_conversation(&alpha, a2a_core::Message::user_text("hi"), None).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Conversations {
    me: String,
    session: String,
    index: ConversationIndex,
    log: Option<ConversationLog>,
}

impl Conversations {
    /// `me` speaking in work session `session`, with `index`.
    pub fn new(
        me: impl Into<String>,
        session: impl Into<String>,
        index: ConversationIndex,
    ) -> Conversations {
        Conversations {
            me: me.into(),
            session: session.into(),
            index,
            log: None,
        }
    }

    /// Logs each message sent and each answer to `log`.
    #[must_use]
    pub fn log(mut self, log: ConversationLog) -> Conversations {
        self.log = Some(log);
        self
    }

    /// The speaker.
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The index.
    pub fn index(&self) -> &ConversationIndex {
        &self.index
    }

    /// The route from the speaker to `peer`.
    pub fn route_to(&self, peer: &str) -> RouteKey {
        RouteKey::new(&self.session, &self.me, peer)
    }

    async fn append(&self, entry: LogEntry) -> Option<String> {
        let log = self.log.as_ref()?;
        match log.append(entry).await {
            Ok(id) => Some(id),
            Err(err) => {
                tracing::debug!(error = %err, "a conversation log line was not written");
                None
            }
        }
    }

    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.log
            .as_ref()
            .map_or_else(chrono::Utc::now, ConversationLog::now)
    }
}

/// Calls an agent as an agent: [`Client`] with a conversation.
pub trait ClientExt: sealed::Sealed {
    /// Sends `message` to this client's agent on behalf of `conversations`'
    /// speaker, continuing the conversation the pair already has: the
    /// message gets the route's `contextId` (and its task, when that task is
    /// waiting for input), and the route is updated with the answer.
    ///
    /// The message names its sender in its metadata, and when a log is set,
    /// the request and the answer are logged, chained after `tip` (within
    /// an agent on a server that logs, the one in its context:
    /// `ctx.extensions.get::<ChainTip>()`), which moves on to the answer;
    /// the receiving server chains its own lines after the request.
    fn send_in_conversation(
        &self,
        conversations: &Conversations,
        message: Message,
        tip: Option<&ChainTip>,
    ) -> impl Future<Output = Result<SendMessageResponse, ClientError>> + Send;
}

impl ClientExt for Client {
    fn send_in_conversation(
        &self,
        conversations: &Conversations,
        message: Message,
        tip: Option<&ChainTip>,
    ) -> impl Future<Output = Result<SendMessageResponse, ClientError>> + Send {
        send_in_conversation(self, conversations, message, tip)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for a2a_client::Client {}
}

async fn send_in_conversation(
    client: &Client,
    conversations: &Conversations,
    mut message: Message,
    tip: Option<&ChainTip>,
) -> Result<SendMessageResponse, ClientError> {
    let peer = client
        .card()
        .map_or_else(|| client.interface().url.clone(), |card| card.name.clone());
    let key = conversations.route_to(&peer);
    if let Some(route) = conversations.index.get(&key) {
        if message.context_id.is_empty() {
            message.context_id = route.context_id.clone();
        }
        if message.task_id.is_empty() && route.task_waits() {
            message.task_id = route.task_id.clone().unwrap_or_default();
        }
    }
    let metadata = message.metadata.get_or_insert_with(Default::default);
    metadata.insert(
        metadata_keys::FROM_AGENT.to_owned(),
        conversations.me.clone().into(),
    );

    let request = LogEntry::new(
        conversations.now(),
        EntryType::Request,
        conversations.me.clone(),
        Some(peer.clone()),
        parts_content(&message.parts),
    )
    .parent(tip.and_then(ChainTip::get))
    .meta("messageId", message.message_id.as_str());
    let request_id = conversations.append(request).await;
    if let (Some(id), Some(log)) = (&request_id, &conversations.log) {
        // A server on the same log then logs neither the request nor its
        // answer again (this side logs both); another takes the line as
        // its request's parent.
        crate::mark_logged(&mut message, log, id);
        if let Some(tip) = tip {
            tip.set(id.clone());
        }
    }

    let result = client
        .send_message(SendMessageRequest::new(message), None::<&CallOptions>)
        .await;
    let answered_at = conversations.now();
    let answer = match &result {
        Ok(response) => {
            let route = route_of(response, answered_at);
            let (kind, content) = match response {
                SendMessageResponse::Message(m) => (EntryType::Response, parts_content(&m.parts)),
                SendMessageResponse::Task(task) => {
                    let content = task.status.message.as_ref().map_or_else(
                        || task.status.state.as_str().into(),
                        |m| parts_content(&m.parts),
                    );
                    let kind = match task.status.state {
                        a2a_core::TaskState::Failed | a2a_core::TaskState::Rejected => {
                            EntryType::Error
                        }
                        _ => EntryType::Response,
                    };
                    (kind, content)
                }
            };
            conversations.index.record(key.clone(), route.clone());
            conversations.index.save_soon();
            LogEntry::new(
                answered_at,
                kind,
                peer.clone(),
                Some(conversations.me.clone()),
                content,
            )
            .route(&key, &route)
        }
        Err(err) => LogEntry::new(
            answered_at,
            EntryType::Error,
            peer.clone(),
            Some(conversations.me.clone()),
            err.to_string(),
        ),
    };
    if let Some(id) = conversations.append(answer.parent(request_id)).await {
        if let Some(tip) = tip {
            tip.set(id);
        }
    }
    result
}

/// Where a route stands after `response`.
fn route_of(response: &SendMessageResponse, now: chrono::DateTime<chrono::Utc>) -> Route {
    match response {
        SendMessageResponse::Task(task) => Route {
            context_id: task.context_id.clone(),
            task_id: Some(task.id.clone()),
            last_event: task.status.state.as_str().to_owned(),
            updated_at: now,
        },
        SendMessageResponse::Message(message) => Route {
            context_id: message.context_id.clone(),
            task_id: (!message.task_id.is_empty()).then(|| message.task_id.clone()),
            last_event: "message".to_owned(),
            updated_at: now,
        },
    }
}
