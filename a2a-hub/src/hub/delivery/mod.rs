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

use super::links::AgentLink;
use super::{HUB_METADATA, Hub, Post, Waiting, channel_context};
use crate::model::{HubMessage, Role, Sender};
use crate::store::{PendingDelivery, Write};

/// Failed reads of a delivery's task in a row before it is given up.
const FOLLOW_READ_FAILURES: u32 = 21;

impl Hub {
    /// Delivers `message` to `agent` as `role`; `done` hears whether the
    /// agent took it. Then waits for the answer and posts it.
    pub(super) async fn deliver(
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
            return self.undelivered(&message, &agent, undelivered, done).await;
        };
        let context = context_of(&message);
        let waiting = self
            .state()
            .waiting
            .remove(&(agent.clone(), context.clone()));
        let stale = waiting.as_ref().and_then(|w| w.asked.clone());
        let request = self.request_for(&message, &agent, role, &context, waiting.map(|w| w.task));
        let sent = tokio::select! {
            () = self.inner.stop.cancelled() => return,
            sent = self.send(&link, &agent, &request) => sent,
        };
        let (client, response) = match sent {
            Ok(sent) => sent,
            Err(undelivered) => return self.undelivered(&message, &agent, undelivered, done).await,
        };
        let _ = done.send(Ok(()));
        let answer = self
            .answer(&client, &message, &agent, response, stale.as_deref())
            .await;
        if let Some(answer) = answer {
            self.answered(&message, &agent, &context, answer).await;
        }
    }

    /// Escalates a delivery that failed, and says so to who waits for it.
    async fn undelivered(
        &self,
        message: &HubMessage,
        agent: &str,
        undelivered: Undelivered,
        done: oneshot::Sender<Result<(), Undelivered>>,
    ) {
        self.escalate(message, agent, &undelivered).await;
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
    async fn answer(
        &self,
        client: &Client,
        message: &HubMessage,
        agent: &str,
        response: SendMessageResponse,
        stale: Option<&str>,
    ) -> Option<SendMessageResponse> {
        let task_id = match &response {
            SendMessageResponse::Task(task) if !settles(&task.status, stale) => task.id.clone(),
            _ => return Some(response),
        };
        let pending = Write::Delivery {
            message_id: message.id.clone(),
            agent: agent.to_owned(),
            task_id: task_id.clone(),
        };
        if let Err(err) = self.inner.store.write(vec![pending]).await {
            tracing::warn!(error = %err, "collaboration hub: a delivery could not be recorded; it is followed but not resumed after a restart");
        }
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

    /// Posts what `agent` answered to `message` where the message was. A
    /// task that asks for input is remembered: the next message to the agent
    /// there continues it.
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
        if let SendMessageResponse::Task(task) = &answer {
            if task.state().is_interrupted() {
                let waiting = Waiting {
                    task: task.id.clone(),
                    asked: task.status.message.as_ref().map(|m| m.message_id.clone()),
                };
                let key = (agent.to_owned(), context.to_owned());
                self.state().waiting.insert(key, waiting);
            }
        }
        // An agent that has nothing to say posts nothing.
        let (Some(text), from) = answer_post(agent, &answer) else {
            return;
        };
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
        self.notify_operator(&notice, message.thread.as_deref(), &message.channel)
            .await;
        let post = Post {
            from: Sender::Hub,
            channel: Some(message.channel.clone()),
            thread: message.thread.clone(),
            text: notice,
            mirror: false,
        };
        let _ = self.post_routed(post, Some(message.id.clone())).await;
    }

    /// Follows again the deliveries that were waiting for an answer when
    /// the hub last stopped.
    pub(super) fn resume_pending(&self) {
        let pending =
            std::mem::take(&mut *self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()));
        for delivery in pending {
            self.spawn_delivery(move |hub| async move {
                hub.resume_delivery(delivery).await;
            });
        }
    }

    async fn resume_delivery(&self, pending: PendingDelivery) {
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
        let link = self.links().links.get(&pending.agent).cloned();
        let Some(link) = link else { return };
        let Ok(client) = link.get().await else {
            return;
        };
        let followed = follow(&client, &pending.task_id, None, &self.inner.stop).await;
        if let Some(task) = followed {
            let context = context_of(&message);
            let answer = SendMessageResponse::Task(task);
            self.answered(&message, &pending.agent, &context, answer)
                .await;
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
    /// (up to `grace`). Deliveries still waiting for an answer are followed
    /// again on the next start.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.stop.cancel();
        self.inner.tasks.close();
        let _ = tokio::time::timeout(grace, self.inner.tasks.wait()).await;
    }
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
