//! The collaborate call (scenarios C1, C2, C4 and C5 of
//! `collaboration-scenarios.md`; C3, from the command line, is in
//! a2a-cli's tests), asynchrony (A1-A3), and end-to-end flows A (a user
//! asks alpha to get beta's review) and D (the same from outside any
//! channel).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a_client::Client;
use a2a_core::SendMessageResponse;
use a2a_hub::{
    AgentLink, ChannelConfig, Collaborate, HubConfig, HubEvent, HubMessage, Role, Sender,
};
use support::{Script, Turn, world, world_served, world_with};

fn config() -> HubConfig {
    HubConfig {
        channels: vec![
            ChannelConfig::new("general"),
            ChannelConfig::new("dev"),
            ChannelConfig::new("ops").members(Vec::<String>::new()),
        ],
        default_channel: Some("general".into()),
        operator_channel: Some("ops".into()),
        ..HubConfig::default()
    }
}

/// alpha: "get NAME to review the TOPIC" makes it collaborate with NAME
/// on "TOPIC review" and tell the asker; other agents' talk it takes in
/// silently (being called is how it hears of it).
fn delegator() -> Script {
    Arc::new(|turn: Turn| {
        Box::pin(async move {
            let text = turn.call.text.replace("@alpha ", "");
            let Some(rest) = text.strip_prefix("get ") else {
                let from_person = turn
                    .call
                    .hub
                    .as_ref()
                    .is_none_or(|h| h.from_kind == "person");
                return from_person.then(|| format!("alpha here: {text}"));
            };
            let (target, topic) = rest.split_once(" to review the ")?;
            let done = turn
                .hub
                .collaborate(
                    Some(&turn.ctx),
                    Collaborate::new(target, format!("{topic} review")),
                )
                .await;
            Some(match done {
                Ok(done) => format!("I'll pass it to {target} ({})", done.confirmation),
                Err(err) => format!("I could not reach {target}: {err}"),
            })
        })
    })
}

/// beta: reviews what it is asked after `delay`; silent to other agents'
/// talk that does not name it.
fn reviewer(delay: Duration) -> Script {
    Arc::new(move |turn: Turn| {
        Box::pin(async move {
            let hub = turn.call.hub.clone();
            let named = hub
                .as_ref()
                .is_none_or(|h| h.mentions.iter().any(|m| m == "beta"));
            if !named {
                return None;
            }
            tokio::time::sleep(delay).await;
            Some(format!(
                "reviewed: {}",
                turn.call.text.replace("@beta ", "")
            ))
        })
    })
}

fn agents(review_delay: Duration) -> Vec<(&'static str, Script)> {
    vec![
        ("alpha", delegator()),
        ("beta", reviewer(review_delay)),
        ("gamma", support::silent()),
        ("delta", support::silent()),
    ]
}

fn person(name: &str) -> Sender {
    Sender::Person(name.to_owned())
}

/// The first message the hub stores after now that `matches`.
async fn next_message(
    events: &mut tokio::sync::broadcast::Receiver<HubEvent>,
    matches: impl Fn(&HubMessage) -> bool,
) -> HubMessage {
    loop {
        match events.recv().await.unwrap() {
            HubEvent::Message(message) if matches(&message) => return (*message).clone(),
            _ => {}
        }
    }
}

/// Flow A, from the request to the observer who can say what alpha said.
#[tokio::test]
async fn flow_a_a_user_asks_alpha_to_get_betas_review() {
    let world = world(config(), agents(Duration::ZERO)).await;
    let asked = world
        .say("general", "@alpha get beta to review the auth module")
        .await;
    assert_eq!(asked.handlers, ["alpha"]);
    let general = world.channel_messages("general").await;
    let reply = general
        .iter()
        .find(|m| m.from.name() == "alpha")
        .expect("alpha answered the user");
    assert!(
        reply
            .text
            .starts_with("I'll pass it to beta (delivered to beta"),
        "{reply:?}"
    );

    let threads = world.hub.threads(Some("general"));
    assert_eq!(threads.len(), 1);
    let thread = &threads[0];
    assert_eq!(thread.title, "alpha → beta · auth module review");
    assert_eq!(thread.participants, ["alpha", "beta"]);
    let messages = world.thread_messages(&thread.id).await;
    assert_eq!(messages[0].text, "@beta auth module review");
    assert_eq!(messages[0].from, Sender::Agent("alpha".into()));
    assert_eq!(messages[1].from, Sender::Agent("beta".into()));
    assert_eq!(messages[1].text, "reviewed: auth module review");
    // alpha is told: beta's answer reaches it, as a participant.
    let told = world.calls.of("alpha");
    assert_eq!(told.len(), 2);
    assert_eq!(told[1].text, "reviewed: auth module review");
    assert_eq!(told[1].hub.as_ref().unwrap().role, Some(Role::Participant));
    // delta keeps compact records of all of it, alpha's words included.
    let records = world.hub.observed("delta");
    assert!(
        records
            .iter()
            .any(|r| r.from == "alpha" && r.excerpt.starts_with("I'll pass it to beta"))
    );
    assert!(records.iter().any(|r| r.message_id == messages[1].id));
    assert_eq!(world.calls.count("delta"), 0);
}

