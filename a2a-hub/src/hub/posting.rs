//! A message's way in, step by step: validate it, route it to its
//! handlers and observers (where a loop guard may hold it back), record
//! it with its deliveries, and fan it out to its handlers.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::oneshot;

use super::delivery::Undelivered;
use super::guards::{Burst, Tripped};
use super::{Hub, MAX_TEXT_BYTES, State, unknown_thread};
use crate::error::HubError;
use crate::model::{HubEvent, HubMessage, Role, Sender, ThreadView};
use crate::routing::{self, Decision, Place};
use crate::store::Write;

/// A message to post.
#[derive(Debug, Clone)]
pub struct Post {
    /// Who writes it.
    pub from: Sender,
    /// The channel (taken from the thread when one is given).
    pub channel: Option<String>,
    /// The thread, if it goes in one.
    pub thread: Option<String>,
    /// Its text.
    pub text: String,
    /// Whether it is an echo of what the hub already holds (a mirror or
    /// sink copied back): dropped, never routed.
    pub mirror: bool,
}

impl Post {
    /// `text` from `from`, at the level of `channel`.
    pub fn new(from: Sender, channel: impl Into<String>, text: impl Into<String>) -> Post {
        Post {
            from,
            channel: Some(channel.into()),
            thread: None,
            text: text.into(),
            mirror: false,
        }
    }

    /// `text` from `from` in `thread`.
    pub fn in_thread(from: Sender, thread: impl Into<String>, text: impl Into<String>) -> Post {
        Post {
            from,
            channel: None,
            thread: Some(thread.into()),
            text: text.into(),
            mirror: false,
        }
    }
}

/// A delivery under way: resolves when the agent took the message, or
/// could not.
pub(super) type Delivering = (String, oneshot::Receiver<Result<(), Undelivered>>);
/// A stored message and its deliveries under way.
pub(super) type Posted = (Arc<HubMessage>, Vec<Delivering>);

/// A post that passed validation: its text trimmed, its channel known,
/// its id and time given.
struct Checked {
    post: Post,
    text: String,
    channel: String,
    id: String,
    now: DateTime<Utc>,
    reply_to: Option<String>,
    /// The log line the message already is (an agent's answer, logged
    /// with its delivery's outcome).
    logged: Option<String>,
}

impl Checked {
    /// The message the post is, as routing made it.
    fn into_message(
        self,
        mentions: Vec<String>,
        handlers: Vec<String>,
        unrouted: Option<&str>,
    ) -> HubMessage {
        HubMessage {
            id: self.id,
            channel: self.channel,
            thread: self.post.thread,
            from: self.post.from,
            text: self.text,
            t: self.now,
            mentions,
            handlers,
            reply_to: self.reply_to,
            unrouted: unrouted.map(str::to_owned),
            log_id: None,
            deliveries: Vec::new(),
        }
    }
}

/// A message being routed: what routing goes by, and what it changed.
struct Draft<'a> {
    from: &'a Sender,
    mentions: &'a [String],
    members: &'a [String],
    now: DateTime<Utc>,
    /// Why no agent is called, when none is.
    unrouted: Option<&'static str>,
    /// Record writes besides the message itself.
    writes: Vec<Write>,
    /// Threads that changed, for subscribers.
    threads: Vec<Arc<ThreadView>>,
    tripped: Option<Tripped>,
}

/// A routed message: who handles it, and what must be recorded with it.
struct Routed {
    message: Arc<HubMessage>,
    handlers: Vec<(String, Role)>,
    writes: Vec<Write>,
    threads: Vec<Arc<ThreadView>>,
    tripped: Option<Tripped>,
    /// The line to log for the message (its id, and the line it
    /// continues), when it is not logged yet.
    log_line: Option<(String, Option<String>)>,
}

impl<'a> Draft<'a> {
    fn new(
        from: &'a Sender,
        mentions: &'a [String],
        members: &'a [String],
        now: DateTime<Utc>,
    ) -> Self {
        Draft {
            from,
            mentions,
            members,
            now,
            unrouted: None,
            writes: Vec::new(),
            threads: Vec::new(),
            tripped: None,
        }
    }
}

impl Hub {
    /// Posts a message: stores it, then calls its handlers (without waiting
    /// for them) and records it for its observers. Answers once the message
    /// is on record with its deliveries: a hub that stops before it called
    /// a handler calls it after its restart (in a cluster, another node
    /// does once this one's lease expires).
    pub async fn post(&self, post: Post) -> Result<HubMessage, HubError> {
        let (message, _) = self.post_routed(post, None).await?;
        Ok((*message).clone())
    }

