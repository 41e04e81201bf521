//! The push sender against real local webhooks: headers, redirects, the SSRF guard.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{AuthenticationInfo, StreamResponse, Task, TaskPushNotificationConfig, TaskState};
use a2a_server::push::{
    AddressPolicy, HttpPushSender, HttpPushSenderConfig, PushError, PushSender,
};
use axum::http::{HeaderMap, StatusCode, header};

type Seen = Arc<Mutex<Vec<HeaderMap>>>;

/// A receiver that records headers and answers 200.
async fn receiver() -> (u16, Seen) {
    let seen: Seen = Arc::default();
    let sink = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(headers);
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, seen)
}

/// A server that redirects every POST to `target`.
async fn redirector(target: String) -> u16 {
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let target = target.clone();
            async move { (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, target)]) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

fn config(url: String) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        token: "tok".into(),
        authentication: Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "secret".into(),
        }),
        ..TaskPushNotificationConfig::new("t", url)
    }
}

fn event() -> StreamResponse {
    Task::new("t", "c", TaskState::Completed).into()
}

fn sender(policy: AddressPolicy) -> HttpPushSender {
    HttpPushSender::new(HttpPushSenderConfig {
        policy,
        attempts: 1,
        timeout: Duration::from_secs(5),
        ..HttpPushSenderConfig::default()
    })
}

#[tokio::test]
async fn credentials_follow_same_host_redirects_only() {
    let (port, seen) = receiver().await;
    let sender = sender(AddressPolicy::allow_all());

    // Same host (127.0.0.1 -> 127.0.0.1): credentials kept.
    let same = redirector(format!("http://127.0.0.1:{port}/hook")).await;
    sender
        .send(&config(format!("http://127.0.0.1:{same}/hook")), &event())
        .await
        .unwrap();
    // Another host name (127.0.0.1 -> localhost): credentials stripped.
    let cross = redirector(format!("http://localhost:{port}/hook")).await;
    sender
        .send(&config(format!("http://127.0.0.1:{cross}/hook")), &event())
        .await
        .unwrap();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["authorization"], "Bearer secret");
    assert_eq!(seen[0]["a2a-notification-token"], "tok");
    assert!(!seen[1].contains_key("authorization"));
    assert!(!seen[1].contains_key("a2a-notification-token"));
    assert!(!seen[1].contains_key("x-a2a-notification-token"));
}

#[tokio::test]
async fn private_targets_are_refused_by_default_even_through_redirects_or_dns() {
    let (port, seen) = receiver().await;
    let guarded = sender(AddressPolicy::public_only());
    let direct = guarded
        .send(&config(format!("http://127.0.0.1:{port}/hook")), &event())
        .await;
    assert!(matches!(direct, Err(PushError::Refused(_))), "{direct:?}");
    // A name that resolves to loopback is refused when connecting.
    let by_name = guarded
        .send(&config(format!("http://localhost:{port}/hook")), &event())
        .await;
    assert!(by_name.is_err());
    // A public-looking first hop cannot bounce the request to a private address.
    let trusted = sender(AddressPolicy::public_only().allow("127.0.0.1/32".parse().unwrap()));
    let bounce = redirector("http://10.0.0.1/hook".into()).await;
    let redirected = trusted
        .send(&config(format!("http://127.0.0.1:{bounce}/hook")), &event())
        .await;
    assert!(
        matches!(redirected, Err(PushError::Refused(_))),
        "{redirected:?}"
    );
    assert!(seen.lock().unwrap().is_empty());
}
