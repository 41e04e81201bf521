#![doc = include_str!("../README.md")]
//!
//! # Guarantees
//!
//! Both behave exactly like the in-memory stores of `a2a-server` (the same
//! conformance suites run against all of them), and more:
//!
//! - every task write appends the event that caused it to the task's event
//!   log in the same transaction, so [`TaskStore::events`] reads them back;
//! - a turn checkpoint given with a write is stored in that transaction too;
//! - ListTasks' `totalSize` is read from per-owner counts that the schema's
//!   triggers keep with every task write, so a page costs the page, not all
//!   of the caller's tasks (only a `statusTimestampAfter` filter counts rows);
//! - the schema is versioned: migrations are embedded and applied on open, and
//!   a database migrated by a newer release refuses to open;
//! - push-config credentials are encrypted at rest when a [`PushKey`] is given.
//!
//! [`TaskStore`]: a2a_server::store::TaskStore
//! [`TaskStore::events`]: a2a_server::store::TaskStore::events
//! [`PushConfigStore`]: a2a_server::store::PushConfigStore
//! [`JobStore`]: a2a_server::store::JobStore
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "postgres")]
mod cluster;
mod common;
mod crypt;
mod location;
#[cfg(feature = "postgres")]
mod pg_writer;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod routes;
#[cfg(feature = "sqlite")]
mod scheduling;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
#[cfg(feature = "sqlite")]
mod webhooks;
#[cfg(feature = "sqlite")]
mod writer;

#[cfg(feature = "postgres")]
pub use self::cluster::PostgresCluster;
pub use self::crypt::{KeyError, PushKey};
pub use self::location::{DurableStore, StoreLocation, UnknownStore};
#[cfg(feature = "postgres")]
pub use self::postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use self::sqlite::{DATABASE_FILE, LOCK_FILE, SqliteOptions, SqliteStore};

/// Why a store could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Another process holds the data directory (a server is running on it).
    #[error(
        "the data directory is in use by another process ({path} is locked); is a server already running on it?"
    )]
    Locked {
        /// The lock file.
        path: std::path::PathBuf,
    },
    /// The database was migrated by a newer release of this software.
    #[error(
        "the database schema is newer than this program (it has migration {version}, unknown here); upgrade the program or use another database"
    )]
    SchemaTooNew {
        /// The first migration this program does not know.
        version: i64,
    },
    /// A migration failed.
    #[error("migrating the database failed: {0}")]
    Migration(String),
    /// The push-credentials key is not the one the stored credentials were encrypted with.
    #[error(
        "the push-credentials key does not match the one this database's credentials were encrypted with"
    )]
    WrongKey,
    /// The database holds encrypted push credentials, and no key was given.
    #[error(
        "this database's push credentials are encrypted; give the key they were encrypted with"
    )]
    KeyRequired,
    /// The data directory could not be prepared.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// This build has no support for the store named (a cargo feature is off).
    #[error("this build cannot open {0} stores")]
    Unsupported(String),
    /// The connection that writes could not be opened or set up.
    #[error("opening the database for writing failed: {0}")]
    WriteConnection(String),
    /// The database could not be reached or read.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
}
