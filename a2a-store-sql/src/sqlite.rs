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

use crate::common::{apply_migrations, check_push_key, sql_stores};
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
/// up to 100 ms); reads run on their own pool beside the writer (WAL).
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    writer: SqlitePool,
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
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(connect.clone())
            .await?;
        apply_migrations!(MIGRATOR, &writer)?;
        check_push_key!(&writer, options.push_key.as_ref());
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .connect_with(connect)
            .await?;
        Ok(SqliteStore {
            pool,
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
}

sql_stores!(SqliteStore, sqlx::Sqlite);
