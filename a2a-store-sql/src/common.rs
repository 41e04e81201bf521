//! What both SQL backends share besides the store operations (`store.rs`):
//! the values a write binds, and conversions between rows and store types.

use a2a_core::json_writer::WriteJson;
use a2a_core::{StreamResponse, Task, TaskPushNotificationConfig};
use a2a_server::Caller;
use a2a_server::store::{Cause, Checkpoint, Job, JobState, JobWrite, NewJob, StoreError};
use chrono::{DateTime, Utc};

use crate::crypt::{self, PushKey};

/// The columns of a job, in the order [`job_from_parts`] takes them.
pub(crate) const JOB_COLUMNS: &str = "task_id, owner_tenant, owner_user, state, node, heartbeat_us, \
     attempts, request, reason, created_us, updated_us";

/// The finished job states ([`JobState::FINISHED`]) as an SQL list, for
/// `concat!` into the statements that must tell finished jobs from running
/// ones: one list for every statement of both backends, checked against
/// `JobState::FINISHED` by a test, so a new state cannot be left out of one.
macro_rules! finished_jobs {
    () => {
        "('COMPLETED', 'FAILED', 'ABANDONED', 'CANCELED')"
    };
}
pub(crate) use finished_jobs;

/// The unfinished job states (every state not in [`finished_jobs`]), checked
/// by the same test. SQLite tests a list of more than two constants through
/// a temporary table built for each statement (a b-tree opened, a page
/// zeroed); a list of two it compares in place, so its writer's statements
/// say "unfinished" where the list is shorter.
#[cfg_attr(not(feature = "sqlite"), allow(unused_macros))]
macro_rules! unfinished_jobs {
    () => {
        "('PENDING', 'RUNNING')"
    };
}
#[cfg_attr(not(feature = "sqlite"), allow(unused_imports))]
pub(crate) use unfinished_jobs;

/// The terminal task states (`TaskState::is_terminal`, by their numbers as
/// the `state` column stores them) as an SQL list, checked by a test. Task
/// retention's query and its partial index (PostgreSQL's migration
/// `task_retention`) both name it, word for word, so the index serves the
/// query.
#[cfg_attr(not(feature = "postgres"), allow(unused_macros))]
macro_rules! terminal_tasks {
    () => {
        "(3, 4, 5, 7)"
    };
}
#[cfg_attr(not(feature = "postgres"), allow(unused_imports))]
pub(crate) use terminal_tasks;

/// The terminal task states as a predicate on `state` without a list, the
/// way SQLite's partial index of them says it (migration
/// `terminal_index`), checked by a test against `TaskState::is_terminal`.
/// SQLite tests a list of more than two constants through a temporary
/// b-tree built each time a statement runs, and a partial index's predicate
/// runs on every write of a task row; comparisons it tests in place.
#[cfg_attr(not(feature = "sqlite"), allow(unused_macros))]
macro_rules! sqlite_terminal_tasks {
    () => {
        "state BETWEEN 3 AND 7 AND state <> 6"
    };
}
#[cfg_attr(not(feature = "sqlite"), allow(unused_imports))]
pub(crate) use sqlite_terminal_tasks;

/// The meta row that recognises the push-credentials key.
pub(crate) const KEY_CHECK_NAME: &str = "push_key_check";

/// A value bound to a task write (owned: the write may wait in a queue).
#[derive(Debug, Clone)]
pub(crate) enum Bind {
    Text(String),
    I32(i32),
    I64(i64),
    OptI64(Option<i64>),
    OptText(Option<String>),
    OptBytes(Option<Vec<u8>>),
}

