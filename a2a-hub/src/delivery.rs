//! Delivering a message to an agent over A2A: retried by the class of the
//! failure, then followed until the agent answers, however late.

use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientError, ClientErrorKind};
use a2a_core::{
    ErrorKind, GetTaskRequest, SendMessageRequest, SendMessageResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState, TaskStatus,
};
use futures::StreamExt as _;
use tokio_util::sync::CancellationToken;

use crate::config::DeliveryPolicy;

/// How a failed attempt is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// Refused for good (401, 403, 404, a protocol error about the request):
    /// never retried, escalated.
    Refused,
    /// Nobody answered at that address: the agent is offline. Fails at
    /// once, escalated.
    Offline,
    /// Busy (429): tried again after the wait it asked for.
    Busy,
    /// A server error (5xx): tried again with exponential backoff.
    ServerError,
    /// No answer in time: tried again.
    Timeout,
}

/// The class of a client failure.
pub fn classify(err: &ClientError) -> FailureClass {
    let status = err.status();
    match err.kind() {
        ClientErrorKind::Timeout => FailureClass::Timeout,
        ClientErrorKind::Connection => FailureClass::Offline,
        _ if status == Some(429) || err.protocol_kind() == Some(ErrorKind::Busy) => {
            FailureClass::Busy
        }
        _ if status.is_some_and(|s| s >= 500) => FailureClass::ServerError,
        ClientErrorKind::Protocol if err.protocol_kind() == Some(ErrorKind::Internal) => {
            FailureClass::ServerError
        }
        _ => FailureClass::Refused,
    }
}

/// A delivery that did not happen.
#[derive(Debug, Clone)]
pub struct Undelivered {
    /// The class of the last failure.
    pub class: FailureClass,
    /// Attempts made.
    pub attempts: u32,
    /// What the last attempt answered.
    pub reason: String,
}

impl std::fmt::Display for Undelivered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.class {
            FailureClass::Refused => "refused the message",
            FailureClass::Offline => "is offline",
            FailureClass::Busy => "stayed busy",
            FailureClass::ServerError => "kept failing",
            FailureClass::Timeout => "did not answer in time",
        };
        let attempts = match self.attempts {
            1 => "1 attempt".to_owned(),
            n => format!("{n} attempts"),
        };
        write!(f, "{what} ({attempts}; last: {})", self.reason)
    }
}

/// A failed attempt about to be retried, for the log.
#[derive(Debug, Clone)]
pub struct Retry {
    /// The class of the failure.
    pub class: FailureClass,
    /// The wait before the next attempt.
    pub wait: Duration,
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// What it answered.
    pub reason: String,
}

/// Sends `request` under `policy` to the client `connect` gives (the agent
/// at `endpoint`), and returns that client with the agent's answer;
/// `on_retry` hears of each retry before its wait. Connecting is part of
/// each attempt: an agent whose card answers 5xx, 429 or nothing is retried
/// like one whose endpoint does. The message keeps its id across attempts,
/// so an agent that got a lost answer's message can tell.
pub async fn send_with_retries<F, Fut>(
    endpoint: &str,
    connect: F,
    request: &SendMessageRequest,
    policy: &DeliveryPolicy,
    mut on_retry: impl FnMut(&Retry),
) -> Result<(Client, SendMessageResponse), Undelivered>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Client, ClientError>>,
{
    let options = CallOptions {
        timeout: Some(policy.timeout),
        ..CallOptions::default()
    };
    let (mut timeouts, mut server_errors, mut busy) = (0u32, 0u32, 0u32);
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        // The client's own timeout covers the transport; this one covers an
        // agent in this process that never answers, and connecting.
        let result = tokio::time::timeout(policy.timeout, async {
            let client = connect().await.map_err(|err| (true, err))?;
            match client.send_message(request.clone(), Some(&options)).await {
                Ok(response) => Ok((client, response)),
                Err(err) => Err((false, err)),
            }
        })
        .await;
        let (connecting, err) = match result {
            Ok(Ok(sent)) => return Ok(sent),
            Ok(Err(failed)) => failed,
            Err(_) => (
                false,
                ClientError::new(
                    ClientErrorKind::Timeout,
                    format!("no answer within {:?}", policy.timeout),
                ),
            ),
        };
        let class = classify(&err);
        let wait = match class {
            FailureClass::Timeout if timeouts < policy.timeout_retries => {
                timeouts += 1;
                Some(Duration::ZERO)
            }
            FailureClass::ServerError if server_errors < policy.server_error_retries => {
                let wait = policy.backoff.saturating_mul(1 << server_errors.min(16));
                server_errors += 1;
                Some(wait)
            }
            FailureClass::Busy if busy < policy.busy_retries => {
                busy += 1;
                Some(
                    err.retry_after()
                        .unwrap_or(policy.busy_default_wait)
                        .min(policy.max_retry_after),
                )
            }
            _ => None,
        };
        let reason = match connecting {
            true => format!("cannot reach {endpoint}: {err}"),
            false => describe(&err),
        };
        match wait {
            Some(wait) => {
                on_retry(&Retry {
                    class,
                    wait,
                    attempt,
                    reason,
                });
                tokio::time::sleep(wait).await;
            }
            None => {
                return Err(Undelivered {
                    class,
                    attempts: attempt,
                    reason,
                });
            }
        }
    }
}

