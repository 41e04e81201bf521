//! Delivering a message to an agent over A2A: retried by the class of the
//! failure, then followed until the agent answers, however late; the
//! answer is posted where the message was, and a delivery that fails is
//! escalated to the operator.

mod retry;

use std::sync::Arc;
use std::time::Duration;

use a2a_client::{Client, FollowOptions, FollowUpdate, TaskFollower};
use a2a_core::{
    Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    Task, TaskState, TaskStatus,
};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub use self::retry::{FailureClass, Retry, Undelivered, classify, send_with_retries};

use a2a_conversation::EntryType;

use super::links::AgentLink;
use super::{HUB_METADATA, Hub, Post, Waiting, channel_context};
use crate::model::{DeliveryState, DeliveryStatus, HubEvent, HubMessage, Role, Sender};
use crate::routing;
use crate::store::{PendingDelivery, Write};

/// Failed reads of a delivery's task in a row before it is given up.
const FOLLOW_READ_FAILURES: u32 = 21;

/// One delivery as the hub follows it.
struct Tracked {
    agent: String,
    attempt: u32,
    task_id: Option<String>,
    /// The delivery's log line.
    line: Option<String>,
    /// Whether that line is on record with the delivery's state.
    line_recorded: bool,
    /// Whether another node took the delivery over (it delivers and
    /// answers it; this node lets go).
    taken_over: bool,
}

impl Tracked {
    fn new(agent: &str, attempt: u32) -> Tracked {
        Tracked {
            agent: agent.to_owned(),
            attempt,
            task_id: None,
            line: None,
            line_recorded: false,
            taken_over: false,
        }
    }
}

impl Hub {
    /// Delivers `message` to `agent` as `role` (a delivery on record since
    /// the message was); `done` hears whether the agent took it. Then waits
    /// for the answer and posts it.
    pub(super) async fn deliver(
        &self,
        message: Arc<HubMessage>,
        agent: String,
        role: Role,
        done: oneshot::Sender<Result<(), Undelivered>>,
    ) {
        self.send_delivery(message, Tracked::new(&agent, 1), role, done)
            .await;
    }

    /// Sends a delivery on record that the agent has not taken yet (a new
    /// one, or one the hub had not started when it stopped), then follows
    /// it to its answer. Its row leaves the record with the answer, or with
    /// the notice that it failed.
    async fn send_delivery(
        &self,
        message: Arc<HubMessage>,
        mut tracked: Tracked,
        role: Role,
        done: oneshot::Sender<Result<(), Undelivered>>,
    ) {
        let agent = tracked.agent.clone();
        let link = self.links().links.get(&agent).cloned();
        let Some(link) = link else {
            let undelivered = Undelivered {
                class: FailureClass::Refused,
                attempts: 0,
                reason: format!("no link to agent {agent}"),
            };
            return self
                .undelivered(&message, &mut tracked, undelivered, done)
                .await;
        };
        let context = context_of(&message);
        let waiting = self
            .state()
            .waiting
            .remove(&(agent.clone(), context.clone()));
        let stale = waiting.as_ref().and_then(|w| w.asked.clone());
        let mut request =
            self.request_for(&message, &agent, role, &context, waiting.map(|w| w.task));
        // A delivery sent again after a restart continues the line it was
        // logged as the first time, when that went on record.
        if tracked.line.is_none() {
            tracked.line = self
                .log_delivery(&message, &agent, &context, &request.message.message_id)
                .await;
        }
        if let (Some(log), Some(line)) = (&self.inner.log, &tracked.line) {
            a2a_conversation::mark_logged(&mut request.message, log, line);
        }
        self.track(&message, &mut tracked, DeliveryState::Delivering, None)
            .await;
        let sent = tokio::select! {
            () = self.inner.stop.cancelled() => return,
            sent = self.send(&link, &agent, &request) => sent,
        };
        let (client, response) = match sent {
            Ok(sent) => sent,
            Err(undelivered) => {
                return self
                    .undelivered(&message, &mut tracked, undelivered, done)
                    .await;
            }
        };
        let answer = self
            .answer(
                &client,
                &message,
                &mut tracked,
                response,
                stale.as_deref(),
                done,
            )
            .await;
        match answer {
            Some(answer) => {
                self.answered(&message, &mut tracked, &context, answer)
                    .await;
            }
            None => self.gave_up(&message, &mut tracked).await,
        }
    }

