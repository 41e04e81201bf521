//! The loop guards, which keep agents from talking in circles: a pair may
//! collaborate so many times in a window, a thread that takes too many
//! messages in a window pauses until a person resumes it or a cool-down
//! passes, and agents mentioning each other at channel level are held to
//! the same limit.
//!
//! Their events are kept with the hub's record (in the same transaction as
//! the message or thread they count), so a restart inside a window keeps
//! counting where it was: a pair refused before a restart is refused after.

use std::borrow::Borrow;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Hub, Post, State, ThreadState, unknown_thread};
use crate::error::HubError;
use crate::model::{Caller, HubEvent, Sender, ThreadView};
use crate::store::{GuardKind, Write, stamp};

/// What a thread's `paused_until` holds when only a person resumes it.
pub(super) const PAUSED_FOR_PERSON: &str = "person";

/// Events per key within a sliding window of the hub's clock.
#[derive(Debug)]
pub(super) struct Window<K> {
    window: chrono::Duration,
    events: HashMap<K, VecDeque<DateTime<Utc>>>,
}

impl<K: Hash + Eq> Window<K> {
    pub(super) fn new(window: Duration) -> Self {
        Window {
            window: chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX),
            events: HashMap::new(),
        }
    }

    /// The time at or before which events have left the window.
    pub(super) fn forget_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now.checked_sub_signed(self.window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    }

    /// Counts an event of `key` at `now` if fewer than `limit` fell within
    /// the window, and says so; else counts nothing and says how long until
    /// the oldest leaves the window.
    pub(super) fn admit<Q>(
        &mut self,
        key: &Q,
        limit: u32,
        now: DateTime<Utc>,
    ) -> Result<(), Duration>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        let window = self.window;
        let events = self.recent(key, now);
        if events.len() >= limit as usize {
            let oldest = events.front().copied().unwrap_or(now);
            let wait = (oldest + window - now).to_std().unwrap_or_default();
            return Err(wait);
        }
        events.push_back(now);
        Ok(())
    }

    /// Counts an event of `key` at `now` and says how many fell within the
    /// window, this one included.
    pub(super) fn count<Q>(&mut self, key: &Q, now: DateTime<Utc>) -> usize
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        let events = self.recent(key, now);
        events.push_back(now);
        events.len()
    }

    /// Takes back an event of `key` at `at` from the record (events come
    /// oldest first); one already out of the window at `now` is dropped.
    pub(super) fn restore(&mut self, key: K, at: DateTime<Utc>, now: DateTime<Utc>) {
        if at > self.forget_before(now) {
            self.events.entry(key).or_default().push_back(at);
        }
    }

    /// Forgets `key`'s events (a person resumed a paused thread).
    pub(super) fn reset<Q>(&mut self, key: &Q)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.events.remove(key);
    }

    fn recent<Q>(&mut self, key: &Q, now: DateTime<Utc>) -> &mut VecDeque<DateTime<Utc>>
    where
        K: Borrow<Q>,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
    {
        let forget_before = self.forget_before(now);
        // Keys without recent events are dropped now and then, so the map
        // does not grow with every pair that ever talked.
        if self.events.len() > 4096 {
            self.events
                .retain(|_, events| events.back().is_some_and(|last| *last > forget_before));
        }
        let events = self.events.entry(key.to_owned()).or_default();
        while events.front().is_some_and(|t| *t <= forget_before) {
            events.pop_front();
        }
        events
    }
}

/// A pair as the pair guard's record keys it.
pub(super) fn pair_key(opener: &str, target: &str) -> String {
    serde_json::json!([opener, target]).to_string()
}

/// The pair a [`pair_key`] stands for.
pub(super) fn pair_of_key(key: &str) -> Option<(String, String)> {
    serde_json::from_str(key).ok()
}

/// What a burst guard made of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Burst {
    /// Within the limit.
    Under,
    /// Over the limit, which tripped before.
    Over,
    /// Over the limit, tripping it now: this many messages in the window.
    Tripped(usize),
}

/// A guard that tripped on a post: its notice follows the post.
#[derive(Debug)]
pub(super) enum Tripped {
    /// The thread took too many messages and is paused.
    Thread { thread: String, burst: usize },
    /// Agents posted too many messages to each other in the post's channel.
    Channel { burst: usize },
}

