//! A model agent (`a2a-model`, backed by the fake chat completions endpoint
//! of the model agent's own tests) as a member of the hub: its model calls
//! the hub's `collaborate` and `post` tools, it is delivered messages and
//! answers like any agent, and the scenarios of
//! `collaboration-scenarios.md` (H1, T1, T3, C1, L3, L4 and flow A) hold
//! with it in place of a scripted agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;

use a2a_conversation::{ConversationLog, EntryType, LogConfig, LogReader};
use a2a_core::AgentCard;
use a2a_gateway::GatewayBuilder;
use a2a_gateway::model::ModelTools;
use a2a_hub::{ChannelConfig, Collaborate, DEFAULT_HUB_NAME, HubConfig, HubEvent, Sender, tools};
use a2a_model::{ModelSettings, ToolSet};
use serde_json::{Value, json};
use support::{Script, Turn, World};

// The fake chat completions endpoint the model agent's own tests use.
#[path = "../../a2a-model/tests/support/fake.rs"]
mod fake;

use fake::Fake;

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

/// Model agent `alpha`, answering from `fake`, with the hub's tools made
/// for it (as `a2a serve` makes them), logging its tool calls to `log`.
fn model_alpha(
    fake: &Fake,
    log: Option<ConversationLog>,
) -> impl FnOnce(GatewayBuilder) -> GatewayBuilder {
    let mut settings = ModelSettings::new(fake.base_url(), "fake").system("You are alpha.");
    // A request the script did not expect fails the test at once, not
    // after retries.
    settings.retries = 0;
    let tools = ModelTools::new(ToolSet::new()).per_agent(tools::HubTools::new(DEFAULT_HUB_NAME));
    let card = AgentCard::new("alpha", "Thinks, backed by a model.");
    let definition = a2a_gateway::model::definition_with("alpha", card, settings, tools, log);
    move |gateway| gateway.agent(definition)
}

/// A world of `agents` (scripted) and the model agent alpha.
async fn world(fake: &Fake, agents: Vec<(&str, Script)>) -> World {
    let model = model_alpha(fake, None);
    support::world_built(config(), agents, None, HashMap::new(), model).await
}

/// Every message the model was sent in request `i`, as `(role, content)`.
fn sent(fake: &Fake, i: usize) -> Vec<(String, String)> {
    fake.request(i)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = |key: &str| m[key].as_str().unwrap_or_default().to_owned();
            (text("role"), text("content"))
        })
        .collect()
}

/// The last message of request `i` with `role`.
fn last(fake: &Fake, i: usize, role: &str) -> String {
    sent(fake, i)
        .into_iter()
        .rev()
        .find(|(r, _)| r == role)
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("no {role} message in request {i}: {:#?}", sent(fake, i)))
}

/// The results of tool calls in request `i`, in order.
fn tool_results(fake: &Fake, i: usize) -> Vec<String> {
    sent(fake, i)
        .into_iter()
        .filter(|(role, _)| role == "tool")
        .map(|(_, content)| content)
        .collect()
}

/// The tools offered in request `i`, by name.
fn offered(fake: &Fake, i: usize) -> HashMap<String, Value> {
    fake.request(i)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let function = &t["function"];
            (
                function["name"].as_str().unwrap().to_owned(),
                function.clone(),
            )
        })
        .collect()
}

/// beta: reviews what it is asked once `go` says so; silent to talk that
/// does not mention it.
fn gated_reviewer(go: tokio::sync::watch::Receiver<bool>) -> Script {
    Arc::new(move |turn: Turn| {
        let mut go = go.clone();
        Box::pin(async move {
            let hub = turn.call.hub.as_ref()?;
            if !hub.mentions.iter().any(|m| m == "beta") {
                return None;
            }
            go.wait_for(|go| *go).await.unwrap();
            Some(format!(
                "reviewed: {}",
                turn.call.text.replace("@beta ", "")
            ))
        })
    })
}

