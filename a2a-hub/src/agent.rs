//! The hub's A2A face, and what agents use to take part.
//!
//! The hub is an agent of its gateway (`/agents/hub`, every binding), so
//! any agent, process or person with an A2A client reaches it the same way:
//!
//! - a message with a data part `{"collaborate": {"target", "text",
//!   "thread"?, "channel"?}}` starts (or continues) a collaboration and is
//!   answered at once with `{"collaboration": {...}}`;
//! - `{"post": {"channel"?, "thread"?, "text"}}` posts a message;
//! - `{"resume": {"thread"}}` resumes a paused thread (an authenticated
//!   person only);
//! - plain text is posted: in the thread whose id is the message's
//!   `contextId`, else in the default channel;
//! - a `collaborate` or `post` that names no thread and no channel goes
//!   where the conversation its metadata `a2a-hub/context` names is (a
//!   hub thread, or a channel's level): a model agent's tools say so.
//!
//! The caller is who the gateway says it is: an agent's own secret makes it
//! `agent:<name>` (that is how [`Peers`] and process agents call). Other
//! callers are people, named by their authenticated identity, or without
//! authentication by the message's metadata `a2a-hub/from` (default
//! `operator`).

use a2a_client::{Client, ClientError, ClientErrorKind};
use a2a_core::{
    A2aError, AgentCard, AgentSkill, Message, Part, SendMessageRequest, SendMessageResponse,
    TaskState,
};
use a2a_gateway::{AgentDefinition, Peers, UnknownAgent};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::HubError;
use crate::hub::{HUB_METADATA, Hub, Post};
use crate::model::{Caller, Collaborate, Collaboration, HubMessage, ObserverRecord, Role, Sender};

/// The metadata key a person's A2A message names its author with, when
/// the gateway authenticates nobody.
pub const FROM_METADATA: &str = "a2a-hub/from";
/// The metadata key (`true`) of a message that copies one the hub already
/// holds (a mirror or sink bridged back): it is dropped, never routed.
pub const MIRROR_METADATA: &str = "a2a-hub/mirror";
/// Who an anonymous person is, unless the message says.
pub const DEFAULT_PERSON: &str = "operator";
/// The metadata key (a `contextId`) of the conversation a request to the
/// hub's A2A face comes from, when the request cannot carry the hub's own
/// context (a model agent's tool call has only its task's `contextId`): a
/// `collaborate` that names no thread and no channel opens in that
/// conversation's channel, a `post` goes to that thread (or channel level).
pub const CONTEXT_METADATA: &str = "a2a-hub/context";

/// What the hub's A2A face is asked, in a data part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HubRequest {
    /// Work with another agent.
    Collaborate(Collaborate),
    /// Post a message.
    Post(PostRequest),
    /// Resume a paused thread.
    Resume {
        /// The thread.
        thread: String,
    },
}

/// A message to post, as the hub's A2A face takes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PostRequest {
    /// The channel (default: the thread's, else the default channel).
    #[serde(default)]
    pub channel: Option<String>,
    /// The thread.
    #[serde(default)]
    pub thread: Option<String>,
    /// The text.
    pub text: String,
}

/// The hub as an agent of its gateway.
#[derive(Debug, Clone)]
pub struct HubAgent {
    hub: Hub,
}

impl Hub {
    /// Who a caller the gateway knows as user `user` is: an agent by its
    /// own secret (`agent:<name>`), a person by an authenticated name, and
    /// without authentication the person `claimed` (default `operator`).
    /// The API and the A2A face decide alike.
    pub fn sender_of(&self, user: &str, claimed: Option<&str>) -> Sender {
        if let Some(agent) = user.strip_prefix("agent:") {
            if self.is_agent(agent) {
                return Sender::Agent(agent.to_owned());
            }
        }
        if !user.is_empty() {
            return Sender::Person(user.to_owned());
        }
        let claimed = claimed.map(str::trim).filter(|name| !name.is_empty());
        Sender::Person(claimed.unwrap_or(DEFAULT_PERSON).to_owned())
    }

