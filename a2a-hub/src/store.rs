//! The hub's record, in SQLite or (for a gateway cluster) in PostgreSQL
//! ([`postgres`]): threads and their participants, messages,
//! the collaboration routes that let a pair continue its thread, observer
//! records, deliveries not done yet (waiting to start, or for an agent's
//! answer), and the loop guards' recent events.
//!
//! Everything a message changes is written in one transaction before the
//! poster hears back, so a crash leaves the message either whole or absent
//! (a route never points at a thread that is not there). Reads at start
//! are of memory-sized tables; message history is read on demand.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{Connection, OptionalExtension as _, params};

use crate::error::HubError;
use crate::model::{DeliveryStatus, HubMessage, ObserverRecord, ThreadView};

/// The file in the hub's directory.
pub const HUB_DB: &str = "hub.db";

/// What a write fails with when another node took its delivery over.
pub(crate) const TAKEN_OVER: &str = "another node took this delivery over";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    title TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_activity TEXT NOT NULL,
    messages INTEGER NOT NULL DEFAULT 0,
    -- RFC 3339 time, or 'person' (until a person resumes it).
    paused_until TEXT
);
CREATE TABLE IF NOT EXISTS participants (
    thread_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (thread_id, agent)
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    channel TEXT NOT NULL,
    thread_id TEXT,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_place ON messages (channel, thread_id, seq);
CREATE TABLE IF NOT EXISTS routes (
    opener TEXT NOT NULL,
    target TEXT NOT NULL,
    channel TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (opener, target, channel)
);
CREATE TABLE IF NOT EXISTS observed (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    body TEXT NOT NULL,
    t TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS observed_by_agent ON observed (agent, seq);
-- A delivery on record: from the transaction that stores its message (an
-- outbox row, task_id '' until the agent takes the message) until its
-- answer lands, so that neither a delivery not yet started nor one whose
-- answer is awaited is lost with the process.
CREATE TABLE IF NOT EXISTS deliveries (
    message_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (message_id, agent)
);
-- Where each delivery of a message stands (a DeliveryStatus as JSON), in
-- the order the deliveries began; and the conversation log's line of the
-- delivery, which its answer continues (also after a restart).
CREATE TABLE IF NOT EXISTS delivery_states (
    message_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    body TEXT NOT NULL,
    log_line TEXT,
    PRIMARY KEY (message_id, agent)
);
-- The loop guards' recent events, so a restart keeps their windows: guard
-- 'pair' (key: the caller and target as a JSON array), 'burst' (a thread
-- id, or '#channel') or 'anonymous-thread' (an address); rows older than
-- their window go as new ones come.
CREATE TABLE IF NOT EXISTS guard_events (
    guard TEXT NOT NULL,
    key TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS guard_events_by_time ON guard_events (guard, at);
";

/// A time as stored: RFC 3339 in UTC with microseconds (sorts as text).
pub(crate) fn stamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// One change to the record.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    Message(Arc<HubMessage>),
    /// A new thread, or one whose counters or pause changed.
    Thread {
        view: ThreadView,
        paused_until: Option<String>,
    },
    Participant {
        thread: String,
        agent: String,
        seq: u64,
    },
    Observed {
        agent: String,
        record: ObserverRecord,
        keep: usize,
    },
    /// Observer records of every agent written at `before` or earlier go.
    ExpireObserved {
        before: DateTime<Utc>,
    },
    /// The deliveries a message causes, waiting to start: written in the
    /// message's transaction, so that a post acknowledged is a post whose
    /// deliveries a restart (or, in a cluster, another node) starts when
    /// this process does not.
    Outbox {
        message_id: String,
        agents: Vec<String>,
    },
    /// The agent took the delivery as task `task_id`: followed from now
    /// on. In PostgreSQL only while this node holds the delivery, failing
    /// the transaction ([`TAKEN_OVER`]) otherwise.
    Delivery {
        message_id: String,
        agent: String,
        task_id: String,
    },
    Delivered {
        message_id: String,
        agent: String,
    },
    /// The answer to a delivery on record lands: as [`Write::Delivered`],
    /// but in PostgreSQL only while this node holds the delivery, and
    /// failing the transaction ([`TAKEN_OVER`]) otherwise, so that of two
    /// nodes following one task only one posts its answer.
    Landed {
        message_id: String,
        agent: String,
    },
    /// Where a delivery of `message_id` stands now; `log_line`, when
    /// given, is the log line of the delivery.
    DeliveryState {
        message_id: String,
        status: DeliveryStatus,
        log_line: Option<String>,
    },
    /// A loop guard counted an event of `key`; the guard's events at
    /// `forget_before` or earlier have left its window and go.
    GuardEvent {
        guard: GuardKind,
        key: String,
        at: DateTime<Utc>,
        forget_before: DateTime<Utc>,
    },
    /// A guard forgets `key`'s events (a person resumed a paused thread).
    GuardReset {
        guard: GuardKind,
        key: String,
    },
}

/// Which loop guard an event counts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GuardKind {
    /// Collaborate calls of a pair.
    Pair,
    /// Messages of a thread, or agents' mentions in a channel.
    Burst,
    /// Threads opened without authentication, per address.
    AnonymousThread,
}

impl GuardKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            GuardKind::Pair => "pair",
            GuardKind::Burst => "burst",
            GuardKind::AnonymousThread => "anonymous-thread",
        }
    }
}