/// Whether `thread` is paused now; a pause whose cool-down has passed is
/// lifted.
pub(super) fn resume_if_cooled(thread: &mut ThreadState, now: DateTime<Utc>) -> bool {
    let Some(until) = &thread.paused_until else {
        return false;
    };
    if until == PAUSED_FOR_PERSON {
        return true;
    }
    let over = DateTime::parse_from_rfc3339(until).map_or(true, |t| now >= t.with_timezone(&Utc));
    if over {
        thread.paused_until = None;
        thread.view.paused = false;
    }
    !over
}

impl Hub {
    /// The thread guard: counts a message of `thread_id` and, past the
    /// limit, pauses the thread (until the cool-down passes, or a person
    /// resumes it).
    pub(super) fn guard_thread(
        &self,
        bursts: &mut Window<String>,
        thread_id: &str,
        thread: &mut ThreadState,
        now: DateTime<Utc>,
        writes: &mut Vec<Write>,
    ) -> Burst {
        let guards = &self.inner.config.guards;
        let burst = bursts.count(thread_id, now);
        writes.push(Write::GuardEvent {
            guard: GuardKind::Burst,
            key: thread_id.to_owned(),
            at: now,
            forget_before: bursts.forget_before(now),
        });
        if burst <= guards.thread_burst as usize {
            return Burst::Under;
        }
        thread.paused_until = Some(match guards.cool_down {
            Some(cool) => {
                stamp(now + chrono::Duration::from_std(cool).unwrap_or(chrono::Duration::MAX))
            }
            None => PAUSED_FOR_PERSON.to_owned(),
        });
        thread.view.paused = true;
        Burst::Tripped(burst)
    }

    /// The channel guard: counts agents' mentions of each other at the level
    /// of `channel`; past the limit they call nobody until the window
    /// passes, and the first message past it trips the guard.
    pub(super) fn guard_channel(
        &self,
        bursts: &mut Window<String>,
        channel: &str,
        now: DateTime<Utc>,
        writes: &mut Vec<Write>,
    ) -> Burst {
        let key = format!("#{channel}");
        let burst = bursts.count(&key, now);
        writes.push(Write::GuardEvent {
            guard: GuardKind::Burst,
            key,
            at: now,
            forget_before: bursts.forget_before(now),
        });
        let limit = self.inner.config.guards.thread_burst as usize;
        match burst {
            burst if burst <= limit => Burst::Under,
            burst if burst == limit + 1 => Burst::Tripped(burst),
            _ => Burst::Over,
        }
    }

    /// The pair guard: counts a collaborate call of `caller` (who asks as
    /// `opener`) with `target`, or refuses it (on record) when the pair
    /// made too many.
    pub(super) async fn admit_pair(
        &self,
        opener: &str,
        caller: &Caller,
        target: &str,
        thread: Option<&str>,
        channel: &str,
    ) -> Result<(), HubError> {
        let pair = (caller.guard_key(), target.to_owned());
        let guards = &self.inner.config.guards;
        let stored = pair_key(&pair.0, target);
        let counted: fn(&mut State) -> &mut Window<_> = |state| &mut state.pairs;
        let Err(wait) = self
            .admit_recorded(GuardKind::Pair, counted, &pair, stored, guards.pair_limit)
            .await?
        else {
            return Ok(());
        };
        let message = format!(
            "refused by the loop guard: {opener} asked {target} {} times in the last {} s; \
             talk in the thread you have, or try again in {} s",
            guards.pair_limit,
            guards.pair_window.as_secs(),
            wait.as_secs().max(1)
        );
        tracing::warn!(%opener, %target, "collaboration hub: collaborate refused by the pair guard");
        self.log_decision("collaborate_refused", &message, thread, channel)
            .await;
        self.notify_operator(&message, thread, channel).await;
        Err(HubError::refused(message, wait))
    }

