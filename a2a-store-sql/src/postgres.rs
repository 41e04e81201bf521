//! `PostgresStore`: the server's state in a PostgreSQL database.

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use a2a_server::store::StoreError;

use crate::common::{Bind, apply_migrations, backend, bind_all, check_push_key, sql_stores};
use crate::{OpenError, PushKey};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// Tasks, push configs and jobs in PostgreSQL. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
    push_key: Option<PushKey>,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host/db`), applies pending
    /// migrations and checks the push-credentials key.
    pub async fn connect(url: &str, push_key: Option<PushKey>) -> Result<Self, OpenError> {
        let options: PgConnectOptions = url.parse()?;
        PostgresStore::connect_with(options, push_key).await
    }

    /// Connects with `options` (for a search path, TLS, …); [`PostgresStore::from_pool`]
    /// takes a pool of your own size.
    pub async fn connect_with(
        options: PgConnectOptions,
        push_key: Option<PushKey>,
    ) -> Result<Self, OpenError> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .connect_with(options)
            .await?;
        PostgresStore::from_pool(pool, push_key).await
    }

    /// Uses an existing pool: applies pending migrations and checks the key.
    pub async fn from_pool(pool: PgPool, push_key: Option<PushKey>) -> Result<Self, OpenError> {
        apply_migrations!(MIGRATOR, &pool)?;
        check_push_key!(&pool, push_key.as_ref());
        Ok(PostgresStore { pool, push_key })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    fn reader(&self) -> &PgPool {
        &self.pool
    }

    fn writer(&self) -> &PgPool {
        &self.pool
    }

    /// Other servers may share the database: every listing asks it.
    fn push_config_saving(&self, _task_id: &str) {}

    fn may_have_push_configs(&self, _task_id: &str) -> bool {
        true
    }

    /// Runs a task write; returns how many rows it changed.
    async fn write_task(&self, sql: &'static str, binds: Vec<Bind>) -> Result<u64, StoreError> {
        let written = bind_all!(sqlx::query(sql), binds)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(written.rows_affected())
    }
}

// A write is one statement: the task row, then its event through a
// data-modifying CTE (one round trip, atomic on its own).
sql_stores!(
    PostgresStore,
    sqlx::Postgres,
    create: "WITH created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, \
             state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
             VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9) ON CONFLICT (task_id) DO NOTHING \
             RETURNING seq) \
             INSERT INTO task_events (task_seq, version, event) SELECT seq, 1, $10 FROM created",
    update: "WITH updated AS (UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
             version = version + 1, task = $4, checkpoint_turn = COALESCE($5, checkpoint_turn), \
             checkpoint_state = COALESCE($6, checkpoint_state) \
             WHERE task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 \
             RETURNING seq, version) \
             INSERT INTO task_events (task_seq, version, event) SELECT seq, version, $11 FROM updated"
);
