//! A hub that dies mid-delivery: the agent's durable work resumes after the
//! restart, and the hub follows it again, so the answer still lands in the
//! thread and reaches the asking agent. Nothing acknowledged is lost.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aError, AgentCard};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_hub::{Collaborate, Hub, HubConfig, HubEvent, Post, Sender};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use tokio::sync::Notify;

/// Takes the work, then works until the process dies; resumed after a
/// restart, it answers.
struct Reviewer {
    started: Arc<Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for Reviewer {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        if ctx.resumed {
            return events
                .complete_with_text(format!(
                    "reviewed after the restart: {}",
                    ctx.message.text()
                ))
                .await;
        }
        events.working().await?;
        self.started.notify_one();
        std::future::pending::<()>().await;
        Ok(())
    }
}

/// Takes every call in silence.
struct Quiet;

#[async_trait::async_trait]
impl AgentExecutor for Quiet {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete().await
    }
}

/// Answers every message at once.
struct Reader;

#[async_trait::async_trait]
impl AgentExecutor for Reader {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!("gamma read: {}", ctx.message.text()))
            .await
    }
}

/// A hub in `dir/hub` with alpha, a durable beta (`dir/beta`) and gamma,
/// which answers at once.
async fn start(dir: &Path, started: Arc<Notify>) -> (Hub, Gateway) {
    let hub = Hub::builder(HubConfig::default())
        .data_dir(dir.join("hub"))
        .open()
        .unwrap();
    // The dead runtime's store lets go of its lock when its writer thread
    // ends, a moment after the runtime is dropped.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let store = loop {
        match a2a_store_sql::SqliteStore::open(dir.join("beta")).await {
            Ok(store) => break store,
            Err(err) if tokio::time::Instant::now() < deadline => {
                let _ = err;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(err) => panic!("{err}"),
        }
    };
    let gateway = Gateway::builder()
        .agent(hub.agent_definition())
        .agent(AgentDefinition::new(
            "alpha",
            AgentCard::new("alpha", "asks"),
            Quiet,
        ))
        .agent(AgentDefinition::new(
            "beta",
            AgentCard::new("beta", "reviews"),
            Reviewer { started },
        ))
        .agent(AgentDefinition::new(
            "gamma",
            AgentCard::new("gamma", "reads"),
            Reader,
        ))
        .handler_setup(move |name, handler| match name {
            "beta" => handler
                .task_store(store.clone())
                .push_config_store(store.clone())
                .job_store(store.clone()),
            _ => handler,
        })
        .build("http://127.0.0.1:1")
        .unwrap();
    hub.connect(&gateway, Default::default()).unwrap();
    (hub, gateway)
}

