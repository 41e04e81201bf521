//! A push-notification webhook: it asks an agent to run a task and report to
//! it, checks the token on every notification (refusing one without it), and
//! prints each until the task ends.
//!
//! Run with: `cargo run -p examples --bin push_receiver -- http://127.0.0.1:8080`
//! (start `push_agent` first). The webhook listens on a free port of
//! 127.0.0.1; the agent must be allowed to call it (`push_agent` allows
//! loopback).

use std::time::Duration;

use a2a_core::{
    Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    TaskPushNotificationConfig,
};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use tokio::sync::mpsc;

/// What the webhook needs: the token it expects, and where to pass events.
#[derive(Clone)]
struct Webhook {
    token: String,
    events: mpsc::Sender<StreamResponse>,
}

// ANCHOR: check
async fn notified(State(hook): State<Webhook>, headers: HeaderMap, body: String) -> StatusCode {
    // The agent echoes the token the client gave in the push config: a
    // notification without it did not come from that agent for that task.
    let token = headers.get("a2a-notification-token").map(|v| v.as_bytes());
    if token != Some(hook.token.as_bytes()) {
        println!("refused a notification: wrong or missing token");
        return StatusCode::UNAUTHORIZED;
    }
    // The body is one StreamResponse: a task, a status or an artifact update.
    match serde_json::from_str::<StreamResponse>(&body) {
        Ok(event) => {
            let _ = hook.events.send(event).await;
            StatusCode::NO_CONTENT
        }
        Err(_) => StatusCode::BAD_REQUEST,
    }
}
// ANCHOR_END: check

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());

    // A token of our own for this task, so forged calls can be told apart.
    let token = a2a_core::new_id();
    let (tx, mut events) = mpsc::channel(16);
    let hook = Webhook {
        token: token.clone(),
        events: tx,
    };
    let app = axum::Router::new()
        .route("/webhook", axum::routing::post(notified))
        .with_state(hook);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let webhook = format!("http://{}/webhook", listener.local_addr()?);
    // The webhook hosts no agent: `serve_app` gives it the same header
    // timeout, connection limit and graceful shutdown as an agent's server.
    tokio::spawn(a2a_server::http::serve_app(listener, app));
    println!("webhook: {webhook}");

    // Anyone can POST to a webhook; show that a call without the token is refused.
    let forged = reqwest::Client::new()
        .post(&webhook)
        .header("a2a-notification-token", "guessed")
        .body("{}")
        .send()
        .await?;
    println!("forged notification answered {}", forged.status().as_u16());

    let client = a2a_client::Client::connect(&agent).await?;
    // ANCHOR: request
    let mut request = SendMessageRequest::new(Message::user_text("report to my webhook"));
    let mut push = TaskPushNotificationConfig::new("", webhook);
    push.token = token;
    request.configuration = Some(SendMessageConfiguration {
        task_push_notification_config: Some(push),
        // Answer at once with the submitted task: what happens next
        // arrives at the webhook.
        return_immediately: true,
        ..Default::default()
    });
    let SendMessageResponse::Task(task) = client.send_message(request, None).await? else {
        return Err("the agent answered with a message, not a task".into());
        // ANCHOR_END: request
    };
    println!("task {} is {}", task.id, task.status.state);

    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .map_err(|_| "no notification for 30 s")?
            .ok_or("the webhook stopped")?;
        let state = event.state();
        match &event {
            StreamResponse::StatusUpdate(update) => {
                let text = update.status.message.as_ref().map(|m| m.text());
                println!(
                    "notification: {} {}",
                    update.status.state,
                    text.unwrap_or_default()
                );
            }
            other => println!("notification: {} for task {}", kind(other), other.task_id()),
        }
        if state.is_some_and(|s| s.is_terminal()) {
            return Ok(());
        }
    }
}

fn kind(event: &StreamResponse) -> &'static str {
    match event {
        StreamResponse::Task(_) => "task snapshot",
        StreamResponse::Message(_) => "message",
        StreamResponse::StatusUpdate(_) => "status update",
        StreamResponse::ArtifactUpdate(_) => "artifact update",
    }
}