/// Flow A and C1 with the model agent as alpha: asked in #dev to get
/// beta's review, its model calls `collaborate`; the thread opens in #dev,
/// alpha answers the person, beta's answer reaches alpha in the thread, and
/// the log holds it all as one chain through alpha's tool call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_agent_collaborates_through_the_hub_and_hears_the_answer_in_the_thread() {
    let fake = Fake::start(vec![
        fake::calls(&[(
            "c1",
            "collaborate",
            json!({ "target": "beta", "text": "review the auth module" }),
        )]),
        fake::text("I asked beta for a review."),
        fake::text("Thanks, beta."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    // beta answers only once alpha has answered the person: the model's
    // replies are scripted in order.
    let (go, wait) = tokio::sync::watch::channel(false);
    let agents = vec![
        ("beta", gated_reviewer(wait)),
        ("gamma", support::silent()),
        ("delta", support::silent()),
    ];
    let servers = log.clone();
    let model = model_alpha(&fake, Some(log.clone()));
    let world = support::build_world_custom(
        config(),
        agents,
        None,
        HashMap::new(),
        "http://127.0.0.1:1",
        Some(log.clone()),
        move |gateway| {
            model(gateway).handler_setup(move |name, handler| {
                handler.observer(a2a_conversation::Recorder::new(servers.clone(), name))
            })
        },
    )
    .await;
    let mut events = world.hub.subscribe();
    tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            if let HubEvent::Message(m) = event {
                if m.from.name() == "alpha" && m.thread.is_none() {
                    let _ = go.send(true);
                }
            }
        }
    });
    world
        .say("dev", "@alpha get beta to review the auth module")
        .await;

    assert_eq!(fake.calls(), 3, "{:#?}", fake.requests.lock().unwrap());
    // The model is offered the hub's tools; the targets it may name are
    // the other agents, not itself nor the hub.
    let tools = offered(&fake, 0);
    let target = tools["collaborate"]["parameters"]["properties"]["target"]["description"]
        .as_str()
        .unwrap();
    assert_eq!(target, "The agent to work with: one of beta, delta, gamma.");
    assert!(tools.contains_key("post"), "{tools:?}");
    // The other agents are tools too, but the hub: its tools stand for it
    // (`ask_user` is the model agent's own).
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["ask_user", "beta", "collaborate", "delta", "gamma", "post"]
    );
    assert_eq!(
        last(&fake, 0, "user"),
        "@alpha get beta to review the auth module"
    );
    // C1: the thread opened in the channel alpha was asked in.
    let threads = world.hub.threads(None);
    assert_eq!(threads.len(), 1, "{threads:?}");
    let thread = &threads[0];
    assert_eq!(thread.channel, "dev");
    assert_eq!(thread.participants, ["alpha", "beta"]);
    assert_eq!(thread.title, "alpha → beta · review the auth module");
    // The model read what became of its call.
    let result = &tool_results(&fake, 1)[0];
    assert!(
        result.starts_with("delivered to beta in \"alpha → beta · review the auth module\""),
        "{result}"
    );
    assert!(result.contains(&thread.id), "{result}");
    assert!(
        result.ends_with(
            "beta's answer will be posted in that thread, and you will be called with it there."
        ),
        "{result}"
    );
    // alpha answered the person where they asked.
    let dev = world.channel_messages("dev").await;
    let answer = dev.iter().find(|m| m.from.name() == "alpha").unwrap();
    assert_eq!(answer.text, "I asked beta for a review.");
    // The thread holds the exchange: alpha's request, beta's answer, and
    // alpha's reply to it (beta, not mentioned, stays silent: L3).
    let messages = world.thread_messages(&thread.id).await;
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m.from.name(), m.text.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("alpha", "@beta review the auth module"),
            ("beta", "reviewed: review the auth module"),
            ("alpha", "Thanks, beta."),
        ]
    );
    assert_eq!(messages[1].handlers, ["alpha"]);
    // alpha was called with beta's answer, in the thread's conversation.
    assert_eq!(last(&fake, 2, "user"), "reviewed: review the auth module");

    // One chain: the person's post, its delivery to alpha, alpha's tool
    // call, alpha's request to the hub (the thread's first message), the
    // delivery to beta and beta's answer.
    log.flush().await.unwrap();
    let reader = LogReader::new(dir.path());
    let chain = reader
        .chain(messages[1].log_id.as_deref().unwrap())
        .unwrap();
    let lines: Vec<(EntryType, &str, Option<&str>)> = chain
        .iter()
        .map(|e| (e.kind, e.from_agent.as_str(), e.to_agent.as_deref()))
        .collect();
    use EntryType::{Request, Response};
    assert_eq!(
        lines,
        [
            (Request, "ann", Some("hub")),
            (Request, "hub", Some("alpha")),
            (Request, "alpha", Some("collaborate")),
            (Request, "alpha", Some("hub")),
            (Request, "hub", Some("beta")),
            (Response, "beta", Some("hub")),
        ],
        "{chain:#?}"
    );
    assert_eq!(chain[3].id, messages[0].log_id.clone().unwrap());
}

