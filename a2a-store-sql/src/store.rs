//! The stores' operations, written once over sqlx's [`Database`] and a
//! [`Dialect`] for what the backends do differently.
//!
//! Both backends read with the same SQL text through sqlx (SQLite accepts
//! PostgreSQL's `$N` parameters); they differ in how they write. SQLite
//! writes through one connection on a thread of its own that commits the
//! writes waiting together in one transaction (`writer.rs`), PostgreSQL
//! one statement per task write, through a few lanes that each commit the
//! writes waiting together in one transaction (`pg_writer.rs`).
//! [`SqlStore`] holds what both have (the pools and the push-credentials
//! key) and implements every store operation; `SqliteStore` and
//! `PostgresStore` hand their trait calls to it.

use std::future::Future;

use a2a_core::{ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig};
use a2a_server::Caller;
use a2a_server::store::listing::{ListPosition, TaskQuery, status_timestamp_ms};
use a2a_server::store::{
    ABANDONED_REASON, Cause, Job, JobFilter, JobState, LeasePass, NewJob, Recovered, StoreError,
    StoredEvent, StoredTask, Version,
};
use chrono::{DateTime, Utc};
use sqlx::error::BoxDynError;
use sqlx::migrate::{Migrate, MigrateError, Migrator};
use sqlx::{
    Arguments as _, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row as _,
    Type,
};

use crate::common::{
    Bind, JOB_COLUMNS, JobChange, JobOp, JobRow, KEY_CHECK_NAME, TaskOp, TaskWrite, WriteScope,
    backend, checkpoint_columns, checkpoint_from, config_json, event_json, finished_jobs,
    job_from_row, lease_binds, micros, parse_config, parse_event, parse_task, task_json, to_i64,
    to_u64,
};
use crate::crypt::{KEY_CHECK, is_sealed};
use crate::{OpenError, PushKey};

/// What a backend does its own way: its writes.
pub(crate) trait Dialect: Send + Sync + 'static {
    /// The sqlx database.
    type Db: Database;

    /// Runs `write` on `writer`, atomically; returns how many task rows it
    /// changed (0: refused).
    fn write_task(
        &self,
        writer: &Pool<Self::Db>,
        write: TaskWrite,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Runs any other write statement (`$N` parameters from `binds[N - 1]`)
    /// on `writer`; returns how many rows it changed. `scope` says whose
    /// rows it changes.
    fn execute_write(
        &self,
        writer: &Pool<Self::Db>,
        scope: WriteScope<'_>,
        sql: &'static str,
        binds: Vec<Bind>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Task retention's query: the owner and id of up to `$2` terminal
    /// tasks whose last status is older than `$1` (milliseconds), oldest
    /// first, in the backend's partial index of terminal tasks (whose
    /// predicate it repeats word for word, or SQLite does not use it).
    const TERMINAL_TASKS_BEFORE: &'static str;

    /// Whether the schema keeps task counts per context
    /// (`task_context_counts`); without them, a context's ListTasks total is
    /// counted from its tasks.
    const COUNTS_CONTEXTS: bool;

    /// Whether task writes check a [`Cause::lease`] (a store several nodes
    /// share); others ignore it. The default: no.
    fn fences_writes(&self) -> bool {
        false
    }

    /// A push config of `task_id` is about to be saved.
    fn push_config_saving(&self, task_id: &str) {
        let _ = task_id;
    }

    /// Whether `task_id` may have push configs (false: surely none, and the
    /// listing skips the query). The default asks the database every time.
    fn may_have_push_configs(&self, task_id: &str) -> bool {
        let _ = task_id;
        true
    }
}

/// Applies the embedded migrations, refusing a schema newer than the code.
pub(crate) async fn apply_migrations<DB>(
    migrator: &Migrator,
    pool: &Pool<DB>,
) -> Result<(), OpenError>
where
    DB: Database,
    DB::Connection: Migrate,
{
    match migrator.run(pool).await {
        Ok(()) => Ok(()),
        Err(MigrateError::VersionMissing(version)) => Err(OpenError::SchemaTooNew { version }),
        Err(err) => Err(OpenError::Migration(err.to_string())),
    }
}

/// Tasks, push configs and jobs in a SQL database, for a [`Dialect`] `D`.
#[derive(Debug)]
pub(crate) struct SqlStore<D: Dialect> {
    /// The pool that reads.
    reader: Pool<D::Db>,
    /// The pool that writes, and reads what a write was refused for.
    writer: Pool<D::Db>,
    push_key: Option<PushKey>,
    dialect: D,
}

// By hand: derived, it would ask the database's marker type to be Clone.
impl<D: Dialect + Clone> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        SqlStore {
            reader: self.reader.clone(),
            writer: self.writer.clone(),
            push_key: self.push_key.clone(),
            dialect: self.dialect.clone(),
        }
    }
}

impl<D: Dialect> SqlStore<D> {
    pub(crate) fn new(
        reader: Pool<D::Db>,
        writer: Pool<D::Db>,
        push_key: Option<PushKey>,
        dialect: D,
    ) -> Self {
        SqlStore {
            reader,
            writer,
            push_key,
            dialect,
        }
    }

    pub(crate) fn reader(&self) -> &Pool<D::Db> {
        &self.reader
    }

    /// Closes the pools (one pool twice where it reads and writes: closing
    /// is idempotent), waiting for connections in use.
    pub(crate) async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
    }

    async fn execute_write(
        &self,
        scope: WriteScope<'_>,
        sql: &'static str,
        binds: Vec<Bind>,
    ) -> Result<u64, StoreError> {
        self.dialect
            .execute_write(&self.writer, scope, sql, binds)
            .await
    }
}

