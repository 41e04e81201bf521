//! Crash tests over real processes: a durable server accepts 1,000 tasks of a
//! multi-turn agent, is killed with SIGKILL mid-flight, and starts again on the
//! same store. Every task id a client was given must be accounted for, none
//! twice, and no checkpointed turn may run again.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use a2a_client::Client;
use a2a_core::{SendMessageResponse, TaskState};
use futures::StreamExt;
use support::durable::{effects, effects_per_turn, start, states, wait_for_effects};

const TASKS: usize = 1000;
const TURNS: u64 = 4;

/// What a crash test saw, for its report.
struct Outcome {
    given: usize,
    completed: usize,
    failed: usize,
    effects_before_crash: usize,
    repeated_turns: usize,
}

async fn crash_and_recover(store: &str, dir: &Path, after_kill: impl AsyncFnOnce()) -> Outcome {
    let effects_path = dir.join("effects.log");
    let mut sut = start(store, &effects_path, &[]).await;
    let client = Client::connect(&sut.url).await.unwrap();
    let text = format!("turns {TURNS} ms 2000");
    // Every request is answered before the kill (turns are long enough that
    // the first ones are still running then).
    let client = std::sync::Arc::new(client);
    let sending = tokio::spawn({
        let client = client.clone();
        async move {
            futures::stream::iter(0..TASKS)
                .map(|_| {
                    let client = client.clone();
                    let request = support::immediate(&text);
                    async move {
                        match client.send_message(request, None).await.unwrap() {
                            SendMessageResponse::Task(task) => Some(task.id),
                            SendMessageResponse::Message(m) => {
                                panic!("expected a task, got {m:?}")
                            }
                        }
                    }
                })
                .buffer_unordered(64)
                .collect::<Vec<Option<String>>>()
                .await
        }
    });

    let given: Vec<String> = sending.await.unwrap().into_iter().flatten().collect();
    assert_eq!(given.len(), TASKS);
    // Mid-flight: a few hundred turns committed, most of the work to do.
    wait_for_effects(&effects_path, |lines| {
        lines
            .iter()
            .filter(|(kind, ..)| kind == "committed")
            .count()
            >= TASKS / 2
    })
    .await;
    sut.child.start_kill().unwrap();
    sut.child.wait().await.unwrap();
    let unique: HashSet<&String> = given.iter().collect();
    assert_eq!(unique.len(), TASKS, "every accepted task has its own id");
    let before_crash = effects(&effects_path).len();
    after_kill().await;

    let sut = start(store, &effects_path, &[]).await;
    let client = Client::connect(&sut.url).await.unwrap();
    let settled = tokio::time::timeout(Duration::from_secs(240), async {
        loop {
            let states = states(&client).await;
            if given
                .iter()
                .all(|id| states.get(id).is_some_and(|(s, _)| s.is_terminal()))
            {
                return states;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("every task settles after the restart");

    // Accounted for: completed after resume, or failed with its reason.
    for id in &given {
        let (state, text) = &settled[id];
        match state {
            TaskState::Completed => assert_eq!(text, &format!("{TURNS} turns done")),
            TaskState::Failed => assert!(!text.is_empty(), "task {id} failed without a reason"),
            other => panic!("task {id} ended {other}"),
        }
    }
    assert_eq!(settled.len(), TASKS, "no task appeared from nowhere");

    // No checkpointed turn ran again: once a turn's commit is noted, its
    // effect never shows up later in the file.
    assert!(
        effects(&effects_path).len() > before_crash,
        "work resumed after the restart"
    );
    let effects_per_turn = effects_per_turn(&effects_path);
    // A completed task did every turn. (Its last commit note may be missing:
    // the process can die after the checkpoint is stored, before the note.)
    for id in &given {
        if settled[id].0 == TaskState::Completed {
            for turn in 1..=TURNS {
                assert!(
                    effects_per_turn.contains_key(&(id.clone(), turn)),
                    "completed task {id} never did turn {turn}"
                );
            }
        }
    }
    // A turn interrupted by the crash may run twice; no other.
    let repeated = effects_per_turn.values().filter(|n| **n > 1).count();
    assert!(repeated <= settled.len(), "{repeated} turns repeated");
    drop(sut);
    let count = |state| settled.values().filter(|(s, _)| *s == state).count();
    let outcome = Outcome {
        given: given.len(),
        completed: count(TaskState::Completed),
        failed: count(TaskState::Failed),
        effects_before_crash: before_crash,
        repeated_turns: repeated,
    };
    eprintln!(
        "{store}: {} ids given, {} completed, {} failed; {} effect lines before the kill; {} interrupted turns ran again",
        outcome.given,
        outcome.completed,
        outcome.failed,
        outcome.effects_before_crash,
        outcome.repeated_turns
    );
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_survives_kill_9_mid_flight() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let store = format!("sqlite:{}", data.display());
    let database = data.join(a2a_store_sql::DATABASE_FILE);
    // A kill mid-transaction leaves a database that reads back whole.
    let check = async || {
        use sqlx::Connection as _;
        let url = format!("sqlite://{}?mode=ro", database.display());
        let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let (verdict,): (String,) = sqlx::query_as("PRAGMA integrity_check")
            .fetch_one(&mut db)
            .await
            .unwrap();
        assert_eq!(verdict, "ok");
    };
    let outcome = crash_and_recover(&store, dir.path(), check).await;
    assert_eq!(outcome.completed + outcome.failed, TASKS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_survives_kill_9_mid_flight() {
    let Some(url) = support::postgres_database("crash").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let outcome = crash_and_recover(&url, dir.path(), async || {}).await;
    assert_eq!(outcome.completed + outcome.failed, TASKS);
    support::drop_postgres_database(&url).await;
}
