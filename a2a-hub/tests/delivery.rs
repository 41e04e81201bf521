//! Delivery to an agent by the class of its failure (scenarios E1-E6 of
//! `collaboration-scenarios.md`): a fake remote agent answers as a remote's
//! HTTP layer would (403, 404, 429 with `Retry-After`, 5xx, silence), on a
//! paused clock so every wait is exact; and one refusal over a real socket.

mod support;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientError, ClientErrorKind, EventStream, Transport};
use a2a_conversation::Clock;
use a2a_core::operation::{Request, Response, UnaryResponse};
use a2a_core::{AgentCard, AgentInterface, Message, SendMessageResponse};
use a2a_hub::{
    AgentLink, ChannelConfig, Collaborate, HubConfig, HubErrorKind, HubMessage, Post, Sender,
};
use tokio::time::Instant;

use support::{Script, World, silent, world, world_with};

/// What the fake agent's HTTP layer does with one `SendMessage`.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// An HTTP error status.
    Status(u16),
    /// 429 with `Retry-After`.
    Busy(Duration),
    /// Never answers.
    Hang,
    /// Takes the message and answers `got it`.
    Ok,
}

/// A remote agent seen through its transport: answers by script, records
/// when each attempt came.
#[derive(Debug, Clone)]
struct Fake {
    script: Arc<Mutex<VecDeque<Answer>>>,
    /// What it answers once the script is used up.
    then: Answer,
    attempts: Arc<Mutex<Vec<Instant>>>,
}

impl Fake {
    fn new(script: impl IntoIterator<Item = Answer>, then: Answer) -> Fake {
        Fake {
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            then,
            attempts: Arc::default(),
        }
    }

    fn always(answer: Answer) -> Fake {
        Fake::new([], answer)
    }

    fn attempts(&self) -> Vec<Instant> {
        self.attempts.lock().expect("attempts").clone()
    }

    /// The waits between attempts.
    fn gaps(&self) -> Vec<Duration> {
        self.attempts()
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .collect()
    }

    fn link(&self) -> AgentLink {
        AgentLink::client(
            "fake",
            Client::from_transport(
                self.clone(),
                AgentInterface::new("http://fake", a2a_core::binding::JSONRPC),
            ),
        )
    }
}

fn unsupported() -> ClientError {
    ClientError::new(ClientErrorKind::Unsupported, "the fake only takes messages")
}

#[async_trait::async_trait]
impl Transport for Fake {
    async fn call(
        &self,
        request: Request,
        _options: &CallOptions,
    ) -> Result<UnaryResponse, ClientError> {
        if !matches!(request, Request::SendMessage(_)) {
            return Err(unsupported());
        }
        self.attempts.lock().expect("attempts").push(Instant::now());
        let answer = self
            .script
            .lock()
            .expect("script")
            .pop_front()
            .unwrap_or(self.then);
        match answer {
            Answer::Status(status) => Err(ClientError::new(
                ClientErrorKind::Http,
                format!("HTTP {status}"),
            )
            .with_http_status(status)),
            Answer::Busy(wait) => Err(ClientError::new(ClientErrorKind::Http, "HTTP 429")
                .with_http_status(429)
                .with_retry_after(Some(wait))),
            Answer::Hang => futures::future::pending().await,
            Answer::Ok => Ok(Response::SendMessage(SendMessageResponse::Message(
                Message::agent_text("got it"),
            ))),
        }
    }

    async fn stream(
        &self,
        _request: Request,
        _options: &CallOptions,
    ) -> Result<EventStream, ClientError> {
        Err(unsupported())
    }
}

/// A hub whose time follows tokio's, with an operator channel `ops` (its
/// default agent, gamma, would handle a person's message there: the hub's
/// notices must call nobody).
fn config() -> HubConfig {
    HubConfig {
        channels: vec![
            ChannelConfig::new("general"),
            ChannelConfig::new("ops").default_agent("gamma"),
        ],
        operator_channel: Some("ops".to_owned()),
        clock: Clock::tokio_from(chrono::Utc::now()),
        ..HubConfig::default()
    }
}

/// alpha, beta (replaced by `link` when given) and gamma, all silent.
fn agents() -> Vec<(&'static str, Script)> {
    vec![("alpha", silent()), ("beta", silent()), ("gamma", silent())]
}