/// Every operation, for any database sqlx reads these column types from.
impl<D, DB> SqlStore<D>
where
    D: Dialect<Db = DB>,
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    usize: ColumnIndex<DB::Row>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    String: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    i64: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    i32: for<'q> Encode<'q, DB> + Type<DB>,
    Vec<u8>: for<'r> Decode<'r, DB> + Type<DB>,
{
    /// Checks the push-credentials key against the one the database knows
    /// (the first keyed open records it).
    pub(crate) async fn check_push_key(
        pool: &Pool<DB>,
        key: Option<&PushKey>,
    ) -> Result<(), OpenError> {
        let stored: Option<String> =
            sqlx::query_scalar("SELECT value FROM a2a_meta WHERE name = $1")
                .bind(KEY_CHECK_NAME)
                .fetch_optional(pool)
                .await?;
        match (key, stored) {
            (Some(key), Some(check)) if key.open(&check).as_deref() != Some(KEY_CHECK) => {
                Err(OpenError::WrongKey)
            }
            (Some(key), None) => {
                let check = key
                    .seal(KEY_CHECK)
                    .map_err(|e| OpenError::Migration(e.to_string()))?;
                sqlx::query(
                    "INSERT INTO a2a_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                )
                .bind(KEY_CHECK_NAME)
                .bind(check)
                .execute(pool)
                .await?;
                Ok(())
            }
            (None, Some(check)) if is_sealed(&check) => Err(OpenError::KeyRequired),
            _ => Ok(()),
        }
    }

    /// `TaskStore::create`.
    pub(crate) async fn create_task(
        &self,
        caller: &Caller,
        task: &Task,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        let json = task_json(task)?;
        let event = event_json(cause.event)?;
        let (turn, state) = checkpoint_columns(cause.checkpoint)?;
        let job = cause
            .job
            .as_ref()
            .map(|write| JobChange::from_write(&task.id, write))
            .transpose()?;
        let job_op = job.as_ref().map(|job| job.op);
        let lease = lease_binds(cause).filter(|_| self.dialect.fences_writes());
        let fenced = lease.is_some();
        // One statement group writes the task, appends its event and
        // applies the job change, atomically.
        let binds = vec![
            Bind::Text(task.id.clone()),
            Bind::Text(caller.tenant.clone()),
            Bind::Text(caller.user.clone()),
            Bind::Text(task.context_id.clone()),
            Bind::I32(task.status.state.number()),
            Bind::I64(status_timestamp_ms(task)),
            Bind::Text(json),
            turn,
            state,
            Bind::Text(event),
        ];
        let written = self
            .dialect
            .write_task(
                &self.writer,
                TaskWrite {
                    op: TaskOp::Create,
                    binds,
                    job,
                    lease,
                },
            )
            .await?;
        if written == 0 {
            if fenced {
                self.check_lease(&task.id, cause).await?;
            }
            // Refused: the task exists, or the job change could not apply
            // (an unfinished job to record over, none to finish).
            if job_op == Some(JobOp::Finish) {
                let exists: Option<i64> =
                    sqlx::query_scalar("SELECT 1 FROM tasks WHERE task_id = $1")
                        .bind(task.id.as_str())
                        .fetch_optional(&self.writer)
                        .await
                        .map_err(backend)?;
                if exists.is_none() {
                    return Err(StoreError::NotFound(task.id.clone()));
                }
            }
            return Err(StoreError::AlreadyExists(task.id.clone()));
        }
        Ok(1)
    }

    /// `TaskStore::update`.
    pub(crate) async fn update_task(
        &self,
        caller: &Caller,
        task: &Task,
        expected: Version,
        cause: &Cause<'_>,
    ) -> Result<Version, StoreError> {
        let json = task_json(task)?;
        let event = event_json(cause.event)?;
        let (turn, state) = checkpoint_columns(cause.checkpoint)?;
        let expected_i64 = to_i64(expected, "version")?;
        let job = cause
            .job
            .as_ref()
            .map(|write| JobChange::from_write(&task.id, write))
            .transpose()?;
        let lease = lease_binds(cause).filter(|_| self.dialect.fences_writes());
        let fenced = lease.is_some();
        let job_refusal = job.as_ref().map(|job| match job.op {
            JobOp::Record => StoreError::AlreadyExists(job.task_id.clone()),
            JobOp::Finish => StoreError::NotFound(job.task_id.clone()),
        });
        // One statement checks the version, writes the task and appends its
        // event (and applies the job change, in the same transaction): a
        // concurrent writer of the same version finds it changed.
        let binds = vec![
            Bind::Text(task.context_id.clone()),
            Bind::I32(task.status.state.number()),
            Bind::I64(status_timestamp_ms(task)),
            Bind::Text(json),
            turn,
            state,
            Bind::Text(task.id.clone()),
            Bind::Text(caller.tenant.clone()),
            Bind::Text(caller.user.clone()),
            Bind::I64(expected_i64),
            Bind::Text(event),
        ];
        let written = self
            .dialect
            .write_task(
                &self.writer,
                TaskWrite {
                    op: TaskOp::Update,
                    binds,
                    job,
                    lease,
                },
            )
            .await?;
        if written == 0 {
            if fenced {
                self.check_lease(&task.id, cause).await?;
            }
            let found: Option<i64> = sqlx::query_scalar(
                "SELECT version FROM tasks \
                 WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3",
            )
            .bind(task.id.as_str())
            .bind(caller.tenant.as_str())
            .bind(caller.user.as_str())
            .fetch_optional(&self.writer)
            .await
            .map_err(backend)?;
            return Err(match (found, job_refusal) {
                // The version was right: the job change refused the write.
                (Some(found), Some(refusal)) if found == expected_i64 => refusal,
                (Some(found), _) => StoreError::Conflict {
                    task_id: task.id.clone(),
                    expected,
                    found: to_u64(found, "version")?,
                },
                (None, _) => StoreError::NotFound(task.id.clone()),
            });
        }
        Ok(expected + 1)
    }

    /// After a fenced write changed nothing: [`StoreError::LeaseLost`] if the
    /// writer's lease is gone (the likeliest reason, so it is asked first),
    /// `Ok` to go on finding out why.
    async fn check_lease(&self, task_id: &str, cause: &Cause<'_>) -> Result<(), StoreError> {
        let Some(lease) = cause.lease else {
            return Ok(());
        };
        let held: Option<String> = sqlx::query_scalar(
            "SELECT task_id FROM jobs WHERE task_id = $1 AND state = 'RUNNING' AND node = $2 \
             AND attempts = $3",
        )
        .bind(task_id)
        .bind(lease.node)
        .bind(i64::from(lease.epoch))
        .fetch_optional(&self.writer)
        .await
        .map_err(backend)?;
        match held {
            Some(_) => Ok(()),
            None => Err(StoreError::LeaseLost(task_id.to_owned())),
        }
    }

    /// `TaskStore::get`.
    pub(crate) async fn get_task(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<StoredTask, StoreError> {
        let row = sqlx::query(
            "SELECT task, version, checkpoint_turn, checkpoint_state FROM tasks \
             WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3",
        )
        .bind(task_id)
        .bind(caller.tenant.as_str())
        .bind(caller.user.as_str())
        .fetch_optional(&self.reader)
        .await
        .map_err(backend)?
        .ok_or_else(|| StoreError::NotFound(task_id.to_owned()))?;
        let json: String = row.try_get(0).map_err(backend)?;
        let version: i64 = row.try_get(1).map_err(backend)?;
        let checkpoint = checkpoint_from(
            row.try_get(2).map_err(backend)?,
            row.try_get(3).map_err(backend)?,
        )?;
        Ok(StoredTask::new(
            parse_task(&json)?,
            to_u64(version, "version")?,
            checkpoint,
        ))
    }

    /// `TaskStore::list`.
    pub(crate) async fn list_tasks(
        &self,
        caller: &Caller,
        request: &ListTasksRequest,
    ) -> Result<ListTasksResponse, StoreError> {
        let query = TaskQuery::from_request(request)?;
        let (text, args) = Self::total_size(caller, &query).into_parts()?;
        let total: i64 = sqlx::query_scalar_with(&text, args)
            .fetch_one(&self.reader)
            .await
            .map_err(backend)?;
        let mut page = Self::filtered("seq, status_ms, task", caller, &query);
        if let Some(after) = query.after {
            let seq = to_i64(after.sequence, "page token")?;
            page.push(" AND (status_ms < ")
                .bind(after.timestamp_ms)
                .push(" OR (status_ms = ")
                .bind(after.timestamp_ms)
                .push(" AND seq > ")
                .bind(seq)
                .push("))");
        }
        // One more than a page tells whether another page follows.
        page.push(" ORDER BY status_ms DESC, seq ASC LIMIT ")
            .bind(to_i64(query.page_size as u64 + 1, "page size")?);
        let (text, args) = page.into_parts()?;
        let rows = sqlx::query_with(&text, args)
            .fetch_all(&self.reader)
            .await
            .map_err(backend)?;
        let more = rows.len() > query.page_size;
        let mut tasks = Vec::with_capacity(rows.len().min(query.page_size));
        let mut last = None;
        for row in rows.iter().take(query.page_size) {
            let seq: i64 = row.try_get(0).map_err(backend)?;
            let status_ms: i64 = row.try_get(1).map_err(backend)?;
            let json: String = row.try_get(2).map_err(backend)?;
            tasks.push(parse_task(&json)?);
            last = Some(ListPosition::new(status_ms, to_u64(seq, "sequence")?));
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token: TaskQuery::next_page_token(last.as_ref(), more),
            page_size: query.page_size_i32(),
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }

    /// `TaskStore::count_for_user`.
    pub(crate) async fn count_for_user(&self, user: &str) -> Result<Option<u64>, StoreError> {
        // The counts hold a row per owner and state: far fewer than the
        // user's tasks (and owner_user leads no index of tasks).
        let count: i64 = sqlx::query_scalar(
            "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM task_counts WHERE owner_user = $1",
        )
        .bind(user)
        .fetch_one(&self.reader)
        .await
        .map_err(backend)?;
        Ok(Some(to_u64(count, "task count")?))
    }

    /// `TaskStore::delete`.
    pub(crate) async fn delete_task(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<(), StoreError> {
        // Its events go with it (ON DELETE CASCADE).
        self.execute_write(
            WriteScope::Task(task_id),
            "DELETE FROM tasks WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3",
            vec![
                Bind::Text(task_id.to_owned()),
                Bind::Text(caller.tenant.clone()),
                Bind::Text(caller.user.clone()),
            ],
        )
        .await?;
        Ok(())
    }

    /// `TaskStore::terminal_before`: a range of the partial index of
    /// terminal tasks by status time ([`Dialect::TERMINAL_TASKS_BEFORE`]).
    pub(crate) async fn terminal_tasks_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<(Caller, String)>, StoreError> {
        let rows = sqlx::query(D::TERMINAL_TASKS_BEFORE)
            .bind(cutoff.timestamp_millis())
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let caller = Caller {
                    tenant: row.try_get(0).map_err(backend)?,
                    user: row.try_get(1).map_err(backend)?,
                };
                Ok((caller, row.try_get(2).map_err(backend)?))
            })
            .collect()
    }

    /// `TaskStore::events`.
    pub(crate) async fn task_events(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT e.version, e.event FROM task_events e JOIN tasks t ON t.seq = e.task_seq \
             WHERE t.task_id = $1 AND t.owner_tenant = $2 AND t.owner_user = $3 \
             ORDER BY e.version",
        )
        .bind(task_id)
        .bind(caller.tenant.as_str())
        .bind(caller.user.as_str())
        .fetch_all(&self.reader)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let version: i64 = row.try_get(0).map_err(backend)?;
                let json: String = row.try_get(1).map_err(backend)?;
                Ok(StoredEvent {
                    version: to_u64(version, "version")?,
                    event: parse_event(&json)?,
                })
            })
            .collect()
    }

    /// `PushConfigStore::save`.
    pub(crate) async fn save_push_config(
        &self,
        caller: &Caller,
        mut config: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, StoreError> {
        if config.id.is_empty() {
            config.id = a2a_core::new_id();
        }
        let json = config_json(self.push_key.as_ref(), &config)?;
        self.dialect.push_config_saving(&config.task_id);
        self.execute_write(
            WriteScope::Task(&config.task_id),
            "INSERT INTO push_configs (owner_tenant, owner_user, task_id, config_id, config) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (owner_tenant, owner_user, task_id, config_id) \
             DO UPDATE SET config = excluded.config",
            vec![
                Bind::Text(caller.tenant.clone()),
                Bind::Text(caller.user.clone()),
                Bind::Text(config.task_id.clone()),
                Bind::Text(config.id.clone()),
                Bind::Text(json),
            ],
        )
        .await?;
        Ok(config)
    }

    /// `PushConfigStore::get`.
    pub(crate) async fn get_push_config(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        let json: Option<String> = sqlx::query_scalar(
            "SELECT config FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
             AND task_id = $3 AND config_id = $4",
        )
        .bind(caller.tenant.as_str())
        .bind(caller.user.as_str())
        .bind(task_id)
        .bind(config_id)
        .fetch_optional(&self.reader)
        .await
        .map_err(backend)?;
        json.map(|json| parse_config(self.push_key.as_ref(), &json))
            .transpose()
    }

    /// `PushConfigStore::list`.
    pub(crate) async fn list_push_configs(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        if !self.dialect.may_have_push_configs(task_id) {
            return Ok(Vec::new());
        }
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT config FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
             AND task_id = $3 ORDER BY seq",
        )
        .bind(caller.tenant.as_str())
        .bind(caller.user.as_str())
        .bind(task_id)
        .fetch_all(&self.reader)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|json| parse_config(self.push_key.as_ref(), json))
            .collect()
    }

    /// `PushConfigStore::keeps_outbox`.
    pub(crate) fn keeps_outbox(&self) -> bool {
        self.dialect.fences_writes()
    }

    /// `PushConfigStore::undelivered`: the task's rows of the push outbox
    /// (migration `push_outbox`), with their events.
    pub(crate) async fn undelivered(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<Vec<StoredEvent>, StoreError> {
        if !self.keeps_outbox() {
            return Ok(Vec::new());
        }
        let rows = sqlx::query(
            "SELECT e.version, e.event FROM push_outbox o \
             JOIN task_events e ON e.task_seq = o.task_seq AND e.version = o.version \
             JOIN tasks t ON t.seq = o.task_seq \
             WHERE t.task_id = $1 AND t.owner_tenant = $2 AND t.owner_user = $3 \
             ORDER BY o.version",
        )
        .bind(task_id)
        .bind(caller.tenant.as_str())
        .bind(caller.user.as_str())
        .fetch_all(&self.writer)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let version: i64 = row.try_get(0).map_err(backend)?;
                let json: String = row.try_get(1).map_err(backend)?;
                Ok(StoredEvent {
                    version: to_u64(version, "version")?,
                    event: parse_event(&json)?,
                })
            })
            .collect()
    }

    /// `PushConfigStore::delivered`.
    pub(crate) async fn delivered(
        &self,
        caller: &Caller,
        task_id: &str,
        version: Version,
    ) -> Result<(), StoreError> {
        if !self.keeps_outbox() {
            return Ok(());
        }
        self.execute_write(
            WriteScope::Task(task_id),
            "DELETE FROM push_outbox WHERE version <= $4 AND task_seq = (SELECT seq FROM tasks \
             WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3)",
            vec![
                Bind::Text(task_id.to_owned()),
                Bind::Text(caller.tenant.clone()),
                Bind::Text(caller.user.clone()),
                Bind::I64(to_i64(version, "version")?),
            ],
        )
        .await?;
        Ok(())
    }

    /// `PushConfigStore::delete`.
    pub(crate) async fn delete_push_config(
        &self,
        caller: &Caller,
        task_id: &str,
        config_id: &str,
    ) -> Result<(), StoreError> {
        self.execute_write(
            WriteScope::Task(task_id),
            "DELETE FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
             AND task_id = $3 AND config_id = $4",
            vec![
                Bind::Text(caller.tenant.clone()),
                Bind::Text(caller.user.clone()),
                Bind::Text(task_id.to_owned()),
                Bind::Text(config_id.to_owned()),
            ],
        )
        .await?;
        Ok(())
    }

    /// `PushConfigStore::delete_all`.
    pub(crate) async fn delete_push_configs(
        &self,
        caller: &Caller,
        task_id: &str,
    ) -> Result<(), StoreError> {
        self.execute_write(
            WriteScope::Task(task_id),
            "DELETE FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
             AND task_id = $3",
            vec![
                Bind::Text(caller.tenant.clone()),
                Bind::Text(caller.user.clone()),
                Bind::Text(task_id.to_owned()),
            ],
        )
        .await?;
        Ok(())
    }

    /// `JobStore::record`.
    pub(crate) async fn record_job(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
        let at = micros(job.at);
        // Inserts, or replaces a finished job; an unfinished one stays and
        // the statement writes nothing.
        let written = self
            .execute_write(
                WriteScope::Task(job.task_id),
                concat!(
                    "INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, \
                     heartbeat_us, attempts, request, reason, created_us, updated_us) \
                     VALUES ($1, $2, $3, 'RUNNING', $4, $5, 1, $6, NULL, $5, $5) \
                     ON CONFLICT (task_id) DO UPDATE SET owner_tenant = excluded.owner_tenant, \
                     owner_user = excluded.owner_user, state = excluded.state, \
                     node = excluded.node, heartbeat_us = excluded.heartbeat_us, attempts = 1, \
                     request = excluded.request, reason = NULL, \
                     created_us = excluded.created_us, updated_us = excluded.updated_us \
                     WHERE jobs.state IN ",
                    finished_jobs!()
                ),
                vec![
                    Bind::Text(job.task_id.to_owned()),
                    Bind::Text(job.owner.tenant.clone()),
                    Bind::Text(job.owner.user.clone()),
                    Bind::Text(job.node.to_owned()),
                    Bind::I64(at),
                    Bind::Text(job.request.to_owned()),
                ],
            )
            .await?;
        if written == 0 {
            return Err(StoreError::AlreadyExists(job.task_id.to_owned()));
        }
        Ok(())
    }

    /// `JobStore::heartbeat`.
    pub(crate) async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError> {
        let running = self
            .execute_write(
                WriteScope::Wide,
                "UPDATE jobs SET heartbeat_us = $1 WHERE state = 'RUNNING' AND node = $2",
                vec![Bind::I64(micros(at)), Bind::Text(node.to_owned())],
            )
            .await?;
        if self.keeps_outbox() {
            // Finished jobs whose pushes this node still sends keep their
            // lease too. The outbox holds only what is unsent: nearly always
            // empty, which the uncorrelated EXISTS checks once (a one-time
            // filter) before any join is planned over the jobs.
            self.execute_write(
                WriteScope::Wide,
                "UPDATE jobs j SET heartbeat_us = $1 FROM push_outbox o \
                 JOIN tasks t ON t.seq = o.task_seq \
                 WHERE EXISTS (SELECT 1 FROM push_outbox) \
                 AND j.task_id = t.task_id AND j.owner_tenant = t.owner_tenant \
                 AND j.owner_user = t.owner_user AND j.node = $2 \
                 AND j.state NOT IN ('RUNNING', 'PENDING')",
                vec![Bind::I64(micros(at)), Bind::Text(node.to_owned())],
            )
            .await?;
        }
        Ok(running)
    }

    /// `JobStore::take_over_deliveries`.
    pub(crate) async fn take_over_deliveries(
        &self,
        pass: &LeasePass<'_>,
        node: &str,
    ) -> Result<Vec<Job>, StoreError> {
        if !self.keeps_outbox() {
            return Ok(Vec::new());
        }
        // A compare-and-set per row, as a lease pass's: a heartbeat renewed
        // meanwhile no longer matches, and of two nodes sweeping at once one
        // takes each job.
        let rows = sqlx::query(&format!(
            "UPDATE jobs SET node = $1, heartbeat_us = $2 WHERE task_id IN ( \
                 SELECT j.task_id FROM push_outbox o JOIN tasks t ON t.seq = o.task_seq \
                 JOIN jobs j ON j.task_id = t.task_id AND j.owner_tenant = t.owner_tenant \
                 AND j.owner_user = t.owner_user \
                 WHERE j.state NOT IN ('RUNNING', 'PENDING') \
                 AND (j.heartbeat_us < $3 OR j.node = $4) \
                 GROUP BY j.task_id ORDER BY j.task_id LIMIT $5) \
             AND state NOT IN ('RUNNING', 'PENDING') AND (heartbeat_us < $3 OR node = $4) \
             RETURNING {JOB_COLUMNS}"
        ))
        .bind(node)
        .bind(micros(pass.at))
        .bind(micros(pass.expired_before))
        .bind(pass.restarted.unwrap_or(""))
        .bind(i64::try_from(pass.limit).unwrap_or(i64::MAX))
        .fetch_all(&self.writer)
        .await
        .map_err(backend)?;
        Self::read_jobs(&rows)
    }

    /// `JobStore::finish`, and with `node`, `JobStore::finish_on`.
    pub(crate) async fn finish_job(
        &self,
        task_id: &str,
        state: JobState,
        reason: Option<&str>,
        at: DateTime<Utc>,
        node: Option<&str>,
    ) -> Result<(), StoreError> {
        if !state.is_finished() {
            return Err(StoreError::Invalid(format!(
                "a job cannot finish as {state}"
            )));
        }
        let mut binds = vec![
            Bind::Text(state.as_str().to_owned()),
            Bind::OptText(reason.map(str::to_owned)),
            Bind::I64(micros(at)),
            Bind::Text(task_id.to_owned()),
        ];
        let statement = match node {
            None => "UPDATE jobs SET state = $1, reason = $2, updated_us = $3 WHERE task_id = $4",
            Some(node) => {
                binds.push(Bind::Text(node.to_owned()));
                "UPDATE jobs SET state = $1, reason = $2, updated_us = $3, \
                 node = $5, heartbeat_us = $3 WHERE task_id = $4"
            }
        };
        let written = self
            .execute_write(WriteScope::Task(task_id), statement, binds)
            .await?;
        if written == 0 {
            return Err(StoreError::NotFound(task_id.to_owned()));
        }
        Ok(())
    }

    /// `JobStore::take_over` (and `JobStore::recover`, a pass over every orphan).
    pub(crate) async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
        let restarted = pass.restarted.unwrap_or("");
        let mut tx = self.writer.begin().await.map_err(backend)?;
        let abandoned = sqlx::query(&format!(
            "UPDATE jobs SET state = 'ABANDONED', reason = $1, updated_us = $2 \
             WHERE state = 'RUNNING' AND heartbeat_us < $3 RETURNING {JOB_COLUMNS}"
        ))
        .bind(ABANDONED_REASON)
        .bind(micros(pass.at))
        .bind(micros(pass.stale_before))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        // A compare-and-set on each row: a lease renewed meanwhile no longer
        // matches, and two nodes expiring at once expire each job once.
        sqlx::query(
            "UPDATE jobs SET state = 'PENDING', updated_us = $1 WHERE state = 'RUNNING' \
             AND (heartbeat_us < $2 OR node = $3)",
        )
        .bind(micros(pass.at))
        .bind(micros(pass.expired_before))
        .bind(restarted)
        .execute(&mut *tx)
        .await
        .map_err(backend)?;
        let pending = sqlx::query(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE state = 'PENDING' \
             ORDER BY created_us, task_id LIMIT $1"
        ))
        .bind(i64::try_from(pass.limit).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        let mut abandoned = Self::read_jobs(&abandoned)?;
        abandoned.sort_by(|a, b| (a.created_at, &a.task_id).cmp(&(b.created_at, &b.task_id)));
        Ok(Recovered {
            abandoned,
            pending: Self::read_jobs(&pending)?,
        })
    }

    /// `JobStore::claim`.
    pub(crate) async fn claim_job(
        &self,
        task_id: &str,
        node: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        let written = self
            .execute_write(
                WriteScope::Task(task_id),
                "UPDATE jobs SET state = 'RUNNING', node = $1, attempts = attempts + 1, \
                 heartbeat_us = $2, updated_us = $2 WHERE task_id = $3 AND state = 'PENDING'",
                vec![
                    Bind::Text(node.to_owned()),
                    Bind::I64(micros(at)),
                    Bind::Text(task_id.to_owned()),
                ],
            )
            .await?;
        Ok(written == 1)
    }

    /// `JobStore::release`.
    pub(crate) async fn release_job(
        &self,
        task_id: &str,
        at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.execute_write(
            WriteScope::Task(task_id),
            "UPDATE jobs SET state = 'PENDING', updated_us = $1 \
             WHERE task_id = $2 AND state = 'RUNNING'",
            vec![Bind::I64(micros(at)), Bind::Text(task_id.to_owned())],
        )
        .await?;
        Ok(())
    }

    /// `JobStore::get`.
    pub(crate) async fn get_job(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs WHERE task_id = $1"
        ))
        .bind(task_id)
        .fetch_optional(&self.reader)
        .await
        .map_err(backend)?;
        row.as_ref().map(Self::read_job).transpose()
    }

    /// `JobStore::list`.
    pub(crate) async fn list_jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
        let mut sql = Statement::<DB>::new(format!("SELECT {JOB_COLUMNS} FROM jobs WHERE 1 = 1"));
        if let Some(state) = filter.state {
            sql.push(" AND state = ").bind(state.as_str());
        }
        if let Some(after) = &filter.after {
            let updated = micros(after.updated_at);
            sql.push(" AND (updated_us < ")
                .bind(updated)
                .push(" OR (updated_us = ")
                .bind(updated)
                .push(" AND task_id < ")
                .bind(after.task_id.as_str())
                .push("))");
        }
        sql.push(" ORDER BY updated_us DESC, task_id DESC LIMIT ")
            .bind(i64::try_from(filter.limit).unwrap_or(i64::MAX));
        let (text, args) = sql.into_parts()?;
        let rows = sqlx::query_with(&text, args)
            .fetch_all(&self.reader)
            .await
            .map_err(backend)?;
        Self::read_jobs(&rows)
    }

    /// `JobStore::finished_before`.
    pub(crate) async fn finished_jobs_before(
        &self,
        cutoff: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {JOB_COLUMNS} FROM jobs \
             WHERE state IN {finished} AND updated_us < $1 \
             ORDER BY updated_us, task_id LIMIT $2",
            finished = finished_jobs!(),
        ))
        .bind(micros(cutoff))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.reader)
        .await
        .map_err(backend)?;
        Self::read_jobs(&rows)
    }

    /// `JobStore::remove`.
    pub(crate) async fn remove_job(&self, task_id: &str) -> Result<(), StoreError> {
        self.execute_write(
            WriteScope::Task(task_id),
            "DELETE FROM jobs WHERE task_id = $1",
            vec![Bind::Text(task_id.to_owned())],
        )
        .await?;
        Ok(())
    }

    fn read_job(row: &DB::Row) -> Result<Job, StoreError> {
        job_from_row(JobRow {
            task_id: row.try_get(0).map_err(backend)?,
            owner_tenant: row.try_get(1).map_err(backend)?,
            owner_user: row.try_get(2).map_err(backend)?,
            state: row.try_get(3).map_err(backend)?,
            node: row.try_get(4).map_err(backend)?,
            heartbeat_us: row.try_get(5).map_err(backend)?,
            attempts: row.try_get(6).map_err(backend)?,
            request: row.try_get(7).map_err(backend)?,
            reason: row.try_get(8).map_err(backend)?,
            created_us: row.try_get(9).map_err(backend)?,
            updated_us: row.try_get(10).map_err(backend)?,
        })
    }

    fn read_jobs(rows: &[DB::Row]) -> Result<Vec<Job>, StoreError> {
        rows.iter().map(Self::read_job).collect()
    }

    /// `SELECT {select} FROM tasks` with the caller's scope and the query's filters.
    fn filtered<'a>(select: &str, caller: &'a Caller, query: &TaskQuery<'a>) -> Statement<'a, DB> {
        let mut sql = Self::scoped(format!("SELECT {select} FROM tasks"), caller, query);
        if let Some(from) = query.timestamp_from_ms {
            sql.push(" AND status_ms >= ").bind(from);
        }
        sql
    }

    /// The query that counts ListTasks' `totalSize`: from the counts the
    /// schema's triggers keep (see the `task_counts` migration) for every
    /// filter they can answer, so a page does not cost all of the caller's
    /// tasks. A timestamp filter cannot be answered from counts and counts
    /// the matching rows: an index range of the caller's tasks newer than the
    /// instant (each filter's index leads with the owner, then the status time).
    /// So does a context filter where the schema keeps no context counts
    /// (SQLite): the range of the context's tasks in its index.
    pub(crate) fn total_size<'a>(caller: &'a Caller, query: &TaskQuery<'a>) -> Statement<'a, DB> {
        if query.context_id.is_some() && !D::COUNTS_CONTEXTS {
            // The context's range of its index, whatever else filters: left
            // to choose, SQLite (without statistics) counts a context's tasks
            // in one state through the owner's index of that state, all of
            // the owner's tasks in it. A unary `+` keeps `state` off indexes.
            let mut unindexed_state = query.clone();
            unindexed_state.state = None;
            let mut sql = Self::filtered("COUNT(*)", caller, &unindexed_state);
            if let Some(state) = query.state {
                sql.push(" AND +state = ").bind(state.number());
            }
            return sql;
        }
        if query.timestamp_from_ms.is_some() {
            return Self::filtered("COUNT(*)", caller, query);
        }
        // CAST: PostgreSQL's SUM of a BIGINT is a NUMERIC.
        let table = match query.context_id {
            Some(_) => "task_context_counts",
            None => "task_counts",
        };
        Self::scoped(
            format!("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM {table}"),
            caller,
            query,
        )
    }

    /// `query_head` restricted to the caller's tasks and the query's context
    /// and state: the same columns name them in the tasks and in both count
    /// tables.
    fn scoped<'a>(
        query_head: String,
        caller: &'a Caller,
        query: &TaskQuery<'a>,
    ) -> Statement<'a, DB> {
        let mut sql = Statement::new(query_head);
        sql.push(" WHERE owner_tenant = ")
            .bind(caller.tenant.as_str())
            .push(" AND owner_user = ")
            .bind(caller.user.as_str());
        if let Some(context_id) = query.context_id {
            sql.push(" AND context_id = ").bind(context_id);
        }
        if let Some(state) = query.state {
            sql.push(" AND state = ").bind(state.number());
        }
        sql
    }
}