/// Runs `first` as a hub process would, on a runtime of its own, and then
/// drops that runtime at once, as a process killed with SIGKILL stops:
/// whatever it spawned and had not finished never runs again. Answers what
/// `first` returned.
async fn until_killed<F, Fut, T>(first: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = T>,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer = runtime.block_on(first());
        drop(runtime);
        answer
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_under_way_when_the_hub_dies_is_answered_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();

    // The first hub delivers, then dies with beta at work (its runtime
    // dropped mid-flight, as a killed process would be).
    let thread = until_killed(move || async move {
        let started = Arc::new(Notify::new());
        let (hub, _gateway) = start(&path, started.clone()).await;
        let done = hub
            .collaborate(
                Sender::Agent("alpha".into()),
                Collaborate::new("beta", "auth module review"),
            )
            .await
            .unwrap();
        assert!(done.delivered);
        started.notified().await;
        // The delivery is on record once the hub follows beta's task.
        let db = path.join("hub").join(a2a_hub::HUB_DB);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let conn = rusqlite::Connection::open(&db).unwrap();
            let pending: i64 = conn
                .query_row("SELECT COUNT(*) FROM deliveries", [], |row| row.get(0))
                .unwrap();
            if pending == 1 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no delivery on record"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        done.thread
    })
    .await;

    // The restarted hub finds the delivery; beta's job resumes and answers.
    let (hub, _gateway) = start(dir.path(), Arc::new(Notify::new())).await;
    let mut events = hub.subscribe();
    let answered = hub
        .messages(None, Some(&thread), 100)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.from.name() == "beta");
    let answer = match answered {
        Some(answer) => answer,
        None => tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let HubEvent::Message(m) = events.recv().await.unwrap() {
                    if m.from.name() == "beta" {
                        return (*m).clone();
                    }
                }
            }
        })
        .await
        .expect("beta's answer after the restart"),
    };
    assert_eq!(answer.thread.as_deref(), Some(thread.as_str()));
    assert_eq!(
        answer.text,
        "reviewed after the restart: @beta auth module review"
    );
    assert_eq!(answer.handlers, ["alpha"]);
    hub.wait_idle().await;
    let db = rusqlite::Connection::open(dir.path().join("hub").join(a2a_hub::HUB_DB)).unwrap();
    let pending: i64 = db
        .query_row("SELECT COUNT(*) FROM deliveries", [], |row| row.get(0))
        .unwrap();
    assert_eq!(pending, 0, "the delivery is done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_that_dies_right_after_acknowledging_a_delivery_still_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();

    // The first hub dies the moment it says beta took the message: before
    // beta starts, before anything else runs on its runtime.
    let thread = until_killed(move || async move {
        let (hub, _gateway) = start(&path, Arc::new(Notify::new())).await;
        let done = hub
            .collaborate(
                Sender::Agent("alpha".into()),
                Collaborate::new("beta", "parser review"),
            )
            .await
            .unwrap();
        assert!(done.delivered);
        done.thread
    })
    .await;

    // What it acknowledged was on record: the restarted hub follows beta's
    // resumed task and posts the answer, once.
    let (hub, _gateway) = start(dir.path(), Arc::new(Notify::new())).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let answers = loop {
        let answers: Vec<_> = hub
            .messages(None, Some(&thread), 100)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.from.name() == "beta")
            .collect();
        if !answers.is_empty() {
            break answers;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the acknowledged delivery was never answered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    hub.wait_idle().await;
    let said = hub.messages(None, Some(&thread), 100).await.unwrap();
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(
        answers[0].text,
        "reviewed after the restart: @beta parser review"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_that_dies_right_after_acknowledging_a_post_still_delivers_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();

    // The first hub dies the moment the post returns: its deliveries were
    // spawned on its runtime but never ran, as in a process killed right
    // after it answered 201.
    until_killed(move || async move {
        let (hub, _gateway) = start(&path, Arc::new(Notify::new())).await;
        let posted = hub
            .post(Post::new(
                Sender::Person("ann".into()),
                "general",
                "@gamma can you check the release notes",
            ))
            .await
            .unwrap();
        assert_eq!(posted.handlers, ["gamma"]);
    })
    .await;

    // The acknowledged post's delivery was on record: the restarted hub
    // delivers it, and gamma's answer lands once.
    let (hub, _gateway) = start(dir.path(), Arc::new(Notify::new())).await;
    let answers = |said: &[a2a_hub::HubMessage]| {
        said.iter()
            .filter(|m| m.from.name() == "gamma")
            .cloned()
            .collect::<Vec<_>>()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let said = hub.messages(Some("general"), None, 100).await.unwrap();
        if !answers(&said).is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the acknowledged post was never delivered: {said:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.wait_idle().await;
    let said = hub.messages(Some("general"), None, 100).await.unwrap();
    let answered = answers(&said);
    assert_eq!(answered.len(), 1, "{said:?}");
    assert_eq!(
        answered[0].text,
        "gamma read: @gamma can you check the release notes"
    );
    assert_eq!(said.len(), 2, "{said:?}");
    let db = rusqlite::Connection::open(dir.path().join("hub").join(a2a_hub::HUB_DB)).unwrap();
    let pending: i64 = db
        .query_row("SELECT COUNT(*) FROM deliveries", [], |row| row.get(0))
        .unwrap();
    assert_eq!(pending, 0, "the delivery is done");
}
