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
    let app = axum::Router::new()
        .route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap| {
                let sink = sink.clone();
                async move {
                    sink.lock().unwrap().push(headers);
                    StatusCode::OK
                }
            }),
        )
        // A move within the same origin.
        .route(
            "/moved",
            axum::routing::post(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "/hook")],
                )
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
async fn credentials_follow_same_origin_redirects_only() {
    let (port, seen) = receiver().await;
    let sender = sender(AddressPolicy::allow_all());

    // Same origin (a path moved on the receiver itself): credentials kept.
    sender
        .send(&config(format!("http://127.0.0.1:{port}/moved")), &event())
        .await
        .unwrap();
    // Same host, another port: another party, credentials stripped.
    let other_port = redirector(format!("http://127.0.0.1:{port}/hook")).await;
    sender
        .send(
            &config(format!("http://127.0.0.1:{other_port}/hook")),
            &event(),
        )
        .await
        .unwrap();
    // Another host name (127.0.0.1 -> localhost): credentials stripped.
    let cross = redirector(format!("http://localhost:{port}/hook")).await;
    sender
        .send(&config(format!("http://127.0.0.1:{cross}/hook")), &event())
        .await
        .unwrap();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0]["authorization"], "Bearer secret");
    assert_eq!(seen[0]["a2a-notification-token"], "tok");
    for stripped in &seen[1..] {
        assert!(!stripped.contains_key("authorization"));
        assert!(!stripped.contains_key("a2a-notification-token"));
        assert!(!stripped.contains_key("x-a2a-notification-token"));
    }
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
    // The same name written so the URL check cannot recognise it (a trailing
    // dot): the resolver still sees only loopback and refuses it.
    let dotted = guarded
        .send(&config(format!("http://localhost.:{port}/hook")), &event())
        .await;
    assert!(dotted.is_err(), "{dotted:?}");
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

/// Counts the connections made to it (a proxy the sender must not use).
async fn proxy_trap() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            drop(stream);
        }
    });
    (port, connections)
}

const CHILD_PORT: &str = "A2A_TEST_PUSH_RECEIVER_PORT";

#[tokio::test]
async fn proxy_environment_variables_are_ignored() {
    let (port, seen) = receiver().await;
    let (proxy, connections) = proxy_trap().await;
    let proxy_url = format!("http://127.0.0.1:{proxy}");
    // The environment is the process's: the sending happens in a child run of
    // this same test binary, started with the proxy variables set.
    let child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "push_from_a_proxied_environment", "--ignored"])
        .env(CHILD_PORT, port.to_string())
        .env("HTTP_PROXY", &proxy_url)
        .env("http_proxy", &proxy_url)
        .env("HTTPS_PROXY", &proxy_url)
        .env("ALL_PROXY", &proxy_url)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .await
        .unwrap();
    assert!(
        child.status.success(),
        "{}",
        String::from_utf8_lossy(&child.stdout)
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the webhook was reached directly"
    );
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
#[ignore = "the child half of proxy_environment_variables_are_ignored"]
async fn push_from_a_proxied_environment() {
    let Ok(port) = std::env::var(CHILD_PORT) else {
        return;
    };
    sender(AddressPolicy::allow_all())
        .send(&config(format!("http://127.0.0.1:{port}/hook")), &event())
        .await
        .unwrap();
}
