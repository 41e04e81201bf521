//! `PostgresStore`: the server's state in a PostgreSQL database.

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::common::{apply_migrations, check_push_key, sql_stores};
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

    /// Connects with `options` (for a search path, TLS, a pool of your own size, …).
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
}

sql_stores!(PostgresStore, sqlx::Postgres);