    /// Records where a delivery stands now and shows it: the message, with
    /// every delivery's state, goes to subscribers again.
    async fn track(
        &self,
        message: &HubMessage,
        tracked: &mut Tracked,
        state: DeliveryState,
        reason: Option<String>,
    ) {
        let status = DeliveryStatus {
            agent: tracked.agent.clone(),
            state,
            task_id: tracked.task_id.clone(),
            attempt: tracked.attempt,
            reason,
            at: self.now(),
        };
        // The line goes on record with the first state, once.
        let log_line = match tracked.line_recorded {
            true => None,
            false => tracked.line.clone(),
        };
        let write = Write::DeliveryState {
            message_id: message.id.clone(),
            status,
            log_line,
        };
        if let Err(err) = self.inner.store.write(vec![write]).await {
            tracing::warn!(error = %err, "collaboration hub: a delivery's state could not be recorded");
            return;
        }
        tracked.line_recorded = true;
        if let Ok(Some(updated)) = self.inner.store.message(message.id.clone()).await {
            let _ = self
                .inner
                .events
                .send(HubEvent::Delivery(Arc::new(updated)));
        }
    }

    /// A delivery whose task the hub stopped following: abandoned when the
    /// task could not be read any more; left as it stands when the hub is
    /// stopping (the next start follows it again).
    async fn gave_up(&self, message: &HubMessage, tracked: &mut Tracked) {
        if self.inner.stop.is_cancelled() || tracked.taken_over {
            return;
        }
        let reason = "its task could no longer be read".to_owned();
        self.track(message, tracked, DeliveryState::Abandoned, Some(reason))
            .await;
        let _ = self
            .inner
            .store
            .write(vec![Write::Delivered {
                message_id: message.id.clone(),
                agent: tracked.agent.clone(),
            }])
            .await;
    }

    /// Escalates a delivery that failed, and says so to who waits for it.
    async fn undelivered(
        &self,
        message: &HubMessage,
        tracked: &mut Tracked,
        undelivered: Undelivered,
        done: oneshot::Sender<Result<(), Undelivered>>,
    ) {
        let reason = undelivered.to_string();
        self.track(message, tracked, DeliveryState::Failed, Some(reason))
            .await;
        self.escalate(message, tracked, &undelivered).await;
        let _ = done.send(Err(undelivered));
    }

    /// Sends `request` to `agent` under the delivery policy, warning of
    /// each retry.
    async fn send(
        &self,
        link: &AgentLink,
        agent: &str,
        request: &SendMessageRequest,
    ) -> Result<(Client, SendMessageResponse), Undelivered> {
        let policy = &self.inner.config.delivery;
        send_with_retries(
            link.endpoint(),
            || link.get(),
            request,
            policy,
            |retry| {
                tracing::warn!(
                    %agent,
                    attempt = retry.attempt,
                    wait_ms = u64::try_from(retry.wait.as_millis()).unwrap_or(u64::MAX),
                    class = ?retry.class,
                    reason = %retry.reason,
                    "collaboration hub: delivery failed; retrying"
                );
            },
        )
        .await
    }

    /// The agent's answer: `response` itself, or, when that is a task still
    /// at work, the task once it settles (followed on record, so that a
    /// restart follows it again). `None` when following stops first.
    ///
    /// `done` hears that the agent took the message once the delivery is
    /// on record: a hub (or cluster node) killed right after it said so
    /// must leave the task to a restart (or another node) to follow, or the
    /// answer to an acknowledged message would never land.
    async fn answer(
        &self,
        client: &Client,
        message: &HubMessage,
        tracked: &mut Tracked,
        response: SendMessageResponse,
        stale: Option<&str>,
        done: oneshot::Sender<Result<(), Undelivered>>,
    ) -> Option<SendMessageResponse> {
        let task_id = match &response {
            SendMessageResponse::Task(task) if !settles(&task.status, stale) => task.id.clone(),
            _ => {
                let _ = done.send(Ok(()));
                return Some(response);
            }
        };
        let pending = Write::Delivery {
            message_id: message.id.clone(),
            agent: tracked.agent.clone(),
            task_id: task_id.clone(),
        };
        match self.inner.store.write(vec![pending]).await {
            Ok(()) => {}
            Err(err) if taken_over(&err) => {
                // This node was taken for dead: the node that holds the
                // delivery now sends it again and posts its answer.
                tracing::info!(agent = %tracked.agent, message = %message.id, "collaboration hub: another node took this delivery over; it delivers it");
                tracked.taken_over = true;
                let _ = done.send(Ok(()));
                return None;
            }
            Err(err) => {
                tracing::warn!(error = %err, "collaboration hub: a delivery's task could not be recorded; a restart sends the message again");
            }
        }
        let _ = done.send(Ok(()));
        // Shown at work once a restart would follow it again.
        tracked.task_id = Some(task_id.clone());
        self.track(message, tracked, DeliveryState::Working, None)
            .await;
        let task = follow(client, &task_id, stale, &self.inner.stop).await?;
        Some(SendMessageResponse::Task(task))
    }

