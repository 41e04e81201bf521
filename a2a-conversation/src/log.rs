//! Writing the log: a bounded queue to a writer thread, daily files, and the
//! archive.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::oneshot;

use crate::entry::{EntryId, Line, LogEntry, Record};
use crate::{ARCHIVE_DIR, STREAM_DIR};

mod cut;

/// What `append` does when the writer's queue is full (the disk is behind).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WhenFull {
    /// The line is not written, and the loss is on record: the log counts it
    /// ([`ConversationLog::dropped`]), warns through `tracing`, and writes a
    /// line of type `error` saying how many lines were dropped as soon as the
    /// queue has room. The default: an execution never waits for the disk.
    #[default]
    DropAndRecord,
    /// `append` waits for room: nothing is dropped, and executions slow down
    /// to the disk's pace.
    Wait,
}

/// When written lines reach the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Flush {
    /// Every line is written to the file on its own as soon as the writer
    /// takes it: a crash of the process loses nothing the writer took.
    EachLine,
    /// Lines are written in groups (one system call each): after a write
    /// the writer lets lines gather for up to `max_delay` (unless `max_lines`
    /// are already waiting) instead of waking for each one. A crash of the
    /// process loses at most the lines of the last `max_delay`; a line
    /// after a quiet spell is written at once.
    Grouped {
        /// The most lines in one write.
        max_lines: usize,
        /// The longest a line waits for its group.
        max_delay: std::time::Duration,
    },
}

/// Where the time of a line comes from.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// The system's clock.
    System,
    /// `start` plus the time elapsed on tokio's clock since `anchor`: follows
    /// `tokio::time::pause` and `advance` (for tests of day rollover).
    Tokio {
        /// The wall-clock time at `anchor`.
        start: DateTime<Utc>,
        /// The tokio instant that `start` corresponds to.
        anchor: tokio::time::Instant,
    },
}

impl Clock {
    /// A clock that starts at `start` now and follows tokio's time.
    pub fn tokio_from(start: DateTime<Utc>) -> Clock {
        Clock::Tokio {
            start,
            anchor: tokio::time::Instant::now(),
        }
    }

    /// The time now.
    pub fn now(&self) -> DateTime<Utc> {
        match self {
            Clock::System => system_now(),
            Clock::Tokio { start, anchor } => {
                let elapsed = tokio::time::Instant::now().saturating_duration_since(*anchor);
                *start + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::MAX)
            }
        }
    }
}

/// The system's time, as `Utc::now` gives it, with the date worked out once
/// per day per thread instead of for every line.
fn system_now() -> DateTime<Utc> {
    thread_local! {
        static DAY: std::cell::Cell<Option<(u64, NaiveDate)>> = const { std::cell::Cell::new(None) };
    }
    let Ok(since_epoch) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) else {
        return Utc::now();
    };
    let secs = since_epoch.as_secs();
    let days = secs / 86_400;
    let date = DAY.with(|day| match day.get() {
        Some((cached, date)) if cached == days => Some(date),
        _ => {
            let date = i64::try_from(secs)
                .ok()
                .and_then(|secs| DateTime::from_timestamp(secs, 0))
                .map(|t| t.naive_utc().date());
            if let Some(date) = date {
                day.set(Some((days, date)));
            }
            date
        }
    });
    let seconds_of_day = u32::try_from(secs % 86_400).unwrap_or(0);
    let time = chrono::NaiveTime::from_num_seconds_from_midnight_opt(
        seconds_of_day,
        since_epoch.subsec_nanos(),
    );
    match (date, time) {
        (Some(date), Some(time)) => date.and_time(time).and_utc(),
        _ => Utc::now(),
    }
}

/// How a [`ConversationLog`] works. Defaults: a queue of 65,536 lines and
/// 64 MiB, lines of at most 1 MiB, [`WhenFull::DropAndRecord`],
/// [`Flush::Grouped`] of up to 4,096 lines or 10 ms, no `fsync`, archive
/// after 7 days, gzip archived days after 30.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LogConfig {
    /// Lines that may wait for the writer.
    pub queue: usize,
    /// Bytes that may wait for the writer, the batch it is writing included:
    /// with the disk stalled, the log holds no more memory than this. A line
    /// always fits in an empty queue.
    pub queue_bytes: usize,
    /// The longest line, in bytes. A longer one has its longest strings
    /// (a huge text or data part) cut, each ending in a marker
    /// `…[N bytes cut]`, and its metadata says `cutBytes` in all.
    pub max_line_bytes: usize,
    /// What happens when they are that many.
    pub when_full: WhenFull,
    /// When lines reach the file.
    pub flush: Flush,
    /// Also `fsync` after each write (survives a power loss; much slower).
    pub sync: bool,
    /// Days after which a day's file moves to `stream/archive/`.
    pub archive_after_days: u32,
    /// Days after which an archived file is gzipped.
    pub gzip_after_days: u32,
    /// The clock that stamps lines.
    pub clock: Clock,
    /// The cluster node this log belongs to (`a2a serve --node-id`), or
    /// `None` for a single server. A node writes its own daily files,
    /// `stream/YYYY-MM-DD.<node>.jsonl`, so several nodes can share one data
    /// directory (a network volume) without two processes ever appending to
    /// one file; each node archives and gzips only its own files, each line
    /// says its node (`"node"`), and a lock file (`stream/<node>.lock`)
    /// refuses a second process with the same node in the same directory.
    /// [`LogReader`](crate::LogReader) reads every node's files of a day
    /// merged in time order. A name that is not plain `[A-Za-z0-9_-]` is
    /// percent-encoded in file names (and shortened with a hash when long).
    pub node: Option<String>,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            queue: 65_536,
            queue_bytes: 64 << 20,
            max_line_bytes: 1 << 20,
            when_full: WhenFull::DropAndRecord,
            flush: Flush::Grouped {
                max_lines: 4_096,
                max_delay: std::time::Duration::from_millis(10),
            },
            sync: false,
            archive_after_days: 7,
            gzip_after_days: 30,
            clock: Clock::System,
            node: None,
        }
    }
}

