//! Where a server keeps its state, as an operator writes it (`--store`), and
//! the stores opened from it.

use std::path::PathBuf;
use std::str::FromStr;

use a2a_server::HandlerBuilder;

use crate::{OpenError, PushKey};

/// A store location: `memory`, `sqlite:DIR` (a data directory), or a
/// `postgres://` / `postgresql://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// Process memory: nothing survives a restart.
    Memory,
    /// A SQLite database in this data directory.
    Sqlite(PathBuf),
    /// A PostgreSQL database.
    Postgres(String),
}

/// A `--store` value that names no store this program knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown store {0:?}: use memory, sqlite:DIR or a postgres:// URL")]
pub struct UnknownStore(String);

impl FromStr for StoreLocation {
    type Err = UnknownStore;

    fn from_str(value: &str) -> Result<Self, Self::Err> {
        if value == "memory" {
            return Ok(StoreLocation::Memory);
        }
        if value.starts_with("postgres://") || value.starts_with("postgresql://") {
            return Ok(StoreLocation::Postgres(value.to_owned()));
        }
        match value
            .strip_prefix("sqlite://")
            .or_else(|| value.strip_prefix("sqlite:"))
        {
            Some(dir) if !dir.is_empty() => Ok(StoreLocation::Sqlite(PathBuf::from(dir))),
            _ => Err(UnknownStore(value.to_owned())),
        }
    }
}

impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Memory => f.write_str("memory"),
            StoreLocation::Sqlite(dir) => write!(f, "sqlite:{}", dir.display()),
            // The URL may carry a password.
            StoreLocation::Postgres(_) => f.write_str("postgres"),
        }
    }
}

/// A durable store, opened: SQLite or PostgreSQL behind one type.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum DurableStore {
    /// SQLite.
    #[cfg(feature = "sqlite")]
    Sqlite(crate::SqliteStore),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(crate::PostgresStore),
}

impl StoreLocation {
    /// Opens a durable store here (`None` for memory). A SQLite data
    /// directory is locked for this process.
    pub async fn open(&self, push_key: Option<PushKey>) -> Result<Option<DurableStore>, OpenError> {
        match self {
            StoreLocation::Memory => Ok(None),
            #[cfg(feature = "sqlite")]
            StoreLocation::Sqlite(dir) => {
                let mut options = crate::SqliteOptions::new(dir.clone());
                options.push_key = push_key;
                Ok(Some(DurableStore::Sqlite(
                    crate::SqliteStore::open_with(options).await?,
                )))
            }
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(url) => Ok(Some(DurableStore::Postgres(
                crate::PostgresStore::connect(url, push_key).await?,
            ))),
            #[allow(unreachable_patterns)]
            other => Err(OpenError::Unsupported(other.to_string())),
        }
    }
}

impl StoreLocation {
    /// Opens the store here as a node of a cluster: its writes announce their
    /// events, and the bus returned carries them and cancels between nodes.
    /// Only PostgreSQL can be shared by several servers.
    #[cfg(feature = "postgres")]
    pub async fn open_cluster(
        &self,
        push_key: Option<PushKey>,
    ) -> Result<(DurableStore, crate::PostgresCluster), OpenError> {
        match self {
            StoreLocation::Postgres(url) => {
                let store = crate::PostgresStore::connect_cluster(url, push_key).await?;
                let bus = crate::PostgresCluster::new(&store).await?;
                Ok((DurableStore::Postgres(store), bus))
            }
            other => Err(OpenError::Unsupported(format!(
                "a cluster on {other} (only PostgreSQL can be shared by several servers)"
            ))),
        }
    }

    /// Opens the store of agent `name` of a gateway here, apart from every
    /// other agent's (`None` for memory): SQLite in `DIR/agents/<name>`,
    /// PostgreSQL in the schema `a2a_agent_<name>` of the database (created
    /// if missing). `name` is a gateway agent name (letters, digits, `-`, `_`).
    pub async fn open_for_agent(
        &self,
        name: &str,
        push_key: Option<PushKey>,
    ) -> Result<Option<DurableStore>, OpenError> {
        // Checked on every store: a name only PostgreSQL would refuse is
        // refused everywhere.
        let schema = agent_schema(name)?;
        #[cfg(not(feature = "postgres"))]
        let _ = schema;
        match self {
            StoreLocation::Memory => Ok(None),
            StoreLocation::Sqlite(dir) => {
                StoreLocation::Sqlite(dir.join("agents").join(name))
                    .open(push_key)
                    .await
            }
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(url) => {
                let options = agent_options(url, &schema).await?;
                Ok(Some(DurableStore::Postgres(
                    crate::PostgresStore::connect_with(options, push_key).await?,
                )))
            }
            #[allow(unreachable_patterns)]
            other => Err(OpenError::Unsupported(other.to_string())),
        }
    }

