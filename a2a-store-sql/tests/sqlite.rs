//! `SqliteStore`: the shared suites, and what only a file database has
//! (directory lock, schema versions, credentials at rest, reopening).
#![cfg(feature = "sqlite")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use a2a_core::{AuthenticationInfo, StreamResponse, Task, TaskPushNotificationConfig, TaskState};
use a2a_server::Caller;
use a2a_server::store::{Cause, Checkpoint, PushConfigStore, TaskStore};
use a2a_store_sql::{OpenError, PushKey, SqliteOptions, SqliteStore};
use a2a_store_suite::{
    job_store_suite, job_writes_suite, lease_suite, push_config_store_suite, task_store_suite,
};

mod support;

async fn fresh() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    (dir, store)
}

#[tokio::test]
async fn task_store_conforms() {
    let (_dir, store) = fresh().await;
    task_store_suite(&store).await;
}

#[tokio::test]
async fn push_config_store_conforms() {
    let (_dir, store) = fresh().await;
    push_config_store_suite(&store).await;
}

#[tokio::test]
async fn job_store_conforms() {
    let (_dir, store) = fresh().await;
    job_store_suite(&store).await;
}

#[tokio::test]
async fn job_store_keeps_cluster_leases() {
    let (_dir, store) = fresh().await;
    lease_suite(&store).await;
}

#[tokio::test]
async fn job_writes_ride_along_with_task_writes() {
    let (_dir, store) = fresh().await;
    job_writes_suite(&store).await;
}

#[tokio::test]
async fn canceled_job_shows_canceled_with_its_reason() {
    let (_dir, store) = fresh().await;
    a2a_store_suite::canceled_job_suite(&store).await;
}

#[tokio::test]
async fn canceled_job_written_with_its_task_shows_canceled_with_its_reason() {
    let (_dir, store) = fresh().await;
    a2a_store_suite::canceled_job_writes_suite(&store).await;
}

#[tokio::test]
async fn prune_keeps_tasks_within_task_retention() {
    let (_dir, store) = fresh().await;
    a2a_store_suite::task_retention_keeps_tasks_within_it(&store, &store, &store).await;
}

#[tokio::test]
async fn prune_removes_tasks_past_task_retention() {
    let (_dir, store) = fresh().await;
    a2a_store_suite::task_retention_removes_tasks_past_it(&store, &store, &store).await;
}

#[tokio::test]
async fn task_retention_of_zero_keeps_tasks_for_ever() {
    let (_dir, store) = fresh().await;
    a2a_store_suite::task_retention_of_zero_keeps_tasks_for_ever(&store, &store, &store).await;
}

#[tokio::test]
async fn push_config_store_conforms_with_encrypted_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions::new(dir.path()).push_key(PushKey::from_bytes(&[3; 32]));
    push_config_store_suite(&SqliteStore::open_with(options).await.unwrap()).await;
}

fn alice() -> Caller {
    Caller {
        tenant: String::new(),
        user: "alice".into(),
    }
}

#[tokio::test]
async fn state_survives_reopening_and_a_second_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    let task = Task::new("t1", "c1", TaskState::Working);
    let checkpoint = Checkpoint::new(2, b"state".to_vec());
    let event = StreamResponse::Task(task.clone());
    store
        .create(
            &alice(),
            &task,
            &Cause::event(&event).with_checkpoint(&checkpoint),
        )
        .await
        .unwrap();

    let second = SqliteStore::open(dir.path()).await;
    match second {
        Err(err @ OpenError::Locked { .. }) => {
            assert!(
                err.to_string().contains("in use by another process"),
                "{err}"
            );
        }
        other => panic!("a second open must be refused, got {other:?}"),
    }

    let reopened = reopen(store, dir.path()).await;
    let stored = TaskStore::get(&reopened, &alice(), "t1").await.unwrap();
    assert_eq!(
        (stored.task, stored.version, stored.checkpoint),
        (task, 1, Some(checkpoint))
    );
    assert_eq!(reopened.events(&alice(), "t1").await.unwrap().len(), 1);
    let left: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE pending_event IS NOT NULL")
            .fetch_one(reopened.pool())
            .await
            .unwrap();
    assert_eq!(
        left, 0,
        "an event moved to the log leaves no copy in the task row"
    );
}