impl LogConfig {
    /// Sets [`LogConfig::queue`].
    #[must_use]
    pub fn queue(mut self, lines: usize) -> Self {
        self.queue = lines;
        self
    }

    /// Sets [`LogConfig::queue_bytes`].
    #[must_use]
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    /// Sets [`LogConfig::max_line_bytes`].
    #[must_use]
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line_bytes = bytes;
        self
    }

    /// Sets [`LogConfig::when_full`].
    #[must_use]
    pub fn when_full(mut self, policy: WhenFull) -> Self {
        self.when_full = policy;
        self
    }

    /// Sets [`LogConfig::flush`].
    #[must_use]
    pub fn flush(mut self, flush: Flush) -> Self {
        self.flush = flush;
        self
    }

    /// Sets [`LogConfig::sync`].
    #[must_use]
    pub fn sync(mut self, sync: bool) -> Self {
        self.sync = sync;
        self
    }

    /// Sets [`LogConfig::archive_after_days`].
    #[must_use]
    pub fn archive_after_days(mut self, days: u32) -> Self {
        self.archive_after_days = days;
        self
    }

    /// Sets [`LogConfig::gzip_after_days`].
    #[must_use]
    pub fn gzip_after_days(mut self, days: u32) -> Self {
        self.gzip_after_days = days;
        self
    }

    /// Sets [`LogConfig::clock`].
    #[must_use]
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Sets [`LogConfig::node`] (`None`: a single server).
    #[must_use]
    pub fn node(mut self, node: impl Into<Option<String>>) -> Self {
        self.node = node.into();
        self
    }
}

/// Why the log failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A file or folder could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The writer's queue was full and the line was dropped (and counted).
    #[error("the conversation log's queue is full; the line was dropped and counted")]
    Full,
    /// The writer has stopped (the log was closed, or its thread failed).
    #[error("the conversation log's writer has stopped")]
    Stopped,
    /// Another process (or another open log of this one) already writes
    /// this node's files in this directory: two writers of one node would
    /// each archive and gzip the other's files under it.
    #[error(
        "node {node:?} already writes the conversation log in {dir} (another `a2a serve` with \
         the same --node-id and data directory?); give each node its own --node-id"
    )]
    NodeInUse {
        /// The node.
        node: String,
        /// The log's folder.
        dir: PathBuf,
    },
}

pub(crate) fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> LogError {
    let context = context.into();
    move |source| LogError::Io { context, source }
}

/// A request to the writer, answered once everything queued before it is
/// written.
enum Command {
    /// Answers once everything queued before it is written (and synced if configured).
    Flush(oneshot::Sender<Result<(), String>>),
    /// Runs the archive pass as of the given day.
    Archive(NaiveDate, oneshot::Sender<Result<(), String>>),
}

/// What waits for the writer. Appenders add encoded lines to one shared
/// buffer under a short lock (lines given by reference are encoded straight
/// into it), and the writer swaps the whole buffer out: no allocation,
/// channel message, copy or wake-up per line.
#[derive(Default)]
struct Pending {
    /// Encoded lines, each ending in `\n`.
    bytes: Vec<u8>,
    /// How many lines `bytes` holds.
    lines: usize,
    /// Where the line being encoded into `bytes` starts: should encoding
    /// panic, the next lock cuts the part written off.
    encoding: Option<usize>,
    /// The day of each run of lines in `bytes`, and where the run starts.
    days: Vec<(NaiveDate, usize)>,
    /// The time of the last line queued.
    last_t: Option<DateTime<Utc>>,
    /// Bytes the writer took and has not finished writing: they count
    /// against [`LogConfig::queue_bytes`] too.
    writing: usize,
    commands: Vec<Command>,
    /// The writer waits for work: the next line wakes it.
    writer_idle: bool,
    /// The writer lets lines gather: a full group wakes it.
    writer_gathering: bool,
    /// Every handle is gone: the writer writes what is left and stops.
    closed: bool,
    /// The writer has stopped.
    stopped: bool,
}

/// The log: cheap to clone; the writer thread ends when the last clone is
/// dropped, after writing what is queued.
#[derive(Debug, Clone)]
pub struct ConversationLog {
    shared: Arc<Shared>,
    _open: Arc<OpenHandle>,
}

/// Closes the log when the last [`ConversationLog`] clone goes.
#[derive(Debug)]
struct OpenHandle(Arc<Shared>);

impl Drop for OpenHandle {
    fn drop(&mut self) {
        lock(&self.0.pending).closed = true;
        self.0.wake.notify_one();
    }
}

struct Shared {
    dir: PathBuf,
    config: LogConfig,
    /// The node's name in its file names ([`node_tag`]); `None` for a
    /// single server.
    tag: Option<String>,
    /// `,"node":"…"}`: what replaces the closing brace of each line a node
    /// writes (the line's `node` field, encoded once).
    node_suffix: Option<Box<[u8]>>,
    /// The most lines in one group (1 with [`Flush::EachLine`]).
    max_lines: usize,
    dropped: AtomicU64,
    written: AtomicU64,
    failed: AtomicU64,
    pending: Mutex<Pending>,
    /// Wakes the writer.
    wake: Condvar,
    /// Wakes appenders waiting for room ([`WhenFull::Wait`]).
    room: tokio::sync::Notify,
    /// A failure to inject into the next write (tests only).
    #[cfg(test)]
    fault: Mutex<Option<Fault>>,
}

/// A write that stops after `after` bytes with `error` (tests only).
#[cfg(test)]
#[derive(Debug)]
struct Fault {
    after: usize,
    error: std::io::ErrorKind,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("dir", &self.dir)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    // A panic while holding the lock leaves whole lines behind (bytes are
    // appended in one call, or cut back to where the line being encoded
    // began), so the data is still good.
    pending.lock().unwrap_or_else(|poisoned| {
        let mut pending = poisoned.into_inner();
        pending.cut_torn();
        pending
    })
}

