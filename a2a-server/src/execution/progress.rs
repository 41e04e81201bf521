//! How a running execution tells its blocking caller where the task stands.
//!
//! One reporter (the execution), one watcher (the caller). Lighter than a
//! `watch` channel: one lock and one notification per report, and the settled
//! task can be moved out instead of cloned.

use std::sync::{Arc, Mutex, MutexGuard};

use a2a_core::{Message, Task, TaskState};
use tokio::sync::Notify;

use super::Signals;

/// What a blocking caller needs to know about a running execution.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// The task's state after the last persisted event (`None`: no task yet).
    pub(crate) state: Option<TaskState>,
    /// The direct reply, when the agent answered with a message.
    pub(crate) reply: Option<Message>,
    /// The task as it was when it settled (terminal or interrupted), so a
    /// blocking caller need not read it back from the store.
    pub(crate) settled: Option<Arc<Task>>,
}

#[derive(Debug, Default)]
struct Inner {
    progress: Progress,
    /// Bumped by every report, so a watcher knows whether it has seen it.
    version: u64,
    /// The reporter is gone: nothing will change any more.
    closed: bool,
}

/// The progress part of an execution's [`Signals`](super::Signals), which
/// hold it so that an execution makes one allocation for both.
#[derive(Debug, Default)]
pub(super) struct Shared {
    inner: Mutex<Inner>,
    notify: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A connected reporter and watcher, over the progress in `signals`.
pub(crate) fn channel(signals: &Arc<Signals>) -> (Reporter, Watcher) {
    (
        Reporter {
            signals: signals.clone(),
        },
        Watcher {
            signals: signals.clone(),
            seen: 0,
        },
    )
}

/// The execution's end.
#[derive(Debug)]
pub(crate) struct Reporter {
    signals: Arc<Signals>,
}

impl Reporter {
    /// Changes the progress and wakes the watcher.
    pub(crate) fn report(&self, change: impl FnOnce(&mut Progress)) {
        let shared = &self.signals.progress;
        {
            let mut inner = shared.lock();
            change(&mut inner.progress);
            inner.version += 1;
        }
        // One watcher: a permit wakes it whether or not it waits yet, and
        // costs no lock when it does not.
        shared.notify.notify_one();
    }
}

impl Reporter {
    /// Records why the execution stops short; its watchers learn it from the
    /// signals once it has ended.
    pub(crate) fn fail(&self, err: a2a_core::A2aError) {
        self.signals.fail(err);
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        let shared = &self.signals.progress;
        shared.lock().closed = true;
        shared.notify.notify_one();
    }
}

/// The caller's end.
#[derive(Debug)]
pub(crate) struct Watcher {
    signals: Arc<Signals>,
    seen: u64,
}

impl Watcher {
    /// The signals of the execution watched (which tell, too, when it ends).
    pub(crate) fn signals(&self) -> &Arc<Signals> {
        &self.signals
    }

    /// Looks at (and may take from) the progress; later reports count as changes.
    pub(crate) fn inspect<R>(&mut self, look: impl FnOnce(&mut Progress) -> R) -> R {
        let mut inner = self.signals.progress.lock();
        self.seen = inner.version;
        look(&mut inner.progress)
    }

    /// Waits for a report not yet inspected; `false` once the reporter is
    /// gone and everything has been seen.
    pub(crate) async fn changed(&mut self) -> bool {
        loop {
            let shared = &self.signals.progress;
            let notified = shared.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let inner = shared.lock();
                if inner.version != self.seen {
                    return true;
                }
                if inner.closed {
                    return false;
                }
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel() -> (Reporter, Watcher) {
        super::channel(&Signals::new().0)
    }

    #[tokio::test]
    async fn a_watcher_sees_each_report_and_then_the_close() {
        let (reporter, mut watcher) = channel();
        let waiting = tokio::spawn(async move {
            let mut states = Vec::new();
            while watcher.changed().await {
                states.push(watcher.inspect(|p| p.state));
            }
            states
        });
        tokio::task::yield_now().await;
        reporter.report(|p| p.state = Some(TaskState::Working));
        tokio::task::yield_now().await;
        reporter.report(|p| p.state = Some(TaskState::Completed));
        drop(reporter);
        let states = waiting.await.unwrap();
        // Reports may coalesce, but the last one is always seen before the close.
        assert_eq!(states.last(), Some(&Some(TaskState::Completed)));
    }

    #[tokio::test]
    async fn a_report_before_waiting_is_not_lost() {
        let (reporter, mut watcher) = channel();
        reporter.report(|p| p.state = Some(TaskState::Working));
        assert!(watcher.changed().await);
        assert_eq!(watcher.inspect(|p| p.state), Some(TaskState::Working));
        drop(reporter);
        assert!(!watcher.changed().await);
    }
}