impl GuardKind {
    /// The guard a stored name stands for.
    pub(crate) fn parse(name: &str) -> Option<GuardKind> {
        match name {
            "pair" => Some(GuardKind::Pair),
            "burst" => Some(GuardKind::Burst),
            "anonymous-thread" => Some(GuardKind::AnonymousThread),
            _ => None,
        }
    }
}

/// A guard event as loaded.
#[derive(Debug, Clone)]
pub(crate) struct LoadedGuardEvent {
    pub(crate) guard: GuardKind,
    pub(crate) key: String,
    pub(crate) at: DateTime<Utc>,
}

/// A thread as loaded.
#[derive(Debug, Clone)]
pub(crate) struct LoadedThread {
    pub(crate) view: ThreadView,
    pub(crate) paused_until: Option<String>,
}

/// A delivery on record that was not done when the hub stopped: not
/// started yet, or waiting for its answer.
#[derive(Debug, Clone)]
pub(crate) struct PendingDelivery {
    pub(crate) message_id: String,
    pub(crate) agent: String,
    /// The agent's task; `None` while the delivery waits to start.
    pub(crate) task_id: Option<String>,
    /// How many times it was followed so far (0 when no state is on
    /// record: a record written before states were kept).
    pub(crate) attempt: u32,
    /// The conversation log's line of the delivery.
    pub(crate) log_line: Option<String>,
}

/// A route as loaded: opener, target, channel, thread, last used.
pub(crate) type LoadedRoute = (String, String, String, String, DateTime<Utc>);

/// What the hub starts from.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) threads: Vec<LoadedThread>,
    pub(crate) routes: Vec<LoadedRoute>,
    pub(crate) observed: HashMap<String, Vec<ObserverRecord>>,
    pub(crate) deliveries: Vec<PendingDelivery>,
    pub(crate) participant_seq: u64,
    /// The guards' events, oldest first.
    pub(crate) guard_events: Vec<LoadedGuardEvent>,
}

pub(crate) mod postgres;

/// Where the hub's record is. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) enum Store {
    /// A file (or memory) of this process's own.
    Sqlite(Sqlite),
    /// A schema in PostgreSQL that every node of a cluster shares.
    Postgres(postgres::PgRecord),
}

impl Store {
    /// Applies `writes` in one transaction.
    pub(crate) async fn write(&self, writes: Vec<Write>) -> Result<(), HubError> {
        match self {
            Store::Sqlite(store) => store.write(writes).await,
            Store::Postgres(store) => store.write(writes).await,
        }
    }

    /// The last `limit` messages of `channel` (at channel level, or of
    /// `thread`), oldest first.
    pub(crate) async fn messages(
        &self,
        channel: String,
        thread: Option<String>,
        limit: usize,
    ) -> Result<Vec<HubMessage>, HubError> {
        match self {
            Store::Sqlite(store) => store.messages(channel, thread, limit).await,
            Store::Postgres(store) => store.messages(&channel, thread.as_deref(), limit).await,
        }
    }

