//! `a2a jobs`: a server's durable executions, read from its store (what only
//! the operator may see: pending, stale and abandoned work, retention), and
//! canceled over A2A through the running server.

use a2a_server::store::{Job, JobFilter, JobState};
use a2a_store_sql::DurableStore;
use anyhow::{Context as _, bail};
use serde_json::json;

use crate::cli::{JobShowArgs, JobsCommand, JobsListArgs, JobsPruneArgs, StateArgs};

/// Runs one `a2a jobs` command.
pub(crate) async fn run(command: JobsCommand) -> anyhow::Result<()> {
    match command {
        JobsCommand::List(args) => list(args).await,
        JobsCommand::Show(args) => show(args).await,
        JobsCommand::Cancel(args) => crate::commands::cancel(args).await,
        JobsCommand::Prune(args) => prune(args).await,
    }
}

async fn open(state: &StateArgs, to_write: bool) -> anyhow::Result<DurableStore> {
    let location = state.location()?;
    let opened = if to_write {
        location.open(None).await
    } else {
        location.open_to_read().await
    };
    match opened.with_context(|| format!("cannot open the state ({location})"))? {
        Some(store) => Ok(store),
        None => bail!("a server with --store memory keeps no jobs another process can see"),
    }
}

fn parse_state(name: &str) -> anyhow::Result<JobState> {
    name.parse().map_err(|_| {
        anyhow::anyhow!(
            "unknown job state {name:?}: use pending, running, completed, failed or abandoned"
        )
    })
}

fn job_json(job: &Job) -> serde_json::Value {
    json!({
        "taskId": job.task_id,
        "state": job.state.as_str(),
        "tenant": job.owner.tenant,
        "user": job.owner.user,
        "node": job.node,
        "heartbeat": job.heartbeat.to_rfc3339(),
        "attempts": job.attempts,
        "reason": job.reason,
        "createdAt": job.created_at.to_rfc3339(),
        "updatedAt": job.updated_at.to_rfc3339(),
    })
}

fn job_line(job: &Job) -> String {
    let reason = job
        .reason
        .as_deref()
        .map(|r| format!(" — {r}"))
        .unwrap_or_default();
    format!(
        "{} {:<9} attempts {} node {} updated {}{reason}",
        job.task_id,
        job.state.as_str(),
        job.attempts,
        job.node,
        job.updated_at.format("%Y-%m-%d %H:%M:%S"),
    )
}

async fn list(args: JobsListArgs) -> anyhow::Result<()> {
    let store = open(&args.state, false).await?;
    let mut filter = JobFilter::new(args.limit.max(1));
    if let Some(state) = &args.state_filter {
        filter = filter.state(parse_state(state)?);
    }
    let jobs = store.jobs().list(&filter).await?;
    if args.json {
        let all: Vec<_> = jobs.iter().map(job_json).collect();
        return crate::output::json(&all);
    }
    if jobs.is_empty() {
        println!("no jobs");
    }
    for job in &jobs {
        println!("{}", job_line(job));
    }
    Ok(())
}

async fn show(args: JobShowArgs) -> anyhow::Result<()> {
    let store = open(&args.state, false).await?;
    let Some(job) = store.jobs().get(&args.task_id).await? else {
        bail!("no job for task {}", args.task_id);
    };
    let task = store.tasks().get(&job.owner, &job.task_id).await.ok();
    if args.json {
        let mut value = job_json(&job);
        value["task"] = serde_json::to_value(task.as_ref().map(|t| &t.task))?;
        value["checkpointTurn"] = json!(
            task.as_ref()
                .and_then(|t| t.checkpoint.as_ref())
                .map(|c| c.turn)
        );
        return crate::output::json(&value);
    }
    println!("{}", job_line(&job));
    match task {
        Some(stored) => {
            if let Some(checkpoint) = &stored.checkpoint {
                println!("  last checkpoint: turn {}", checkpoint.turn);
            }
            crate::output::task(&stored.task);
        }
        None => println!("  (no task stored: the agent had written nothing yet)"),
    }
    Ok(())
}

async fn prune(args: JobsPruneArgs) -> anyhow::Result<()> {
    let store = open(&args.state, true).await?;
    let age = chrono::Duration::days(i64::try_from(args.older_than_days).unwrap_or(i64::MAX));
    let cutoff = chrono::Utc::now() - age;
    let removed = a2a_server::store::prune_finished(
        store.jobs(),
        store.tasks(),
        Some(store.push_configs()),
        cutoff,
    )
    .await?;
    if args.json {
        return crate::output::json(&json!({ "removed": removed }));
    }
    println!(
        "removed {removed} finished jobs (and their tasks) older than {} days",
        args.older_than_days
    );
    Ok(())
}
