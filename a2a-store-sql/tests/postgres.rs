//! `PostgresStore` against a real server: the shared suites, each test in a
//! schema of its own (so they run in parallel and leave nothing behind).
//!
//! The server is `A2A_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`). When it cannot be reached the
//! tests fail if `CI=true`, and are skipped with a notice otherwise.
#![cfg(feature = "postgres")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::future::Future;

use a2a_core::{AuthenticationInfo, TaskPushNotificationConfig};
use a2a_server::Caller;
use a2a_server::store::PushConfigStore;
use a2a_store_suite::{
    fencing_suite, job_store_suite, job_writes_suite, lease_suite, push_config_store_suite,
    task_store_suite,
};
use std::sync::Arc;
use std::time::Duration;

use a2a_core::{Artifact, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState};
use a2a_server::cluster::{CancelNotice, ClusterBus, ClusterNotice, Interest};
use a2a_server::store::{Cause, TaskStore};
use a2a_store_sql::{OpenError, PostgresCluster, PostgresStore, PushKey};
use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};

mod support;

fn url() -> String {
    std::env::var("A2A_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// The server's address for messages: the URL without its user and password.
fn shown_url() -> String {
    let url = url();
    match url.rsplit_once('@') {
        Some((_, host)) => format!("postgres://…@{host}"),
        None => url,
    }
}

/// Runs `test` on a store in a fresh schema, then drops the schema (also
/// when the test fails).
async fn in_fresh_schema<F, Fut>(key: Option<PushKey>, test: F)
where
    F: FnOnce(PostgresStore, PgConnectOptions) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let base: PgConnectOptions = url().parse().expect("A2A_TEST_POSTGRES_URL is not a URL");
    let mut admin = match PgConnection::connect_with(&base).await {
        Ok(admin) => admin,
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("PostgreSQL at {} is unreachable in CI: {err}", shown_url())
        }
        Err(err) => {
            eprintln!(
                "NOTICE: skipping a PostgreSQL test: {} is unreachable ({err}); set A2A_TEST_POSTGRES_URL",
                shown_url()
            );
            return;
        }
    };
    let schema = format!("a2a_test_{}", a2a_core::new_id().replace('-', ""));
    sqlx::query(&format!("CREATE SCHEMA {schema}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let options = base.options([("search_path", schema.as_str())]);
    let outcome = match PostgresStore::connect_with(options.clone(), key).await {
        Ok(store) => {
            let pool = store.clone();
            let outcome = tokio::spawn(test(store, options)).await;
            pool.close().await;
            outcome
        }
        Err(err) => {
            let _ = sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
                .execute(&mut admin)
                .await;
            panic!("opening a store in {schema}: {err}");
        }
    };
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
    if let Err(err) = outcome {
        std::panic::resume_unwind(err.into_panic());
    }
}

#[tokio::test]
async fn task_store_conforms() {
    in_fresh_schema(None, |store, _| async move {
        task_store_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn push_config_store_conforms() {
    in_fresh_schema(None, |store, _| async move {
        push_config_store_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn job_store_conforms() {
    in_fresh_schema(None, |store, _| async move {
        job_store_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn job_store_keeps_cluster_leases() {
    in_fresh_schema(None, |store, _| async move {
        lease_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn writes_under_a_lost_lease_are_refused() {
    in_fresh_schema(None, |store, _| async move {
        fencing_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn job_writes_ride_along_with_task_writes() {
    in_fresh_schema(None, |store, _| async move {
        job_writes_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn canceled_job_shows_canceled_with_its_reason() {
    in_fresh_schema(None, |store, _| async move {
        a2a_store_suite::canceled_job_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn canceled_job_written_with_its_task_shows_canceled_with_its_reason() {
    in_fresh_schema(None, |store, _| async move {
        a2a_store_suite::canceled_job_writes_suite(&store).await;
    })
    .await;
}

#[tokio::test]
async fn prune_keeps_tasks_within_task_retention() {
    in_fresh_schema(None, |store, _| async move {
        a2a_store_suite::task_retention_keeps_tasks_within_it(&store, &store, &store).await;
    })
    .await;
}

#[tokio::test]
async fn prune_removes_tasks_past_task_retention() {
    in_fresh_schema(None, |store, _| async move {
        a2a_store_suite::task_retention_removes_tasks_past_it(&store, &store, &store).await;
    })
    .await;
}

#[tokio::test]
async fn task_retention_of_zero_keeps_tasks_for_ever() {
    in_fresh_schema(None, |store, _| async move {
        a2a_store_suite::task_retention_of_zero_keeps_tasks_for_ever(&store, &store, &store).await;
    })
    .await;
}

#[tokio::test]
async fn credentials_are_encrypted_at_rest_and_a_wrong_key_is_refused() {
    let key = PushKey::from_bytes(&[5; 32]);
    in_fresh_schema(Some(key.clone()), |store, options| async move {
        push_config_store_suite(&store).await;
        let caller = Caller::default();
        let mut config = TaskPushNotificationConfig::new("t1", "https://hook.example");
        config.authentication = Some(AuthenticationInfo {
            scheme: "Bearer".into(),
            credentials: "top-secret-token".into(),
        });
        store.save(&caller, config).await.unwrap();
        let raw: Vec<String> = sqlx::query_scalar("SELECT config FROM push_configs")
            .fetch_all(store.pool())
            .await
            .unwrap();
        assert!(raw.iter().all(|c| !c.contains("top-secret-token")));
        let wrong =
            PostgresStore::connect_with(options.clone(), Some(PushKey::from_bytes(&[6; 32])));
        assert!(matches!(wrong.await, Err(OpenError::WrongKey)));
        let keyless = PostgresStore::connect_with(options, None);
        assert!(matches!(keyless.await, Err(OpenError::KeyRequired)));
    })
    .await;
}

#[tokio::test]
async fn the_counts_migration_counts_the_tasks_already_stored() {
    in_fresh_schema(None, |store, options| async move {
        support::seed(&store, 0..3).await;
        // Back to the schema before the counts (migrations 2 and 7), tasks and all...
        sqlx::raw_sql(
            "DROP TRIGGER tasks_counted_created ON tasks; DROP TRIGGER tasks_counted_deleted ON tasks; \
             DROP TRIGGER tasks_counted_moved ON tasks; DROP FUNCTION a2a_tasks_counted(); \
             DROP FUNCTION a2a_count_state(TEXT, TEXT, INTEGER, SMALLINT, BIGINT); \
             DROP FUNCTION a2a_count_shard(TEXT); \
             DROP FUNCTION a2a_count_context(TEXT, TEXT, TEXT, INTEGER, BIGINT); \
             DROP TABLE task_counts; DROP TABLE task_context_counts; \
             DELETE FROM _sqlx_migrations WHERE version IN (2, 7)",
        )
        .execute(store.pool())
        .await
        .unwrap();
        // ...and tasks written by a release that kept no counts.
        support::seed(&store, 3..5).await;
        let reopened = PostgresStore::connect_with(options, None).await.unwrap();
        support::assert_seeded_totals(&reopened).await;
        reopened.close().await;
    })
    .await;
}

/// Writers of one owner's tasks do not queue on one count row: a task
/// written in a transaction still open holds only its shard's rows, and a
/// task of another shard is written meanwhile without waiting.
#[tokio::test]
async fn writers_of_one_owners_tasks_in_other_shards_do_not_wait_for_each_other() {
    in_fresh_schema(None, |store, options| async move {
        // Two ids in different shards, found by the schema's own hash.
        let mut ids = Vec::new();
        let mut shards = Vec::new();
        for i in 0.. {
            let id = format!("sharded-{i}");
            let shard: i16 = sqlx::query_scalar("SELECT a2a_count_shard($1)")
                .bind(&id)
                .fetch_one(store.pool())
                .await
                .unwrap();
            if !shards.contains(&shard) {
                shards.push(shard);
                ids.push(id);
            }
            if ids.len() == 2 {
                break;
            }
        }
        let insert = "INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, state, \
                      status_ms, version, task) VALUES ($1, '', 'alice', $1, 3, 0, 1, '{}')";
        let mut first = PgConnection::connect_with(&options).await.unwrap();
        let mut second = PgConnection::connect_with(&options).await.unwrap();
        run(&mut first, "BEGIN", None).await;
        run(&mut first, insert, Some(&ids[0])).await;
        // With one count row per owner and state this would wait for the
        // first transaction, and give up after the lock timeout.
        run(&mut second, "BEGIN", None).await;
        run(&mut second, "SET LOCAL lock_timeout = '2s'", None).await;
        run(&mut second, insert, Some(&ids[1])).await;
        run(&mut second, "COMMIT", None).await;
        run(&mut first, "COMMIT", None).await;
        let (total, rows): (i64, i64) = sqlx::query_as(
            "SELECT CAST(SUM(n) AS BIGINT), COUNT(*) FROM task_counts WHERE owner_user = 'alice'",
        )
        .fetch_one(store.pool())
        .await
        .unwrap();
        assert_eq!((total, rows), (2, 2));
        let counted = TaskStore::count_for_user(&store, "alice").await.unwrap();
        assert_eq!(counted, Some(2));
    })
    .await;
}

/// Runs `sql` on `connection`, with `bind` as its one parameter if given.
/// (A named function: in the tests' spawned futures, a borrowed connection
/// used inline is not general enough for sqlx's `Executor`.)
async fn run(connection: &mut PgConnection, sql: &str, bind: Option<&str>) {
    let mut query = sqlx::query(sql);
    if let Some(value) = bind {
        query = query.bind(value.to_owned());
    }
    query.execute(connection).await.unwrap();
}

#[tokio::test]
async fn the_task_retention_migration_marks_the_jobs_of_canceled_tasks_canceled() {
    in_fresh_schema(None, |store, options| async move {
        support::seed_jobs_of_an_older_release(&store).await;
        // Back to the schema before the migration (3), jobs and all.
        sqlx::raw_sql(
            "DROP INDEX tasks_terminal_by_status; \
             UPDATE jobs SET state = 'COMPLETED', reason = NULL; \
             DELETE FROM _sqlx_migrations WHERE version = 4",
        )
        .execute(store.pool())
        .await
        .unwrap();
        let reopened = PostgresStore::connect_with(options, None).await.unwrap();
        support::assert_older_jobs_tell_cancels_apart(&reopened).await;
        reopened.close().await;
    })
    .await;
}

#[tokio::test]
async fn tasks_moving_both_ways_at_once_keep_their_counts_without_deadlock() {
    use a2a_core::{ListTasksRequest, StreamResponse, Task, TaskState};
    use a2a_server::store::{Cause, TaskStore};
    in_fresh_schema(None, |store, _| async move {
        // Writers flip their tasks between two states at once, half of them
        // one way while the other half go the other: count rows taken in
        // write order, not key order, would deadlock.
        let states = [TaskState::Working, TaskState::InputRequired];
        let writers = (0..16).map(|i| {
            let store = store.clone();
            async move {
                let id = format!("flip-{i}");
                let mut task = Task::new(id, "shared", states[i % 2]);
                let event = StreamResponse::Task(task.clone());
                let cause = Cause::event(&event);
                store
                    .create(&support::owner(), &task, &cause)
                    .await
                    .unwrap();
                let mut version = 1;
                for turn in 1..=20 {
                    task.status.state = states[(i + turn) % 2];
                    version = store
                        .update(&support::owner(), &task, version, &cause)
                        .await
                        .unwrap();
                }
            }
        });
        futures::future::join_all(writers).await;
        // Twenty flips bring every task back to its first state.
        for (state, want) in [(TaskState::Working, 8), (TaskState::InputRequired, 8)] {
            for context in ["", "shared"] {
                let request = ListTasksRequest {
                    context_id: context.into(),
                    status: state,
                    ..Default::default()
                };
                let page = TaskStore::list(&store, &support::owner(), &request)
                    .await
                    .unwrap();
                assert_eq!(page.total_size, want, "{state} in {context:?}");
            }
        }
    })
    .await;
}

/// A connection to the test server, or `None` (the test is skipped) when it
/// is unreachable outside CI; under `CI=true` an unreachable server fails.
async fn admin() -> Option<PgConnection> {
    let base: PgConnectOptions = url().parse().expect("A2A_TEST_POSTGRES_URL is not a URL");
    match PgConnection::connect_with(&base).await {
        Ok(admin) => Some(admin),
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("PostgreSQL at {} is unreachable in CI: {err}", shown_url())
        }
        Err(_) => None,
    }
}

/// A gateway's agents on one database: each in a schema of its own
/// (`StoreLocation::open_for_agent`), created on first open, found again on
/// the next, and blind to the others'.
#[tokio::test]
async fn gateway_agents_keep_their_state_in_schemas_of_their_own() {
    use a2a_store_sql::{DurableStore, StoreLocation};
    let Some(mut admin) = admin().await else {
        return;
    };
    let suffix = a2a_core::new_id().replace('-', "");
    // A '-' in a name needs the schema's name quoted.
    let (a, b) = (
        format!("a{}", &suffix[..12]),
        format!("b-{}", &suffix[..12]),
    );
    let location = StoreLocation::Postgres(url());
    let open = |name: String| {
        let location = location.clone();
        async move {
            match location.open_for_agent(&name, None).await.unwrap() {
                Some(DurableStore::Postgres(store)) => store,
                other => panic!("not a PostgreSQL store: {other:?}"),
            }
        }
    };
    let (store_a, store_b) = (open(a.clone()).await, open(b.clone()).await);
    support::seed(&store_a, 0..5).await;
    support::assert_seeded_totals(&store_a).await;
    let request = a2a_core::ListTasksRequest {
        page_size: Some(10),
        ..Default::default()
    };
    let seen_by_b = a2a_server::store::TaskStore::list(&store_b, &support::owner(), &request)
        .await
        .unwrap();
    assert_eq!(seen_by_b.total_size, 0);
    store_a.close().await;
    let reopened = open(a.clone()).await;
    support::assert_seeded_totals(&reopened).await;
    reopened.close().await;
    store_b.close().await;
    for name in [a, b] {
        sqlx::raw_sql(&format!("DROP SCHEMA \"a2a_agent_{name}\" CASCADE"))
            .execute(&mut admin)
            .await
            .unwrap();
    }
}

/// Cluster nodes start together: each opens every agent's store, creating
/// its schema if missing. `CREATE SCHEMA IF NOT EXISTS` run by two at once
/// can fail on the catalog's unique index (seen when two `tck-sut` nodes
/// started together); eight openers of one new schema all succeed.
#[tokio::test]
async fn nodes_opening_one_new_agent_schema_at_once_all_succeed() {
    use a2a_store_sql::StoreLocation;
    let Some(mut admin) = admin().await else {
        return;
    };
    let name = format!("race{}", &a2a_core::new_id().replace('-', "")[..12]);
    let location = StoreLocation::Postgres(url());
    let opens = (0..8).map(|_| {
        let (location, name) = (location.clone(), name.clone());
        tokio::spawn(async move { location.open_for_agent(&name, None).await })
    });
    for opened in futures::future::join_all(opens).await {
        let store = opened.unwrap().expect("every node opens the agent's store");
        drop(store);
    }
    sqlx::raw_sql(&format!("DROP SCHEMA \"a2a_agent_{name}\" CASCADE"))
        .execute(&mut admin)
        .await
        .unwrap();
}

#[tokio::test]
async fn the_cluster_bus_announces_committed_events_and_carries_cancels() {
    in_fresh_schema(None, |store, options| async move {
        // A store not opened for cluster mode cannot be a node's bus.
        assert!(matches!(
            PostgresCluster::new(&store).await,
            Err(OpenError::Unsupported(_))
        ));
        let node = PostgresStore::connect_with(PostgresStore::cluster_options(options), None)
            .await
            .unwrap();
        let bus = PostgresCluster::new(&node).await.unwrap();
        let interest: Interest = Arc::new(|task_id: &str| task_id != "unwatched");
        let mut notices = bus.listen(interest).await.unwrap();
        let caller = Caller::default();
        let next = async |notices: &mut tokio::sync::mpsc::Receiver<ClusterNotice>| {
            tokio::time::timeout(Duration::from_secs(10), notices.recv())
                .await
                .expect("a notice in time")
                .expect("the bus is open")
        };

        // A small event travels in the notification.
        let mut task = Task::new("watched", "ctx", TaskState::Working);
        let working = StreamResponse::Task(task.clone());
        node.create(&caller, &task, &Cause::event(&working))
            .await
            .unwrap();
        match next(&mut notices).await {
            ClusterNotice::Event {
                task_id,
                version,
                event,
            } => {
                assert_eq!((task_id.as_str(), version), ("watched", 1));
                assert_eq!(*event, working);
            }
            other => panic!("expected the event, got {other:?}"),
        }
        // An event over NOTIFY's 8,000 bytes travels by reference.
        let big = Artifact::text("x".repeat(20_000)).with_id("big");
        task.artifacts.push(big.clone());
        let update: StreamResponse = TaskArtifactUpdateEvent::new("watched", "ctx", big).into();
        node.update(&caller, &task, 1, &Cause::event(&update))
            .await
            .unwrap();
        match next(&mut notices).await {
            ClusterNotice::Event { version, event, .. } => {
                assert_eq!(version, 2);
                assert_eq!(*event, update);
            }
            other => panic!("expected the large event, got {other:?}"),
        }
        // Unwatched tasks are skipped, and a connection not in cluster mode
        // announces nothing; order is kept.
        let other = Task::new("unwatched", "ctx", TaskState::Working);
        node.create(
            &caller,
            &other,
            &Cause::event(&StreamResponse::Task(other.clone())),
        )
        .await
        .unwrap();
        store
            .update(&caller, &task, 2, &Cause::event(&working))
            .await
            .unwrap();
        task.status.state = TaskState::Completed;
        let completed = StreamResponse::Task(task.clone());
        node.update(&caller, &task, 3, &Cause::event(&completed))
            .await
            .unwrap();
        match next(&mut notices).await {
            ClusterNotice::Event {
                task_id, version, ..
            } => {
                assert_eq!((task_id.as_str(), version), ("watched", 4));
            }
            other => panic!("expected version 4, got {other:?}"),
        }

        // Cancels reach every node's listener, whole.
        let mut cancel = CancelNotice::default();
        cancel.task_id = "watched".into();
        cancel.node = "node-b".into();
        cancel.user = "alice".into();
        bus.send_cancel(&cancel).await.unwrap();
        match next(&mut notices).await {
            ClusterNotice::Cancel(heard) => assert_eq!(heard, cancel),
            other => panic!("expected the cancel, got {other:?}"),
        }
        node.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_cluster_store_keeps_a_push_outbox_for_tasks_with_webhooks() {
    in_fresh_schema(None, |single, options| async move {
        let cluster = PostgresStore::connect_with(PostgresStore::cluster_options(options), None)
            .await
            .unwrap();
        let caller = Caller::default();
        let write = |store: PostgresStore, id: &'static str| {
            let caller = caller.clone();
            async move {
                let mut task = Task::new(id, "c", TaskState::Working);
                let event: StreamResponse = task.clone().into();
                store
                    .create(&caller, &task, &Cause::event(&event))
                    .await
                    .unwrap();
                task.status.state = TaskState::Completed;
                let event: StreamResponse = task.clone().into();
                store
                    .update(&caller, &task, 1, &Cause::event(&event))
                    .await
                    .unwrap();
            }
        };
        for id in ["hooked", "single"] {
            cluster
                .save(
                    &caller,
                    TaskPushNotificationConfig::new(id, "https://hooks.example/a"),
                )
                .await
                .unwrap();
        }
        // A cluster write of a task with a webhook owes it the event; one
        // of a task without, or a single server's, owes nothing.
        write(cluster.clone(), "hooked").await;
        write(cluster.clone(), "bare").await;
        write(single.clone(), "single").await;
        assert!(cluster.keeps_outbox());
        let owed = |id: &'static str| {
            let (cluster, caller) = (cluster.clone(), caller.clone());
            async move {
                cluster
                    .undelivered(&caller, id)
                    .await
                    .unwrap()
                    .iter()
                    .map(|e| e.version)
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(owed("hooked").await, [1, 2]);
        assert!(owed("bare").await.is_empty());
        assert!(owed("single").await.is_empty());
        // Another caller sees none of it.
        let other = Caller {
            tenant: String::new(),
            user: "mallory".into(),
        };
        assert!(
            cluster
                .undelivered(&other, "hooked")
                .await
                .unwrap()
                .is_empty()
        );
        // Delivered up to a version: cleared up to it.
        cluster.delivered(&caller, "hooked", 1).await.unwrap();
        assert_eq!(owed("hooked").await, [2]);
        cluster.delivered(&caller, "hooked", 2).await.unwrap();
        assert!(owed("hooked").await.is_empty());
        cluster.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_finished_job_s_owed_pushes_keep_its_lease_until_its_node_dies() {
    use a2a_server::store::{JobState, JobStore, LeasePass, NewJob};
    in_fresh_schema(None, |_single, options| async move {
        let cluster = PostgresStore::connect_with(PostgresStore::cluster_options(options), None)
            .await
            .unwrap();
        let caller = Caller::default();
        let at = |s: i64| chrono::DateTime::from_timestamp(1_700_000_000 + s, 0).unwrap();
        let lease = chrono::Duration::seconds(5);
        let stale = chrono::Duration::hours(1);
        for id in ["finished", "running"] {
            let job = NewJob {
                task_id: id,
                owner: &caller,
                node: "node-a",
                request: "{}",
                at: at(0),
            };
            cluster.record(&job).await.unwrap();
            cluster
                .save(
                    &caller,
                    TaskPushNotificationConfig::new(id, "https://hooks.example/a"),
                )
                .await
                .unwrap();
            let task = Task::new(id, "c", TaskState::Working);
            let event: StreamResponse = task.clone().into();
            cluster
                .create(&caller, &task, &Cause::event(&event))
                .await
                .unwrap();
        }
        cluster
            .finish("finished", JobState::Completed, None, at(1))
            .await
            .unwrap();
        // Node a is alive: its heartbeat keeps the finished job it still
        // sends pushes for, so node b's sweep takes nothing.
        cluster.heartbeat("node-a", at(10)).await.unwrap();
        let sweep = |now: i64| LeasePass::new(at(now), lease, stale);
        assert!(
            cluster
                .take_over_deliveries(&sweep(12), "node-b")
                .await
                .unwrap()
                .is_empty()
        );
        // Node a falls silent past its lease: node b takes the finished
        // job's deliveries, never the RUNNING job (a lease pass's to move).
        let taken = cluster
            .take_over_deliveries(&sweep(20), "node-b")
            .await
            .unwrap();
        assert_eq!(
            taken
                .iter()
                .map(|j| (j.task_id.as_str(), j.node.as_str(), j.state))
                .collect::<Vec<_>>(),
            [("finished", "node-b", JobState::Completed)]
        );
        assert_eq!(taken[0].owner, caller);
        // Taken once: node c sweeping at the same moment finds nothing.
        assert!(
            cluster
                .take_over_deliveries(&sweep(20), "node-c")
                .await
                .unwrap()
                .is_empty()
        );
        // Node b dies too, then comes back under its name: its first pass
        // takes back what it was sending, whatever the heartbeat says.
        let restarted = sweep(21).restarted("node-b");
        let back = cluster
            .take_over_deliveries(&restarted, "node-b")
            .await
            .unwrap();
        assert_eq!(back.len(), 1);
        // Sent: nothing is owed any more, so nothing is swept, ever.
        cluster.delivered(&caller, "finished", 1).await.unwrap();
        assert!(
            cluster
                .take_over_deliveries(&sweep(10_000), "node-c")
                .await
                .unwrap()
                .is_empty()
        );
        cluster.close().await;
    })
    .await;
}

/// Writes made at once commit together, and a write PostgreSQL refuses (a
/// task id with a NUL byte, which no `text` column takes) fails alone: the
/// writes batched with it are run again one by one and all stored.
#[tokio::test]
async fn a_refused_write_fails_alone_and_its_batch_is_stored() {
    in_fresh_schema(None, |store, _| async move {
        let owner = support::owner();
        let mut writes = tokio::task::JoinSet::new();
        for i in 0..200 {
            let store = store.clone();
            let owner = owner.clone();
            writes.spawn(async move {
                let id = if i == 100 {
                    "refused\0id".to_owned()
                } else {
                    format!("batched-{i}")
                };
                let task = Task::new(id.as_str(), "batch", TaskState::Working);
                let event = StreamResponse::Task(task.clone());
                let stored = store.create(&owner, &task, &Cause::event(&event)).await;
                (id, stored)
            });
        }
        let mut stored = 0;
        while let Some(joined) = writes.join_next().await {
            let (id, result) = joined.unwrap();
            if id.contains('\0') {
                let err = result.unwrap_err();
                assert!(
                    matches!(err, a2a_server::store::StoreError::Backend(_)),
                    "{err:?}"
                );
            } else {
                result.unwrap();
                let found = TaskStore::get(&store, &owner, &id).await.unwrap();
                assert_eq!(found.task.id, id);
                stored += 1;
            }
        }
        assert_eq!(stored, 199);
        let counted = TaskStore::count_for_user(&store, &owner.user)
            .await
            .unwrap();
        assert_eq!(counted, Some(199));
    })
    .await;
}

/// Creates that record their jobs, made at once, commit in batches as set
/// statements: each task is stored once with its job and its counts, and of
/// two creates of one task exactly one succeeds.
#[tokio::test]
async fn recorded_creates_made_at_once_are_each_stored_once_with_their_jobs() {
    use a2a_server::store::{JobState, JobStore, JobWrite, NewJob, StoreError};
    in_fresh_schema(None, |store, _| async move {
        let owner = support::owner();
        let mut writes = tokio::task::JoinSet::new();
        for i in 0..320 {
            let store = store.clone();
            let owner = owner.clone();
            writes.spawn(async move {
                // The first 20 tasks are each created twice.
                let id = format!("set-{}", if i >= 300 { i - 300 } else { i });
                let state = if i % 2 == 0 {
                    TaskState::Completed
                } else {
                    TaskState::Working
                };
                let task = Task::new(id.as_str(), format!("context-{}", i % 7), state);
                let event = StreamResponse::Task(task.clone());
                let job = NewJob {
                    task_id: &id,
                    owner: &owner,
                    node: "node-a",
                    request: "{\"request\":true}",
                    at: chrono::Utc::now(),
                };
                let write = if state == TaskState::Completed {
                    JobWrite::RecordFinished {
                        job: &job,
                        state: JobState::Completed,
                        reason: None,
                    }
                } else {
                    JobWrite::Record(&job)
                };
                let cause = Cause::event(&event).with_job(write);
                let created = store.create(&owner, &task, &cause).await;
                (id, state, created)
            });
        }
        let mut created = std::collections::HashMap::<String, usize>::new();
        while let Some(joined) = writes.join_next().await {
            let (id, state, result) = joined.unwrap();
            match result {
                Ok(_) => *created.entry(id.clone()).or_default() += 1,
                Err(StoreError::AlreadyExists(refused)) => {
                    assert_eq!(refused, id);
                    continue;
                }
                Err(err) => panic!("{id}: {err:?}"),
            }
            let found = TaskStore::get(&store, &owner, &id).await.unwrap();
            assert_eq!(found.task.status.state, state);
            let job = JobStore::get(&store, &id).await.unwrap().unwrap();
            let expected = if state == TaskState::Completed {
                JobState::Completed
            } else {
                JobState::Running
            };
            assert_eq!(job.state, expected, "{id}");
        }
        assert_eq!(created.len(), 300);
        assert!(created.values().all(|&n| n == 1), "{created:?}");
        let counted = TaskStore::count_for_user(&store, &owner.user)
            .await
            .unwrap();
        assert_eq!(counted, Some(300));
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM task_events")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(events, 300);
    })
    .await;
}