    /// The A2A request that delivers `message` to `agent` in `context`,
    /// continuing the agent's task `waiting` for input there, if any.
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
            "observed": self.observed(agent),
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

    /// Posts what the agent answered to `message` where the message was,
    /// as the log line that continues its delivery. A task that asks for
    /// input is remembered: the next message to the agent there continues
    /// it.
    async fn answered(
        &self,
        message: &HubMessage,
        tracked: &mut Tracked,
        context: &str,
        answer: SendMessageResponse,
    ) {
        let agent = tracked.agent.clone();
        // The delivery leaves the record with its answer, in one
        // transaction; in a cluster only while this node still holds it.
        let settled = Write::Landed {
            message_id: message.id.clone(),
            agent: agent.clone(),
        };
        let (state, reason) = outcome(&answer);
        if let SendMessageResponse::Task(task) = &answer {
            tracked.task_id = Some(task.id.clone());
            if task.state().is_interrupted() {
                let waiting = Waiting {
                    task: task.id.clone(),
                    asked: task.status.message.as_ref().map(|m| m.message_id.clone()),
                };
                let key = (agent.clone(), context.to_owned());
                self.state().waiting.insert(key, waiting);
            }
        }
        // An agent that has nothing to say posts nothing. The answer is
        // posted before the delivery shows as settled, so who waits for
        // the outcome has the answer when it sees it.
        let (Some(text), from) = answer_post(&agent, &answer) else {
            if let Err(err) = self.inner.store.write(vec![settled]).await {
                if taken_over(&err) {
                    return;
                }
            }
            self.track(message, tracked, state, reason).await;
            return;
        };
        let t = self.now();
        let line = self.new_line_id(t);
        if let Some(id) = &line {
            let kind = match state {
                DeliveryState::Failed => EntryType::Error,
                _ => EntryType::Response,
            };
            let (task_id, answer_state) = match &answer {
                SendMessageResponse::Task(task) => (task.id.as_str(), task.status.state.as_str()),
                SendMessageResponse::Message(m) => (m.task_id.as_str(), ""),
            };
            let ids = [
                ("contextId", context),
                ("hubMessageId", message.id.as_str()),
                ("state", answer_state),
                ("taskId", task_id),
            ];
            let said = match &from {
                Sender::Hub => task_text_of(&answer).unwrap_or_else(|| text.clone()),
                _ => text.clone(),
            };
            self.log_answer((t, id), kind, &agent, &said, tracked.line.as_deref(), &ids)
                .await;
        }
        let post = Post {
            from,
            channel: Some(message.channel.clone()),
            thread: message.thread.clone(),
            text,
            mirror: false,
        };
        let posted = self
            .post_logged(post, Some(message.id.clone()), line, Some(settled.clone()))
            .await;
        if let Err(err) = posted {
            if taken_over(&err) {
                tracing::info!(%agent, message = %message.id, "collaboration hub: another node took this delivery over; it posts the answer");
                return;
            }
            tracing::warn!(%agent, error = %err, "collaboration hub: an agent's answer could not be posted");
            if let Err(err) = self.inner.store.write(vec![settled]).await {
                if taken_over(&err) {
                    return;
                }
            }
        }
        self.track(message, tracked, state, reason).await;
    }