    /// [`Hub::post_routed_with`], boxed: posting a notice or an answer
    /// posts again.
    pub(super) fn post_routed(
        &self,
        post: Post,
        reply_to: Option<String>,
    ) -> futures::future::BoxFuture<'_, Result<Posted, HubError>> {
        Box::pin(self.post_routed_with(post, reply_to, None, None))
    }

    /// [`Hub::post_routed`] of a message that is log line `logged` already;
    /// `with`, when given, is written in the message's transaction (and
    /// fails it when it fails: an answer whose delivery another node took
    /// over is not posted).
    pub(super) fn post_logged(
        &self,
        post: Post,
        reply_to: Option<String>,
        logged: Option<String>,
        with: Option<Write>,
    ) -> futures::future::BoxFuture<'_, Result<Posted, HubError>> {
        Box::pin(self.post_routed_with(post, reply_to, logged, with))
    }

    /// The steps of a post; a loop guard that tripped on it posts its
    /// notice once the post is on record.
    async fn post_routed_with(
        &self,
        post: Post,
        reply_to: Option<String>,
        logged: Option<String>,
        with: Option<Write>,
    ) -> Result<Posted, HubError> {
        let mut checked = self.validate(post, reply_to)?;
        checked.logged = logged;
        if checked.post.mirror {
            // An echo of what the hub holds: it has been routed once.
            let (channel, from) = (&checked.channel, checked.post.from.name());
            tracing::debug!(%channel, %from, "dropped a mirrored message");
            let message = checked.into_message(Vec::new(), Vec::new(), Some("mirror"));
            return Ok((Arc::new(message), Vec::new()));
        }
        let mut routed = self.route(checked)?;
        routed.writes.extend(with);
        // The deliveries go on record with the message: once the post is
        // acknowledged, a hub that dies before (or while) it delivers
        // leaves them to its restart, or to another node.
        if !routed.handlers.is_empty() {
            routed.writes.push(Write::Outbox {
                message_id: routed.message.id.clone(),
                agents: routed.handlers.iter().map(|(a, _)| a.clone()).collect(),
            });
        }
        self.record(&routed.message, routed.writes, routed.threads)
            .await?;
        if let Some((id, parent)) = &routed.log_line {
            self.log_message(&routed.message, id, parent.as_deref())
                .await;
        }
        let delivering = self.fan_out(&routed.message, routed.handlers);
        if let Some(tripped) = routed.tripped {
            self.trip(tripped, &routed.message.channel).await;
        }
        Ok((routed.message, delivering))
    }

    /// Validate: some text, not too much of it, an author who may write, and
    /// a place that exists.
    fn validate(&self, post: Post, reply_to: Option<String>) -> Result<Checked, HubError> {
        let text = post.text.trim_end().to_owned();
        if text.trim().is_empty() {
            return Err(HubError::invalid("the message has no text"));
        }
        if text.len() > MAX_TEXT_BYTES {
            return Err(HubError::invalid(format!(
                "the message has {} bytes; the hub takes at most {MAX_TEXT_BYTES}",
                text.len()
            )));
        }
        if let Sender::Person(name) = &post.from {
            self.check_person_name(name)?;
        }
        if let Some(agent) = post.from.agent() {
            if !self.is_agent(agent) {
                return Err(self.unknown_target(agent));
            }
        }
        let channel = match (&post.thread, &post.channel) {
            (Some(thread), _) => {
                self.thread(thread)
                    .ok_or_else(|| unknown_thread(thread))?
                    .channel
            }
            (None, Some(channel)) => self.channel(channel)?.name.clone(),
            (None, None) => self.default_channel()?,
        };
        Ok(Checked {
            post,
            text,
            channel,
            id: uuid::Uuid::now_v7().to_string(),
            now: self.now(),
            reply_to,
            logged: None,
        })
    }

    /// A person's name: not empty, not too long, and nothing that reads as
    /// an agent's: no agent's name, account or `agent:` id, compared as
    /// people read them ([`names::fold`]: without invisible characters,
    /// case-folded, confusables folded), so "Alpha", Cyrillic "аlpha" and
    /// "alpha" with a zero-width space are all alpha.
    pub(super) fn check_person_name(&self, name: &str) -> Result<(), HubError> {
        if name.trim().is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
            return Err(HubError::invalid(
                "a person's name is 1 to 64 characters, none of them control characters",
            ));
        }
        let folded = names::fold(name);
        if folded.is_empty() {
            return Err(HubError::invalid(
                "a person's name needs a visible character",
            ));
        }
        let taken = |other: &str| names::fold(other) == folded;
        let reserved = folded.starts_with(&names::fold("agent:"))
            || taken(&self.inner.name)
            || taken("hub")
            || self.agent_names().iter().any(|agent| taken(agent))
            || self
                .inner
                .config
                .accounts
                .keys()
                .any(|account| taken(account));
        if reserved {
            return Err(HubError::invalid(format!(
                "{name:?} reads as an agent's name or account; a person cannot post as an agent"
            )));
        }
        Ok(())
    }

    /// Route: who handles the message and who observes it. Decided, guarded
    /// and kept in memory under one lock, so that posts made at once are
    /// counted and recorded in one order.
    fn route(&self, mut checked: Checked) -> Result<Routed, HubError> {
        let mentions = {
            let links = self.links();
            routing::mentions(&checked.text, |name| links.links.contains_key(name))
        };
        let channel_config = self.channel(&checked.channel)?.clone();
        let members = self.members(&channel_config);
        let sink = self.inner.config.is_sink(&checked.channel);
        let mut state = self.state();
        let state = &mut *state;
        let from = &checked.post.from;
        let mut draft = Draft::new(from, &mentions, &members, checked.now);
        let mut decision = match &checked.post.thread {
            Some(thread) => self.route_in_thread(state, &mut draft, thread)?,
            None => {
                let default_agent = channel_config.default_agent.as_deref();
                self.route_at_channel(state, &mut draft, &checked.channel, default_agent)
            }
        };
        if sink && !decision.handlers.is_empty() {
            hold_back(&mut decision);
            draft.unrouted = Some("sink");
        }
        if matches!(from, Sender::Hub) {
            draft.unrouted = Some("hub");
        }
        let Draft {
            unrouted,
            mut writes,
            threads,
            tripped,
            ..
        } = draft;
        let Decision {
            handlers,
            observers,
            ..
        } = decision;
        let names = handlers.iter().map(|(a, _)| a.clone()).collect();
        let (log_id, log_line) = self.log_line_of(state, &mut checked);
        let mut message = checked.into_message(mentions, names, unrouted);
        message.log_id = log_id;
        let message = Arc::new(message);
        self.keep_for_observers(state, &message, observers, &mut writes);
        Ok(Routed {
            message,
            handlers,
            writes,
            threads,
            tripped,
            log_line,
        })
    }

    /// The message's log line: the one it already is (an answer, or a
    /// request the hub's own server logged), else a new one continuing its
    /// thread's latest line; none for the hub's own notices (their
    /// decisions are logged as such). The thread's latest line moves on to
    /// it.
    fn log_line_of(
        &self,
        state: &mut State,
        checked: &mut Checked,
    ) -> (Option<String>, Option<(String, Option<String>)>) {
        let mut fresh = None;
        let id = match checked.logged.take() {
            Some(line) => Some(line),
            None if matches!(checked.post.from, Sender::Hub) => None,
            None => match super::log::take_request_line() {
                Some(line) => Some(line),
                None => self.new_line_id(checked.now).inspect(|id| {
                    let parent = checked
                        .post
                        .thread
                        .as_ref()
                        .and_then(|thread| state.log_tips.get(thread).cloned());
                    fresh = Some((id.clone(), parent));
                }),
            },
        };
        if let (Some(id), Some(thread)) = (&id, &checked.post.thread) {
            state.log_tips.insert(thread.clone(), id.clone());
        }
        (id, fresh)
    }

    /// Routes a message in thread `thread_id`: mentioned agents join it,
    /// and a paused thread, or one the burst guard pauses now, calls
    /// nobody.
    fn route_in_thread(
        &self,
        state: &mut State,
        draft: &mut Draft<'_>,
        thread_id: &str,
    ) -> Result<Decision, HubError> {
        let thread = state
            .threads
            .get_mut(thread_id)
            .ok_or_else(|| unknown_thread(thread_id))?;
        let place = Place::Thread {
            participants: &thread.view.participants,
            members: draft.members,
        };
        let mut decision = routing::decide(draft.from, draft.mentions, place);
        // Mentioned agents join even when the thread is paused: a person
        // resuming it finds them there.
        for agent in &decision.joined {
            state.participant_seq += 1;
            thread.view.participants.push(agent.clone());
            draft.writes.push(Write::Participant {
                thread: thread_id.to_owned(),
                agent: agent.clone(),
                seq: state.participant_seq,
            });
        }
        thread.view.messages += 1;
        thread.view.last_activity = draft.now;
        if super::guards::resume_if_cooled(thread, draft.now) {
            draft.unrouted = Some("paused");
        } else if !matches!(draft.from, Sender::Hub) {
            let burst = self.guard_thread(
                &mut state.bursts,
                thread_id,
                thread,
                draft.now,
                &mut draft.writes,
            );
            if let Burst::Tripped(burst) = burst {
                draft.unrouted = Some("paused");
                draft.tripped = Some(Tripped::Thread {
                    thread: thread_id.to_owned(),
                    burst,
                });
            }
        }
        if draft.unrouted.is_some() {
            hold_back(&mut decision);
        }
        draft.writes.push(Write::Thread {
            view: thread.view.clone(),
            paused_until: thread.paused_until.clone(),
        });
        draft.threads.push(Arc::new(thread.view.clone()));
        Ok(decision)
    }

    /// Routes a message at the level of `channel`. Agents mentioning each
    /// other there are held to the thread's burst limit too; people's
    /// messages always reach their handlers.
    fn route_at_channel(
        &self,
        state: &mut State,
        draft: &mut Draft<'_>,
        channel: &str,
        default_agent: Option<&str>,
    ) -> Decision {
        let place = Place::Channel {
            default_agent,
            members: draft.members,
        };
        let mut decision = routing::decide(draft.from, draft.mentions, place);
        if draft.from.agent().is_some() && !decision.handlers.is_empty() {
            let burst =
                self.guard_channel(&mut state.bursts, channel, draft.now, &mut draft.writes);
            if burst != Burst::Under {
                hold_back(&mut decision);
                draft.unrouted = Some("burst");
            }
            if let Burst::Tripped(burst) = burst {
                draft.tripped = Some(Tripped::Channel { burst });
            }
        }
        decision
    }

    /// Record: the message and what routing changed, in one write; then
    /// subscribers and the conversation log hear of it.
    async fn record(
        &self,
        message: &Arc<HubMessage>,
        mut writes: Vec<Write>,
        threads: Vec<Arc<ThreadView>>,
    ) -> Result<(), HubError> {
        writes.insert(0, Write::Message(message.clone()));
        self.inner.store.write(writes).await?;
        for thread in threads {
            let _ = self.inner.events.send(HubEvent::Thread(thread));
        }
        let _ = self.inner.events.send(HubEvent::Message(message.clone()));
        Ok(())
    }

    /// Fan out: a delivery to each handler, in the background (each is on
    /// record already, waiting to start).
    fn fan_out(&self, message: &Arc<HubMessage>, handlers: Vec<(String, Role)>) -> Vec<Delivering> {
        let mut delivering = Vec::with_capacity(handlers.len());
        for (agent, role) in handlers {
            let (done, receiver) = oneshot::channel();
            delivering.push((agent.clone(), receiver));
            let message = message.clone();
            self.spawn_delivery(move |hub| async move {
                hub.deliver(message, agent, role, done).await;
            });
        }
        delivering
    }
}

