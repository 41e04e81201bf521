//! `SqliteStore`: the server's state in one SQLite file under a data directory.
//!
//! The database runs in WAL mode, so reads never wait for the writer and a
//! process killed mid-transaction leaves the file readable (the torn
//! transaction is simply not there on reopen). `synchronous = NORMAL`: in WAL
//! mode a commit is durable once written to the log, which survives the
//! process being killed; only a power loss or OS crash can lose the last
//! commits (never corrupt the file). [`SqliteOptions::full_sync`] trades write
//! throughput for surviving those too.
//!
//! One server at a time: opening takes an OS lock on `a2a.lock` in the data
//! directory for as long as the store lives, and a second server is told the
//! directory is in use.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fs4::fs_std::FileExt as _;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};

use a2a_server::store::StoreError;

use crate::common::{
    Bind, JobChange, JobOp, TaskOp, TaskWrite, WriteScope, sqlite_terminal_tasks, unfinished_jobs,
};
use crate::store::{Dialect, SqlStore, apply_migrations, delegate_store_traits};
use crate::webhooks::WebhookTasks;
use crate::writer::{JobGuard, TaskRow, TaskWriter, Write, WriterOptions};
use crate::{OpenError, PushKey};

/// The database file's name in the data directory.
pub const DATABASE_FILE: &str = "a2a.db";
/// The lock file's name in the data directory.
pub const LOCK_FILE: &str = "a2a.lock";

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// How to open a [`SqliteStore`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// The data directory (created if missing).
    pub data_dir: PathBuf,
    /// The key push-config credentials are encrypted with (none: stored as given).
    pub push_key: Option<PushKey>,
    /// Sync every commit to disk (`synchronous = FULL`): survives power loss,
    /// at a cost in write throughput.
    pub full_sync: bool,
    /// How long a write waits for another connection's write before failing.
    pub busy_timeout: Duration,
    /// The most connections that read at once (writes have one of their own).
    pub max_connections: u32,
}

impl SqliteOptions {
    /// Defaults for a server whose state lives in `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        SqliteOptions {
            data_dir: data_dir.into(),
            push_key: None,
            full_sync: false,
            busy_timeout: Duration::from_secs(10),
            max_connections: 8,
        }
    }

    /// Encrypts push-config credentials with `key`.
    #[must_use]
    pub fn push_key(mut self, key: PushKey) -> Self {
        self.push_key = Some(key);
        self
    }

    /// Syncs every commit to disk (see [`SqliteOptions::full_sync`]).
    #[must_use]
    pub fn full_sync(mut self, full_sync: bool) -> Self {
        self.full_sync = full_sync;
        self
    }
}

/// Tasks, push configs and jobs in a SQLite database. Cheap to clone; clones
/// share the pools and the directory lock.
///
/// SQLite lets one transaction write at a time. Writes go through a pool of
/// one connection, so writers queue in order inside the process instead of
/// polling the file lock with SQLite's busy handler (which sleeps in steps of
/// up to 100 ms), and task writes that wait together are committed together;
/// reads run on their own pool beside the writer (WAL).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    store: SqlStore<SqliteWrites>,
    /// Held for the store's life: the OS releases it when the last clone
    /// goes, or when the process dies. (None: opened read-only.)
    _lock: Option<Arc<File>>,
}

/// How SQLite writes: every write through the writer thread, in groups.
#[derive(Debug, Clone)]
struct SqliteWrites {
    /// Task writes, committed in groups (None: opened read-only).
    task_writer: Option<TaskWriter>,
    /// Tasks with push configs (None: opened read-only, so others may add some).
    webhooks: Option<Arc<WebhookTasks>>,
}

impl SqliteStore {
    /// Opens (creating if needed) the store in `data_dir`, with default options.
    pub async fn open(data_dir: impl AsRef<Path>) -> Result<Self, OpenError> {
        SqliteStore::open_with(SqliteOptions::new(data_dir.as_ref())).await
    }

    /// Opens the store as `options` say: takes the directory lock, applies
    /// pending migrations and checks the push-credentials key.
    pub async fn open_with(options: SqliteOptions) -> Result<Self, OpenError> {
        let dir = &options.data_dir;
        std::fs::create_dir_all(dir).map_err(|source| OpenError::Io {
            context: format!("creating the data directory {}", dir.display()),
            source,
        })?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| OpenError::Io {
                context: format!("opening {}", lock_path.display()),
                source,
            })?;
        let locked = lock.try_lock_exclusive().map_err(|source| OpenError::Io {
            context: format!("locking {}", lock_path.display()),
            source,
        })?;
        if !locked {
            return Err(OpenError::Locked { path: lock_path });
        }

