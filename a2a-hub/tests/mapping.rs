//! Mapping agent ids to endpoints and the allow-list of channels
//! (scenarios M1-M4 and S1-S4 of `collaboration-scenarios.md`).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use a2a_hub::{AgentLink, ChannelConfig, Collaborate, HubConfig, HubErrorKind, Sender};
use support::{Script, World, answers, silent, world, world_with};

/// alpha (silent: it asks, it does not answer back), beta and gamma
/// (answering "NAME: TEXT").
fn agents() -> Vec<(&'static str, Script)> {
    vec![
        ("alpha", silent()),
        ("beta", answers(|text| format!("beta: {text}"))),
        ("gamma", answers(|text| format!("gamma: {text}"))),
    ]
}

fn alpha() -> Sender {
    Sender::Agent("alpha".to_owned())
}

/// Asks `target` as alpha, and waits for what it set off.
async fn ask(world: &World, request: Collaborate) -> a2a_hub::Collaboration {
    let collaboration = world
        .hub
        .collaborate(alpha(), request)
        .await
        .expect("collaborate");
    world.hub.wait_idle().await;
    collaboration
}

#[tokio::test]
async fn m1_an_agent_id_resolves_to_its_endpoint_and_delivery_succeeds() {
    let world = world(HubConfig::default(), agents()).await;
    let table = world.hub.mapping_table();
    let beta = table
        .lines()
        .find(|line| line.starts_with("beta "))
        .expect("beta is mapped");
    assert!(beta.contains("in-process"), "{table}");
    assert!(beta.contains("/agents/beta"), "{table}");

    let collaboration = ask(&world, Collaborate::new("beta", "please review the code")).await;
    assert_eq!(collaboration.target, "beta");
    assert!(collaboration.delivered, "{collaboration:?}");
    let calls = world.calls.of("beta");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].text, "@beta please review the code");
    assert_eq!(calls[0].context_id, collaboration.thread);
    let messages = world.thread_messages(&collaboration.thread).await;
    assert_eq!(
        messages.last().expect("answer").text,
        "beta: @beta please review the code"
    );
    assert_eq!(world.calls.count("gamma"), 0);
}

#[tokio::test]
async fn m2_an_account_id_resolves_through_the_account_fallback() {
    let config = HubConfig {
        accounts: BTreeMap::from([("default".to_owned(), "beta".to_owned())]),
        ..HubConfig::default()
    };
    let world = world(config, agents()).await;
    assert_eq!(world.hub.resolve("default").expect("mapped"), "beta");
    let collaboration = ask(
        &world,
        Collaborate::new("default", "please review the code"),
    )
    .await;
    assert_eq!(collaboration.target, "beta");
    assert!(collaboration.delivered, "{collaboration:?}");
    assert!(
        collaboration.title.starts_with("alpha → beta"),
        "{collaboration:?}"
    );
    let calls = world.calls.of("beta");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].text, "@beta please review the code");
    let thread = world.hub.thread(&collaboration.thread).expect("thread");
    assert_eq!(thread.participants, ["alpha", "beta"]);
}

/// What a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().expect("log").clone()).expect("utf-8")
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn m3_the_hub_logs_the_whole_mapping_table_when_it_starts() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(captured.clone())
        .finish();
    // Process-wide: a subscriber for this thread alone misses events when
    // other tests register the same call sites concurrently. Other tests'
    // hubs log here too; this one's table is told apart by its rows.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let config = HubConfig {
        accounts: BTreeMap::from([("default".to_owned(), "beta".to_owned())]),
        ..HubConfig::default()
    };
    let remote = AgentLink::remote("http://127.0.0.1:9/agents/gamma", None);
    let links = HashMap::from([("gamma".to_owned(), remote)]);
    let world = world_with(config, agents(), None, links).await;

    let table = world.hub.mapping_table();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["AGENT", "ENDPOINT"]);
    let names: Vec<&str> = rows[1..].iter().map(|row| row[0]).collect();
    assert_eq!(names, ["alpha", "beta", "gamma", "default"]);
    for agent in ["alpha", "beta"] {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("{agent} ")))
            .expect("row");
        assert!(row.contains(&format!("in-process (http://127.0.0.1:1/agents/{agent}")));
    }
    assert!(table.contains("http://127.0.0.1:9/agents/gamma"), "{table}");
    assert!(table.contains("account of agent beta"), "{table}");

    let log = captured.text();
    assert!(
        log.contains(&format!("collaboration hub agents:\n{}", table.trim_end())),
        "{log}"
    );
}

