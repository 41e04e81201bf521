//! The collaborate call: a thread between two agents, opened or continued
//! (the pair's thread of the reuse window), and a message delivered to the
//! target in it.
//!
//! The pair's thread is the pair's entry in the gateway's conversation index
//! (`WORKSPACE::a|b`; see `a2a_gateway::conversations`): a hub thread is an
//! A2A conversation (its id is the `contextId` the agents see), so the hub
//! keeps no routes of its own, which would be a second answer to "which
//! conversation are these two in". Collaborate looks the pair up there, and
//! records the thread it opens or continues there, right after the thread
//! is written to the hub's record, whoever of the two opened it. An entry
//! that names a conversation the pair had outside the hub (through `Peers`,
//! say) opens the thread as that very conversation.

use std::sync::Arc;

use a2a_conversation::Route;
use a2a_gateway::Conversations;
use chrono::{DateTime, Utc};

use super::posting::Delivering;
use super::{Hub, Post, ThreadState, unknown_thread};
use crate::error::{HubError, HubErrorKind};
use crate::model::{Caller, Collaborate, Collaboration, HubEvent, Sender, ThreadView};
use crate::routing;
use crate::store::{LoadedRoute, Write};

/// What the index's entry says after a collaborate.
const COLLABORATE_EVENT: &str = "collaborate";

/// Where a collaboration goes: a thread to continue, if any, and its
/// channel.
struct Destination {
    thread: Option<String>,
    channel: String,
    /// Whether an earlier thread of the pair is continued.
    continued: bool,
    /// The pair's conversation outside the hub that a new thread takes up.
    context: Option<String>,
}

/// Reads the routes of a hub from before the conversation index into the
/// index, where it has nothing newer for the pair.
pub(super) fn import_routes(conversations: &Conversations, routes: &[LoadedRoute]) {
    let index = conversations.index();
    let mut imported = false;
    for (opener, target, _channel, thread, at) in routes {
        let key = conversations.key(opener, target);
        if index.get(&key).is_some_and(|r| r.updated_at >= *at) {
            continue;
        }
        index.record(key, collaborate_route(thread, *at));
        imported = true;
    }
    if imported {
        index.save_soon();
    }
}

fn collaborate_route(thread: &str, at: DateTime<Utc>) -> Route {
    Route {
        context_id: thread.to_owned(),
        task_id: None,
        last_event: COLLABORATE_EVENT.to_owned(),
        updated_at: at,
    }
}

/// Whether `context` may name a hub thread (its id shows in URLs): an id
/// the way servers make them.
fn usable_as_thread(context: &str) -> bool {
    uuid::Uuid::parse_str(context).is_ok()
}

impl Hub {
    /// Asks `target` to work with `from`: opens (or continues) a thread,
    /// mentions the target in it and delivers the message over A2A. Answers
    /// as soon as the target took the message, or after
    /// [`crate::HubConfig::collaborate_wait`] when delivery goes on in the
    /// background; never waits for the target's work. The answer, however
    /// late, lands in the thread, where `from` (a participant) hears of it.
    ///
    /// The guards count the call for the caller code in process stands for
    /// (see [`Caller::vouched_for`]); a server that knows more says who
    /// called with [`Hub::collaborate_as`].
    pub async fn collaborate(
        &self,
        from: Sender,
        request: Collaborate,
    ) -> Result<Collaboration, HubError> {
        let caller = Caller::vouched_for(&from);
        self.collaborate_as(from, &caller, request).await
    }

