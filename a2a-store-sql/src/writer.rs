//! Group commit for SQLite task writes.
//!
//! SQLite commits one transaction at a time, and every commit writes each
//! page it changed to the log. Task writes waiting at the same moment are
//! therefore run together, in arrival order, in one transaction on the write
//! connection: the pages they share (index leaves, the event log's last page)
//! are written once per batch instead of once per write. Each writer is
//! answered only after the commit that holds its write.
//!
//! A statement error in a batch rolls it back, and its writes are run again
//! one by one, so one bad write never fails its neighbours.

use a2a_server::store::StoreError;
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use crate::common::{Bind, backend, bind_all};

/// The most writes in one transaction (bounds how long a batch holds the writer).
const MAX_BATCH: usize = 64;
/// Writes that may wait for the writer before senders wait for room.
const QUEUE: usize = 1024;

struct Write {
    sql: &'static str,
    binds: Vec<Bind>,
    done: oneshot::Sender<Result<u64, sqlx::Error>>,
}

/// The sending side of the group-commit writer; cheap to clone. The writer
/// stops when the last clone is dropped.
#[derive(Debug, Clone)]
pub(crate) struct TaskWriter {
    queue: mpsc::Sender<Write>,
}

impl std::fmt::Debug for Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Write")
            .field("sql", &self.sql)
            .finish_non_exhaustive()
    }
}

impl TaskWriter {
    /// Starts the writer on `pool` (the store's one write connection).
    pub(crate) fn start(pool: SqlitePool) -> Self {
        let (queue, writes) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, writes));
        TaskWriter { queue }
    }

    /// Runs `sql` with `binds` in the next batch; returns the rows it changed.
    pub(crate) async fn write(
        &self,
        sql: &'static str,
        binds: Vec<Bind>,
    ) -> Result<u64, StoreError> {
        let (done, answer) = oneshot::channel();
        let stopped = || StoreError::Backend("the SQLite writer has stopped".into());
        self.queue
            .send(Write { sql, binds, done })
            .await
            .map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?.map_err(backend)
    }
}

async fn run(pool: SqlitePool, mut writes: mpsc::Receiver<Write>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while writes.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let mut conn = match pool.acquire().await {
            Ok(conn) => conn,
            Err(err) => {
                let message = err.to_string();
                for write in batch.drain(..) {
                    let _ = write.done.send(Err(sqlx::Error::Protocol(message.clone())));
                }
                continue;
            }
        };
        if batch.len() == 1 {
            for write in batch.drain(..) {
                let result = execute(&mut conn, write.sql, write.binds).await;
                let _ = write.done.send(result);
            }
            continue;
        }
        match run_batch(&mut conn, &batch).await {
            Ok(results) => {
                for (write, result) in batch.drain(..).zip(results) {
                    let _ = write.done.send(Ok(result));
                }
            }
            Err(_) => {
                // Something in the batch failed and nothing of it was kept:
                // each write runs alone, and answers for itself.
                for write in batch.drain(..) {
                    let result = execute(&mut conn, write.sql, write.binds).await;
                    let _ = write.done.send(result);
                }
            }
        }
    }
}

/// Runs every write of `batch` in one transaction; on any error rolls back.
async fn run_batch(conn: &mut SqliteConnection, batch: &[Write]) -> Result<Vec<u64>, sqlx::Error> {
    sqlx::query("BEGIN").execute(&mut *conn).await?;
    let mut results = Vec::with_capacity(batch.len());
    for write in batch {
        let mut query = sqlx::query(write.sql);
        for bind in &write.binds {
            query = match bind {
                Bind::Text(v) => query.bind(v.as_str()),
                Bind::I32(v) => query.bind(*v),
                Bind::I64(v) => query.bind(*v),
                Bind::OptI64(v) => query.bind(*v),
                Bind::OptText(v) => query.bind(v.as_deref()),
                Bind::OptBytes(v) => query.bind(v.as_deref()),
            };
        }
        match query.execute(&mut *conn).await {
            Ok(done) => results.push(done.rows_affected()),
            Err(err) => {
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                return Err(err);
            }
        }
    }
    if let Err(err) = sqlx::query("COMMIT").execute(&mut *conn).await {
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        return Err(err);
    }
    Ok(results)
}

/// Runs one write in its own (implicit) transaction.
async fn execute(
    conn: &mut SqliteConnection,
    sql: &'static str,
    binds: Vec<Bind>,
) -> Result<u64, sqlx::Error> {
    let done = bind_all!(sqlx::query(sql), binds).execute(conn).await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use sqlx::sqlite::SqlitePoolOptions;

    #[tokio::test]
    async fn a_failing_write_fails_alone_and_its_batch_still_lands() {
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (a INTEGER PRIMARY KEY)")
            .execute(&pool)
            .await
            .unwrap();
        let writer = TaskWriter::start(pool.clone());
        let insert = "INSERT INTO t (a) VALUES ($1)";
        // Sent together, so they meet in one batch; the middle one breaks the key.
        let (first, duplicate, third) = tokio::join!(
            writer.write(insert, vec![Bind::I64(1)]),
            writer.write(insert, vec![Bind::I64(1)]),
            writer.write(insert, vec![Bind::I64(2)]),
        );
        assert_eq!(first.unwrap(), 1);
        assert!(matches!(duplicate, Err(StoreError::Backend(_))));
        assert_eq!(third.unwrap(), 1);
        let rows: Vec<i64> = sqlx::query_scalar("SELECT a FROM t ORDER BY a")
            .fetch_all(&pool)
            .await
            .unwrap();
        assert_eq!(rows, [1, 2]);
    }
}
