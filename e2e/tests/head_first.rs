//! Who calls before what they say (issue 31, finding 1): on every binding a
//! request is authenticated from its head, before a byte of its body is
//! read, and the bodies of admitted callers share a byte budget.
//!
//! The requests are written by hand on a socket so that a body can be
//! announced and never sent: a server that waited for it would not answer
//! within the deadline (its body read timeout is 30 s).

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use a2a_server::auth::{BearerAuth, Principal};
use a2a_server::http::{BodyBudget, HttpConfig};
use e2e::RunningSut;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Long enough for any answer the server gives at once, far shorter than
/// the body read timeout a server reading the body first would wait out.
const DEADLINE: Duration = Duration::from_secs(10);

/// A body announced as ten million bytes, under the 10 MiB body limit.
const ANNOUNCED: usize = 10_000_000;

async fn bearer_server(config: HttpConfig) -> RunningSut {
    e2e::start_service(
        e2e::ScriptedAgent,
        support::card,
        |b| b,
        |service| service.with_authentication(BearerAuth::new().token("t", Principal::new("ann"))),
        config,
    )
    .await
    .unwrap()
}

/// One HTTP/1.1 answer: status, headers (lowercase names) and body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one answer from `stream` (its headers, then `Content-Length`
/// bytes of body), or panics at the deadline.
async fn read_answer(stream: &mut TcpStream) -> Answer {
    let reading = async {
        let mut buf = Vec::new();
        loop {
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.unwrap();
            assert!(
                n > 0,
                "closed without an answer: {:?}",
                String::from_utf8_lossy(&buf)
            );
            buf.extend_from_slice(&chunk[..n]);
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let mut lines = head.split("\r\n");
            let status = lines
                .next()
                .unwrap()
                .split(' ')
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            let headers: Vec<(String, String)> = lines
                .filter_map(|line| line.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .collect();
            let length: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .map_or(0, |(_, v)| v.parse().unwrap());
            if buf.len() >= end + 4 + length {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + length]).into_owned();
                return Answer {
                    status,
                    headers,
                    body,
                };
            }
        }
    };
    tokio::time::timeout(DEADLINE, reading)
        .await
        .expect("no answer before the deadline: the server waited for the body")
}

