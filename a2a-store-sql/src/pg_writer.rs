//! The PostgreSQL writer: writes waiting at the same moment commit together.
//!
//! Every PostgreSQL commit waits for its log record to reach the disk, and
//! costs the server a transaction's bookkeeping. A server busy with many
//! small tasks makes several writes per task, each a transaction of its own
//! when run straight on the pool, so the database spends its time on commits
//! rather than on the writes. Here writes are queued, and each lane takes
//! what waits in its queue, runs it in arrival order in one transaction on
//! one connection, and commits once: a batch costs one flush however many
//! writes it holds. Each writer is answered only after the commit that holds
//! its write.
//!
//! A batch holds the locks of all its writes until it commits, so two
//! batches writing rows of the same tasks' count shards in another order
//! would wait for each other. The lanes therefore split the work by the
//! schema's count shard of each task ([`count_shard`], the same function as
//! the schema's `a2a_count_shard`): a task's rows, its job, its events and
//! its owner's count rows of its shard are only ever written by its lane,
//! and the lanes never wait for one another. A write of many tasks' rows (a
//! node's heartbeat) runs alone, beside the lanes.
//!
//! Consecutive writes of one kind in a batch, each of another task, run as
//! one statement when the kind has a set form ([`ManyForm`]): the form takes
//! each bind as an array of the writes' values, and returns the position of
//! each write that changed its rows. A batch of writes then costs
//! PostgreSQL one statement's round trip, parse and executor start, and one
//! pass over each table's indexes, instead of one per write.
//!
//! A statement error in a batch (a lock wait cut short, a constraint) rolls
//! the batch back, and its writes are run again one by one, so one bad write
//! never fails its neighbours. An error of the connection fails the whole
//! batch (each caller retries, as for any backend error).

use std::time::{Duration, Instant};

use a2a_server::store::StoreError;
use md5::{Digest as _, Md5};
use sqlx::postgres::{PgArguments, PgConnection};
use sqlx::query::{Query, QueryScalar};
use sqlx::{Connection as _, PgPool, Postgres};
use tokio::sync::{mpsc, oneshot};

use crate::common::{Bind, WriteScope, backend};

/// The most writes in one transaction (bounds how long a batch holds its
/// locks, and how much one failing write makes its batch redo).
const MAX_BATCH: usize = 64;
/// Writes that may wait for a lane before senders wait for room.
const QUEUE: usize = 1024;
/// Batches in flight at once, each on a connection of the pool. Divides the
/// schema's 32 count shards, so that each shard has one lane. With set
/// statements, fewer and larger batches cost the database less: measured
/// with PostgreSQL on the server's machine (2 cores, 64 connections), 4
/// lanes served 4,871 to 5,032 SendMessage/s, 2 lanes 5,396 to 6,882, one
/// lane 5,431 to 6,108; two keep a second batch running while one commits.
const LANES: usize = 2;
/// The schema's count shards (`a2a_count_shard` returns 0 to 31).
const COUNT_SHARDS: u8 = 32;

/// The count shard of task `task_id`, as the schema's `a2a_count_shard`
/// computes it: the first byte of the MD5 digest of its id, modulo 32.
pub(crate) fn count_shard(task_id: &str) -> u8 {
    Md5::digest(task_id.as_bytes())[0] % COUNT_SHARDS
}

/// The set form of a write statement: the same writes for many tasks in one
/// statement. A form belongs to one statement only, so writes of one form
/// are writes of one statement.
///
/// Its `$N` is the array of the writes' `$N` values, in the writes' order; it
/// returns one row per changed write, holding that write's 1-based position
/// (a write's single statement changes one row of its last table, or none).
#[derive(Debug)]
pub(crate) struct ManyForm {
    /// The statement.
    pub(crate) sql: &'static str,
    /// Where the task id is among a write's binds: writes of one task never
    /// share a statement (the second may depend on the first).
    pub(crate) task_id_at: usize,
}

/// One statement, `$N` parameters bound from `binds[N - 1]`.
pub(crate) struct Queued {
    sql: &'static str,
    /// Its set form, if it has one.
    many: Option<&'static ManyForm>,
    binds: Vec<Bind>,
    /// When it was queued: its wait for a connection counts from here.
    queued_at: Instant,
    done: oneshot::Sender<Result<u64, StoreError>>,
}