    /// Opens the store of agent `name` of a gateway here as a node of a
    /// cluster: the schema of [`StoreLocation::open_for_agent`], whose writes
    /// announce their events, and the bus of that schema (it hears only this
    /// agent's events and cancels, though every agent's share the database's
    /// channels). Every node of a gateway cluster opens each agent this way.
    #[cfg(feature = "postgres")]
    pub async fn open_cluster_for_agent(
        &self,
        name: &str,
        push_key: Option<PushKey>,
    ) -> Result<(DurableStore, crate::PostgresCluster), OpenError> {
        let schema = agent_schema(name)?;
        match self {
            StoreLocation::Postgres(url) => {
                let options = agent_options(url, &schema).await?;
                let store = crate::PostgresStore::connect_with(
                    crate::PostgresStore::cluster_options(options),
                    push_key,
                )
                .await?;
                let bus = crate::PostgresCluster::new(&store).await?;
                Ok((DurableStore::Postgres(store), bus))
            }
            other => Err(OpenError::Unsupported(format!(
                "a cluster on {other} (only PostgreSQL can be shared by several servers)"
            ))),
        }
    }

    /// Opens the store here to look at it beside a running server: SQLite
    /// read-only and without the directory lock (writes fail), PostgreSQL as
    /// usual. `None` for memory, which no other process can see.
    pub async fn open_to_read(&self) -> Result<Option<DurableStore>, OpenError> {
        match self {
            #[cfg(feature = "sqlite")]
            StoreLocation::Sqlite(dir) => Ok(Some(DurableStore::Sqlite(
                crate::SqliteStore::open_read_only(dir, None).await?,
            ))),
            other => other.open(None).await,
        }
    }
}

impl StoreLocation {
    /// The gateway agents with a store here (see
    /// [`StoreLocation::open_for_agent`]), sorted: each `DIR/agents/NAME`
    /// holding a SQLite database, each PostgreSQL schema `a2a_agent_NAME`;
    /// none in memory. For operator tools: it opens and creates nothing.
    pub async fn agent_names(&self) -> Result<Vec<String>, OpenError> {
        match self {
            StoreLocation::Memory => Ok(Vec::new()),
            #[cfg(feature = "sqlite")]
            StoreLocation::Sqlite(dir) => {
                let agents = dir.join("agents");
                let listing = || format!("listing {}", agents.display());
                let entries = match std::fs::read_dir(&agents) {
                    Ok(entries) => entries,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(Vec::new());
                    }
                    Err(source) => {
                        return Err(OpenError::Io {
                            context: listing(),
                            source,
                        });
                    }
                };
                let mut names = Vec::new();
                for entry in entries {
                    let entry = entry.map_err(|source| OpenError::Io {
                        context: listing(),
                        source,
                    })?;
                    if entry.path().join(crate::DATABASE_FILE).is_file() {
                        if let Some(name) = entry.file_name().to_str() {
                            names.push(name.to_owned());
                        }
                    }
                }
                names.sort();
                Ok(names)
            }
            #[cfg(feature = "postgres")]
            StoreLocation::Postgres(url) => {
                use sqlx::Connection as _;
                let mut connection = sqlx::PgConnection::connect(url).await?;
                // `_` matches any character in LIKE: escaped, it is itself.
                let names: Vec<String> = sqlx::query_scalar(
                    "SELECT substr(schema_name, 11) FROM information_schema.schemata \
                     WHERE schema_name LIKE 'a2a\\_agent\\_%' ORDER BY 1",
                )
                .fetch_all(&mut connection)
                .await?;
                let _ = connection.close().await;
                Ok(names)
            }
            #[allow(unreachable_patterns)]
            other => Err(OpenError::Unsupported(other.to_string())),
        }
    }
}

/// The PostgreSQL schema of gateway agent `name`, once the name is checked
/// (only letters, digits, `-` and `_`: it is quoted into SQL).
fn agent_schema(name: &str) -> Result<String, OpenError> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(OpenError::Unsupported(format!(
            "agent name {name:?} cannot name a store"
        )));
    }
    Ok(format!("a2a_agent_{name}"))
}

