//! The conversation index: which A2A conversation each pair of agents keeps.
//!
//! One entry per pair of agents in a workspace (`WORKSPACE::a|b`, the names
//! sorted): the conversation's `contextId`, its latest task, the last event
//! and when. Lookups are from memory. Where it is kept is the index's
//! backing: nothing ([`ConversationIndex::in_memory`]), a JSON file in a data
//! directory ([`ConversationIndex::open`]), or a table of a store
//! ([`ConversationIndex::open_store`], a [`RouteStore`]).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::entry::LogEntry;
use crate::reader::LogReader;

/// The index's file name in a data directory.
pub const INDEX_FILE: &str = "conversations.json";
/// How long [`ConversationIndex::save_soon`] gathers changes into one save.
const SAVE_DELAY: Duration = Duration::from_secs(1);
/// The version of the index document this code writes and reads.
const FORMAT_VERSION: u32 = 1;
/// How long a settled conversation stays the pair's: a later call within it
/// continues the conversation, a call after it starts a new one (the hub's
/// reuse window too).
pub const DEFAULT_REUSE_WINDOW: Duration = Duration::from_secs(6 * 60 * 60);
/// The workspace of a gateway that names none.
pub const DEFAULT_WORKSPACE: &str = "default";

/// A route: a work session and the pair of agents in it, in either order
/// (`ws-1::alpha|beta`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RouteKey(String);

impl RouteKey {
    /// The route of `a` and `b` in `session`; the same whichever speaks first.
    pub fn new(session: &str, a: &str, b: &str) -> RouteKey {
        let (first, second) = if a <= b { (a, b) } else { (b, a) };
        RouteKey(format!("{session}::{first}|{second}"))
    }

    /// The key as written (`session::a|b`).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A key as written (`session::a|b`, the names sorted), read back: `None`
    /// for anything else.
    pub fn parse(written: &str) -> Option<RouteKey> {
        let (session, pair) = written.split_once("::")?;
        let (a, b) = pair.split_once('|')?;
        (a <= b && !a.is_empty() && !b.is_empty() && !session.is_empty())
            .then(|| RouteKey(written.to_owned()))
    }

    /// The work session (the workspace): what comes before `::`.
    pub fn session(&self) -> &str {
        self.0.split_once("::").map_or("", |(session, _)| session)
    }

    /// The two agents, sorted.
    pub fn agents(&self) -> (&str, &str) {
        let pair = self.0.split_once("::").map_or(self.0.as_str(), |(_, p)| p);
        pair.split_once('|').unwrap_or((pair, ""))
    }
}

impl std::fmt::Display for RouteKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a route's conversation stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// The A2A conversation (`contextId`).
    pub context_id: String,
    /// The last task in it.
    pub task_id: Option<String>,
    /// What last happened: the last task state (`TASK_STATE_INPUT_REQUIRED`,
    /// say) or `message` for a direct reply.
    pub last_event: String,
    /// When.
    pub updated_at: DateTime<Utc>,
}

impl Route {
    /// Whether the last task waits for the other side (input or auth
    /// required), so the next message continues that task.
    pub fn task_waits(&self) -> bool {
        matches!(
            self.last_event.as_str(),
            "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED"
        )
    }

    /// Whether the conversation is still going on: its last task is
    /// submitted, working or waiting for the other side. Anything else (a
    /// terminal task, a direct reply, a hub delivery) has settled.
    pub fn is_open(&self) -> bool {
        self.task_waits()
            || matches!(
                self.last_event.as_str(),
                "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING"
            )
    }

    /// Whether a new call at `now` continues this conversation: an open one
    /// always does, a settled one within `window` of its last event.
    pub fn continues_at(&self, now: DateTime<Utc>, window: Duration) -> bool {
        let window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX);
        self.is_open() || now.signed_duration_since(self.updated_at) < window
    }
}

/// Metadata keys a log line carries when it updates a route, so the index can
/// be rebuilt from the log.
pub(crate) mod keys {
    pub(crate) const ROUTE: &str = "route";
    pub(crate) const CONTEXT_ID: &str = "contextId";
    pub(crate) const TASK_ID: &str = "taskId";
    pub(crate) const STATE: &str = "state";
}

/// Why the index could not be saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The file could not be written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The store behind the index failed.
    #[error("the conversation index's store: {0}")]
    Store(String),
}