/// The sending side of the writer; cheap to clone. The lanes end when the
/// last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct PgWriter {
    lanes: Vec<mpsc::Sender<Queued>>,
    pool: PgPool,
}

impl PgWriter {
    /// Starts the lanes on `pool` (on the current Tokio runtime).
    pub(crate) fn start(pool: PgPool) -> PgWriter {
        let lanes = (0..LANES)
            .map(|_| {
                let (queue, writes) = mpsc::channel(QUEUE);
                tokio::spawn(lane(pool.clone(), writes));
                queue
            })
            .collect();
        PgWriter { lanes, pool }
    }

    /// Runs `sql` with `binds`, which change the rows `scope` says: a task's
    /// in the next batch of its lane, many tasks' alone. Returns once it is
    /// committed (or failed), with the rows it changed.
    pub(crate) async fn write(
        &self,
        scope: WriteScope<'_>,
        sql: &'static str,
        binds: Vec<Bind>,
    ) -> Result<u64, StoreError> {
        let WriteScope::Task(task_id) = scope else {
            return statement(sql, &binds)
                .execute(&self.pool)
                .await
                .map(|done| done.rows_affected())
                .map_err(backend);
        };
        self.write_in_shard(count_shard(task_id), sql, None, binds)
            .await
    }

    /// Runs `sql` with `binds`, which change only rows of tasks of count
    /// shard `shard`, in the next batch of its lane (with the lane's other
    /// writes of `sql` in one statement of set form `many`, if given).
    pub(crate) async fn write_in_shard(
        &self,
        shard: u8,
        sql: &'static str,
        many: Option<&'static ManyForm>,
        binds: Vec<Bind>,
    ) -> Result<u64, StoreError> {
        let lane = &self.lanes[usize::from(shard) % LANES];
        let (done, answer) = oneshot::channel();
        let stopped = || StoreError::Backend("the PostgreSQL writer has stopped".into());
        let queued_at = Instant::now();
        lane.send(Queued {
            sql,
            many,
            binds,
            queued_at,
            done,
        })
        .await
        .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

impl Queued {
    /// A write queued by nobody (its answer goes nowhere), for running
    /// batches by hand.
    #[cfg(test)]
    pub(crate) fn unanswered(
        sql: &'static str,
        many: Option<&'static ManyForm>,
        binds: Vec<Bind>,
    ) -> Queued {
        Queued {
            sql,
            many,
            binds,
            queued_at: Instant::now(),
            done: oneshot::channel().0,
        }
    }
}

/// Takes what waits in its queue, runs it, answers; ends when every sender
/// is gone.
async fn lane(pool: PgPool, mut writes: mpsc::Receiver<Queued>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while let Some(first) = writes.recv().await {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match writes.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        run(&pool, &mut batch).await;
    }
}

/// Runs `batch` and answers each of its writes; leaves it empty.
async fn run(pool: &PgPool, batch: &mut Vec<Queued>) {
    // A write waits for a connection no longer than the pool lets a caller
    // wait, counted from when it was queued: while the database is down,
    // writes queued behind a batch that waits out the pool's timeout must
    // not wait it out once more.
    let oldest = batch.iter().map(|queued| queued.queued_at).min();
    let waited = oldest.map_or(Duration::ZERO, |at| at.elapsed());
    let patience = pool.options().get_acquire_timeout().saturating_sub(waited);
    let acquired = match tokio::time::timeout(patience, pool.acquire()).await {
        Ok(acquired) => acquired,
        Err(_) => Err(sqlx::Error::PoolTimedOut),
    };
    let mut conn = match acquired {
        Ok(conn) => conn,
        Err(err) => return fail_all(batch, &err),
    };
    if batch.len() == 1 {
        return run_alone(&mut conn, batch).await;
    }
    match run_batch(&mut conn, batch).await {
        Ok(results) => {
            for (queued, result) in batch.drain(..).zip(results) {
                let _ = queued.done.send(Ok(result));
            }
        }
        // Something in the batch failed and nothing of it was kept: each
        // write runs alone, and answers for itself.
        Err(err) if statement_error(&err) => run_alone(&mut conn, batch).await,
        Err(err) => fail_all(batch, &err),
    }
}

/// Runs each write of `batch` in a transaction of its own, answering each.
async fn run_alone(conn: &mut PgConnection, batch: &mut Vec<Queued>) {
    for queued in batch.drain(..) {
        let result = statement(queued.sql, &queued.binds)
            .execute(&mut *conn)
            .await
            .map(|done| done.rows_affected())
            .map_err(backend);
        let _ = queued.done.send(result);
    }
}

/// Answers every write of `batch` with `err`.
fn fail_all(batch: &mut Vec<Queued>, err: &sqlx::Error) {
    let message = err.to_string();
    for queued in batch.drain(..) {
        let _ = queued.done.send(Err(StoreError::Backend(message.clone())));
    }
}

/// Starts a batch's transaction. The lanes never wait for one another, but
/// a batch can still meet another holder of its rows: the nodes of a
/// cluster share the count rows, and tasks of one context in two lanes share
/// the context's count rows. Two such batches can each wait for a row the
/// other holds; PostgreSQL would find that only after `deadlock_timeout` (a
/// second, and only a superuser may lower it), so a batch waits for a lock
/// at most this long, then runs its writes one by one (each alone takes its
/// rows in key order and cannot deadlock).
///
/// A set form's plan is kept rather than made again for each batch: given
/// its arrays, PostgreSQL would plan each run for its length, finding that
/// cheaper than a plan for any length, and spend more on planning (1.5 ms
/// here) than on the writes. And it joins its writes to their rows by key
/// probes: a plan made once, often while the tables are still small, would
/// otherwise hash whole tables for each batch.
const BEGIN_BATCH: &str = "BEGIN; SET LOCAL lock_timeout = '50ms'; \
     SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_hashjoin = off; \
     SET LOCAL enable_mergejoin = off";

/// Runs every write of `batch` in one transaction; on an error nothing of
/// it is kept (the transaction rolls back when dropped unfinished).
pub(crate) async fn run_batch(
    conn: &mut PgConnection,
    batch: &[Queued],
) -> Result<Vec<u64>, sqlx::Error> {
    let mut tx = conn.begin_with(BEGIN_BATCH).await?;
    let mut results = Vec::with_capacity(batch.len());
    let mut rest = batch;
    while let Some(first) = rest.first() {
        let (run, after) = rest.split_at(set_run(rest));
        match first.many {
            Some(many) if run.len() > 1 => {
                let changed: Vec<i64> = set_statement(many.sql, run).fetch_all(&mut *tx).await?;
                let mut written = vec![0_u64; run.len()];
                for position in changed {
                    let slot = usize::try_from(position - 1)
                        .ok()
                        .and_then(|at| written.get_mut(at))
                        .ok_or_else(|| {
                            sqlx::Error::Protocol(format!(
                                "a set write answered for write {position} of {}",
                                run.len()
                            ))
                        })?;
                    *slot += 1;
                }
                results.extend(written);
            }
            _ => {
                let done = statement(first.sql, &first.binds).execute(&mut *tx).await?;
                results.push(done.rows_affected());
            }
        }
        rest = after;
    }
    tx.commit().await?;
    Ok(results)
}

/// How many writes from the start of `writes` run as one statement: those
/// of the first's set form (the same form, not an equal one) with binds of
/// the same types, up to the first
/// write of a task already among them (at least one).
pub(crate) fn set_run(writes: &[Queued]) -> usize {
    let Some((first, others)) = writes.split_first() else {
        return 0;
    };
    let Some(many) = first.many else {
        return 1;
    };
    fn task_id(queued: &Queued, at: usize) -> Option<&str> {
        match queued.binds.get(at) {
            Some(Bind::Text(id)) => Some(id.as_str()),
            _ => None,
        }
    }
    fn same_shape(one: &Queued, other: &Queued) -> bool {
        one.binds
            .iter()
            .map(std::mem::discriminant)
            .eq(other.binds.iter().map(std::mem::discriminant))
    }
    let Some(first_id) = task_id(first, many.task_id_at) else {
        return 1;
    };
    let mut ids = std::collections::HashSet::from([first_id]);
    let same = others
        .iter()
        .take_while(|queued| {
            queued.many.is_some_and(|other| std::ptr::eq(other, many))
                && same_shape(queued, first)
                && task_id(queued, many.task_id_at).is_some_and(|id| ids.insert(id))
        })
        .count();
    1 + same
}

/// `sql`, a set form, with each of `writes`' binds bound as the array of
/// their values (the writes' binds are of the same types, see [`set_run`]).
fn set_statement<'q>(
    sql: &'q str,
    writes: &'q [Queued],
) -> QueryScalar<'q, Postgres, i64, PgArguments> {
    /// The values of bind `at` of `writes` that `pick` takes.
    fn column<'q, T>(
        writes: &'q [Queued],
        at: usize,
        pick: impl Fn(&'q Bind) -> Option<T>,
    ) -> Vec<T> {
        writes
            .iter()
            .filter_map(|queued| queued.binds.get(at).and_then(&pick))
            .collect()
    }
    let mut query = sqlx::query_scalar(sql);
    let Some(first) = writes.first() else {
        return query;
    };
    for (at, bind) in first.binds.iter().enumerate() {
        query = match bind {
            Bind::Text(_) => query.bind(column(writes, at, |bind| match bind {
                Bind::Text(v) => Some(v.as_str()),
                _ => None,
            })),
            Bind::I32(_) => query.bind(column(writes, at, |bind| match bind {
                Bind::I32(v) => Some(*v),
                _ => None,
            })),
            Bind::I64(_) => query.bind(column(writes, at, |bind| match bind {
                Bind::I64(v) => Some(*v),
                _ => None,
            })),
            Bind::OptI64(_) => query.bind(column(writes, at, |bind| match bind {
                Bind::OptI64(v) => Some(*v),
                _ => None,
            })),
            Bind::OptText(_) => query.bind(column(writes, at, |bind| match bind {
                Bind::OptText(v) => Some(v.as_deref()),
                _ => None,
            })),
            Bind::OptBytes(_) => query.bind(column(writes, at, |bind| match bind {
                Bind::OptBytes(v) => Some(v.as_deref()),
                _ => None,
            })),
        };
    }
    query
}

