//! The loop guards (scenarios L1-L5 of `collaboration-scenarios.md`):
//! the hub's own messages call nobody, mirrored copies are dropped, agents
//! talk in their thread without a second collaborate, a pair is limited in
//! collaborations, and a thread that runs hot is paused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use a2a_conversation::{Clock, ConversationLog, LogConfig, LogReader};
use a2a_core::{Message, Part, SendMessageRequest};
use a2a_hub::{ChannelConfig, Collaborate, HubConfig, HubErrorKind, MIRROR_METADATA, Post, Sender};
use std::collections::HashMap;

use support::{team, world, world_logged, world_with};

fn config() -> HubConfig {
    HubConfig {
        channels: vec![
            ChannelConfig::new("general").default_agent("alpha"),
            ChannelConfig::new("ops").members(Vec::<String>::new()),
        ],
        operator_channel: Some("ops".into()),
        // Hub time follows tokio's (paused) clock.
        clock: Clock::tokio_from(chrono::Utc::now()),
        ..HubConfig::default()
    }
}

fn agent(name: &str) -> Sender {
    Sender::Agent(name.to_owned())
}

#[tokio::test]
async fn l1_the_hubs_own_messages_trigger_no_agent() {
    let world = world(config(), team()).await;
    let notice = world
        .hub
        .post(Post::new(
            Sender::Hub,
            "general",
            "@alpha @beta the build is red",
        ))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(notice.handlers.is_empty());
    assert_eq!(notice.unrouted.as_deref(), Some("hub"));
    assert!(world.calls.all().is_empty(), "{:?}", world.calls.all());
    // Its line about a thread opening, naming both agents, calls nobody
    // either: only beta, in the thread, is called.
    world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "code review"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let opened = world.channel_messages("general").await.pop().unwrap();
    assert_eq!(opened.from, Sender::Hub);
    assert_eq!(
        opened.text,
        "alpha opened the thread \"alpha → beta · code review\" with beta"
    );
    assert!(opened.handlers.is_empty());
    assert_eq!(world.calls.count("gamma") + world.calls.count("delta"), 0);
}

#[tokio::test]
async fn l2_mirrored_copies_and_the_sink_never_re_enter_as_handler_messages() {
    let world = world(config(), team()).await;
    // A copy marked as a mirror: dropped, stored nowhere.
    let copy = world
        .hub
        .post(Post {
            mirror: true,
            ..Post::new(Sender::Person("bridge".into()), "general", "@alpha again")
        })
        .await
        .unwrap();
    assert_eq!(copy.unrouted.as_deref(), Some("mirror"));
    // The same over A2A, with the metadata a bridge sets.
    let mut message = Message::user(vec![Part::text("@alpha again, over A2A")]);
    message.metadata = Some(serde_json::Map::from_iter([(
        MIRROR_METADATA.to_owned(),
        serde_json::Value::Bool(true),
    )]));
    world
        .gateway
        .peers("gamma")
        .unwrap()
        .client("hub")
        .unwrap()
        .send_message(SendMessageRequest::new(message), None)
        .await
        .unwrap();
    // The operator's channel is a sink: a mention there calls nobody.
    let sunk = world
        .hub
        .post(Post::new(
            Sender::Person("ann".into()),
            "ops",
            "@alpha look",
        ))
        .await
        .unwrap();
    assert_eq!(sunk.unrouted.as_deref(), Some("sink"));
    world.hub.wait_idle().await;
    assert!(world.calls.all().is_empty(), "{:?}", world.calls.all());
    assert!(world.channel_messages("general").await.is_empty());
}

#[tokio::test]
async fn l3_inside_the_thread_the_pair_talks_without_a_second_collaborate() {
    // beta answers; alpha takes beta's answers in silently.
    let beta = support::answers(|text| format!("beta: {}", text.replace('@', "")));
    let world = world(config(), vec![("alpha", support::silent()), ("beta", beta)]).await;
    let done = world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let before = world.thread_messages(&done.thread).await.len();
    world.calls.clear();
    let reply = world
        .say_in(
            agent("alpha"),
            &done.thread,
            "thanks, what about the tests?",
        )
        .await;
    assert_eq!(reply.handlers, ["beta"]);
    assert_eq!(world.calls.count("beta"), 1);
    assert!(world.thread_messages(&done.thread).await.len() > before);
    assert_eq!(world.hub.threads(None).len(), 1, "no second thread");
}

