//! What both SQL backends share: conversions between rows and store types,
//! and (as a macro, since the SQL is the same text on both) the store
//! implementations themselves.

use a2a_core::{StreamResponse, Task, TaskPushNotificationConfig};
use a2a_server::Caller;
use a2a_server::store::{Checkpoint, Job, JobState, JobWrite, NewJob, StoreError};
use chrono::{DateTime, Utc};

use crate::crypt::{self, PushKey};

/// The columns of a job, in the order [`job_from_parts`] takes them.
pub(crate) const JOB_COLUMNS: &str = "task_id, owner_tenant, owner_user, state, node, heartbeat_us, \
     attempts, request, reason, created_us, updated_us";

/// The meta row that recognises the push-credentials key.
pub(crate) const KEY_CHECK_NAME: &str = "push_key_check";

/// A value bound to a task write (owned: the write may wait in a queue).
#[derive(Debug)]
pub(crate) enum Bind {
    Text(String),
    I32(i32),
    I64(i64),
    OptI64(Option<i64>),
    OptText(Option<String>),
    OptBytes(Option<Vec<u8>>),
}

/// Which task write a backend runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum TaskOp {
    Create,
    Update,
}

/// What a job change riding along with a task write does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobOp {
    /// Insert the job, or replace a finished one; the task write happens only
    /// if the task has no unfinished job. Binds: task id, owner tenant, owner
    /// user, state, node, at, request, reason.
    Record,
    /// Finish the task's job; the task write happens only if the job exists.
    /// Binds: task id, state, reason, at.
    Finish,
}

/// A job change to apply with a task write, in the same transaction.
#[derive(Debug)]
pub(crate) struct JobChange {
    pub(crate) op: JobOp,
    /// The job's task.
    pub(crate) task_id: String,
    /// In the order [`JobOp`] gives.
    pub(crate) binds: Vec<Bind>,
}

impl JobChange {
    /// The change `write` asks for, for the task `task_id`.
    pub(crate) fn from_write(task_id: &str, write: &JobWrite<'_>) -> Result<Self, StoreError> {
        // A job recorded already finished is never resumed: its request (the
        // message again, as JSON) would only add to every such write.
        let record = |job: &NewJob<'_>, state: JobState, reason: Option<&str>| JobChange {
            op: JobOp::Record,
            task_id: job.task_id.to_owned(),
            binds: vec![
                Bind::Text(job.task_id.to_owned()),
                Bind::Text(job.owner.tenant.clone()),
                Bind::Text(job.owner.user.clone()),
                Bind::Text(state.as_str().to_owned()),
                Bind::Text(job.node.to_owned()),
                Bind::I64(micros(job.at)),
                Bind::Text(if state.is_finished() {
                    String::new()
                } else {
                    job.request.to_owned()
                }),
                Bind::OptText(reason.map(str::to_owned)),
            ],
        };
        let finished = |state: JobState| {
            if state.is_finished() {
                Ok(())
            } else {
                Err(StoreError::Invalid(format!(
                    "a job cannot finish as {state}"
                )))
            }
        };
        match *write {
            JobWrite::Record(job) => Ok(record(job, JobState::Running, None)),
            JobWrite::RecordFinished { job, state, reason } => {
                finished(state)?;
                Ok(record(job, state, reason))
            }
            JobWrite::Finish { state, reason, at } => {
                finished(state)?;
                Ok(JobChange {
                    op: JobOp::Finish,
                    task_id: task_id.to_owned(),
                    binds: vec![
                        Bind::Text(task_id.to_owned()),
                        Bind::Text(state.as_str().to_owned()),
                        Bind::OptText(reason.map(str::to_owned)),
                        Bind::I64(micros(at)),
                    ],
                })
            }
        }
    }
}

/// Binds `binds` to `query` in order.
#[cfg(feature = "postgres")]
macro_rules! bind_all {
    ($query:expr, $binds:expr) => {{
        use $crate::common::Bind;
        let mut query = $query;
        for bind in $binds {
            query = match bind {
                Bind::Text(v) => query.bind(v),
                Bind::I32(v) => query.bind(v),
                Bind::I64(v) => query.bind(v),
                Bind::OptI64(v) => query.bind(v),
                Bind::OptText(v) => query.bind(v),
                Bind::OptBytes(v) => query.bind(v),
            };
        }
        query
    }};
}

