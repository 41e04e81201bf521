//! A remote agent stays where it was configured: a card that points its
//! interfaces at another origin is not followed there with the gateway's
//! credentials, neither is a redirect to another origin, and what a remote
//! says in an error body stays in the gateway's log. Every listener is on
//! 127.0.0.1; each records whether it was contacted and with what headers.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use a2a_core::{AgentCard, Message, SendMessageRequest, SendMessageResponse, binding};
use a2a_gateway::remote::{RemoteAgent, RemoteAgentConfig};
use a2a_server::{CallContext, DefaultRequestHandler, RequestHandler, ServiceParams};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

/// One request a [`Site`] received: its request line and headers, lowercased.
type Seen = Arc<Mutex<Vec<String>>>;

/// A plain HTTP/1.1 server on 127.0.0.1 that records every request head and
/// answers each with what `answer` makes of its path.
struct Site {
    addr: SocketAddr,
    seen: Seen,
}

impl Site {
    async fn start(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen: Seen = Arc::default();
        let answer = Arc::new(answer);
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (record, answer) = (record.clone(), answer.clone());
                tokio::spawn(async move {
                    let head = read_request(&mut socket).await;
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    record.lock().unwrap().push(head.to_ascii_lowercase());
                    let _ = socket.write_all(answer(&path).as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Site { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Reads a request's head and its body (by `Content-Length`); returns the head.
async fn read_request(socket: &mut tokio::net::TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return String::from_utf8_lossy(&buf).into_owned(),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    head
}

fn response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out
}

/// The card of an agent whose JSON-RPC interface is at `interface`.
fn card_json(interface: &str) -> String {
    let card = AgentCard::new("far", "A remote agent.").with_interface(interface, binding::JSONRPC);
    serde_json::to_string(&card).unwrap()
}

/// A site that serves a card naming `interface`, and answers everything
/// else with `rest`.
async fn remote(
    interface: impl Fn(SocketAddr) -> String + Send + 'static,
    rest: impl Fn(&str) -> String + Send + Sync + 'static,
) -> Site {
    let card = Arc::new(Mutex::new(String::new()));
    let served = card.clone();
    let site = Site::start(move |path| {
        if path.starts_with("/.well-known/") {
            response(
                "200 OK",
                &[("content-type", "application/json")],
                &served.lock().unwrap(),
            )
        } else {
            rest(path)
        }
    })
    .await;
    *card.lock().unwrap() = card_json(&interface(site.addr));
    site
}

/// A site that records who came and answers with a body the caller must
/// never read.
async fn decoy() -> Site {
    Site::start(|_| {
        response(
            "500 Internal Server Error",
            &[],
            "DECOY-SECRET internal state",
        )
    })
    .await
}

/// Sends one message to `agent` behind a handler of its own, and returns
/// what the caller learns: the failed task's status text, or the error.
async fn call(agent: RemoteAgent) -> String {
    let card = AgentCard::new("gateway", "hosts far").with_streaming(true);
    let handler = DefaultRequestHandler::builder(agent, card).build();
    let call = CallContext::new(a2a_core::Method::SendMessage, ServiceParams::new());
    let request = SendMessageRequest::new(Message::user_text("hello"));
    let answer = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        handler.send_message(&call, request),
    )
    .await
    .unwrap();
    match answer {
        Ok(SendMessageResponse::Task(task)) => format!(
            "{:?}: {}",
            task.status.state,
            task.status
                .message
                .as_ref()
                .map(|m| m.text())
                .unwrap_or_default()
        ),
        Ok(SendMessageResponse::Message(message)) => format!("message: {}", message.text()),
        Err(err) => format!("error: {err}"),
    }
}

fn carries_credentials(request: &str) -> bool {
    request.contains("gateway-token") || request.contains("gateway-key")
}

#[tokio::test]
async fn a_card_pointing_at_another_port_is_refused_and_the_token_stays_home() {
    let decoy = decoy().await;
    let decoy_url = decoy.url();
    let remote = remote(
        move |_| format!("{decoy_url}/"),
        |_| response("404 Not Found", &[], ""),
    )
    .await;
    let agent = RemoteAgent::new(
        "far",
        RemoteAgentConfig::new(remote.url()).bearer("gateway-token"),
    );
    let said = call(agent).await;

    assert!(
        decoy.requests().is_empty(),
        "the decoy was called: {:?}",
        decoy.requests()
    );
    assert!(!said.contains("DECOY-SECRET"), "{said}");
    assert!(said.contains("\"far\""), "names the agent: {said}");
    assert!(said.contains("origin"), "says why: {said}");
    // The card itself was fetched from the configured origin, with the token.
    assert!(
        remote
            .requests()
            .iter()
            .all(|r| r.contains("gateway-token"))
    );
}

#[tokio::test]
async fn origins_the_config_lists_are_used() {
    let other = Site::start(|_| {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"from the listed origin"}]}}}"#;
        response("200 OK", &[("content-type", "application/json")], body)
    })
    .await;
    let other_url = other.url();
    let remote = remote(
        move |_| format!("{other_url}/"),
        |_| response("404 Not Found", &[], ""),
    )
    .await;
    let config = RemoteAgentConfig::new(remote.url())
        .bearer("gateway-token")
        .allow_origin(other.url());
    let said = call(RemoteAgent::new("far", config)).await;
    assert_eq!(said, "message: from the listed origin");
    assert!(other.requests().iter().all(|r| r.contains("gateway-token")));
}

