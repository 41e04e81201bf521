//! Writing the log: a bounded queue to a writer thread, daily files, and the
//! archive.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, NaiveDate, Utc};
use tokio::sync::oneshot;

use crate::entry::{Line, LogEntry, new_entry_id};
use crate::{ARCHIVE_DIR, STREAM_DIR};

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
            Clock::System => Utc::now(),
            Clock::Tokio { start, anchor } => {
                let elapsed = tokio::time::Instant::now().saturating_duration_since(*anchor);
                *start + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::MAX)
            }
        }
    }
}

/// How a [`ConversationLog`] works. Defaults: a queue of 65,536 lines,
/// [`WhenFull::DropAndRecord`], [`Flush::Grouped`] of up to 4,096 lines or
/// 10 ms, no `fsync`, archive after 7 days, gzip archived days after 30.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LogConfig {
    /// Lines that may wait for the writer.
    pub queue: usize,
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
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            queue: 65_536,
            when_full: WhenFull::DropAndRecord,
            flush: Flush::Grouped {
                max_lines: 4_096,
                max_delay: std::time::Duration::from_millis(10),
            },
            sync: false,
            archive_after_days: 7,
            gzip_after_days: 30,
            clock: Clock::System,
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
/// buffer under a short lock, and the writer swaps the whole buffer out:
/// no allocation, channel message or wake-up per line.
#[derive(Default)]
struct Pending {
    /// Encoded lines, each ending in `\n`.
    bytes: Vec<u8>,
    /// How many lines `bytes` holds.
    lines: usize,
    /// The day of each run of lines in `bytes`, and where the run starts.
    days: Vec<(NaiveDate, usize)>,
    /// The time of the last line queued.
    last_t: Option<DateTime<Utc>>,
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
    /// The most lines in one group (1 with [`Flush::EachLine`]).
    max_lines: usize,
    dropped: AtomicU64,
    written: AtomicU64,
    pending: Mutex<Pending>,
    /// Wakes the writer.
    wake: Condvar,
    /// Wakes appenders waiting for room ([`WhenFull::Wait`]).
    room: tokio::sync::Notify,
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
    // appended in one call), so the data is still good.
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pending {
    /// Empty, with room for a burst of lines before the first reallocation.
    fn with_room() -> Pending {
        Pending {
            bytes: Vec::with_capacity(256 * 1024),
            ..Pending::default()
        }
    }
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
        if pending.lines >= self.config.queue.max(1) {
            return Err(Refused::Full);
        }
        let day = t.date_naive();
        if pending.days.last().is_none_or(|(last, _)| *last != day) {
            let start = pending.bytes.len();
            pending.days.push((day, start));
        }
        pending.bytes.extend_from_slice(json);
        pending.bytes.push(b'\n');
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
        Ok(())
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
    /// writer thread.
    pub fn open(data_dir: impl AsRef<Path>, config: LogConfig) -> Result<Self, LogError> {
        let dir = data_dir.as_ref().join(STREAM_DIR);
        std::fs::create_dir_all(dir.join(ARCHIVE_DIR))
            .map_err(io_error(format!("creating {}", dir.display())))?;
        let max_lines = match config.flush {
            Flush::EachLine => 1,
            Flush::Grouped { max_lines, .. } => max_lines.max(1),
        };
        let shared = Arc::new(Shared {
            dir,
            config,
            max_lines,
            dropped: AtomicU64::new(0),
            written: AtomicU64::new(0),
            pending: Mutex::new(Pending::with_room()),
            wake: Condvar::new(),
            room: tokio::sync::Notify::new(),
        });
        let writer = Writer {
            shared: shared.clone(),
            file: None,
            taken: Pending::with_room(),
            reported_dropped: 0,
            archived_as_of: None,
            last_t: None,
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

    /// The time now on the log's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.shared.config.clock.now()
    }

    /// Queues `entry` for writing and returns its id. Never waits for the
    /// disk; with [`WhenFull::Wait`] it waits for room in the queue.
    pub async fn append(&self, entry: LogEntry) -> Result<String, LogError> {
        let encoded = with_scratch(|json| {
            entry.write_json(json)?;
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
        let id = new_entry_id(line.t);
        let queued = with_scratch(|json| {
            line.write_json(&id, json);
            self.shared
                .try_queue(line.t, json)
                .map_err(|r| (r, json.clone()))
        });
        if let Err((refused, json)) = queued {
            self.refused(line.t, refused, json).await?;
        }
        Ok(id)
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

    /// Waits until every line queued before this call is in its file.
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

/// The path of `day`'s live file in `dir`.
pub(crate) fn day_file(dir: &Path, day: NaiveDate) -> PathBuf {
    dir.join(format!("{}.jsonl", day.format("%Y-%m-%d")))
}

/// The day a file name (`YYYY-MM-DD.jsonl` or `.jsonl.gz`) is for.
pub(crate) fn day_of_file(name: &str) -> Option<NaiveDate> {
    let stem = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".jsonl.gz"))?;
    NaiveDate::parse_from_str(stem, "%Y-%m-%d").ok()
}

struct Writer {
    shared: Arc<Shared>,
    /// The open file and its day.
    file: Option<(NaiveDate, File)>,
    /// What the writer took from [`Pending`] last (its buffers are swapped
    /// back and forth, so their memory is reused).
    taken: Pending,
    /// Dropped lines already written up as a line of their own.
    reported_dropped: u64,
    /// The day the last archive pass ran as of.
    archived_as_of: Option<NaiveDate>,
    /// The time of the last line written.
    last_t: Option<DateTime<Utc>>,
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
            let written = self.write_taken();
            let mut commands = std::mem::take(&mut self.taken.commands);
            for command in commands.drain(..) {
                match command {
                    Command::Flush(done) => {
                        let _ = done.send(written.clone());
                    }
                    Command::Archive(today, done) => {
                        let archived = self.archive(today);
                        let _ = done.send(archived.map_err(|e| e.to_string()));
                    }
                }
            }
            self.taken.commands = commands;
            self.report_dropped();
            // Waking for every line costs a thread switch and a system call
            // per line; waiting instead lets appenders queue without waking
            // anyone, and the next pass writes them in one go.
            if !gather.is_zero() && self.taken.lines < self.shared.max_lines {
                let mut pending = lock(&self.shared.pending);
                if !pending.closed && pending.lines < self.shared.max_lines {
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
        while pending.bytes.is_empty() && pending.commands.is_empty() && !pending.closed {
            pending.writer_idle = true;
            pending = self
                .shared
                .wake
                .wait(pending)
                .unwrap_or_else(PoisonError::into_inner);
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
        if let Some(t) = pending.last_t.take() {
            self.last_t = Some(t);
        }
        true
    }

    /// Writes the taken lines, each day's run to that day's file.
    fn write_taken(&mut self) -> Result<(), String> {
        let mut result = Ok(());
        let days = std::mem::take(&mut self.taken.days);
        let bytes = std::mem::take(&mut self.taken.bytes);
        for (n, &(day, start)) in days.iter().enumerate() {
            let end = days.get(n + 1).map_or(bytes.len(), |&(_, next)| next);
            if let Err(err) = self.write_day(day, &bytes[start..end]) {
                tracing::error!(error = %err, "writing the conversation log failed");
                result = Err(err.to_string());
            }
        }
        if result.is_ok() {
            self.shared
                .written
                .fetch_add(self.taken.lines as u64, Ordering::Relaxed);
        }
        self.taken.days = days;
        self.taken.bytes = bytes;
        result
    }

    /// Appends whole lines to `day`'s file (switching files when the day
    /// changes), and syncs if configured.
    fn write_day(&mut self, day: NaiveDate, lines: &[u8]) -> std::io::Result<()> {
        if self.file.as_ref().is_none_or(|(open, _)| *open != day) {
            self.file = None;
            if self.archived_as_of.is_none_or(|as_of| as_of < day) {
                if let Err(err) = self.archive(day) {
                    tracing::warn!(error = %err, "archiving old conversation log days failed");
                }
            }
            self.file = Some((day, open_for_append(&day_file(&self.shared.dir, day))?));
        }
        let Some((_, file)) = self.file.as_mut() else {
            return Ok(());
        };
        file.write_all(lines)?;
        if self.shared.config.sync {
            file.sync_data()?;
        }
        Ok(())
    }

    /// Writes up lines dropped since the last report as a line of its own.
    fn report_dropped(&mut self) {
        let dropped = self.shared.dropped.load(Ordering::Relaxed);
        if dropped == self.reported_dropped {
            return;
        }
        let lost = dropped - self.reported_dropped;
        self.reported_dropped = dropped;
        // Stamped as the last line written, so it lands in the same day's file.
        let t = self.last_t.unwrap_or_else(Utc::now);
        let entry = LogEntry::new(
            t,
            crate::EntryType::Error,
            "conversation-log",
            None,
            format!("the log's queue was full: {lost} lines were dropped"),
        )
        .meta("dropped", lost)
        .meta("droppedTotal", dropped);
        let mut json = Vec::new();
        let written = entry
            .write_json(&mut json)
            .map_err(std::io::Error::other)
            .and_then(|()| {
                json.push(b'\n');
                self.write_day(entry.t.date_naive(), &json)
            });
        if written.is_ok() {
            self.shared.written.fetch_add(1, Ordering::Relaxed);
        } else {
            tracing::error!(lost, "could not record dropped conversation log lines");
        }
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
        for entry in std::fs::read_dir(&self.shared.dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(day) = day_of_file(name) else {
                continue;
            };
            if name.ends_with(".jsonl") && day < archive_before {
                if self.file.as_ref().is_some_and(|(open, _)| *open == day) {
                    self.file = None;
                }
                std::fs::rename(entry.path(), archive_dir.join(name))?;
            }
        }
        for entry in std::fs::read_dir(&archive_dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(day) = day_of_file(name) else {
                continue;
            };
            if name.ends_with(".jsonl") && day < gzip_before {
                gzip_in_place(&entry.path())?;
            }
        }
        Ok(())
    }
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