#[cfg(feature = "postgres")]
pub(crate) use bind_all;

pub(crate) fn backend(err: sqlx::Error) -> StoreError {
    StoreError::Backend(err.to_string())
}

pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Invalid(format!("{what} {value} is too large")))
}

pub(crate) fn to_u64(value: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(value)
        .map_err(|_| StoreError::Backend(format!("stored {what} {value} is negative")))
}

pub(crate) fn micros(at: DateTime<Utc>) -> i64 {
    at.timestamp_micros()
}

pub(crate) fn from_micros(us: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_micros(us)
        .ok_or_else(|| StoreError::Backend(format!("stored time {us} is out of range")))
}

pub(crate) fn task_json(task: &Task) -> Result<String, StoreError> {
    serde_json::to_string(task).map_err(|e| StoreError::Backend(format!("serializing task: {e}")))
}

pub(crate) fn parse_task(json: &str) -> Result<Task, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Backend(format!("reading task: {e}")))
}

pub(crate) fn event_json(event: &StreamResponse) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|e| StoreError::Backend(format!("serializing event: {e}")))
}

pub(crate) fn parse_event(json: &str) -> Result<StreamResponse, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Backend(format!("reading event: {e}")))
}

/// A checkpoint's columns (both `None` without one).
pub(crate) fn checkpoint_columns(
    checkpoint: Option<&Checkpoint>,
) -> Result<(Bind, Bind), StoreError> {
    match checkpoint {
        Some(c) => Ok((
            Bind::OptI64(Some(to_i64(c.turn, "checkpoint turn")?)),
            Bind::OptBytes(Some(c.state.clone())),
        )),
        None => Ok((Bind::OptI64(None), Bind::OptBytes(None))),
    }
}

pub(crate) fn checkpoint_from(
    turn: Option<i64>,
    state: Option<Vec<u8>>,
) -> Result<Option<Checkpoint>, StoreError> {
    match turn {
        Some(turn) => Ok(Some(Checkpoint::new(
            to_u64(turn, "checkpoint turn")?,
            state.unwrap_or_default(),
        ))),
        None => Ok(None),
    }
}

/// A push config as stored: JSON, its credentials sealed under `key`.
pub(crate) fn config_json(
    key: Option<&PushKey>,
    config: &TaskPushNotificationConfig,
) -> Result<String, StoreError> {
    let json = |config: &TaskPushNotificationConfig| {
        serde_json::to_string(config)
            .map_err(|e| StoreError::Backend(format!("serializing push config: {e}")))
    };
    match &config.authentication {
        Some(auth) if key.is_some() && !auth.credentials.is_empty() => {
            let mut sealed = config.clone();
            if let Some(auth) = &mut sealed.authentication {
                auth.credentials = crypt::seal(key, &auth.credentials)?;
            }
            json(&sealed)
        }
        _ => json(config),
    }
}

pub(crate) fn parse_config(
    key: Option<&PushKey>,
    json: &str,
) -> Result<TaskPushNotificationConfig, StoreError> {
    let mut config: TaskPushNotificationConfig = serde_json::from_str(json)
        .map_err(|e| StoreError::Backend(format!("reading push config: {e}")))?;
    if let Some(auth) = &mut config.authentication {
        auth.credentials = crypt::unseal(key, &auth.credentials)?;
    }
    Ok(config)
}

/// The columns of a job row ([`JOB_COLUMNS`]).
pub(crate) struct JobRow {
    pub(crate) task_id: String,
    pub(crate) owner_tenant: String,
    pub(crate) owner_user: String,
    pub(crate) state: String,
    pub(crate) node: String,
    pub(crate) heartbeat_us: i64,
    pub(crate) attempts: i64,
    pub(crate) request: String,
    pub(crate) reason: Option<String>,
    pub(crate) created_us: i64,
    pub(crate) updated_us: i64,
}

pub(crate) fn job_from_row(row: JobRow) -> Result<Job, StoreError> {
    let owner = Caller {
        tenant: row.owner_tenant,
        user: row.owner_user,
    };
    let created_at = from_micros(row.created_us)?;
    let mut job = Job::recorded(&NewJob {
        task_id: &row.task_id,
        owner: &owner,
        node: &row.node,
        request: &row.request,
        at: created_at,
    });
    job.state = row
        .state
        .parse::<JobState>()
        .map_err(|_| StoreError::Backend(format!("stored job state {:?} is unknown", row.state)))?;
    job.heartbeat = from_micros(row.heartbeat_us)?;
    job.attempts = u32::try_from(row.attempts).map_err(|_| {
        StoreError::Backend(format!("stored attempts {} out of range", row.attempts))
    })?;
    job.reason = row.reason;
    job.updated_at = from_micros(row.updated_us)?;
    Ok(job)
}