    /// The hub as an agent to add to its gateway, under its name.
    pub fn agent_definition(&self) -> AgentDefinition {
        let mut card = AgentCard::new(
            "Collaboration hub",
            "Channels and threads where the gateway's agents work together; post, or ask one agent to collaborate with another.",
        );
        card.skills = vec![
            skill(
                "collaborate",
                "Collaborate",
                "Opens or continues a thread with another agent and delivers a message to it; answers at once.",
            ),
            skill(
                "post",
                "Post",
                "Posts a message in a channel or thread; mentioned agents (@name) handle it.",
            ),
        ];
        AgentDefinition::new(self.name().to_owned(), card, HubAgent { hub: self.clone() })
    }
}

fn skill(id: &str, name: &str, description: &str) -> AgentSkill {
    AgentSkill {
        id: id.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        tags: vec!["collaboration".to_owned()],
        ..AgentSkill::default()
    }
}

impl HubAgent {
    fn sender(&self, ctx: &RequestContext) -> Sender {
        let claimed = ctx
            .message
            .metadata
            .as_ref()
            .and_then(|m| m.get(FROM_METADATA))
            .and_then(|v| v.as_str());
        self.hub.sender_of(&ctx.call.user.name, claimed)
    }
}

/// The data part key a refusal travels under in a failed task's status
/// message (an executor's error becomes a failed task, not a protocol
/// error): [`HubClient`] turns it back into the error.
const HUB_ERROR: &str = "hubError";

#[async_trait]
impl AgentExecutor for HubAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        // The request's own log line (its server logged it): what it posts
        // is that line, not a second copy.
        let line = ctx
            .extensions
            .get::<a2a_conversation::ChainTip>()
            .and_then(a2a_conversation::ChainTip::get);
        let handled = crate::hub::with_request_line(line, self.handle(ctx, &events)).await;
        match handled {
            Err(Refusal::Hub(err)) => {
                let data = serde_json::json!({ HUB_ERROR: {
                    "kind": err.kind().as_str(),
                    "message": err.message(),
                    "retryAfterSecs": err.retry_after().map(|d| d.as_secs()),
                }});
                let message =
                    events.agent_message(vec![Part::text(err.message()), Part::data(data)]);
                events.status(TaskState::Failed, Some(message)).await
            }
            Err(Refusal::A2a(err)) => Err(err),
            Ok(()) => Ok(()),
        }
    }
}

/// Why the hub's A2A face said no.
enum Refusal {
    Hub(HubError),
    A2a(A2aError),
}

impl From<HubError> for Refusal {
    fn from(err: HubError) -> Self {
        Refusal::Hub(err)
    }
}

impl From<A2aError> for Refusal {
    fn from(err: A2aError) -> Self {
        Refusal::A2a(err)
    }
}

impl HubAgent {
    async fn handle(&self, ctx: RequestContext, events: &EventQueue) -> Result<(), Refusal> {
        let from = self.sender(&ctx);
        let mut request = self.request_of(&ctx)?;
        self.place_from_context(&ctx, &mut request);
        match request {
            HubRequest::Collaborate(collaborate) => {
                // Over A2A the caller's address is not known here: callers
                // without authentication share one budget.
                let caller = match &from {
                    Sender::Person(_) if !ctx.call.user.authenticated => Caller::Anonymous(None),
                    proven => Caller::vouched_for(proven),
                };
                let done = self.hub.collaborate_as(from, &caller, collaborate).await?;
                Ok(events
                    .reply(vec![
                        Part::text(done.confirmation.clone()),
                        Part::data(serde_json::json!({ "collaboration": done })),
                    ])
                    .await?)
            }
            HubRequest::Post(post) => self.post(from, post, is_mirror(&ctx), events).await,
            HubRequest::Resume { thread } => {
                let proven = ctx.call.user.authenticated;
                self.resume(from, proven, &thread, events).await
            }
        }
    }