        let connect = SqliteConnectOptions::new()
            .filename(dir.join(DATABASE_FILE))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(if options.full_sync {
                SqliteSynchronous::Full
            } else {
                SqliteSynchronous::Normal
            })
            .busy_timeout(options.busy_timeout)
            .foreign_keys(true);
        // Connections are local files: a ping before every use buys nothing.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(connect.clone())
            .await?;
        apply_migrations(&MIGRATOR, &writer).await?;
        SqlStore::<SqliteWrites>::check_push_key(&writer, options.push_key.as_ref()).await?;
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .test_before_acquire(false)
            .connect_with(connect)
            .await?;
        let task_writer = TaskWriter::start(
            &dir.join(DATABASE_FILE),
            &WriterOptions {
                full_sync: options.full_sync,
                busy_timeout: options.busy_timeout,
            },
        )
        .map_err(|e| OpenError::WriteConnection(e.to_string()))?;
        let webhook_tasks: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT task_id FROM push_configs")
                .fetch_all(&pool)
                .await?;
        let writes = SqliteWrites {
            task_writer: Some(task_writer),
            webhooks: Some(Arc::new(WebhookTasks::new(webhook_tasks))),
        };
        Ok(SqliteStore {
            store: SqlStore::new(pool, writer, options.push_key, writes),
            _lock: Some(Arc::new(lock)),
        })
    }

    /// Opens the database in `data_dir` for reading only, beside a server that
    /// may be running on it (for operator tools): takes no lock and migrates
    /// nothing, so the schema must be exactly this program's. Every write
    /// through this store fails.
    pub async fn open_read_only(
        data_dir: impl AsRef<Path>,
        push_key: Option<PushKey>,
    ) -> Result<Self, OpenError> {
        let path = data_dir.as_ref().join(DATABASE_FILE);
        if !path.exists() {
            return Err(OpenError::Io {
                context: format!("opening {}", path.display()),
                source: std::io::ErrorKind::NotFound.into(),
            });
        }
        let connect = SqliteConnectOptions::new()
            .filename(&path)
            .read_only(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(connect)
            .await?;
        let applied: Vec<i64> =
            sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
                .fetch_all(&pool)
                .await?;
        if let Some(version) = applied.iter().find(|v| !MIGRATOR.version_exists(**v)) {
            return Err(OpenError::SchemaTooNew { version: *version });
        }
        if MIGRATOR.iter().any(|m| !applied.contains(&m.version)) {
            return Err(OpenError::Migration(
                "the database is older than this program; open it once read-write (start the server on it) to migrate it".into(),
            ));
        }
        if let Some(key) = &push_key {
            let check: Option<String> =
                sqlx::query_scalar("SELECT value FROM a2a_meta WHERE name = $1")
                    .bind(crate::common::KEY_CHECK_NAME)
                    .fetch_optional(&pool)
                    .await?;
            if check
                .is_some_and(|check| key.open(&check).as_deref() != Some(crate::crypt::KEY_CHECK))
            {
                return Err(OpenError::WrongKey);
            }
        }
        let writes = SqliteWrites {
            task_writer: None,
            webhooks: None,
        };
        Ok(SqliteStore {
            store: SqlStore::new(pool.clone(), pool, push_key, writes),
            _lock: None,
        })
    }

    /// The pool that reads (for operator tools that query the database).
    pub fn pool(&self) -> &SqlitePool {
        self.store.reader()
    }

    /// Closes the pools, waiting for connections in use; the directory lock
    /// goes with the last clone.
    pub async fn close(&self) {
        self.store.close().await;
    }
}

impl SqliteWrites {
    fn task_writer(&self) -> Result<&TaskWriter, StoreError> {
        self.task_writer
            .as_ref()
            .ok_or_else(|| StoreError::Backend("the store was opened read-only".into()))
    }
}

impl Dialect for SqliteWrites {
    type Db = Sqlite;

