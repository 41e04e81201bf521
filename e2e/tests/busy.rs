//! A server at a limit answers "busy, come back in N seconds" on every
//! binding, and the client waits that long before trying again.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2a_client::RetryPolicy;
use a2a_core::{A2aError, ErrorKind, GetTaskRequest};
use a2a_server::http::HttpConfig;
use a2a_server::{CallContext, CallInterceptor, Request, Response};
use support::*;

/// Answers the first `busy_for` calls with a busy error asking for one second.
struct AtLimit {
    busy_for: usize,
    calls: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl CallInterceptor for AtLimit {
    async fn before(
        &self,
        _ctx: &mut CallContext,
        _request: &mut Request,
    ) -> Result<Option<Response>, A2aError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < self.busy_for {
            return Err(A2aError::busy(
                "at the execution limit",
                Duration::from_secs(1),
            ));
        }
        Ok(None)
    }
}

async fn busy_server(busy_for: usize) -> (e2e::RunningSut, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        card,
        |b| b,
        move |service| {
            service.with_interceptor(AtLimit {
                busy_for,
                calls: counted,
            })
        },
        HttpConfig::default(),
    )
    .await
    .unwrap();
    (server, calls)
}

fn get() -> GetTaskRequest {
    GetTaskRequest {
        id: "t".into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_answers_say_when_to_come_back_on_every_binding() {
    let (server, _) = busy_server(usize::MAX).await;
    for binding in BINDINGS {
        let client = a2a_grpc::register(a2a_client::ClientBuilder::new())
            .prefer([binding])
            .retry(RetryPolicy::none())
            .build(card(server.addr))
            .unwrap();
        let err = client.get_task(get(), None).await.unwrap_err();
        assert_eq!(err.protocol_kind(), Some(ErrorKind::Busy), "{binding}");
        assert!(err.is_retryable(), "{binding}");
        assert_eq!(err.retry_after(), Some(Duration::from_secs(1)), "{binding}");
        assert_eq!(
            RetryPolicy::default().delay(0, &err),
            Some(Duration::from_secs(1)),
            "{binding}"
        );
    }
    let http = reqwest::Client::new();
    let rest = http
        .get(format!("http://{}/tasks/t", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 429);
    assert_eq!(rest.headers()["retry-after"], "1");
    let rpc = http
        .post(format!("http://{}/", server.addr))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(rpc.headers()["retry-after"], "1");
    let body: serde_json::Value = rpc.json().await.unwrap();
    assert_eq!(body["error"]["code"], -31429);
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let status = a2a_grpc::pb::a2a_service_client::A2aServiceClient::new(channel)
        .get_task(a2a_grpc::pb::GetTaskRequest {
            id: "t".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_waits_as_asked_and_then_gets_through() {
    for binding in BINDINGS {
        let (server, calls) = busy_server(1).await;
        let client = a2a_grpc::register(a2a_client::ClientBuilder::new())
            .prefer([binding])
            .retry(RetryPolicy {
                base_delay: Duration::from_millis(1),
                jitter: 0.0,
                ..RetryPolicy::default()
            })
            .build(card(server.addr))
            .unwrap();
        let started = Instant::now();
        // Through the busy answer to the real one: the task does not exist.
        let err = client.get_task(get(), None).await.unwrap_err();
        assert_eq!(
            err.protocol_kind(),
            Some(ErrorKind::TaskNotFound),
            "{binding}"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2, "{binding}");
        // The server's second, not the policy's millisecond.
        assert!(started.elapsed() >= Duration::from_secs(1), "{binding}");
    }
}
