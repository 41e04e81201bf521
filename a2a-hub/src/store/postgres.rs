//! The hub's record in PostgreSQL, shared by the nodes of a gateway
//! cluster: the tables of the SQLite record in a schema of the hub's own
//! (created by the migrations in `migrations/postgres`), written in the
//! same one transaction per message.
//!
//! What makes one hub of several nodes:
//!
//! - **Announced by the committing transaction.** A write that a node's
//!   page or feed shows (a message, a thread's change, a delivery's state,
//!   a guard's event) calls `pg_notify` inside its own transaction, so the
//!   notice exists exactly when the write committed. Each node keeps one
//!   listening connection (see `hub::cluster`) and skips its own notices.
//! - **Guards counted in the table.** A pair's or an address's window is
//!   checked and its event inserted in one transaction, serialized per key
//!   by a transaction-scoped advisory lock, so two nodes cannot both admit
//!   the limit's last call.
//! - **Deliveries as leases.** A delivery is a row naming the node that
//!   holds it and the database time it last said so, from the transaction
//!   that stores its message (task_id '' until the agent takes it) until
//!   its answer lands: a node that dies before it even started a delivery
//!   leaves it to the others. Nodes renew their own rows; a node takes over rows whose
//!   heartbeat is older than the lease timeout with one conditional
//!   `UPDATE`. The answer lands with a `DELETE … WHERE node = me` in the
//!   transaction that posts it ([`Write::Landed`]), so of two nodes that
//!   followed one task only the holder posts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{Connection as _, Row as _};

use super::{
    GuardKind, LoadedGuardEvent, LoadedRoute, LoadedThread, PendingDelivery, TAKEN_OVER, Write,
    parse_time, stamp,
};
use crate::error::HubError;
use crate::model::{DeliveryStatus, HubMessage, ObserverRecord, ThreadView};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The schema the hub's tables go in unless told otherwise.
pub(crate) const DEFAULT_SCHEMA: &str = "a2a_hub";

/// How many times a write transaction runs before a deadlock fails it.
const WRITE_ATTEMPTS: u32 = 5;

/// Why a write transaction failed: PostgreSQL's own error, kept whole so a
/// deadlock can be told apart, or the hub's.
#[derive(Debug)]
enum WriteError {
    Db(sqlx::Error),
    Hub(HubError),
}

impl From<HubError> for WriteError {
    fn from(err: HubError) -> Self {
        WriteError::Hub(err)
    }
}

impl WriteError {
    /// PostgreSQL aborted the transaction to break a deadlock (`40P01`) or
    /// a serialization failure (`40001`): the same transaction again may
    /// well pass.
    fn worth_retrying(&self) -> bool {
        match self {
            WriteError::Db(sqlx::Error::Database(db)) => {
                matches!(db.code().as_deref(), Some("40P01" | "40001"))
            }
            _ => false,
        }
    }

    fn into_hub(self) -> HubError {
        match self {
            WriteError::Db(err) => pg_error(&err),
            WriteError::Hub(err) => err,
        }
    }
}

fn pg_error(err: &impl std::fmt::Display) -> HubError {
    HubError::store(&format!("postgres: {err}"))
}

/// Where and as whom a hub keeps its record in PostgreSQL.
#[derive(Debug, Clone)]
pub(crate) struct PgSettings {
    pub(crate) url: String,
    pub(crate) schema: String,
    /// The node's name, unique in the cluster; `None`: a name made for
    /// this start. A node that restarts under its name takes back at once
    /// the deliveries it held; under a new one, they wait for their lease
    /// to expire like any dead node's.
    pub(crate) node: Option<String>,
    pub(crate) lease: Duration,
}

/// A notice of a committed write, as the hub's channel carries it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Notice {
    /// The node that wrote it.
    pub(crate) node: String,
    #[serde(flatten)]
    pub(crate) what: Noticed,
}

/// What a [`Notice`] says changed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Noticed {
    /// A message, by its place in the table, and the agents that keep an
    /// observer record of it.
    Message {
        seq: i64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        observers: Vec<String>,
    },
    /// A thread changed without a message (paused, resumed).
    Thread { thread: String },
    /// Where a message's deliveries stand changed.
    Delivery { message: String },
    /// A guard counted an event.
    Guard {
        guard: String,
        key: String,
        at: String,
    },
    /// A guard forgot a key's events.
    Reset { guard: String, key: String },
}

