//! One execution of a remote agent: forward the message (or find the remote
//! task again after a restart), then mirror the remote task into the local
//! one until the remote's turn ends.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientError, EventStream};
use a2a_core::{
    Artifact, Message, Metadata, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, TaskState,
};
use a2a_server::{EventQueue, RequestContext};

mod follow;
mod mirror;

use self::mirror::seen;

use super::error::{RemoteError, RemoteErrorKind};
use super::link::{Connected, Link};
use super::mapping::{CALLER_METADATA_KEY, ForwardedCaller, RemoteTask};
use super::{Inner, LiveKey};

/// Failed attempts in a row to find a remote task again before giving up on it.
const MAX_FOLLOW_FAILURES: u32 = 3;

/// The first pause between two polls; it doubles up to the configured maximum.
const FIRST_POLL: Duration = Duration::from_millis(50);

/// Whether the remote's turn is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Done,
}

/// The state of one execution.
pub(crate) struct Forward<'a> {
    inner: &'a Arc<Inner>,
    connected: Connected,
    events: &'a EventQueue,
    ctx: &'a RequestContext,
    key: LiveKey,
    /// The remote task, once known.
    remote: Option<RemoteTask>,
    /// Whether the record of the remote task has changed since it was last
    /// written to the local task.
    unrecorded: bool,
    /// Whether this execution's message made the remote task (rather than
    /// continuing one that earlier turns made).
    made_here: bool,
    /// The last status mirrored (state and message id), to skip repeats when polling.
    status: Option<(TaskState, String)>,
    /// For a follow-up, the status the remote task had when it asked for
    /// more: a snapshot still showing it (a remote that answers before it
    /// has run, or a poll that comes too early) is no news and must not end
    /// the turn that has just begun.
    stale: Option<(TaskState, String)>,
    /// The artifacts as mirrored so far, to send only what a poll finds new.
    artifacts: HashMap<String, Artifact>,
}

impl<'a> Forward<'a> {
    pub(crate) fn new(
        inner: &'a Arc<Inner>,
        connected: Connected,
        ctx: &'a RequestContext,
        events: &'a EventQueue,
        key: LiveKey,
    ) -> Self {
        let remote = ctx.stored_task.as_ref().and_then(RemoteTask::of);
        let artifacts = ctx
            .stored_task
            .iter()
            .flat_map(|t| t.artifacts.iter())
            .map(|a| (a.artifact_id.clone(), a.clone()))
            .collect();
        let stale = ctx
            .stored_task
            .as_ref()
            .filter(|t| t.status.state.is_interrupted())
            .map(|t| seen(&t.status));
        Forward {
            inner,
            connected,
            events,
            ctx,
            key,
            remote,
            unrecorded: false,
            made_here: false,
            status: None,
            stale,
            artifacts,
        }
    }

    fn link(&self) -> &Link {
        &self.inner.link
    }

    fn config(&self) -> &super::RemoteAgentConfig {
        &self.inner.link.config
    }

    fn streams(&self) -> bool {
        self.config().streaming && self.connected.card.capabilities.streaming == Some(true)
    }

    /// The id the forwarded message has at the remote: the same for a resend
    /// after a restart (a remote that drops repeated message ids can drop
    /// it), different across the gateway's tasks (whose callers may pick
    /// the same message ids).
    fn remote_message_id(&self) -> String {
        format!("{}/{}", self.ctx.task_id, self.ctx.message.message_id)
    }

    /// Runs the execution to the end of the remote's turn.
    pub(crate) async fn run(mut self) -> Result<(), RemoteError> {
        let outcome = self.forward().await;
        if self.ctx.cancellation.is_cancelled() {
            self.stopped();
        }
        outcome
    }

    async fn forward(&mut self) -> Result<(), RemoteError> {
        let delivered = self
            .remote
            .as_ref()
            .is_some_and(|r| r.message_id == self.remote_message_id());
        if self.ctx.resumed && delivered {
            // The message reached the remote before the restart: sending it
            // again would start its work twice.
            tracing::debug!(agent = %self.link().agent, task_id = %self.ctx.task_id, "following the remote task again after a restart");
            return self.follow().await;
        }
        if self.ctx.cancellation.is_cancelled() {
            return Ok(());
        }
        let streams = self.streams();
        let mut request = self.request();
        if !streams {
            request
                .configuration
                .get_or_insert_with(Default::default)
                .return_immediately = true;
        }
        // The extensions the caller asked the gateway for, asked of the
        // remote (the message names those it uses, and is forwarded whole).
        let options = CallOptions {
            extensions: self.ctx.call.requested_extensions.clone(),
            ..CallOptions::default()
        };
        let mut send = send(self.connected.client.clone(), request, options, streams);
        let limit = self.config().request_timeout;
        let sent = tokio::select! {
            biased;
            () = self.ctx.cancellation.cancelled() => {
                // A new remote task may be in the making right now, and
                // nobody would ever hear of it: the send goes on without this
                // execution, and what it made is canceled. (A follow-up's
                // task is known and was canceled by the hook if that is what
                // this is; a resumed execution sends the message again.)
                if self.remote.is_none() {
                    let inner = Arc::clone(self.inner);
                    let metadata = forwarded_metadata(self.ctx, &self.link().agent);
                    tokio::spawn(inner.cancel_when_sent(send, metadata));
                }
                return Ok(());
            }
            sent = tokio::time::timeout(limit, &mut send) => sent,
        };
        let sent = match sent {
            Ok(Ok(sent)) => sent,
            Ok(Err(err)) => {
                let err = self.client_error("sending the message", &err);
                if err.kind() == RemoteErrorKind::Unreachable {
                    self.inner.link.forget().await;
                }
                return Err(err);
            }
            Err(_) => {
                return Err(self.link().error(
                    RemoteErrorKind::Timeout,
                    format!("sending the message: no answer within {limit:?}"),
                ));
            }
        };
        match sent {
            Sent::Stream(stream) => self.pump(stream, "sending the message").await,
            Sent::Answer(answer) => {
                let event = match *answer {
                    SendMessageResponse::Message(message) => StreamResponse::Message(message),
                    SendMessageResponse::Task(task) => StreamResponse::Task(task),
                };
                if self.handle(event).await? == Flow::Done {
                    return Ok(());
                }
                self.follow().await
            }
        }
    }

