//! Following a remote task: its stream, and reading or subscribing to it
//! again when a stream ends early.

use std::time::Duration;

use a2a_client::EventStream;
use a2a_core::{ErrorKind, GetTaskRequest, StreamResponse, SubscribeToTaskRequest};
use futures::StreamExt as _;

use super::{FIRST_POLL, Flow, Forward, MAX_FOLLOW_FAILURES};
use crate::remote::error::{RemoteError, RemoteErrorKind};

impl Forward<'_> {
    /// Mirrors a stream's events until the turn ends, the stream ends or it
    /// breaks; after the remote named its task, a stream that ends early or
    /// breaks is followed by asking for the task.
    pub(super) async fn pump(
        &mut self,
        mut stream: EventStream,
        doing: &str,
    ) -> Result<(), RemoteError> {
        // The transports keep to the idle timeout themselves; this bound
        // holds for any transport.
        let idle = self.config().idle_timeout + Duration::from_secs(1);
        loop {
            let next = tokio::select! {
                biased;
                // Canceled, timed out or shutting down: the server settles the
                // local task; the hook or `run` sees to the remote one.
                () = self.ctx.cancellation.cancelled() => return Ok(()),
                next = tokio::time::timeout(idle, stream.next()) => next,
            };
            let err = match next {
                Ok(Some(Ok(event))) => {
                    if self.handle(event).await? == Flow::Done {
                        return Ok(());
                    }
                    continue;
                }
                Ok(Some(Err(err))) => self.client_error(doing, &err),
                Ok(None) => self.link().error(
                    RemoteErrorKind::BadResponse,
                    format!("{doing}: the stream ended before the task's turn did"),
                ),
                Err(_) => self.link().error(
                    RemoteErrorKind::Timeout,
                    format!("{doing}: no event for {idle:?}"),
                ),
            };
            if self.remote.is_none() {
                return Err(err);
            }
            tracing::debug!(agent = %self.link().agent, error = %err, "the remote task's stream ended early; following the task");
            return self.follow().await;
        }
    }

    /// Follows the known remote task: reads it, then subscribes to it (a
    /// streaming remote) or waits a little (polling), until its turn ends.
    /// Only reads count as failures: a subscription that breaks or goes quiet
    /// is followed by a read, and a remote whose subscriptions keep failing
    /// is polled. Gives up after [`MAX_FOLLOW_FAILURES`] failed reads in a
    /// row, or at once when the remote says the task is gone.
    pub(super) async fn follow(&mut self) -> Result<(), RemoteError> {
        let Some(remote) = self.remote.clone() else {
            return Err(self
                .link()
                .error(RemoteErrorKind::BadResponse, "no remote task to follow"));
        };
        let mut failures = 0;
        let mut wait = FIRST_POLL;
        loop {
            let read = GetTaskRequest {
                id: remote.task_id.clone(),
                history_length: Some(0),
                ..GetTaskRequest::default()
            };
            let task = self.bounded(
                "reading the remote task",
                self.connected.client.get_task(read, None),
            );
            match task.await {
                Ok(task) => {
                    failures = 0;
                    let before = self.status.clone();
                    if self.handle(StreamResponse::Task(task)).await? == Flow::Done {
                        return Ok(());
                    }
                    if self.status != before {
                        wait = FIRST_POLL;
                    }
                    if self.streams() && self.subscribe(&remote.task_id).await? == Flow::Done {
                        return Ok(());
                    }
                }
                Err(err) if gone(&err) => return Err(err),
                Err(err) => {
                    failures += 1;
                    if failures >= MAX_FOLLOW_FAILURES {
                        return Err(err);
                    }
                    tracing::debug!(agent = %self.link().agent, error = %err, failures, "reading the remote task failed; trying again");
                }
            }
            tokio::select! {
                biased;
                () = self.ctx.cancellation.cancelled() => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(self.config().max_poll_interval);
        }
    }

    /// One subscription to the remote task, until the turn ends or the
    /// stream does. A subscription that cannot be made, breaks or goes quiet
    /// is `Continue` (the caller reads the task again); only a failure to
    /// mirror an event is an error.
    async fn subscribe(&mut self, remote_id: &str) -> Result<Flow, RemoteError> {
        let request = SubscribeToTaskRequest {
            id: remote_id.to_owned(),
            ..SubscribeToTaskRequest::default()
        };
        let opened = self.bounded(
            "subscribing to the remote task",
            self.connected.client.subscribe_to_task(request, None),
        );
        let mut stream = match opened.await {
            Ok(stream) => stream,
            Err(err) => {
                tracing::debug!(agent = %self.link().agent, error = %err, "no subscription to the remote task; polling it");
                return Ok(Flow::Continue);
            }
        };
        let idle = self.config().idle_timeout + Duration::from_secs(1);
        loop {
            let next = tokio::select! {
                biased;
                () = self.ctx.cancellation.cancelled() => return Ok(Flow::Done),
                next = tokio::time::timeout(idle, stream.next()) => next,
            };
            match next {
                Ok(Some(Ok(event))) => {
                    if self.handle(event).await? == Flow::Done {
                        return Ok(Flow::Done);
                    }
                }
                Ok(Some(Err(err))) => {
                    tracing::debug!(agent = %self.link().agent, error = %err, "the subscription to the remote task ended");
                    return Ok(Flow::Continue);
                }
                Ok(None) | Err(_) => return Ok(Flow::Continue),
            }
        }
    }
}

/// Whether the remote said its task does not exist (any more).
fn gone(err: &RemoteError) -> bool {
    err.protocol()
        .is_some_and(|p| p.kind() == ErrorKind::TaskNotFound)
}
