//! A fake OpenAI-compatible chat completions endpoint for the tests: it
//! answers each `POST /v1/chat/completions` with the next scripted reply,
//! and records what it was sent.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How a streamed reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `data: [DONE]`.
    Done,
    /// The body ends without `[DONE]` and without a finish reason, as a
    /// server or proxy that gives up midway leaves it. (An error in the body
    /// instead can reach the client before the head does, which then is a
    /// failed request, rightly retried, not a cut stream.)
    Cut,
    /// Nothing more, ever (until the client goes away).
    Hang,
}

/// One scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with this JSON body.
    Json(Value),
    /// An error status, with a `Retry-After` header when given.
    Status(u16, Option<&'static str>),
    /// 200 with these server-sent events (each the `data:` of one), then
    /// the end.
    Stream(Vec<Value>, End),
    /// No answer at all.
    Silent,
}

/// A whole answer saying `text`.
pub fn text(text: &str) -> Reply {
    Reply::Json(json!({
        "id": "c", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 },
    }))
}

/// A whole answer calling tools: `(id, name, arguments)`.
pub fn calls(calls: &[(&str, &str, Value)]) -> Reply {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args.to_string() } })
        })
        .collect();
    Reply::Json(json!({
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": null, "tool_calls": calls }, "finish_reason": "tool_calls" }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15 },
    }))
}

/// A streamed answer in `pieces`, ending as `end` says.
pub fn stream(pieces: &[&str], end: End) -> Reply {
    let mut events: Vec<Value> = pieces
        .iter()
        .map(|p| json!({ "choices": [{ "index": 0, "delta": { "content": p } }] }))
        .collect();
    if end == End::Done {
        events.push(json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": "stop" }] }));
        events.push(json!({ "choices": [], "usage": { "prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10 } }));
    }
    Reply::Stream(events, end)
}

/// The fake endpoint.
#[derive(Clone)]
pub struct Fake {
    pub addr: SocketAddr,
    script: Arc<Mutex<VecDeque<Reply>>>,
    /// Every request's body, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
    /// Told when a streamed reply's body is dropped before its end (the
    /// client went away).
    pub dropped: Arc<Notify>,
    /// Told when a request arrives.
    pub arrived: Arc<Notify>,
    /// The reply once the script is done (none: a 500).
    fallback: Arc<Mutex<Option<Reply>>>,
}

impl Fake {
    /// Starts the endpoint with `script`.
    pub async fn start(script: Vec<Reply>) -> Fake {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let fake = Fake {
            addr: listener.local_addr().unwrap(),
            script: Arc::new(Mutex::new(script.into())),
            requests: Arc::default(),
            dropped: Arc::default(),
            arrived: Arc::default(),
            fallback: Arc::default(),
        };
        let state = fake.clone();
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move |body: axum::body::Bytes| {
                let fake = state.clone();
                async move { fake.answer(&body).await }
            }),
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        fake
    }

    /// Answers `reply` once the script is done.
    pub fn repeat(&self, reply: Reply) {
        *self.fallback.lock().unwrap() = Some(reply);
    }

    /// Forgets the requests recorded so far (a long run keeps no history).
    pub fn forget(&self) {
        self.requests.lock().unwrap().clear();
    }

    /// The base URL to configure.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// How many requests arrived.
    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    /// Request `i`'s body.
    pub fn request(&self, i: usize) -> Value {
        self.requests.lock().unwrap()[i].clone()
    }

    async fn answer(&self, body: &[u8]) -> Response {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        self.requests.lock().unwrap().push(body);
        self.arrived.notify_waiters();
        let reply = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .or_else(|| self.fallback.lock().unwrap().clone());
        match reply {
            None => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "no more scripted replies",
            )
                .into_response(),
            Some(Reply::Json(value)) => axum::Json(value).into_response(),
            Some(Reply::Status(status, retry_after)) => {
                let mut response = (
                    StatusCode::from_u16(status).unwrap(),
                    axum::Json(json!({ "error": { "message": format!("scripted {status}") } })),
                )
                    .into_response();
                if let Some(after) = retry_after {
                    response
                        .headers_mut()
                        .insert("retry-after", HeaderValue::from_static(after));
                }
                response
            }
            Some(Reply::Silent) => {
                std::future::pending::<()>().await;
                unreachable!()
            }
            Some(Reply::Stream(events, end)) => {
                let guard = DropGuard {
                    dropped: self.dropped.clone(),
                    finished: false,
                };
                let body = futures::stream::unfold(
                    (events.into_iter(), Some(end), guard),
                    |(mut events, end, mut guard)| async move {
                        if let Some(event) = events.next() {
                            let line = format!("data: {event}\n\n");
                            return Some((
                                Ok::<_, std::io::Error>(axum::body::Bytes::from(line)),
                                (events, end, guard),
                            ));
                        }
                        match end? {
                            End::Done => {
                                guard.finished = true;
                                Some((
                                    Ok(axum::body::Bytes::from_static(b"data: [DONE]\n\n")),
                                    (events, None, guard),
                                ))
                            }
                            End::Cut => {
                                guard.finish();
                                None
                            }
                            End::Hang => {
                                std::future::pending::<()>().await;
                                None
                            }
                        }
                    },
                );
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Body::from_stream(body))
                    .unwrap()
            }
        }
    }
}

/// Tells `dropped` when a stream's body goes away before its end.
struct DropGuard {
    dropped: Arc<Notify>,
    finished: bool,
}

impl DropGuard {
    /// The body reached its scripted end.
    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for DropGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.dropped.notify_one();
        }
    }
}
