//! Each task's feed: the broadcast of its persisted events to any number of
//! subscribers.
//!
//! A feed exists while a task has a running execution or at least one
//! subscriber, so a subscription to a waiting (`INPUT_REQUIRED`) task sees the
//! events of the next execution. Each subscriber has its own bounded buffer
//! (tokio broadcast); one that falls behind is resynced from the store instead
//! of slowing the agent or the other subscribers.

use foldhash::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::{A2aError, StreamResponse, TaskState};
use futures::Stream;
use tokio::sync::broadcast;

use crate::Caller;
use crate::store::{TaskStore, Version};

/// Where an update comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// An execution of this node, published after its write.
    Local,
    /// Another node's write, announced by the cluster bus: versions of one
    /// task come in order, so a missing one means notices were lost.
    Remote,
    /// Notices may have been lost: read the task again.
    Resync,
}

/// One persisted event, as broadcast to subscribers.
#[derive(Debug, Clone)]
pub(crate) struct Update {
    /// The task version this event produced (0 for a direct message reply,
    /// and for a new task's SUBMITTED snapshot, never stored as such).
    pub(crate) version: Version,
    /// The event.
    pub(crate) event: Arc<StreamResponse>,
    /// The task's state after the event, if it is a task event.
    pub(crate) state: Option<TaskState>,
    /// Who published it.
    pub(crate) origin: Origin,
}

impl Update {
    /// Another node's event, as the cluster bus announced it.
    pub(crate) fn remote(version: Version, event: Box<StreamResponse>) -> Self {
        let state = match &*event {
            StreamResponse::Task(task) => Some(task.status.state),
            StreamResponse::StatusUpdate(update) => Some(update.status.state),
            _ => None,
        };
        Update {
            version,
            event: Arc::from(event),
            state,
            origin: Origin::Remote,
        }
    }

    /// Tells a subscriber to read its task again.
    fn resync() -> Self {
        Update {
            version: 0,
            event: Arc::new(StreamResponse::Task(a2a_core::Task::default())),
            state: None,
            origin: Origin::Resync,
        }
    }

    /// A write this node would not publish: the user's own follow-up message,
    /// stored before its execution starts.
    fn is_silent(&self) -> bool {
        matches!(&*self.event, StreamResponse::Message(m) if m.role == a2a_core::Role::User)
    }

    /// Whether a stream started by SendStreamingMessage ends after this event.
    pub(crate) fn ends_message_stream(&self) -> bool {
        matches!(*self.event, StreamResponse::Message(_))
            || self.state.is_some_and(TaskState::ends_turn)
    }

    /// Whether a SubscribeToTask stream ends after this event.
    pub(crate) fn ends_subscription(&self) -> bool {
        self.state.is_some_and(TaskState::is_terminal)
    }
}

#[derive(Debug)]
pub(crate) struct TaskFeeds {
    capacity: usize,
    feeds: Mutex<HashMap<Arc<str>, broadcast::Sender<Update>>>,
    /// How many feeds there are, written under the lock: with none (no stream
    /// open anywhere, as with blocking calls only), a look for one is an
    /// atomic read, not a lock and a hash.
    open: AtomicUsize,
    /// Most subscribers on one task.
    per_task: usize,
    /// Most subscriptions of one caller identity.
    per_caller: usize,
    /// Open subscriptions per caller identity (anonymous callers are not
    /// counted: with no authentication they are everyone at once).
    callers: Arc<Mutex<HashMap<String, usize>>>,
}

impl TaskFeeds {
    #[cfg(test)]
    pub(crate) fn new(capacity: usize) -> Self {
        TaskFeeds::with_limits(capacity, usize::MAX, usize::MAX)
    }

    pub(crate) fn with_limits(capacity: usize, per_task: usize, per_caller: usize) -> Self {
        TaskFeeds {
            capacity: capacity.max(1),
            feeds: Mutex::new(HashMap::default()),
            open: AtomicUsize::new(0),
            per_task,
            per_caller,
            callers: Arc::default(),
        }
    }