    /// The guard on threads opened without authentication: counts one
    /// opened by `caller` (anonymous), or refuses it (on record) when its
    /// address opened too many in the window, so that calls under ever new
    /// names cannot set off an agent each.
    pub(super) async fn admit_anonymous_thread(
        &self,
        caller: &Caller,
        channel: &str,
    ) -> Result<(), HubError> {
        let key = caller.guard_key();
        let guards = &self.inner.config.guards;
        let counted: fn(&mut State) -> &mut Window<_> = |state| &mut state.anonymous_threads;
        let limit = guards.anonymous_threads;
        let Err(wait) = self
            .admit_recorded(
                GuardKind::AnonymousThread,
                counted,
                &key,
                key.clone(),
                limit,
            )
            .await?
        else {
            return Ok(());
        };
        let message = format!(
            "refused by the loop guard: callers without authentication open at most {} threads \
             in {} s from one address; try again in {} s",
            guards.anonymous_threads,
            guards.anonymous_window.as_secs(),
            wait.as_secs().max(1)
        );
        tracing::warn!(caller = %key, "collaboration hub: a thread refused to an anonymous caller");
        self.log_decision("thread_refused", &message, None, channel)
            .await;
        self.notify_operator(&message, None, channel).await;
        Err(HubError::refused(message, wait))
    }

    /// Counts an event of `key` in the window `window` picks, and records it
    /// (as `stored`) with the hub's record, if fewer than `limit` fell in
    /// the window; else counts nothing and says how long until the oldest
    /// leaves it.
    async fn admit_recorded<K: Hash + Eq + Clone>(
        &self,
        guard: GuardKind,
        window: fn(&mut State) -> &mut Window<K>,
        key: &K,
        stored: String,
        limit: u32,
    ) -> Result<Result<(), Duration>, HubError> {
        let now = self.now();
        if let Some(record) = self.inner.store.postgres() {
            // Every node's events count: the record decides, under the
            // key's lock; memory follows.
            let forget_before = window(&mut self.state()).forget_before(now);
            let admitted = record
                .admit_guard(guard, &stored, now, forget_before, limit)
                .await?;
            if admitted.is_ok() {
                window(&mut self.state()).restore(key.clone(), now, now);
            }
            return Ok(admitted);
        }
        let admitted = {
            let mut state = self.state();
            let window = window(&mut state);
            window
                .admit(key, limit, now)
                .map(|()| window.forget_before(now))
        };
        match admitted {
            Ok(forget_before) => {
                let counted = Write::GuardEvent {
                    guard,
                    key: stored,
                    at: now,
                    forget_before,
                };
                self.inner.store.write(vec![counted]).await.map(Ok)
            }
            Err(wait) => Ok(Err(wait)),
        }
    }

    /// Tells of a guard that tripped on a post in `channel`.
    pub(super) async fn trip(&self, tripped: Tripped, channel: &str) {
        match tripped {
            Tripped::Thread { thread, burst } => self.trip_thread(&thread, channel, burst).await,
            Tripped::Channel { burst } => self.trip_channel(channel, burst).await,
        }
    }

    /// A thread paused: a warning, a line on record and a notice in it.
    async fn trip_thread(&self, thread: &str, channel: &str, burst: usize) {
        let guards = &self.inner.config.guards;
        let until = match guards.cool_down {
            Some(cool) => format!("a person resumes it or {} s pass", cool.as_secs()),
            None => "a person resumes it".to_owned(),
        };
        let notice = format!(
            "loop guard: this thread took {burst} messages in {} s (limit {}); it is paused and \
             calls no agent until {until}",
            guards.burst_window.as_secs(),
            guards.thread_burst
        );
        tracing::warn!(%thread, %channel, burst, "collaboration hub: a thread was paused by the loop guard");
        self.log_decision("thread_paused", &notice, Some(thread), channel)
            .await;
        let pointer = match self.notify_operator(&notice, Some(thread), channel).await {
            Some(operator) => {
                format!("loop guard: this thread is paused until {until} (details in #{operator})")
            }
            None => notice,
        };
        let _ = self
            .post_routed(Post::in_thread(Sender::Hub, thread, pointer), None)
            .await;
    }