#[tokio::test]
async fn m4_an_agent_added_to_the_config_without_a_restart_fails_saying_a_restart_is_needed() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("gateway.toml");
    std::fs::write(
        &file,
        "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n\n[hub]\ndefault_channel = \"general\"\n\n[hub.channels.general]\n",
    )
    .expect("file");
    let config = HubConfig {
        config_file: Some(file.clone()),
        ..HubConfig::default()
    };
    let world = world(config, agents()).await;

    // Before: zeta is nobody; the error says where to add it.
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("zeta", "please review"))
        .await
        .expect_err("no zeta");
    assert_eq!(err.kind(), HubErrorKind::Invalid);
    assert!(err.message().contains("[agents.zeta]"), "{err}");
    assert!(!err.message().contains("restart"), "{err}");

    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .expect("append");
    out.write_all(b"\n[agents.zeta]\nkind = \"rust\"\nexecutor = \"echo\"\n")
        .expect("write");
    drop(out);
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("zeta", "please review"))
        .await
        .expect_err("zeta is not loaded");
    assert_eq!(err.kind(), HubErrorKind::Invalid);
    let message = err.message();
    assert!(message.contains("\"zeta\""), "{message}");
    assert!(
        message.contains("added after the gateway started"),
        "{message}"
    );
    assert!(message.contains("restart"), "{message}");
    assert!(message.contains(&file.display().to_string()), "{message}");
    assert!(world.hub.threads(None).is_empty());
    assert!(world.calls.all().is_empty());
}

/// general (the default), dev and random; threads may open in general and
/// dev only; ops is the operator's.
fn channels_config() -> HubConfig {
    HubConfig {
        channels: vec![
            ChannelConfig::new("general"),
            ChannelConfig::new("dev"),
            ChannelConfig::new("random"),
            ChannelConfig::new("ops"),
        ],
        default_channel: Some("general".to_owned()),
        thread_channels: Some(vec!["general".to_owned(), "dev".to_owned()]),
        operator_channel: Some("ops".to_owned()),
        ..HubConfig::default()
    }
}

#[tokio::test]
async fn s1_collaborate_in_an_allowed_channel_opens_a_thread_there() {
    let world = world(channels_config(), agents()).await;
    let collaboration = ask(
        &world,
        Collaborate::new("beta", "please review the code").in_channel("dev"),
    )
    .await;
    assert_eq!(collaboration.channel, "dev");
    assert!(collaboration.delivered, "{collaboration:?}");
    let threads = world.hub.threads(Some("dev"));
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].id, collaboration.thread);
    assert!(world.hub.threads(Some("general")).is_empty());
    assert_eq!(world.calls.count("beta"), 1);
}

#[tokio::test]
async fn s2_collaborate_in_a_channel_off_the_allow_list_fails_at_once() {
    let world = world(channels_config(), agents()).await;
    for channel in ["random", "ops"] {
        let err = world
            .hub
            .collaborate(
                alpha(),
                Collaborate::new("beta", "please review the code").in_channel(channel),
            )
            .await
            .expect_err("not allowed");
        assert_eq!(err.kind(), HubErrorKind::Invalid, "{err}");
        let message = err.message();
        assert!(message.starts_with("channel not allowed"), "{message}");
        assert!(message.contains(&format!("{channel:?}")), "{message}");
        assert!(message.contains("allowed: general, dev"), "{message}");
        assert!(message.contains("thread_channels"), "{message}");
    }
    // A channel that does not exist is another error, with its own fix.
    let err = world
        .hub
        .collaborate(
            alpha(),
            Collaborate::new("beta", "please review the code").in_channel("nope"),
        )
        .await
        .expect_err("no such channel");
    assert_eq!(err.kind(), HubErrorKind::NotFound, "{err}");
    assert!(err.message().contains("[hub.channels.nope]"), "{err}");
    assert!(world.hub.threads(None).is_empty());
    assert!(world.calls.all().is_empty());
}

#[tokio::test]
async fn s3_collaborate_without_a_channel_opens_the_thread_in_the_default_channel() {
    let world = world(channels_config(), agents()).await;
    let collaboration = ask(&world, Collaborate::new("beta", "please review the code")).await;
    assert_eq!(collaboration.channel, "general");
    assert!(collaboration.delivered, "{collaboration:?}");
    assert_eq!(world.hub.threads(Some("general")).len(), 1);
    // People see it open there.
    let general = world.channel_messages("general").await;
    assert_eq!(general.len(), 1);
    assert!(general[0].text.contains("opened the thread"), "{general:?}");
}

#[tokio::test]
async fn s4_collaborate_without_a_channel_and_no_default_fails_saying_how_to_set_one() {
    let config = HubConfig {
        default_channel: None,
        ..channels_config()
    };
    let world = world(config, agents()).await;
    let err = world
        .hub
        .collaborate(alpha(), Collaborate::new("beta", "please review the code"))
        .await
        .expect_err("no default channel");
    assert_eq!(err.kind(), HubErrorKind::Invalid, "{err}");
    let message = err.message();
    assert!(message.contains("no default channel"), "{message}");
    assert!(
        message.contains("default_channel = \"NAME\" under [hub]"),
        "{message}"
    );
    assert!(message.contains("HubConfig::default_channel"), "{message}");
    // Naming a channel still works.
    let collaboration = ask(
        &world,
        Collaborate::new("beta", "please review the code").in_channel("dev"),
    )
    .await;
    assert_eq!(collaboration.channel, "dev");
    assert_eq!(world.hub.threads(None).len(), 1);
}