/// The handlers of `decision` only observe.
fn hold_back(decision: &mut Decision) {
    decision
        .observers
        .extend(decision.handlers.drain(..).map(|(agent, _)| agent));
}

/// Names as people read them.
pub(crate) mod names {
    use unicode_security::GeneralSecurityProfile as _;
    use unicode_security::general_security_profile::IdentifierType;

    /// `name` as compared: invisible characters (default-ignorable code
    /// points such as zero-width spaces and joiners) removed, case-folded,
    /// and mapped to its UTS #39 skeleton, so that names that look alike
    /// compare equal.
    pub(crate) fn fold(name: &str) -> String {
        let visible: String = name
            .chars()
            .filter(|c| {
                c.identifier_type() != Some(IdentifierType::Default_Ignorable)
                    && !matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
            })
            .flat_map(char::to_lowercase)
            .collect();
        unicode_security::skeleton(visible.trim())
            .flat_map(char::to_lowercase)
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::fold;

        #[test]
        fn names_that_look_alike_fold_alike() {
            let alpha = fold("alpha");
            for lookalike in [
                "Alpha",
                "ALPHA",
                "\u{0430}lpha",
                "alpha\u{200B}",
                "al\u{200D}pha",
                " alpha ",
            ] {
                assert_eq!(fold(lookalike), alpha, "{lookalike:?}");
            }
            assert_ne!(fold("alphonse"), alpha);
            assert_ne!(fold("ann"), fold("anne"));
            assert!(fold("\u{200B}\u{FEFF}").is_empty());
        }
    }
}