    /// [`Hub::collaborate`], its guards counting `caller` (who the call
    /// proved to come from) rather than `from` (the name it goes under).
    pub async fn collaborate_as(
        &self,
        from: Sender,
        caller: &Caller,
        request: Collaborate,
    ) -> Result<Collaboration, HubError> {
        let (target, text) = self.check_collaboration(&from, &request)?;
        let opener = from.name().to_owned();
        let now = self.now();
        let destination = self.destination(&request, &opener, &target, now)?;
        // The pair guard counts every collaborate call, continued or not.
        let thread = destination.thread.as_deref();
        self.admit_pair(&opener, caller, &target, thread, &destination.channel)
            .await?;
        if destination.thread.is_none() {
            if let Caller::Anonymous(_) = caller {
                self.admit_anonymous_thread(caller, &destination.channel)
                    .await?;
            }
        }
        let thread = match destination.thread {
            Some(thread) => self.continue_thread(&opener, &target, &thread, now).await?,
            None => {
                let id = destination
                    .context
                    .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
                self.open_thread(&from, &target, &destination.channel, &text, id, now)
                    .await?
            }
        };
        let already = routing::mentions(&text, |name| name == target).contains(&target);
        let body = match already {
            true => text,
            false => format!("@{target} {text}"),
        };
        let (_, delivering) = self
            .post_routed(Post::in_thread(from, thread.id.clone(), body), None)
            .await?;
        let delivered = self.delivered(&target, &thread, delivering).await?;
        Ok(Collaboration {
            confirmation: confirmation(&target, &thread, delivered),
            thread: thread.id,
            channel: thread.channel,
            title: thread.title,
            target,
            continued: destination.continued,
            delivered,
        })
    }

    /// The target's agent and the text, when a collaboration can be asked.
    fn check_collaboration(
        &self,
        from: &Sender,
        request: &Collaborate,
    ) -> Result<(String, String), HubError> {
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
        if let Sender::Person(name) = from {
            self.check_person_name(name)?;
        }
        Ok((target, text))
    }

    /// The thread asked for; else the pair's thread of the reuse window in
    /// the channel asked for (or the default one), if there is one and
    /// agents may open threads there.
    fn destination(
        &self,
        request: &Collaborate,
        opener: &str,
        target: &str,
        now: DateTime<Utc>,
    ) -> Result<Destination, HubError> {
        if let Some(thread) = &request.thread {
            let view = self.thread(thread).ok_or_else(|| unknown_thread(thread))?;
            return Ok(Destination {
                thread: Some(view.id),
                channel: view.channel,
                continued: true,
                context: None,
            });
        }
        let channel = match &request.channel {
            Some(channel) => self.channel(channel)?.name.clone(),
            None => self.default_channel()?,
        };
        self.check_threads_allowed(&channel)?;
        let reuse = chrono::Duration::from_std(self.inner.config.reuse_window)
            .unwrap_or(chrono::Duration::MAX);
        let conversations = &self.inner.conversations;
        let entry = conversations
            .index()
            .get(&conversations.key(opener, target))
            .filter(|route| now - route.updated_at < reuse);
        let state = self.state();
        let (thread, context) = match entry {
            // The pair's thread, where it is asked to talk.
            Some(route) => match state.threads.get(&route.context_id) {
                Some(thread) if thread.view.channel == channel => {
                    (Some(route.context_id.clone()), None)
                }
                // A thread elsewhere: a new one here becomes the pair's.
                Some(_) => (None, None),
                // The pair's conversation outside the hub.
                None if usable_as_thread(&route.context_id) => {
                    (None, Some(route.context_id.clone()))
                }
                None => (None, None),
            },
            None => (None, None),
        };
        Ok(Destination {
            continued: thread.is_some(),
            thread,
            channel,
            context,
        })
    }

    /// Makes `thread` the pair's conversation in the index, and saves the
    /// index (the thread is in the hub's record already).
    async fn record_route(&self, opener: &str, target: &str, thread: &str, now: DateTime<Utc>) {
        let conversations = &self.inner.conversations;
        let key = conversations.key(opener, target);
        conversations
            .record(key, collaborate_route(thread, now), opener, target)
            .await;
        if let Err(err) = conversations.index().flush().await {
            tracing::warn!(error = %err, "saving the conversation index failed");
        }
    }

    fn check_threads_allowed(&self, channel: &str) -> Result<(), HubError> {
        if self.inner.config.threads_allowed(channel) {
            return Ok(());
        }
        let allowed: Vec<String> = self
            .channels()
            .into_iter()
            .filter(|c| c.threads_allowed)
            .map(|c| c.name)
            .collect();
        Err(HubError::invalid(format!(
            "channel not allowed: agents may not open threads in {channel:?} \
             (allowed: {}); add it to thread_channels under [hub]",
            allowed.join(", ")
        )))
    }