    /// The message with `id`.
    pub(crate) async fn message(&self, id: String) -> Result<Option<HubMessage>, HubError> {
        match self {
            Store::Sqlite(store) => store.message(id).await,
            Store::Postgres(store) => store.message(&id).await,
        }
    }

    /// The PostgreSQL record, when the hub keeps one.
    pub(crate) fn postgres(&self) -> Option<&postgres::PgRecord> {
        match self {
            Store::Sqlite(_) => None,
            Store::Postgres(store) => Some(store),
        }
    }
}

/// The hub's SQLite database. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Sqlite {
    conn: Arc<Mutex<Connection>>,
    /// A database in memory is written on the caller's thread: it takes
    /// microseconds, and a blocking-pool hop would let a paused tokio clock
    /// run ahead while it waits.
    in_memory: bool,
}

fn store_error(err: &rusqlite::Error) -> HubError {
    HubError::store(err)
}

impl Sqlite {
    /// Opens (creating) `dir/hub.db`, or a database in memory.
    pub(crate) fn open(dir: Option<&Path>) -> Result<Sqlite, HubError> {
        let conn = match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|err| {
                    HubError::store(&format!("creating {}: {err}", dir.display()))
                })?;
                let path = dir.join(HUB_DB);
                let conn = Connection::open(&path).map_err(|err| {
                    HubError::store(&format!("opening {}: {err}", path.display()))
                })?;
                conn.pragma_update(None, "journal_mode", "WAL")
                    .map_err(|e| store_error(&e))?;
                conn.pragma_update(None, "synchronous", "NORMAL")
                    .map_err(|e| store_error(&e))?;
                conn
            }
            None => Connection::open_in_memory().map_err(|e| store_error(&e))?,
        };
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| store_error(&e))?;
        conn.execute_batch(SCHEMA).map_err(|e| store_error(&e))?;
        Ok(Sqlite {
            conn: Arc::new(Mutex::new(conn)),
            in_memory: dir.is_none(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads what the hub keeps in memory: threads with their participants,
    /// routes newer than `routes_since`, observer records newer than
    /// `observed_since` (at most `keep` per agent), pending deliveries.
    /// Rows that cannot be read are skipped with a warning.
    pub(crate) fn load(
        &self,
        routes_since: DateTime<Utc>,
        observed_since: DateTime<Utc>,
        keep: usize,
    ) -> Result<Loaded, HubError> {
        let conn = self.lock();
        let (participants, participant_seq) = load_participants(&conn)?;
        Ok(Loaded {
            threads: load_threads(&conn, participants)?,
            routes: load_routes(&conn, routes_since)?,
            observed: load_observed(&conn, observed_since, keep)?,
            deliveries: load_deliveries(&conn)?,
            participant_seq,
            guard_events: load_guard_events(&conn)?,
        })
    }

    /// Applies `writes` in one transaction.
    pub(crate) async fn write(&self, writes: Vec<Write>) -> Result<(), HubError> {
        if writes.is_empty() {
            return Ok(());
        }
        if self.in_memory {
            return self.write_now(&writes);
        }
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.write_now(&writes))
            .await
            .map_err(|err| HubError::store(&err))?
    }

    /// Runs `read` on the database: in place when it is in memory, else on
    /// the blocking pool.
    async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, HubError> + Send + 'static,
    ) -> Result<T, HubError> {
        if self.in_memory {
            return read(&self.lock());
        }
        let store = self.clone();
        tokio::task::spawn_blocking(move || read(&store.lock()))
            .await
            .map_err(|err| HubError::store(&err))?
    }

    fn write_now(&self, writes: &[Write]) -> Result<(), HubError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| store_error(&e))?;
        for write in writes {
            write.apply(&tx)?;
        }
        tx.commit().map_err(|e| store_error(&e))
    }

    /// The last `limit` messages of `channel` (at channel level, or of
    /// `thread`), oldest first.
    pub(crate) async fn messages(
        &self,
        channel: String,
        thread: Option<String>,
        limit: usize,
    ) -> Result<Vec<HubMessage>, HubError> {
        self.read(move |conn| {
            let e = |err: rusqlite::Error| store_error(&err);
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut statement = conn
                .prepare(
                    "SELECT body FROM messages WHERE channel = ?1 AND thread_id IS ?2
                     ORDER BY seq DESC LIMIT ?3",
                )
                .map_err(e)?;
            let rows = statement
                .query_map(params![channel, thread, limit], |row| {
                    row.get::<_, String>(0)
                })
                .map_err(e)?;
            let mut messages = Vec::new();
            for row in rows {
                let body = row.map_err(e)?;
                match serde_json::from_str::<HubMessage>(&body) {
                    Ok(message) => messages.push(message),
                    Err(err) => tracing::warn!(error = %err, "skipping an unreadable hub message"),
                }
            }
            messages.reverse();
            attach_deliveries(conn, &mut messages)?;
            Ok(messages)
        })
        .await
    }

    /// The message with `id`.
    pub(crate) async fn message(&self, id: String) -> Result<Option<HubMessage>, HubError> {
        self.read(move |conn| {
            let body: Option<String> = conn
                .query_row("SELECT body FROM messages WHERE id = ?1", [id], |row| {
                    row.get(0)
                })
                .optional()
                .map_err(|e| store_error(&e))?;
            let mut messages: Vec<HubMessage> = body
                .and_then(|b| serde_json::from_str(&b).ok())
                .into_iter()
                .collect();
            attach_deliveries(conn, &mut messages)?;
            Ok(messages.pop())
        })
        .await
    }
}