/// Whether `err` is the database refusing a statement (the connection is
/// fine, and the batch's writes may succeed alone) rather than the
/// connection failing.
fn statement_error(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(_))
}

/// `sql` with `binds` bound in order (borrowed: a write rerun alone after
/// its batch failed binds them again).
fn statement<'q>(sql: &'q str, binds: &'q [Bind]) -> Query<'q, Postgres, PgArguments> {
    let mut query = sqlx::query(sql);
    for bind in binds {
        query = match bind {
            Bind::Text(v) => query.bind(v.as_str()),
            Bind::I32(v) => query.bind(*v),
            Bind::I64(v) => query.bind(*v),
            Bind::OptI64(v) => query.bind(*v),
            Bind::OptText(v) => query.bind(v.as_deref()),
            Bind::OptBytes(v) => query.bind(v.as_deref()),
        };
    }
    query
}

#[cfg(test)]
mod tests {
    use super::count_shard;
    use crate::PostgresStore;
    use crate::postgres::tests::admin;

    /// The writer's shard of a task is the schema's, for ids of every kind:
    /// otherwise two lanes would share count rows and wait for each other.
    #[tokio::test]
    async fn the_writer_s_count_shard_is_the_schema_s() {
        let Some((mut admin, base)) = admin().await else {
            return;
        };
        let schema = format!("a2a_shard_{}", a2a_core::new_id().replace('-', ""));
        sqlx::query(&format!("CREATE SCHEMA {schema}"))
            .execute(&mut admin)
            .await
            .expect("a schema");
        let options = base.options([("search_path", schema.as_str())]);
        let store = PostgresStore::connect_with(options, None).await;
        let mut ids: Vec<String> = vec![
            String::new(),
            "task-1".into(),
            "ÿ naïve 任务 🚀".into(),
            "0".repeat(300),
        ];
        ids.extend((0..200).map(|_| a2a_core::new_id()));
        let mut mismatches = Vec::new();
        if let Ok(store) = &store {
            for id in &ids {
                let schema_s: i16 = sqlx::query_scalar("SELECT a2a_count_shard($1)")
                    .bind(id)
                    .fetch_one(store.pool())
                    .await
                    .expect("the schema's shard");
                if i16::from(count_shard(id)) != schema_s {
                    mismatches.push((id.clone(), count_shard(id), schema_s));
                }
            }
            store.close().await;
        }
        sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
            .execute(&mut admin)
            .await
            .expect("dropping the schema");
        store.expect("a store");
        assert!(mismatches.is_empty(), "{mismatches:?}");
    }
}