async fn world_reaching_beta(link: AgentLink) -> World {
    let links = HashMap::from([("beta".to_owned(), link)]);
    world_with(config(), agents(), None, links).await
}

fn alpha() -> Sender {
    Sender::Agent("alpha".to_owned())
}

/// What the hub posted in `messages`.
fn notices(messages: &[HubMessage]) -> Vec<&HubMessage> {
    messages.iter().filter(|m| m.from == Sender::Hub).collect()
}

/// alpha asks beta; beta refuses with `status`: the call fails at once,
/// without retry, the operator hears of it and nobody is called.
async fn refused_at_once(status: u16) {
    let fake = Fake::always(Answer::Status(status));
    let world = world_reaching_beta(fake.link()).await;
    let start = Instant::now();
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect_err("a refusal fails the call");
    assert_eq!(Instant::now(), start, "the call waited");
    assert_eq!(err.kind(), HubErrorKind::Undelivered, "{err}");
    assert!(err.message().contains("refused"), "{err}");
    assert!(err.message().contains(&status.to_string()), "{err}");
    world.hub.wait_idle().await;
    assert_eq!(fake.attempts().len(), 1, "retried");

    let ops = world.channel_messages("ops").await;
    assert_eq!(ops.len(), 1, "{ops:?}");
    let notice = &ops[0];
    assert_eq!(notice.from, Sender::Hub);
    assert!(
        notice.text.contains("delivery to beta failed"),
        "{notice:?}"
    );
    assert!(notice.text.contains(&status.to_string()), "{notice:?}");
    assert!(notice.handlers.is_empty(), "{notice:?}");
    // The thread keeps the message and says what became of it.
    let thread = &world.hub.threads(None)[0];
    let messages = world.thread_messages(&thread.id).await;
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[1].text.contains("delivery to beta failed"));
    assert!(world.calls.all().is_empty(), "{:?}", world.calls.all());
}

/// The deliveries on record in the hub's database in `dir`.
fn on_record(dir: &std::path::Path) -> i64 {
    let db = rusqlite::Connection::open(dir.join(a2a_hub::HUB_DB)).expect("hub.db");
    db.query_row("SELECT COUNT(*) FROM deliveries", [], |row| row.get(0))
        .expect("deliveries")
}