/// Gives each of `messages` where its deliveries stand, from the record.
fn attach_deliveries(conn: &Connection, messages: &mut [HubMessage]) -> Result<(), HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let mut statement = conn
        .prepare_cached("SELECT body FROM delivery_states WHERE message_id = ?1 ORDER BY rowid")
        .map_err(e)?;
    for message in messages.iter_mut().filter(|m| !m.handlers.is_empty()) {
        let rows = statement
            .query_map([&message.id], |row| row.get::<_, String>(0))
            .map_err(e)?;
        message.deliveries = rows
            .filter_map(|row| row.ok())
            .filter_map(|body| serde_json::from_str(&body).ok())
            .collect();
    }
    Ok(())
}

impl Write {
    /// Applies the write on `conn` (within the caller's transaction).
    fn apply(&self, conn: &Connection) -> Result<(), HubError> {
        let e = |err: rusqlite::Error| store_error(&err);
        let executed = match self {
            Write::Message(message) => {
                let body = serde_json::to_string(&**message).map_err(|err| HubError::store(&err))?;
                conn.execute(
                    "INSERT OR IGNORE INTO messages (id, channel, thread_id, body) VALUES (?1, ?2, ?3, ?4)",
                    params![message.id, message.channel, message.thread, body],
                )
            }
            Write::Thread { view, paused_until } => conn.execute(
                "INSERT INTO threads (id, channel, title, created_at, last_activity, messages, paused_until)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (id) DO UPDATE SET last_activity = excluded.last_activity,
                     messages = excluded.messages, paused_until = excluded.paused_until",
                params![
                    view.id,
                    view.channel,
                    view.title,
                    stamp(view.created_at),
                    stamp(view.last_activity),
                    i64::try_from(view.messages).unwrap_or(i64::MAX),
                    paused_until
                ],
            ),
            Write::Participant { thread, agent, seq } => conn.execute(
                "INSERT OR IGNORE INTO participants (thread_id, agent, seq) VALUES (?1, ?2, ?3)",
                params![thread, agent, i64::try_from(*seq).unwrap_or(i64::MAX)],
            ),
            Write::Observed {
                agent,
                record,
                keep,
            } => return insert_observed(conn, agent, record, *keep),
            Write::ExpireObserved { before } => {
                conn.execute("DELETE FROM observed WHERE t <= ?1", [stamp(*before)])
            }
            Write::Outbox { message_id, agents } => {
                let mut statement = conn
                    .prepare_cached(
                        "INSERT OR IGNORE INTO deliveries (message_id, agent, task_id) VALUES (?1, ?2, '')",
                    )
                    .map_err(e)?;
                for agent in agents {
                    statement.execute(params![message_id, agent]).map_err(e)?;
                }
                return Ok(());
            }
            Write::Delivery {
                message_id,
                agent,
                task_id,
            } => conn.execute(
                "INSERT OR REPLACE INTO deliveries (message_id, agent, task_id) VALUES (?1, ?2, ?3)",
                params![message_id, agent, task_id],
            ),
            Write::Delivered { message_id, agent } | Write::Landed { message_id, agent } => conn.execute(
                "DELETE FROM deliveries WHERE message_id = ?1 AND agent = ?2",
                params![message_id, agent],
            ),
            Write::DeliveryState {
                message_id,
                status,
                log_line,
            } => {
                let body = serde_json::to_string(status).map_err(|err| HubError::store(&err))?;
                conn.execute(
                    "INSERT INTO delivery_states (message_id, agent, body, log_line) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (message_id, agent) DO UPDATE SET body = excluded.body,
                         log_line = COALESCE(excluded.log_line, delivery_states.log_line)",
                    params![message_id, status.agent, body, log_line],
                )
            }
            Write::GuardEvent {
                guard,
                key,
                at,
                forget_before,
            } => {
                conn.execute(
                    "DELETE FROM guard_events WHERE guard = ?1 AND at <= ?2",
                    params![guard.as_str(), stamp(*forget_before)],
                )
                .map_err(e)?;
                conn.execute(
                    "INSERT INTO guard_events (guard, key, at) VALUES (?1, ?2, ?3)",
                    params![guard.as_str(), key, stamp(*at)],
                )
            }
            Write::GuardReset { guard, key } => conn.execute(
                "DELETE FROM guard_events WHERE guard = ?1 AND key = ?2",
                params![guard.as_str(), key],
            ),
        };
        executed.map(drop).map_err(e)
    }
}