/// The hub's record in PostgreSQL. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct PgRecord {
    pool: PgPool,
    node: Arc<str>,
    channel: Arc<str>,
    lease: Duration,
    /// The last message place when the record was loaded: what other nodes
    /// post after it reaches this node by notice, or by the read that
    /// follows its listener's start (notices before that are not heard).
    loaded_up_to: i64,
}

/// What a hub starts from, besides its record's handle.
#[derive(Debug)]
pub(crate) struct Opened {
    pub(crate) record: PgRecord,
    pub(crate) loaded: super::Loaded,
    /// The operator token every node accepts, and whether this start made
    /// it.
    pub(crate) operator: (String, bool),
}

/// What to load, as [`super::Sqlite::load`] takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoadWindow {
    pub(crate) routes_since: DateTime<Utc>,
    pub(crate) observed_since: DateTime<Utc>,
    pub(crate) keep: usize,
}

/// Whether `schema` can name the hub's schema and its channel: lower-case
/// letters, digits and `_`, at most 48 of them.
fn valid_schema(schema: &str) -> bool {
    !schema.is_empty()
        && schema.len() <= 48
        && schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit()
}

/// What the one-off setup of [`open`] read.
struct Setup {
    loaded: super::Loaded,
    operator: (String, bool),
    loaded_up_to: i64,
}

/// Opens the record: creates the schema and its tables when they are not
/// there, and loads what the hub keeps in memory. The one-off work runs on
/// a thread of its own (the builder is not async); the pool it returns
/// connects on first use, on the caller's runtime.
pub(crate) fn open(
    settings: &PgSettings,
    window: LoadWindow,
    fresh_token: String,
) -> Result<Opened, HubError> {
    if !valid_schema(&settings.schema) {
        return Err(HubError::invalid(format!(
            "the hub's schema {:?} must be lower-case letters, digits and _ (at most 48)",
            settings.schema
        )));
    }
    let base: PgConnectOptions = settings.url.parse().map_err(|e| pg_error(&e))?;
    let options = base
        .clone()
        .options([("search_path", format!("\"{}\"", settings.schema))]);
    let node = settings
        .node
        .clone()
        .unwrap_or_else(|| format!("hub-{}", uuid::Uuid::new_v4().simple()));
    let setup = {
        let (options, schema, node) = (options.clone(), settings.schema.clone(), node.clone());
        move || -> Result<Setup, HubError> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| pg_error(&e))?;
            runtime.block_on(async move {
                let mut conn = PgConnection::connect_with(&options)
                    .await
                    .map_err(|e| pg_error(&e))?;
                create_schema(&mut conn, &schema).await?;
                MIGRATOR.run(&mut conn).await.map_err(|e| pg_error(&e))?;
                // Read before the load: a message committed in between is
                // read again after the listener starts, never missed.
                let loaded_up_to: i64 =
                    sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM messages")
                        .fetch_one(&mut conn)
                        .await
                        .map_err(|e| pg_error(&e))?;
                let loaded = load(&mut conn, &node, window).await?;
                let operator = operator_token(&mut conn, fresh_token).await?;
                let _ = conn.close().await;
                Ok(Setup {
                    loaded,
                    operator,
                    loaded_up_to,
                })
            })
        }
    };
    let Setup {
        loaded,
        operator,
        loaded_up_to,
    } = std::thread::scope(|scope| {
        scope
            .spawn(setup)
            .join()
            .unwrap_or_else(|_| Err(HubError::store(&"the hub's PostgreSQL setup panicked")))
    })?;
    let pool = PgPoolOptions::new()
        .max_connections(8)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_lazy_with(options);
    Ok(Opened {
        record: PgRecord {
            pool,
            node: node.into(),
            channel: format!("a2a_hub_{}", settings.schema).into(),
            lease: settings.lease,
            loaded_up_to,
        },
        loaded,
        operator,
    })
}

async fn create_schema(conn: &mut PgConnection, schema: &str) -> Result<(), HubError> {
    // `IF NOT EXISTS` does not make two creators at once safe (the second
    // can fail on the catalog's unique index): nodes starting together take
    // turns on a transaction-scoped advisory lock.
    let e = |err: sqlx::Error| pg_error(&err);
    let mut create = conn.begin().await.map_err(e)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
        .bind(format!("a2a create schema {schema}"))
        .execute(&mut *create)
        .await
        .map_err(e)?;
    sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
        .execute(&mut *create)
        .await
        .map_err(e)?;
    create.commit().await.map_err(e)
}

