//! Who calls before what they say, on the hub's API (issue 31, finding 1):
//! a caller the gateway refuses is answered 401 before a byte of its body
//! is read, and a body that trickles in is cut by the read timeout.
//!
//! The requests are written by hand on a socket, so that a body can be
//! announced and never (or slowly) sent.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use a2a_server::auth::{BearerAuth, Principal};
use support::{general_and_ops, team, world_built};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Announces a JSON body of `length` bytes to `path` and sends `sent` of it.
async fn announce(url: &str, path: &str, extra: &str, length: usize, sent: &[u8]) -> TcpStream {
    let authority = url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(authority).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n{extra}\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream
}

/// The status line and what follows, as far as the first read gets.
async fn first_answer(stream: &mut TcpStream, within: Duration) -> String {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(within, stream.read(&mut buf))
        .await
        .expect("no answer before the deadline: the hub waited for the body")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_body_is_refused_before_it_is_read() {
    let world = world_built(general_and_ops(), team(), None, HashMap::new(), |gateway| {
        gateway.authentication(BearerAuth::new().token("t", Principal::new("ann")))
    })
    .await;
    let url = world.serve().await;
    // Under the JSON extractor's 2 MB limit: a hub reading bodies first
    // waits for all of it.
    let announced = 1_500_000;
    for path in [
        "/hub/api/messages",
        "/hub/api/collaborate",
        "/hub/api/threads/x/resume",
    ] {
        for credentials in ["", "Authorization: Bearer wrong\r\n"] {
            let mut stream = announce(&url, path, credentials, announced, b"{").await;
            let answer = first_answer(&mut stream, Duration::from_secs(10)).await;
            assert!(answer.starts_with("HTTP/1.1 401"), "{path}: {answer}");
            assert!(
                answer
                    .to_ascii_lowercase()
                    .contains("www-authenticate: bearer"),
                "{path}: {answer}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_body_that_trickles_in_is_cut_by_the_read_timeout() {
    let world = world_built(general_and_ops(), team(), None, HashMap::new(), |g| g).await;
    let url = world.serve().await;
    let mut stream = announce(&url, "/hub/api/messages", "", 1000, b"{").await;
    // The clock is paused: it jumps to the next timer whenever nothing else
    // can run, so the hub's 30 s read timeout passes at once, and the
    // deadline here only if the hub has none.
    let answer = first_answer(&mut stream, Duration::from_secs(600)).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("not received within 30 s"), "{answer}");
}

#[tokio::test(start_paused = true)]
async fn the_api_holds_bodies_to_the_config_it_is_served_with() {
    let world = world_built(general_and_ops(), team(), None, HashMap::new(), |g| g).await;
    let mut config = a2a_server::http::HttpConfig::default();
    config.body_budget = a2a_server::http::BodyBudget::new(100);
    config.body_read_timeout = Duration::from_secs(2);
    let app = a2a_hub::http::router_with_config(world.hub.clone(), world.gateway.clone(), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    // A body over this config's budget (not the default's 256 MiB) is
    // refused before it is read.
    let mut stream = announce(&url, "/hub/api/messages", "", 1000, b"{").await;
    let answer = first_answer(&mut stream, Duration::from_secs(600)).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("retry-after"),
        "{answer}"
    );

    // A body within it that trickles is cut at this config's 2 s, well
    // before the default's 30 s.
    let mut stream = announce(&url, "/hub/api/messages", "", 50, b"{").await;
    let started = tokio::time::Instant::now();
    let answer = first_answer(&mut stream, Duration::from_secs(600)).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("not received within 2 s"), "{answer}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(2) && waited < Duration::from_secs(30),
        "cut after {waited:?}"
    );
}