#[tokio::test]
async fn a_database_from_a_newer_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99990101000000, 'from the future', 1, x'00', 0)",
    )
    .execute(store.pool())
    .await
    .unwrap();
    store.close().await;
    drop(store);
    match SqliteStore::open(dir.path()).await {
        Err(err @ OpenError::SchemaTooNew { version }) => {
            assert_eq!(version, 99990101000000);
            assert!(err.to_string().contains("newer than this program"), "{err}");
        }
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn credentials_are_encrypted_at_rest_and_a_wrong_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let key = PushKey::from_bytes(&[9; 32]);
    let store = SqliteStore::open_with(SqliteOptions::new(dir.path()).push_key(key.clone()))
        .await
        .unwrap();
    let mut config = TaskPushNotificationConfig::new("t1", "https://hook.example");
    config.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: "top-secret-token".into(),
    });
    let saved = store.save(&alice(), config).await.unwrap();
    let raw: String = sqlx::query_scalar("SELECT config FROM push_configs")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert!(!raw.contains("top-secret-token"), "stored in clear: {raw}");
    assert_eq!(
        PushConfigStore::get(&store, &alice(), "t1", &saved.id)
            .await
            .unwrap(),
        Some(saved.clone())
    );
    store.close().await;
    drop(store);

    let wrong = SqliteOptions::new(dir.path()).push_key(PushKey::from_bytes(&[1; 32]));
    assert!(matches!(
        SqliteStore::open_with(wrong).await,
        Err(OpenError::WrongKey)
    ));
    assert!(matches!(
        SqliteStore::open(dir.path()).await,
        Err(OpenError::KeyRequired)
    ));
    let reopened = SqliteStore::open_with(SqliteOptions::new(dir.path()).push_key(key))
        .await
        .unwrap();
    assert_eq!(
        PushConfigStore::list(&reopened, &alice(), "t1")
            .await
            .unwrap(),
        [saved],
        "the right key reads the credentials back"
    );
}

#[tokio::test]
async fn a_read_only_store_reads_beside_the_server_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = SqliteStore::open(dir.path()).await.unwrap();
    let task = Task::new("t1", "c1", TaskState::Working);
    let event = StreamResponse::Task(task.clone());
    server
        .create(&alice(), &task, &Cause::event(&event))
        .await
        .unwrap();

    let reader = SqliteStore::open_read_only(dir.path(), None).await.unwrap();
    let stored = TaskStore::get(&reader, &alice(), "t1").await.unwrap();
    assert_eq!(stored.task, task);
    let other = Task::new("t2", "c1", TaskState::Working);
    assert!(
        reader
            .create(&alice(), &other, &Cause::event(&event))
            .await
            .is_err(),
        "a read-only store must not write"
    );
    assert!(TaskStore::get(&server, &alice(), "t2").await.is_err());
}

/// Runs `sql` (statements that take the schema back to before a migration)
/// on `store`.
async fn run(store: &SqliteStore, sql: &str) {
    sqlx::raw_sql(sql).execute(store.pool()).await.unwrap();
}

/// Closes `store` and opens the store in `dir` again, running the
/// migrations it lacks.
async fn reopen(store: SqliteStore, dir: &std::path::Path) -> SqliteStore {
    store.close().await;
    drop(store);
    SqliteStore::open(dir).await.unwrap()
}

#[tokio::test]
async fn the_counts_migration_counts_the_tasks_already_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    support::seed(&store, 0..3).await;
    // Back to the schema before the counts (migration 4), tasks and all
    // (migrations 8 and 9, which change the counts, run again after 5)...
    run(
        &store,
        "DROP TRIGGER tasks_counted_created; DROP TRIGGER tasks_counted_deleted; \
         DROP TRIGGER tasks_counted_moved; DROP TABLE task_counts; \
         DELETE FROM _sqlx_migrations WHERE version IN (5, 8, 9)",
    )
    .await;
    // ...and tasks written by a release that kept no counts.
    support::seed(&store, 3..5).await;
    let reopened = reopen(store, dir.path()).await;
    support::assert_seeded_totals(&reopened).await;
}