    /// Gives a `collaborate` or `post` that names no place the place of the
    /// conversation the message's `a2a-hub/context` names, when that is the
    /// hub's: a thread (a collaboration opens in its channel; a post goes in
    /// it) or a channel's level.
    fn place_from_context(&self, ctx: &RequestContext, request: &mut HubRequest) {
        let Some(context) = ctx
            .message
            .metadata
            .as_ref()
            .and_then(|m| m.get(CONTEXT_METADATA))
            .and_then(|v| v.as_str())
        else {
            return;
        };
        let (thread, channel) = match self.hub.thread(context) {
            Some(thread) => (Some(thread.id), thread.channel),
            None => match crate::hub::channel_of_context(context) {
                Some(channel) if self.hub.channels().iter().any(|c| c.name == channel) => {
                    (None, channel.to_owned())
                }
                // Not the hub's conversation: the defaults hold.
                _ => return,
            },
        };
        match request {
            HubRequest::Collaborate(c) if c.thread.is_none() && c.channel.is_none() => {
                c.channel = Some(channel);
            }
            HubRequest::Post(p) if p.thread.is_none() && p.channel.is_none() => {
                p.thread = thread;
                p.channel = Some(channel);
            }
            _ => {}
        }
    }

    /// What the message asks: its data part, else its text posted in the
    /// thread its `contextId` names (when it names one), else at channel
    /// level.
    fn request_of(&self, ctx: &RequestContext) -> Result<HubRequest, A2aError> {
        let asked = ctx.message.parts.iter().find_map(|part| part.as_data());
        if let Some(data) = asked {
            return serde_json::from_value::<HubRequest>(data.clone()).map_err(|err| {
                A2aError::invalid_params(format!(
                    "the hub takes {{\"collaborate\": {{\"target\", \"text\"}}}}, \
                     {{\"post\": {{\"text\"}}}} or {{\"resume\": {{\"thread\"}}}}: {err}"
                ))
            });
        }
        let given = ctx.message.context_id.as_str();
        let thread =
            (!given.is_empty() && self.hub.thread(given).is_some()).then(|| given.to_owned());
        Ok(HubRequest::Post(PostRequest {
            channel: None,
            thread,
            text: ctx.message.text(),
        }))
    }

    async fn post(
        &self,
        from: Sender,
        post: PostRequest,
        mirror: bool,
        events: &EventQueue,
    ) -> Result<(), Refusal> {
        let message = self
            .hub
            .post(Post {
                from,
                channel: post.channel,
                thread: post.thread,
                text: post.text,
                mirror,
            })
            .await?;
        let place = match &message.thread {
            Some(thread) => format!("thread {thread} of #{}", message.channel),
            None => format!("#{}", message.channel),
        };
        let handlers = match message.handlers.is_empty() {
            true => "no agent called".to_owned(),
            false => format!("delivering to {}", message.handlers.join(", ")),
        };
        Ok(events
            .reply(vec![
                Part::text(format!("posted in {place}; {handlers}")),
                Part::data(serde_json::json!({ "posted": message })),
            ])
            .await?)
    }

    /// Resumes `thread` for a person the gateway authenticated (`proven`):
    /// over A2A an unauthenticated caller is anyone who reaches the port,
    /// and a name in the metadata proves nothing.
    async fn resume(
        &self,
        from: Sender,
        proven: bool,
        thread: &str,
        events: &EventQueue,
    ) -> Result<(), Refusal> {
        if let Sender::Agent(agent) = &from {
            // A guard an agent could lift would not guard against agents.
            return Err(HubError::invalid(format!(
                "only a person resumes a paused thread, not agent {agent}"
            ))
            .into());
        }
        if !proven {
            return Err(HubError::invalid(
                "only an authenticated person resumes a paused thread over A2A; without \
                 authentication, use the hub's page, its API or `a2a hub resume`, which present \
                 the operator token",
            )
            .into());
        }
        let view = self.hub.resume_thread(thread, from.name()).await?;
        Ok(events
            .reply(vec![
                Part::text(format!("resumed {:?}", view.title)),
                Part::data(serde_json::json!({ "thread": view })),
            ])
            .await?)
    }
}

/// Whether the message copies one the hub already holds: a bridge copying
/// the hub's messages elsewhere and back marks its copies, which were
/// routed once already.
fn is_mirror(ctx: &RequestContext) -> bool {
    ctx.message
        .metadata
        .as_ref()
        .and_then(|m| m.get(MIRROR_METADATA))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// What the hub tells an agent about a message it delivers (in the
/// message's metadata under `a2a-hub`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HubContext {
    /// The hub's agent name.
    pub hub: String,
    /// The channel.
    pub channel: String,
    /// The thread, when the message is in one.
    pub thread: Option<String>,
    /// The thread's title.
    pub thread_title: Option<String>,
    /// The hub's id of the message.
    pub message_id: String,
    /// Who wrote it.
    pub from: String,
    /// `agent`, `person` or `hub`.
    pub from_kind: String,
    /// What this agent is asked to do with it.
    pub role: Option<Role>,
    /// The agents it mentions.
    pub mentions: Vec<String>,
    /// The thread's participants.
    pub participants: Vec<String>,
    /// What this agent observed without handling it (at most 50 records,
    /// none older than a day): who said what, in 50 characters.
    pub observed: Vec<ObserverRecord>,
}

