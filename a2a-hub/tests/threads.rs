//! Thread participants (scenarios T1-T7 of `collaboration-scenarios.md`)
//! and end-to-end flows C (adding an agent to a thread by mention) and E
//! (recovery after a restart, with and without the participant record).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;

use a2a_hub::{Collaborate, HubConfig, Sender};
use support::{Script, Turn, world, world_with};

/// Answers people and mentions; stays silent when another agent talks to
/// it in a thread without naming it (so two agents do not talk forever).
fn polite(name: &'static str) -> Script {
    Arc::new(move |turn: Turn| {
        Box::pin(async move {
            let hub = turn.call.hub?;
            let named = hub.mentions.iter().any(|m| m == name);
            (named || hub.from_kind == "person")
                .then(|| format!("{name} on it: {}", turn.call.text.replace('@', "")))
        })
    })
}

fn polite_team() -> Vec<(&'static str, Script)> {
    ["alpha", "beta", "gamma", "delta"]
        .into_iter()
        .map(|name| (name, polite(name)))
        .collect()
}

fn agent(name: &str) -> Sender {
    Sender::Agent(name.to_owned())
}

#[tokio::test]
async fn t1_collaborate_opens_a_thread_of_the_two_agents_and_the_target_answers() {
    let world = world(HubConfig::default(), polite_team()).await;
    let done = world
        .hub_client("alpha")
        .collaborate(None, Collaborate::new("beta", "please review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(done.delivered, "{done:?}");
    assert_eq!(done.title, "alpha → beta · please review the code");
    let thread = world.hub.thread(&done.thread).unwrap();
    assert_eq!(thread.participants, ["alpha", "beta"]);
    let messages = world.thread_messages(&done.thread).await;
    assert_eq!(messages[0].text, "@beta please review the code");
    assert_eq!(messages[0].handlers, ["beta"]);
    assert_eq!(messages[1].from.name(), "beta");
    // beta's call is that thread's conversation.
    assert_eq!(world.calls.of("beta")[0].context_id, done.thread);
}

#[tokio::test]
async fn t2_t3_participants_handle_each_others_messages_without_mentions() {
    let world = world(HubConfig::default(), polite_team()).await;
    let done = world
        .hub_client("alpha")
        .collaborate(None, Collaborate::new("beta", "please review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    // T2: beta's answer mentions nobody and still reaches alpha.
    let answer = &world.thread_messages(&done.thread).await[1];
    assert_eq!(answer.from.name(), "beta");
    assert_eq!(answer.handlers, ["alpha"]);
    assert_eq!(world.calls.count("alpha"), 1);
    // T3: alpha, without a mention: beta handles it.
    world.calls.clear();
    let more = world
        .say_in(agent("alpha"), &done.thread, "one more thing to check")
        .await;
    assert_eq!(more.handlers, ["beta"]);
    assert_eq!(world.calls.count("beta"), 1);
    assert_eq!(world.calls.count("gamma") + world.calls.count("delta"), 0);
}

/// T4 and flow C: a mention adds an agent, which then talks without one.
#[tokio::test]
async fn t4_flow_c_a_mention_in_a_thread_adds_a_participant_for_good() {
    let world = world(HubConfig::default(), polite_team()).await;
    let done = world
        .hub_client("alpha")
        .collaborate(None, Collaborate::new("beta", "please review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let asked = world
        .say_in(agent("alpha"), &done.thread, "@gamma check the deployment")
        .await;
    assert_eq!(asked.handlers, ["gamma"]);
    let thread = world.hub.thread(&done.thread).unwrap();
    assert_eq!(thread.participants, ["alpha", "beta", "gamma"]);
    // gamma's answer mentions nobody and reaches the others.
    let answer = world.thread_messages(&done.thread).await.pop().unwrap();
    assert_eq!(answer.from.name(), "gamma");
    assert_eq!(answer.handlers, ["alpha", "beta"]);
    world.calls.clear();
    let next = world
        .say_in(agent("alpha"), &done.thread, "thanks, both of you")
        .await;
    assert_eq!(next.handlers, ["beta", "gamma"]);
}

#[tokio::test]
async fn t5_an_agent_outside_a_thread_only_observes_it() {
    let world = world(HubConfig::default(), polite_team()).await;
    let done = world
        .hub_client("alpha")
        .collaborate(None, Collaborate::new("beta", "please review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    world
        .say_in(agent("alpha"), &done.thread, "one more thing to check")
        .await;
    assert_eq!(world.calls.count("delta"), 0);
    let thread_messages = world.thread_messages(&done.thread).await;
    let observed = world.hub.observed("delta");
    for message in thread_messages.iter().filter(|m| m.from.agent().is_some()) {
        assert!(
            observed.iter().any(|r| r.message_id == message.id),
            "delta has no record of {message:?}"
        );
    }
}

/// T6 and flow E (with the record): participants come back after a restart.
#[tokio::test]
async fn t6_flow_e_participants_are_restored_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let thread = {
        let world = world_with(
            HubConfig::default(),
            polite_team(),
            Some(dir.path()),
            HashMap::new(),
        )
        .await;
        let done = world
            .hub_client("alpha")
            .collaborate(None, Collaborate::new("beta", "please review the code"))
            .await
            .unwrap();
        world.hub.wait_idle().await;
        world.hub.shutdown(std::time::Duration::from_secs(1)).await;
        done.thread
    };
    let world = world_with(
        HubConfig::default(),
        polite_team(),
        Some(dir.path()),
        HashMap::new(),
    )
    .await;
    assert_eq!(
        world.hub.thread(&thread).unwrap().participants,
        ["alpha", "beta"]
    );
    let message = world
        .say_in(agent("beta"), &thread, "I found two problems")
        .await;
    assert_eq!(message.handlers, ["alpha"]);
    assert_eq!(world.calls.count("alpha"), 1);
    // The thread's history survived too.
    assert_eq!(world.thread_messages(&thread).await.len(), 3);
}

/// T7 and flow E (without the record): only mentions route, and a mention
/// registers the participant again.
#[tokio::test]
async fn t7_flow_e_without_the_participant_record_only_mentions_route() {
    let dir = tempfile::tempdir().unwrap();
    let thread = {
        let world = world_with(
            HubConfig::default(),
            polite_team(),
            Some(dir.path()),
            HashMap::new(),
        )
        .await;
        let done = world
            .hub_client("alpha")
            .collaborate(None, Collaborate::new("beta", "please review the code"))
            .await
            .unwrap();
        world.hub.wait_idle().await;
        world.hub.shutdown(std::time::Duration::from_secs(1)).await;
        done.thread
    };
    let db = rusqlite::Connection::open(dir.path().join(a2a_hub::HUB_DB)).unwrap();
    db.execute("DELETE FROM participants", []).unwrap();
    drop(db);

    let world = world_with(
        HubConfig::default(),
        polite_team(),
        Some(dir.path()),
        HashMap::new(),
    )
    .await;
    assert!(world.hub.thread(&thread).unwrap().participants.is_empty());
    let unheard = world
        .say_in(agent("beta"), &thread, "I found two problems")
        .await;
    assert!(unheard.handlers.is_empty(), "{unheard:?}");
    assert!(world.calls.all().is_empty());
    // beta wrote there: it takes part again. A mention brings alpha back.
    let mentioned = world
        .say_in(agent("beta"), &thread, "@alpha I found two problems")
        .await;
    assert_eq!(mentioned.handlers, ["alpha"]);
    assert_eq!(
        world.hub.thread(&thread).unwrap().participants,
        ["beta", "alpha"]
    );
    world.calls.clear();
    let plain = world.say_in(agent("beta"), &thread, "and a third").await;
    assert_eq!(plain.handlers, ["alpha"]);
    assert_eq!(world.calls.count("alpha"), 1);
}
