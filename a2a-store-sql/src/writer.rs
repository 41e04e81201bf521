//! The SQLite writer: one connection on a thread of its own, committing
//! writes in groups.
//!
//! SQLite commits one transaction at a time, and every commit writes each
//! page it changed to the log. Writes waiting at the same moment are
//! therefore run together, in arrival order, in one transaction: the pages
//! they share (index leaves, the event log's last page) are written once per
//! batch instead of once per write. Each writer is answered only after the
//! commit that holds its write.
//!
//! The connection lives on a dedicated thread and runs each statement in
//! place. An async driver that hands every statement to a worker thread and
//! back pays two thread switches per statement, which on a busy server cost
//! far more than SQLite's own work; here a whole batch costs one wake-up of
//! the thread and one answer per write. The thread is scheduled not to
//! preempt the async workers that feed it (see [`crate::scheduling`]), so on
//! a shared core it wakes to a full queue rather than to the first write of
//! many.
//!
//! A statement error in a batch rolls it back, and its writes are run again
//! one by one, so one bad write never fails its neighbours.

use std::path::Path;
use std::time::Duration;

use a2a_server::store::StoreError;
use rusqlite::{Connection, OpenFlags, Statement};
use tokio::sync::{mpsc, oneshot};

use crate::common::Bind;
use crate::scheduling;

/// The most writes in one transaction (bounds how long a batch holds the
/// writer, and how much one failing write makes its batch redo).
const MAX_BATCH: usize = 256;
/// A batch of this many writes is worth committing without first letting
/// the async workers queue more (see `run`).
const FULL_ENOUGH: usize = 16;
/// Writes that may wait for the writer before senders wait for room.
const QUEUE: usize = 4096;
/// The writer's page cache, in KiB (negative for SQLite: a size, not pages).
const WRITER_CACHE_KIB: i64 = -65_536;
/// About how many log pages pass between checkpoints.
const CHECKPOINT_PAGES: i64 = 4_000;

/// A write, as the writer thread runs it.
#[derive(Debug)]
pub(crate) enum Write {
    /// One statement; answered with the rows it changed.
    Statement {
        /// `$N` or `?N` parameters, bound from `binds[N - 1]`.
        sql: &'static str,
        /// The values.
        binds: Vec<Bind>,
    },
    /// A task row write, which changes the row or (its guards refusing it)
    /// nothing; then, only if it wrote, the event appended to the task's log
    /// and the job change, all in the same transaction. Answered with 1 if
    /// it wrote, 0 if refused.
    Task {
        /// The task statement.
        sql: &'static str,
        /// Its values.
        binds: Vec<Bind>,
        /// A check the statement runs only after.
        guard: Option<JobGuard>,
        /// Which row the statement writes, for the event's append.
        row: TaskRow,
        /// The event's JSON.
        event: String,
        /// The job change: its statement and values.
        job: Option<(&'static str, Vec<Bind>)>,
    },
}

/// A check of the task's job that a task insert waits on, run just before it
/// in the same transaction (where no other write can come between).
///
/// Not a `WHERE` of the insert itself: SQLite runs `INSERT ... SELECT ...
/// WHERE` into a table with triggers (the task counts) through a temporary
/// table of the selected rows, while `INSERT ... VALUES` writes in place.
#[derive(Debug)]
pub(crate) struct JobGuard {
    /// A query of the job of the task bound as ?1.
    pub(crate) sql: &'static str,
    /// The job's task.
    pub(crate) task_id: String,
    /// Whether the insert runs when the query finds a row (else when it
    /// finds none).
    pub(crate) when_found: bool,
}

/// The row a task statement writes, found without a `RETURNING` clause:
/// SQLite gathers returned rows in a temporary table of their own (a b-tree
/// opened, a page zeroed, about 10,000 instructions a statement), while
/// the connection already knows the row an insert made.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskRow {
    /// An insert: the connection's last inserted row, at version 1.
    Inserted,
    /// An update of the row of the task id bound as parameter `N` (from 1):
    /// its seq and new version are read back as the event is appended.
    Updated(usize),
}

struct Queued {
    write: Write,
    done: oneshot::Sender<Result<u64, StoreError>>,
}

