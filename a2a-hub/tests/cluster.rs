//! One hub for a cluster: the hub's record in PostgreSQL, shared by two
//! nodes (two hubs in this process, each with its own gateway, on one
//! schema). A post on one node shows live on the other's feed, the pair
//! guard counts both nodes' calls, and a delivery whose node dies is taken
//! over by the other and answered once. Plus the record itself on
//! PostgreSQL: what one hub wrote is what the next one opens with.
//!
//! Each test has a schema of its own; `A2A_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); unreachable, the test fails
//! if `CI=true` and is skipped with a notice otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aError, AgentCard};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_hub::{
    AgentLink, ChannelConfig, Collaborate, Hub, HubConfig, HubErrorKind, HubEvent, Post, Sender,
};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use tokio::sync::{broadcast, watch};

use support::{World, answers, silent, world_of};

fn url() -> String {
    std::env::var("A2A_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A connection to the test database and a fresh schema name for the hub;
/// `None` (skip) when PostgreSQL is unreachable outside CI.
async fn fresh_schema() -> Option<(PgConnection, String)> {
    let base: PgConnectOptions = url().parse().expect("A2A_TEST_POSTGRES_URL is not a URL");
    let admin = match PgConnection::connect_with(&base).await {
        Ok(admin) => admin,
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("PostgreSQL is unreachable in CI: {err}")
        }
        Err(err) => {
            eprintln!(
                "NOTICE: skipping a PostgreSQL test: unreachable ({err}); set A2A_TEST_POSTGRES_URL"
            );
            return None;
        }
    };
    let schema = format!("a2a_hub_test_{}", uuid::Uuid::new_v4().simple());
    Some((admin, schema))
}

async fn drop_schema(mut admin: PgConnection, schema: &str) {
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
}

fn config() -> HubConfig {
    HubConfig {
        channels: vec![ChannelConfig::new("general"), ChannelConfig::new("ops")],
        default_channel: Some("general".into()),
        ..HubConfig::default()
    }
}

/// Node `node` of the hub in `schema`.
fn node(schema: &str, node: &str) -> Hub {
    Hub::builder(config())
        .postgres(url())
        .postgres_schema(schema)
        .node_id(node)
        .lease_timeout(Duration::from_millis(900))
        .open()
        .unwrap()
}

/// Alpha asks and stays silent; beta answers "beta: TEXT" (mentions
/// defused), so an exchange is two messages.
fn team() -> Vec<(&'static str, support::Script)> {
    vec![
        ("alpha", silent()),
        (
            "beta",
            answers(|text| format!("beta: {}", text.replace('@', ""))),
        ),
    ]
}

/// The next event on `events` that `pick` takes, within 20 s.
async fn next_event<T>(
    events: &mut broadcast::Receiver<HubEvent>,
    mut pick: impl FnMut(&HubEvent) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("no such event within 20 s")
            .expect("the feed closed");
        if let Some(picked) = pick(&event) {
            return picked;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_on_postgres_is_what_the_next_start_opens_with() {
    let Some((admin, schema)) = fresh_schema().await else {
        return;
    };
    let first = Hub::builder(config())
        .postgres(url())
        .postgres_schema(&schema)
        .open()
        .unwrap();
    assert!(first.operator_token_is_new());
    let token = first.operator_token().to_owned();
    let world = world_of(first, team(), HashMap::new());
    world
        .hub
        .post(Post::new(
            Sender::Person("ann".into()),
            "general",
            "good morning",
        ))
        .await
        .unwrap();
    let done = world
        .hub
        .collaborate(
            Sender::Agent("alpha".into()),
            Collaborate::new("beta", "review the parser"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let said = world.thread_messages(&done.thread).await;
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(said[1].text, "beta: beta review the parser");
    assert_eq!(said[0].deliveries.len(), 1, "{said:?}");
    let general_before = world.channel_messages("general").await;
    assert!(general_before.iter().any(|m| m.text == "good morning"));
    world.hub.shutdown(Duration::from_secs(5)).await;

    let again = Hub::builder(config())
        .postgres(url())
        .postgres_schema(&schema)
        .open()
        .unwrap();
    assert!(!again.operator_token_is_new());
    assert_eq!(again.operator_token(), token);
    let thread = again.thread(&done.thread).expect("the thread is back");
    assert_eq!(thread.participants, ["alpha", "beta"]);
    assert_eq!(thread.messages, 2);
    let history = again.messages(None, Some(&done.thread), 100).await.unwrap();
    assert_eq!(
        history.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
        said.iter().map(|m| m.text.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(history[0].deliveries, said[0].deliveries);
    let general = again.messages(Some("general"), None, 100).await.unwrap();
    assert_eq!(general, general_before);
    drop_schema(admin, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_on_one_node_shows_live_on_the_other_once() {
    let Some((admin, schema)) = fresh_schema().await else {
        return;
    };
    let one = world_of(node(&schema, "one"), team(), HashMap::new());
    let two = world_of(node(&schema, "two"), team(), HashMap::new());
    let mut on_one = one.hub.subscribe();
    let mut on_two = two.hub.subscribe();
    // The other node listens once it is connected; a first post proves it.
    let hello = one
        .hub
        .post(Post::new(Sender::Person("ann".into()), "general", "hello"))
        .await
        .unwrap();
    let seen = next_event(&mut on_two, |event| match event {
        HubEvent::Message(m) if m.id == hello.id => Some(m.clone()),
        _ => None,
    })
    .await;
    assert_eq!(seen.text, "hello");
    assert_eq!(seen.from, Sender::Person("ann".into()));
    // Its observers keep their record of it on node two as well.
    let observed = two.hub.observed("alpha");
    assert_eq!(observed.len(), 1, "{observed:?}");
    assert_eq!(observed[0].message_id, hello.id);

    // A thread opened on node one: node two shows it and can post in it.
    let done = one
        .hub
        .collaborate(
            Sender::Agent("alpha".into()),
            Collaborate::new("beta", "plan the release"),
        )
        .await
        .unwrap();
    let thread = next_event(&mut on_two, |event| match event {
        HubEvent::Thread(t) if t.id == done.thread => Some(t.clone()),
        _ => None,
    })
    .await;
    assert_eq!(thread.channel, "general");
    one.hub.wait_idle().await;
    // Node one's own post reached its feed once: from its own write, not
    // again from the database's notice.
    let mut hellos = 0;
    let reply = two
        .hub
        .post(Post::in_thread(
            Sender::Person("bob".into()),
            &done.thread,
            "from node two",
        ))
        .await
        .unwrap();
    next_event(&mut on_one, |event| match event {
        HubEvent::Message(m) if m.id == reply.id => Some(()),
        HubEvent::Message(m) if m.id == hello.id => {
            hellos += 1;
            None
        }
        _ => None,
    })
    .await;
    two.hub.wait_idle().await;
    one.hub.wait_idle().await;
    // Both nodes' history is the one record.
    let on_node_one = one.thread_messages(&done.thread).await;
    let on_node_two = two.thread_messages(&done.thread).await;
    let ids = |messages: &[a2a_hub::HubMessage]| {
        messages.iter().map(|m| m.id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&on_node_one), ids(&on_node_two));
    assert!(on_node_one.iter().any(|m| m.id == reply.id));

    loop {
        match on_one.try_recv() {
            Ok(HubEvent::Message(m)) if m.id == hello.id => hellos += 1,
            Ok(_) => {}
            Err(broadcast::error::TryRecvError::Lagged(_)) => {}
            Err(_) => break,
        }
    }
    assert_eq!(hellos, 1);
    one.hub.shutdown(Duration::from_secs(5)).await;
    two.hub.shutdown(Duration::from_secs(5)).await;
    drop_schema(admin, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pair_guard_counts_the_calls_of_every_node() {
    let Some((admin, schema)) = fresh_schema().await else {
        return;
    };
    let one = world_of(node(&schema, "one"), team(), HashMap::new());
    let two = world_of(node(&schema, "two"), team(), HashMap::new());
    let ask = |world: &World, text: &str| {
        let hub = world.hub.clone();
        let text = text.to_owned();
        async move {
            hub.collaborate(
                Sender::Agent("alpha".into()),
                Collaborate::new("beta", text),
            )
            .await
        }
    };
    ask(&one, "first").await.unwrap();
    ask(&two, "second").await.unwrap();
    ask(&one, "third").await.unwrap();
    let refused = ask(&two, "fourth")
        .await
        .expect_err("the fourth is refused");
    assert_eq!(refused.kind(), HubErrorKind::Refused, "{refused}");
    assert!(refused.retry_after().is_some());
    // And on the node that admitted two of the three.
    let refused = ask(&one, "fifth").await.expect_err("the fifth is refused");
    assert_eq!(refused.kind(), HubErrorKind::Refused, "{refused}");
    one.hub.wait_idle().await;
    two.hub.wait_idle().await;
    one.hub.shutdown(Duration::from_secs(5)).await;
    two.hub.shutdown(Duration::from_secs(5)).await;
    drop_schema(admin, &schema).await;
}

/// Beta on a server of its own that both nodes reach: it takes the work,
/// and answers once the test lets it.
struct SlowReviewer {
    release: watch::Receiver<bool>,
    calls: Arc<std::sync::atomic::AtomicUsize>,
}

#[async_trait::async_trait]
impl AgentExecutor for SlowReviewer {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        events.working().await?;
        let mut release = self.release.clone();
        let _ = release.wait_for(|go| *go).await;
        events
            .complete_with_text(format!("beta: reviewed {}", ctx.message.text()))
            .await
    }
}

/// Serves beta on 127.0.0.1; answers its URL.
async fn serve_beta(reviewer: SlowReviewer) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let gateway = Gateway::builder()
        .agent(AgentDefinition::new(
            "beta",
            AgentCard::new("beta", "reviews slowly"),
            reviewer,
        ))
        .build(&base)
        .unwrap();
    let app = gateway.router(a2a_server::http::HttpConfig::default());
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("{base}/agents/beta")
}

async fn deliveries(admin: &mut PgConnection, schema: &str) -> Vec<(String, String)> {
    sqlx::query_as(&format!("SELECT message_id, node FROM {schema}.deliveries"))
        .fetch_all(admin)
        .await
        .unwrap()
}

/// Waits up to 30 s (real time: the nodes talk through the database) for
/// node `holder` to hold a delivery.
async fn held_by(admin: &mut PgConnection, schema: &str, holder: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if deliveries(admin, schema)
            .await
            .iter()
            .any(|(_, n)| n == holder)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "node {holder} holds no delivery within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_whose_node_dies_is_taken_over_and_answered_once() {
    let Some((mut admin, schema)) = fresh_schema().await else {
        return;
    };
    let (release, released) = watch::channel(false);
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let beta = serve_beta(SlowReviewer {
        release: released,
        calls: calls.clone(),
    })
    .await;
    let links = || HashMap::from([("beta".to_owned(), AgentLink::remote(beta.clone(), None))]);

    // Node two lives on; node one delivers, then dies with beta at work
    // (its runtime dropped mid-flight, as a killed process would be).
    let two = world_of(node(&schema, "two"), team(), links());
    let mut on_two = two.hub.subscribe();
    let (one_schema, one_links) = (schema.clone(), links());
    let thread = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let thread = runtime.block_on(async move {
            let one = world_of(node(&one_schema, "one"), team(), one_links);
            let done = one
                .hub
                .collaborate(
                    Sender::Agent("alpha".into()),
                    Collaborate::new("beta", "the auth module"),
                )
                .await
                .unwrap();
            assert!(done.delivered);
            // On record as node one's once it follows beta's task.
            let mut admin = PgConnection::connect(&url()).await.unwrap();
            held_by(&mut admin, &one_schema, "one").await;
            done.thread
        });
        drop(runtime);
        thread
    })
    .await
    .unwrap();

    // Node two takes the delivery over once its lease expires...
    held_by(&mut admin, &schema, "two").await;
    // ...and when beta answers, posts the answer in the thread, once.
    release.send(true).unwrap();
    let answer = next_event(&mut on_two, |event| match event {
        HubEvent::Message(m)
            if m.thread.as_deref() == Some(thread.as_str())
                && m.from == Sender::Agent("beta".into()) =>
        {
            Some(m.clone())
        }
        _ => None,
    })
    .await;
    assert_eq!(answer.text, "beta: reviewed @beta the auth module");
    two.hub.wait_idle().await;
    let said = two.thread_messages(&thread).await;
    let answers = said
        .iter()
        .filter(|m| m.from == Sender::Agent("beta".into()))
        .count();
    assert_eq!(answers, 1, "{said:?}");
    assert!(deliveries(&mut admin, &schema).await.is_empty());
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    two.hub.shutdown(Duration::from_secs(5)).await;
    drop_schema(admin, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_whose_node_dies_before_delivering_it_is_delivered_by_another_once() {
    let Some((mut admin, schema)) = fresh_schema().await else {
        return;
    };
    let two = world_of(node(&schema, "two"), team(), HashMap::new());
    let mut on_two = two.hub.subscribe();

    // Node one acknowledges a person's post, then dies the moment the post
    // returns: its delivery to beta was spawned on its runtime but never
    // ran, as in a process killed right after it answered 201.
    let one_schema = schema.clone();
    let (posted, one_calls) = tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let posted = runtime.block_on(async move {
            let one = world_of(node(&one_schema, "one"), team(), HashMap::new());
            let posted = one
                .hub
                .post(Post::new(
                    Sender::Person("ann".into()),
                    "general",
                    "@beta can you check the build",
                ))
                .await
                .unwrap();
            (posted, one.calls.clone())
        });
        drop(runtime);
        posted
    })
    .await
    .unwrap();
    assert_eq!(posted.handlers, ["beta"]);
    assert_eq!(one_calls.count("beta"), 0, "node one never delivered it");

    // Node two takes the delivery over once node one's lease expires,
    // delivers it, and beta's answer lands once.
    let answer = next_event(&mut on_two, |event| match event {
        HubEvent::Message(m) if m.from == Sender::Agent("beta".into()) => Some(m.clone()),
        _ => None,
    })
    .await;
    assert_eq!(answer.text, "beta: beta can you check the build");
    assert_eq!(answer.reply_to.as_deref(), Some(posted.id.as_str()));
    two.hub.wait_idle().await;
    let said = two.channel_messages("general").await;
    let answers = said
        .iter()
        .filter(|m| m.from == Sender::Agent("beta".into()))
        .count();
    assert_eq!(answers, 1, "{said:?}");
    assert_eq!(two.calls.count("beta"), 1);
    assert!(deliveries(&mut admin, &schema).await.is_empty());
    two.hub.shutdown(Duration::from_secs(5)).await;
    drop_schema(admin, &schema).await;
}