/// `post`: the model posts at the level of the channel it was asked in
/// (#dev, not the default channel: it named none), mentioning gamma, who is called; a post to a channel that
/// does not exist is a tool error the model reads, and it tries again.
#[tokio::test]
async fn a_model_agent_posts_in_the_hub_and_the_agents_it_mentions_are_called() {
    let fake = Fake::start(vec![
        fake::calls(&[(
            "p1",
            "post",
            json!({ "text": "@gamma the release is on Friday", "channel": "nowhere" }),
        )]),
        fake::calls(&[(
            "p2",
            "post",
            json!({ "text": "@gamma the release is on Friday" }),
        )]),
        fake::text("Told gamma."),
    ])
    .await;
    let gamma = support::answers(|text| format!("gamma: noted {}", text.replace('@', "")));
    let world = world(&fake, vec![("gamma", gamma), ("delta", support::silent())]).await;
    world
        .say("dev", "@alpha tell gamma about the release")
        .await;

    assert_eq!(fake.calls(), 3);
    let results = tool_results(&fake, 2);
    assert!(
        results[0].starts_with("error: the hub cannot do that: no channel"),
        "{results:?}"
    );
    let dev = world.channel_messages("dev").await;
    let posted = dev
        .iter()
        .find(|m| m.text == "@gamma the release is on Friday")
        .expect("alpha's post is in #dev");
    assert_eq!(posted.from, Sender::Agent("alpha".into()));
    assert_eq!(posted.handlers, ["gamma"]);
    assert_eq!(
        results[1],
        format!("posted message {} in #dev; calling gamma", posted.id)
    );
    let said: Vec<(&str, &str)> = dev
        .iter()
        .filter(|m| m.from != Sender::Hub)
        .map(|m| (m.from.name(), m.text.as_str()))
        .collect();
    assert!(
        said.contains(&("gamma", "gamma: noted gamma the release is on Friday")),
        "{said:?}"
    );
    assert!(said.contains(&("alpha", "Told gamma.")), "{said:?}");
    assert_eq!(world.calls.count("gamma"), 1);
    assert_eq!(world.calls.count("delta"), 0, "delta only observes");
}