/// Sends the head of a POST announcing `length` bytes of JSON (and
/// `extra` headers) plus `sent` of them; the rest never comes.
async fn announce(
    addr: SocketAddr,
    path: &str,
    extra: &str,
    length: usize,
    sent: &[u8],
) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n{extra}\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_body_is_refused_from_the_head_on_every_http_binding() {
    let server = bearer_server(HttpConfig::default()).await;
    // (path, extra headers, what a refusal looks like there)
    let cases = [
        // JSON-RPC 1.0: its error in the body, the challenge in the header.
        ("/", "A2A-Version: 1.0\r\n", "-31401"),
        // 0.3's JSON-RPC comes in at the same path, without a version.
        ("/", "", "-31401"),
        // HTTP+JSON 1.0, with and without a tenant.
        ("/message:send", "A2A-Version: 1.0\r\n", "UNAUTHENTICATED"),
        (
            "/acme/message:send",
            "A2A-Version: 1.0\r\n",
            "UNAUTHENTICATED",
        ),
        // 0.3's HTTP+JSON path.
        ("/v1/message:send", "", "message"),
    ];
    for (path, extra, refusal) in cases {
        for credentials in ["", "Authorization: Bearer wrong\r\n"] {
            let extra = format!("{extra}{credentials}");
            let mut stream = announce(server.addr, path, &extra, ANNOUNCED, b"{").await;
            let answer = read_answer(&mut stream).await;
            let what = format!("{path} {extra:?}: {} {}", answer.status, answer.body);
            assert!(answer.body.contains(refusal), "{what}");
            if !path.starts_with("/v1/") || path == "/" {
                assert_eq!(
                    answer.header("www-authenticate"),
                    Some(r#"Bearer realm="a2a""#),
                    "{what}"
                );
            }
            if path != "/" {
                assert_eq!(answer.status, 401, "{what}");
            }
        }
    }
    // The same head with the token is let through to read its body: it is
    // still waiting for it when the deadline would pass.
    let mut stream = announce(
        server.addr,
        "/",
        "Authorization: Bearer t\r\n",
        ANNOUNCED,
        b"{",
    )
    .await;
    let mut byte = [0u8; 1];
    let waited = tokio::time::timeout(Duration::from_millis(300), stream.read(&mut byte)).await;
    assert!(
        waited.is_err(),
        "an admitted caller's body is read, not refused"
    );
}

/// gRPC (HTTP/2): HEADERS without END_STREAM, and no DATA ever.
async fn grpc_head_only(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> axum::http::HeaderMap {
    use http_body_util::StreamBody;
    use hyper::body::{Bytes, Frame};
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let never = futures::stream::pending::<Result<Frame<Bytes>, std::convert::Infallible>>();
    let mut request = axum::http::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let request = request.body(StreamBody::new(never)).unwrap();
    let response = tokio::time::timeout(DEADLINE, sender.send_request(request))
        .await
        .expect("no gRPC answer before the deadline: the server waited for the message")
        .unwrap();
    response.headers().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_grpc_call_is_refused_before_its_message_is_read() {
    let server = bearer_server(HttpConfig::default()).await;
    for path in [
        "/lf.a2a.v1.A2AService/SendMessage",
        "/lf.a2a.v1.A2AService/SendStreamingMessage",
        // A2A 0.3's service.
        "/a2a.v1.A2AService/SendMessage",
    ] {
        for token in [None, Some("wrong")] {
            let headers = grpc_head_only(server.addr, path, token).await;
            // Trailers-only: the status is in the headers.
            assert_eq!(
                headers.get("grpc-status").map(|v| v.to_str().unwrap()),
                Some("16"),
                "{path} {token:?}: {headers:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_beyond_the_budget_are_answered_503_with_retry_after() {
    let mut config = HttpConfig::default();
    config.body_budget = BodyBudget::new(1000);
    let budget = config.body_budget.clone();
    let server = bearer_server(config).await;
    let token = "Authorization: Bearer t\r\nA2A-Version: 1.0\r\n";
    // An admitted caller's body in flight holds 600 of the 1,000 bytes...
    let _held = announce(server.addr, "/", token, 600, b"{").await;
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while budget.held() < 600 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first body was never held"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // ...so another 600 has no room, on JSON-RPC...
    let mut stream = announce(server.addr, "/", token, 600, b"{").await;
    let answer = read_answer(&mut stream).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.header("retry-after"), Some("1"));
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(body["error"]["data"][0]["reason"], "UNAVAILABLE", "{body}");
    assert!(body["id"].is_null());
    // ...and on HTTP+JSON, where the status is the error's.
    let mut stream = announce(server.addr, "/message:send", token, 600, b"{").await;
    let answer = read_answer(&mut stream).await;
    assert_eq!(answer.status, 503, "{}", answer.body);
    assert_eq!(answer.header("retry-after"), Some("1"));
    let body: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["error"]["status"], "UNAVAILABLE", "{body}");
    assert_eq!(body["error"]["code"], 503, "{body}");
    // A body that fits still goes through.
    let small = br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}"#;
    let mut stream = announce(server.addr, "/", token, small.len(), small).await;
    let answer = read_answer(&mut stream).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.body.contains("-32001"), "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_message_beyond_the_budget_is_unavailable() {
    let mut config = HttpConfig::default();
    config.body_budget = BodyBudget::new(64);
    let server = bearer_server(config).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut raw = a2a_grpc::pb::a2a_service_client::A2aServiceClient::new(channel);
    let text = "x".repeat(200);
    let message = a2a_grpc::pb::Message {
        message_id: "m".into(),
        role: a2a_grpc::pb::Role::User as i32,
        parts: vec![a2a_grpc::pb::Part {
            content: Some(a2a_grpc::pb::part::Content::Text(text)),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut request = tonic::Request::new(a2a_grpc::pb::SendMessageRequest {
        message: Some(message),
        ..Default::default()
    });
    request
        .metadata_mut()
        .insert("authorization", "Bearer t".parse().unwrap());
    let status = raw.send_message(request).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
}
