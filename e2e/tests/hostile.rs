//! Hostile input from the network gets the protocol's error, never a panic,
//! a hang or a bare 500.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

struct Raw {
    http: reqwest::Client,
    base: String,
}

impl Raw {
    async fn new() -> Raw {
        let server = server().await;
        Raw {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base: format!("http://{}", server.addr),
        }
    }

    async fn rpc_bytes(&self, body: Vec<u8>, content_type: &str) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}/", self.base))
            .header("content-type", content_type)
            .header("A2A-Version", "1.0")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    async fn rpc(&self, body: Value) -> Value {
        let (status, value) = self
            .rpc_bytes(serde_json::to_vec(&body).unwrap(), "application/json")
            .await;
        assert_eq!(status, 200, "JSON-RPC errors travel in a 200 response");
        value
    }

    async fn rest(&self, method: reqwest::Method, path: &str, body: Option<&str>) -> (u16, Value) {
        self.rest_bytes(method, path, body.map(|b| b.as_bytes().to_vec()))
            .await
    }

    async fn rest_bytes(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("A2A-Version", "1.0");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }
}

fn code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code in {response}"))
}

fn reason(response: &Value) -> &str {
    response["error"]["data"][0]["reason"]
        .as_str()
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonrpc_rejects_bad_envelopes_with_the_right_codes() {
    let raw = Raw::new().await;
    let (_, parse) = raw
        .rpc_bytes(
            b"{\"jsonrpc\": \"2.0\", \"id\": 1, ".to_vec(),
            "application/json",
        )
        .await;
    assert_eq!((code(&parse), &parse["id"]), (-32700, &Value::Null));

    for bad in [
        json!([{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]),
        json!("just a string"),
        json!({"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}),
        json!({"jsonrpc": "2.0", "id": 1, "params": {}}),
        json!({"jsonrpc": "2.0", "id": {"nested": true}, "method": "GetTask"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": 42}),
    ] {
        assert_eq!(code(&raw.rpc(bad.clone()).await), -32600, "{bad}");
    }

    let unknown = raw
        .rpc(json!({"jsonrpc": "2.0", "id": "abc", "method": "message/send", "params": {}}))
        .await;
    assert_eq!((code(&unknown), &unknown["id"]), (-32601, &json!("abc")));
    assert_eq!(reason(&unknown), "METHOD_NOT_FOUND");

    let wrong_type = raw
        .rpc(json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t", "historyLength": "many"}}))
        .await;
    assert_eq!(code(&wrong_type), -32602);
    assert!(
        wrong_type["error"]["message"]
            .as_str()
            .unwrap()
            .contains("historyLength")
    );
    let not_object = raw
        .rpc(json!({"jsonrpc": "2.0", "id": 8, "method": "GetTask", "params": [1, 2]}))
        .await;
    assert_eq!(code(&not_object), -32602);
    let bad_part = raw
        .rpc(
            json!({"jsonrpc": "2.0", "id": 9, "method": "SendMessage", "params": {"message": {
            "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "url": "b"}]}}}),
        )
        .await;
    assert_eq!(code(&bad_part), -32602);
    let missing = raw
        .rpc(json!({"jsonrpc": "2.0", "id": 10, "method": "SendMessage", "params": {}}))
        .await;
    assert_eq!(code(&missing), -32602);

    let unknown_task = raw
        .rpc(json!({"jsonrpc": "2.0", "id": 11, "method": "GetTask", "params": {"id": "nope"}}))
        .await;
    assert_eq!(
        (code(&unknown_task), reason(&unknown_task)),
        (-32001, "TASK_NOT_FOUND")
    );
    let subscribe = raw.rpc(json!({"jsonrpc": "2.0", "id": 12, "method": "SubscribeToTask", "params": {"id": "nope"}})).await;
    assert_eq!(
        code(&subscribe),
        -32001,
        "an error known before the stream is a plain response"
    );

    let (_, content_type) = raw.rpc_bytes(b"{}".to_vec(), "text/plain").await;
    assert_eq!(code(&content_type), -32005);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_negotiation_on_both_bindings() {
    let raw = Raw::new().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    let response = raw
        .http
        .post(format!("{}/", raw.base))
        .header("A2A-Version", "0.3")
        .json(&body)
        .send()
        .await
        .unwrap();
    let value: Value = response.json().await.unwrap();
    assert_eq!(
        (code(&value), reason(&value)),
        (-32009, "VERSION_NOT_SUPPORTED")
    );

    let response = raw
        .http
        .get(format!("{}/tasks/x", raw.base))
        .header("A2A-Version", "2.0")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let value: Value = response.json().await.unwrap();
    assert_eq!(value["error"]["status"], "FAILED_PRECONDITION");
    assert_eq!(
        value["error"]["details"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
    // The query-parameter form is honoured too, and 1.0 with a patch number is fine.
    let response = raw
        .http
        .get(format!("{}/tasks/x?A2A-Version=1.0.1", raw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_errors_are_google_rpc_status_bodies() {
    let raw = Raw::new().await;
    let (status, body) = raw.rest(reqwest::Method::GET, "/tasks/nope", None).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(
        body["error"]["details"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    assert_eq!(body["error"]["details"][0]["domain"], "a2a-protocol.org");
    assert_eq!(body["error"]["details"][0]["metadata"]["taskId"], "nope");

    let (status, body) = raw
        .rest(reqwest::Method::POST, "/message:send", Some("{not json"))
        .await;
    assert_eq!(
        (status, body["error"]["details"][0]["reason"].as_str()),
        (400, Some("PARSE_ERROR"))
    );
    // A byte that is not UTF-8 in a member no request type has: JSON-RPC
    // calls that a parse error, and so does HTTP+JSON.
    let (status, body) = raw
        .rest_bytes(
            reqwest::Method::POST,
            "/message:send",
            Some(
                b"{\"unknown\":\"\xd0\",\"message\":{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}]}}"
                    .to_vec(),
            ),
        )
        .await;
    assert_eq!(
        (status, body["error"]["details"][0]["reason"].as_str()),
        (400, Some("PARSE_ERROR"))
    );
    let (status, body) = raw
        .rest(
            reqwest::Method::POST,
            "/message:send",
            Some(r#"{"message": 5}"#),
        )
        .await;
    assert_eq!(
        (status, body["error"]["details"][0]["reason"].as_str()),
        (400, Some("INVALID_PARAMS"))
    );
    let (status, _) = raw.rest(reqwest::Method::GET, "/no/such/route", None).await;
    assert_eq!(status, 404);
    let (status, _) = raw.rest(reqwest::Method::DELETE, "/tasks/x", None).await;
    assert_eq!(status, 405);
    let (status, body) = raw
        .rest(reqwest::Method::GET, "/tasks?pageSize=abc", None)
        .await;
    assert_eq!(
        (status, body["error"]["details"][0]["reason"].as_str()),
        (400, Some("INVALID_PARAMS"))
    );
    let (status, _) = raw
        .rest(reqwest::Method::GET, "/tasks?status=TASK_STATE_BOGUS", None)
        .await;
    assert_eq!(status, 400);
    let (status, body) = raw
        .rest(reqwest::Method::POST, "/tasks/nope:cancel", Some(""))
        .await;
    assert_eq!(
        (status, body["error"]["details"][0]["reason"].as_str()),
        (404, Some("TASK_NOT_FOUND"))
    );
}

/// Sends a request head declaring `length` body bytes, then reads the answer.
async fn declare_body(base: &str, path: &str, length: usize) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    // The answer comes without the body being sent; read until the JSON closes.
    while !answer.ends_with(b"}") {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .unwrap()
            .unwrap();
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_megabyte_body_is_refused_without_reading_it_all() {
    let raw = Raw::new().await;
    const HUNDRED_MB: usize = 100 * 1024 * 1024;
    // Declared size over the limit: refused at once, before any body byte.
    let rpc = declare_body(&raw.base, "/", HUNDRED_MB).await;
    assert!(rpc.starts_with("HTTP/1.1 200"), "{rpc}");
    assert!(rpc.contains("\"code\":-32600"), "{rpc}");
    let rest = declare_body(&raw.base, "/message:send", HUNDRED_MB).await;
    assert!(rest.starts_with("HTTP/1.1 413"), "{rest}");
    assert!(rest.contains("INVALID_REQUEST"), "{rest}");

    // A streamed body (no length) is cut off at the limit. The server answers
    // as soon as the limit is passed; the client may instead see the connection
    // closed while it is still uploading. Either way the server stays healthy.
    let chunks = futures::stream::iter(
        (0..100).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 1024 * 1024]))),
    );
    let response = raw
        .http
        .post(format!("{}/", raw.base))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await;
    if let Ok(response) = response {
        let body: Value = response.json().await.unwrap();
        assert_eq!(code(&body), -32600);
    }
    let after = raw
        .rpc(json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
        .await;
    assert_eq!(code(&after), -32001, "the server still answers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_card_has_caching_headers() {
    let raw = Raw::new().await;
    let url = format!("{}/.well-known/agent-card.json", raw.base);
    let response = raw.http.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert!(
        headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("max-age=")
    );
    assert!(headers.contains_key("last-modified"));
    let etag = headers["etag"].to_str().unwrap().to_owned();
    let card: a2a_core::AgentCard = response.json().await.unwrap();
    // The three 1.0 interfaces, then the three that also speak 0.3.
    let versions: Vec<&str> = card
        .supported_interfaces
        .iter()
        .map(|i| i.protocol_version.as_str())
        .collect();
    assert_eq!(versions, ["1.0", "1.0", "1.0", "0.3", "0.3", "0.3"]);
    let revalidated = raw
        .http
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), 304);
    let cors = raw
        .http
        .get(&url)
        .header("origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert!(cors.headers().contains_key("access-control-allow-origin"));
}
