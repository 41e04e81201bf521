//! Thread reuse (scenarios R1-R4 of `collaboration-scenarios.md`): a pair
//! continues its thread for six hours, an explicit thread is always
//! continued, and the route survives a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use a2a_conversation::Clock;
use a2a_hub::{Collaborate, HubConfig, Sender};
use support::{silent, world, world_with};

fn config() -> HubConfig {
    HubConfig {
        clock: Clock::tokio_from(chrono::Utc::now()),
        ..HubConfig::default()
    }
}

fn quiet_team() -> Vec<(&'static str, support::Script)> {
    vec![("alpha", silent()), ("beta", silent()), ("gamma", silent())]
}

fn alpha() -> Sender {
    Sender::Agent("alpha".into())
}

#[tokio::test(start_paused = true)]
async fn r1_a_second_collaborate_within_six_hours_continues_the_thread() {
    let world = world(config(), quiet_team()).await;
    let first = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "code review"))
        .await
        .unwrap();
    assert!(!first.continued);
    tokio::time::advance(Duration::from_secs(5 * 3600)).await;
    let second = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "and the tests"))
        .await
        .unwrap();
    assert!(second.continued);
    assert_eq!(second.thread, first.thread);
    assert_eq!(world.hub.threads(None).len(), 1);
    world.hub.wait_idle().await;
    let texts: Vec<String> = world
        .thread_messages(&first.thread)
        .await
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(texts, ["@beta code review", "@beta and the tests"]);
    // Another target is another thread.
    let other = world
        .hub
        .collaborate(alpha(), Collaborate::new("gamma", "code review"))
        .await
        .unwrap();
    assert_ne!(other.thread, first.thread);
}

#[tokio::test(start_paused = true)]
async fn r2_after_six_hours_a_new_thread_opens() {
    let world = world(config(), quiet_team()).await;
    let first = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "code review"))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(6 * 3600 + 1)).await;
    let second = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "code review, again"))
        .await
        .unwrap();
    assert!(!second.continued);
    assert_ne!(second.thread, first.thread);
    assert_eq!(second.title, "alpha → beta · code review, again");
    assert_eq!(world.hub.threads(None).len(), 2);
}

#[tokio::test(start_paused = true)]
async fn r3_an_explicit_thread_is_continued_whatever_its_age() {
    let world = world(config(), quiet_team()).await;
    let first = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "code review"))
        .await
        .unwrap();
    tokio::time::advance(Duration::from_secs(7 * 24 * 3600)).await;
    let again = world
        .hub
        .collaborate(
            alpha(),
            Collaborate::new("beta", "one week later").in_thread(&first.thread),
        )
        .await
        .unwrap();
    assert!(again.continued);
    assert_eq!(again.thread, first.thread);
    // Even with another target: the thread is what was asked for.
    let gamma = world
        .hub
        .collaborate(
            alpha(),
            Collaborate::new("gamma", "join us").in_thread(&first.thread),
        )
        .await
        .unwrap();
    assert_eq!(gamma.thread, first.thread);
    world.hub.wait_idle().await;
    assert_eq!(
        world.hub.thread(&first.thread).unwrap().participants,
        ["alpha", "beta", "gamma"]
    );
    // An unknown thread is an error, not a new thread.
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "x").in_thread("nope"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), a2a_hub::HubErrorKind::NotFound);
}

#[tokio::test]
async fn r4_the_route_is_restored_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let world = world_with(
            HubConfig::default(),
            quiet_team(),
            Some(dir.path()),
            HashMap::new(),
        )
        .await;
        let first = world
            .hub
            .collaborate(alpha(), Collaborate::new("beta", "code review"))
            .await
            .unwrap();
        world.hub.shutdown(Duration::from_secs(1)).await;
        first
    };
    let world = world_with(
        HubConfig::default(),
        quiet_team(),
        Some(dir.path()),
        HashMap::new(),
    )
    .await;
    let again = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "and the tests"))
        .await
        .unwrap();
    assert!(again.continued, "{again:?}");
    assert_eq!(again.thread, first.thread);
}
