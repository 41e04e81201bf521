//! `a2a conversations`: the conversation index of a data directory (which
//! conversation each pair of agents is in) and, for one conversation, its
//! messages from the conversation log.

use std::sync::Arc;

use a2a_conversation::{ConversationIndex, INDEX_FILE, LogEntry, LogReader, Route, RouteKey};
use anyhow::Context as _;

use crate::cli::{ConversationsArgs, ConversationsCommand};
use crate::output::outln;

/// Opens the conversation index a server keeps for `location`: in memory,
/// the file of the data directory `dir` (rebuilt from its log when torn),
/// or the table of the PostgreSQL store's schema (`shared`: a cluster's
/// nodes all write it, so each reads it on lookups and writes through).
pub(crate) async fn open_index(
    location: &a2a_store_sql::StoreLocation,
    dir: &std::path::Path,
    shared: bool,
) -> anyhow::Result<ConversationIndex> {
    use a2a_store_sql::StoreLocation;
    Ok(match location {
        StoreLocation::Memory => ConversationIndex::in_memory(),
        StoreLocation::Sqlite(_) => ConversationIndex::open(dir),
        StoreLocation::Postgres(url) => {
            let store = a2a_store_sql::PostgresStore::connect(url, None)
                .await
                .context("cannot open the conversation index's store (postgres)")?;
            let opened = if shared {
                ConversationIndex::open_shared_store(Arc::new(store)).await
            } else {
                ConversationIndex::open_store(Arc::new(store)).await
            };
            opened.context("cannot read the conversation index (postgres)")?
        }
    })
}

pub(crate) async fn run(args: &ConversationsArgs) -> anyhow::Result<()> {
    use a2a_store_sql::StoreLocation;
    let dir = &args.data_dir;
    let location = match args.store.as_str() {
        "sqlite" => StoreLocation::Sqlite(dir.clone()),
        other => other.parse()?,
    };
    let index = match &location {
        StoreLocation::Memory => {
            anyhow::bail!("a server with --store memory keeps its conversations in memory only")
        }
        StoreLocation::Sqlite(_) => {
            anyhow::ensure!(
                dir.is_dir(),
                "no data directory {} (give the server's with --data-dir)",
                dir.display()
            );
            // Opened as the server does: what the file misses is read from the log.
            ConversationIndex::open(dir)
        }
        StoreLocation::Postgres(_) => open_index(&location, dir, false).await?,
    };
    match &args.what {
        ConversationsCommand::List => list(&index, args),
        ConversationsCommand::Show { conversation } => show(&index, conversation, args),
    }
}

fn list(index: &ConversationIndex, args: &ConversationsArgs) -> anyhow::Result<()> {
    let entries = index.entries();
    if args.json {
        let all: Vec<_> = entries
            .iter()
            .map(|(key, route)| entry_json(key, route))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(());
    }
    if entries.is_empty() {
        if args.store == "sqlite" {
            outln!(
                "No conversations between agents in {} (its {INDEX_FILE} and log name none).",
                args.data_dir.display()
            )?;
        } else {
            outln!("No conversations between agents in the store's conversation index.")?;
        }
        return Ok(());
    }
    let rows: Vec<[String; 5]> = entries
        .iter()
        .map(|(key, route)| {
            let (a, b) = key.agents();
            [
                key.session().to_owned(),
                format!("{a} ↔ {b}"),
                route.context_id.clone(),
                short_event(&route.last_event).to_owned(),
                route.updated_at.format("%Y-%m-%d %H:%M:%S").to_string(),
            ]
        })
        .collect();
    let header = [
        "WORKSPACE",
        "PAIR",
        "CONTEXT",
        "LAST EVENT",
        "LAST ACTIVITY (UTC)",
    ];
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < cells.len() {
                let pad = widths[i] - cell.chars().count() + 2;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out
    };
    outln!("{}", line(header))?;
    for row in &rows {
        outln!("{}", line(row.each_ref().map(String::as_str)))?;
    }
    Ok(())
}

fn show(index: &ConversationIndex, asked: &str, args: &ConversationsArgs) -> anyhow::Result<()> {
    let entries = index.entries();
    let found = find(&entries, asked);
    let context = match &found {
        Some((_, route)) => route.context_id.clone(),
        None => asked.to_owned(),
    };
    let reader = LogReader::new(&args.data_dir);
    let days = reader.days().with_context(|| {
        format!(
            "reading the conversation log in {}",
            args.data_dir.display()
        )
    })?;
    let lines: Vec<LogEntry> = match (days.first(), days.last()) {
        (Some(first), Some(last)) => reader
            .range(*first, *last)
            .context("reading the conversation log")?
            .entries
            .into_iter()
            .filter(|e| {
                e.metadata.get("contextId").and_then(|v| v.as_str()) == Some(context.as_str())
            })
            .collect(),
        _ => Vec::new(),
    };
    anyhow::ensure!(
        found.is_some() || !lines.is_empty(),
        "no conversation {asked:?} in {}: give a pair (alpha|beta) or a contextId that \
         `a2a conversations list` shows",
        args.data_dir.display()
    );
    if args.json {
        let value = serde_json::json!({
            "conversation": found.as_ref().map(|(k, r)| entry_json(k, r)),
            "contextId": context,
            "messages": lines,
        });
        outln!("{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    if let Some((key, route)) = &found {
        let (a, b) = key.agents();
        outln!(
            "{a} ↔ {b} (workspace {}): conversation {}, last {} at {}",
            key.session(),
            route.context_id,
            short_event(&route.last_event),
            route.updated_at.format("%Y-%m-%d %H:%M:%S UTC")
        )?;
    } else {
        outln!("conversation {context}")?;
    }
    if lines.is_empty() {
        outln!("(no messages of it in the conversation log)")?;
    }
    for entry in &lines {
        let to = entry.to_agent.as_deref().unwrap_or("-");
        let text = match &entry.content {
            serde_json::Value::String(text) => text.replace('\n', " "),
            other => other.to_string(),
        };
        outln!(
            "{} {} {} {} → {to}: {text}",
            entry.t.format("%Y-%m-%d %H:%M:%S"),
            entry.id,
            entry.kind.as_str(),
            entry.from_agent,
        )?;
    }
    Ok(())
}

/// The entry `asked` names: a pair (`a|b`, `a,b`, in either order), a
/// whole key, or a contextId.
fn find<'a>(
    entries: &'a [(RouteKey, Arc<Route>)],
    asked: &str,
) -> Option<&'a (RouteKey, Arc<Route>)> {
    let asked = asked.trim();
    if let Some(found) = entries.iter().find(|(k, _)| k.as_str() == asked) {
        return Some(found);
    }
    let pair = asked
        .split_once('|')
        .or_else(|| asked.split_once(','))
        .map(|(a, b)| {
            let (a, b) = (a.trim(), b.trim());
            if a <= b { (a, b) } else { (b, a) }
        });
    entries.iter().find(|(key, route)| match pair {
        Some(pair) => key.agents() == pair,
        None => route.context_id == asked,
    })
}

fn short_event(event: &str) -> &str {
    event.strip_prefix("TASK_STATE_").unwrap_or(event)
}

fn entry_json(key: &RouteKey, route: &Route) -> serde_json::Value {
    let (a, b) = key.agents();
    serde_json::json!({
        "key": key.as_str(),
        "workspace": key.session(),
        "agents": [a, b],
        "contextId": route.context_id,
        "taskId": route.task_id,
        "lastEvent": route.last_event,
        "updatedAt": route.updated_at,
    })
}