impl Pending {
    /// Cuts off the part of a line whose encoding panicked (see
    /// `encoding`): called wherever the lock is taken back after a panic.
    fn cut_torn(&mut self) {
        if let Some(start) = self.encoding.take() {
            self.bytes.truncate(start);
        }
    }

    /// Empty, with room for a burst of lines before the first reallocation.
    fn with_room() -> Pending {
        Pending {
            bytes: Vec::with_capacity(256 * 1024),
            ..Pending::default()
        }
    }
}

/// Why a line encoded into the queue was not left there.
enum Unqueued {
    /// The writer has stopped.
    Stopped,
    /// Too long or no room: the line with its id, taken back out.
    Aside(EntryId, Vec<u8>),
}

/// Why a line was not queued.
enum Refused {
    Full,
    Stopped,
}

impl Shared {
    /// Queues one encoded line (without its newline), if there is room.
    fn try_queue(&self, t: DateTime<Utc>, json: &[u8]) -> Result<(), Refused> {
        let mut pending = lock(&self.pending);
        if pending.stopped {
            return Err(Refused::Stopped);
        }
        let bytes = pending.bytes.len() + pending.writing;
        let over_bytes = bytes > 0 && bytes + json.len() + 1 > self.config.queue_bytes;
        if pending.lines >= self.config.queue.max(1) || over_bytes {
            return Err(Refused::Full);
        }
        let start = pending.bytes.len();
        pending.bytes.extend_from_slice(json);
        pending.bytes.push(b'\n');
        self.queued(pending, t, start);
        Ok(())
    }

    /// Encodes a line with `encode` straight into the queue, and queues it
    /// if it is within the length bound and there is room: no scratch
    /// buffer and no copy. The lock is held while encoding (a microsecond
    /// or so); the writer only takes it to swap the buffer out.
    fn queue_encoded(
        &self,
        t: DateTime<Utc>,
        encode: impl FnOnce(&mut Vec<u8>) -> EntryId,
    ) -> Result<EntryId, Unqueued> {
        let mut pending = lock(&self.pending);
        if pending.stopped {
            return Err(Unqueued::Stopped);
        }
        let start = pending.bytes.len();
        pending.encoding = Some(start);
        let id = encode(&mut pending.bytes);
        pending.encoding = None;
        let length = pending.bytes.len() - start;
        let stamped = length + self.node_suffix.as_ref().map_or(0, |s| s.len() - 1);
        let bytes = start + pending.writing;
        let over_bytes = bytes > 0 && bytes + stamped + 1 > self.config.queue_bytes;
        if length > self.max_body() || pending.lines >= self.config.queue.max(1) || over_bytes {
            let json = pending.bytes.split_off(start);
            return Err(Unqueued::Aside(id, json));
        }
        self.stamp(&mut pending.bytes);
        pending.bytes.push(b'\n');
        self.queued(pending, t, start);
        Ok(id)
    }

    /// Books a line just added to `pending.bytes` at `start`, and wakes the
    /// writer if it waits for it.
    fn queued(&self, mut pending: MutexGuard<'_, Pending>, t: DateTime<Utc>, start: usize) {
        // The UTC date as stored (what `date_naive` gives, without its
        // offset arithmetic).
        let day = t.naive_utc().date();
        if pending.days.last().is_none_or(|(last, _)| *last != day) {
            pending.days.push((day, start));
        }
        pending.lines += 1;
        pending.last_t = Some(t);
        let wake =
            pending.writer_idle || (pending.writer_gathering && pending.lines >= self.max_lines);
        if wake {
            pending.writer_idle = false;
            pending.writer_gathering = false;
            drop(pending);
            self.wake.notify_one();
        }
    }

    /// Re-encodes `entry`, whose line `json` is over the length bound,
    /// with its longest strings cut so that it fits.
    fn cut(&self, entry: &LogEntry, json: &mut Vec<u8>) -> serde_json::Result<()> {
        let length = json.len();
        let cut = cut::encode_within(entry, self.max_body(), json)?;
        tracing::warn!(
            id = %entry.id,
            length,
            cut,
            max = self.config.max_line_bytes,
            "a conversation log line over the length bound was cut"
        );
        Ok(())
    }

    /// The longest a line may be before its node field is added.
    fn max_body(&self) -> usize {
        let node = self
            .node_suffix
            .as_ref()
            .map_or(0, |suffix| suffix.len() - 1);
        self.config.max_line_bytes.saturating_sub(node)
    }

    /// Adds the node field to an encoded line (a node's log only).
    fn stamp(&self, json: &mut Vec<u8>) {
        if let Some(suffix) = &self.node_suffix {
            json.pop();
            json.extend_from_slice(suffix);
        }
    }

    fn send(&self, command: Command) -> Result<(), LogError> {
        let mut pending = lock(&self.pending);
        if pending.stopped {
            return Err(LogError::Stopped);
        }
        pending.commands.push(command);
        pending.writer_idle = false;
        pending.writer_gathering = false;
        drop(pending);
        self.wake.notify_one();
        Ok(())
    }
}

impl ConversationLog {
    /// Opens the log in `data_dir/stream` (created if missing) and starts its
    /// writer thread. A node's log ([`LogConfig::node`]) first takes its
    /// node's lock file there, and fails with [`LogError::NodeInUse`] if a
    /// live process holds it.
    pub fn open(data_dir: impl AsRef<Path>, config: LogConfig) -> Result<Self, LogError> {
        let dir = data_dir.as_ref().join(STREAM_DIR);
        std::fs::create_dir_all(dir.join(ARCHIVE_DIR))
            .map_err(io_error(format!("creating {}", dir.display())))?;
        let tag = config.node.as_deref().map(node_tag);
        let node_lock = match (&config.node, &tag) {
            (Some(node), Some(tag)) => Some(lock_node(&dir, node, tag)?),
            _ => None,
        };
        let node_suffix = config.node.as_deref().map(|node| {
            let mut suffix = b",\"node\":".to_vec();
            a2a_core::json_writer::write_str(&mut suffix, node);
            suffix.push(b'}');
            suffix.into_boxed_slice()
        });
        let max_lines = match config.flush {
            Flush::EachLine => 1,
            Flush::Grouped { max_lines, .. } => max_lines.max(1),
        };
        let shared = Arc::new(Shared {
            dir,
            config,
            tag,
            node_suffix,
            max_lines,
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            pending: Mutex::new(Pending::with_room()),
            wake: Condvar::new(),
            room: tokio::sync::Notify::new(),
            #[cfg(test)]
            fault: Mutex::new(None),
        });
        let writer = Writer {
            shared: shared.clone(),
            file: None,
            taken: Pending::with_room(),
            reported_dropped: 0,
            reported_failed: 0,
            failed_since_flush: 0,
            last_error: None,
            archived_as_of: None,
            last_t: None,
            _node_lock: node_lock,
        };
        std::thread::Builder::new()
            .name("a2a-conversation-log".into())
            .spawn(move || writer.run())
            .map_err(io_error("starting the conversation log's writer"))?;
        Ok(ConversationLog {
            _open: Arc::new(OpenHandle(shared.clone())),
            shared,
        })
    }

