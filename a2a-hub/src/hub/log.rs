//! What the hub writes to the conversation log, when it has one: each
//! message once, its deliveries and their outcomes, and its decisions
//! (guard trips, escalations), as one chain per exchange.
//!
//! A person's post is a `request` to the hub; each delivery a `request`
//! from the hub to a handler, continuing it; each answer a `response` (or
//! an `error`) from the handler, continuing its delivery; the answer posted
//! in the thread is that same line (a message is logged once), and what
//! the answer sets off continues it. A post in a thread continues the
//! thread's latest line, so a thread reads back as one chain. The handler's
//! own server, when it logs to the same log, writes only what comes between
//! a delivery and its answer ([`a2a_conversation::mark_logged`]); a post
//! that came in over A2A was logged by the hub's own server, and is not
//! logged again.

use std::cell::RefCell;

use a2a_conversation::{EntryType, LogEntry};

use super::Hub;
use crate::model::HubMessage;

tokio::task_local! {
    /// The log line of the A2A request the hub's agent is handling, once
    /// its server logged it: the first message that request posts is that
    /// line (taken, so only the first).
    static REQUEST_LINE: RefCell<Option<String>>;
}

/// Runs `work` (the hub's agent handling a request) knowing that the
/// request is logged as `line`.
pub(crate) async fn with_request_line<F: std::future::Future>(
    line: Option<String>,
    work: F,
) -> F::Output {
    REQUEST_LINE.scope(RefCell::new(line), work).await
}

/// The line of the request being handled, if it was logged and not taken.
pub(super) fn take_request_line() -> Option<String> {
    REQUEST_LINE
        .try_with(|line| line.borrow_mut().take())
        .ok()
        .flatten()
}

impl Hub {
    /// Logs `message` (a post) as a request from its author to the hub, as
    /// line `id`, continuing `parent`.
    pub(super) async fn log_message(&self, message: &HubMessage, id: &str, parent: Option<&str>) {
        let Some(log) = &self.inner.log else { return };
        let mut entry = LogEntry::new(
            message.t,
            EntryType::Request,
            message.from.name(),
            Some(self.inner.name.clone()),
            message.text.clone(),
        )
        .parent(parent.map(str::to_owned))
        .meta("hubMessageId", message.id.clone())
        .meta("channel", message.channel.clone())
        .meta("handlers", message.handlers.clone());
        entry.id = id.to_owned();
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

    /// Logs the delivery of `message` to `agent` (A2A message
    /// `a2a_message_id` in `context`), continuing the message's line.
    pub(super) async fn log_delivery(
        &self,
        message: &HubMessage,
        agent: &str,
        context: &str,
        a2a_message_id: &str,
    ) -> Option<String> {
        let log = self.inner.log.as_ref()?;
        let entry = LogEntry::new(
            self.now(),
            EntryType::Request,
            self.inner.name.clone(),
            Some(agent.to_owned()),
            message.text.clone(),
        )
        .parent(message.log_id.clone())
        .meta("hubMessageId", message.id.clone())
        .meta("channel", message.channel.clone())
        .meta("contextId", context.to_owned())
        .meta("messageId", a2a_message_id.to_owned());
        log.append(entry).await.ok()
    }

    /// Logs what `agent` answered (`kind`: a response, or an error), as the
    /// line that continues its delivery `parent`; `(t, id)` is the line's
    /// time and id (see [`Hub::new_line_id`]).
    pub(super) async fn log_answer(
        &self,
        (t, id): (chrono::DateTime<chrono::Utc>, &str),
        kind: EntryType,
        agent: &str,
        text: &str,
        parent: Option<&str>,
        ids: &[(&str, &str)],
    ) {
        let Some(log) = &self.inner.log else { return };
        let mut entry = LogEntry::new(
            t,
            kind,
            agent.to_owned(),
            Some(self.inner.name.clone()),
            text.to_owned(),
        )
        .parent(parent.map(str::to_owned));
        entry.id = id.to_owned();
        for (key, value) in ids {
            if !value.is_empty() {
                entry = entry.meta(key, (*value).to_owned());
            }
        }
        if let Err(err) = log.append(entry).await {
            tracing::debug!(error = %err, "collaboration hub: an answer was not logged");
        }
    }

    /// Logs the hub's decision `what` (an escalation is an error).
    pub(super) async fn log_decision(
        &self,
        what: &str,
        text: &str,
        thread: Option<&str>,
        channel: &str,
    ) {
        self.log_decision_after(what, text, thread, channel, None)
            .await;
    }

    /// [`Hub::log_decision`], continuing line `parent`.
    pub(super) async fn log_decision_after(
        &self,
        what: &str,
        text: &str,
        thread: Option<&str>,
        channel: &str,
        parent: Option<String>,
    ) {
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
        .parent(parent)
        .meta("decision", what.to_owned())
        .meta("channel", channel.to_owned());
        if let Some(thread) = thread {
            entry = entry.meta("contextId", thread.to_owned());
        }
        let _ = log.append(entry).await;
    }

    /// A fresh id for a line written at `t` (the id names its day), when
    /// the hub keeps a log.
    pub(super) fn new_line_id(&self, t: chrono::DateTime<chrono::Utc>) -> Option<String> {
        self.inner.log.as_ref()?;
        Some(a2a_conversation::new_entry_id(t))
    }
}
