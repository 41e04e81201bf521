//! `a2a jobs`: a server's durable executions, read from its store (what only
//! the operator may see: pending, stale and abandoned work, retention), and
//! canceled over A2A through the running server.
//!
//! A gateway (`a2a serve --config`) keeps each agent's state apart, in
//! `DATA_DIR/agents/NAME` with SQLite, in the schema `a2a_agent_NAME` with
//! PostgreSQL: there every command covers every agent's store, and
//! `--agent` narrows it to one.

use std::path::PathBuf;

use a2a_server::store::{Job, JobFilter, JobState, Pruned};
use a2a_store_sql::{DATABASE_FILE, DurableStore, StoreLocation};
use anyhow::{Context as _, bail};
use serde_json::json;

use crate::cli::{
    JobShowArgs, JobsCancelArgs, JobsCommand, JobsListArgs, JobsPruneArgs, StateArgs,
};
use crate::output::outln;

/// Runs one `a2a jobs` command.
pub(crate) async fn run(command: JobsCommand) -> anyhow::Result<()> {
    match command {
        JobsCommand::List(args) => list(args).await,
        JobsCommand::Show(args) => show(args).await,
        JobsCommand::Cancel(args) => cancel(args).await,
        JobsCommand::Prune(args) => prune(args).await,
    }
}

/// One store of jobs: a plain server's (`agent` `None`) or a gateway
/// agent's.
struct Source {
    agent: Option<String>,
    store: DurableStore,
}

impl Source {
    /// The agent's name, `-` for a plain server's store.
    fn name(&self) -> &str {
        self.agent.as_deref().unwrap_or("-")
    }
}

/// Opens one SQLite store to read, or to write (taking its lock).
async fn open_sqlite(dir: PathBuf, to_write: bool) -> anyhow::Result<DurableStore> {
    let location = StoreLocation::Sqlite(dir);
    let opened = if to_write {
        location.open(None).await
    } else {
        location.open_to_read().await
    };
    match opened.with_context(|| format!("cannot open the state ({location})"))? {
        Some(store) => Ok(store),
        None => bail!("{location} opened no store"),
    }
}

/// Every store `state` names: a plain server's, or every gateway agent's
/// (only `agent`'s, when given); with SQLite, both when the data directory
/// has both.
async fn open(
    state: &StateArgs,
    agent: Option<&str>,
    to_write: bool,
) -> anyhow::Result<Vec<Source>> {
    let location = state.location()?;
    if location == StoreLocation::Memory {
        bail!("a server with --store memory keeps no jobs another process can see");
    }
    let agents = location
        .agent_names()
        .await
        .with_context(|| format!("cannot look for the agents' stores ({location})"))?;
    if let Some(name) = agent {
        if !agents.iter().any(|a| a == name) {
            let known = match agents.is_empty() {
                true => "none".to_owned(),
                false => agents.join(", "),
            };
            bail!(
                "no agent {name:?} has a store in {} (agents there: {known})",
                agents_place(&location)
            );
        }
    }
    let wanted: Vec<String> = match agent {
        Some(name) => vec![name.to_owned()],
        None => agents,
    };
    let plain = match &location {
        StoreLocation::Sqlite(dir) => agent.is_none() && dir.join(DATABASE_FILE).is_file(),
        // A database holds a plain server's tables or a gateway's schemas.
        _ => wanted.is_empty(),
    };
    if let StoreLocation::Sqlite(dir) = &location {
        if !plain && wanted.is_empty() {
            bail!(
                "no job store in {dir}: looked for a server's {plain_db} and a gateway's \
                 {agents_db} (is --data-dir the server's?)",
                dir = dir.display(),
                plain_db = dir.join(DATABASE_FILE).display(),
                agents_db = dir
                    .join("agents")
                    .join("NAME")
                    .join(DATABASE_FILE)
                    .display(),
            );
        }
    }
    let mut sources = Vec::new();
    if plain {
        let opened = if to_write {
            location.open(None).await
        } else {
            location.open_to_read().await
        };
        let store = opened
            .with_context(|| format!("cannot open the state ({location})"))?
            .with_context(|| format!("{location} opened no store"))?;
        sources.push(Source { agent: None, store });
    }
    for name in wanted {
        let store = match &location {
            StoreLocation::Sqlite(dir) => {
                open_sqlite(dir.join("agents").join(&name), to_write).await?
            }
            _ => location
                .open_for_agent(&name, None)
                .await
                .with_context(|| format!("cannot open the state of agent {name:?} ({location})"))?
                .with_context(|| format!("{location} opened no store"))?,
        };
        sources.push(Source {
            agent: Some(name),
            store,
        });
    }
    Ok(sources)
}