/// H1 and a person's thread: a person's message at channel level
/// mentioning the model agent calls it alone (the others observe), and in
/// a thread a person opened with it, it answers every message (it is a
/// participant), mention or none.
#[tokio::test]
async fn h1_a_person_talks_to_the_model_agent_in_a_channel_and_in_a_thread() {
    let fake = Fake::start(vec![
        fake::text("alpha checked it."),
        fake::text("Hello ann, on it."),
        fake::text("Done: the tests pass."),
    ])
    .await;
    let agents = vec![
        ("beta", support::silent()),
        ("gamma", support::silent()),
        ("delta", support::silent()),
    ];
    let world = world(&fake, agents).await;
    let asked = world.say("general", "@alpha please check this").await;
    assert_eq!(asked.handlers, ["alpha"]);
    let answer = world.channel_messages("general").await;
    let answer = answer.iter().find(|m| m.from.name() == "alpha").unwrap();
    assert_eq!(answer.text, "alpha checked it.");
    assert_eq!(answer.reply_to.as_deref(), Some(asked.id.as_str()));
    assert!(world.calls.all().is_empty(), "the others only observe");
    for observer in ["beta", "gamma", "delta"] {
        let records = world.hub.observed(observer);
        assert!(
            records.iter().any(|r| r.message_id == asked.id),
            "{observer}: {records:?}"
        );
    }

    let ann = Sender::Person("ann".into());
    let opened = world
        .hub
        .collaborate(
            ann.clone(),
            Collaborate::new("alpha", "can you run the tests?"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(opened.delivered, "{opened:?}");
    world
        .say_in(ann, &opened.thread, "and tell me when they pass")
        .await;
    let said: Vec<(String, String)> = world
        .thread_messages(&opened.thread)
        .await
        .into_iter()
        .map(|m| (m.from.name().to_owned(), m.text))
        .collect();
    let said: Vec<(&str, &str)> = said.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        said,
        [
            ("ann", "@alpha can you run the tests?"),
            ("alpha", "Hello ann, on it."),
            ("ann", "and tell me when they pass"),
            ("alpha", "Done: the tests pass."),
        ]
    );
    assert_eq!(fake.calls(), 3);
    assert_eq!(last(&fake, 2, "user"), "and tell me when they pass");
}

/// T1 and T3 with the model agent as the target: beta collaborates with
/// it; the thread is {beta, alpha}, alpha's model answers there, and
/// beta's next message without a mention reaches alpha too.
#[tokio::test]
async fn t1_t3_an_agent_collaborates_with_the_model_agent() {
    let fake = Fake::start(vec![
        fake::text("The code looks fine."),
        fake::text("Checked that too."),
    ])
    .await;
    let world = world(&fake, vec![("beta", support::silent())]).await;
    let done = world
        .hub_client("beta")
        .collaborate(None, Collaborate::new("alpha", "please review the code"))
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(done.delivered, "{done:?}");
    let thread = world.hub.thread(&done.thread).unwrap();
    assert_eq!(thread.participants, ["beta", "alpha"]);
    world
        .say_in(
            Sender::Agent("beta".into()),
            &done.thread,
            "one more thing to check",
        )
        .await;
    let messages = world.thread_messages(&done.thread).await;
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m.from.name(), m.text.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("beta", "@alpha please review the code"),
            ("alpha", "The code looks fine."),
            ("beta", "one more thing to check"),
            ("alpha", "Checked that too."),
        ]
    );
    assert_eq!(messages[2].handlers, ["alpha"]);
    assert_eq!(last(&fake, 0, "user"), "@alpha please review the code");
    // alpha's answers go to beta, a participant: beta took them silently.
    assert_eq!(world.calls.count("beta"), 2);
}

/// L4 with the model agent as the asking agent: its model calls
/// `collaborate` with beta four times; the fourth is refused by the loop
/// guard, and the model reads why and when to try again.
#[tokio::test]
async fn l4_the_model_agents_fourth_collaborate_with_one_agent_is_refused() {
    let ask = |i: usize| {
        let id = format!("c{i}");
        (
            id,
            json!({ "target": "beta", "text": format!("question {i}") }),
        )
    };
    let asks: Vec<(String, Value)> = (0..4).map(ask).collect();
    let asks: Vec<(&str, &str, Value)> = asks
        .iter()
        .map(|(id, args)| (id.as_str(), "collaborate", args.clone()))
        .collect();
    let fake = Fake::start(vec![fake::calls(&asks), fake::text("beta is busy.")]).await;
    let world = world(&fake, vec![("beta", support::silent())]).await;
    world.say("general", "@alpha ask beta four questions").await;

    assert_eq!(fake.calls(), 2);
    let results = tool_results(&fake, 1);
    assert_eq!(results.len(), 4, "{results:?}");
    for result in &results[..3] {
        assert!(result.starts_with("delivered to beta in"), "{result}");
    }
    assert!(
        results[3].starts_with(
            "error: the hub refused: refused by the loop guard: alpha asked beta 3 times in the last 300 s"
        ),
        "{}",
        results[3]
    );
    assert!(results[3].contains("try again in"), "{}", results[3]);
    // One thread, continued; three questions in it.
    let threads = world.hub.threads(None);
    assert_eq!(threads.len(), 1);
    assert_eq!(world.thread_messages(&threads[0].id).await.len(), 3);
    assert_eq!(world.calls.count("beta"), 3);
    // The operator hears of it.
    let ops = world.channel_messages("ops").await;
    assert!(
        ops.iter().any(|m| m.from == Sender::Hub
            && m.text
                .starts_with("refused by the loop guard: alpha asked beta")),
        "{ops:#?}"
    );
    let answer = world.channel_messages("general").await;
    assert!(answer.iter().any(|m| m.text == "beta is busy."));
}
