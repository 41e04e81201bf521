//! Connection limits of `a2a_server::http::serve_with`: slowloris headers,
//! idle connections, a trickled body, and the open-connection cap, against
//! raw TCP clients.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use a2a_server::http::{HttpConfig, ServeConfig};
use e2e::ScriptedAgent;
use support::Served;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn serve(config: ServeConfig, http: HttpConfig) -> Served {
    support::serve(support::card, config, http).await
}

fn config() -> ServeConfig {
    let mut config = ServeConfig::default();
    config.header_read_timeout = Duration::from_millis(300);
    config.grace = Duration::from_millis(100);
    config
}

/// Reads until the server closes the connection (or `limit` passes: then the
/// test fails); returns what was read and how long it took.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(limit, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => all.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the server kept the connection open for {limit:?}"),
        }
    }
    (
        String::from_utf8_lossy(&all).into_owned(),
        started.elapsed(),
    )
}

const CARD: &str = "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n";

#[tokio::test]
async fn a_client_that_dribbles_its_headers_is_cut_off() {
    let served = serve(config(), HttpConfig::default()).await;
    let mut slow = TcpStream::connect(served.addr).await.unwrap();
    // One byte at a time, each well inside any per-read timeout, never done.
    let dribble = async {
        for byte in b"GET /.well-known/agent-card.json HTTP/1.1\r\nX-Slow: "
            .iter()
            .cycle()
        {
            if slow.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let cut = tokio::time::timeout(Duration::from_secs(5), dribble).await;
    assert!(
        cut.is_ok(),
        "the server was still reading headers after 5 s"
    );
    // Meanwhile a well-behaved client is served.
    let mut fine = TcpStream::connect(served.addr).await.unwrap();
    fine.write_all(CARD.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    fine.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    served.stop().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed() {
    let served = serve(config(), HttpConfig::default()).await;
    let mut idle = TcpStream::connect(served.addr).await.unwrap();
    idle.write_all(CARD.as_bytes()).await.unwrap();
    // The answer, then nothing more: the connection waits for a next request
    // that never comes, and the server closes it.
    let (answer, took) = read_until_closed(&mut idle, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(took < Duration::from_secs(5));
    served.stop().await;
}

#[tokio::test]
async fn a_trickled_body_is_refused_when_it_takes_too_long() {
    let mut http = HttpConfig::default();
    http.body_read_timeout = Duration::from_millis(300);
    let served = serve(ServeConfig::default(), http).await;
    let (mut read, mut write) = TcpStream::connect(served.addr).await.unwrap().into_split();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#;
    let head = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    write.write_all(head.as_bytes()).await.unwrap();
    // 50 ms a byte: the body would take over 3 s; the server answers first.
    let trickle = async {
        for byte in body.as_bytes() {
            if write.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let mut buf = vec![0u8; 4096];
    let answer = tokio::select! {
        () = trickle => panic!("the server took the whole trickled body"),
        n = read.read(&mut buf) => String::from_utf8_lossy(&buf[..n.unwrap()]).into_owned(),
    };
    assert!(answer.contains("not received within"), "{answer}");
    served.stop().await;
}

#[tokio::test]
async fn connections_over_the_limit_wait_for_a_free_one() {
    let mut limited = config();
    limited.max_connections = 2;
    limited.header_read_timeout = Duration::from_secs(30);
    let served = serve(limited, HttpConfig::default()).await;
    let first = TcpStream::connect(served.addr).await.unwrap();
    let mut second = TcpStream::connect(served.addr).await.unwrap();
    second.write_all(CARD.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    second.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    // Both slots are held (the first idle, the second kept alive): the
    // third connection is queued by the kernel, not served.
    let mut third = TcpStream::connect(served.addr).await.unwrap();
    third.write_all(CARD.as_bytes()).await.unwrap();
    let waiting = tokio::time::timeout(Duration::from_millis(300), third.read(&mut head)).await;
    assert!(waiting.is_err(), "served a connection over the limit");
    // A slot frees up: the third is served.
    drop(first);
    tokio::time::timeout(Duration::from_secs(5), third.read_exact(&mut head))
        .await
        .expect("served once a slot was free")
        .unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");
    drop(second);
    served.stop().await;
}

#[tokio::test]
async fn grpc_requests_over_the_body_limit_are_refused_on_both_sides() {
    let mut http = HttpConfig::default();
    http.body_limit = 64 * 1024;
    let sut = e2e::start_server(ScriptedAgent, support::card, |b| b, http)
        .await
        .unwrap();
    let big = support::request(&"x".repeat(100 * 1024));
    // The server refuses a request larger than its body limit: tonic stops
    // reading at the length prefix and answers while the client still sends,
    // so the client sees either that status or the stream reset with it.
    let client = support::client(&sut, a2a_core::binding::GRPC);
    let refused = client.send_message(big.clone(), None).await.unwrap_err();
    let text = refused.to_string().to_lowercase();
    assert!(
        text.contains("too large") || text.contains("http2 error"),
        "{refused}"
    );
    // A small request still works on the same server.
    client
        .send_message(support::request("hello"), None)
        .await
        .unwrap();
    // The client refuses to send past its own limit, without a round trip.
    let transport = a2a_grpc::GrpcTransport::connect_lazy(&sut.addr.to_string())
        .unwrap()
        .with_message_limits(a2a_grpc::MAX_RESPONSE, 32 * 1024);
    let interface = client.interface().clone();
    let small_client = a2a_client::Client::from_transport(transport, interface);
    let refused = small_client.send_message(big, None).await.unwrap_err();
    assert!(
        refused.to_string().to_lowercase().contains("too large"),
        "{refused}"
    );
}

/// The conformance test agent is served as a user's server is (the default
/// 10 s header read timeout), not with plain `axum::serve`, which kept a
/// half-sent head open for good.
#[tokio::test]
async fn the_test_agent_cuts_off_a_client_that_sends_half_its_headers() {
    let sut = e2e::start_tck_sut(std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let mut half = TcpStream::connect(sut.addr).await.unwrap();
    half.write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let (_, took) = read_until_closed(&mut half, Duration::from_secs(30)).await;
    assert!(took >= Duration::from_secs(9), "closed after {took:?}");
}
