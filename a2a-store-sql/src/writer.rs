//! Group commit for SQLite task writes.
//!
//! SQLite commits one transaction at a time, and every commit writes each
//! page it changed to the log. Task writes waiting at the same moment are
//! therefore run together, in arrival order, in one transaction on the write
//! connection: the pages they share (index leaves, the event log's last page)
//! are written once per batch instead of once per write. Each writer is
//! answered only after the commit that holds its write.
//!
//! A write is a statement, optionally followed by a second one that runs only
//! if the first changed a row (a task write, then its job change), both in
//! the same transaction. A write the first statement refuses (no row
//! changed) has written nothing, so it needs no undo and leaves its batch be.
//! A statement error in a batch rolls it back, and its writes are run again
//! one by one, so one bad write never fails its neighbours.

use a2a_server::store::StoreError;
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use crate::common::{Bind, backend};

/// The most writes in one transaction (bounds how long a batch holds the writer).
const MAX_BATCH: usize = 64;
/// Writes that may wait for the writer before senders wait for room.
const QUEUE: usize = 1024;

/// One SQL statement with its values.
pub(crate) struct Statement {
    sql: &'static str,
    binds: Vec<Bind>,
}

impl Statement {
    /// `sql` with `binds`.
    pub(crate) fn new(sql: &'static str, binds: Vec<Bind>) -> Self {
        Statement { sql, binds }
    }

    async fn execute(&self, conn: &mut SqliteConnection) -> Result<u64, sqlx::Error> {
        let mut query = sqlx::query(self.sql);
        for bind in &self.binds {
            query = match bind {
                Bind::Text(v) => query.bind(v.as_str()),
                Bind::I32(v) => query.bind(*v),
                Bind::I64(v) => query.bind(*v),
                Bind::OptI64(v) => query.bind(*v),
                Bind::OptText(v) => query.bind(v.as_deref()),
                Bind::OptBytes(v) => query.bind(v.as_deref()),
            };
        }
        Ok(query.execute(conn).await?.rows_affected())
    }
}

struct Write {
    statement: Statement,
    /// Runs after `statement`, only if it changed a row.
    then: Option<Statement>,
    done: oneshot::Sender<Result<u64, sqlx::Error>>,
}

impl Write {
    /// Runs the write inside the caller's transaction; returns the rows its
    /// first statement changed.
    async fn execute(&self, conn: &mut SqliteConnection) -> Result<u64, sqlx::Error> {
        let written = self.statement.execute(&mut *conn).await?;
        if written > 0
            && let Some(then) = &self.then
        {
            then.execute(conn).await?;
        }
        Ok(written)
    }
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
            .field("sql", &self.statement.sql)
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

    /// Runs `statement` (then `then`, if it changed a row) in the next batch;
    /// returns the rows `statement` changed.
    pub(crate) async fn write(
        &self,
        statement: Statement,
        then: Option<Statement>,
    ) -> Result<u64, StoreError> {
        let (done, answer) = oneshot::channel();
        let stopped = || StoreError::Backend("the SQLite writer has stopped".into());
        self.queue
            .send(Write {
                statement,
                then,
                done,
            })
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
                let result = run_alone(&mut conn, write.statement, write.then).await;
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
                    let result = run_alone(&mut conn, write.statement, write.then).await;
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
        match write.execute(&mut *conn).await {
            Ok(written) => results.push(written),
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

/// Runs one write in its own transaction (implicit for a lone statement);
/// returns the rows `statement` changed.
pub(crate) async fn run_alone(
    conn: &mut SqliteConnection,
    statement: Statement,
    then: Option<Statement>,
) -> Result<u64, sqlx::Error> {
    let Some(then) = then else {
        return statement.execute(conn).await;
    };
    sqlx::query("BEGIN").execute(&mut *conn).await?;
    let write = async {
        let written = statement.execute(&mut *conn).await?;
        if written > 0 {
            then.execute(&mut *conn).await?;
        }
        sqlx::query("COMMIT").execute(&mut *conn).await?;
        Ok(written)
    }
    .await;
    if write.is_err() {
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
    }
    write
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
            writer.write(Statement::new(insert, vec![Bind::I64(1)]), None),
            writer.write(Statement::new(insert, vec![Bind::I64(1)]), None),
            writer.write(Statement::new(insert, vec![Bind::I64(2)]), None),
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