    const TERMINAL_TASKS_BEFORE: &'static str = concat!(
        "SELECT owner_tenant, owner_user, task_id FROM tasks WHERE ",
        sqlite_terminal_tasks!(),
        " AND status_ms < $1 ORDER BY status_ms, seq LIMIT $2"
    );

    // Counted from the context index (migration 9): a write keeps one count less.
    const COUNTS_CONTEXTS: bool = false;

    /// Runs the task write in the next group commit.
    async fn write_task(&self, _writer: &SqlitePool, write: TaskWrite) -> Result<u64, StoreError> {
        // One process owns a SQLite store: there is no cluster, and so no
        // lease to fence a write with.
        let TaskWrite {
            op,
            mut binds,
            job,
            lease: _,
        } = write;
        // The event is the last value of a task write; here it is appended by
        // a statement of its own, once the task statement returns the row.
        let Some(Bind::Text(event)) = binds.pop() else {
            return Err(StoreError::Backend("a task write without its event".into()));
        };
        // The update statements bind the task's id as ?7.
        let row = match op {
            TaskOp::Create => TaskRow::Inserted,
            TaskOp::Update => TaskRow::Updated(7),
        };
        let (sql, guard, job) = match job {
            None => match op {
                TaskOp::Create => (CREATE, None, None),
                TaskOp::Update => (UPDATE, None, None),
            },
            Some(JobChange {
                op: job_op,
                task_id,
                binds: job_binds,
            }) => {
                // The job change names what the task write waits on: no
                // unfinished job to record one, a job to finish it.
                let (job_sql, guard_sql, when_found, update_sql) = match job_op {
                    JobOp::Record => (RECORD_JOB, UNFINISHED_JOB, false, UPDATE_IF_JOB_FREE),
                    JobOp::Finish => (FINISH_JOB, ANY_JOB, true, UPDATE_IF_JOB),
                };
                // A create checks the job apart (see `JobGuard`); an update
                // names it in its own statement.
                let (sql, guard) = match op {
                    TaskOp::Create => {
                        let guard = JobGuard {
                            sql: guard_sql,
                            task_id,
                            when_found,
                        };
                        (CREATE, Some(guard))
                    }
                    TaskOp::Update => {
                        binds.push(Bind::Text(task_id));
                        (update_sql, None)
                    }
                };
                (sql, guard, Some((job_sql, job_binds)))
            }
        };
        self.task_writer()?
            .write(Write::Task {
                sql,
                binds,
                guard,
                row,
                event,
                job,
            })
            .await
    }

    /// Runs the statement in the next group commit.
    async fn execute_write(
        &self,
        _writer: &SqlitePool,
        _: WriteScope<'_>,
        sql: &'static str,
        binds: Vec<Bind>,
    ) -> Result<u64, StoreError> {
        self.task_writer()?
            .write(Write::Statement { sql, binds })
            .await
    }

    fn push_config_saving(&self, task_id: &str) {
        if let Some(webhooks) = &self.webhooks {
            webhooks.insert(task_id);
        }
    }

    /// A server holds its database alone, so the tasks it saved configs for
    /// are all there are.
    fn may_have_push_configs(&self, task_id: &str) -> bool {
        self.webhooks
            .as_ref()
            .is_none_or(|webhooks| webhooks.may_have(task_id))
    }
}

delegate_store_traits!(SqliteStore);

// A task write is a guarded statement on the task row; when it wrote, the
// writer appends the event to the row's log and applies the job change in
// the same transaction (see `TaskRow` for how it finds the row). (The
// pending_event and pending_job triggers of earlier schema versions stay
// idle: those columns are left NULL.)
//
// The statements on `tasks` fire the count triggers, so each writes several
// rows; under the default conflict policy (ABORT) SQLite would undo a
// failing one alone, and to be able to it copies every page such a
// statement touches into a statement journal first. The writer never keeps
// part of a transaction: any error rolls all of it back. So they fail
// (`OR FAIL`) without that journal; the trigger statements take the policy
// of the statement that fired them.
/// A create: task binds ?1 to ?9.
const CREATE: &str = "INSERT OR FAIL INTO tasks (task_id, owner_tenant, owner_user, context_id, state, \
     status_ms, version, task, checkpoint_turn, checkpoint_state) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?9) ON CONFLICT (task_id) DO NOTHING";
/// An update: task binds ?1 to ?10.
const UPDATE: &str = "UPDATE OR FAIL tasks SET context_id = ?1, state = ?2, status_ms = ?3, \
     version = version + 1, task = ?4, checkpoint_turn = COALESCE(?5, checkpoint_turn), \
     checkpoint_state = COALESCE(?6, checkpoint_state) \
     WHERE task_id = ?7 AND owner_tenant = ?8 AND owner_user = ?9 AND version = ?10";