    /// Tells the operator that the agent did not get `message`: a notice in
    /// the operator's channel (a sink) and in the message's place, a
    /// warning in the log and a line on record, continuing the delivery's.
    /// The delivery leaves the record with the notice in its place, in one
    /// transaction: a hub that dies before it told sends the message again
    /// after its restart.
    async fn escalate(&self, message: &HubMessage, tracked: &Tracked, undelivered: &Undelivered) {
        let agent = &tracked.agent;
        let notice = format!("delivery to {agent} failed: {agent} {undelivered}");
        tracing::warn!(%agent, message = %message.id, reason = %undelivered, "collaboration hub: delivery failed; escalated");
        let parent = tracked.line.clone().or_else(|| message.log_id.clone());
        self.log_decision_after(
            "escalated",
            &notice,
            message.thread.as_deref(),
            &message.channel,
            parent,
        )
        .await;
        self.notify_operator(&notice, message.thread.as_deref(), &message.channel)
            .await;
        let post = Post {
            from: Sender::Hub,
            channel: Some(message.channel.clone()),
            thread: message.thread.clone(),
            text: notice,
            mirror: false,
        };
        let settled = Write::Landed {
            message_id: message.id.clone(),
            agent: agent.clone(),
        };
        let posted = self
            .post_logged(post, Some(message.id.clone()), None, Some(settled.clone()))
            .await;
        if let Err(err) = posted {
            if !taken_over(&err) {
                let _ = self.inner.store.write(vec![settled]).await;
            }
        }
    }

    /// Takes up again the deliveries on record when the hub last stopped
    /// (in a cluster: those this node held): sends those not started yet,
    /// follows those waiting for an answer.
    pub(super) fn resume_pending(&self) {
        let pending =
            std::mem::take(&mut *self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for delivery in pending {
            self.spawn_delivery(move |hub| async move {
                hub.resume_delivery(delivery).await;
            });
        }
    }

    /// Takes up a delivery on record (this node's after a restart, or one
    /// taken over from a node that died): sends it when the agent has not
    /// taken it yet, else follows its task; and posts its answer.
    pub(super) async fn resume_delivery(&self, pending: PendingDelivery) {
        let message = match self.inner.store.message(pending.message_id.clone()).await {
            Ok(Some(message)) => message,
            _ => {
                let delivered = Write::Delivered {
                    message_id: pending.message_id,
                    agent: pending.agent,
                };
                let _ = self.inner.store.write(vec![delivered]).await;
                return;
            }
        };
        // A delivery taken over from another node may be in a thread this
        // node has not heard of yet.
        if let (Some(thread), Some(record)) = (&message.thread, self.inner.store.postgres()) {
            if self.thread(thread).is_none() {
                self.remote_thread(record, thread).await;
            }
        }
        let Some(task_id) = pending.task_id else {
            // Acknowledged with its message, never taken by the agent: sent
            // now, in the role routing gave it then.
            let mut tracked = Tracked::new(&pending.agent, pending.attempt + 1);
            tracked.line_recorded = pending.log_line.is_some();
            tracked.line = pending.log_line;
            let in_thread = message.thread.is_some();
            let role =
                routing::role_of(&message.from, &message.mentions, &pending.agent, in_thread);
            // Nobody waits to hear that the agent took it.
            let (done, _) = oneshot::channel();
            return self
                .send_delivery(Arc::new(message), tracked, role, done)
                .await;
        };
        let mut tracked = Tracked::new(&pending.agent, pending.attempt.max(1) + 1);
        tracked.task_id = Some(task_id.clone());
        tracked.line = pending.log_line.clone();
        tracked.line_recorded = true;
        self.track(&message, &mut tracked, DeliveryState::Resumed, None)
            .await;
        let link = self.links().links.get(&pending.agent).cloned();
        let Some(link) = link else {
            let reason = format!("no link to agent {} any more", pending.agent);
            self.track(
                &message,
                &mut tracked,
                DeliveryState::Abandoned,
                Some(reason),
            )
            .await;
            return;
        };
        let Ok(client) = link.get().await else {
            return;
        };
        let followed = follow(&client, &task_id, None, &self.inner.stop).await;
        match followed {
            Some(task) => {
                let context = context_of(&message);
                let answer = SendMessageResponse::Task(task);
                self.answered(&message, &mut tracked, &context, answer)
                    .await;
            }
            None => self.gave_up(&message, &mut tracked).await,
        }
    }

    /// Runs a delivery's `work` in the background, counted until it ends.
    pub(super) fn spawn_delivery<F, Fut>(&self, work: F)
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
    /// (up to `grace`). Deliveries not done (not sent yet, or waiting for
    /// an answer) are taken up again on the next start.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.stop.cancel();
        self.inner.tasks.close();
        let _ = tokio::time::timeout(grace, self.inner.tasks.wait()).await;
    }
}

/// Whether `err` says another node took the delivery over.
fn taken_over(err: &crate::HubError) -> bool {
    err.message().ends_with(crate::store::TAKEN_OVER)
}