/// How the writer's connection is set up.
#[derive(Debug, Clone)]
pub(crate) struct WriterOptions {
    /// `synchronous = FULL` instead of NORMAL.
    pub(crate) full_sync: bool,
    /// How long a write waits for another connection's write lock.
    pub(crate) busy_timeout: Duration,
}

/// The sending side of the writer; cheap to clone. The writer's thread ends,
/// closing its connection, when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct TaskWriter {
    queue: mpsc::Sender<Queued>,
}

impl TaskWriter {
    /// Opens a write connection to the database at `path` (which exists and
    /// is migrated) and starts the writer's thread on it.
    pub(crate) fn start(path: &Path, options: &WriterOptions) -> Result<Self, rusqlite::Error> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(options.busy_timeout)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(
            None,
            "synchronous",
            if options.full_sync { "FULL" } else { "NORMAL" },
        )?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        // A statement that may need undoing inside a batch keeps its undo
        // pages in memory, not in a temporary file.
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        // Index pages the writer revisits stay in its cache instead of being
        // read back from the OS for every batch.
        conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB)?;
        // Checkpoints run on a thread of their own (below), beside the
        // writer; the writer checkpoints by itself only when the log grows
        // far past that, as a bound if the checkpointer falls behind.
        conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES * 8)?;

        let checkpointer = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        checkpointer.busy_timeout(options.busy_timeout)?;
        let (poke, pokes) = std::sync::mpsc::sync_channel(1);
        let thread_error = |e: std::io::Error| rusqlite::Error::ToSqlConversionFailure(Box::new(e));
        std::thread::Builder::new()
            .name("a2a-sqlite-checkpoint".into())
            .spawn(move || checkpoint(&checkpointer, &pokes))
            .map_err(thread_error)?;
        let (queue, writes) = mpsc::channel(QUEUE);
        std::thread::Builder::new()
            .name("a2a-sqlite-writer".into())
            .spawn(move || {
                scheduling::run_calling_thread_as_batch();
                run(&conn, writes, &poke)
            })
            .map_err(thread_error)?;
        Ok(TaskWriter { queue })
    }

    /// Runs `write` in the next batch; returns once it is committed (or
    /// failed), with the rows it changed.
    pub(crate) async fn write(&self, write: Write) -> Result<u64, StoreError> {
        let (done, answer) = oneshot::channel();
        let stopped = || StoreError::Backend("the SQLite writer has stopped".into());
        self.queue
            .send(Queued { write, done })
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// Copies the log into the database each time the writer pokes, without
/// holding up the writer (a PASSIVE checkpoint takes no write lock). Ends
/// when the writer does.
fn checkpoint(conn: &Connection, pokes: &std::sync::mpsc::Receiver<()>) {
    while pokes.recv().is_ok() {
        if let Err(err) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
            tracing::warn!(error = %err, "checkpointing the SQLite log failed; retrying later");
        }
    }
}