    /// A new subscriber for `user` (the caller's identity) on a task's feed,
    /// within the per-task and per-caller limits; see [`TaskFeeds::subscribe`].
    pub(crate) fn subscribe_as(
        self: &Arc<Self>,
        task_id: &str,
        user: &str,
    ) -> Result<Subscription, A2aError> {
        let counted = if user.is_empty() {
            None
        } else {
            let mut callers = self
                .callers
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let open = callers.entry(user.to_owned()).or_insert(0);
            if *open >= self.per_caller {
                return Err(A2aError::busy(
                    format!(
                        "too many open subscriptions for this caller (at most {}); close one first",
                        self.per_caller
                    ),
                    std::time::Duration::from_secs(1),
                ));
            }
            *open += 1;
            Some(CallerCount {
                callers: self.callers.clone(),
                user: user.to_owned(),
            })
        };
        if self
            .sender(task_id)
            .is_some_and(|sender| sender.receiver_count() >= self.per_task)
        {
            return Err(A2aError::busy(
                format!(
                    "too many subscribers on task {task_id} (at most {})",
                    self.per_task
                ),
                std::time::Duration::from_secs(1),
            ));
        }
        let mut subscription = self.subscribe(task_id);
        subscription._prune.counted = counted;
        Ok(subscription)
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, broadcast::Sender<Update>>> {
        self.feeds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new subscriber on a task's feed (created if needed); dropping it
    /// removes the feed once nobody else listens.
    pub(crate) fn subscribe(self: &Arc<Self>, task_id: &str) -> Subscription {
        // The feed's key is the subscription's id too: one copy per feed.
        let (task_id, receiver) = {
            let mut feeds = self.lock();
            match feeds.get_key_value(task_id) {
                Some((key, sender)) => (Arc::clone(key), sender.subscribe()),
                None => {
                    let key: Arc<str> = Arc::from(task_id);
                    let (sender, receiver) = broadcast::channel(self.capacity);
                    feeds.insert(Arc::clone(&key), sender);
                    self.open.store(feeds.len(), Ordering::Release);
                    (key, receiver)
                }
            }
        };
        Subscription {
            receiver,
            _prune: PruneOnDrop {
                feeds: self.clone(),
                task_id,
                counted: None,
            },
        }
    }

    /// Whether anyone subscribes to the task (so events are worth building).
    pub(crate) fn is_watched(&self, task_id: &str) -> bool {
        self.any() && self.lock().contains_key(task_id)
    }

    /// Whether there is any feed at all: `false` answers every lookup.
    fn any(&self) -> bool {
        self.open.load(Ordering::Acquire) != 0
    }

    /// Forgets a feed nobody listens to any more (a later subscriber makes a new one).
    pub(crate) fn prune(&self, task_id: &str) {
        if !self.any() {
            return;
        }
        let mut feeds = self.lock();
        if feeds.get(task_id).is_some_and(|s| s.receiver_count() == 0) {
            feeds.remove(task_id);
            self.open.store(feeds.len(), Ordering::Release);
        }
    }

    /// The sending side of a task's feed, if it has one.
    pub(crate) fn sender(&self, task_id: &str) -> Option<broadcast::Sender<Update>> {
        if !self.any() {
            return None;
        }
        self.lock().get(task_id).cloned()
    }

    /// Sends to a task's current subscribers, if any.
    pub(crate) fn publish(&self, task_id: &str, update: Update) {
        if let Some(sender) = self.sender(task_id) {
            // No receivers is fine: nobody is watching this task right now.
            let _ = sender.send(update);
        }
    }

    /// Tells every subscriber on this node to read its task again (the
    /// cluster bus may have lost notices).
    pub(crate) fn resync_all(&self) {
        let senders: Vec<_> = self.lock().values().cloned().collect();
        for sender in senders {
            let _ = sender.send(Update::resync());
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Which events end a subscriber's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// SendStreamingMessage: ends at a message, a terminal state or INPUT_REQUIRED.
    Message,
    /// SubscribeToTask: ends at a terminal state.
    Subscription,
}

/// A receiver on a task's feed. Fields drop in order: the receiver first, then
/// the guard prunes the feed if that was the last receiver.
pub(crate) struct Subscription {
    receiver: broadcast::Receiver<Update>,
    _prune: PruneOnDrop,
}

impl Subscription {
    /// Waits until the task's turn ends (or notices may have been lost), so
    /// the caller can read how it stands.
    pub(crate) async fn settled(&mut self) {
        loop {
            match self.receiver.recv().await {
                Ok(update) if update.origin == Origin::Resync => return,
                Ok(update) if update.state.is_some_and(TaskState::ends_turn) => return,
                Ok(_) => {}
                Err(
                    broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed,
                ) => {
                    return;
                }
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn task_id(&self) -> &str {
        &self._prune.task_id
    }
}

/// Removes the feed when the last subscriber goes away, and gives back the
/// caller's subscription.
struct PruneOnDrop {
    feeds: Arc<TaskFeeds>,
    task_id: Arc<str>,
    counted: Option<CallerCount>,
}

/// One of a caller's open subscriptions, given back on drop.
struct CallerCount {
    callers: Arc<Mutex<HashMap<String, usize>>>,
    user: String,
}

impl Drop for CallerCount {
    fn drop(&mut self) {
        let mut callers = self
            .callers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(open) = callers.get_mut(&self.user) {
            *open -= 1;
            if *open == 0 {
                callers.remove(&self.user);
            }
        }
    }
}

impl Drop for PruneOnDrop {
    fn drop(&mut self) {
        self.feeds.prune(&self.task_id);
    }
}

struct SubscriberState {
    receiver: Option<broadcast::Receiver<Update>>,
    task_id: Arc<str>,
    after: Version,
    kind: StreamKind,
    store: Arc<dyn TaskStore>,
    caller: Caller,
    /// Boxed: an event inline would make the state 520 bytes instead of
    /// about 200, for the one event that only follow-ups have.
    pending: Option<Box<StreamResponse>>,
    done: Option<Arc<super::Signals>>,
    _prune: PruneOnDrop,
}

impl SubscriberState {
    fn close(&mut self) {
        self.receiver = None;
    }
}

/// Turns a feed's receiver into a stream of events newer than `after`.
///
/// `first` (a stored snapshot) is yielded before anything else. A subscriber that
/// lags behind gets a fresh snapshot from the store and continues from there.
pub(crate) fn subscriber_stream(
    subscription: Subscription,
    first: Option<(StreamResponse, Version)>,
    kind: StreamKind,
    store: Arc<dyn TaskStore>,
    caller: Caller,
    done: Option<Arc<super::Signals>>,
) -> impl Stream<Item = Result<StreamResponse, A2aError>> + Send + 'static {
    let (pending, after) = match first {
        Some((event, version)) => (Some(Box::new(event)), version),
        None => (None, 0),
    };
    let Subscription { receiver, _prune } = subscription;
    let state = SubscriberState {
        receiver: Some(receiver),
        task_id: Arc::clone(&_prune.task_id),
        after,
        kind,
        store,
        caller,
        pending,
        done,
        _prune,
    };
    // The state is boxed: `unfold` moves it into a new future at every event
    // and back out with the event, and a pointer is cheaper to move than its
    // 200 bytes (a streaming call alone, callgrind: 66,073 -> 65,469
    // instructions).
    futures::stream::unfold(Box::new(state), |mut state| async move {
        if let Some(event) = state.pending.take() {
            return Some((Ok(*event), state));
        }
        loop {
            let receiver = state.receiver.as_mut()?;
            let received = match &state.done {
                None => receiver.recv().await,
                Some(done) => tokio::select! {
                    biased;
                    received = receiver.recv() => received,
                    // The execution ended without a closing event: deliver what
                    // is buffered, then end.
                    () = done.ended() => receiver.try_recv().map_err(|_| broadcast::error::RecvError::Closed),
                },
            };
            let resync = match &received {
                Ok(update) if update.origin == Origin::Resync => true,
                Ok(update)
                    if update.origin == Origin::Remote
                        && state.after != 0
                        && update.version > state.after + 1 =>
                {
                    tracing::debug!(task_id = %state.task_id, after = state.after, version = update.version, "cluster notices missing; resyncing from the store");
                    true
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, task_id = %state.task_id, "subscriber lagged; resyncing from the store");
                    true
                }
                _ => false,
            };
            if resync {
                let task_id = state.task_id.clone();
                match state.store.get(&state.caller, &task_id).await {
                    Ok(stored) if stored.version <= state.after => continue,
                    Ok(stored) => {
                        state.after = stored.version;
                        let settled = stored.task.status.state;
                        let ends = match state.kind {
                            StreamKind::Message => settled.ends_turn(),
                            StreamKind::Subscription => settled.is_terminal(),
                        };
                        if ends {
                            state.close();
                        }
                        return Some((Ok(StreamResponse::Task(stored.task)), state));
                    }
                    Err(err) => {
                        state.close();
                        return Some((Err(err.into()), state));
                    }
                }
            }
            match received {
                Ok(update) => {
                    if update.version != 0 && update.version <= state.after {
                        continue;
                    }
                    state.after = update.version;
                    if update.origin == Origin::Remote && update.is_silent() {
                        continue;
                    }
                    let ends = match state.kind {
                        StreamKind::Message => update.ends_message_stream(),
                        StreamKind::Subscription => update.ends_subscription(),
                    };
                    if ends {
                        state.close();
                    }
                    // The broadcast drops its copy once every subscriber has
                    // read it, so the last (often the only) one takes the
                    // event itself; only the others copy it.
                    let event = Arc::try_unwrap(update.event)
                        .unwrap_or_else(|shared| StreamResponse::clone(&shared));
                    return Some((Ok(event), state));
                }
                Err(broadcast::error::RecvError::Closed) => {
                    // Stopped by a failing store: the stream ends with why.
                    let failure = state.done.as_ref().and_then(|d| d.failure().cloned());
                    state.close();
                    return failure.map(|err| (Err(err), state));
                }
                // Handled above.
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InMemoryTaskStore;
    use a2a_core::TaskStatusUpdateEvent;
    use futures::StreamExt;

    fn update(version: Version, state: TaskState) -> Update {
        Update {
            version,
            event: Arc::new(TaskStatusUpdateEvent::new("t", "c", state).into()),
            state: Some(state),
            origin: Origin::Local,
        }
    }

    #[tokio::test]
    async fn feeds_are_pruned_when_the_last_subscriber_leaves() {
        let feeds = Arc::new(TaskFeeds::new(8));
        let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
        let subscription = feeds.subscribe("t");
        assert_eq!(subscription.task_id(), "t");
        let stream = subscriber_stream(
            subscription,
            None,
            StreamKind::Subscription,
            store,
            Caller::default(),
            None,
        );
        assert_eq!(feeds.len(), 1);
        feeds.publish("t", update(1, TaskState::Working));
        feeds.publish("t", update(1, TaskState::Working));
        feeds.publish("t", update(2, TaskState::Completed));
        let events: Vec<_> = stream.collect().await;
        // The duplicate version is skipped and the terminal state ends the stream.
        assert_eq!(events.len(), 2);
        assert_eq!(feeds.len(), 0);
        // Publishing to a task nobody watches creates nothing.
        feeds.publish("other", update(1, TaskState::Working));
        assert_eq!(feeds.len(), 0);
    }

    /// The count of open feeds that lets lookups skip the lock follows
    /// subscribers coming and going: no event is lost to a stale "none open".
    #[tokio::test]
    async fn lookups_see_every_open_feed_as_feeds_come_and_go() {
        let feeds = Arc::new(TaskFeeds::new(8));
        assert!(!feeds.is_watched("a") && feeds.sender("a").is_none());
        let mut a = feeds.subscribe("a");
        let mut b = feeds.subscribe("b");
        drop(feeds.subscribe("c"));
        assert!(!feeds.is_watched("c"), "the last subscriber's feed goes");
        assert!(feeds.is_watched("a") && feeds.is_watched("b"));
        feeds.publish("a", update(1, TaskState::Working));
        assert_eq!(a.receiver.recv().await.unwrap().version, 1);
        drop(a);
        // One feed left: still found, still delivered to.
        assert!(!feeds.is_watched("a"));
        assert!(feeds.is_watched("b"));
        feeds.publish("b", update(2, TaskState::Working));
        assert_eq!(b.receiver.recv().await.unwrap().version, 2);
        drop(b);
        assert!(!feeds.is_watched("b") && feeds.sender("b").is_none());
        // None open, then one again: the first publish reaches it.
        let mut again = feeds.subscribe("b");
        assert!(feeds.is_watched("b"));
        feeds.publish("b", update(3, TaskState::Completed));
        assert_eq!(again.receiver.recv().await.unwrap().version, 3);
    }
}