#[tokio::test(start_paused = true)]
async fn l4_the_fourth_collaborate_of_a_pair_within_five_minutes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    let world = world_logged(config(), support::team(), log.clone()).await;
    for i in 0..3 {
        world
            .hub
            .collaborate(
                agent("alpha"),
                Collaborate::new("beta", format!("question {i}")),
            )
            .await
            .unwrap();
        tokio::time::advance(Duration::from_secs(30)).await;
    }
    let refused = world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "question 3"))
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), HubErrorKind::Refused);
    assert!(
        refused
            .message()
            .starts_with("refused by the loop guard: alpha asked beta 3 times"),
        "{refused}"
    );
    // The window is five minutes from the first call.
    assert_eq!(refused.retry_after(), Some(Duration::from_secs(210)));
    // The operator hears of it.
    let ops = world.channel_messages("ops").await;
    assert!(
        ops.iter().any(|m| m.from == Sender::Hub
            && m.text
                .starts_with("refused by the loop guard: alpha asked beta")),
        "{ops:#?}"
    );
    // Another pair is not held back.
    world
        .hub
        .collaborate(agent("gamma"), Collaborate::new("beta", "question"))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(210)).await;
    world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "question 4"))
        .await
        .unwrap();
    // The trip is on record.
    log.flush().await.unwrap();
    let lines = LogReader::new(dir.path())
        .day(log.now().date_naive())
        .unwrap()
        .entries;
    assert!(
        lines
            .iter()
            .any(|l| l.metadata.get("decision").and_then(|d| d.as_str())
                == Some("collaborate_refused")),
        "no refusal on record"
    );
}

/// Two agents that answer everything talk forever; the guard pauses them.
#[tokio::test(start_paused = true)]
async fn l5_a_thread_of_more_than_six_messages_in_a_minute_is_paused() {
    let world = world(config(), support::team()).await;
    let done = world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let thread = world.hub.thread(&done.thread).unwrap();
    assert!(thread.paused, "{thread:?}");
    let messages = world.thread_messages(&done.thread).await;
    // Six messages called their handlers; the seventh tripped the guard
    // and the hub said so.
    assert_eq!(messages.len(), 8, "{messages:#?}");
    assert_eq!(messages[6].unrouted.as_deref(), Some("paused"));
    // The thread gets a pointer; the operator's channel gets the notice.
    assert_eq!(messages[7].from, Sender::Hub);
    assert_eq!(
        messages[7].text,
        "loop guard: this thread is paused until a person resumes it or 300 s pass \
         (details in #ops)"
    );
    let ops = world.channel_messages("ops").await;
    let notice = ops.last().expect("a notice in #ops");
    assert_eq!(notice.from, Sender::Hub);
    assert!(
        notice
            .text
            .starts_with("loop guard: this thread took 7 messages in 60 s"),
        "{notice:?}"
    );
    assert!(notice.text.ends_with("in #general)"), "{notice:?}");
    let calls = world.calls.all().len();
    assert_eq!(calls, 6);

    // Paused: a message calls nobody.
    let held = world
        .say_in(agent("alpha"), &done.thread, "still there?")
        .await;
    assert_eq!(held.unrouted.as_deref(), Some("paused"));
    assert_eq!(world.calls.all().len(), calls);

    // A person resumes it: talk goes on (and trips the guard again).
    world.hub.resume_thread(&done.thread, "ann").await.unwrap();
    let resumed = world
        .say_in(Sender::Person("ann".into()), &done.thread, "one more round")
        .await;
    assert_eq!(resumed.handlers, ["alpha", "beta"]);
    assert!(world.calls.all().len() > calls);
    assert!(world.hub.thread(&done.thread).unwrap().paused);

    // Or the cool-down passes.
    tokio::time::advance(Duration::from_secs(5 * 60)).await;
    let cooled = world
        .say_in(Sender::Person("ann".into()), &done.thread, "after a break")
        .await;
    assert!(cooled.unrouted.is_none(), "{cooled:?}");
}