    /// Agents' mentions held back in a channel: a warning, a line on record
    /// and a notice in the channel.
    async fn trip_channel(&self, channel: &str, burst: usize) {
        let guards = &self.inner.config.guards;
        let notice = format!(
            "loop guard: agents posted {burst} messages to each other in #{channel} within {} s \
             (limit {}); their mentions call no agent until the window passes",
            guards.burst_window.as_secs(),
            guards.thread_burst
        );
        tracing::warn!(%channel, burst, "collaboration hub: agents' mentions in a channel held back by the loop guard");
        self.log_decision("channel_burst", &notice, None, channel)
            .await;
        let pointer = match self.notify_operator(&notice, None, channel).await {
            Some(operator) => format!(
                "loop guard: agents' mentions here call no agent until the window passes \
                 (details in #{operator})"
            ),
            None => notice,
        };
        let _ = self
            .post_routed(Post::new(Sender::Hub, channel, pointer), None)
            .await;
    }

    /// Posts `notice` about a place (`thread` in `channel`, or `channel`
    /// itself) in the operator's channel, and says which channel that is;
    /// `None` when the config names none (or the place is that channel).
    pub(super) async fn notify_operator(
        &self,
        notice: &str,
        thread: Option<&str>,
        channel: &str,
    ) -> Option<String> {
        let operator = self.inner.config.operator_channel.clone()?;
        if operator == channel {
            return None;
        }
        let place = match thread {
            Some(thread) => format!(
                " (thread {:?} in #{channel})",
                self.thread(thread).map(|t| t.title).unwrap_or_default(),
            ),
            None => format!(" (#{channel})"),
        };
        let post = Post::new(Sender::Hub, operator.clone(), format!("{notice}{place}"));
        match self.post_routed(post, None).await {
            Ok(_) => Some(operator),
            Err(err) => {
                tracing::warn!(error = %err, "collaboration hub: a notice to the operator's channel could not be posted");
                None
            }
        }
    }

    /// Resumes a paused thread (a person's decision): its next messages
    /// reach their handlers again.
    pub async fn resume_thread(&self, thread: &str, by: &str) -> Result<ThreadView, HubError> {
        let view = {
            let mut state = self.state();
            let state = &mut *state;
            let entry = state
                .threads
                .get_mut(thread)
                .ok_or_else(|| unknown_thread(thread))?;
            entry.paused_until = None;
            entry.view.paused = false;
            state.bursts.reset(thread);
            entry.view.clone()
        };
        self.inner
            .store
            .write(vec![
                Write::Thread {
                    view: view.clone(),
                    paused_until: None,
                },
                Write::GuardReset {
                    guard: GuardKind::Burst,
                    key: thread.to_owned(),
                },
            ])
            .await?;
        let _ = self
            .inner
            .events
            .send(HubEvent::Thread(Arc::new(view.clone())));
        self.log_decision(
            "thread_resumed",
            &format!("{by} resumed the thread"),
            Some(thread),
            &view.channel,
        )
        .await;
        Ok(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_admits_up_to_its_limit_and_says_when_to_come_back() {
        let mut pairs = Window::new(Duration::from_secs(300));
        let key = ("alpha", "beta");
        let mut now = Utc::now();
        let seconds = chrono::Duration::seconds;
        for _ in 0..3 {
            assert!(pairs.admit(&key, 3, now).is_ok());
            now += seconds(10);
        }
        let wait = pairs.admit(&key, 3, now).unwrap_err();
        assert_eq!(wait, Duration::from_secs(270));
        now += seconds(270);
        assert!(pairs.admit(&key, 3, now).is_ok());
        assert!(pairs.admit(&("alpha", "gamma"), 3, now).is_ok());
    }

    #[test]
    fn restored_events_count_until_they_leave_the_window() {
        let mut pairs: Window<(String, String)> = Window::new(Duration::from_secs(300));
        let now = Utc::now();
        let key = pair_of_key(&pair_key("alpha", "beta")).unwrap();
        assert_eq!(key, ("alpha".to_owned(), "beta".to_owned()));
        // One event already out of the window, three inside it.
        for ago in [400, 200, 100, 50] {
            pairs.restore(key.clone(), now - chrono::Duration::seconds(ago), now);
        }
        let wait = pairs.admit(&key, 3, now).unwrap_err();
        assert_eq!(wait, Duration::from_secs(100));
        assert!(pair_of_key("not json").is_none());
    }
}