/// Migration 8 rebuilds the count tables (and their triggers): the counts
/// of the tasks already stored carry over, and later writes keep counting.
#[tokio::test]
async fn the_count_tables_rebuilt_keep_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    support::seed(&store, 0..3).await;
    // Back to before migration 8: the context counts as migration 5 made
    // them (migration 9 dropped them; it runs again after 8).
    run(
        &store,
        &format!(
            "{CONTEXT_COUNTS_OF_MIGRATION_5} DELETE FROM _sqlx_migrations WHERE version IN (8, 9)"
        ),
    )
    .await;
    let reopened = reopen(store, dir.path()).await;
    support::seed(&reopened, 3..5).await;
    support::assert_seeded_totals(&reopened).await;
}

/// The context counts and their triggers as migration 5 made them, counting
/// the tasks stored.
const CONTEXT_COUNTS_OF_MIGRATION_5: &str = "
    CREATE TABLE task_context_counts (
        owner_tenant TEXT NOT NULL, owner_user TEXT NOT NULL, context_id TEXT NOT NULL,
        state INTEGER NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (owner_tenant, owner_user, context_id, state)
    ) WITHOUT ROWID;
    INSERT INTO task_context_counts (owner_tenant, owner_user, context_id, state, n)
    SELECT owner_tenant, owner_user, context_id, state, COUNT(*) FROM tasks
    GROUP BY owner_tenant, owner_user, context_id, state;
    DROP TRIGGER tasks_counted_created;
    CREATE TRIGGER tasks_counted_created AFTER INSERT ON tasks
    BEGIN
        INSERT INTO task_counts (owner_tenant, owner_user, state, n)
        VALUES (NEW.owner_tenant, NEW.owner_user, NEW.state, 1)
        ON CONFLICT (owner_tenant, owner_user, state) DO UPDATE SET n = n + 1;
        INSERT INTO task_context_counts (owner_tenant, owner_user, context_id, state, n)
        VALUES (NEW.owner_tenant, NEW.owner_user, NEW.context_id, NEW.state, 1)
        ON CONFLICT (owner_tenant, owner_user, context_id, state) DO UPDATE SET n = n + 1;
    END;";

/// Migration 9 drops the context counts: tasks stored while they were kept
/// (through their triggers) and tasks stored after are counted the same,
/// per context from the index. (The store suite checks the totals as tasks
/// move and go.)
#[tokio::test]
async fn context_totals_come_from_the_index_after_the_context_counts_go() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    run(
        &store,
        &format!("{CONTEXT_COUNTS_OF_MIGRATION_5} DELETE FROM _sqlx_migrations WHERE version = 9"),
    )
    .await;
    support::seed(&store, 0..3).await;
    let reopened = reopen(store, dir.path()).await;
    support::seed(&reopened, 3..5).await;
    support::assert_seeded_totals(&reopened).await;
    let tables: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'task_context_counts'")
            .fetch_one(reopened.pool())
            .await
            .unwrap();
    assert_eq!(tables, 0, "migration 9 drops the context counts");
}

#[tokio::test]
async fn the_task_retention_migration_marks_the_jobs_of_canceled_tasks_canceled() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path()).await.unwrap();
    support::seed_jobs_of_an_older_release(&store).await;
    // Back to the schema before the migration (5), jobs and all (the
    // migrations after it run again too).
    run(
        &store,
        &format!(
            "{CONTEXT_COUNTS_OF_MIGRATION_5} DROP INDEX tasks_terminal_by_status; \
             UPDATE jobs SET state = 'COMPLETED', reason = NULL; \
             DELETE FROM _sqlx_migrations WHERE version >= 6"
        ),
    )
    .await;
    let reopened = reopen(store, dir.path()).await;
    support::assert_older_jobs_tell_cancels_apart(&reopened).await;
}
