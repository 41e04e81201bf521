//! What the hub writes to the conversation log, when it has one: every
//! message, and its decisions (guard trips, resumes, escalations).

use a2a_conversation::{EntryType, LogEntry};

use super::Hub;
use crate::model::HubMessage;

impl Hub {
    /// Logs `message` as a request from its author to its first handler.
    pub(super) async fn log_message(&self, message: &HubMessage) {
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

    /// Logs the hub's decision `what` (an escalation is an error).
    pub(super) async fn log_decision(
        &self,
        what: &str,
        text: &str,
        thread: Option<&str>,
        channel: &str,
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
        .meta("decision", what.to_owned())
        .meta("channel", channel.to_owned());
        if let Some(thread) = thread {
            entry = entry.meta("contextId", thread.to_owned());
        }
        let _ = log.append(entry).await;
    }
}