    /// The folder of the daily files.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The cluster node whose files this log writes, if any.
    pub fn node(&self) -> Option<&str> {
        self.shared.config.node.as_deref()
    }

    /// The time now on the log's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.shared.config.clock.now()
    }

    /// Queues `entry` for writing and returns its id. Never waits for the
    /// disk; with [`WhenFull::Wait`] it waits for room in the queue.
    ///
    /// A node's log writes its own node in the line's `node` field (in
    /// place of any the entry has).
    pub async fn append(&self, mut entry: LogEntry) -> Result<String, LogError> {
        let shared = &self.shared;
        if shared.node_suffix.is_some() {
            entry.node = None;
        }
        let max = shared.max_body();
        let encoded = with_scratch(|json| {
            entry.write_json(json)?;
            if json.len() > max {
                shared.cut(&entry, json)?;
            }
            shared.stamp(json);
            Ok::<_, serde_json::Error>(
                self.shared
                    .try_queue(entry.t, json)
                    .map_err(|r| (r, json.clone())),
            )
        });
        match encoded {
            Ok(Ok(())) => Ok(entry.id),
            Ok(Err((refused, json))) => {
                self.refused(entry.t, refused, json).await?;
                Ok(entry.id)
            }
            Err(e) => Err(LogError::Io {
                context: "encoding a conversation log line".into(),
                source: std::io::Error::other(e),
            }),
        }
    }

    /// Queues `line` with a fresh id, which it returns: as [`append`](Self::append)
    /// with a [`LogEntry`] of the same fields, but encoded straight from the
    /// borrowed fields (the cheap way for code that logs on every request).
    pub async fn append_line(&self, line: Line<'_>) -> Result<String, LogError> {
        let id = self.append_new_line(line).await?;
        Ok(id.as_str().to_owned())
    }

    /// As [`append_line`](Self::append_line), returning the id inline (no
    /// `String` per line).
    pub(crate) async fn append_new_line(&self, line: Line<'_>) -> Result<EntryId, LogError> {
        self.append_encoded(
            line.t,
            |out| line.write_json_new_id(out),
            |id| cut::owned(&line, id),
        )
        .await
    }

    /// Queues a server's own line with a fresh id, which it returns (the
    /// recorder's path).
    pub(crate) async fn append_record(&self, record: Record<'_>) -> Result<EntryId, LogError> {
        self.append_encoded(
            record.t,
            |out| record.write_json_new_id(out),
            |id| record.to_entry(id),
        )
        .await
    }

    /// Queues the line `encode` writes (with a fresh id, which it returns),
    /// encoded straight into the queue; `owned` gives the line as an entry
    /// should it be too long and need cutting.
    async fn append_encoded(
        &self,
        t: DateTime<Utc>,
        encode: impl FnOnce(&mut Vec<u8>) -> EntryId,
        owned: impl FnOnce(&str) -> LogEntry,
    ) -> Result<EntryId, LogError> {
        match self.shared.queue_encoded(t, encode) {
            Ok(id) => Ok(id),
            Err(Unqueued::Stopped) => Err(LogError::Stopped),
            // Boxed: inline, the slow path's state would enlarge every
            // line's future (and the recorder's around it).
            Err(Unqueued::Aside(id, json)) => Box::pin(self.append_aside(t, id, json, owned)).await,
        }
    }

    /// Queues a line that was too long (cut here) or found no room.
    async fn append_aside(
        &self,
        t: DateTime<Utc>,
        id: EntryId,
        mut json: Vec<u8>,
        owned: impl FnOnce(&str) -> LogEntry,
    ) -> Result<EntryId, LogError> {
        let shared = &self.shared;
        if json.len() > shared.max_body() {
            shared
                .cut(&owned(id.as_str()), &mut json)
                .map_err(|e| LogError::Io {
                    context: "encoding a conversation log line".into(),
                    source: std::io::Error::other(e),
                })?;
        }
        shared.stamp(&mut json);
        match shared.try_queue(t, &json) {
            Ok(()) => Ok(id),
            Err(refused) => {
                self.refused(t, refused, json).await?;
                Ok(id)
            }
        }
    }

    /// A line found no room (or no writer): drop it on record, or wait for room.
    async fn refused(
        &self,
        t: DateTime<Utc>,
        refused: Refused,
        json: Vec<u8>,
    ) -> Result<(), LogError> {
        if matches!(refused, Refused::Stopped) {
            return Err(LogError::Stopped);
        }
        match self.shared.config.when_full {
            WhenFull::DropAndRecord => {
                let dropped = self.shared.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                if dropped.is_power_of_two() {
                    tracing::warn!(
                        dropped,
                        "the conversation log's queue is full; dropping lines (a line in the log will say how many)"
                    );
                }
                Err(LogError::Full)
            }
            WhenFull::Wait => loop {
                let room = self.shared.room.notified();
                tokio::pin!(room);
                // Registered before trying, so room made in between is not missed.
                room.as_mut().enable();
                match self.shared.try_queue(t, &json) {
                    Ok(()) => return Ok(()),
                    Err(Refused::Stopped) => return Err(LogError::Stopped),
                    Err(Refused::Full) => room.await,
                }
            },
        }
    }

    /// Lines dropped because the queue was full, since the log was opened.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Lines written to files, since the log was opened.
    pub fn written(&self) -> u64 {
        self.shared.written.load(Ordering::Relaxed)
    }

    /// Lines lost because writing them failed (a full disk, an I/O error),
    /// since the log was opened. Each failure is warned about through
    /// `tracing`, and once writing works again a line of type `error` says
    /// how many were lost. A failed write never leaves part of a line in
    /// the file: it is cut back to its last whole line.
    pub fn failed(&self) -> u64 {
        self.shared.failed.load(Ordering::Relaxed)
    }

    /// Lines queued for the writer and not written yet, and their bytes (the
    /// batch the writer is on included).
    pub fn queued(&self) -> (usize, usize) {
        let pending = lock(&self.shared.pending);
        (pending.lines, pending.bytes.len() + pending.writing)
    }

    /// Waits until every line queued before this call is in its file. Fails
    /// if a line could not be written since the last flush (see
    /// [`failed`](Self::failed)).
    pub async fn flush(&self) -> Result<(), LogError> {
        let (done, answer) = oneshot::channel();
        self.shared.send(Command::Flush(done))?;
        answer
            .await
            .map_err(|_| LogError::Stopped)?
            .map_err(|e| LogError::Io {
                context: "flushing the conversation log".into(),
                source: std::io::Error::other(e),
            })
    }

    /// Runs the archive pass as of `today` (it also runs by itself when the
    /// first line of a new day is written, and on open): days older than
    /// [`LogConfig::archive_after_days`] move to `archive/`, archived days
    /// older than [`LogConfig::gzip_after_days`] are gzipped.
    pub async fn archive(&self, today: NaiveDate) -> Result<(), LogError> {
        let (done, answer) = oneshot::channel();
        self.shared.send(Command::Archive(today, done))?;
        answer
            .await
            .map_err(|_| LogError::Stopped)?
            .map_err(|e| LogError::Io {
                context: "archiving the conversation log".into(),
                source: std::io::Error::other(e),
            })
    }
}