    /// Continues `thread`: it becomes the pair's route in its channel.
    async fn continue_thread(
        &self,
        opener: &str,
        target: &str,
        thread: &str,
        now: DateTime<Utc>,
    ) -> Result<ThreadView, HubError> {
        let view = self.thread(thread).ok_or_else(|| unknown_thread(thread))?;
        self.record_route(opener, target, thread, now).await;
        Ok(view)
    }

    /// Opens thread `id` of `from` with `target` in `channel`, named after
    /// the topic of `text`, as the pair's conversation; the hub says so at
    /// channel level.
    async fn open_thread(
        &self,
        from: &Sender,
        target: &str,
        channel: &str,
        text: &str,
        id: String,
        now: DateTime<Utc>,
    ) -> Result<ThreadView, HubError> {
        let opener = from.name();
        let participants: Vec<String> = from
            .agent()
            .into_iter()
            .chain([target])
            .map(str::to_owned)
            .collect();
        let view = ThreadView {
            id: id.clone(),
            channel: channel.to_owned(),
            title: format!("{opener} → {target} · {}", topic_of(text)),
            participants,
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
            for agent in &view.participants {
                state.participant_seq += 1;
                writes.push(Write::Participant {
                    thread: id.clone(),
                    agent: agent.clone(),
                    seq: state.participant_seq,
                });
            }
        }
        self.inner.store.write(writes).await?;
        self.opened(&view);
        self.record_route(opener, target, &id, now).await;
        // The hub's own line at channel level: people see the thread open;
        // being the hub's, it calls no agent.
        let notice = format!("{opener} opened the thread {:?} with {target}", view.title);
        let _ = self
            .post_routed(Post::new(Sender::Hub, channel, notice), None)
            .await;
        Ok(view)
    }

    /// Keeps the thread `view` just recorded, and tells subscribers.
    fn opened(&self, view: &ThreadView) {
        {
            let mut state = self.state();
            let thread = ThreadState {
                view: view.clone(),
                paused_until: None,
            };
            state.threads.insert(view.id.clone(), thread);
        }
        let _ = self
            .inner
            .events
            .send(HubEvent::Thread(Arc::new(view.clone())));
    }

    /// Whether `target` took the message within the collaborate wait; an
    /// error when it could not.
    async fn delivered(
        &self,
        target: &str,
        thread: &ThreadView,
        delivering: Vec<Delivering>,
    ) -> Result<bool, HubError> {
        let receiver = delivering
            .into_iter()
            .find(|(agent, _)| agent == target)
            .map(|(_, receiver)| receiver);
        // The thread is paused: the message waits there.
        let Some(receiver) = receiver else {
            return Ok(false);
        };
        match tokio::time::timeout(self.inner.config.collaborate_wait, receiver).await {
            Ok(Ok(Ok(()))) => Ok(true),
            Ok(Ok(Err(undelivered))) => Err(HubError::new(
                HubErrorKind::Undelivered,
                format!(
                    "{target} {undelivered}; the operator was told, and the thread {:?} keeps \
                     the message",
                    thread.title
                ),
            )),
            // Still trying (a busy or failing agent): the outcome will be
            // posted in the thread.
            Ok(Err(_)) | Err(_) => Ok(false),
        }
    }
}

/// One line for a person on what became of a collaboration.
fn confirmation(target: &str, thread: &ThreadView, delivered: bool) -> String {
    match (delivered, thread.paused) {
        (true, _) => format!("delivered to {target} in {:?}", thread.title),
        (false, true) => format!(
            "posted in {:?}, which the loop guard paused: {target} is called once a person resumes it",
            thread.title
        ),
        (false, false) => format!(
            "posted in {:?}; delivery to {target} is still being tried, and its outcome will be posted there",
            thread.title
        ),
    }
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