/// Gives `agent` the observer record `record`; only its newest `keep`
/// stay, so the table is as small as what the hub holds in memory.
fn insert_observed(
    conn: &Connection,
    agent: &str,
    record: &ObserverRecord,
    keep: usize,
) -> Result<(), HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let body = serde_json::to_string(record).map_err(|err| HubError::store(&err))?;
    conn.execute(
        "INSERT INTO observed (agent, body, t) VALUES (?1, ?2, ?3)",
        params![agent, body, stamp(record.t)],
    )
    .map_err(e)?;
    conn.execute(
        "DELETE FROM observed WHERE agent = ?1 AND seq <= (
             SELECT seq FROM observed WHERE agent = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)",
        params![agent, i64::try_from(keep).unwrap_or(i64::MAX)],
    )
    .map_err(e)?;
    Ok(())
}

/// The participants of each thread (by its id), with the order each
/// joined in.
type Participants = HashMap<String, Vec<(u64, String)>>;

/// The participants of each thread, and the last order given.
fn load_participants(conn: &Connection) -> Result<(Participants, u64), HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let mut participants = Participants::new();
    let mut last = 0;
    let mut statement = conn
        .prepare("SELECT thread_id, agent, seq FROM participants")
        .map_err(e)?;
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })
        .map_err(e)?;
    for row in rows {
        let (thread, agent, seq) = row.map_err(e)?;
        let seq = u64::try_from(seq).unwrap_or(0);
        last = last.max(seq);
        participants.entry(thread).or_default().push((seq, agent));
    }
    Ok((participants, last))
}

/// The threads, each with its `participants` in the order they joined.
fn load_threads(
    conn: &Connection,
    mut participants: Participants,
) -> Result<Vec<LoadedThread>, HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let mut threads = Vec::new();
    let mut statement = conn
        .prepare(
            "SELECT id, channel, title, created_at, last_activity, messages, paused_until FROM threads",
        )
        .map_err(e)?;
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, i64>(5)?,
                row.get::<_, Option<String>>(6)?,
            ))
        })
        .map_err(e)?;
    for row in rows {
        let (id, channel, title, created, last, messages, paused_until) = row.map_err(e)?;
        let (Some(created_at), Some(last_activity)) = (parse_time(&created), parse_time(&last))
        else {
            tracing::warn!(thread = %id, "skipping a hub thread with an unreadable time");
            continue;
        };
        let mut members = participants.remove(&id).unwrap_or_default();
        members.sort();
        threads.push(LoadedThread {
            view: ThreadView {
                paused: paused_until.is_some(),
                id,
                channel,
                title,
                participants: members.into_iter().map(|(_, a)| a).collect(),
                created_at,
                last_activity,
                messages: u64::try_from(messages).unwrap_or(0),
            },
            paused_until,
        });
    }
    Ok(threads)
}

