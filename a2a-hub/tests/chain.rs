//! One exchange, one chain, each message once: the hub and the agents'
//! servers write to one conversation log (as `a2a serve` sets them up), and
//! a person's post, the hub's delivery to each handler, each answer (which
//! is also the message posted in the thread) and the follow-ups read back
//! as one `parent_id` chain, each message on one line with its true type,
//! sender and recipient.
#![allow(clippy::unwrap_used)]

mod support;

use a2a_conversation::{ConversationLog, EntryType, LogConfig, LogEntry, LogReader};
use a2a_hub::{ChannelConfig, Collaborate, HubConfig, Sender};
use support::{team, world_all_logged};

fn config() -> HubConfig {
    HubConfig {
        channels: vec![ChannelConfig::new("general"), ChannelConfig::new("ops")],
        default_channel: Some("general".into()),
        ..HubConfig::default()
    }
}

fn line(entry: &LogEntry) -> (EntryType, String, Option<String>, String) {
    (
        entry.kind,
        entry.from_agent.clone(),
        entry.to_agent.clone(),
        entry.content.as_str().unwrap_or("(parts)").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_exchange_is_one_chain_back_to_the_persons_post_with_each_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    let world = world_all_logged(config(), team(), log.clone()).await;
    let ann = Sender::Person("ann".into());
    let opened = world
        .hub
        .collaborate(
            ann.clone(),
            Collaborate::new("beta", "review the auth module"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let follow_up = world
        .say_in(ann, &opened.thread, "@gamma please check the tests too")
        .await;
    let thread = world.thread_messages(&opened.thread).await;
    // gamma's answer to the follow-up (beta, a participant, answers it too).
    let last = thread
        .iter()
        .find(|m| m.from == Sender::Agent("gamma".into()))
        .unwrap();
    log.flush().await.unwrap();

    let reader = LogReader::new(dir.path());
    let chain: Vec<_> = reader
        .chain(last.log_id.as_deref().unwrap())
        .unwrap()
        .iter()
        .map(line)
        .collect();
    for entry in &chain {
        eprintln!("{entry:?}");
    }
    let hub = || Some("hub".to_owned());
    use EntryType::{Request, Response};
    assert_eq!(
        chain,
        [
            (
                Request,
                "ann".into(),
                hub(),
                "@beta review the auth module".into()
            ),
            (
                Request,
                "hub".into(),
                Some("beta".into()),
                "@beta review the auth module".into()
            ),
            (
                Response,
                "beta".into(),
                hub(),
                "beta: beta review the auth module".into()
            ),
            (
                Request,
                "ann".into(),
                hub(),
                "@gamma please check the tests too".into()
            ),
            (
                Request,
                "hub".into(),
                Some("gamma".into()),
                "@gamma please check the tests too".into()
            ),
            (
                Response,
                "gamma".into(),
                hub(),
                "gamma: gamma please check the tests too".into()
            ),
        ]
    );
    // Each message of the thread is its line in the log.
    let answer = thread
        .iter()
        .find(|m| m.from == Sender::Agent("beta".into()) && m.reply_to.is_some())
        .unwrap();
    let lines = reader.tail(1000).unwrap();
    for message in [&thread[0], answer, &follow_up, last] {
        let id = message.log_id.as_deref().unwrap();
        assert_eq!(lines.iter().filter(|l| l.id == id).count(), 1);
    }
    // Each message once: every text is on one line (beta's answer and the
    // follow-up's delivery to beta, a participant, each once), and nothing
    // is logged without its recipient but the hub's own decisions.
    let count = |text: &str| {
        lines
            .iter()
            .filter(|l| l.content.as_str() == Some(text) && l.from_agent != "hub")
            .count()
    };
    assert_eq!(count("beta: beta review the auth module"), 1);
    assert_eq!(count("@beta review the auth module"), 1);
    assert_eq!(count("gamma: gamma please check the tests too"), 1);
    assert_eq!(count("@gamma please check the tests too"), 1);
    assert!(
        lines
            .iter()
            .all(|l| l.to_agent.is_some() || l.kind == EntryType::Decision),
        "{lines:#?}"
    );
    // One delivery per handler, after the post it delivers.
    let deliveries = lines
        .iter()
        .filter(|l| l.kind == Request && l.from_agent == "hub")
        .filter(|l| l.parent_id == follow_up.log_id)
        .count();
    assert_eq!(deliveries, follow_up.handlers.len(), "{lines:#?}");
    // The messages carry their deliveries' outcomes.
    let states: Vec<String> = follow_up.deliveries.iter().map(|d| d.describe()).collect();
    assert!(
        states.is_empty(),
        "a message just posted has none yet: {states:?}"
    );
    let posted = world
        .thread_messages(&opened.thread)
        .await
        .into_iter()
        .find(|m| m.id == follow_up.id)
        .unwrap();
    let states: Vec<String> = posted.deliveries.iter().map(|d| d.describe()).collect();
    assert_eq!(states, ["gamma: completed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collaboration_an_agent_asks_for_over_a2a_continues_the_chain_of_its_request() {
    use std::sync::Arc;
    use support::{Script, Turn};

    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    // alpha passes what it is asked to beta, through the hub's A2A face.
    let alpha: Script = Arc::new(|turn: Turn| {
        Box::pin(async move {
            if turn
                .call
                .hub
                .as_ref()
                .is_some_and(|h| h.from_kind != "person")
            {
                return None;
            }
            let ask = Collaborate::new("beta", "review the auth module");
            let done = turn.hub.collaborate(Some(&turn.ctx), ask).await.unwrap();
            Some(format!("passed to beta in {}", done.thread))
        })
    });
    let mut agents = team();
    agents[0].1 = alpha;
    let world = world_all_logged(config(), agents, log.clone()).await;
    world
        .say("general", "@alpha get beta to review the auth module")
        .await;
    let thread = world.hub.threads(None).pop().unwrap();
    let messages = world.thread_messages(&thread.id).await;
    let answer = messages
        .iter()
        .find(|m| m.from == Sender::Agent("beta".into()))
        .unwrap();
    log.flush().await.unwrap();

    let reader = LogReader::new(dir.path());
    let chain: Vec<_> = reader
        .chain(answer.log_id.as_deref().unwrap())
        .unwrap()
        .iter()
        .map(line)
        .collect();
    for entry in &chain {
        eprintln!("{entry:?}");
    }
    let hub = || Some("hub".to_owned());
    use EntryType::{Request, Response};
    // The person's post, its delivery to alpha, alpha's call to the hub
    // (logged once, by the hub's server, as the thread's first message),
    // the delivery to beta and beta's answer.
    assert_eq!(chain.len(), 5, "{chain:#?}");
    assert_eq!(
        chain[0],
        (
            Request,
            "ann".into(),
            hub(),
            "@alpha get beta to review the auth module".into()
        )
    );
    assert_eq!(chain[1].0, Request);
    assert_eq!(
        (chain[1].1.as_str(), chain[1].2.as_deref()),
        ("hub", Some("alpha"))
    );
    assert_eq!((chain[2].0, chain[2].1.as_str()), (Request, "alpha"));
    assert_eq!(chain[2].2, hub());
    assert_eq!(
        chain[3],
        (
            Request,
            "hub".into(),
            Some("beta".into()),
            "@beta review the auth module".into()
        )
    );
    assert_eq!(
        chain[4],
        (
            Response,
            "beta".into(),
            hub(),
            "beta: beta review the auth module".into()
        )
    );
    // The thread's first message is alpha's request line: not logged twice.
    let lines = reader.tail(1000).unwrap();
    let asked = messages[0].log_id.as_deref().unwrap();
    let request = reader.chain(asked).unwrap().pop().unwrap();
    assert_eq!(
        (request.kind, request.from_agent.as_str()),
        (Request, "alpha")
    );
    assert!(
        !lines.iter().any(
            |l| l.content.as_str() == Some("@beta review the auth module")
                && l.from_agent == "alpha"
        ),
        "the thread's message was logged again: {lines:#?}"
    );
}