fn run(
    conn: &Connection,
    mut writes: mpsc::Receiver<Queued>,
    checkpointer: &std::sync::mpsc::SyncSender<()>,
) {
    let mut statements = Statements::new(conn);
    let mut batch = Vec::with_capacity(MAX_BATCH);
    // Writes committed since the checkpointer was last poked: each changes a
    // few pages, so this many writes is about a checkpoint's worth of log.
    let mut since_checkpoint = 0;
    while let Some(first) = writes.blocking_recv() {
        batch.push(first);
        if writes.len() + 1 < FULL_ENOUGH {
            // A short batch on a core shared with the async workers: they
            // may hold more writes about to be queued. One yield lets them
            // queue, and costs a system call where nothing else is waiting
            // to run (an idle or a many-core machine).
            std::thread::yield_now();
        }
        while batch.len() < MAX_BATCH {
            match writes.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        since_checkpoint += batch.len() as i64;
        if since_checkpoint >= CHECKPOINT_PAGES {
            since_checkpoint = 0;
            // Full: a checkpoint is already due, this one folds into it.
            let _ = checkpointer.try_send(());
        }
        match run_batch(&mut statements, &batch) {
            Ok(results) => {
                for (queued, result) in batch.drain(..).zip(results) {
                    let _ = queued.done.send(Ok(result));
                }
            }
            Err(err) if batch.len() > 1 && !whole_database(&err) => {
                // Something in the batch failed and nothing of it was kept:
                // each write runs alone, and answers for itself.
                for queued in batch.drain(..) {
                    let result = run_batch(&mut statements, std::slice::from_ref(&queued))
                        .map(|results| results[0])
                        .map_err(backend);
                    let _ = queued.done.send(result);
                }
            }
            Err(err) => {
                let message = err.to_string();
                for queued in batch.drain(..) {
                    let _ = queued.done.send(Err(StoreError::Backend(message.clone())));
                }
            }
        }
    }
}

/// Whether `err` is about the database rather than one write in a batch:
/// busy (another connection held the lock past the busy timeout), full,
/// or unable to do I/O. Every write of the batch would meet it alone too, so
/// they all get it at once (retried above, with backoff), instead of one by
/// one, each waiting out the busy timeout while the writer holds the rest.
fn whole_database(err: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode as C;
    matches!(
        err.sqlite_error_code(),
        Some(
            C::DatabaseBusy | C::DatabaseLocked | C::DiskFull | C::SystemIoFailure | C::CannotOpen
        )
    )
}

fn backend(err: rusqlite::Error) -> StoreError {
    StoreError::Backend(err.to_string())
}

/// Runs every write of `batch` in one transaction; on any error rolls back.
fn run_batch(
    statements: &mut Statements<'_>,
    batch: &[Queued],
) -> Result<Vec<u64>, rusqlite::Error> {
    // IMMEDIATE takes the write lock now (waiting up to the busy timeout for
    // another connection's write), so the commit cannot fail on it later.
    statements.get(BEGIN)?.statement.raw_execute()?;
    let mut results = Vec::with_capacity(batch.len());
    for queued in batch {
        match apply(statements, &queued.write) {
            Ok(result) => results.push(result),
            Err(err) => {
                let _ = statements.conn.execute_batch("ROLLBACK");
                return Err(err);
            }
        }
    }
    if let Err(err) = statements
        .get(COMMIT)
        .and_then(|commit| commit.statement.raw_execute())
    {
        let _ = statements.conn.execute_batch("ROLLBACK");
        return Err(err);
    }
    Ok(results)
}

fn apply(statements: &mut Statements<'_>, write: &Write) -> Result<u64, rusqlite::Error> {
    match write {
        Write::Statement { sql, binds } => Ok(statements.bound(sql, binds)?.raw_execute()? as u64),
        Write::Task {
            sql,
            binds,
            guard,
            row,
            event,
            job,
        } => {
            if let Some(guard) = guard {
                let found = statements
                    .get(guard.sql)?
                    .statement
                    .exists([guard.task_id.as_str()])?;
                if found != guard.when_found {
                    return Ok(0);
                }
            }
            // Only the statement's own rows count, not its triggers'.
            if statements.bound(sql, binds)?.raw_execute()? == 0 {
                return Ok(0);
            }
            match *row {
                // A trigger's inserts leave the last inserted row as it was
                // once the statement ends.
                TaskRow::Inserted => {
                    let seq = statements.conn.last_insert_rowid();
                    statements
                        .get(APPEND_EVENT)?
                        .statement
                        .execute(rusqlite::params![seq, 1, event])?
                }
                TaskRow::Updated(number) => {
                    let Some(Bind::Text(task_id)) = binds.get(number.wrapping_sub(1)) else {
                        return Err(rusqlite::Error::InvalidParameterCount(number, binds.len()));
                    };
                    // The update just wrote that row: an event with no row
                    // to go with fails the write (no row found) rather than
                    // go missing. Read first, then one row inserted: an
                    // `INSERT ... SELECT` would count as a write of many
                    // rows, and be given a statement journal.
                    let (seq, version): (i64, i64) = statements
                        .get(UPDATED_ROW)?
                        .statement
                        .query_row([task_id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))?;
                    statements
                        .get(APPEND_EVENT)?
                        .statement
                        .execute(rusqlite::params![seq, version, event])?
                }
            };
            if let Some((sql, binds)) = job {
                statements.bound(sql, binds)?.raw_execute()?;
            }
            Ok(1)
        }
    }
}

const BEGIN: &str = "BEGIN IMMEDIATE";
const COMMIT: &str = "COMMIT";
/// Appends a task's event: the task's seq, the version the write made, the
/// event's JSON.
const APPEND_EVENT: &str = "INSERT INTO task_events (task_seq, version, event) VALUES (?1, ?2, ?3)";
/// The seq and version of a task's row (by its unique id): where the event
/// of an update goes.
const UPDATED_ROW: &str = "SELECT seq, version FROM tasks WHERE task_id = ?1";

/// The writer's prepared statements, each prepared once and kept for the
/// connection's life, found by the address of its SQL text.
///
/// Every statement the writer runs is a `&'static str` of the store's, so
/// its address names it: rusqlite's statement cache instead hashes the whole
/// text on every use and again when the statement goes back, and parsing
/// each parameter's name on every bind came to as much again (together
/// about 13,000 instructions a SendMessage on SQLite).
struct Statements<'c> {
    conn: &'c Connection,
    /// By address and length of the SQL text; a few dozen at most, so a
    /// scan finds one faster than a hash would.
    prepared: Vec<((usize, usize), Prepared<'c>)>,
}

/// A prepared statement and, for each of its parameters in order, which
/// value of a write's binds goes there.
struct Prepared<'c> {
    statement: Statement<'c>,
    /// `binds[sources[i]]` is bound to parameter `i + 1`.
    sources: Vec<usize>,
}