#[tokio::test(start_paused = true)]
async fn agents_quoting_each_others_mentions_at_channel_level_are_held_back() {
    // Answers that keep the mentions: alpha and beta call each other.
    let quoting = |name: &'static str| {
        support::answers(move |_| {
            let other = if name == "alpha" { "beta" } else { "alpha" };
            format!("@{other} what do you think?")
        })
    };
    let world = world(
        config(),
        vec![("alpha", quoting("alpha")), ("beta", quoting("beta"))],
    )
    .await;
    world.say("general", "@alpha start").await;
    let messages = world.channel_messages("general").await;
    let held = messages
        .iter()
        .filter(|m| m.unrouted.as_deref() == Some("burst"))
        .count();
    assert_eq!(held, 1, "{messages:#?}");
    assert!(
        messages
            .last()
            .unwrap()
            .text
            .starts_with("loop guard: agents' mentions here call no agent"),
        "{messages:#?}"
    );
    let ops = world.channel_messages("ops").await;
    assert!(
        ops.last()
            .unwrap()
            .text
            .starts_with("loop guard: agents posted 7 messages"),
        "{ops:#?}"
    );
    assert_eq!(world.calls.all().len(), 7);
}

#[tokio::test]
async fn only_a_person_resumes_a_paused_thread() {
    let world = world(config(), support::team()).await;
    let done = world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(world.hub.thread(&done.thread).unwrap().paused);
    let resume = Message::user(vec![Part::data(
        serde_json::json!({ "resume": { "thread": done.thread } }),
    )]);
    // alpha, over A2A as itself: refused.
    let answer = world
        .gateway
        .peers("alpha")
        .unwrap()
        .client("hub")
        .unwrap()
        .send_message(SendMessageRequest::new(resume.clone()), None)
        .await
        .unwrap();
    let a2a_core::SendMessageResponse::Task(task) = answer else {
        panic!("a refusal is a failed task");
    };
    assert_eq!(task.status.state, a2a_core::TaskState::Failed);
    assert!(world.hub.thread(&done.thread).unwrap().paused);
    // A person may.
    world.hub.resume_thread(&done.thread, "ann").await.unwrap();
    assert!(!world.hub.thread(&done.thread).unwrap().paused);
}

/// A pair refused inside its window is refused after a restart too: the
/// window's events are on record.
#[tokio::test]
async fn the_pair_guards_window_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = config();
    {
        let world = world_with(
            config.clone(),
            team_of_silent(),
            Some(dir.path()),
            HashMap::new(),
        )
        .await;
        for i in 0..3 {
            world
                .hub
                .collaborate(
                    agent("alpha"),
                    Collaborate::new("beta", format!("question {i}")),
                )
                .await
                .unwrap();
        }
        world.hub.wait_idle().await;
    }
    let world = world_with(config, team_of_silent(), Some(dir.path()), HashMap::new()).await;
    let refused = world
        .hub
        .collaborate(agent("alpha"), Collaborate::new("beta", "question 3"))
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), HubErrorKind::Refused, "{refused}");
    // Another pair has a window of its own.
    world
        .hub
        .collaborate(agent("gamma"), Collaborate::new("beta", "question"))
        .await
        .unwrap();
}

/// A thread's burst counts across a restart: three messages before it and
/// three after make the seventh trip the guard.
#[tokio::test]
async fn a_threads_burst_window_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = config();
    let ann = || Sender::Person("ann".into());
    let thread = {
        let world = world_with(
            config.clone(),
            team_of_silent(),
            Some(dir.path()),
            HashMap::new(),
        )
        .await;
        let done = world
            .hub
            .collaborate(agent("alpha"), Collaborate::new("beta", "review the code"))
            .await
            .unwrap();
        for i in 0..3 {
            world
                .say_in(ann(), &done.thread, &format!("note {i}"))
                .await;
        }
        world.hub.wait_idle().await;
        assert!(!world.hub.thread(&done.thread).unwrap().paused);
        done.thread
    };
    let world = world_with(config, team_of_silent(), Some(dir.path()), HashMap::new()).await;
    for i in 3..5 {
        let note = world.say_in(ann(), &thread, &format!("note {i}")).await;
        assert!(note.unrouted.is_none(), "{note:?}");
    }
    let seventh = world.say_in(ann(), &thread, "note 5").await;
    assert_eq!(seventh.unrouted.as_deref(), Some("paused"), "{seventh:?}");
    assert!(world.hub.thread(&thread).unwrap().paused);
}

/// Agents that take every message and never answer.
fn team_of_silent() -> Vec<(&'static str, support::Script)> {
    vec![
        ("alpha", support::silent()),
        ("beta", support::silent()),
        ("gamma", support::silent()),
    ]
}