/// Where a gateway keeps its agents' stores, for people.
fn agents_place(location: &StoreLocation) -> String {
    match location {
        StoreLocation::Sqlite(dir) => dir.join("agents").display().to_string(),
        other => format!("{other} (schemas a2a_agent_NAME)"),
    }
}

fn parse_state(name: &str) -> anyhow::Result<JobState> {
    name.parse().map_err(|_| {
        anyhow::anyhow!(
            "unknown job state {name:?}: use pending, running, completed, failed, abandoned or canceled"
        )
    })
}

fn job_json(job: &Job, agent: Option<&str>) -> serde_json::Value {
    json!({
        "agent": agent,
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
    let sources = open(&args.state, args.agent.as_deref(), false).await?;
    let limit = args.limit.max(1);
    let mut filter = JobFilter::new(limit);
    if let Some(state) = &args.state_filter {
        filter = filter.state(parse_state(state)?);
    }
    let mut jobs: Vec<(Option<&str>, Job)> = Vec::new();
    for source in &sources {
        let listed =
            source
                .store
                .jobs()
                .list(&filter)
                .await
                .with_context(|| match &source.agent {
                    Some(agent) => format!("listing the jobs of agent {agent}"),
                    None => "listing the jobs".to_owned(),
                })?;
        jobs.extend(listed.into_iter().map(|job| (source.agent.as_deref(), job)));
    }
    // Each store gave its newest; together, the newest of them all.
    jobs.sort_by_key(|(_, job)| std::cmp::Reverse(job.created_at));
    jobs.truncate(limit);
    if args.json {
        let all: Vec<_> = jobs
            .iter()
            .map(|(agent, job)| job_json(job, *agent))
            .collect();
        return crate::output::json(&all);
    }
    if jobs.is_empty() {
        return outln!("no jobs");
    }
    let gateway = sources.iter().any(|s| s.agent.is_some());
    if !gateway {
        for (_, job) in &jobs {
            outln!("{}", job_line(job))?;
        }
        return Ok(());
    }
    let width = jobs
        .iter()
        .map(|(agent, _)| agent.unwrap_or("-").chars().count())
        .max()
        .unwrap_or(0)
        .max("AGENT".len());
    outln!("{:<width$}  JOB", "AGENT")?;
    for (agent, job) in &jobs {
        outln!("{:<width$}  {}", agent.unwrap_or("-"), job_line(job))?;
    }
    Ok(())
}

/// The store holding `task_id`'s job, and the job.
async fn find(sources: Vec<Source>, task_id: &str) -> anyhow::Result<Option<(Source, Job)>> {
    let mut found = None;
    for source in sources {
        if let Some(job) = source.store.jobs().get(task_id).await? {
            if let Some((first, _)) = &found {
                bail!(
                    "task {task_id} has a job with agent {} and with agent {}: say which with --agent",
                    Source::name(first),
                    Source::name(&source)
                );
            }
            found = Some((source, job));
        }
    }
    Ok(found)
}

async fn show(args: JobShowArgs) -> anyhow::Result<()> {
    let sources = open(&args.state, args.agent.as_deref(), false).await?;
    let Some((source, job)) = find(sources, &args.task_id).await? else {
        bail!("no job for task {}", args.task_id);
    };
    let store = &source.store;
    let agent = source.agent.as_deref();
    let task = store.tasks().get(&job.owner, &job.task_id).await.ok();
    if args.json {
        let mut value = job_json(&job, agent);
        value["task"] = serde_json::to_value(task.as_ref().map(|t| &t.task))?;
        value["checkpointTurn"] = json!(
            task.as_ref()
                .and_then(|t| t.checkpoint.as_ref())
                .map(|c| c.turn)
        );
        return crate::output::json(&value);
    }
    if let Some(agent) = agent {
        outln!("agent {agent}")?;
    }
    outln!("{}", job_line(&job))?;
    match task {
        Some(stored) => {
            if let Some(checkpoint) = &stored.checkpoint {
                outln!("  last checkpoint: turn {}", checkpoint.turn)?;
            }
            crate::output::task(&stored.task)
        }
        None => outln!(
            "  (no task stored: the agent had written nothing yet, or the task retention removed it)"
        ),
    }
}

/// `URL` of a gateway, as the URL of its agent `name`.
fn agent_url(url: &str, name: &str) -> String {
    let base = url.trim_end_matches('/');
    let base = base
        .strip_suffix(a2a_core::AGENT_CARD_PATH)
        .unwrap_or(base)
        .trim_end_matches('/');
    let path = format!("{}/{name}", a2a_gateway::AGENTS_PATH);
    if base.ends_with(&path) {
        return base.to_owned();
    }
    format!("{base}{path}")
}

async fn cancel(args: JobsCancelArgs) -> anyhow::Result<()> {
    let mut task = args.task;
    let agent = match (args.agent, &args.data_dir) {
        (Some(agent), _) => Some(agent),
        (None, Some(dir)) => {
            let state = StateArgs {
                store: "sqlite".to_owned(),
                data_dir: dir.clone(),
            };
            let sources = open(&state, None, false).await?;
            match find(sources, &task.task_id).await? {
                Some((source, _)) => source.agent,
                None => bail!("no job for task {} in {}", task.task_id, dir.display()),
            }
        }
        (None, None) => None,
    };
    if let Some(agent) = agent {
        task.target.url = agent_url(&task.target.url, &agent);
    }
    crate::commands::cancel(task).await
}

async fn prune(args: JobsPruneArgs) -> anyhow::Result<()> {
    let sources = open(&args.state, args.agent.as_deref(), true).await?;
    let now = chrono::Utc::now();
    let jobs_before = days_before(now, args.older_than_days);
    // 0 keeps tasks, as `a2a serve --task-retention-days 0` does.
    let tasks_before =
        (args.task_retention_days > 0).then(|| days_before(now, args.task_retention_days));
    let mut total = Pruned::default();
    let mut by_agent = Vec::new();
    for source in &sources {
        let store = &source.store;
        let pruned = a2a_server::store::prune(
            store.jobs(),
            store.tasks(),
            Some(store.push_configs()),
            jobs_before,
            tasks_before,
        )
        .await
        .with_context(|| match &source.agent {
            Some(agent) => format!("pruning the store of agent {agent}"),
            None => "pruning the store".to_owned(),
        })?;
        total = Pruned::new(total.jobs + pruned.jobs, total.tasks + pruned.tasks);
        if let Some(agent) = &source.agent {
            by_agent.push((agent.clone(), pruned));
        }
    }
    if args.json {
        let counts = |p: &Pruned| json!({ "jobs": p.jobs, "tasks": p.tasks });
        let mut value = counts(&total);
        if !by_agent.is_empty() {
            let agents: serde_json::Map<String, serde_json::Value> = by_agent
                .iter()
                .map(|(agent, pruned)| (agent.clone(), counts(pruned)))
                .collect();
            value["agents"] = agents.into();
        }
        return crate::output::json(&value);
    }
    outln!("{}", prune_report(&total, &args))?;
    for (agent, pruned) in &by_agent {
        outln!(
            "  {agent}: {} job records, {} tasks",
            pruned.jobs,
            pruned.tasks
        )?;
    }
    Ok(())
}

/// `days` days before `now` (the dawn of time for more days than there are).
fn days_before(now: chrono::DateTime<chrono::Utc>, days: u64) -> chrono::DateTime<chrono::Utc> {
    i64::try_from(days)
        .ok()
        .and_then(chrono::Duration::try_days)
        .and_then(|age| now.checked_sub_signed(age))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
}

/// What `a2a jobs prune` did, in words: job records and tasks apart.
fn prune_report(pruned: &Pruned, args: &JobsPruneArgs) -> String {
    let jobs = format!(
        "removed {} finished job record{} older than {} days",
        pruned.jobs,
        plural(pruned.jobs),
        args.older_than_days
    );
    match args.task_retention_days {
        0 => format!("{jobs}; kept every task (task retention 0: for ever)"),
        days => format!(
            "{jobs}; removed {} ended task{} older than {days} days",
            pruned.tasks,
            plural(pruned.tasks)
        ),
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_url_is_under_the_gateway_whatever_url_names_it() {
        for url in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/.well-known/agent-card.json",
            "http://h:1/agents/beta",
        ] {
            assert_eq!(agent_url(url, "beta"), "http://h:1/agents/beta", "{url}");
        }
    }
}
