//! What a running execution shares with everyone who reaches it: the commands
//! sent to it (a cancel, a lost lease) and the news that it has ended.
//!
//! Commands are rare and the end comes once, so both live in one small
//! allocation per execution (with the progress a blocking caller watches),
//! where channels and a cancellation token took four and several locks for
//! every execution, commanded or not.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use super::Control;

/// One execution's commands, progress and end.
#[derive(Default)]
pub(crate) struct Signals {
    commands: Mutex<Commands>,
    command_sent: Notify,
    ended: AtomicBool,
    end: Notify,
    /// Why the execution stopped before its task was stored as it should
    /// be (the store failed): what its callers and streams answer with.
    failure: std::sync::OnceLock<a2a_core::A2aError>,
    /// What a blocking caller watches (see [`super::progress`]).
    pub(super) progress: super::progress::Shared,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals")
            .field("ended", &self.ended.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Commands {
    queue: VecDeque<Control>,
    /// The execution takes no more commands.
    closed: bool,
}

impl Signals {
    /// The signals of a new execution, and the inbox its actor reads
    /// commands from.
    pub(crate) fn new() -> (Arc<Signals>, Inbox) {
        let signals = Arc::new(Signals::default());
        (signals.clone(), Inbox(signals))
    }

    fn commands(&self) -> MutexGuard<'_, Commands> {
        self.commands.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `command` to the execution, or gives it back when the execution
    /// takes no more (its actor has stopped).
    pub(crate) fn send(&self, command: Control) -> Result<(), Control> {
        {
            let mut commands = self.commands();
            if commands.closed {
                return Err(command);
            }
            commands.queue.push_back(command);
        }
        // A permit when the actor is not waiting yet: its next wait ends at once.
        self.command_sent.notify_one();
        Ok(())
    }

    /// Records why the execution stopped short (the first reason counts).
    pub(crate) fn fail(&self, err: a2a_core::A2aError) {
        let _ = self.failure.set(err);
    }

    /// Why the execution stopped short, if it did.
    pub(crate) fn failure(&self) -> Option<&a2a_core::A2aError> {
        self.failure.get()
    }

    /// Marks the execution ended and wakes everyone waiting for that.
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.end.notify_waiters();
    }

    /// Completes once the execution has ended.
    pub(crate) async fn ended(&self) {
        loop {
            // Made before the check: an end in between still wakes it.
            let end = self.end.notified();
            if self.ended.load(Ordering::Acquire) {
                return;
            }
            end.await;
        }
    }
}

/// The actor's side of the commands. Dropping it closes them: later sends
/// are refused, and queued commands are dropped (their senders learn the
/// execution ended from their dropped replies).
pub(crate) struct Inbox(Arc<Signals>);

impl Inbox {
    /// The next command (pending until there is one).
    pub(crate) async fn recv(&self) -> Control {
        loop {
            let sent = self.0.command_sent.notified();
            if let Some(command) = self.0.commands().queue.pop_front() {
                return command;
            }
            sent.await;
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        let queued = {
            let mut commands = self.0.commands();
            commands.closed = true;
            std::mem::take(&mut commands.queue)
        };
        // Dropped outside the lock: a command's reply wakes its sender.
        drop(queued);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cancel() -> (
        Control,
        tokio::sync::oneshot::Receiver<Result<(), a2a_core::A2aError>>,
    ) {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let command = Control::Cancel {
            reply,
            call: Box::new(crate::CallContext::new(
                a2a_core::Method::CancelTask,
                crate::ServiceParams::default(),
            )),
            metadata: None,
        };
        (command, answer)
    }

    #[tokio::test(start_paused = true)]
    async fn a_command_sent_before_the_wait_is_received() {
        let (signals, inbox) = Signals::new();
        assert!(signals.send(Control::Relinquish).is_ok());
        let received = tokio::time::timeout(Duration::from_secs(1), inbox.recv()).await;
        assert!(matches!(received, Ok(Control::Relinquish)));
        // Nothing more: the wait goes on.
        let nothing = tokio::time::timeout(Duration::from_secs(1), inbox.recv()).await;
        assert!(nothing.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn a_command_sent_during_the_wait_wakes_it() {
        let (signals, inbox) = Signals::new();
        let waiting =
            tokio::spawn(async move { matches!(inbox.recv().await, Control::Relinquish) });
        tokio::task::yield_now().await;
        assert!(signals.send(Control::Relinquish).is_ok());
        assert!(waiting.await.unwrap());
    }

    #[tokio::test]
    async fn a_closed_inbox_refuses_commands_and_drops_queued_ones() {
        let (signals, inbox) = Signals::new();
        let (queued, answer) = cancel();
        assert!(signals.send(queued).is_ok());
        drop(inbox);
        assert!(
            answer.await.is_err(),
            "the queued command's reply was dropped"
        );
        let (late, _answer) = cancel();
        assert!(signals.send(late).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn everyone_waiting_for_the_end_is_woken_and_later_waits_end_at_once() {
        let (signals, _inbox) = Signals::new();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let signals = signals.clone();
                tokio::spawn(async move { signals.ended().await })
            })
            .collect();
        tokio::task::yield_now().await;
        signals.end();
        for waiter in waiters {
            tokio::time::timeout(Duration::from_secs(1), waiter)
                .await
                .expect("woken")
                .unwrap();
        }
        tokio::time::timeout(Duration::from_secs(1), signals.ended())
            .await
            .expect("already ended");
    }
}