#[tokio::test]
async fn c1_an_agent_working_in_a_channel_opens_the_thread_in_that_channel() {
    let world = world(config(), agents(Duration::ZERO)).await;
    world.say("dev", "@alpha get beta to review the code").await;
    let threads = world.hub.threads(None);
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].channel, "dev");
    let messages = world.thread_messages(&threads[0].id).await;
    assert_eq!(messages[1].text, "reviewed: code review");
}

/// C2 and flow D: a user talking to alpha directly, over A2A, outside any
/// channel; the thread opens in the default channel, where the user can
/// follow it.
#[tokio::test]
async fn c2_flow_d_a_collaboration_started_outside_any_channel_uses_the_default_channel() {
    let (world, base_url) = world_served(config(), agents(Duration::ZERO)).await;
    let alpha = Client::connect(&format!("{base_url}/agents/alpha"))
        .await
        .unwrap();
    let answer = alpha
        .send_text("get beta to review the auth module")
        .await
        .unwrap();
    let SendMessageResponse::Task(task) = answer else {
        panic!("alpha answers with a task");
    };
    let text = task.status.message.unwrap().text();
    assert!(
        text.starts_with("I'll pass it to beta (delivered to beta"),
        "{text}"
    );
    world.hub.wait_idle().await;
    let threads = world.hub.threads(Some("general"));
    assert_eq!(threads.len(), 1, "{:?}", world.hub.threads(None));
    // The user follows it in the default channel, over the hub's API.
    let url = format!("{base_url}/hub/api/messages?thread={}", threads[0].id);
    let body: serde_json::Value = reqwest::get(url).await.unwrap().json().await.unwrap();
    let texts: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["@beta auth module review", "reviewed: auth module review"]
    );
}

#[tokio::test]
async fn c4_collaborating_with_an_unknown_agent_fails_at_once_saying_how_to_map_it() {
    let world = world(config(), agents(Duration::ZERO)).await;
    let err = world
        .hub_client("alpha")
        .collaborate(None, Collaborate::new("zeta", "code review"))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("no agent or account named \"zeta\""),
        "{message}"
    );
    assert!(
        message.contains("agents: alpha, beta, delta, gamma"),
        "{message}"
    );
    assert!(message.contains("HubConfig::accounts"), "{message}");
    assert!(
        world.hub.threads(None).is_empty(),
        "no thread for a failed call"
    );
}

#[tokio::test]
async fn c5_an_offline_target_fails_at_once_and_is_escalated_to_the_operator() {
    // A port nothing listens on: connections are refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let links = HashMap::from([("beta".to_owned(), AgentLink::remote(url.clone(), None))]);
    let world = world_with(config(), agents(Duration::ZERO), None, links).await;
    let err = world
        .hub
        .collaborate(
            Sender::Agent("alpha".into()),
            Collaborate::new("beta", "code review"),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), a2a_hub::HubErrorKind::Undelivered);
    assert!(
        err.message().starts_with("beta is offline (1 attempt"),
        "{err}"
    );
    world.hub.wait_idle().await;
    let ops = world.channel_messages("ops").await;
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(
        ops[0]
            .text
            .starts_with("delivery to beta failed: beta is offline"),
        "{ops:?}"
    );
    assert!(ops[0].text.contains(&url), "the notice says where: {ops:?}");
    assert_eq!(ops[0].from, Sender::Hub);
    assert!(world.calls.all().is_empty(), "escalation calls no agent");
}

/// A1-A3 on tokio's paused clock: beta takes five minutes.
#[tokio::test(start_paused = true)]
async fn a1_a2_a3_collaborate_returns_at_once_and_a_late_answer_lands_in_the_thread() {
    let world = world(config(), agents(Duration::from_secs(300))).await;
    let mut events = world.hub.subscribe();
    let started = tokio::time::Instant::now();
    world
        .hub
        .post(a2a_hub::Post::new(
            person("ann"),
            "general",
            "@alpha get beta to review the auth module",
        ))
        .await
        .unwrap();
    // A2: alpha's collaborate returned with "delivered to beta" at once.
    let answers_user = |m: &HubMessage| m.from.name() == "alpha" && m.thread.is_none();
    let passed = next_message(&mut events, answers_user).await;
    assert!(passed.text.contains("delivered to beta"), "{passed:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // A1: alpha handles the user normally while beta works.
    world
        .hub
        .post(a2a_hub::Post::new(
            person("ann"),
            "general",
            "@alpha how is the release?",
        ))
        .await
        .unwrap();
    let normal = next_message(&mut events, answers_user).await;
    assert_eq!(normal.text, "alpha here: how is the release?");
    assert!(started.elapsed() < Duration::from_secs(3));
    let thread = world.hub.threads(Some("general")).remove(0);
    assert_eq!(
        world.thread_messages(&thread.id).await.len(),
        1,
        "beta is still working"
    );
    // A3: five minutes later beta's answer is on record in the thread, and
    // alpha hears of it.
    let late = next_message(&mut events, |m| m.from.name() == "beta").await;
    assert!(started.elapsed() >= Duration::from_secs(300));
    assert_eq!(late.thread.as_deref(), Some(thread.id.as_str()));
    assert_eq!(late.handlers, ["alpha"]);
    world.hub.wait_idle().await;
    let told = world.calls.of("alpha").pop().unwrap();
    assert_eq!(told.text, "reviewed: auth module review");
}