fn describe(err: &ClientError) -> String {
    match err.status() {
        Some(status) if !err.to_string().contains(&status.to_string()) => {
            format!("HTTP {status}: {err}")
        }
        _ => err.to_string(),
    }
}

/// Whether a task in `state` has said its last word for now: ended, or
/// waiting for its caller.
pub(crate) fn settled(state: TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// Whether `status` settles a task whose earlier question was the status
/// message `stale` (a task continued after asking for input shows its old
/// question until the agent moves on; that is no answer).
pub(crate) fn settles(status: &TaskStatus, stale: Option<&str>) -> bool {
    settled(status.state)
        && (stale.is_none() || status.message.as_ref().map(|m| m.message_id.as_str()) != stale)
}

/// Follows task `task_id` until it settles (past the question `stale`,
/// when it is continued after one) and returns it; `None` when
/// `stop` fires first or the task cannot be read any more. A stream that
/// ends or breaks is followed by a read of the task and a new
/// subscription, so an answer that comes minutes later still arrives.
pub(crate) async fn follow(
    client: &Client,
    task_id: &str,
    stale: Option<&str>,
    stop: &CancellationToken,
) -> Option<Task> {
    let mut pause = Duration::from_millis(50);
    let mut failures = 0u32;
    loop {
        let subscribed = client
            .subscribe_to_task(
                SubscribeToTaskRequest {
                    id: task_id.to_owned(),
                    ..SubscribeToTaskRequest::default()
                },
                None,
            )
            .await;
        if let Ok(mut events) = subscribed {
            loop {
                let event = tokio::select! {
                    () = stop.cancelled() => return None,
                    event = events.next() => event,
                };
                match event {
                    Some(Ok(event)) if event_settles(&event, stale) => break,
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                }
            }
        }
        let read = tokio::select! {
            () = stop.cancelled() => return None,
            read = client.get_task(GetTaskRequest { id: task_id.to_owned(), ..GetTaskRequest::default() }, None) => read,
        };
        match read {
            Ok(task) if settles(&task.status, stale) => return Some(task),
            Ok(_) => failures = 0,
            Err(err) if err.protocol_kind() == Some(ErrorKind::TaskNotFound) => return None,
            Err(_) => {
                failures += 1;
                if failures > 20 {
                    return None;
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return None,
            () = tokio::time::sleep(pause) => {}
        }
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

fn event_settles(event: &StreamResponse, stale: Option<&str>) -> bool {
    match event {
        StreamResponse::Task(task) => settles(&task.status, stale),
        StreamResponse::StatusUpdate(update) => settles(&update.status, stale),
        _ => false,
    }
}

/// What an agent said, as text: a direct message's, else the settled
/// task's status message, else its artifacts'.
pub(crate) fn answer_text(response: &SendMessageResponse) -> Option<String> {
    match response {
        SendMessageResponse::Message(message) => non_empty(message.text()),
        SendMessageResponse::Task(task) => task_text(task),
    }
}

/// The text a settled task answers with.
pub(crate) fn task_text(task: &Task) -> Option<String> {
    if let Some(text) = task
        .status
        .message
        .as_ref()
        .and_then(|m| non_empty(m.text()))
    {
        return Some(text);
    }
    let artifacts: Vec<String> = task
        .artifacts
        .iter()
        .flat_map(|a| {
            a.parts
                .iter()
                .filter_map(|p| p.as_text().map(str::to_owned))
        })
        .collect();
    non_empty(artifacts.join("\n"))
}

fn non_empty(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::A2aError;

    fn http(status: u16) -> ClientError {
        ClientError::new(ClientErrorKind::Http, format!("HTTP {status}")).with_http_status(status)
    }

    #[test]
    fn failures_are_classed_by_what_the_agent_answered() {
        assert_eq!(classify(&http(403)), FailureClass::Refused);
        assert_eq!(classify(&http(404)), FailureClass::Refused);
        assert_eq!(classify(&http(401)), FailureClass::Refused);
        assert_eq!(classify(&http(429)), FailureClass::Busy);
        assert_eq!(classify(&http(500)), FailureClass::ServerError);
        assert_eq!(classify(&http(503)), FailureClass::ServerError);
        let refused = ClientError::new(ClientErrorKind::Connection, "connection refused");
        assert_eq!(classify(&refused), FailureClass::Offline);
        let slow = ClientError::new(ClientErrorKind::Timeout, "slow");
        assert_eq!(classify(&slow), FailureClass::Timeout);
        let invalid = ClientError::from(A2aError::invalid_params("no"));
        assert_eq!(classify(&invalid), FailureClass::Refused);
        let busy = ClientError::from(A2aError::busy("later", Duration::from_secs(3)));
        assert_eq!(classify(&busy), FailureClass::Busy);
    }
}