impl<'c> Statements<'c> {
    fn new(conn: &'c Connection) -> Self {
        Statements {
            conn,
            prepared: Vec::new(),
        }
    }

    /// The statement of `sql`, prepared on first use.
    fn get(&mut self, sql: &'static str) -> Result<&mut Prepared<'c>, rusqlite::Error> {
        let key = (sql.as_ptr() as usize, sql.len());
        let index = match self.prepared.iter().position(|(k, _)| *k == key) {
            Some(index) => index,
            None => {
                let statement = self.conn.prepare(sql)?;
                // `$N` or `?N` names its value by number; an unnamed `?`
                // takes the next.
                let sources = (1..=statement.parameter_count())
                    .map(|index| {
                        statement
                            .parameter_name(index)
                            .and_then(|name| name.get(1..))
                            .and_then(|digits| digits.parse::<usize>().ok())
                            .unwrap_or(index)
                            .wrapping_sub(1)
                    })
                    .collect();
                self.prepared.push((key, Prepared { statement, sources }));
                self.prepared.len() - 1
            }
        };
        Ok(&mut self.prepared[index].1)
    }

    /// The statement of `sql` with each numbered parameter (`$N` or `?N`)
    /// bound to `binds[N - 1]`.
    fn bound(
        &mut self,
        sql: &'static str,
        binds: &[Bind],
    ) -> Result<&mut Statement<'c>, rusqlite::Error> {
        let Prepared { statement, sources } = self.get(sql)?;
        for (index, &source) in sources.iter().enumerate() {
            let bind = binds
                .get(source)
                .ok_or(rusqlite::Error::InvalidParameterCount(
                    source.wrapping_add(1),
                    binds.len(),
                ))?;
            let index = index + 1;
            match bind {
                Bind::Text(v) => statement.raw_bind_parameter(index, v.as_str())?,
                Bind::I32(v) => statement.raw_bind_parameter(index, v)?,
                Bind::I64(v) => statement.raw_bind_parameter(index, v)?,
                Bind::OptI64(v) => statement.raw_bind_parameter(index, v)?,
                Bind::OptText(v) => statement.raw_bind_parameter(index, v.as_deref())?,
                Bind::OptBytes(v) => statement.raw_bind_parameter(index, v.as_deref())?,
            }
        }
        Ok(statement)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A new database holding `schema`, in a directory that lives as long
    /// as the returned guard.
    fn database_with(schema: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(schema)
            .unwrap();
        (dir, path)
    }

    /// A write of `a` into table `t`.
    fn insert(a: i64) -> Write {
        Write::Statement {
            sql: "INSERT INTO t (a) VALUES ($1)",
            binds: vec![Bind::I64(a)],
        }
    }

    fn options() -> WriterOptions {
        WriterOptions {
            full_sync: false,
            busy_timeout: Duration::from_secs(1),
        }
    }

    #[tokio::test]
    async fn a_failing_write_fails_alone_and_its_batch_still_lands() {
        let (_dir, path) = database_with("CREATE TABLE t (a INTEGER PRIMARY KEY)");
        let writer = TaskWriter::start(&path, &options()).unwrap();
        // Sent together, so they meet in one batch; the middle one breaks the key.
        let (first, duplicate, third) = tokio::join!(
            writer.write(insert(1)),
            writer.write(insert(1)),
            writer.write(insert(2)),
        );
        assert_eq!(first.unwrap(), 1);
        assert!(matches!(duplicate, Err(StoreError::Backend(_))));
        assert_eq!(third.unwrap(), 1);
        let conn = Connection::open(&path).unwrap();
        let mut rows = conn.prepare("SELECT a FROM t ORDER BY a").unwrap();
        let rows: Vec<i64> = rows
            .query_map([], |row| row.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rows, [1, 2]);
    }

    /// A lock held past the busy timeout fails a whole batch at once (each
    /// write alone would wait out the timeout again, holding the others),
    /// with SQLite's reason; once the lock is released, writes land.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_held_lock_fails_a_batch_at_once_then_writes_land() {
        let (_dir, path) = database_with("CREATE TABLE t (a INTEGER PRIMARY KEY)");
        let writer = TaskWriter::start(
            &path,
            &WriterOptions {
                full_sync: false,
                busy_timeout: Duration::from_millis(200),
            },
        )
        .unwrap();
        let locker = Connection::open(&path).unwrap();
        locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let started = std::time::Instant::now();
        let writes: Vec<_> =
            futures::future::join_all((1..=8).map(|a| writer.write(insert(a)))).await;
        let took = started.elapsed();
        for write in &writes {
            match write {
                Err(StoreError::Backend(reason)) => assert!(reason.contains("locked"), "{reason}"),
                other => panic!("refused for the lock: {other:?}"),
            }
        }
        // Eight writes waited out one or two timeouts, not eight.
        assert!(took < Duration::from_millis(200 * 4), "{took:?}");
        locker.execute_batch("COMMIT").unwrap();
        assert_eq!(writer.write(insert(9)).await.unwrap(), 1);
    }