#[tokio::test]
async fn a_redirect_to_another_origin_does_not_carry_the_credentials() {
    for config in [
        RemoteAgentConfig::new("").bearer("gateway-token"),
        RemoteAgentConfig::new("").api_key("x-api-key", "gateway-key"),
    ] {
        let decoy = decoy().await;
        let target = format!("{}/rpc", decoy.url());
        let remote = remote(
            |addr| format!("http://{addr}/rpc"),
            move |_| response("307 Temporary Redirect", &[("location", &target)], ""),
        )
        .await;
        let mut config = config;
        config.url = remote.url();
        let said = call(RemoteAgent::new("far", config)).await;
        let carried: Vec<String> = decoy
            .requests()
            .into_iter()
            .filter(|r| carries_credentials(r))
            .collect();
        assert!(
            carried.is_empty(),
            "the credentials went along: {carried:?}"
        );
        assert!(!said.contains("DECOY-SECRET"), "{said}");
        assert!(said.contains("\"far\""), "{said}");
    }
}

#[tokio::test]
async fn an_error_body_from_the_remote_is_logged_not_returned() {
    let remote = remote(
        |addr| format!("http://{addr}/rpc"),
        |_| {
            response(
                "500 Internal Server Error",
                &[("content-type", "text/plain")],
                "stack trace: db password hunter2",
            )
        },
    )
    .await;
    let agent = RemoteAgent::new(
        "far",
        RemoteAgentConfig::new(remote.url()).bearer("gateway-token"),
    );
    let said = call(agent).await;
    assert!(
        !said.contains("hunter2"),
        "the body reached the caller: {said}"
    );
    assert!(said.contains("\"far\""), "names the agent: {said}");
    assert!(said.contains("500"), "says what happened: {said}");
}

#[tokio::test]
async fn the_address_policy_applies_to_remote_links() {
    // A policy that does not allow loopback keeps the gateway off it, and
    // says how to allow it.
    let site = remote(
        |addr| format!("http://{addr}/"),
        |_| response("404 Not Found", &[], ""),
    )
    .await;
    let config = RemoteAgentConfig::new(site.url())
        .bearer("gateway-token")
        .address_policy(a2a_server::push::AddressPolicy::public_only());
    let said = call(RemoteAgent::new("far", config)).await;
    assert!(site.requests().is_empty(), "{:?}", site.requests());
    assert!(
        said.contains("Loopback") && said.contains("allowed_networks"),
        "{said}"
    );

    // A known card's interfaces on addresses the policy refuses are never
    // connected to (the decision is made before any connection).
    let card = AgentCard::new("far", "A remote agent.")
        .with_interface("http://169.254.169.254/latest/", binding::JSONRPC)
        .with_interface("10.0.0.1:50051", binding::GRPC);
    let config = RemoteAgentConfig::new(site.url())
        .bearer("gateway-token")
        .card(card);
    let said = call(RemoteAgent::new("far", config)).await;
    assert!(
        said.contains("\"far\"") && said.contains("not globally reachable"),
        "{said}"
    );
}