/// The operator token on record, or `fresh` put there (first node wins).
async fn operator_token(
    conn: &mut PgConnection,
    fresh: String,
) -> Result<(String, bool), HubError> {
    let inserted: Option<String> = sqlx::query_scalar(
        "INSERT INTO operator_token (id, token) VALUES (1, $1) ON CONFLICT (id) DO NOTHING
         RETURNING token",
    )
    .bind(&fresh)
    .fetch_optional(&mut *conn)
    .await
    .map_err(|e| pg_error(&e))?;
    if let Some(token) = inserted {
        return Ok((token, true));
    }
    let token: String = sqlx::query_scalar("SELECT token FROM operator_token WHERE id = 1")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| pg_error(&e))?;
    Ok((token, false))
}

async fn load(
    conn: &mut PgConnection,
    node: &str,
    window: LoadWindow,
) -> Result<super::Loaded, HubError> {
    let e = |err: sqlx::Error| pg_error(&err);
    let mut participants: HashMap<String, Vec<(u64, String)>> = HashMap::new();
    let mut participant_seq = 0;
    for row in sqlx::query("SELECT thread_id, agent, seq FROM participants")
        .fetch_all(&mut *conn)
        .await
        .map_err(e)?
    {
        let seq = u64::try_from(row.try_get::<i64, _>(2).map_err(e)?).unwrap_or(0);
        participant_seq = participant_seq.max(seq);
        participants
            .entry(row.try_get(0).map_err(e)?)
            .or_default()
            .push((seq, row.try_get(1).map_err(e)?));
    }
    let mut threads = Vec::new();
    for row in sqlx::query(
        "SELECT id, channel, title, created_at, last_activity, messages, paused_until FROM threads",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(e)?
    {
        let id: String = row.try_get(0).map_err(e)?;
        let members = participants.remove(&id).unwrap_or_default();
        if let Some(thread) = thread_of_row(&row, members)? {
            threads.push(thread);
        }
    }
    let mut routes: Vec<LoadedRoute> = Vec::new();
    for row in sqlx::query(
        "SELECT opener, target, channel, thread_id, updated_at FROM routes WHERE updated_at > $1",
    )
    .bind(stamp(window.routes_since))
    .fetch_all(&mut *conn)
    .await
    .map_err(e)?
    {
        let at: String = row.try_get(4).map_err(e)?;
        if let Some(at) = parse_time(&at) {
            routes.push((
                row.try_get(0).map_err(e)?,
                row.try_get(1).map_err(e)?,
                row.try_get(2).map_err(e)?,
                row.try_get(3).map_err(e)?,
                at,
            ));
        }
    }
    sqlx::query("DELETE FROM observed WHERE t <= $1")
        .bind(stamp(window.observed_since))
        .execute(&mut *conn)
        .await
        .map_err(e)?;
    let mut observed: HashMap<String, Vec<ObserverRecord>> = HashMap::new();
    for row in sqlx::query("SELECT agent, body FROM observed ORDER BY seq")
        .fetch_all(&mut *conn)
        .await
        .map_err(e)?
    {
        let agent: String = row.try_get(0).map_err(e)?;
        let body: String = row.try_get(1).map_err(e)?;
        match serde_json::from_str::<ObserverRecord>(&body) {
            Ok(record) => observed.entry(agent).or_default().push(record),
            Err(err) => {
                tracing::warn!(%agent, error = %err, "skipping an unreadable observer record")
            }
        }
    }
    for records in observed.values_mut() {
        let extra = records.len().saturating_sub(window.keep);
        records.drain(..extra);
    }
    // A node takes back the deliveries it held under its name before it
    // restarted; the others' wait for their leases to expire.
    sqlx::query("UPDATE deliveries SET heartbeat = now() WHERE node = $1")
        .bind(node)
        .execute(&mut *conn)
        .await
        .map_err(e)?;
    let deliveries = pending_rows(
        sqlx::query(
            "SELECT d.message_id, d.agent, d.task_id, s.body, s.log_line FROM deliveries d
             LEFT JOIN delivery_states s ON s.message_id = d.message_id AND s.agent = d.agent
             WHERE d.node = $1",
        )
        .bind(node)
        .fetch_all(&mut *conn)
        .await
        .map_err(e)?,
    )?;
    let mut guard_events = Vec::new();
    for row in sqlx::query("SELECT guard, key, at FROM guard_events ORDER BY at, id")
        .fetch_all(&mut *conn)
        .await
        .map_err(e)?
    {
        let guard: String = row.try_get(0).map_err(e)?;
        let key: String = row.try_get(1).map_err(e)?;
        let at: String = row.try_get(2).map_err(e)?;
        if let (Some(guard), Some(at)) = (GuardKind::parse(&guard), parse_time(&at)) {
            guard_events.push(LoadedGuardEvent { guard, key, at });
        }
    }
    Ok(super::Loaded {
        threads,
        routes,
        observed,
        deliveries,
        participant_seq,
        guard_events,
    })
}

/// A thread row (id, channel, title, created, last, messages, paused) with
/// its participants; `None` (with a warning) when its times are unreadable.
fn thread_of_row(
    row: &sqlx::postgres::PgRow,
    mut members: Vec<(u64, String)>,
) -> Result<Option<LoadedThread>, HubError> {
    let e = |err: sqlx::Error| pg_error(&err);
    let id: String = row.try_get(0).map_err(e)?;
    let created: String = row.try_get(3).map_err(e)?;
    let last: String = row.try_get(4).map_err(e)?;
    let (Some(created_at), Some(last_activity)) = (parse_time(&created), parse_time(&last)) else {
        tracing::warn!(thread = %id, "skipping a hub thread with an unreadable time");
        return Ok(None);
    };
    let paused_until: Option<String> = row.try_get(6).map_err(e)?;
    members.sort();
    Ok(Some(LoadedThread {
        view: ThreadView {
            paused: paused_until.is_some(),
            id,
            channel: row.try_get(1).map_err(e)?,
            title: row.try_get(2).map_err(e)?,
            participants: members.into_iter().map(|(_, a)| a).collect(),
            created_at,
            last_activity,
            messages: u64::try_from(row.try_get::<i64, _>(5).map_err(e)?).unwrap_or(0),
        },
        paused_until,
    }))
}

/// Pending deliveries from rows of (message, agent, task, state, line).
fn pending_rows(rows: Vec<sqlx::postgres::PgRow>) -> Result<Vec<PendingDelivery>, HubError> {
    let e = |err: sqlx::Error| pg_error(&err);
    rows.iter()
        .map(|row| {
            let status: Option<String> = row.try_get(3).map_err(e)?;
            let attempt = status
                .and_then(|body| serde_json::from_str::<DeliveryStatus>(&body).ok())
                .map_or(0, |status| status.attempt);
            Ok(PendingDelivery {
                message_id: row.try_get(0).map_err(e)?,
                agent: row.try_get(1).map_err(e)?,
                task_id: super::task_of(row.try_get(2).map_err(e)?),
                attempt,
                log_line: row.try_get(4).map_err(e)?,
            })
        })
        .collect()
}

fn to_i64(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

impl PgRecord {
    /// This node's name.
    pub(crate) fn node(&self) -> &str {
        &self.node
    }

    /// How long a delivery's lease lasts without renewal.
    pub(crate) fn lease(&self) -> Duration {
        self.lease
    }

    /// The channel the hub's notices go on.
    pub(crate) fn channel(&self) -> &str {
        &self.channel
    }

    /// The pool (for a listener).
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Applies `writes` in one transaction, announcing what they changed
    /// in it. A transaction PostgreSQL aborted to break a deadlock (or a
    /// serialization failure) is run again, as PostgreSQL asks of its
    /// clients: nothing of it was kept, and its writes are the same.
    pub(crate) async fn write(&self, writes: Vec<Write>) -> Result<(), HubError> {
        if writes.is_empty() {
            return Ok(());
        }
        let mut attempts = 1;
        loop {
            match self.write_once(&writes).await {
                Err(err) if err.worth_retrying() && attempts < WRITE_ATTEMPTS => attempts += 1,
                done => return done.map_err(WriteError::into_hub),
            }
        }
    }

    async fn write_once(&self, writes: &[Write]) -> Result<(), WriteError> {
        let mut tx = self.pool.begin().await.map_err(WriteError::Db)?;
        let mut notices = Vec::new();
        let has_message = writes.iter().any(|w| matches!(w, Write::Message(_)));
        for write in writes {
            self.apply(&mut tx, write, has_message, &mut notices)
                .await?;
        }
        for mut what in notices {
            if let Noticed::Message { observers, .. } = &mut what {
                observers.extend(writes.iter().filter_map(|write| match write {
                    Write::Observed { agent, .. } => Some(agent.clone()),
                    _ => None,
                }));
            }
            self.announce(&mut tx, what).await?;
        }
        tx.commit().await.map_err(WriteError::Db)
    }

    /// Announces `what` on the hub's channel, delivered to listeners when
    /// (and only if) the transaction on `conn` commits.
    async fn announce(&self, conn: &mut PgConnection, what: Noticed) -> Result<(), HubError> {
        let notice = Notice {
            node: self.node.to_string(),
            what,
        };
        let payload = serde_json::to_string(&notice).map_err(|e| pg_error(&e))?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&*self.channel)
            .bind(payload)
            .execute(&mut *conn)
            .await
            .map_err(|e| pg_error(&e))
            .map(drop)
    }

    async fn apply(
        &self,
        conn: &mut PgConnection,
        write: &Write,
        has_message: bool,
        notices: &mut Vec<Noticed>,
    ) -> Result<(), WriteError> {
        let e = WriteError::Db;
        match write {
            Write::Message(message) => {
                let body = serde_json::to_string(&**message).map_err(|e| pg_error(&e))?;
                let seq: Option<i64> = sqlx::query_scalar(
                    "INSERT INTO messages (id, channel, thread_id, body, node) VALUES ($1, $2, $3, $4, $5)
                     ON CONFLICT (id) DO NOTHING RETURNING seq",
                )
                .bind(&message.id)
                .bind(&message.channel)
                .bind(&message.thread)
                .bind(body)
                .bind(&*self.node)
                .fetch_optional(&mut *conn)
                .await
                .map_err(e)?;
                if let Some(seq) = seq {
                    notices.push(Noticed::Message {
                        seq,
                        observers: Vec::new(),
                    });
                }
            }
            Write::Thread { view, paused_until } => {
                // Nodes count a thread's messages each in memory: the
                // record keeps the highest count and latest activity.
                sqlx::query(
                    "INSERT INTO threads (id, channel, title, created_at, last_activity, messages, paused_until)
                     VALUES ($1, $2, $3, $4, $5, $6, $7)
                     ON CONFLICT (id) DO UPDATE SET
                         last_activity = GREATEST(threads.last_activity, excluded.last_activity),
                         messages = GREATEST(threads.messages, excluded.messages),
                         paused_until = excluded.paused_until",
                )
                .bind(&view.id)
                .bind(&view.channel)
                .bind(&view.title)
                .bind(stamp(view.created_at))
                .bind(stamp(view.last_activity))
                .bind(to_i64(view.messages))
                .bind(paused_until)
                .execute(&mut *conn)
                .await
                .map_err(e)?;
                if !has_message {
                    notices.push(Noticed::Thread {
                        thread: view.id.clone(),
                    });
                }
            }
            Write::Participant { thread, agent, seq } => {
                sqlx::query(
                    "INSERT INTO participants (thread_id, agent, seq) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .bind(thread)
                .bind(agent)
                .bind(to_i64(*seq))
                .execute(&mut *conn)
                .await
                .map_err(e)?;
            }
            Write::Observed {
                agent,
                record,
                keep,
            } => {
                let body = serde_json::to_string(record).map_err(|e| pg_error(&e))?;
                sqlx::query("INSERT INTO observed (agent, body, t) VALUES ($1, $2, $3)")
                    .bind(agent)
                    .bind(body)
                    .bind(stamp(record.t))
                    .execute(&mut *conn)
                    .await
                    .map_err(e)?;
                sqlx::query(
                    "DELETE FROM observed WHERE agent = $1 AND seq <= (
                         SELECT seq FROM observed WHERE agent = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)",
                )
                .bind(agent)
                .bind(to_i64(*keep))
                .execute(&mut *conn)
                .await
                .map_err(e)?;
            }
            Write::ExpireObserved { before } => {
                sqlx::query("DELETE FROM observed WHERE t <= $1")
                    .bind(stamp(*before))
                    .execute(&mut *conn)
                    .await
                    .map_err(e)?;
            }
            Write::Outbox { message_id, agents } => {
                // One statement however many agents: a post's cost grows
                // by one round trip, not one per handler.
                sqlx::query(
                    "INSERT INTO deliveries (message_id, agent, task_id, node, heartbeat)
                     SELECT $1, agent, '', $3, now() FROM UNNEST($2::text[]) AS agent
                     ON CONFLICT (message_id, agent) DO NOTHING",
                )
                .bind(message_id)
                .bind(agents)
                .bind(&*self.node)
                .execute(&mut *conn)
                .await
                .map_err(e)?;
            }
            Write::Delivery {
                message_id,
                agent,
                task_id,
            } => {
                // The row is this node's outbox row, unless another node
                // took the delivery over meanwhile: then that node delivers.
                let recorded = sqlx::query(
                    "INSERT INTO deliveries (message_id, agent, task_id, node, heartbeat)
                     VALUES ($1, $2, $3, $4, now())
                     ON CONFLICT (message_id, agent) DO UPDATE SET task_id = excluded.task_id,
                         heartbeat = excluded.heartbeat
                     WHERE deliveries.node = excluded.node",
                )
                .bind(message_id)
                .bind(agent)
                .bind(task_id)
                .bind(&*self.node)
                .execute(&mut *conn)
                .await
                .map_err(e)?;
                if recorded.rows_affected() == 0 {
                    return Err(HubError::store(&TAKEN_OVER).into());
                }
            }
            Write::Delivered { message_id, agent } => {
                sqlx::query("DELETE FROM deliveries WHERE message_id = $1 AND agent = $2")
                    .bind(message_id)
                    .bind(agent)
                    .execute(&mut *conn)
                    .await
                    .map_err(e)?;
            }
            Write::Landed { message_id, agent } => {
                let landed = sqlx::query(
                    "DELETE FROM deliveries WHERE message_id = $1 AND agent = $2 AND node = $3",
                )
                .bind(message_id)
                .bind(agent)
                .bind(&*self.node)
                .execute(&mut *conn)
                .await
                .map_err(e)?;
                if landed.rows_affected() == 0 {
                    return Err(HubError::store(&TAKEN_OVER).into());
                }
            }
            Write::DeliveryState {
                message_id,
                status,
                log_line,
            } => {
                let body = serde_json::to_string(status).map_err(|e| pg_error(&e))?;
                sqlx::query(
                    "INSERT INTO delivery_states (message_id, agent, body, log_line) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (message_id, agent) DO UPDATE SET body = excluded.body,
                         log_line = COALESCE(excluded.log_line, delivery_states.log_line)",
                )
                .bind(message_id)
                .bind(&status.agent)
                .bind(body)
                .bind(log_line)
                .execute(&mut *conn)
                .await
                .map_err(e)?;
                notices.push(Noticed::Delivery {
                    message: message_id.clone(),
                });
            }
            Write::GuardEvent {
                guard,
                key,
                at,
                forget_before,
            } => {
                insert_guard_event(conn, *guard, key, *at, *forget_before).await?;
                notices.push(Noticed::Guard {
                    guard: guard.as_str().to_owned(),
                    key: key.clone(),
                    at: stamp(*at),
                });
            }
            Write::GuardReset { guard, key } => {
                sqlx::query("DELETE FROM guard_events WHERE guard = $1 AND key = $2")
                    .bind(guard.as_str())
                    .bind(key)
                    .execute(&mut *conn)
                    .await
                    .map_err(e)?;
                notices.push(Noticed::Reset {
                    guard: guard.as_str().to_owned(),
                    key: key.clone(),
                });
            }
        }
        Ok(())
    }

    /// Counts an event of `key` for `guard` at `now` if fewer than `limit`
    /// of its events fell in the window (those after `forget_before`), all
    /// nodes' events counted; else counts nothing and says how long until
    /// the oldest leaves the window. Checked and counted in one
    /// transaction that holds the key's advisory lock, so nodes admitting
    /// at once take turns.
    pub(crate) async fn admit_guard(
        &self,
        guard: GuardKind,
        key: &str,
        now: DateTime<Utc>,
        forget_before: DateTime<Utc>,
        limit: u32,
    ) -> Result<Result<(), Duration>, HubError> {
        let e = |err: sqlx::Error| pg_error(&err);
        let mut tx = self.pool.begin().await.map_err(e)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(format!("a2a-hub {} {key}", guard.as_str()))
            .execute(&mut *tx)
            .await
            .map_err(e)?;
        let recent: Vec<String> = sqlx::query_scalar(
            "SELECT at FROM guard_events WHERE guard = $1 AND key = $2 AND at > $3 ORDER BY at",
        )
        .bind(guard.as_str())
        .bind(key)
        .bind(stamp(forget_before))
        .fetch_all(&mut *tx)
        .await
        .map_err(e)?;
        if recent.len() >= limit as usize {
            let oldest = recent.first().and_then(|at| parse_time(at)).unwrap_or(now);
            let wait = (oldest - forget_before).to_std().unwrap_or_default();
            tx.rollback().await.map_err(e)?;
            return Ok(Err(wait));
        }
        insert_guard_event(&mut tx, guard, key, now, forget_before).await?;
        let counted = Noticed::Guard {
            guard: guard.as_str().to_owned(),
            key: key.to_owned(),
            at: stamp(now),
        };
        self.announce(&mut tx, counted).await?;
        tx.commit().await.map_err(e)?;
        Ok(Ok(()))
    }

    /// The last `limit` messages of `channel` (at channel level, or of
    /// `thread`), oldest first.
    pub(crate) async fn messages(
        &self,
        channel: &str,
        thread: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HubMessage>, HubError> {
        let bodies: Vec<String> = sqlx::query_scalar(
            "SELECT body FROM messages WHERE channel = $1 AND thread_id IS NOT DISTINCT FROM $2
             ORDER BY seq DESC LIMIT $3",
        )
        .bind(channel)
        .bind(thread)
        .bind(to_i64(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| pg_error(&e))?;
        let mut messages = readable(bodies.into_iter().rev());
        self.attach_deliveries(&mut messages).await?;
        Ok(messages)
    }

    /// The message with `id`.
    pub(crate) async fn message(&self, id: &str) -> Result<Option<HubMessage>, HubError> {
        let body: Option<String> = sqlx::query_scalar("SELECT body FROM messages WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| pg_error(&e))?;
        let mut messages = readable(body);
        self.attach_deliveries(&mut messages).await?;
        Ok(messages.pop())
    }

    /// The messages other nodes posted after `seq`, with their places in
    /// the table, oldest first (what a listener missed).
    pub(crate) async fn others_since(&self, seq: i64) -> Result<Vec<(i64, HubMessage)>, HubError> {
        let rows = sqlx::query(
            "SELECT seq, body FROM messages WHERE seq > $1 AND node <> $2 ORDER BY seq LIMIT 1000",
        )
        .bind(seq)
        .bind(&*self.node)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| pg_error(&e))?;
        let mut found = Vec::new();
        for row in rows {
            let seq: i64 = row.try_get(0).map_err(|e| pg_error(&e))?;
            let body: String = row.try_get(1).map_err(|e| pg_error(&e))?;
            if let Some(mut message) = readable(Some(body)).pop() {
                self.attach_deliveries(std::slice::from_mut(&mut message))
                    .await?;
                found.push((seq, message));
            }
        }
        Ok(found)
    }

    /// The message at `seq`.
    pub(crate) async fn message_at(&self, seq: i64) -> Result<Option<HubMessage>, HubError> {
        let body: Option<String> = sqlx::query_scalar("SELECT body FROM messages WHERE seq = $1")
            .bind(seq)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| pg_error(&e))?;
        let mut messages = readable(body);
        self.attach_deliveries(&mut messages).await?;
        Ok(messages.pop())
    }

    /// The last message place when the record was loaded.
    pub(crate) fn loaded_up_to(&self) -> i64 {
        self.loaded_up_to
    }

    /// The agents that keep an observer record of message `id` (what a
    /// message's notice names, for a message read back instead).
    pub(crate) async fn observers_of(&self, id: &str) -> Result<Vec<String>, HubError> {
        sqlx::query_scalar(
            "SELECT agent FROM observed WHERE body::jsonb ->> 'messageId' = $1 ORDER BY seq",
        )
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| pg_error(&e))
    }

    /// The thread `id` as the record holds it, with its participants.
    pub(crate) async fn thread(&self, id: &str) -> Result<Option<LoadedThread>, HubError> {
        let e = |err: sqlx::Error| pg_error(&err);
        let Some(row) = sqlx::query(
            "SELECT id, channel, title, created_at, last_activity, messages, paused_until
             FROM threads WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(e)?
        else {
            return Ok(None);
        };
        let mut members = Vec::new();
        for member in sqlx::query("SELECT seq, agent FROM participants WHERE thread_id = $1")
            .bind(id)
            .fetch_all(&self.pool)
            .await
            .map_err(e)?
        {
            let seq = u64::try_from(member.try_get::<i64, _>(0).map_err(e)?).unwrap_or(0);
            members.push((seq, member.try_get(1).map_err(e)?));
        }
        thread_of_row(&row, members)
    }

    /// Renews this node's leases on the deliveries it follows.
    pub(crate) async fn renew(&self) -> Result<(), HubError> {
        sqlx::query("UPDATE deliveries SET heartbeat = now() WHERE node = $1")
            .bind(&*self.node)
            .execute(&self.pool)
            .await
            .map_err(|e| pg_error(&e))
            .map(drop)
    }

    /// Takes over the deliveries whose lease expired (their node stopped
    /// renewing it): one conditional update, so of nodes taking over at
    /// once each delivery goes to one.
    pub(crate) async fn take_over(&self) -> Result<Vec<PendingDelivery>, HubError> {
        let lease_us = to_i64(self.lease.as_micros());
        let rows = sqlx::query(
            "WITH taken AS (
                 UPDATE deliveries SET node = $1, heartbeat = now()
                 WHERE node <> $1 AND heartbeat < now() - make_interval(secs => $2::float8 / 1000000)
                 RETURNING message_id, agent, task_id)
             SELECT t.message_id, t.agent, t.task_id, s.body, s.log_line FROM taken t
             LEFT JOIN delivery_states s ON s.message_id = t.message_id AND s.agent = t.agent",
        )
        .bind(&*self.node)
        .bind(lease_us)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| pg_error(&e))?;
        pending_rows(rows)
    }

    /// Gives each of `messages` where its deliveries stand.
    async fn attach_deliveries(&self, messages: &mut [HubMessage]) -> Result<(), HubError> {
        let ids: Vec<String> = messages
            .iter()
            .filter(|m| !m.handlers.is_empty())
            .map(|m| m.id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let rows = sqlx::query(
            "SELECT message_id, body FROM delivery_states WHERE message_id = ANY($1) ORDER BY ord",
        )
        .bind(&ids)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| pg_error(&e))?;
        let mut states: HashMap<String, Vec<DeliveryStatus>> = HashMap::new();
        for row in rows {
            let (Ok(id), Ok(body)) = (row.try_get::<String, _>(0), row.try_get::<String, _>(1))
            else {
                continue;
            };
            if let Ok(status) = serde_json::from_str(&body) {
                states.entry(id).or_default().push(status);
            }
        }
        for message in messages.iter_mut().filter(|m| !m.handlers.is_empty()) {
            message.deliveries = states.remove(&message.id).unwrap_or_default();
        }
        Ok(())
    }
}

