//! The client against hostile servers: endless response bodies, an endless
//! card, and a stream whose headers never come.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::time::Duration;

use a2a_client::{
    CardResolver, Client, ClientErrorKind, HttpSettings, JsonRpcTransport, RestTransport,
};
use a2a_core::{AgentInterface, Message, SendMessageRequest, binding};
use axum::body::Body;
use axum::routing::{get, post};
use futures::stream;

/// A body of `chunks` chunks of 1 MiB, with no declared length.
fn endless(chunks: usize) -> Body {
    let chunk = bytes::Bytes::from(vec![b' '; 1024 * 1024]);
    Body::from_stream(stream::iter(
        (0..chunks).map(move |_| Ok::<_, Infallible>(chunk.clone())),
    ))
}

async fn hostile() -> String {
    let app = axum::Router::new()
        .route("/", post(|| async { endless(64) }))
        .route("/tasks/{id}", get(|| async { endless(64) }))
        .route(
            "/.well-known/agent-card.json",
            get(|| async { endless(16) }),
        )
        .route(
            "/slow/message:stream",
            post(|| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                "never"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn settings(timeout: Duration) -> HttpSettings {
    HttpSettings {
        timeout,
        max_response_size: 8 * 1024 * 1024,
        ..HttpSettings::default()
    }
}

#[tokio::test]
async fn response_bodies_past_the_limit_are_refused_not_buffered() {
    let url = hostile().await;
    let jsonrpc =
        JsonRpcTransport::new(format!("{url}/")).with_settings(settings(Duration::from_secs(30)));
    let client = Client::from_transport(
        jsonrpc,
        AgentInterface::new(format!("{url}/"), binding::JSONRPC),
    );
    let err = client
        .send_message(SendMessageRequest::new(Message::user_text("hi")), None)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("larger than 8388608 bytes"),
        "{err}"
    );

    let rest = RestTransport::new(url.clone()).with_settings(settings(Duration::from_secs(30)));
    let client = Client::from_transport(rest, AgentInterface::new(url.clone(), binding::HTTP_JSON));
    let err = client
        .get_task(
            a2a_core::GetTaskRequest {
                id: "x".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");

    let err = CardResolver::new().resolve(&url).await.unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("larger than {}", a2a_client::MAX_CARD_SIZE)),
        "{err}"
    );
}

#[tokio::test]
async fn a_stream_whose_headers_never_come_times_out() {
    let url = hostile().await;
    let base = format!("{url}/slow");
    let rest = RestTransport::new(base.clone()).with_settings(settings(Duration::from_millis(300)));
    let client = Client::from_transport(rest, AgentInterface::new(base, binding::HTTP_JSON));
    let started = std::time::Instant::now();
    let err = client
        .send_streaming_message(SendMessageRequest::new(Message::user_text("hi")), None)
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind(), ClientErrorKind::Timeout, "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
}