/// Runs `encode` on a cleared buffer kept per thread, so encoding a line
/// allocates nothing.
fn with_scratch<R>(encode: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    thread_local! {
        static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    SCRATCH.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        scratch.clear();
        let result = encode(&mut scratch);
        // A huge line should not pin its memory to the thread.
        if scratch.capacity() > 64 * 1024 {
            *scratch = Vec::new();
        }
        result
    })
}

/// The path of `day`'s live file in `dir`: a single server's
/// (`YYYY-MM-DD.jsonl`, `tag` `None`) or a node's
/// (`YYYY-MM-DD.<tag>.jsonl`).
pub(crate) fn day_file(dir: &Path, day: NaiveDate, tag: Option<&str>) -> PathBuf {
    match tag {
        None => dir.join(format!("{}.jsonl", day.format("%Y-%m-%d"))),
        Some(tag) => dir.join(format!("{}.{tag}.jsonl", day.format("%Y-%m-%d"))),
    }
}

/// What a daily file's name says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DayFileName<'a> {
    /// The day.
    pub(crate) day: NaiveDate,
    /// The node's tag ([`node_tag`]); `None` for a single server's file.
    pub(crate) tag: Option<&'a str>,
    /// A gzipped archive (`.jsonl.gz`).
    pub(crate) gzipped: bool,
}

/// Reads a daily file's name: `YYYY-MM-DD[.<tag>].jsonl[.gz]`; `None` for
/// anything else (lock files, a gzip being written).
pub(crate) fn parse_day_file(name: &str) -> Option<DayFileName<'_>> {
    let (stem, gzipped) = match name.strip_suffix(".gz") {
        Some(stem) => (stem, true),
        None => (name, false),
    };
    let stem = stem.strip_suffix(".jsonl")?;
    let date = stem.get(..10)?;
    let tag = match stem.get(10..)? {
        "" => None,
        rest => {
            let tag = rest.strip_prefix('.')?;
            if tag.is_empty() || !tag.bytes().all(is_tag_byte) {
                return None;
            }
            Some(tag)
        }
    };
    let day = NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    Some(DayFileName { day, tag, gzipped })
}

/// Bytes a node's name keeps as they are in its file names.
fn is_plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Bytes a tag is made of: plain ones, percent escapes, and the `~` before
/// the hash of a long name.
fn is_tag_byte(b: u8) -> bool {
    is_plain(b) || b == b'%' || b == b'~'
}

/// The longest tag before a name is shortened to a prefix and a hash.
const MAX_TAG: usize = 80;

/// A node's name as its file names carry it: plain `[A-Za-z0-9_-]` as is,
/// any other byte as `%XX` (so no name can reach another folder or clash
/// with the day or the extension), and a long name as its first part,
/// `~`, and a hash of the whole (file names have a length limit). The same
/// name always gives the same tag, on every machine.
pub(crate) fn node_tag(node: &str) -> String {
    let mut tag = String::with_capacity(node.len());
    let mut short_end = 0;
    for &b in node.as_bytes() {
        if is_plain(b) {
            tag.push(char::from(b));
        } else {
            tag.push_str(&format!("%{b:02X}"));
        }
        if tag.len() <= MAX_TAG - 17 {
            short_end = tag.len();
        }
    }
    if tag.is_empty() {
        return "%".to_owned();
    }
    if tag.len() > MAX_TAG {
        // FNV-1a: stable across versions and platforms, unlike std's hasher.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in node.as_bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        tag.truncate(short_end);
        tag.push_str(&format!("~{hash:016x}"));
    }
    tag
}