#[tokio::test(start_paused = true)]
async fn a_failed_delivery_leaves_the_record_with_its_notice_and_is_not_sent_again() {
    let dir = tempfile::tempdir().expect("dir");
    let fake = Fake::always(Answer::Status(403));
    let links = || HashMap::from([("beta".to_owned(), fake.link())]);
    let world = world_with(config(), agents(), Some(dir.path()), links()).await;
    let post = Post::new(
        Sender::Person("ann".into()),
        "general",
        "@beta please review",
    );
    world.hub.post(post).await.expect("post");
    world.hub.wait_idle().await;
    assert_eq!(fake.attempts().len(), 1);
    let said = world.channel_messages("general").await;
    assert_eq!(notices(&said).len(), 1, "{said:?}");
    // The delivery went on record with the post, and left it with the
    // notice that it failed: a restart has nothing to send again.
    assert_eq!(on_record(dir.path()), 0);
    world.hub.shutdown(Duration::from_secs(1)).await;
    drop(world);
    let again = world_with(config(), agents(), Some(dir.path()), links()).await;
    again.hub.wait_idle().await;
    assert_eq!(fake.attempts().len(), 1, "sent again after the restart");
    assert_eq!(notices(&again.channel_messages("general").await).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn e1_a_target_answering_403_fails_at_once_without_retry_and_is_escalated() {
    refused_at_once(403).await;
}

#[tokio::test(start_paused = true)]
async fn e2_a_target_answering_404_fails_at_once_without_retry_and_is_escalated() {
    refused_at_once(404).await;
}

#[tokio::test(start_paused = true)]
async fn e3_a_busy_target_is_retried_after_its_retry_after_and_takes_the_message() {
    let fake = Fake::new([Answer::Busy(Duration::from_secs(7))], Answer::Ok);
    let world = world_reaching_beta(fake.link()).await;
    let start = Instant::now();
    let collaboration = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect("a busy target is retried");
    // collaborate waits 2 s at most, then answers that delivery goes on.
    assert_eq!(Instant::now() - start, Duration::from_secs(2));
    assert!(!collaboration.delivered, "{collaboration:?}");
    assert!(
        collaboration.confirmation.contains("still being tried"),
        "{collaboration:?}"
    );
    world.hub.wait_idle().await;
    assert_eq!(fake.attempts().len(), 2);
    assert_eq!(fake.attempts()[0], start);
    assert_eq!(fake.gaps(), [Duration::from_secs(7)]);

    // The outcome lands in the thread: beta's answer, nothing escalated.
    let messages = world.thread_messages(&collaboration.thread).await;
    let texts: Vec<&str> = messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["@beta please review the code", "got it"]);
    assert_eq!(messages[1].from, Sender::Agent("beta".to_owned()));
    assert_eq!(
        messages[1].reply_to.as_deref(),
        Some(messages[0].id.as_str())
    );
    assert_eq!(
        (messages[1].t - messages[0].t).to_std().expect("later"),
        Duration::from_secs(7)
    );
    assert!(world.channel_messages("ops").await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn e4_a_failing_target_is_retried_three_times_after_1_2_and_4_seconds_then_fails() {
    let fake = Fake::always(Answer::Status(503));
    let world = world_reaching_beta(fake.link()).await;
    let start = Instant::now();
    let collaboration = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect("retries go on in the background");
    assert_eq!(Instant::now() - start, Duration::from_secs(2));
    assert!(!collaboration.delivered, "{collaboration:?}");
    world.hub.wait_idle().await;
    assert_eq!(fake.attempts().len(), 4, "one attempt and three retries");
    assert_eq!(fake.attempts()[0], start);
    assert_eq!(
        fake.gaps(),
        [1, 2, 4].map(Duration::from_secs),
        "exponential backoff"
    );

    // It failed after the last attempt: the outcome is in the thread and
    // with the operator.
    let messages = world.thread_messages(&collaboration.thread).await;
    let notices = notices(&messages);
    assert_eq!(notices.len(), 1, "{messages:?}");
    assert!(notices[0].text.contains("kept failing"), "{notices:?}");
    assert!(notices[0].text.contains("4 attempts"), "{notices:?}");
    assert!(notices[0].text.contains("503"), "{notices:?}");
    assert_eq!(
        (notices[0].t - messages[0].t).to_std().expect("later"),
        Duration::from_secs(7)
    );
    let ops = world.channel_messages("ops").await;
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(ops[0].text.contains("delivery to beta failed"), "{ops:?}");
    assert!(world.calls.all().is_empty());
}

#[tokio::test(start_paused = true)]
async fn e5_a_silent_target_times_out_after_10_seconds_is_retried_three_times_then_fails() {
    let fake = Fake::always(Answer::Hang);
    let world = world_reaching_beta(fake.link()).await;
    let start = Instant::now();
    let collaboration = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect("retries go on in the background");
    assert_eq!(Instant::now() - start, Duration::from_secs(2));
    assert!(!collaboration.delivered, "{collaboration:?}");
    world.hub.wait_idle().await;
    assert_eq!(Instant::now() - start, Duration::from_secs(40));
    assert_eq!(fake.attempts().len(), 4, "one attempt and three retries");
    assert_eq!(fake.attempts()[0], start);
    assert_eq!(fake.gaps(), [Duration::from_secs(10); 3]);
    let messages = world.thread_messages(&collaboration.thread).await;
    let notices = notices(&messages);
    assert_eq!(notices.len(), 1, "{messages:?}");
    assert!(
        notices[0].text.contains("did not answer in time"),
        "{notices:?}"
    );
    assert!(notices[0].text.contains("4 attempts"), "{notices:?}");
    assert_eq!(
        (notices[0].t - messages[0].t).to_std().expect("later"),
        Duration::from_secs(40)
    );
    assert_eq!(world.channel_messages("ops").await.len(), 1);

    // A target that wakes up in time for a retry takes the message.
    let fake = Fake::new([Answer::Hang], Answer::Ok);
    let world = world_reaching_beta(fake.link()).await;
    let start = Instant::now();
    let collaboration = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect("delivered on the retry");
    assert!(!collaboration.delivered);
    world.hub.wait_idle().await;
    assert_eq!(fake.attempts().len(), 2);
    assert_eq!(fake.attempts()[0], start);
    assert_eq!(fake.gaps(), [Duration::from_secs(10)]);
    let messages = world.thread_messages(&collaboration.thread).await;
    assert_eq!(messages.last().expect("answer").text, "got it");
    assert!(world.channel_messages("ops").await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn e6_a_target_without_a_mapping_fails_at_once_explaining_the_configuration() {
    let world = world(config(), agents()).await;
    let start = Instant::now();
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("zeta", "please review the code"))
        .await
        .expect_err("zeta is nobody");
    assert_eq!(Instant::now(), start);
    assert_eq!(err.kind(), HubErrorKind::Invalid, "{err}");
    let message = err.message();
    assert!(message.contains("\"zeta\""), "{message}");
    // It lists what there is and says how to add the id.
    assert!(message.contains("alpha, beta, gamma"), "{message}");
    assert!(message.contains("GatewayBuilder::agent"), "{message}");
    assert!(message.contains("HubConfig::accounts"), "{message}");
    assert!(world.hub.threads(None).is_empty());
    assert!(world.channel_messages("general").await.is_empty());
    assert!(world.calls.all().is_empty());
}

/// An agent on a socket: its card (served after `card_failures` answers of
/// 503) has a JSON-RPC interface pointing at itself, whose every call is
/// answered with `status` (200: a JSON-RPC reply `got it`).
struct Served {
    url: String,
    card_fetches: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
}

async fn serve_agent(card_failures: usize, status: u16) -> Served {
    use axum::http::StatusCode;
    use axum::response::{IntoResponse as _, Response};
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let card = AgentCard::new("served", "answers by script")
        .with_interface(format!("{url}/"), a2a_core::binding::JSONRPC);
    let (card_fetches, calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (fetched, called) = (card_fetches.clone(), calls.clone());
    let app = axum::Router::new()
        .route(
            a2a_core::AGENT_CARD_PATH,
            get(move || async move {
                match fetched.fetch_add(1, Ordering::SeqCst) < card_failures {
                    true => StatusCode::SERVICE_UNAVAILABLE.into_response(),
                    false => axum::Json(card).into_response(),
                }
            }),
        )
        .route(
            "/",
            post(
                move |axum::Json(request): axum::Json<serde_json::Value>| async move {
                    called.fetch_add(1, Ordering::SeqCst);
                    let status = StatusCode::from_u16(status).expect("status");
                    if !status.is_success() {
                        return (status, "refused").into_response();
                    }
                    let reply = SendMessageResponse::Message(Message::agent_text("got it"));
                    let body = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": request["id"],
                        "result": serde_json::to_value(reply).expect("reply"),
                    });
                    let response: Response = axum::Json(body).into_response();
                    response
                },
            ),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Served {
        url,
        card_fetches,
        calls,
    }
}

#[tokio::test]
async fn e1_a_real_agent_answering_403_over_http_is_refused_without_retry() {
    let served = serve_agent(0, 403).await;
    let world = world_reaching_beta(AgentLink::remote(&served.url, None)).await;
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), HubErrorKind::Undelivered, "{err}");
    assert!(err.message().contains("refused the message"), "{err}");
    assert!(err.message().contains("403"), "{err}");
    world.hub.wait_idle().await;
    assert_eq!(served.calls.load(Ordering::SeqCst), 1, "retried");
    let ops = world.channel_messages("ops").await;
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(ops[0].text.contains("delivery to beta failed"), "{ops:?}");
}

#[tokio::test]
async fn e4_a_remote_whose_card_answers_503_is_retried_like_any_server_error() {
    let served = serve_agent(2, 200).await;
    let config = HubConfig {
        delivery: a2a_hub::DeliveryPolicy {
            backoff: Duration::from_millis(10),
            ..a2a_hub::DeliveryPolicy::default()
        },
        ..config()
    };
    let links = HashMap::from([("beta".to_owned(), AgentLink::remote(&served.url, None))]);
    let world = world_with(config, agents(), None, links).await;
    let collaboration = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect("retried until the card is served");
    world.hub.wait_idle().await;
    assert!(collaboration.delivered, "{collaboration:?}");
    assert_eq!(served.card_fetches.load(Ordering::SeqCst), 3);
    assert_eq!(served.calls.load(Ordering::SeqCst), 1);
    let messages = world.thread_messages(&collaboration.thread).await;
    assert_eq!(messages.last().expect("answer").text, "got it");
    assert!(world.channel_messages("ops").await.is_empty());
}