/// Connection options for `schema` of the database at `url`, the schema
/// created first if missing.
#[cfg(feature = "postgres")]
async fn agent_options(
    url: &str,
    schema: &str,
) -> Result<sqlx::postgres::PgConnectOptions, OpenError> {
    use sqlx::Connection as _;
    let options: sqlx::postgres::PgConnectOptions = url.parse()?;
    let mut setup = sqlx::PgConnection::connect_with(&options).await?;
    // `IF NOT EXISTS` does not make two creators at once safe: the second
    // can fail on the catalog's unique index (cluster nodes starting
    // together do this). Creators of one schema take turns on a
    // transaction-scoped advisory lock.
    let mut create = setup.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
        .bind(format!("a2a create schema {schema}"))
        .execute(&mut *create)
        .await?;
    // The name is checked by `agent_schema`: only letters, digits, '-' and '_'.
    sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
        .execute(&mut *create)
        .await?;
    create.commit().await?;
    let _ = setup.close().await;
    Ok(options.options([("search_path", format!("\"{schema}\""))]))
}

impl DurableStore {
    /// Keeps the handler's tasks, push configs and jobs in this store
    /// (executions become durable jobs).
    pub fn install(self, builder: HandlerBuilder) -> HandlerBuilder {
        match self {
            #[cfg(feature = "sqlite")]
            DurableStore::Sqlite(store) => builder
                .task_store(store.clone())
                .push_config_store(store.clone())
                .job_store(store),
            #[cfg(feature = "postgres")]
            DurableStore::Postgres(store) => builder
                .task_store(store.clone())
                .push_config_store(store.clone())
                .job_store(store),
        }
    }

    /// The store as a job store (for operator tools).
    pub fn jobs(&self) -> &dyn a2a_server::store::JobStore {
        match self {
            #[cfg(feature = "sqlite")]
            DurableStore::Sqlite(store) => store,
            #[cfg(feature = "postgres")]
            DurableStore::Postgres(store) => store,
        }
    }

    /// The store as a task store (for operator tools).
    pub fn tasks(&self) -> &dyn a2a_server::store::TaskStore {
        match self {
            #[cfg(feature = "sqlite")]
            DurableStore::Sqlite(store) => store,
            #[cfg(feature = "postgres")]
            DurableStore::Postgres(store) => store,
        }
    }

    /// The store as a push-config store (for operator tools).
    pub fn push_configs(&self) -> &dyn a2a_server::store::PushConfigStore {
        match self {
            #[cfg(feature = "sqlite")]
            DurableStore::Sqlite(store) => store,
            #[cfg(feature = "postgres")]
            DurableStore::Postgres(store) => store,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_print_without_secrets() {
        assert_eq!("memory".parse(), Ok(StoreLocation::Memory));
        assert_eq!(
            "sqlite:./.a2a".parse(),
            Ok(StoreLocation::Sqlite("./.a2a".into()))
        );
        assert_eq!(
            "sqlite:///var/a2a".parse(),
            Ok(StoreLocation::Sqlite("/var/a2a".into()))
        );
        let pg: StoreLocation = "postgres://u:secret@h/db".parse().unwrap();
        assert_eq!(pg.to_string(), "postgres");
        assert!("sqlite:".parse::<StoreLocation>().is_err());
        assert!("redis://h".parse::<StoreLocation>().is_err());
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn only_postgresql_holds_a_gateway_cluster_and_names_are_checked_first() {
        let dir = std::env::temp_dir().join("a2a-location-cluster-for-agent");
        for location in [StoreLocation::Memory, StoreLocation::Sqlite(dir)] {
            let refused = location.open_cluster_for_agent("echo", None).await;
            assert!(
                matches!(refused, Err(OpenError::Unsupported(ref why)) if why.contains("PostgreSQL")),
                "{location}: {refused:?}"
            );
        }
        // Refused before any connection is tried (nothing listens there).
        let nowhere = StoreLocation::Postgres("postgres://postgres@127.0.0.1:1/none".to_owned());
        for name in ["", "a\"b", "a;b", "a b"] {
            let refused = nowhere.open_cluster_for_agent(name, None).await;
            assert!(
                matches!(refused, Err(OpenError::Unsupported(ref why)) if why.contains("cannot name a store")),
                "{name:?}: {refused:?}"
            );
        }
    }
}
