//! Following a remote task with the client's [`TaskFollower`]: its stream,
//! and reading or subscribing to it again when a stream ends early.

use std::time::Duration;

use a2a_client::{EventStream, FollowError, FollowOptions, FollowUpdate, StreamCut, TaskFollower};
use a2a_core::StreamResponse;

use super::{FIRST_POLL, Flow, Forward, MAX_FOLLOW_FAILURES};
use crate::remote::error::{RemoteError, RemoteErrorKind};

impl Forward<'_> {
    /// Mirrors a stream's events until the turn ends, the stream ends or it
    /// breaks; after the remote named its task, a stream that ends early or
    /// breaks is followed by asking for the task.
    pub(super) async fn pump(
        &mut self,
        stream: EventStream,
        doing: &str,
    ) -> Result<(), RemoteError> {
        let client = self.connected.client.clone();
        let known = self.remote.as_ref().map(|r| r.task_id.clone());
        let follower = self.follower(TaskFollower::on_stream(&client, stream, known));
        self.mirror(follower, doing).await
    }

    /// Follows the known remote task: reads it, then subscribes to it (a
    /// streaming remote) or waits a little (polling), until its turn ends.
    /// Only reads count as failures: a subscription that breaks or goes quiet
    /// is followed by a read, and a remote whose subscriptions keep failing
    /// is polled. Gives up after [`MAX_FOLLOW_FAILURES`] failed reads in a
    /// row, or at once when the remote says the task is gone.
    pub(super) async fn follow(&mut self) -> Result<(), RemoteError> {
        let Some(remote) = &self.remote else {
            return Err(self
                .link()
                .error(RemoteErrorKind::BadResponse, "no remote task to follow"));
        };
        let client = self.connected.client.clone();
        let follower = self.follower(TaskFollower::reading(&client, remote.task_id.clone()));
        self.mirror(follower, "reading the remote task").await
    }

    /// The remote's limits on `follower`; cancellation (a cancel, a timeout,
    /// the server shutting down) stops it, and the server settles the local
    /// task while the hook or `run` sees to the remote one.
    fn follower<'c>(&self, follower: TaskFollower<'c>) -> TaskFollower<'c> {
        let config = self.config();
        let options = FollowOptions {
            resubscribe: self.streams(),
            first_pause: FIRST_POLL,
            longest_pause: config.max_poll_interval,
            give_up_after: MAX_FOLLOW_FAILURES,
            history_length: Some(0),
            call_timeout: Some(config.request_timeout),
            // The transports keep to the idle timeout themselves; this bound
            // holds for any transport.
            idle_timeout: Some(config.idle_timeout + Duration::from_secs(1)),
            ..FollowOptions::default()
        };
        follower
            .options(options)
            .stop_when(self.ctx.cancellation.clone().cancelled_owned())
    }

    /// Mirrors what `follower` sees until the remote's turn ends. A stream
    /// `doing` something that is cut before it named a task fails; a read
    /// that shows the task moved makes the next poll come sooner.
    async fn mirror(
        &mut self,
        mut follower: TaskFollower<'_>,
        doing: &str,
    ) -> Result<(), RemoteError> {
        loop {
            let update = match follower.next().await {
                Ok(update) => update,
                Err(FollowError::Stopped) => return Ok(()),
                Err(FollowError::Cut(cut)) => return Err(self.cut(doing, cut)),
                Err(FollowError::Failed(err)) => {
                    return Err(self.client_error("reading the remote task", &err));
                }
                Err(err) => {
                    let message = format!("{doing}: {err}");
                    return Err(self.link().error(RemoteErrorKind::BadResponse, message));
                }
            };
            match update {
                FollowUpdate::Event(event) => {
                    if self.handle(event).await? == Flow::Done {
                        return Ok(());
                    }
                }
                FollowUpdate::Task(task) => {
                    let before = self.status.clone();
                    if self.handle(StreamResponse::Task(task)).await? == Flow::Done {
                        return Ok(());
                    }
                    if self.status != before {
                        follower.poll_sooner();
                    }
                }
            }
        }
    }

    /// The failure of a stream `doing` something that was cut before the
    /// remote named its task.
    fn cut(&self, doing: &str, cut: StreamCut) -> RemoteError {
        match cut {
            StreamCut::Broke(err) => self.client_error(doing, &err),
            StreamCut::Silent(idle) => self.link().error(
                RemoteErrorKind::Timeout,
                format!("{doing}: no event for {idle:?}"),
            ),
            _ => self.link().error(
                RemoteErrorKind::BadResponse,
                format!("{doing}: the stream ended before the task's turn did"),
            ),
        }
    }
}
