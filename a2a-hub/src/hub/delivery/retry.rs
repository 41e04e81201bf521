//! Sending a message to an agent, retried by the class of each failure.

use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientError, ClientErrorKind};
use a2a_core::{ErrorKind, SendMessageRequest, SendMessageResponse};

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
    let mut retries = Retries::default();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let (connecting, err) = match send_once(&connect, request, policy).await {
            Ok(sent) => return Ok(sent),
            Err(failed) => failed,
        };
        let class = classify(&err);
        let wait = retries.wait(class, &err, policy);
        let reason = match connecting {
            true => format!("cannot reach {endpoint}: {err}"),
            false => describe(&err),
        };
        let Some(wait) = wait else {
            return Err(Undelivered {
                class,
                attempts: attempt,
                reason,
            });
        };
        on_retry(&Retry {
            class,
            wait,
            attempt,
            reason,
        });
        tokio::time::sleep(wait).await;
    }
}

/// One attempt: connect and send. A failure says whether connecting failed.
async fn send_once<F, Fut>(
    connect: &F,
    request: &SendMessageRequest,
    policy: &DeliveryPolicy,
) -> Result<(Client, SendMessageResponse), (bool, ClientError)>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Client, ClientError>>,
{
    let options = CallOptions {
        timeout: Some(policy.timeout),
        ..CallOptions::default()
    };
    // The client's own timeout covers the transport; this one covers an
    // agent in this process that never answers, and connecting.
    let attempt = tokio::time::timeout(policy.timeout, async {
        let client = connect().await.map_err(|err| (true, err))?;
        match client.send_message(request.clone(), Some(&options)).await {
            Ok(response) => Ok((client, response)),
            Err(err) => Err((false, err)),
        }
    });
    attempt.await.unwrap_or_else(|_| {
        let message = format!("no answer within {:?}", policy.timeout);
        Err((false, ClientError::new(ClientErrorKind::Timeout, message)))
    })
}

/// The retries made so far, by class.
#[derive(Debug, Default)]
struct Retries {
    timeouts: u32,
    server_errors: u32,
    busy: u32,
}

impl Retries {
    /// The wait before retrying a failure of `class`, or `None` when it is
    /// not retried (any more).
    fn wait(
        &mut self,
        class: FailureClass,
        err: &ClientError,
        policy: &DeliveryPolicy,
    ) -> Option<Duration> {
        match class {
            FailureClass::Timeout if self.timeouts < policy.timeout_retries => {
                self.timeouts += 1;
                Some(Duration::ZERO)
            }
            FailureClass::ServerError if self.server_errors < policy.server_error_retries => {
                let wait = policy
                    .backoff
                    .saturating_mul(1 << self.server_errors.min(16));
                self.server_errors += 1;
                Some(wait)
            }
            FailureClass::Busy if self.busy < policy.busy_retries => {
                self.busy += 1;
                let asked = err.retry_after().unwrap_or(policy.busy_default_wait);
                Some(asked.min(policy.max_retry_after))
            }
            _ => None,
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
