//! The handler/observer split (scenarios H1-H4 of
//! `collaboration-scenarios.md`) and end-to-end flow B (several agents
//! mentioned together).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use a2a_hub::{ChannelConfig, EXCERPT_CHARS, HubConfig, Role};
use support::{Script, Turn, answers, team, world};

fn config() -> HubConfig {
    HubConfig {
        channels: vec![ChannelConfig::new("general").default_agent("gamma")],
        ..HubConfig::default()
    }
}

#[tokio::test]
async fn h1_only_the_mentioned_agent_handles_and_the_others_observe() {
    let world = world(config(), team()).await;
    let message = world.say("general", "@alpha please check this").await;
    assert_eq!(message.handlers, ["alpha"]);
    assert_eq!(world.calls.count("alpha"), 1);
    for other in ["beta", "gamma", "delta"] {
        assert_eq!(world.calls.count(other), 0, "{other} was called");
        // The question, then alpha's answer: both observed, not handled.
        let records = world.hub.observed(other);
        assert_eq!(records.len(), 2, "{other}");
        assert_eq!(records[0].message_id, message.id);
        assert_eq!(records[1].from, "alpha");
    }
    let call = &world.calls.of("alpha")[0];
    assert_eq!(call.hub.as_ref().unwrap().role, Some(Role::Primary));
    let answers = world.channel_messages("general").await;
    let reply = answers.last().unwrap();
    assert_eq!(reply.from.name(), "alpha");
    assert_eq!(reply.text, "alpha: alpha please check this");
    assert_eq!(reply.reply_to.as_deref(), Some(message.id.as_str()));
    // alpha's answer mentions nobody: nobody else is called.
    assert_eq!(world.calls.all().len(), 1);
}

#[tokio::test]
async fn h2_without_a_mention_only_the_channels_default_agent_handles() {
    let world = world(config(), team()).await;
    let message = world.say("general", "how is the front end going?").await;
    assert_eq!(message.handlers, ["gamma"]);
    assert_eq!(world.calls.count("gamma"), 1);
    let call = &world.calls.of("gamma")[0];
    assert_eq!(call.hub.as_ref().unwrap().role, Some(Role::Default));
    for other in ["alpha", "beta", "delta"] {
        assert_eq!(world.calls.count(other), 0, "{other} was called");
        assert_eq!(world.hub.observed(other)[0].message_id, message.id);
    }
    // A channel without a default agent: nobody handles, everyone observes.
    let quiet = HubConfig {
        channels: vec![ChannelConfig::new("general")],
        ..HubConfig::default()
    };
    let world = support::world(quiet, team()).await;
    let message = world.say("general", "anyone?").await;
    assert!(message.handlers.is_empty());
    assert!(world.calls.all().is_empty());
    assert_eq!(world.hub.observed("alpha").len(), 1);
}

/// H3 and flow B: both mentioned agents handle, the first as primary.
#[tokio::test]
async fn h3_flow_b_two_mentioned_agents_both_answer_as_primary_and_secondary() {
    let world = world(config(), team()).await;
    let message = world
        .say("general", "@alpha @beta look at this PR together")
        .await;
    assert_eq!(message.handlers, ["alpha", "beta"]);
    let role = |agent: &str| world.calls.of(agent)[0].hub.as_ref().unwrap().role;
    assert_eq!(role("alpha"), Some(Role::Primary));
    assert_eq!(role("beta"), Some(Role::Secondary));
    let answers: Vec<String> = world
        .channel_messages("general")
        .await
        .into_iter()
        .filter(|m| m.reply_to.as_deref() == Some(message.id.as_str()))
        .map(|m| m.from.name().to_owned())
        .collect();
    // Order best-effort: both answered, once each.
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers.contains(&"alpha".to_owned()) && answers.contains(&"beta".to_owned()));
    for observer in ["gamma", "delta"] {
        assert_eq!(world.calls.count(observer), 0);
        assert_eq!(world.hub.observed(observer)[0].message_id, message.id);
    }
}

/// delta answers "what did X say earlier?" from its observer records.
fn recalls() -> Script {
    Arc::new(|turn: Turn| {
        Box::pin(async move {
            let hub = turn.call.hub?;
            let asked = turn.call.text.split_whitespace().nth(3)?.to_owned();
            let said: Vec<String> = hub
                .observed_from(&asked)
                .map(|r| format!("\"{}\"", r.excerpt))
                .collect();
            Some(match said.is_empty() {
                true => format!("I did not hear {asked} say anything"),
                false => format!("{asked} said: {}", said.join(", ")),
            })
        })
    })
}

#[tokio::test]
async fn h4_an_observer_answers_what_another_agent_said_from_its_compact_records() {
    let mut agents = team();
    agents.retain(|(name, _)| *name != "delta");
    agents.push(("delta", recalls()));
    agents.retain(|(name, _)| *name != "alpha");
    let long = "the login page needs a second look because the session cookie is not marked secure and expires too late";
    agents.push(("alpha", answers(move |_| long.to_owned())));
    let world = world(config(), agents).await;
    world
        .say("general", "@alpha what do you think of the login page?")
        .await;
    assert_eq!(world.calls.count("delta"), 0);

    world
        .say("general", "@delta what did alpha say earlier?")
        .await;
    let answer = world.channel_messages("general").await.pop().unwrap();
    assert_eq!(answer.from.name(), "delta");
    let excerpt: String = long.chars().take(EXCERPT_CHARS).collect();
    assert_eq!(answer.text, format!("alpha said: \"{excerpt}\""));
    // Summary level: never more than the record's 50 characters.
    assert!(!answer.text.contains(long));
}