    /// The writer's thread does not preempt the workers that feed it (see
    /// `crate::scheduling`). Other tests' writers may not have set their
    /// policy yet; this one has, as it answered a write.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_writer_runs_as_a_batch_thread() {
        let (_dir, path) = database_with("CREATE TABLE t (a INTEGER PRIMARY KEY)");
        let writer = TaskWriter::start(&path, &options()).unwrap();
        writer.write(insert(1)).await.unwrap();
        let writers: Vec<u32> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|tid| {
                std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                    .is_ok_and(|name| name.trim_end() == "a2a-sqlite-writ")
            })
            .map(|tid| crate::scheduling::tests::policy_in(&format!("/proc/self/task/{tid}/stat")))
            .collect();
        assert!(
            writers.contains(&3),
            "writer threads' policies: {writers:?}"
        );
    }

    #[tokio::test]
    async fn parameters_bind_by_their_number_whatever_their_order() {
        let (_dir, path) = database_with("CREATE TABLE t (a INTEGER, b TEXT)");
        let writer = TaskWriter::start(&path, &options()).unwrap();
        writer
            .write(Write::Statement {
                sql: "INSERT INTO t (b, a) VALUES ($2, $1)",
                binds: vec![Bind::I64(7), Bind::Text("seven".into())],
            })
            .await
            .unwrap();
        let missing = writer
            .write(Write::Statement {
                sql: "INSERT INTO t (a, b) VALUES ($1, $3)",
                binds: vec![Bind::I64(1), Bind::Text("one".into())],
            })
            .await;
        assert!(
            matches!(missing, Err(StoreError::Backend(_))),
            "{missing:?}"
        );
        let conn = Connection::open(&path).unwrap();
        let row: (i64, String) = conn
            .query_row("SELECT a, b FROM t", [], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .unwrap();
        assert_eq!(row, (7, "seven".to_owned()));
    }
}