/// The routes used after `since`: what hubs before the conversation index
/// kept, read once into the index on open (nothing writes them any more).
fn load_routes(conn: &Connection, since: DateTime<Utc>) -> Result<Vec<LoadedRoute>, HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let mut routes = Vec::new();
    let mut statement = conn
        .prepare(
            "SELECT opener, target, channel, thread_id, updated_at FROM routes WHERE updated_at > ?1",
        )
        .map_err(e)?;
    let rows = statement
        .query_map([stamp(since)], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
            ))
        })
        .map_err(e)?;
    for row in rows {
        let (opener, target, channel, thread, at) = row.map_err(e)?;
        if let Some(at) = parse_time(&at) {
            routes.push((opener, target, channel, thread, at));
        }
    }
    Ok(routes)
}

/// The observer records newer than `since` (older ones are deleted), at
/// most `keep` per agent, oldest first.
fn load_observed(
    conn: &Connection,
    since: DateTime<Utc>,
    keep: usize,
) -> Result<HashMap<String, Vec<ObserverRecord>>, HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    conn.execute("DELETE FROM observed WHERE t <= ?1", [stamp(since)])
        .map_err(e)?;
    let mut observed: HashMap<String, Vec<ObserverRecord>> = HashMap::new();
    let mut statement = conn
        .prepare("SELECT agent, body FROM observed ORDER BY seq")
        .map_err(e)?;
    let rows = statement
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(e)?;
    for row in rows {
        let (agent, body) = row.map_err(e)?;
        match serde_json::from_str::<ObserverRecord>(&body) {
            Ok(record) => observed.entry(agent).or_default().push(record),
            Err(err) => {
                tracing::warn!(%agent, error = %err, "skipping an unreadable observer record")
            }
        }
    }
    for records in observed.values_mut() {
        let extra = records.len().saturating_sub(keep);
        records.drain(..extra);
    }
    Ok(observed)
}

/// The deliveries on record: waiting to start, or for an answer.
fn load_deliveries(conn: &Connection) -> Result<Vec<PendingDelivery>, HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let mut statement = conn
        .prepare(
            "SELECT d.message_id, d.agent, d.task_id, s.body, s.log_line FROM deliveries d
             LEFT JOIN delivery_states s ON s.message_id = d.message_id AND s.agent = d.agent",
        )
        .map_err(e)?;
    let rows = statement
        .query_map([], |row| {
            let status: Option<String> = row.get(3)?;
            let attempt = status
                .and_then(|body| serde_json::from_str::<DeliveryStatus>(&body).ok())
                .map_or(0, |status| status.attempt);
            Ok(PendingDelivery {
                message_id: row.get(0)?,
                agent: row.get(1)?,
                task_id: task_of(row.get(2)?),
                attempt,
                log_line: row.get(4)?,
            })
        })
        .map_err(e)?;
    rows.map(|row| row.map_err(e)).collect()
}

/// A delivery's task as stored: empty while the delivery waits to start.
pub(crate) fn task_of(stored: String) -> Option<String> {
    (!stored.is_empty()).then_some(stored)
}

/// The guards' events, oldest first; rows that cannot be read are skipped.
fn load_guard_events(conn: &Connection) -> Result<Vec<LoadedGuardEvent>, HubError> {
    let e = |err: rusqlite::Error| store_error(&err);
    let mut statement = conn
        .prepare("SELECT guard, key, at FROM guard_events ORDER BY at, rowid")
        .map_err(e)?;
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })
        .map_err(e)?;
    let mut events = Vec::new();
    for row in rows {
        let (guard, key, at) = row.map_err(e)?;
        let Some(guard) = GuardKind::parse(&guard) else {
            tracing::warn!(%guard, "skipping a guard event of an unknown guard");
            continue;
        };
        match parse_time(&at) {
            Some(at) => events.push(LoadedGuardEvent { guard, key, at }),
            None => tracing::warn!(%key, "skipping a guard event with an unreadable time"),
        }
    }
    Ok(events)
}