/// Implements `TaskStore`, `PushConfigStore` and `JobStore` for `$store` (a
/// struct with `push_key: Option<PushKey>`, methods `reader()` and `writer()`
/// giving the pools that read and write, `write_task(op, binds, job)` that
/// runs a task write and returns the rows it changed,
/// `execute_write(sql, binds)` that runs any other write statement (`$N`
/// parameters from `binds[N - 1]`) and returns the rows it changed, and
/// `push_config_saving(task_id)` and `may_have_push_configs(task_id)`, which
/// may skip listing a task that surely has no push configs).
///
/// A task write writes the task and appends its event atomically, with the
/// job change if there is one. A create binds task id, owner tenant, owner
/// user, context id, state, status ms, task JSON, checkpoint turn, checkpoint
/// state, event JSON; an update binds context id, state, status ms, task JSON,
/// checkpoint turn, checkpoint state, task id, owner tenant, owner user,
/// expected version, event JSON; the job change's binds follow ([`JobOp`]).
/// Either changes no row (and writes nothing) when the task exists (create)
/// or is missing, foreign or of another version (update), or when the job
/// change cannot apply (an unfinished job to record over, no job to finish).
macro_rules! sql_stores {
    ($store:ty, $db:ty) => {
        const _: () = {
            use a2a_core::{ListTasksRequest, ListTasksResponse, Task, TaskPushNotificationConfig};
            use a2a_server::Caller;
            use a2a_server::store::listing::{ListPosition, TaskQuery, status_timestamp_ms};
            use a2a_server::store::{
                ABANDONED_REASON, Cause, Job, JobFilter, JobState, JobStore, NewJob,
                PushConfigStore, LeasePass, Recovered, StoreError, StoredEvent, StoredTask, TaskStore,
                Version,
            };
            use async_trait::async_trait;
            use chrono::{DateTime, Utc};
            use sqlx::{QueryBuilder, Row as _};

            use $crate::common::{
                Bind, JOB_COLUMNS, JobChange, JobOp, JobRow, TaskOp, backend, checkpoint_columns, checkpoint_from, config_json,
                event_json, job_from_row, micros, parse_config, parse_event, parse_task,
                task_json, to_i64, to_u64,
            };

            type Row = <$db as sqlx::Database>::Row;

            fn read_job(row: &Row) -> Result<Job, StoreError> {
                let column = |e: sqlx::Error| backend(e);
                job_from_row(JobRow {
                    task_id: row.try_get(0).map_err(column)?,
                    owner_tenant: row.try_get(1).map_err(column)?,
                    owner_user: row.try_get(2).map_err(column)?,
                    state: row.try_get(3).map_err(column)?,
                    node: row.try_get(4).map_err(column)?,
                    heartbeat_us: row.try_get(5).map_err(column)?,
                    attempts: row.try_get(6).map_err(column)?,
                    request: row.try_get(7).map_err(column)?,
                    reason: row.try_get(8).map_err(column)?,
                    created_us: row.try_get(9).map_err(column)?,
                    updated_us: row.try_get(10).map_err(column)?,
                })
            }

            fn read_jobs(rows: &[Row]) -> Result<Vec<Job>, StoreError> {
                rows.iter().map(read_job).collect()
            }

            /// `SELECT {select} FROM tasks` with the caller's scope and the query's filters.
            fn filtered<'a>(
                select: &str,
                caller: &'a Caller,
                query: &TaskQuery<'a>,
            ) -> QueryBuilder<'a, $db> {
                let mut sql = scoped(format!("SELECT {select} FROM tasks"), caller, query);
                if let Some(from) = query.timestamp_from_ms {
                    sql.push(" AND status_ms >= ").push_bind(from);
                }
                sql
            }

            /// The query that counts ListTasks' `totalSize`: from the counts the
            /// schema's triggers keep (see the `task_counts` migration) for
            /// every filter they can answer, so a page does not cost all of
            /// the caller's tasks. A timestamp filter cannot be answered from
            /// counts and counts the matching rows: an index range of the
            /// caller's tasks newer than the instant (each filter's index leads
            /// with the owner, then the status time).
            fn total_size<'a>(caller: &'a Caller, query: &TaskQuery<'a>) -> QueryBuilder<'a, $db> {
                if query.timestamp_from_ms.is_some() {
                    return filtered("COUNT(*)", caller, query);
                }
                // CAST: PostgreSQL's SUM of a BIGINT is a NUMERIC.
                let table = match query.context_id {
                    Some(_) => "task_context_counts",
                    None => "task_counts",
                };
                scoped(
                    format!("SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM {table}"),
                    caller,
                    query,
                )
            }

            /// `query_head` restricted to the caller's tasks and the query's
            /// context and state: the same columns name them in the tasks and
            /// in both count tables.
            fn scoped<'a>(
                query_head: String,
                caller: &'a Caller,
                query: &TaskQuery<'a>,
            ) -> QueryBuilder<'a, $db> {
                let mut sql = QueryBuilder::new(query_head);
                sql.push(" WHERE owner_tenant = ")
                    .push_bind(caller.tenant.as_str())
                    .push(" AND owner_user = ")
                    .push_bind(caller.user.as_str());
                if let Some(context_id) = query.context_id {
                    sql.push(" AND context_id = ").push_bind(context_id);
                }
                if let Some(state) = query.state {
                    sql.push(" AND state = ").push_bind(state.number());
                }
                sql
            }

            #[async_trait]
            impl TaskStore for $store {
                async fn create(
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
                    // One statement group writes the task, appends its event and
                    // applies the job change, atomically.
                    let written = self
                        .write_task(
                            TaskOp::Create,
                            vec![
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
                            ],
                            job,
                        )
                        .await?;
                    if written == 0 {
                        // Refused: the task exists, or the job change could not
                        // apply (an unfinished job to record over, none to finish).
                        if job_op == Some(JobOp::Finish) {
                            let exists: Option<i64> =
                                sqlx::query_scalar("SELECT 1 FROM tasks WHERE task_id = $1")
                                    .bind(&task.id)
                                    .fetch_optional(self.writer())
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

                async fn update(
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
                    let job_refusal = job.as_ref().map(|job| match job.op {
                        JobOp::Record => StoreError::AlreadyExists(job.task_id.clone()),
                        JobOp::Finish => StoreError::NotFound(job.task_id.clone()),
                    });
                    // One statement checks the version, writes the task and appends
                    // its event (and applies the job change, in the same
                    // transaction): a concurrent writer of the same version finds
                    // it changed.
                    let written = self
                        .write_task(
                            TaskOp::Update,
                            vec![
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
                            ],
                            job,
                        )
                        .await?;
                    if written == 0 {
                        let found: Option<i64> = sqlx::query_scalar(
                            "SELECT version FROM tasks \
                             WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3",
                        )
                        .bind(&task.id)
                        .bind(&caller.tenant)
                        .bind(&caller.user)
                        .fetch_optional(self.writer())
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

                fn writes_jobs(&self) -> bool {
                    true
                }

                async fn get(&self, caller: &Caller, task_id: &str) -> Result<StoredTask, StoreError> {
                    let row = sqlx::query(
                        "SELECT task, version, checkpoint_turn, checkpoint_state FROM tasks \
                         WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3",
                    )
                    .bind(task_id)
                    .bind(&caller.tenant)
                    .bind(&caller.user)
                    .fetch_optional(self.reader())
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

                async fn list(
                    &self,
                    caller: &Caller,
                    request: &ListTasksRequest,
                ) -> Result<ListTasksResponse, StoreError> {
                    let query = TaskQuery::from_request(request)?;
                    let total: i64 = total_size(caller, &query)
                        .build_query_scalar()
                        .fetch_one(self.reader())
                        .await
                        .map_err(backend)?;
                    let mut page = filtered("seq, status_ms, task", caller, &query);
                    if let Some(after) = query.after {
                        let seq = to_i64(after.sequence, "page token")?;
                        page.push(" AND (status_ms < ")
                            .push_bind(after.timestamp_ms)
                            .push(" OR (status_ms = ")
                            .push_bind(after.timestamp_ms)
                            .push(" AND seq > ")
                            .push_bind(seq)
                            .push("))");
                    }
                    // One more than a page tells whether another page follows.
                    page.push(" ORDER BY status_ms DESC, seq ASC LIMIT ")
                        .push_bind(to_i64(query.page_size as u64 + 1, "page size")?);
                    let rows = page.build().fetch_all(self.reader()).await.map_err(backend)?;
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

                async fn count_for_user(&self, user: &str) -> Result<Option<u64>, StoreError> {
                    // The counts hold a row per owner and state: far fewer than
                    // the user's tasks (and owner_user leads no index of tasks).
                    let count: i64 = sqlx::query_scalar(
                        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM task_counts WHERE owner_user = $1",
                    )
                        .bind(user)
                        .fetch_one(self.reader())
                        .await
                        .map_err(backend)?;
                    Ok(Some(to_u64(count, "task count")?))
                }

                async fn delete(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
                    // Its events go with it (ON DELETE CASCADE).
                    self.execute_write(
                        "DELETE FROM tasks WHERE task_id = $1 AND owner_tenant = $2 AND owner_user = $3",
                        vec![Bind::Text(task_id.to_owned()), Bind::Text(caller.tenant.clone()), Bind::Text(caller.user.clone())],
                    )
                    .await?;
                    Ok(())
                }

                async fn events(
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
                    .bind(&caller.tenant)
                    .bind(&caller.user)
                    .fetch_all(self.reader())
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
            }

            #[async_trait]
            impl PushConfigStore for $store {
                async fn save(
                    &self,
                    caller: &Caller,
                    mut config: TaskPushNotificationConfig,
                ) -> Result<TaskPushNotificationConfig, StoreError> {
                    if config.id.is_empty() {
                        config.id = a2a_core::new_id();
                    }
                    let json = config_json(self.push_key.as_ref(), &config)?;
                    self.push_config_saving(&config.task_id);
                    self.execute_write(
                        "INSERT INTO push_configs (owner_tenant, owner_user, task_id, config_id, config) \
                         VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (owner_tenant, owner_user, task_id, config_id) \
                         DO UPDATE SET config = excluded.config",
                        vec![Bind::Text(caller.tenant.clone()), Bind::Text(caller.user.clone()), Bind::Text(config.task_id.clone()), Bind::Text(config.id.clone()), Bind::Text(json)],
                    )
                    .await?;
                    Ok(config)
                }

                async fn get(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                    config_id: &str,
                ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
                    let json: Option<String> = sqlx::query_scalar(
                        "SELECT config FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
                         AND task_id = $3 AND config_id = $4",
                    )
                    .bind(&caller.tenant)
                    .bind(&caller.user)
                    .bind(task_id)
                    .bind(config_id)
                    .fetch_optional(self.reader())
                    .await
                    .map_err(backend)?;
                    json.map(|json| parse_config(self.push_key.as_ref(), &json))
                        .transpose()
                }

                async fn list(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
                    if !self.may_have_push_configs(task_id) {
                        return Ok(Vec::new());
                    }
                    let rows: Vec<String> = sqlx::query_scalar(
                        "SELECT config FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
                         AND task_id = $3 ORDER BY seq",
                    )
                    .bind(&caller.tenant)
                    .bind(&caller.user)
                    .bind(task_id)
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?;
                    rows.iter()
                        .map(|json| parse_config(self.push_key.as_ref(), json))
                        .collect()
                }

                async fn delete(
                    &self,
                    caller: &Caller,
                    task_id: &str,
                    config_id: &str,
                ) -> Result<(), StoreError> {
                    self.execute_write(
                        "DELETE FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
                         AND task_id = $3 AND config_id = $4",
                        vec![Bind::Text(caller.tenant.clone()), Bind::Text(caller.user.clone()), Bind::Text(task_id.to_owned()), Bind::Text(config_id.to_owned())],
                    )
                    .await?;
                    Ok(())
                }

                async fn delete_all(&self, caller: &Caller, task_id: &str) -> Result<(), StoreError> {
                    self.execute_write(
                        "DELETE FROM push_configs WHERE owner_tenant = $1 AND owner_user = $2 \
                         AND task_id = $3",
                        vec![Bind::Text(caller.tenant.clone()), Bind::Text(caller.user.clone()), Bind::Text(task_id.to_owned())],
                    )
                    .await?;
                    Ok(())
                }
            }

            #[async_trait]
            impl JobStore for $store {
                async fn record(&self, job: &NewJob<'_>) -> Result<(), StoreError> {
                    let at = micros(job.at);
                    // Inserts, or replaces a finished job; an unfinished one stays
                    // and the statement writes nothing.
                    let written = self.execute_write(
                        "INSERT INTO jobs (task_id, owner_tenant, owner_user, state, node, heartbeat_us, \
                         attempts, request, reason, created_us, updated_us) \
                         VALUES ($1, $2, $3, 'RUNNING', $4, $5, 1, $6, NULL, $5, $5) \
                         ON CONFLICT (task_id) DO UPDATE SET owner_tenant = excluded.owner_tenant, \
                         owner_user = excluded.owner_user, state = excluded.state, node = excluded.node, \
                         heartbeat_us = excluded.heartbeat_us, attempts = 1, request = excluded.request, \
                         reason = NULL, created_us = excluded.created_us, updated_us = excluded.updated_us \
                         WHERE jobs.state IN ('COMPLETED', 'FAILED', 'ABANDONED')",
                        vec![Bind::Text(job.task_id.to_owned()), Bind::Text(job.owner.tenant.clone()), Bind::Text(job.owner.user.clone()), Bind::Text(job.node.to_owned()), Bind::I64(at), Bind::Text(job.request.to_owned())],
                    )
                    .await?;
                    if written == 0 {
                        return Err(StoreError::AlreadyExists(job.task_id.to_owned()));
                    }
                    Ok(())
                }

                async fn heartbeat(&self, node: &str, at: DateTime<Utc>) -> Result<u64, StoreError> {
                    let written = self.execute_write(
                        "UPDATE jobs SET heartbeat_us = $1 WHERE state = 'RUNNING' AND node = $2",
                        vec![Bind::I64(micros(at)), Bind::Text(node.to_owned())],
                    )
                    .await?;
                    Ok(written)
                }

                async fn finish(
                    &self,
                    task_id: &str,
                    state: JobState,
                    reason: Option<&str>,
                    at: DateTime<Utc>,
                ) -> Result<(), StoreError> {
                    if !state.is_finished() {
                        return Err(StoreError::Invalid(format!("a job cannot finish as {state}")));
                    }
                    let written = self.execute_write(
                        "UPDATE jobs SET state = $1, reason = $2, updated_us = $3 WHERE task_id = $4",
                        vec![Bind::Text(state.as_str().to_owned()), Bind::OptText(reason.map(str::to_owned)), Bind::I64(micros(at)), Bind::Text(task_id.to_owned())],
                    )
                    .await?;
                    if written == 0 {
                        return Err(StoreError::NotFound(task_id.to_owned()));
                    }
                    Ok(())
                }

                async fn recover(
                    &self,
                    stale_before: DateTime<Utc>,
                    at: DateTime<Utc>,
                ) -> Result<Recovered, StoreError> {
                    self.take_over(&LeasePass::all_orphaned(stale_before, at)).await
                }

                async fn take_over(&self, pass: &LeasePass<'_>) -> Result<Recovered, StoreError> {
                    let restarted = pass.restarted.unwrap_or("");
                    let mut tx = self.writer().begin().await.map_err(backend)?;
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
                    // A compare-and-set on each row: a lease renewed meanwhile
                    // no longer matches, and two nodes expiring at once expire
                    // each job once.
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
                    let mut abandoned = read_jobs(&abandoned)?;
                    abandoned.sort_by(|a, b| {
                        (a.created_at, &a.task_id).cmp(&(b.created_at, &b.task_id))
                    });
                    Ok(Recovered {
                        abandoned,
                        pending: read_jobs(&pending)?,
                    })
                }

                async fn claim(
                    &self,
                    task_id: &str,
                    node: &str,
                    at: DateTime<Utc>,
                ) -> Result<bool, StoreError> {
                    let written = self.execute_write(
                        "UPDATE jobs SET state = 'RUNNING', node = $1, attempts = attempts + 1, \
                         heartbeat_us = $2, updated_us = $2 WHERE task_id = $3 AND state = 'PENDING'",
                        vec![Bind::Text(node.to_owned()), Bind::I64(micros(at)), Bind::Text(task_id.to_owned())],
                    )
                    .await?;
                    Ok(written == 1)
                }

                async fn release(&self, task_id: &str, at: DateTime<Utc>) -> Result<(), StoreError> {
                    self.execute_write(
                        "UPDATE jobs SET state = 'PENDING', updated_us = $1 \
                         WHERE task_id = $2 AND state = 'RUNNING'",
                        vec![Bind::I64(micros(at)), Bind::Text(task_id.to_owned())],
                    )
                    .await?;
                    Ok(())
                }

                async fn get(&self, task_id: &str) -> Result<Option<Job>, StoreError> {
                    let row = sqlx::query(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE task_id = $1"))
                        .bind(task_id)
                        .fetch_optional(self.reader())
                        .await
                        .map_err(backend)?;
                    row.as_ref().map(read_job).transpose()
                }

                async fn list(&self, filter: &JobFilter) -> Result<Vec<Job>, StoreError> {
                    let mut sql =
                        QueryBuilder::<$db>::new(format!("SELECT {JOB_COLUMNS} FROM jobs WHERE 1 = 1"));
                    if let Some(state) = filter.state {
                        sql.push(" AND state = ").push_bind(state.as_str());
                    }
                    if let Some(after) = &filter.after {
                        let updated = micros(after.updated_at);
                        sql.push(" AND (updated_us < ")
                            .push_bind(updated)
                            .push(" OR (updated_us = ")
                            .push_bind(updated)
                            .push(" AND task_id < ")
                            .push_bind(after.task_id.as_str())
                            .push("))");
                    }
                    sql.push(" ORDER BY updated_us DESC, task_id DESC LIMIT ")
                        .push_bind(i64::try_from(filter.limit).unwrap_or(i64::MAX));
                    let rows = sql.build().fetch_all(self.reader()).await.map_err(backend)?;
                    read_jobs(&rows)
                }

                async fn finished_before(
                    &self,
                    cutoff: DateTime<Utc>,
                    limit: usize,
                ) -> Result<Vec<Job>, StoreError> {
                    let rows = sqlx::query(&format!(
                        "SELECT {JOB_COLUMNS} FROM jobs \
                         WHERE state IN ('COMPLETED', 'FAILED', 'ABANDONED') AND updated_us < $1 \
                         ORDER BY updated_us, task_id LIMIT $2"
                    ))
                    .bind(micros(cutoff))
                    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                    .fetch_all(self.reader())
                    .await
                    .map_err(backend)?;
                    read_jobs(&rows)
                }

                async fn remove(&self, task_id: &str) -> Result<(), StoreError> {
                    self.execute_write(
                        "DELETE FROM jobs WHERE task_id = $1",
                        vec![Bind::Text(task_id.to_owned())],
                    )
                    .await?;
                    Ok(())
                }
            }
        };
    };
}

pub(crate) use sql_stores;

/// Checks the push-credentials key against the one the database knows (the
/// first keyed open records it).
macro_rules! check_push_key {
    ($pool:expr, $key:expr) => {{
        use $crate::OpenError;
        use $crate::common::KEY_CHECK_NAME;
        use $crate::crypt::{KEY_CHECK, is_sealed};
        let pool = $pool;
        let key: Option<&$crate::PushKey> = $key;
        let stored: Option<String> =
            sqlx::query_scalar("SELECT value FROM a2a_meta WHERE name = $1")
                .bind(KEY_CHECK_NAME)
                .fetch_optional(pool)
                .await?;
        match (key, stored) {
            (Some(key), Some(check)) => {
                if key.open(&check).as_deref() != Some(KEY_CHECK) {
                    return Err(OpenError::WrongKey);
                }
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
            }
            (None, Some(check)) if is_sealed(&check) => return Err(OpenError::KeyRequired),
            (None, _) => {}
        }
    }};
}

pub(crate) use check_push_key;

/// Applies the embedded migrations, refusing a schema newer than the code.
macro_rules! apply_migrations {
    ($migrator:expr, $pool:expr) => {{
        use sqlx::migrate::MigrateError;
        match $migrator.run($pool).await {
            Ok(()) => Ok(()),
            Err(MigrateError::VersionMissing(version)) => {
                Err($crate::OpenError::SchemaTooNew { version })
            }
            Err(err) => Err($crate::OpenError::Migration(err.to_string())),
        }
    }};
}

pub(crate) use apply_migrations;