/// A store that keeps the index for it (a table of a database), written in
/// batches of changed routes.
#[async_trait::async_trait]
pub trait RouteStore: std::fmt::Debug + Send + Sync + 'static {
    /// Every route kept.
    async fn load(&self) -> Result<Vec<(RouteKey, Route)>, IndexError>;

    /// Writes `routes`, each replacing what the store has for its key unless
    /// the store's is newer.
    async fn upsert(&self, routes: &[(RouteKey, Arc<Route>)]) -> Result<(), IndexError>;

    /// The route the store has for `key` now. A store that several servers
    /// share (a cluster's database) answers it, so that each server sees the
    /// routes the others recorded ([`ConversationIndex::refresh`]); the
    /// default has nothing to add to memory.
    async fn get(&self, key: &RouteKey) -> Result<Option<Route>, IndexError> {
        let _ = key;
        Ok(None)
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    version: u32,
    updated_at: DateTime<Utc>,
    entries: HashMap<RouteKey, Route>,
}

/// The index: route → conversation, in memory, saved to a file.
///
/// Cheap to clone (clones share it). [`ConversationIndex::record`] changes
/// memory only; [`ConversationIndex::save`] writes the whole document to a
/// temporary file and renames it over the old one, so the file is always
/// either the old or the new index. What changed after the last save is not
/// lost in a crash as long as the changes were logged: [`ConversationIndex::open`]
/// replays log lines newer than the saved document.
#[derive(Debug, Clone, Default)]
pub struct ConversationIndex {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Shared values: a lookup hands out a reference count, not a copy.
    routes: RwLock<HashMap<RouteKey, Arc<Route>>>,
    path: Option<PathBuf>,
    store: Option<Arc<dyn RouteStore>>,
    /// Keys recorded since the store was last written.
    dirty: Mutex<HashSet<RouteKey>>,
    /// Held while saving, so two saves do not race on the temporary file.
    saving: Mutex<()>,
    /// A save is scheduled ([`ConversationIndex::save_soon`]).
    save_pending: AtomicBool,
    /// Other servers write to `store` too: lookups read it, records write
    /// it at once ([`ConversationIndex::open_shared_store`]).
    shared: bool,
}

impl ConversationIndex {
    /// An index in memory only.
    pub fn in_memory() -> ConversationIndex {
        ConversationIndex::default()
    }

