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
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use a2a_server::store::StoreError;

use crate::common::{
    Bind, JobChange, JobOp, TaskOp, apply_migrations, backend, bind_all, check_push_key, sql_stores,
};
use crate::webhooks::WebhookTasks;
use crate::writer::TaskWriter;
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
    pool: SqlitePool,
    writer: SqlitePool,
    /// Task writes, committed in groups (None: opened read-only).
    task_writer: Option<TaskWriter>,
    /// Tasks with push configs (None: opened read-only, so others may add some).
    webhooks: Option<Arc<WebhookTasks>>,
    push_key: Option<PushKey>,
    /// Held for the store's life: the OS releases it when the last clone
    /// goes, or when the process dies. (None: opened read-only.)
    _lock: Option<Arc<File>>,
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
        apply_migrations!(MIGRATOR, &writer)?;
        check_push_key!(&writer, options.push_key.as_ref());
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .test_before_acquire(false)
            .connect_with(connect)
            .await?;
        let webhook_tasks: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT task_id FROM push_configs")
                .fetch_all(&pool)
                .await?;
        Ok(SqliteStore {
            pool,
            webhooks: Some(Arc::new(WebhookTasks::new(webhook_tasks))),
            task_writer: Some(TaskWriter::start(writer.clone())),
            writer,
            push_key: options.push_key,
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
        Ok(SqliteStore {
            task_writer: None,
            webhooks: None,
            writer: pool.clone(),
            pool,
            push_key,
            _lock: None,
        })
    }

    /// The pool that reads (for operator tools that query the database).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes the pools, waiting for connections in use; the directory lock
    /// goes with the last clone.
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close().await;
    }

    fn reader(&self) -> &SqlitePool {
        &self.pool
    }

    fn writer(&self) -> &SqlitePool {
        &self.writer
    }

    fn push_config_saving(&self, task_id: &str) {
        if let Some(webhooks) = &self.webhooks {
            webhooks.insert(task_id);
        }
    }

    fn may_have_push_configs(&self, task_id: &str) -> bool {
        self.webhooks
            .as_ref()
            .is_none_or(|webhooks| webhooks.may_have(task_id))
    }

    /// Runs a task write with its job change, if any (one statement, in the
    /// next group commit); returns how many rows it changed.
    async fn write_task(
        &self,
        op: TaskOp,
        mut binds: Vec<Bind>,
        job: Option<JobChange>,
    ) -> Result<u64, StoreError> {
        let sql = match job {
            None => match op {
                TaskOp::Create => CREATE,
                TaskOp::Update => UPDATE,
            },
            Some(job) => {
                let json = pending_job(&job)?;
                binds.push(Bind::Text(job.task_id));
                binds.push(Bind::Text(json));
                match (op, job.op) {
                    (TaskOp::Create, JobOp::Record) => CREATE_IF_JOB_FREE,
                    (TaskOp::Create, JobOp::Finish) => CREATE_IF_JOB,
                    (TaskOp::Update, JobOp::Record) => UPDATE_IF_JOB_FREE,
                    (TaskOp::Update, JobOp::Finish) => UPDATE_IF_JOB,
                }
            }
        };
        match &self.task_writer {
            Some(writer) => writer.write(sql, binds).await,
            None => {
                let written = bind_all!(sqlx::query(sql), binds)
                    .execute(&self.writer)
                    .await
                    .map_err(backend)?;
                Ok(written.rows_affected())
            }
        }
    }
}

// A write is one statement in its own implicit transaction: the event goes in
// `pending_event`, and a trigger moves it to the log (see the migration). One
// statement is one trip to the connection's thread instead of four.
/// A create: task binds $1 to $10.
const CREATE: &str = "INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, state, \
     status_ms, version, task, checkpoint_turn, checkpoint_state, pending_event) \
     VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10) ON CONFLICT (task_id) DO NOTHING";
/// An update: task binds $1 to $11.
const UPDATE: &str = "UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, checkpoint_turn), \
     checkpoint_state = COALESCE($6, checkpoint_state), pending_event = $11 \
     WHERE task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10";

// A write with a job change is still one statement: the task write, guarded
// by the job's state (so a change that cannot apply writes nothing), carries
// the change in `pending_job` ($12 on a create, $13 on an update), and a
// trigger applies it (see the migration). $11 (create) or $12 (update) is the
// job's task id.
/// A create that happens only if the task has no unfinished job.
const CREATE_IF_JOB_FREE: &str = "INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, state, \
     status_ms, version, task, checkpoint_turn, checkpoint_state, pending_event, pending_job) \
     SELECT $1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $12 WHERE NOT EXISTS (SELECT 1 FROM jobs \
     WHERE task_id = $11 AND state NOT IN ('COMPLETED', 'FAILED', 'ABANDONED')) \
     ON CONFLICT (task_id) DO NOTHING";
/// A create that happens only if the task has a job.
const CREATE_IF_JOB: &str = "INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, state, \
     status_ms, version, task, checkpoint_turn, checkpoint_state, pending_event, pending_job) \
     SELECT $1, $2, $3, $4, $5, $6, 1, $7, $8, $9, $10, $12 WHERE EXISTS (SELECT 1 FROM jobs WHERE task_id = $11) \
     ON CONFLICT (task_id) DO NOTHING";
/// An update that happens only if the task has no unfinished job.
const UPDATE_IF_JOB_FREE: &str = "UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, checkpoint_turn), \
     checkpoint_state = COALESCE($6, checkpoint_state), pending_event = $11, pending_job = $13 \
     WHERE task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 AND NOT EXISTS (SELECT 1 FROM jobs \
     WHERE task_id = $12 AND state NOT IN ('COMPLETED', 'FAILED', 'ABANDONED'))";
/// An update that happens only if the task has a job.
const UPDATE_IF_JOB: &str = "UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, checkpoint_turn), \
     checkpoint_state = COALESCE($6, checkpoint_state), pending_event = $11, pending_job = $13 \
     WHERE task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 AND EXISTS (SELECT 1 FROM jobs WHERE task_id = $12)";

/// The job change as the trigger reads it.
fn pending_job(job: &JobChange) -> Result<String, StoreError> {
    let names: &[&str] = match job.op {
        JobOp::Record => &[
            "task_id",
            "owner_tenant",
            "owner_user",
            "state",
            "node",
            "at",
            "request",
            "reason",
        ],
        JobOp::Finish => &["task_id", "state", "reason", "at"],
    };
    let mut fields = serde_json::Map::with_capacity(names.len() + 1);
    let op = match job.op {
        JobOp::Record => "record",
        JobOp::Finish => "finish",
    };
    fields.insert("op".into(), op.into());
    for (name, bind) in names.iter().zip(&job.binds) {
        let value = match bind {
            Bind::Text(v) => serde_json::Value::from(v.as_str()),
            Bind::I32(v) => serde_json::Value::from(*v),
            Bind::I64(v) => serde_json::Value::from(*v),
            Bind::OptI64(v) => serde_json::Value::from(*v),
            Bind::OptText(v) => serde_json::Value::from(v.as_deref()),
            Bind::OptBytes(_) => {
                return Err(StoreError::Backend(
                    "a job change has no binary field".into(),
                ));
            }
        };
        fields.insert((*name).to_owned(), value);
    }
    serde_json::to_string(&fields)
        .map_err(|e| StoreError::Backend(format!("serializing a job change: {e}")))
}

sql_stores!(SqliteStore, sqlx::Sqlite);
