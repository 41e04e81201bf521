//! `PostgresStore`: the server's state in a PostgreSQL database.

use a2a_server::store::StoreError;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use crate::common::{Bind, JobOp, TaskOp, TaskWrite, WriteScope, finished_jobs, terminal_tasks};
use crate::pg_writer::{ManyForm, PgWriter, count_shard};
use crate::store::{Dialect, SqlStore, apply_migrations, delegate_store_traits};
use crate::{OpenError, PushKey};

/// How long a call waits for a connection before it fails (see `connect_with`).
const ACQUIRE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The query that finds a task's job (`$task`) RUNNING under the lease
/// (`$node`, `$epoch`), locking its row for the rest of the transaction.
macro_rules! held_lease {
    ($task:literal, $node:literal, $epoch:literal) => {
        concat!(
            "SELECT 1 FROM jobs WHERE task_id = ",
            $task,
            " AND state = 'RUNNING' AND node = ",
            $node,
            " AND attempts = ",
            $epoch,
            " FOR SHARE"
        )
    };
}

/// Tasks, push configs and jobs in PostgreSQL. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    store: SqlStore<PgWrites>,
}

/// How PostgreSQL writes: each write one statement, committed in groups by
/// the writer's lanes (`pg_writer.rs`).
#[derive(Debug, Clone)]
struct PgWrites {
    writer: PgWriter,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host/db`), applies pending
    /// migrations and checks the push-credentials key.
    pub async fn connect(url: &str, push_key: Option<PushKey>) -> Result<Self, OpenError> {
        let options: PgConnectOptions = url.parse()?;
        PostgresStore::connect_with(options, push_key).await
    }

    /// Connects to `url` as a node of a cluster: this store's writes announce
    /// their events to the other nodes (see [`crate::PostgresCluster`]).
    pub async fn connect_cluster(url: &str, push_key: Option<PushKey>) -> Result<Self, OpenError> {
        let options: PgConnectOptions = url.parse()?;
        PostgresStore::connect_with(PostgresStore::cluster_options(options), push_key).await
    }

    /// `options` for a cluster node's connections: their writes announce
    /// their events (migration 0003's trigger reads the setting).
    pub fn cluster_options(options: PgConnectOptions) -> PgConnectOptions {
        options.options([("a2a.cluster", "on")])
    }

    /// Connects with `options` (for a search path, TLS, …); [`PostgresStore::from_pool`]
    /// takes a pool of your own size.
    pub async fn connect_with(
        options: PgConnectOptions,
        push_key: Option<PushKey>,
    ) -> Result<Self, OpenError> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            // While the server is down (a restart, a failover) a call fails
            // after this long rather than sqlx's 30 s: callers get
            // Unavailable promptly, and an execution's writes are retried
            // with backoff above the pool. Connections the restart broke are
            // found by the check before each acquire and replaced.
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .test_before_acquire(true)
            .connect_with(options)
            .await?;
        PostgresStore::from_pool(pool, push_key).await
    }

    /// Uses an existing pool: applies pending migrations and checks the key.
    pub async fn from_pool(pool: PgPool, push_key: Option<PushKey>) -> Result<Self, OpenError> {
        apply_migrations(&MIGRATOR, &pool).await?;
        SqlStore::<PgWrites>::check_push_key(&pool, push_key.as_ref()).await?;
        Ok(PostgresStore {
            store: SqlStore::new(
                pool.clone(),
                pool.clone(),
                push_key,
                PgWrites {
                    writer: PgWriter::start(pool),
                },
            ),
        })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        self.store.reader()
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.store.close().await;
    }
}

/// Other servers may share the database, so every push-config listing asks
/// it (the default `may_have_push_configs`).
impl Dialect for PgWrites {
    type Db = Postgres;

    const TERMINAL_TASKS_BEFORE: &'static str = concat!(
        "SELECT owner_tenant, owner_user, task_id FROM tasks WHERE state IN ",
        terminal_tasks!(),
        " AND status_ms < $1 ORDER BY status_ms, seq LIMIT $2"
    );

    const COUNTS_CONTEXTS: bool = true;

    async fn write_task(&self, _: &PgPool, write: TaskWrite) -> Result<u64, StoreError> {
        let TaskWrite {
            op,
            mut binds,
            job,
            lease,
        } = write;
        // The task's id is `$1` of a create, `$7` of an update (see below).
        let id_at = match op {
            TaskOp::Create => 0,
            TaskOp::Update => 6,
        };
        let Some(Bind::Text(task_id)) = binds.get(id_at) else {
            return Err(StoreError::Backend("a task write without its id".into()));
        };
        let shard = count_shard(task_id);
        let fenced = lease.is_some();
        let sql = match (op, job.as_ref().map(|job| job.op), fenced) {
            (TaskOp::Create, None, false) => CREATE,
            (TaskOp::Create, None, true) => CREATE_FENCED,
            (TaskOp::Create, Some(JobOp::Record), _) => CREATE_RECORDING,
            (TaskOp::Create, Some(JobOp::Finish), false) => CREATE_FINISHING,
            (TaskOp::Create, Some(JobOp::Finish), true) => CREATE_FINISHING_FENCED,
            (TaskOp::Update, None, false) => UPDATE,
            (TaskOp::Update, None, true) => UPDATE_FENCED,
            (TaskOp::Update, Some(JobOp::Record), _) => UPDATE_RECORDING,
            (TaskOp::Update, Some(JobOp::Finish), false) => UPDATE_FINISHING,
            (TaskOp::Update, Some(JobOp::Finish), true) => UPDATE_FINISHING_FENCED,
        };
        let many = match (op, job.as_ref().map(|job| job.op)) {
            (TaskOp::Create, Some(JobOp::Record)) => Some(&CREATE_RECORDING_MANY),
            (TaskOp::Update, None) if !fenced => Some(&UPDATE_MANY),
            (TaskOp::Update, Some(JobOp::Finish)) if !fenced => Some(&UPDATE_FINISHING_MANY),
            _ => None,
        };
        if let Some(job) = job {
            binds.extend(job.binds);
        }
        if let Some(lease) = lease {
            binds.extend(lease);
        }
        self.writer.write_in_shard(shard, sql, many, binds).await
    }

    /// Nodes of a cluster share the database: an execution's writes carry
    /// its lease.
    fn fences_writes(&self) -> bool {
        true
    }

    async fn execute_write(
        &self,
        _: &PgPool,
        scope: WriteScope<'_>,
        sql: &'static str,
        binds: Vec<Bind>,
    ) -> Result<u64, StoreError> {
        self.writer.write(scope, sql, binds).await
    }
}

delegate_store_traits!(PostgresStore);

// A write is one statement: the task row, then its event (and its job change)
// through data-modifying CTEs (one round trip, atomic on its own).
/// A create: task binds $1 to $10.
const CREATE: &str = "WITH created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, \
     state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
     VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8, $9) ON CONFLICT (task_id) DO NOTHING \
     RETURNING seq) \
     INSERT INTO task_events (task_seq, version, event) SELECT seq, 1, $10 FROM created";
/// An update: task binds $1 to $11.
const UPDATE: &str = "WITH updated AS (UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, checkpoint_turn), \
     checkpoint_state = COALESCE($6, checkpoint_state) \
     WHERE task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 \
     RETURNING seq, version) \
     INSERT INTO task_events (task_seq, version, event) SELECT seq, version, $11 FROM updated";

// With a job change, the task write is guarded by the job's state (so a
// refused change writes nothing), and the change applies only to a written task.
/// A create that records the task's job (binds from $11).
const CREATE_RECORDING: &str = concat!(
    "WITH created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, \
     context_id, state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
     SELECT $1, $2, $3, $4, $5, $6, 1, $7, $8, $9 WHERE NOT EXISTS (SELECT 1 FROM \
     jobs WHERE task_id = $11 AND state NOT IN ",
    finished_jobs!(),
    ") \
     ON CONFLICT (task_id) DO NOTHING RETURNING seq), job AS (INSERT INTO jobs \
     (task_id, owner_tenant, owner_user, state, node, heartbeat_us, attempts, \
     request, reason, created_us, updated_us) SELECT $11, $12, $13, $14, $15, $16, 1, \
     $17, $18, $16, $16 FROM created ON CONFLICT (task_id) DO UPDATE SET owner_tenant \
     = excluded.owner_tenant, owner_user = excluded.owner_user, state = \
     excluded.state, node = excluded.node, heartbeat_us = excluded.heartbeat_us, \
     attempts = 1, request = excluded.request, reason = excluded.reason, created_us = \
     excluded.created_us, updated_us = excluded.updated_us WHERE jobs.state IN \
     ",
    finished_jobs!(),
    ") INSERT INTO task_events (task_seq, \
     version, event) SELECT seq, 1, $10 FROM created"
);

/// [`CREATE_RECORDING`] for many tasks at once (see [`ManyForm`]). The
/// tasks are inserted in the order of their count keys, so that two batches
/// take the count rows they share in the same order.
///
/// `OFFSET 0` keeps the unfinished-job check a probe of the jobs' key per
/// task: as a join, its plan (made once, often while the table is still
/// empty) would read the whole jobs table for every batch.
static CREATE_RECORDING_MANY: ManyForm = ManyForm {
    sql: concat!(
        "WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], \
         $4::text[], $5::int4[], $6::int8[], $7::text[], $8::int8[], $9::bytea[], \
         $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], \
         $16::int8[], $17::text[], $18::text[]) WITH ORDINALITY AS i (task_id, \
         owner_tenant, owner_user, context_id, state, status_ms, task, checkpoint_turn, \
         checkpoint_state, event, job_task_id, job_tenant, job_user, job_state, node, \
         at_us, request, reason, position)), \
         created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, \
         state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
         SELECT i.task_id, i.owner_tenant, i.owner_user, i.context_id, i.state, \
         i.status_ms, 1, i.task, i.checkpoint_turn, i.checkpoint_state FROM input i \
         WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.task_id = i.job_task_id AND \
         jobs.state NOT IN ",
        finished_jobs!(),
        " OFFSET 0) ORDER BY i.owner_tenant, i.owner_user, i.context_id, i.state, i.position \
         ON CONFLICT (task_id) DO NOTHING RETURNING seq, task_id), \
         job AS (INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, \
         heartbeat_us, attempts, request, reason, created_us, updated_us) \
         SELECT i.job_task_id, i.job_tenant, i.job_user, i.job_state, i.node, i.at_us, 1, \
         i.request, i.reason, i.at_us, i.at_us FROM created c JOIN input i ON i.task_id = \
         c.task_id ON CONFLICT (task_id) DO UPDATE SET owner_tenant = \
         excluded.owner_tenant, owner_user = excluded.owner_user, state = \
         excluded.state, node = excluded.node, heartbeat_us = excluded.heartbeat_us, \
         attempts = 1, request = excluded.request, reason = excluded.reason, created_us = \
         excluded.created_us, updated_us = excluded.updated_us WHERE jobs.state IN ",
        finished_jobs!(),
        "), event AS (INSERT INTO task_events (task_seq, version, event) \
         SELECT c.seq, 1, i.event FROM created c JOIN input i ON i.task_id = c.task_id \
         RETURNING task_seq) \
         SELECT i.position FROM event e JOIN created c ON c.seq = e.task_seq \
         JOIN input i ON i.task_id = c.task_id"
    ),
    task_id_at: 0,
};

/// A create that finishes the task's job (binds from $11).
const CREATE_FINISHING: &str = "WITH created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, \
     context_id, state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
     SELECT $1, $2, $3, $4, $5, $6, 1, $7, $8, $9 WHERE EXISTS (SELECT 1 FROM jobs \
     WHERE task_id = $11) ON CONFLICT (task_id) DO NOTHING RETURNING seq), job AS \
     (UPDATE jobs SET state = $12, reason = $13, updated_us = $14 WHERE task_id = $11 \
     AND EXISTS (SELECT 1 FROM created)) INSERT INTO task_events (task_seq, version, \
     event) SELECT seq, 1, $10 FROM created";

/// An update that records the task's job (binds from $12).
const UPDATE_RECORDING: &str = concat!(
    "WITH updated AS (UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, \
     checkpoint_turn), checkpoint_state = COALESCE($6, checkpoint_state) WHERE \
     task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 AND NOT \
     EXISTS (SELECT 1 FROM jobs WHERE task_id = $12 AND state NOT IN ",
    finished_jobs!(),
    ") RETURNING seq, version), job AS (INSERT INTO jobs \
     (task_id, owner_tenant, owner_user, state, node, heartbeat_us, attempts, \
     request, reason, created_us, updated_us) SELECT $12, $13, $14, $15, $16, $17, 1, \
     $18, $19, $17, $17 FROM updated ON CONFLICT (task_id) DO UPDATE SET owner_tenant \
     = excluded.owner_tenant, owner_user = excluded.owner_user, state = \
     excluded.state, node = excluded.node, heartbeat_us = excluded.heartbeat_us, \
     attempts = 1, request = excluded.request, reason = excluded.reason, created_us = \
     excluded.created_us, updated_us = excluded.updated_us WHERE jobs.state IN \
     ",
    finished_jobs!(),
    ") INSERT INTO task_events (task_seq, \
     version, event) SELECT seq, version, $11 FROM updated"
);

/// An update that finishes the task's job (binds from $12).
const UPDATE_FINISHING: &str = "WITH updated AS (UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, \
     checkpoint_turn), checkpoint_state = COALESCE($6, checkpoint_state) WHERE \
     task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 AND \
     EXISTS (SELECT 1 FROM jobs WHERE task_id = $12) RETURNING seq, version), job AS \
     (UPDATE jobs SET state = $13, reason = $14, updated_us = $15 WHERE task_id = $12 \
     AND EXISTS (SELECT 1 FROM updated)) INSERT INTO task_events (task_seq, version, \
     event) SELECT seq, version, $11 FROM updated";

/// The task columns of an update's set form, `$1` to `$11` as arrays, and
/// its `input` rows.
macro_rules! update_input {
    ($($job_arrays:literal, $job_columns:literal)?) => {
        concat!(
            "WITH input AS (SELECT * FROM unnest($1::text[], $2::int4[], $3::int8[], \
             $4::text[], $5::int8[], $6::bytea[], $7::text[], $8::text[], $9::text[], \
             $10::int8[], $11::text[]", $($job_arrays,)? ") WITH ORDINALITY AS i \
             (context_id, state, status_ms, task, checkpoint_turn, checkpoint_state, \
             task_id, owner_tenant, owner_user, version, event, ", $($job_columns,)?
            "position)), updated AS (UPDATE tasks t SET context_id = i.context_id, \
             state = i.state, status_ms = i.status_ms, version = t.version + 1, task = \
             i.task, checkpoint_turn = COALESCE(i.checkpoint_turn, t.checkpoint_turn), \
             checkpoint_state = COALESCE(i.checkpoint_state, t.checkpoint_state) FROM \
             input i WHERE t.task_id = i.task_id AND t.owner_tenant = i.owner_tenant AND \
             t.owner_user = i.owner_user AND t.version = i.version "
        )
    };
}

/// [`UPDATE`] for many tasks at once (see [`ManyForm`]).
static UPDATE_MANY: ManyForm = ManyForm {
    sql: concat!(
        update_input!(),
        "RETURNING t.seq, t.version, i.event, i.position), \
         event AS (INSERT INTO task_events (task_seq, version, event) \
         SELECT seq, version, event FROM updated RETURNING task_seq) \
         SELECT u.position FROM event e JOIN updated u ON u.seq = e.task_seq"
    ),
    task_id_at: 6,
};

/// [`UPDATE_FINISHING`] for many tasks at once (see [`ManyForm`]); `OFFSET
/// 0` keeps the job check a key probe (see [`CREATE_RECORDING_MANY`]).
static UPDATE_FINISHING_MANY: ManyForm = ManyForm {
    sql: concat!(
        update_input!(
            ", $12::text[], $13::text[], $14::text[], $15::int8[]",
            "job_task_id, job_state, reason, at_us, "
        ),
        "AND EXISTS (SELECT 1 FROM jobs WHERE jobs.task_id = i.job_task_id OFFSET 0) \
         RETURNING t.seq, t.version, i.event, i.position, i.job_task_id, i.job_state, \
         i.reason, i.at_us), \
         job AS (UPDATE jobs j SET state = u.job_state, reason = u.reason, updated_us = \
         u.at_us FROM updated u WHERE j.task_id = u.job_task_id), \
         event AS (INSERT INTO task_events (task_seq, version, event) \
         SELECT seq, version, event FROM updated RETURNING task_seq) \
         SELECT u.position FROM event e JOIN updated u ON u.seq = e.task_seq"
    ),
    task_id_at: 6,
};

// Fenced writes (cluster mode): the task write happens only while the
// writer's lease holds, checked in the same statement. `FOR SHARE` locks the
// job row until the write commits, so a lease pass or a claim changing the
// row waits for the write, and a write waiting for them sees their change
// (PostgreSQL re-checks a locked row's condition on its newest version):
// either the write commits under a valid lease, before the lease moves on,
// or it is refused.
/// A fenced create: task binds $1 to $10, node $11, epoch $12.
const CREATE_FENCED: &str = concat!(
    "WITH created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, context_id, \
     state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
     SELECT $1, $2, $3, $4, $5, $6, 1, $7, $8, $9 WHERE EXISTS (",
    held_lease!("$1", "$11", "$12"),
    ") ON CONFLICT (task_id) DO NOTHING RETURNING seq) \
     INSERT INTO task_events (task_seq, version, event) SELECT seq, 1, $10 FROM created"
);
/// A fenced update: task binds $1 to $11, node $12, epoch $13.
const UPDATE_FENCED: &str = concat!(
    "WITH updated AS (UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, checkpoint_turn), \
     checkpoint_state = COALESCE($6, checkpoint_state) \
     WHERE task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 \
     AND EXISTS (",
    held_lease!("$7", "$12", "$13"),
    ") RETURNING seq, version) \
     INSERT INTO task_events (task_seq, version, event) SELECT seq, version, $11 FROM updated"
);
/// A fenced create that finishes the task's job: job binds $11 to $14,
/// node $15, epoch $16.
const CREATE_FINISHING_FENCED: &str = concat!(
    "WITH created AS (INSERT INTO tasks (task_id, owner_tenant, owner_user, \
     context_id, state, status_ms, version, task, checkpoint_turn, checkpoint_state) \
     SELECT $1, $2, $3, $4, $5, $6, 1, $7, $8, $9 WHERE EXISTS (",
    held_lease!("$11", "$15", "$16"),
    ") ON CONFLICT (task_id) DO NOTHING RETURNING seq), job AS \
     (UPDATE jobs SET state = $12, reason = $13, updated_us = $14 WHERE task_id = $11 \
     AND EXISTS (SELECT 1 FROM created)) INSERT INTO task_events (task_seq, version, \
     event) SELECT seq, 1, $10 FROM created"
);
/// A fenced update that finishes the task's job: job binds $12 to $15,
/// node $16, epoch $17.
const UPDATE_FINISHING_FENCED: &str = concat!(
    "WITH updated AS (UPDATE tasks SET context_id = $1, state = $2, status_ms = $3, \
     version = version + 1, task = $4, checkpoint_turn = COALESCE($5, \
     checkpoint_turn), checkpoint_state = COALESCE($6, checkpoint_state) WHERE \
     task_id = $7 AND owner_tenant = $8 AND owner_user = $9 AND version = $10 AND \
     EXISTS (",
    held_lease!("$12", "$16", "$17"),
    ") RETURNING seq, version), job AS \
     (UPDATE jobs SET state = $13, reason = $14, updated_us = $15 WHERE task_id = $12 \
     AND EXISTS (SELECT 1 FROM updated)) INSERT INTO task_events (task_seq, version, \
     event) SELECT seq, version, $11 FROM updated"
);

#[cfg(test)]
pub(crate) mod tests {
    use sqlx::postgres::PgConnectOptions;
    use sqlx::{Connection as _, PgConnection};

    use super::{
        CREATE, CREATE_RECORDING, CREATE_RECORDING_MANY, ManyForm, PostgresStore, UPDATE,
        UPDATE_FINISHING, UPDATE_FINISHING_MANY, UPDATE_MANY,
    };
    use crate::common::Bind;
    use crate::pg_writer::{Queued, run_batch, set_run};

    /// A connection for making schemas, and its options, or `None` to skip
    /// (outside CI).
    pub(crate) async fn admin() -> Option<(PgConnection, PgConnectOptions)> {
        let url = std::env::var("A2A_TEST_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let base: PgConnectOptions = url.parse().expect("A2A_TEST_POSTGRES_URL is not a URL");
        match PgConnection::connect_with(&base).await {
            Ok(admin) => Some((admin, base)),
            Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("PostgreSQL is unreachable in CI: {err}")
            }
            Err(err) => {
                eprintln!("NOTICE: skipping a PostgreSQL test: unreachable ({err})");
                None
            }
        }
    }

    /// A record-and-create write of task `id`, its job in `job_state`, as
    /// `create_task` binds it.
    fn recording(
        id: &str,
        checkpoint: Option<i64>,
        job_state: &str,
        reason: Option<&str>,
    ) -> Vec<Bind> {
        let text = |v: &str| Bind::Text(v.to_owned());
        vec![
            text(id),
            text("tenant"),
            text("user"),
            text(&format!("context-of-{id}")),
            Bind::I32(3),
            Bind::I64(1_000),
            text(&format!("{{\"id\":\"{id}\"}}")),
            Bind::OptI64(checkpoint),
            Bind::OptBytes(checkpoint.map(|turn| turn.to_be_bytes().to_vec())),
            text(&format!("{{\"event\":\"{id}\"}}")),
            text(id),
            text("tenant"),
            text("user"),
            text(job_state),
            text("node-a"),
            Bind::I64(7_000),
            text(""),
            Bind::OptText(reason.map(str::to_owned)),
        ]
    }

    /// Everything stored for the tasks, jobs and counts, without the row
    /// sequence numbers (which differ between two schemas).
    async fn stored(conn: &mut PgConnection) -> Vec<String> {
        let mut rows: Vec<String> = Vec::new();
        for sql in [
            "SELECT concat_ws('|', task_id, owner_tenant, owner_user, context_id, state, \
             status_ms, version, task, checkpoint_turn, encode(checkpoint_state, 'hex')) \
             FROM tasks ORDER BY task_id",
            "SELECT concat_ws('|', t.task_id, e.version, e.event) FROM task_events e \
             JOIN tasks t ON t.seq = e.task_seq ORDER BY t.task_id, e.version",
            "SELECT concat_ws('|', task_id, owner_tenant, owner_user, state, node, \
             heartbeat_us, attempts, request, reason, created_us, updated_us) FROM jobs \
             ORDER BY task_id",
            "SELECT concat_ws('|', owner_tenant, owner_user, state, shard, n) FROM task_counts \
             ORDER BY 1",
            "SELECT concat_ws('|', owner_tenant, owner_user, context_id, state, n) \
             FROM task_context_counts ORDER BY 1",
        ] {
            let found: Vec<String> = sqlx::query_scalar(sql).fetch_all(&mut *conn).await.unwrap();
            rows.extend(found);
        }
        rows
    }

    /// An update of task `id` from `version`, as `update_task` binds it.
    fn update(id: &str, tenant: &str, version: i64, checkpoint: Option<i64>) -> Vec<Bind> {
        let text = |v: &str| Bind::Text(v.to_owned());
        vec![
            text(&format!("context-of-{id}")),
            Bind::I32(4),
            Bind::I64(2_000 + version),
            text(&format!("{{\"id\":\"{id}\",\"v\":{version}}}")),
            Bind::OptI64(checkpoint),
            Bind::OptBytes(checkpoint.map(|turn| turn.to_le_bytes().to_vec())),
            text(id),
            text(tenant),
            text("user"),
            Bind::I64(version),
            text(&format!("{{\"update\":\"{id}\"}}")),
        ]
    }

    /// Runs `writes` of `sql` in one batch as one set statement (`together`,
    /// checking they form one run) or each alone; returns what each changed.
    async fn apply(
        conn: &mut PgConnection,
        sql: &'static str,
        many: &'static ManyForm,
        writes: Vec<Vec<Bind>>,
        together: bool,
    ) -> Vec<u64> {
        if together {
            let batch: Vec<Queued> = writes
                .into_iter()
                .map(|binds| Queued::unanswered(sql, Some(many), binds))
                .collect();
            assert_eq!(
                set_run(&batch),
                batch.len(),
                "the writes run as one statement"
            );
            return run_batch(conn, &batch).await.unwrap();
        }
        let mut results = Vec::new();
        for binds in writes {
            let alone = Queued::unanswered(sql, None, binds);
            results.extend(run_batch(conn, std::slice::from_ref(&alone)).await.unwrap());
        }
        results
    }

    /// Runs the same writes, over the same stored rows, in one set statement
    /// (`together`) or one statement each, in a fresh schema; returns what
    /// each write changed and what is stored after.
    async fn run_writes(
        admin: &mut PgConnection,
        base: &PgConnectOptions,
        together: bool,
    ) -> (Vec<u64>, Vec<String>) {
        let schema = format!("a2a_set_{}", a2a_core::new_id().replace('-', ""));
        sqlx::query(&format!("CREATE SCHEMA {schema}"))
            .execute(&mut *admin)
            .await
            .unwrap();
        let options = base.clone().options([("search_path", schema.as_str())]);
        let store = PostgresStore::connect_with(options, None).await.unwrap();
        let mut conn = store.pool().acquire().await.unwrap();
        // Already stored: a task, an unfinished job with no task yet, and
        // a finished one.
        let taken = Queued::unanswered(
            CREATE_RECORDING,
            None,
            recording("taken", None, "COMPLETED", None),
        );
        assert_eq!(
            run_batch(&mut conn, std::slice::from_ref(&taken))
                .await
                .unwrap(),
            [1]
        );
        sqlx::query(
            "INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, heartbeat_us, \
             attempts, request, reason, created_us, updated_us) VALUES \
             ('busy', 'tenant', 'user', 'RUNNING', 'node-b', 1, 1, 'r', NULL, 1, 1), \
             ('done', 'tenant', 'user', 'FAILED', 'node-b', 1, 2, '', 'gone', 1, 1)",
        )
        .execute(&mut *conn)
        .await
        .unwrap();
        let jobless = Queued::unanswered(
            CREATE,
            None,
            recording("jobless", None, "", None)[..10].to_vec(),
        );
        assert_eq!(
            run_batch(&mut conn, std::slice::from_ref(&jobless))
                .await
                .unwrap(),
            [1]
        );
        let creates = vec![
            recording("new-1", None, "COMPLETED", None),
            recording("taken", None, "COMPLETED", None),
            recording("busy", Some(4), "RUNNING", None),
            recording("done", Some(5), "CANCELED", Some("asked to")),
            recording("new-2", Some(-1), "FAILED", Some("ünïcode ✓")),
        ];
        let mut results = apply(
            &mut conn,
            CREATE_RECORDING,
            &CREATE_RECORDING_MANY,
            creates,
            together,
        )
        .await;
        let updates = vec![
            update("new-1", "tenant", 1, None),
            update("taken", "tenant", 5, None),
            update("missing", "tenant", 1, None),
            update("new-2", "other", 1, None),
            update("done", "tenant", 1, Some(9)),
        ];
        results.extend(apply(&mut conn, UPDATE, &UPDATE_MANY, updates, together).await);
        let finishing = |id: &str, version: i64| {
            let mut binds = update(id, "tenant", version, None);
            binds.extend([
                Bind::Text(id.to_owned()),
                Bind::Text("COMPLETED".to_owned()),
                Bind::OptText(Some(format!("{id} is done"))),
                Bind::I64(8_000),
            ]);
            binds
        };
        let finishes = vec![
            finishing("new-1", 2),
            finishing("busy", 1),
            finishing("taken", 1),
            finishing("jobless", 1),
            finishing("new-2", 1),
        ];
        results.extend(
            apply(
                &mut conn,
                UPDATE_FINISHING,
                &UPDATE_FINISHING_MANY,
                finishes,
                together,
            )
            .await,
        );
        let rows = stored(&mut conn).await;
        drop(conn);
        store.close().await;
        sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
            .execute(&mut *admin)
            .await
            .unwrap();
        (results, rows)
    }

    /// Writes run together in the set form change what each would change
    /// alone, and answer the same. Creates: created, refused over a stored
    /// task, refused over an unfinished job, created over a finished job.
    /// Updates: of the right version, of another version, of no task, of
    /// another owner's task. Finishing updates: with a job, of no task, of
    /// a task with no job.
    #[tokio::test]
    async fn writes_run_as_one_set_statement_change_what_each_changes_alone() {
        let Some((mut admin, base)) = admin().await else {
            return;
        };
        let (alone, alone_rows) = run_writes(&mut admin, &base, false).await;
        let (together, together_rows) = run_writes(&mut admin, &base, true).await;
        assert_eq!(alone, [1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1]);
        assert_eq!(together, alone);
        assert_eq!(together_rows, alone_rows);
        assert!(
            together_rows
                .iter()
                .any(|row| row.starts_with("done|tenant|user|CANCELED|node-a"))
        );
    }

    /// A run of set writes ends at a write of a task already in it, at a
    /// write of other binds or of another statement.
    #[test]
    fn a_set_run_holds_each_task_once_and_one_statement_s_writes() {
        let write = |id: &str| {
            Queued::unanswered(
                CREATE_RECORDING,
                Some(&CREATE_RECORDING_MANY),
                recording(id, None, "COMPLETED", None),
            )
        };
        assert_eq!(set_run(&[]), 0);
        assert_eq!(set_run(&[write("a"), write("b"), write("c")]), 3);
        assert_eq!(
            set_run(&[write("a"), write("b"), write("a"), write("c")]),
            2
        );
        let mut binds = recording("b", None, "COMPLETED", None);
        binds.push(Bind::I64(1));
        let other_binds = Queued::unanswered(CREATE_RECORDING, Some(&CREATE_RECORDING_MANY), binds);
        assert_eq!(set_run(&[write("a"), other_binds, write("c")]), 1);
        let alone = Queued::unanswered(
            CREATE_RECORDING,
            None,
            recording("b", None, "COMPLETED", None),
        );
        assert_eq!(set_run(&[write("a"), alone]), 1);
        assert_eq!(
            set_run(&[
                Queued::unanswered(CREATE_RECORDING, None, vec![]),
                write("a")
            ]),
            1
        );
    }
}