    /// The execution was stopped (canceled, timed out, or the server is
    /// shutting down). The remote task is canceled if a cancel came before
    /// the hook could know it, or if this execution made it and the local
    /// task does not name it yet: then nothing could ever follow it again,
    /// and a resumed execution sends the message anew.
    fn stopped(&self) {
        let Some(remote) = &self.remote else {
            return;
        };
        if (self.unrecorded && self.made_here) || self.inner.cancel_requested(&self.key) {
            let inner = Arc::clone(self.inner);
            let remote = remote.clone();
            let metadata = forwarded_metadata(self.ctx, &self.link().agent);
            tokio::spawn(async move { inner.cancel_remote(&remote, metadata).await.ok() });
        }
    }

    /// The request the remote gets: the caller's message and request
    /// metadata with remote ids in place of local ones, who called, and
    /// nothing that is the gateway's own business (its push config, history
    /// length, blocking).
    fn request(&mut self) -> SendMessageRequest {
        let ctx = self.ctx;
        let (task_id, context_id) = match &self.remote {
            Some(remote) => (remote.task_id.clone(), remote.context_id.clone()),
            None => (String::new(), self.inner.remote_context(ctx)),
        };
        // Only tasks of this remote mean anything to it (a store shared by
        // several agents would hold others' too).
        let reference_task_ids = ctx
            .referenced_tasks
            .iter()
            .filter_map(RemoteTask::of)
            .filter(|r| r.agent == self.link().agent)
            .map(|r| r.task_id)
            .collect();
        let message = Message {
            message_id: self.remote_message_id(),
            context_id,
            task_id,
            role: Role::User,
            parts: ctx.message.parts.clone(),
            metadata: ctx.message.metadata.clone(),
            extensions: ctx.message.extensions.clone(),
            reference_task_ids,
        };
        let configuration = ctx.configuration.as_ref().and_then(|c| {
            (!c.accepted_output_modes.is_empty()).then(|| SendMessageConfiguration {
                accepted_output_modes: c.accepted_output_modes.clone(),
                ..SendMessageConfiguration::default()
            })
        });
        SendMessageRequest {
            tenant: String::new(),
            message,
            configuration,
            metadata: forwarded_metadata(ctx, &self.link().agent),
        }
    }

    fn client_error(&self, doing: &str, err: &ClientError) -> RemoteError {
        RemoteError::from_client(&self.link().agent, &self.config().url, doing, err)
    }
}

/// The caller's request metadata, with who the caller is under
/// [`CALLER_METADATA_KEY`] (replacing whatever the caller put there).
pub(crate) fn forwarded_metadata(ctx: &RequestContext, agent: &str) -> Option<Metadata> {
    let mut metadata = ctx.metadata.clone().unwrap_or_default();
    let caller = ForwardedCaller {
        agent: agent.to_owned(),
        tenant: ctx.call.tenant.clone(),
        user: ctx.call.user.name.clone(),
        authenticated: ctx.call.user.authenticated,
    };
    if let Ok(value) = serde_json::to_value(caller) {
        metadata.insert(CALLER_METADATA_KEY.to_owned(), value);
    }
    Some(metadata)
}

/// What a send brought back: a stream of events, or the answer to a send
/// with `returnImmediately`.
pub(crate) enum Sent {
    Stream(EventStream),
    Answer(Box<SendMessageResponse>),
}

/// A send in flight, owning all it needs (it may outlive its execution).
pub(crate) type Sending = Pin<Box<dyn Future<Output = Result<Sent, ClientError>> + Send>>;

fn send(
    client: Client,
    request: SendMessageRequest,
    options: CallOptions,
    streams: bool,
) -> Sending {
    Box::pin(async move {
        if streams {
            client
                .send_streaming_message(request, Some(&options))
                .await
                .map(Sent::Stream)
        } else {
            client
                .send_message(request, Some(&options))
                .await
                .map(|answer| Sent::Answer(Box::new(answer)))
        }
    })
}