/// Counts a guard's event, forgetting its events that left the window.
async fn insert_guard_event(
    conn: &mut PgConnection,
    guard: GuardKind,
    key: &str,
    at: DateTime<Utc>,
    forget_before: DateTime<Utc>,
) -> Result<(), HubError> {
    let e = |err: sqlx::Error| pg_error(&err);
    sqlx::query("DELETE FROM guard_events WHERE guard = $1 AND at <= $2")
        .bind(guard.as_str())
        .bind(stamp(forget_before))
        .execute(&mut *conn)
        .await
        .map_err(e)?;
    sqlx::query("INSERT INTO guard_events (guard, key, at) VALUES ($1, $2, $3)")
        .bind(guard.as_str())
        .bind(key)
        .bind(stamp(at))
        .execute(&mut *conn)
        .await
        .map_err(e)?;
    Ok(())
}

/// The messages among `bodies` that can be read; the others are skipped
/// with a warning.
fn readable(bodies: impl IntoIterator<Item = String>) -> Vec<HubMessage> {
    bodies
        .into_iter()
        .filter_map(|body| match serde_json::from_str::<HubMessage>(&body) {
            Ok(message) => Some(message),
            Err(err) => {
                tracing::warn!(error = %err, "skipping an unreadable hub message");
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::valid_schema;

    #[test]
    fn only_plain_names_make_a_schema() {
        assert!(valid_schema("a2a_hub"));
        assert!(valid_schema("hub_node_1"));
        assert!(!valid_schema(""));
        assert!(!valid_schema("Hub"));
        assert!(!valid_schema("1hub"));
        assert!(!valid_schema("hub\"; DROP"));
        assert!(!valid_schema(&"h".repeat(49)));
    }
}