impl HubContext {
    /// The hub's context of `message`, when the hub delivered it.
    pub fn of(message: &Message) -> Option<HubContext> {
        let value = message.metadata.as_ref()?.get(HUB_METADATA)?;
        serde_json::from_value(value.clone()).ok()
    }

    /// The observer records of messages `agent` wrote.
    pub fn observed_from<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a ObserverRecord> {
        self.observed.iter().filter(move |r| r.from == agent)
    }
}

/// An agent's handle on the hub: `collaborate` and `post` over A2A.
#[derive(Debug, Clone)]
pub struct HubClient {
    reach: Reach,
}

#[derive(Debug, Clone)]
enum Reach {
    Client(Client),
    /// Made per call: an agent gets its handle while the gateway is still
    /// being built, before any peer can be reached.
    Peers {
        peers: Peers,
        hub: String,
    },
}

impl HubClient {
    /// A handle over `client`, a client of the hub's agent (from any A2A
    /// client builder: the page's users and other servers' agents too).
    pub fn new(client: Client) -> Self {
        HubClient {
            reach: Reach::Client(client),
        }
    }

    /// The handle of a gateway agent: its calls reach the hub (the agent
    /// named `hub`) as itself.
    pub fn from_peers(peers: &Peers, hub: &str) -> Self {
        HubClient {
            reach: Reach::Peers {
                peers: peers.clone(),
                hub: hub.to_owned(),
            },
        }
    }

    fn client(&self) -> Result<Client, UnknownAgent> {
        match &self.reach {
            Reach::Client(client) => Ok(client.clone()),
            Reach::Peers { peers, hub } => peers.client(hub),
        }
    }

    /// Asks `request.target` to work with this caller. When the request
    /// names no thread or channel and `ctx` is an execution the hub started
    /// in a channel, the thread opens in that channel; from outside any
    /// channel, in the hub's default channel. The call continues `ctx`'s
    /// exchange in the conversation log.
    pub async fn collaborate(
        &self,
        ctx: Option<&RequestContext>,
        mut request: Collaborate,
    ) -> Result<Collaboration, ClientError> {
        if request.thread.is_none() && request.channel.is_none() {
            request.channel = ctx
                .and_then(|ctx| HubContext::of(&ctx.message))
                .map(|hub| hub.channel)
                .filter(|c| !c.is_empty());
        }
        let tip = ctx
            .and_then(|ctx| ctx.extensions.get::<a2a_conversation::ChainTip>())
            .and_then(a2a_conversation::ChainTip::get);
        let data = self.call(HubRequest::Collaborate(request), tip).await?;
        decode(data, "collaboration")
    }

    /// [`HubClient::collaborate`] from `origin` (a tool call, say): the
    /// request continues log line `origin.log_line`, and without a thread
    /// or channel opens in the channel of conversation `origin.context_id`
    /// when that is the hub's. A refusal is the hub's own error.
    pub(crate) async fn collaborate_from(
        &self,
        origin: &Origin,
        request: Collaborate,
    ) -> Result<Collaboration, CallError> {
        let data = self
            .exchange(HubRequest::Collaborate(request), origin)
            .await?;
        decode(data, "collaboration").map_err(CallError::Client)
    }

    /// [`HubClient::post`] from `origin`: without a thread or channel, in
    /// conversation `origin.context_id` when that is the hub's.
    pub(crate) async fn post_from(
        &self,
        origin: &Origin,
        post: PostRequest,
    ) -> Result<HubMessage, CallError> {
        let data = self.exchange(HubRequest::Post(post), origin).await?;
        decode(data, "posted").map_err(CallError::Client)
    }