/// Takes the lock file of node `node` in `dir`, held (by the open file) as
/// long as the log's writer runs; a process that dies lets go of it.
fn lock_node(dir: &Path, node: &str, tag: &str) -> Result<File, LogError> {
    let path = dir.join(format!("{tag}.lock"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io_error(format!("opening {}", path.display())))?;
    match fs4::fs_std::FileExt::try_lock_exclusive(&file) {
        Ok(true) => Ok(file),
        Ok(false) => Err(LogError::NodeInUse {
            node: node.to_owned(),
            dir: dir.to_owned(),
        }),
        Err(err) => Err(io_error(format!("locking {}", path.display()))(err)),
    }
}

struct Writer {
    shared: Arc<Shared>,
    /// The open file.
    file: Option<DayFile>,
    /// What the writer took from [`Pending`] last (its buffers are swapped
    /// back and forth, so their memory is reused).
    taken: Pending,
    /// Dropped lines already written up as a line of their own.
    reported_dropped: u64,
    /// Failed lines already written up as a line of their own.
    reported_failed: u64,
    /// Lines that failed since the last flush was answered: the next flush
    /// fails.
    failed_since_flush: u64,
    /// The last write error, for the report and the flush's answer.
    last_error: Option<String>,
    /// The day the last archive pass ran as of.
    archived_as_of: Option<NaiveDate>,
    /// The time of the last line written.
    last_t: Option<DateTime<Utc>>,
    /// A node's lock file, held until the writer is done.
    _node_lock: Option<File>,
}

/// A day's file open for appending, and its length: where a failed write is
/// cut back to.
struct DayFile {
    day: NaiveDate,
    file: File,
    len: u64,
}

/// A write that failed after `kept` bytes of whole lines went into the file.
struct WriteFailure {
    kept: usize,
    error: std::io::Error,
}

/// Marks the writer stopped however its thread ends, so appends fail
/// instead of queueing lines nobody will write.
struct StopGuard(Arc<Shared>);

impl Drop for StopGuard {
    fn drop(&mut self) {
        lock(&self.0.pending).stopped = true;
        self.0.room.notify_waiters();
    }
}

/// Past this, the writer's buffers give their memory back after a burst.
const KEEP_CAPACITY: usize = 4 << 20;

impl Writer {
    fn run(mut self) {
        let _stopped = StopGuard(self.shared.clone());
        let gather = match self.shared.config.flush {
            Flush::EachLine => std::time::Duration::ZERO,
            Flush::Grouped { max_delay, .. } => max_delay,
        };
        loop {
            if !self.take() {
                break;
            }
            self.shared.room.notify_waiters();
            self.write_taken();
            lock(&self.shared.pending).writing = 0;
            self.shared.room.notify_waiters();
            self.report_lost();
            let answer = match (self.failed_since_flush, &self.last_error) {
                (0, _) => Ok(()),
                (lost, error) => Err(format!(
                    "{lost} lines could not be written: {}",
                    error.as_deref().unwrap_or("unknown error")
                )),
            };
            let mut commands = std::mem::take(&mut self.taken.commands);
            for command in commands.drain(..) {
                match command {
                    Command::Flush(done) => {
                        self.failed_since_flush = 0;
                        let _ = done.send(answer.clone());
                    }
                    Command::Archive(today, done) => {
                        let archived = self.archive(today);
                        let _ = done.send(archived.map_err(|e| e.to_string()));
                    }
                }
            }
            self.taken.commands = commands;
            // Waking for every line costs a thread switch and a system call
            // per line; waiting instead lets appenders queue without waking
            // anyone, and the next pass writes them in one go.
            if !gather.is_zero() && self.taken.lines < self.shared.max_lines {
                let mut pending = lock(&self.shared.pending);
                // A command that came while writing (its wake-up went to
                // no one) is answered now, not after the gathering.
                if !pending.closed
                    && pending.lines < self.shared.max_lines
                    && pending.commands.is_empty()
                {
                    pending.writer_gathering = true;
                    let (mut pending, _) = self
                        .shared
                        .wake
                        .wait_timeout(pending, gather)
                        .unwrap_or_else(PoisonError::into_inner);
                    pending.writer_gathering = false;
                }
            }
        }
    }

    /// Waits for work and takes all of it; false once the log is closed and
    /// everything is written.
    fn take(&mut self) -> bool {
        let mut pending = lock(&self.shared.pending);
        // A wait hands the lock back poisoned or not: a line torn by a
        // panic while the writer waited is cut off here.
        pending.cut_torn();
        while pending.bytes.is_empty() && pending.commands.is_empty() && !pending.closed {
            pending.writer_idle = true;
            pending = self
                .shared
                .wake
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
            pending.cut_torn();
        }
        pending.writer_idle = false;
        if pending.closed && pending.bytes.is_empty() && pending.commands.is_empty() {
            return false;
        }
        self.taken.bytes.clear();
        self.taken.days.clear();
        std::mem::swap(&mut self.taken.bytes, &mut pending.bytes);
        std::mem::swap(&mut self.taken.days, &mut pending.days);
        std::mem::swap(&mut self.taken.commands, &mut pending.commands);
        self.taken.lines = std::mem::take(&mut pending.lines);
        pending.writing = self.taken.bytes.len();
        if let Some(t) = pending.last_t.take() {
            self.last_t = Some(t);
        }
        true
    }

    /// Writes the taken lines, each day's run to that day's file, and counts
    /// them written or failed.
    fn write_taken(&mut self) {
        let days = std::mem::take(&mut self.taken.days);
        let mut bytes = std::mem::take(&mut self.taken.bytes);
        let mut failed = 0u64;
        for (n, &(day, start)) in days.iter().enumerate() {
            let end = days.get(n + 1).map_or(bytes.len(), |&(_, next)| next);
            let run = &bytes[start..end];
            if let Err(failure) = self.write_day(day, run) {
                let lost = memchr::memchr_iter(b'\n', &run[failure.kept..]).count() as u64;
                failed += lost;
                self.failed(lost, &failure.error);
            }
        }
        self.shared
            .written
            .fetch_add(self.taken.lines as u64 - failed, Ordering::Relaxed);
        // A burst must not pin its memory to the writer for good.
        if bytes.capacity() > KEEP_CAPACITY {
            bytes = Vec::with_capacity(256 * 1024);
        }
        self.taken.days = days;
        self.taken.bytes = bytes;
    }

    /// Counts `lost` lines as failed, and warns (the first failure after a
    /// good write, then every time the count of failures in a row reaches a
    /// power of two, so a dead disk does not flood the log).
    fn failed(&mut self, lost: u64, error: &std::io::Error) {
        let total = self.shared.failed.fetch_add(lost, Ordering::Relaxed) + lost;
        self.failed_since_flush += lost;
        // Lost since writing last worked (when the report went in).
        let in_a_row = total - self.reported_failed;
        let before = in_a_row - lost;
        if before == 0 || before.ilog2() != in_a_row.ilog2() {
            tracing::warn!(
                lost,
                failed_total = total,
                error = %error,
                "writing the conversation log failed; the lines are lost (a line in the log will say how many)"
            );
        }
        self.last_error = Some(error.to_string());
    }

    /// Appends whole lines to `day`'s file (switching files when the day
    /// changes), and syncs if configured. A write that fails leaves the file
    /// as it was after the last whole line that went in: the next write
    /// starts on a line of its own.
    fn write_day(&mut self, day: NaiveDate, lines: &[u8]) -> Result<(), WriteFailure> {
        let failed = |error| WriteFailure { kept: 0, error };
        if self.file.as_ref().is_none_or(|open| open.day != day) {
            self.file = None;
            if self.archived_as_of.is_none_or(|as_of| as_of < day) {
                if let Err(err) = self.archive(day) {
                    tracing::warn!(error = %err, "archiving old conversation log days failed");
                }
            }
            let path = day_file(&self.shared.dir, day, self.shared.tag.as_deref());
            let file = open_for_append(&path).map_err(failed)?;
            let len = file.metadata().map_err(failed)?.len();
            self.file = Some(DayFile { day, file, len });
        }
        let Some(open) = self.file.as_mut() else {
            return Ok(());
        };
        let mut done = 0;
        let written = write_counted(&mut open.file, lines, &mut done, &self.shared);
        if let Err(error) = written {
            // Back to the end of the last whole line written: a partial line
            // would swallow the first line of the next write.
            let kept = memchr::memrchr(b'\n', &lines[..done]).map_or(0, |at| at + 1);
            let cut_to = open.len + kept as u64;
            if done > kept && open.file.set_len(cut_to).is_err() {
                // Reopening ends the partial line (see `open_for_append`).
                self.file = None;
            } else {
                open.len = cut_to;
            }
            return Err(WriteFailure { kept, error });
        }
        open.len += lines.len() as u64;
        if self.shared.config.sync {
            if let Err(error) = open.file.sync_data() {
                // The lines are in the file; whether they would survive a
                // power loss is not known. Said once, not counted as lost.
                tracing::error!(%error, "syncing the conversation log failed");
                self.last_error = Some(error.to_string());
            }
        }
        Ok(())
    }

    /// Writes up lines dropped (the queue was full) or failed (the disk
    /// refused them) since the last report, as a line of type `error` each.
    fn report_lost(&mut self) {
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        if dropped != self.reported_dropped {
            let lost = dropped - self.reported_dropped;
            self.reported_dropped = dropped;
            let entry = self
                .report(format!(
                    "the log's queue was full: {lost} lines were dropped"
                ))
                .meta("dropped", lost)
                .meta("droppedTotal", dropped);
            if !self.write_report(&entry) {
                tracing::error!(lost, "could not record dropped conversation log lines");
            }
        }
        let failed = self.shared.failed.load(Ordering::Relaxed);
        if failed != self.reported_failed {
            let lost = failed - self.reported_failed;
            let error = self.last_error.clone().unwrap_or_default();
            let entry = self
                .report(format!(
                    "writing the log failed: {lost} lines were lost ({error})"
                ))
                .meta("failed", lost)
                .meta("failedTotal", failed);
            // Only once it is written: until then the disk is still failing,
            // and the count goes on.
            if self.write_report(&entry) {
                self.reported_failed = failed;
            }
        }
    }

    /// A report line, stamped as the last line written, so it lands in the
    /// same day's file.
    fn report(&self, text: String) -> LogEntry {
        let t = self.last_t.unwrap_or_else(Utc::now);
        let mut entry = LogEntry::new(t, crate::EntryType::Error, "conversation-log", None, text);
        entry.node.clone_from(&self.shared.config.node);
        entry
    }

    /// Writes a report line; whether it went in.
    fn write_report(&mut self, entry: &LogEntry) -> bool {
        let mut json = Vec::new();
        if entry.write_json(&mut json).is_err() {
            return false;
        }
        json.push(b'\n');
        let written = self.write_day(entry.t.date_naive(), &json).is_ok();
        if written {
            self.shared.written.fetch_add(1, Ordering::Relaxed);
        }
        written
    }

    /// Moves days older than the archive age to `archive/`, and gzips archived
    /// days older than the gzip age. Each step is a rename, so a reader sees
    /// a day's file in one place or the other, whole.
    fn archive(&mut self, today: NaiveDate) -> std::io::Result<()> {
        self.archived_as_of = Some(today);
        let config = &self.shared.config;
        let archive_before = today - chrono::Days::new(u64::from(config.archive_after_days));
        let gzip_before = today - chrono::Days::new(u64::from(config.gzip_after_days));
        let archive_dir = self.shared.dir.join(ARCHIVE_DIR);
        std::fs::create_dir_all(&archive_dir)?;
        // Only this writer's own files: a node never moves another's.
        let own = self.shared.tag.as_deref();
        for entry in std::fs::read_dir(&self.shared.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(file) = parse_day_file(name).filter(|f| f.tag == own) else {
                continue;
            };
            let day = file.day;
            if !file.gzipped && day < archive_before {
                if self.file.as_ref().is_some_and(|open| open.day == day) {
                    self.file = None;
                }
                std::fs::rename(entry.path(), archive_dir.join(name))?;
            }
        }
        for entry in std::fs::read_dir(&archive_dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(file) = parse_day_file(name).filter(|f| f.tag == own) else {
                continue;
            };
            if !file.gzipped && file.day < gzip_before {
                gzip_in_place(&entry.path())?;
            }
        }
        Ok(())
    }
}

/// Writes all of `bytes` to `file`, counting in `done` what went in, so that
/// a failure halfway says where it stopped.
#[cfg_attr(not(test), allow(unused_variables))]
fn write_counted(
    file: &mut File,
    bytes: &[u8],
    done: &mut usize,
    shared: &Shared,
) -> std::io::Result<()> {
    #[cfg(test)]
    if let Some(fault) = shared
        .fault
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
    {
        let part = &bytes[..fault.after.min(bytes.len())];
        file.write_all(part)?;
        *done = part.len();
        return Err(fault.error.into());
    }
    while *done < bytes.len() {
        match file.write(&bytes[*done..]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => *done += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Opens `path` for appending; if a crash left its last line torn (no final
/// newline), ends that line first so the next one starts clean.
fn open_for_append(path: &Path) -> std::io::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    let len = file.metadata()?.len();
    if len > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// Gzips `path` to `path.gz` (written to a temporary name, synced, renamed),
/// then removes `path`. A crash at any point leaves at least one whole copy.
fn gzip_in_place(path: &Path) -> std::io::Result<()> {
    let mut gz_name = path.as_os_str().to_owned();
    gz_name.push(".gz");
    let gz_path = PathBuf::from(gz_name);
    let mut tmp_name = gz_path.as_os_str().to_owned();
    tmp_name.push(".tmp");
    let tmp_path = PathBuf::from(tmp_name);
    {
        let mut input = File::open(path)?;
        let output = File::create(&tmp_path)?;
        let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
        std::io::copy(&mut input, &mut encoder)?;
        encoder.finish()?.sync_all()?;
    }
    std::fs::rename(&tmp_path, &gz_path)?;
    std::fs::remove_file(path)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{EntryType, LogReader};

    fn entry(text: &str) -> LogEntry {
        LogEntry::new(Utc::now(), EntryType::Request, "alpha", None, text)
    }

    /// The next write stops after `after` bytes with `error`, as a disk
    /// that fills up or fails halfway through would.
    fn inject(log: &ConversationLog, after: usize, error: std::io::ErrorKind) {
        *lock_fault(log) = Some(Fault { after, error });
    }

    fn lock_fault(log: &ConversationLog) -> MutexGuard<'_, Option<Fault>> {
        log.shared.fault.lock().unwrap()
    }

    #[tokio::test]
    async fn a_failed_write_is_cut_back_to_its_last_whole_line_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let config = LogConfig::default().flush(Flush::Grouped {
            max_lines: 1_000,
            max_delay: std::time::Duration::from_secs(3600),
        });
        let log = ConversationLog::open(dir.path(), config).unwrap();
        let day = Utc::now().date_naive();
        log.append(entry("first")).await.unwrap();
        log.flush().await.unwrap();

        // Three lines go in one write, which stops partway through the
        // second line with an I/O error: the first stays, the rest fail.
        let first_len = {
            let mut json = Vec::new();
            entry("one").write_json(&mut json).unwrap();
            json.len() + 1
        };
        inject(&log, first_len + 10, std::io::ErrorKind::Other);
        for text in ["one", "two", "three"] {
            log.append(entry(text)).await.unwrap();
        }
        let err = log.flush().await.unwrap_err();
        assert!(
            err.to_string().contains("2 lines could not be written"),
            "{err}"
        );
        assert_eq!(log.failed(), 2);

        // The next write starts on a line of its own, and says what was lost.
        log.append(entry("after")).await.unwrap();
        log.flush().await.unwrap();
        let read = LogReader::new(dir.path()).day(day).unwrap();
        assert_eq!(read.skipped, 0);
        let texts: Vec<String> = read.entries.iter().map(LogEntry::content_text).collect();
        assert_eq!(texts[..2], ["first", "one"]);
        assert!(
            texts[2].starts_with("writing the log failed: 2 lines were lost"),
            "{texts:?}"
        );
        assert_eq!(read.entries[2].metadata["failed"], 2);
        assert_eq!(texts[3], "after");
        assert_eq!(log.written(), 4);
    }

    #[test]
    fn the_system_clock_reads_as_chrono_does() {
        for _ in 0..3 {
            let before = Utc::now();
            let now = system_now();
            let after = Utc::now();
            assert!(before <= now && now <= after, "{before} {now} {after}");
            assert_eq!(now.date_naive(), now.naive_utc().date());
        }
    }

    #[tokio::test]
    async fn a_panic_while_encoding_into_the_queue_leaves_no_part_of_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
        log.append(entry("before")).await.unwrap();
        let shared = log.shared.clone();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = shared.queue_encoded(Utc::now(), |out| {
                out.extend_from_slice(b"{\"id\":\"torn");
                panic!("encoding failed halfway");
            });
        }));
        assert!(panicked.is_err());
        log.append(entry("after")).await.unwrap();
        log.flush().await.unwrap();
        let read = LogReader::new(dir.path())
            .day(Utc::now().date_naive())
            .unwrap();
        assert_eq!(read.skipped, 0);
        let texts: Vec<String> = read.entries.iter().map(LogEntry::content_text).collect();
        assert_eq!(texts, ["before", "after"]);
    }

    #[tokio::test]
    async fn a_failure_at_a_line_boundary_keeps_the_lines_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let log =
            ConversationLog::open(dir.path(), LogConfig::default().flush(Flush::EachLine)).unwrap();
        inject(&log, 0, std::io::ErrorKind::StorageFull);
        log.append(entry("refused")).await.unwrap();
        assert!(log.flush().await.is_err());
        assert_eq!(log.failed(), 1);
        // The flush after says nothing more went wrong.
        log.append(entry("kept")).await.unwrap();
        log.flush().await.unwrap();
        let read = LogReader::new(dir.path())
            .day(Utc::now().date_naive())
            .unwrap();
        let texts: Vec<String> = read.entries.iter().map(LogEntry::content_text).collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!(texts[0].contains("1 lines were lost"), "{texts:?}");
        assert_eq!(texts[1], "kept");
    }
}