/// Whose rows a write statement changes: a backend that runs writes in
/// parallel lanes keeps each task's writes in one lane.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WriteScope<'a> {
    /// One task's (its row, its jobs, its push configs).
    Task(#[cfg_attr(not(feature = "postgres"), allow(dead_code))] &'a str),
    /// Rows of many tasks (a node's jobs).
    Wide,
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

/// A task write: the task row and its event, with the job change if there
/// is one, written atomically.
///
/// A create binds task id, owner tenant, owner user, context id, state,
/// status ms, task JSON, checkpoint turn, checkpoint state, event JSON; an
/// update binds context id, state, status ms, task JSON, checkpoint turn,
/// checkpoint state, task id, owner tenant, owner user, expected version,
/// event JSON; the job change's binds follow ([`JobOp`]). Either changes no
/// row (and writes nothing) when the task exists (create) or is missing,
/// foreign or of another version (update), or when the job change cannot
/// apply (an unfinished job to record over, no job to finish).
#[derive(Debug)]
pub(crate) struct TaskWrite {
    pub(crate) op: TaskOp,
    /// The task's values, the event's last.
    pub(crate) binds: Vec<Bind>,
    pub(crate) job: Option<JobChange>,
    /// The writer's lease, when the write is fenced: node, then epoch
    /// (binds after the job change's). A backend with no cluster ignores it.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) lease: Option<[Bind; 2]>,
}

/// The binds of a fenced write's lease (see [`TaskWrite::lease`]), none for a
/// write that records its job: that write creates the lease, and the record
/// refuses an unfinished job of anyone's already.
pub(crate) fn lease_binds(cause: &Cause<'_>) -> Option<[Bind; 2]> {
    if matches!(
        cause.job,
        Some(JobWrite::Record(_) | JobWrite::RecordFinished { .. })
    ) {
        return None;
    }
    cause.lease.map(|lease| {
        [
            Bind::Text(lease.node.to_owned()),
            Bind::I64(i64::from(lease.epoch)),
        ]
    })
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

/// A task's stored JSON: its compact ProtoJSON, written by `a2a_core`'s
/// direct writer (the bytes `serde_json` gives, at a third of the cost: a
/// task write's two documents were 8% of a SendMessage's instructions on
/// SQLite).
pub(crate) fn task_json(task: &Task) -> Result<String, StoreError> {
    written_json(task, "task")
}

fn written_json(value: &impl WriteJson, what: &str) -> Result<String, StoreError> {
    let mut out = Vec::with_capacity(512);
    value.write_json(&mut out);
    String::from_utf8(out).map_err(|e| StoreError::Backend(format!("serializing {what}: {e}")))
}

pub(crate) fn parse_task(json: &str) -> Result<Task, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Backend(format!("reading task: {e}")))
}

/// An event's stored JSON (as [`task_json`]).
pub(crate) fn event_json(event: &StreamResponse) -> Result<String, StoreError> {
    written_json(event, "event")
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

#[cfg(test)]
mod tests {
    use a2a_core::TaskState;
    use a2a_server::store::JobState;

    #[test]
    fn the_sql_list_of_finished_jobs_is_job_state_finished() {
        let listed: Vec<String> = JobState::FINISHED
            .iter()
            .map(|state| format!("'{}'", state.as_str()))
            .collect();
        assert_eq!(finished_jobs!(), format!("({})", listed.join(", ")));
        let finished: Vec<JobState> = JobState::ALL
            .into_iter()
            .filter(|state| state.is_finished())
            .collect();
        assert_eq!(finished, JobState::FINISHED);
        let unfinished: Vec<String> = JobState::ALL
            .into_iter()
            .filter(|state| !state.is_finished())
            .map(|state| format!("'{}'", state.as_str()))
            .collect();
        assert_eq!(unfinished_jobs!(), format!("({})", unfinished.join(", ")));
    }

    #[test]
    fn the_sql_list_of_terminal_tasks_is_every_terminal_state() {
        let terminal: Vec<String> = (0..=i32::from(u8::MAX))
            .filter_map(TaskState::from_number)
            .filter(|state| state.is_terminal())
            .map(|state| state.number().to_string())
            .collect();
        assert_eq!(terminal_tasks!(), format!("({})", terminal.join(", ")));
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn sqlites_predicate_of_terminal_tasks_holds_for_the_terminal_states_only() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let query = concat!(
            "SELECT ",
            sqlite_terminal_tasks!(),
            " FROM (SELECT ?1 AS state)"
        );
        for number in 0..=i32::from(u8::MAX) {
            let holds: bool = conn.query_row(query, [number], |row| row.get(0)).unwrap();
            let terminal = TaskState::from_number(number).is_some_and(|state| state.is_terminal());
            assert_eq!(holds, terminal, "state {number}");
        }
    }
}