/// The A2A context an agent sees `message` in: its thread, else its
/// channel's.
fn context_of(message: &HubMessage) -> String {
    message
        .thread
        .clone()
        .unwrap_or_else(|| channel_context(&message.channel))
}

/// Whether `status` settles a task whose earlier question was the status
/// message `stale` (a task continued after asking for input shows its old
/// question until the agent moves on; that is no answer).
fn settles(status: &TaskStatus, stale: Option<&str>) -> bool {
    status.state.is_settled()
        && (stale.is_none() || status.message.as_ref().map(|m| m.message_id.as_str()) != stale)
}

/// Follows task `task_id` until it settles (past the question `stale`,
/// when it is continued after one) and returns it; `None` when `stop`
/// fires first or the task cannot be read any more. A stream that ends or
/// breaks is followed by a read of the task and a new subscription, so an
/// answer that comes minutes later still arrives.
async fn follow(
    client: &Client,
    task_id: &str,
    stale: Option<&str>,
    stop: &CancellationToken,
) -> Option<Task> {
    let options = FollowOptions {
        give_up_after: FOLLOW_READ_FAILURES,
        ..FollowOptions::default()
    };
    let mut follower = TaskFollower::subscribing(client, task_id)
        .options(options)
        .stop_when(stop.clone().cancelled_owned());
    loop {
        match follower.next().await.ok()? {
            FollowUpdate::Event(event) if event_settles(&event, stale) => follower.read_now(),
            FollowUpdate::Event(_) => {}
            FollowUpdate::Task(task) if settles(&task.status, stale) => return Some(task),
            FollowUpdate::Task(_) => {}
        }
    }
}

fn event_settles(event: &StreamResponse, stale: Option<&str>) -> bool {
    match event {
        StreamResponse::Task(task) => settles(&task.status, stale),
        StreamResponse::StatusUpdate(update) => settles(&update.status, stale),
        _ => false,
    }
}

/// What an answer posts, and as whom: the agent's text, or the hub's
/// notice of a task that failed or was rejected.
fn answer_post(agent: &str, answer: &SendMessageResponse) -> (Option<String>, Sender) {
    let as_agent = Sender::Agent(agent.to_owned());
    let task = match answer {
        SendMessageResponse::Message(message) => return (non_empty(message.text()), as_agent),
        SendMessageResponse::Task(task) => task,
    };
    let state = task.state();
    match state {
        TaskState::Failed | TaskState::Rejected => {
            let reason = task_text(task).unwrap_or_else(|| "no reason given".to_owned());
            let what = match state {
                TaskState::Rejected => "rejected",
                _ => "failed",
            };
            let text = format!("{agent} could not answer ({what}): {reason}");
            (Some(text), Sender::Hub)
        }
        _ => (task_text(task), as_agent),
    }
}

/// Where a delivery stands once the agent answered, and why when it did
/// not end well.
fn outcome(answer: &SendMessageResponse) -> (DeliveryState, Option<String>) {
    let SendMessageResponse::Task(task) = answer else {
        return (DeliveryState::Completed, None);
    };
    let text = || task_text(task);
    match task.state() {
        TaskState::Failed | TaskState::Rejected => (DeliveryState::Failed, text()),
        TaskState::Canceled => (DeliveryState::Canceled, text()),
        TaskState::InputRequired | TaskState::AuthRequired => {
            (DeliveryState::InputRequired, text())
        }
        TaskState::Completed => (DeliveryState::Completed, None),
        _ => (DeliveryState::Working, None),
    }
}

/// The text of a task answer, if it has one.
fn task_text_of(answer: &SendMessageResponse) -> Option<String> {
    match answer {
        SendMessageResponse::Task(task) => task_text(task),
        SendMessageResponse::Message(message) => non_empty(message.text()),
    }
}

/// The text a settled task answers with: its status message's, else its
/// artifacts'.
fn task_text(task: &Task) -> Option<String> {
    if let Some(text) = task
        .status
        .message
        .as_ref()
        .and_then(|m| non_empty(m.text()))
    {
        return Some(text);
    }
    let artifacts: Vec<String> = task
        .artifacts
        .iter()
        .flat_map(|a| {
            a.parts
                .iter()
                .filter_map(|p| p.as_text().map(str::to_owned))
        })
        .collect();
    non_empty(artifacts.join("\n"))
}

fn non_empty(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}