/// Implements `TaskStore`, `PushConfigStore` and `JobStore` for `$store` (a
/// struct whose `store` field is a [`SqlStore`]) by handing every call to
/// that field: the operations themselves are the generic code above.
///
/// The public stores are two types, `SqliteStore` and `PostgresStore` (their
/// names label them, in telemetry among other places), and `a2a-server`'s
/// traits can only be implemented for them one by one: Rust's orphan rule
/// forbids one impl for every type with a `SqlStore` inside. This writes
/// those hand-offs once for both.
macro_rules! delegate_store_traits {
    ($store:ty) => {
        const _: () = {
            use a2a_core::{ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig};
            use a2a_server::Caller;
            use a2a_server::store::{
                Cause, Job, JobFilter, JobState, JobStore, LeasePass, NewJob, PushConfigStore,
                Recovered, StoreError, StoredEvent, StoredTask, TaskStore, Version,
            };
            use async_trait::async_trait;
            use chrono::{DateTime, Utc};

            #[async_trait]
            impl TaskStore for $store {
                async fn create(
                    &self,
                    caller: &Caller,
                    task: &Task,
                    cause: &Cause<'_>,
                ) -> Result<Version, StoreError> {
                    self.store.create_task(caller, task, cause).await
                }

                async fn update(
                    &self,
                    caller: &Caller,
                    task: &Task,
                    expected: Version,
                    cause: &Cause<'_>,
                ) -> Result<Version, StoreError> {
                    self.store.update_task(caller, task, expected, cause).await
                }

                async fn get(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                ) -> Result<StoredTask, StoreError> {
                    self.store.get_task(caller, task_id).await
                }

                async fn list(
                    &self,
                    caller: &Caller,
                    request: &ListTasksRequest,
                ) -> Result<ListTasksResponse, StoreError> {
                    self.store.list_tasks(caller, request).await
                }

                async fn count_for_user(&self, user: &str) -> Result<Option<u64>, StoreError> {
                    self.store.count_for_user(user).await
                }

                async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
                    self.store.delete_task(caller, task_id).await
                }

                async fn terminal_before(
                    &self,
                    cutoff: DateTime<Utc>,
                    limit: usize,
                ) -> Result<Vec<(Caller, String)>, StoreError> {
                    self.store.terminal_tasks_before(cutoff, limit).await
                }

                fn writes_jobs(&self) -> bool {
                    true
                }

                async fn events(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                ) -> Result<Vec<StoredEvent>, StoreError> {
                    self.store.task_events(caller, task_id).await
                }
            }

            #[async_trait]
            impl PushConfigStore for $store {
                async fn save(
                    &self,
                    caller: &Caller,
                    config: TaskPushNotificationConfig,
                ) -> Result<TaskPushNotificationConfig, StoreError> {
                    self.store.save_push_config(caller, config).await
                }

                async fn get(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                    config_id: &str,
                ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
                    self.store.get_push_config(caller, task_id, config_id).await
                }

                async fn list(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
                    self.store.list_push_configs(caller, task_id).await
                }

                async fn delete(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                    config_id: &str,
                ) -> Result<(), StoreError> {
                    self.store
                        .delete_push_config(caller, task_id, config_id)
                        .await
                }

                async fn delete_all(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                ) -> Result<(), StoreError> {
                    self.store.delete_push_configs(caller, task_id).await
                }

                async fn undelivered(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                ) -> Result<Vec<StoredEvent>, StoreError> {
                    self.store.undelivered(caller, task_id).await
                }

                async fn delivered(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                    version: Version,
                ) -> Result<(), StoreError> {
                    self.store.delivered(caller, task_id, version).await
                }

                fn keeps_outbox(&self) -> bool {
                    self.store.keeps_outbox()
                }
            }

            #[async_trait]
            impl JobStore for $store {
                async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
                    self.store.record_job(job).await
                }

                async fn heartbeat(
                    &self,
                    node: &str,
                    at: DateTime<Utc>,
                ) -> Result<u64, StoreError> {
                    self.store.heartbeat(node, at).await
                }

                async fn finish(
                    &self,
                    task_id: &str,
                    state: JobState,
                    reason: Option<&str>,
                    at: DateTime<Utc>,
                ) -> Result<(), StoreError> {
                    self.store
                        .finish_job(task_id, state, reason, at, None)
                        .await
                }

                async fn finish_on(
                    &self,
                    task_id: &str,
                    state: JobState,
                    reason: Option<&str>,
                    at: DateTime<Utc>,
                    node: &str,
                ) -> Result<(), StoreError> {
                    self.store
                        .finish_job(task_id, state, reason, at, Some(node))
                        .await
                }

                async fn recover(
                    &self,
                    stale_before: DateTime<Utc>,
                    at: DateTime<Utc>,
                ) -> Result<Recovered, StoreError> {
                    self.store
                        .take_over(&LeasePass::all_orphaned(stale_before, at))
                        .await
                }

                async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
                    self.store.take_over(pass).await
                }

                async fn take_over_deliveries(
                    &self,
                    pass: &LeasePass<'_>,
                    node: &str,
                ) -> Result<Vec<Job>, StoreError> {
                    self.store.take_over_deliveries(pass, node).await
                }

                async fn claim(
                    &self,
                    task_id: &str,
                    node: &str,
                    at: DateTime<Utc>,
                ) -> Result<bool, StoreError> {
                    self.store.claim_job(task_id, node, at).await
                }

                async fn release(
                    &self,
                    task_id: &str,
                    at: DateTime<Utc>,
                ) -> Result<(), StoreError> {
                    self.store.release_job(task_id, at).await
                }

                async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
                    self.store.get_job(task_id).await
                }

                async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
                    self.store.list_jobs(filter).await
                }

                async fn finished_before(
                    &self,
                    cutoff: DateTime<Utc>,
                    limit: usize,
                ) -> Result<Vec<Job>, StoreError> {
                    self.store.finished_jobs_before(cutoff, limit).await
                }

                async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
                    self.store.remove_job(task_id).await
                }
            }
        };
    };
}