/// Whether the task (?1) has an unfinished job: a create that records a job
/// happens only if not.
const UNFINISHED_JOB: &str = concat!(
    "SELECT 1 FROM jobs WHERE task_id = ?1 AND state IN ",
    unfinished_jobs!()
);
/// Whether the task (?1) has a job: a create that finishes it happens only if so.
const ANY_JOB: &str = "SELECT 1 FROM jobs WHERE task_id = ?1";
/// An update that happens only if the task has no unfinished job (?11: the job's task).
const UPDATE_IF_JOB_FREE: &str = concat!(
    "UPDATE OR FAIL tasks SET context_id = ?1, state = ?2, status_ms = ?3, \
     version = version + 1, task = ?4, checkpoint_turn = COALESCE(?5, checkpoint_turn), \
     checkpoint_state = COALESCE(?6, checkpoint_state) \
     WHERE task_id = ?7 AND owner_tenant = ?8 AND owner_user = ?9 AND version = ?10 AND NOT EXISTS \
     (SELECT 1 FROM jobs WHERE task_id = ?11 AND state IN ",
    unfinished_jobs!(),
    ")"
);
/// An update that happens only if the task has a job (?11: the job's task).
const UPDATE_IF_JOB: &str = "UPDATE OR FAIL tasks SET context_id = ?1, state = ?2, status_ms = ?3, \
     version = version + 1, task = ?4, checkpoint_turn = COALESCE(?5, checkpoint_turn), \
     checkpoint_state = COALESCE(?6, checkpoint_state) \
     WHERE task_id = ?7 AND owner_tenant = ?8 AND owner_user = ?9 AND version = ?10 AND EXISTS \
     (SELECT 1 FROM jobs WHERE task_id = ?11)";
/// Records a job, or replaces a finished one (binds as [`JobOp::Record`] lists).
/// The task statement's guard already made sure no unfinished job is there.
const RECORD_JOB: &str = concat!(
    "INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, heartbeat_us, \
     attempts, request, reason, created_us, updated_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?6, ?6) \
     ON CONFLICT (task_id) DO UPDATE SET owner_tenant = excluded.owner_tenant, \
     owner_user = excluded.owner_user, state = excluded.state, node = excluded.node, \
     heartbeat_us = excluded.heartbeat_us, attempts = 1, request = excluded.request, \
     reason = excluded.reason, created_us = excluded.created_us, updated_us = excluded.updated_us \
     WHERE jobs.state NOT IN ",
    unfinished_jobs!()
);
/// Finishes a job (binds as [`JobOp::Finish`] lists).
const FINISH_JOB: &str =
    "UPDATE jobs SET state = ?2, reason = ?3, updated_us = ?4 WHERE task_id = ?1";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The steps of SQLite's plan for `sql` with `args`.
    async fn plan_of(
        store: &SqliteStore,
        sql: &str,
        args: sqlx::sqlite::SqliteArguments<'_>,
    ) -> Vec<String> {
        use sqlx::Row as _;
        sqlx::query_with(&format!("EXPLAIN QUERY PLAN {sql}"), args)
            .fetch_all(store.pool())
            .await
            .unwrap()
            .iter()
            .map(|row| row.get::<String, _>(3))
            .collect()
    }

    /// A context's total is its range of the context index, whatever other
    /// filter comes with it: through the owner's index of a state, counting
    /// one context would read all of the owner's tasks in that state.
    #[tokio::test]
    async fn a_context_total_reads_the_context_index() {
        use a2a_core::{ListTasksRequest, TaskState};
        use a2a_server::store::listing::TaskQuery;
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).await.unwrap();
        let caller = a2a_server::Caller {
            tenant: String::new(),
            user: "alice".into(),
        };
        for (state, timestamp) in [
            (TaskState::Unspecified, None),
            (TaskState::Completed, None),
            (TaskState::Completed, Some(chrono::Utc::now())),
        ] {
            let request = ListTasksRequest {
                context_id: "ctx".into(),
                status: state,
                status_timestamp_after: timestamp,
                ..Default::default()
            };
            let query = TaskQuery::from_request(&request).unwrap();
            let (text, args) = SqlStore::<SqliteWrites>::total_size(&caller, &query)
                .into_parts()
                .unwrap();
            let plan = plan_of(&store, &text, args).await;
            assert!(
                plan.iter()
                    .any(|step| step.contains("tasks_by_owner_context")),
                "{state:?}, {timestamp:?}: {plan:?}"
            );
        }
        store.close().await;
    }

    /// The query repeats the partial index's predicate, or SQLite would scan
    /// every task for the few that ended.
    #[tokio::test]
    async fn task_retention_reads_the_partial_index_of_terminal_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).await.unwrap();
        let mut args = sqlx::sqlite::SqliteArguments::default();
        sqlx::Arguments::add(&mut args, 0_i64).unwrap();
        sqlx::Arguments::add(&mut args, 10_i64).unwrap();
        let plan = plan_of(&store, SqliteWrites::TERMINAL_TASKS_BEFORE, args).await;
        assert!(
            plan.iter()
                .any(|step| step.contains("tasks_terminal_by_status")),
            "{plan:?}"
        );
        store.close().await;
    }
}