    /// Posts `text` (in `thread`, or at the level of `channel`, or of the
    /// default channel).
    pub async fn post(
        &self,
        channel: Option<&str>,
        thread: Option<&str>,
        text: &str,
    ) -> Result<HubMessage, ClientError> {
        let data = self
            .call(
                HubRequest::Post(PostRequest {
                    channel: channel.map(str::to_owned),
                    thread: thread.map(str::to_owned),
                    text: text.to_owned(),
                }),
                None,
            )
            .await?;
        decode(data, "posted")
    }

    /// Sends `request`; its log line continues line `parent`.
    async fn call(
        &self,
        request: HubRequest,
        parent: Option<String>,
    ) -> Result<serde_json::Value, ClientError> {
        let origin = Origin {
            log_line: parent,
            context_id: None,
        };
        self.exchange(request, &origin)
            .await
            .map_err(CallError::into_client)
    }

    /// Sends `request` from `origin`: the hub's answer's data, or why not.
    async fn exchange(
        &self,
        request: HubRequest,
        origin: &Origin,
    ) -> Result<serde_json::Value, CallError> {
        let value = serde_json::to_value(request)
            .map_err(|err| ClientError::new(ClientErrorKind::Decode, err.to_string()))?;
        let mut message = Message::user(vec![Part::data(value)]);
        let metadata = [
            (
                a2a_conversation::metadata_keys::LOG_PARENT,
                &origin.log_line,
            ),
            (CONTEXT_METADATA, &origin.context_id),
        ];
        for (key, value) in metadata {
            if let Some(value) = value {
                message
                    .metadata
                    .get_or_insert_with(Default::default)
                    .insert(key.to_owned(), value.clone().into());
            }
        }
        let client = self
            .client()
            .map_err(|err| ClientError::new(ClientErrorKind::Config, err.to_string()))?;
        match client
            .send_message(SendMessageRequest::new(message), None)
            .await?
        {
            SendMessageResponse::Message(reply) => reply
                .parts
                .iter()
                .find_map(|p| p.as_data().cloned())
                .ok_or_else(|| {
                    ClientError::new(ClientErrorKind::Decode, "the hub answered without data")
                        .into()
                }),
            SendMessageResponse::Task(task) => {
                let refusal = task.status.message.as_ref().and_then(|m| {
                    m.parts
                        .iter()
                        .find_map(|p| p.as_data()?.get(HUB_ERROR).cloned())
                });
                Err(match refusal {
                    Some(refusal) => CallError::Hub(HubError::from_wire(&refusal)),
                    None => CallError::Client(ClientError::new(
                        ClientErrorKind::Decode,
                        format!(
                            "the hub answered with task {} instead of a message",
                            task.id
                        ),
                    )),
                })
            }
        }
    }
}

/// Where a call to the hub comes from when there is no [`RequestContext`]
/// to tell (a model agent's tool call).
#[derive(Debug, Clone, Default)]
pub(crate) struct Origin {
    /// The caller's conversation (`contextId`).
    pub(crate) context_id: Option<String>,
    /// The log line the request continues.
    pub(crate) log_line: Option<String>,
}

/// Why a call to the hub failed: the hub refused it, or it did not get
/// there (or back).
#[derive(Debug)]
pub(crate) enum CallError {
    /// The hub's refusal, as the hub made it.
    Hub(HubError),
    /// The call itself failed.
    Client(ClientError),
}

impl From<ClientError> for CallError {
    fn from(err: ClientError) -> Self {
        CallError::Client(err)
    }
}

impl CallError {
    /// The error as [`HubClient`]'s public calls return it.
    fn into_client(self) -> ClientError {
        match self {
            CallError::Hub(err) => ClientError::from(A2aError::from(err)),
            CallError::Client(err) => err,
        }
    }
}

fn decode<T: serde::de::DeserializeOwned>(
    mut data: serde_json::Value,
    key: &str,
) -> Result<T, ClientError> {
    let value = data
        .get_mut(key)
        .map(serde_json::Value::take)
        .ok_or_else(|| {
            ClientError::new(
                ClientErrorKind::Decode,
                format!("the hub's answer has no {key:?}"),
            )
        })?;
    serde_json::from_value(value)
        .map_err(|err| ClientError::new(ClientErrorKind::Decode, err.to_string()))
}