pub(crate) use delegate_store_traits;

/// A statement put together piece by piece, as sqlx's `QueryBuilder` does
/// (each value's placeholder in the database's own form), but giving its
/// text and values apart: a query built by `QueryBuilder` borrows the builder
/// for as long as the values, which generic code then cannot drop.
pub(crate) struct Statement<'a, DB: Database> {
    text: String,
    /// The values, or why one could not be added.
    args: Result<DB::Arguments<'a>, BoxDynError>,
}

impl<'a, DB: Database> Statement<'a, DB> {
    fn new(text: String) -> Self {
        Statement {
            text,
            args: Ok(DB::Arguments::default()),
        }
    }

    fn push(&mut self, sql: &str) -> &mut Self {
        self.text.push_str(sql);
        self
    }

    /// Binds `value` to a parameter written here.
    fn bind<T>(&mut self, value: T) -> &mut Self
    where
        T: 'a + Encode<'a, DB> + Type<DB>,
    {
        if let Ok(args) = &mut self.args {
            let added = args.add(value).and_then(|()| {
                args.format_placeholder(&mut self.text)
                    .map_err(BoxDynError::from)
            });
            if let Err(err) = added {
                self.args = Err(err);
            }
        }
        self
    }

    /// The text and the values, or why a value could not be bound.
    pub(crate) fn into_parts(self) -> Result<(String, DB::Arguments<'a>), StoreError> {
        let args = self
            .args
            .map_err(|e| StoreError::Backend(format!("binding a value: {e}")))?;
        Ok((self.text, args))
    }
}