    /// Opens the index of `data_dir` (its [`INDEX_FILE`]) and brings it up to
    /// date with the log there: lines logged after the document was saved are
    /// replayed. A missing or corrupt file is not an error: the index is
    /// rebuilt from the whole log, with a warning.
    pub fn open(data_dir: impl AsRef<Path>) -> ConversationIndex {
        let data_dir = data_dir.as_ref();
        let path = data_dir.join(INDEX_FILE);
        let (routes, since) = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Document>(&bytes) {
                Ok(doc) if doc.version == FORMAT_VERSION => (
                    doc.entries
                        .into_iter()
                        .map(|(key, route)| (key, Arc::new(route)))
                        .collect(),
                    Some(doc.updated_at),
                ),
                Ok(doc) => {
                    tracing::warn!(path = %path.display(), version = doc.version, "the conversation index has an unknown version; rebuilding it from the conversation log");
                    (HashMap::new(), None)
                }
                Err(err) => {
                    tracing::warn!(path = %path.display(), error = %err, "the conversation index is corrupt; rebuilding it from the conversation log");
                    (HashMap::new(), None)
                }
            },
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => (HashMap::new(), None),
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "the conversation index cannot be read; rebuilding it from the conversation log");
                (HashMap::new(), None)
            }
        };
        let index = ConversationIndex {
            inner: Arc::new(Inner {
                routes: RwLock::new(routes),
                path: Some(path),
                ..Inner::default()
            }),
        };
        index.replay(&LogReader::new(data_dir), since);
        index
    }

    /// Opens the index `store` keeps: every route is read into memory, and
    /// [`flush`](Self::flush) (or [`save_soon`](Self::save_soon)) writes the
    /// changed ones back.
    pub async fn open_store(store: Arc<dyn RouteStore>) -> Result<ConversationIndex, IndexError> {
        ConversationIndex::load_store(store, false).await
    }

    async fn load_store(
        store: Arc<dyn RouteStore>,
        shared: bool,
    ) -> Result<ConversationIndex, IndexError> {
        let routes = store
            .load()
            .await?
            .into_iter()
            .map(|(key, route)| (key, Arc::new(route)))
            .collect();
        Ok(ConversationIndex {
            inner: Arc::new(Inner {
                routes: RwLock::new(routes),
                store: Some(store),
                shared,
                ..Inner::default()
            }),
        })
    }

    /// Opens the index `store` keeps for several servers at once (the nodes
    /// of a cluster on one database): as [`open_store`](Self::open_store),
    /// and [`refresh`](Self::refresh) reads a route's latest state from the
    /// store, so a pair's conversation stays one whichever node a call
    /// lands on. Callers write their records through at once (see
    /// [`is_shared`](Self::is_shared)).
    pub async fn open_shared_store(
        store: Arc<dyn RouteStore>,
    ) -> Result<ConversationIndex, IndexError> {
        ConversationIndex::load_store(store, true).await
    }

    /// Whether other servers write to this index's store too: a record
    /// should then be [flushed](Self::flush) at once rather than soon.
    pub fn is_shared(&self) -> bool {
        self.inner.shared
    }

    /// Brings `key`'s route up to date from a shared store (one read); a
    /// no-op for an index only this server writes. A store that cannot be
    /// read leaves memory as it is: the call goes on with what this server
    /// knows.
    pub async fn refresh(&self, key: &RouteKey) {
        let (true, Some(store)) = (self.inner.shared, &self.inner.store) else {
            return;
        };
        match store.get(key).await {
            Ok(Some(stored)) => {
                let mut routes = self.inner.routes.write().unwrap_or_else(|e| e.into_inner());
                let newer = routes
                    .get(key)
                    .is_none_or(|known| known.updated_at < stored.updated_at);
                if newer {
                    // Not dirty: the store has it already.
                    routes.insert(key.clone(), Arc::new(stored));
                }
            }
            Ok(None) => {}
            Err(err) => {
                tracing::debug!(error = %err, route = key.as_str(), "reading a shared conversation route failed; using this server's copy");
            }
        }
    }

    /// Applies the route changes in the log after `since` (all of them
    /// without a time).
    fn replay(&self, log: &LogReader, since: Option<DateTime<Utc>>) {
        let days = match log.days() {
            Ok(days) => days,
            Err(err) => {
                tracing::warn!(error = %err, "reading the conversation log to rebuild the index failed");
                return;
            }
        };
        let first = since.map(|t| t.date_naive());
        for day in days.into_iter().filter(|d| first.is_none_or(|f| *d >= f)) {
            match log.day(day) {
                Ok(read) => {
                    for entry in read.entries {
                        if since.is_none_or(|since| entry.t > since) {
                            self.apply_logged(&entry);
                        }
                    }
                }
                Err(err) => tracing::warn!(%day, error = %err, "skipping a conversation log day"),
            }
        }
    }

    /// Updates a route from a log line that carries one.
    fn apply_logged(&self, entry: &LogEntry) {
        let text = |key: &str| entry.metadata.get(key).and_then(|v| v.as_str());
        let (Some(route), Some(context_id)) = (text(keys::ROUTE), text(keys::CONTEXT_ID)) else {
            return;
        };
        let key = RouteKey(route.to_owned());
        let newer = self
            .get(&key)
            .is_none_or(|current| current.updated_at <= entry.t);
        if newer {
            self.record(
                key,
                Route {
                    context_id: context_id.to_owned(),
                    task_id: text(keys::TASK_ID).map(str::to_owned),
                    last_event: text(keys::STATE).unwrap_or("message").to_owned(),
                    updated_at: entry.t,
                },
            );
        }
    }

    /// The route's conversation, if it has one.
    pub fn get(&self, key: &RouteKey) -> Option<Arc<Route>> {
        self.inner
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }

    /// Records where a route's conversation stands (in memory; see
    /// [`save`](Self::save) and [`flush`](Self::flush)).
    pub fn record(&self, key: RouteKey, route: Route) {
        if self.inner.store.is_some() {
            self.inner
                .dirty
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone());
        }
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Arc::new(route));
    }

    /// Forgets a route: the pair's next call starts a new conversation.
    pub fn remove(&self, key: &RouteKey) -> Option<Arc<Route>> {
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
    }

    /// Every route and where it stands, most recent first.
    pub fn entries(&self) -> Vec<(RouteKey, Arc<Route>)> {
        let mut all: Vec<_> = self
            .inner
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect();
        all.sort_by(|a, b| b.1.updated_at.cmp(&a.1.updated_at).then(a.0.cmp(&b.0)));
        all
    }

    /// How many routes it holds.
    pub fn len(&self) -> usize {
        self.inner
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Whether it holds no route.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Saves the index about a second from now, on the tokio runtime (at once
    /// outside one), gathering the changes of that second into one save.
    /// Changes logged with [`LogEntry::route`] survive a crash before it anyway.
    pub fn save_soon(&self) {
        let inner = &self.inner;
        if (inner.path.is_none() && inner.store.is_none())
            || inner.save_pending.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let runtime = tokio::runtime::Handle::try_current();
        if inner.store.is_some() {
            // A store is written from the runtime; outside one the changes
            // wait for the next flush.
            let Ok(runtime) = runtime else {
                inner.save_pending.store(false, Ordering::Release);
                return;
            };
            let index = self.clone();
            runtime.spawn(async move {
                tokio::time::sleep(SAVE_DELAY).await;
                index.inner.save_pending.store(false, Ordering::Release);
                if let Err(err) = index.flush().await {
                    tracing::warn!(error = %err, "saving the conversation index failed");
                }
            });
            return;
        }
        let index = self.clone();
        let save = move || {
            index.inner.save_pending.store(false, Ordering::Release);
            if let Err(err) = index.save() {
                tracing::warn!(error = %err, "saving the conversation index failed");
            }
        };
        match runtime {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(SAVE_DELAY).await;
                    let _ = tokio::task::spawn_blocking(save).await;
                });
            }
            Err(_) => save(),
        }
    }

    /// Writes what changed to where the index is kept, now: the file (whole,
    /// atomically; see [`save`](Self::save)) or the store (the routes
    /// recorded since the last write). What a server calls as it stops.
    pub async fn flush(&self) -> Result<(), IndexError> {
        if let Some(store) = &self.inner.store {
            let keys: Vec<RouteKey> = self
                .inner
                .dirty
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain()
                .collect();
            let changed: Vec<(RouteKey, Arc<Route>)> = keys
                .into_iter()
                .filter_map(|key| self.get(&key).map(|route| (key, route)))
                .collect();
            if changed.is_empty() {
                return Ok(());
            }
            if let Err(err) = store.upsert(&changed).await {
                // Kept for the next try.
                let mut dirty = self.inner.dirty.lock().unwrap_or_else(|e| e.into_inner());
                dirty.extend(changed.into_iter().map(|(key, _)| key));
                return Err(err);
            }
            return Ok(());
        }
        if self.inner.path.is_none() {
            return Ok(());
        }
        let index = self.clone();
        tokio::task::spawn_blocking(move || index.save())
            .await
            .map_err(|err| IndexError::Io {
                context: "saving the conversation index".into(),
                source: std::io::Error::other(err.to_string()),
            })?
    }

    /// Writes the index to its file atomically (a temporary file, synced,
    /// renamed over the old one). An in-memory index has nothing to do, nor
    /// has one a store keeps (see [`flush`](Self::flush)).
    pub fn save(&self) -> Result<(), IndexError> {
        let Some(path) = &self.inner.path else {
            return Ok(());
        };
        let _saving = self.inner.saving.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = {
            let routes = self.inner.routes.read().unwrap_or_else(|e| e.into_inner());
            let updated_at = routes
                .values()
                .map(|r| r.updated_at)
                .max()
                .unwrap_or_else(Utc::now);
            serde_json::to_vec(&DocumentRef {
                version: FORMAT_VERSION,
                updated_at,
                entries: &routes,
            })
            .map_err(|e| IndexError::Io {
                context: "serializing the conversation index".into(),
                source: std::io::Error::other(e),
            })?
        };
        let io = |context: &str| {
            let context = format!("{context} {}", path.display());
            move |source| IndexError::Io { context, source }
        };
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut file = std::fs::File::create(&tmp).map_err(io("writing"))?;
        file.write_all(&bytes).map_err(io("writing"))?;
        file.sync_all().map_err(io("syncing"))?;
        std::fs::rename(&tmp, path).map_err(io("replacing"))?;
        if let Some(dir) = path.parent() {
            // The rename itself survives a power loss once the folder is synced.
            if let Ok(dir) = std::fs::File::open(dir) {
                let _ = dir.sync_all();
            }
        }
        Ok(())
    }
}

/// The document as written, borrowing the routes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DocumentRef<'a> {
    version: u32,
    updated_at: DateTime<Utc>,
    entries: &'a HashMap<RouteKey, Arc<Route>>,
}

/// The metadata a log line carries so that [`ConversationIndex::open`] can
/// rebuild `route` from the log.
pub(crate) fn route_metadata(
    entry: LogEntry,
    key: &RouteKey,
    context_id: &str,
    task_id: Option<&str>,
    state: &str,
) -> LogEntry {
    let entry = entry
        .meta(keys::ROUTE, key.as_str())
        .meta(keys::CONTEXT_ID, context_id)
        .meta(keys::STATE, state);
    match task_id {
        Some(task_id) => entry.meta(keys::TASK_ID, task_id),
        None => entry,
    }
}

impl LogEntry {
    /// Marks this line as the latest word on `key`'s conversation, so the
    /// index can be rebuilt from the log.
    #[must_use]
    pub fn route(self, key: &RouteKey, route: &Route) -> LogEntry {
        route_metadata(
            self,
            key,
            &route.context_id,
            route.task_id.as_deref(),
            &route.last_event,
        )
    }
}
