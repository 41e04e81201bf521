//! `a2a log`: the conversation log of a data directory, for people or scripts.
//!
//! A cluster's log is one record in several files: each node writes its
//! own daily files (`stream/YYYY-MM-DD.<node>.jsonl`), in one shared data
//! directory or each in its own. `a2a log` reads every node's files of the
//! directories it is given (`--data-dir`, repeatable) merged in time order,
//! and follows a chain from node to node.

use a2a_conversation::{EntryType, LogEntry, LogReader, LogSearch, SearchQuery};
use anyhow::Context as _;
use chrono::{DateTime, NaiveDate, Utc};

use crate::cli::{LogArgs, LogCommand};
use crate::output::outln;

/// How many of the lines an ambiguous id matches the error names.
const NAMED_CANDIDATES: usize = 5;

/// Arguments of `a2a log search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// The words to find: all of them, in any order and any case. Words in
    /// double quotes are a phrase; a word ending in `*` is a prefix. Nothing
    /// else is search syntax (a leading `-` word needs `--` before it).
    #[arg(required = true, num_args = 1.., value_name = "TEXT")]
    pub text: Vec<String>,
    /// Only lines from or to this agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// Only lines from this day on (`YYYY-MM-DD`, UTC), or from this time
    /// (RFC 3339).
    #[arg(long, value_parser = since, value_name = "DATE")]
    pub since: Option<DateTime<Utc>>,
    /// Only lines up to this day, included (`YYYY-MM-DD`, UTC), or up to
    /// this time (RFC 3339).
    #[arg(long, value_parser = until, value_name = "DATE")]
    pub until: Option<DateTime<Utc>>,
    /// Only lines of this type: request, response, error, decision or state.
    #[arg(long = "type", value_parser = entry_type, value_name = "TYPE")]
    pub kind: Option<EntryType>,
    /// At most this many lines, the latest matches (`0`: all).
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
}

/// `--since`: a day's start, or a time.
fn since(text: &str) -> Result<DateTime<Utc>, String> {
    match text.parse::<NaiveDate>() {
        Ok(day) => Ok(day.and_time(chrono::NaiveTime::MIN).and_utc()),
        Err(_) => time(text),
    }
}

/// `--until`, as the first instant after it: the next day's start, or the
/// microsecond after a time (lines are stamped to the microsecond).
fn until(text: &str) -> Result<DateTime<Utc>, String> {
    match text.parse::<NaiveDate>() {
        Ok(day) => day
            .succ_opt()
            .map(|next| next.and_time(chrono::NaiveTime::MIN).and_utc())
            .ok_or_else(|| format!("{text} is the last day there is")),
        Err(_) => Ok(time(text)? + chrono::Duration::microseconds(1)),
    }
}

fn time(text: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|_| {
            format!(
                "{text:?} is neither a day (YYYY-MM-DD) nor a time (RFC 3339, 2026-11-27T09:30:00Z)"
            )
        })
}

fn entry_type(text: &str) -> Result<EntryType, String> {
    serde_json::from_value(serde_json::Value::String(text.to_ascii_lowercase())).map_err(|_| {
        format!("{text:?} is not a line type: request, response, error, decision or state")
    })
}

pub(crate) fn run(args: &LogArgs) -> anyhow::Result<()> {
    if let LogCommand::Search(search) = &args.what {
        return run_search(search, args);
    }
    let reader = LogReader::merged(&args.data_dir);
    let context = || format!("reading the conversation log in {}", dirs(args));
    let (entries, skipped) = match &args.what {
        LogCommand::Today => {
            let read = reader
                .day(chrono::Utc::now().date_naive())
                .with_context(context)?;
            (read.entries, read.skipped)
        }
        LogCommand::Date { day, to } => {
            let read = reader
                .range(*day, to.unwrap_or(*day))
                .with_context(context)?;
            (read.entries, read.skipped)
        }
        LogCommand::Chain { id } => {
            let id = resolve(&reader, id, args)?;
            let chain = reader.chain(&id).with_context(context)?;
            anyhow::ensure!(!chain.is_empty(), "no line {id} in the conversation log");
            (chain, 0)
        }
        LogCommand::Tail { lines } => (reader.tail(*lines).with_context(context)?, 0),
        LogCommand::Search(_) => (Vec::new(), 0),
    };
    for entry in &entries {
        outln!("{}", render(entry, args.json)?)?;
    }
    if skipped > 0 {
        eprintln!("warning: {skipped} unreadable line(s) skipped (torn by a crash?)");
    }
    Ok(())
}

/// `a2a log search`: catches the index up with the log, then prints the
/// matches as `a2a log today` does (or as stored, with `--json`).
fn run_search(search: &SearchArgs, args: &LogArgs) -> anyhow::Result<()> {
    for dir in &args.data_dir {
        anyhow::ensure!(
            dir.is_dir(),
            "no data directory {} (give --data-dir, or set A2A_DATA_DIR)",
            dir.display()
        );
    }
    let dir = dirs(args);
    if let (Some(since), Some(until)) = (search.since, search.until) {
        anyhow::ensure!(since < until, "--since is after --until: no line can match");
    }
    let mut query = SearchQuery::new(search.text.join(" "));
    query.agent.clone_from(&search.agent);
    query.since = search.since;
    query.before = search.until;
    query.kind = search.kind;
    query.limit = (search.limit > 0).then_some(search.limit);
    // Each data directory keeps the index of its own files.
    let mut indexes = Vec::with_capacity(args.data_dir.len());
    for data_dir in &args.data_dir {
        indexes.push(LogSearch::open(data_dir).with_context(|| {
            format!(
                "opening the search index of the conversation log in {}",
                data_dir.display()
            )
        })?);
    }
    let found = LogSearch::search_all(&mut indexes, &query)
        .with_context(|| format!("searching the conversation log in {dir}"))?;
    for line in &found.lines {
        if args.json {
            outln!("{}", line.json)?;
        } else {
            outln!("{}", render(&line.entry, false)?)?;
        }
    }
    if found.more {
        eprintln!(
            "(only the latest {} matches; --limit N shows more, --limit 0 all)",
            found.lines.len()
        );
    }
    Ok(())
}

/// The short form of a line id that `a2a log` prints: the random part of
/// `msg_YYYYMMDD_HHMMSS_rrrrrr`, since the line shows its time anyway. One
/// process never repeats it, so it seldom names two lines; an id of another
/// form is shown whole.
fn short_id(id: &str) -> &str {
    match id
        .strip_prefix("msg_")
        .and_then(|rest| rest.rsplit_once('_'))
    {
        Some((_, short)) if !short.is_empty() => short,
        _ => id,
    }
}

/// Whether `id` is a whole line id as the log writes it, which `chain`
/// finds without reading the other days.
fn is_full_id(id: &str) -> bool {
    id.len() == "msg_YYYYMMDD_HHMMSS_rrrrrr".len() && id.starts_with("msg_")
}

/// The line `wanted` names: a whole id, or a prefix of one, or of its short
/// form; an error unless exactly one line matches.
fn resolve(reader: &LogReader, wanted: &str, args: &LogArgs) -> anyhow::Result<String> {
    let wanted = wanted.trim();
    anyhow::ensure!(
        !wanted.is_empty(),
        "give a line's id (as `a2a log today` shows it, or the whole msg_… id)"
    );
    if is_full_id(wanted) {
        return Ok(wanted.to_owned());
    }
    let dir = dirs(args);
    let days = reader
        .days()
        .with_context(|| format!("reading the conversation log in {dir}"))?;
    // `msg_YYYYMMDD…` names its day: only that day's lines can match.
    let named_day = wanted
        .strip_prefix("msg_")
        .and_then(|rest| rest.get(..8))
        .and_then(|digits| chrono::NaiveDate::parse_from_str(digits, "%Y%m%d").ok());
    let mut matches: Vec<String> = Vec::new();
    for day in days
        .into_iter()
        .filter(|d| named_day.is_none_or(|n| n == *d))
    {
        let read = reader
            .day(day)
            .with_context(|| format!("reading the conversation log in {dir}"))?;
        for entry in read.entries {
            if (entry.id.starts_with(wanted) || short_id(&entry.id).starts_with(wanted))
                && !matches.contains(&entry.id)
            {
                matches.push(entry.id);
            }
        }
    }
    match matches.len() {
        0 => anyhow::bail!(
            "no line of the conversation log in {dir} has an id starting with {wanted:?} \
             (give the id `a2a log today` shows, or the whole msg_… id)"
        ),
        1 => Ok(matches.remove(0)),
        n => {
            let named: Vec<&str> = matches
                .iter()
                .take(NAMED_CANDIDATES)
                .map(String::as_str)
                .collect();
            let more = if n > NAMED_CANDIDATES { ", …" } else { "" };
            anyhow::bail!(
                "{wanted:?} is ambiguous: {n} lines of the conversation log in {dir} match \
                 ({}{more}); give more characters or the whole id",
                named.join(", ")
            )
        }
    }
}

/// The data directories read, for messages.
fn dirs(args: &LogArgs) -> String {
    let names: Vec<String> = args
        .data_dir
        .iter()
        .map(|dir| dir.display().to_string())
        .collect();
    names.join(", ")
}

/// One line as printed: as stored with `--json`, else time, short id, kind
/// and summary.
fn render(entry: &LogEntry, json: bool) -> anyhow::Result<String> {
    if json {
        return Ok(serde_json::to_string(entry)?);
    }
    Ok(format!(
        "{} {} {:<8} {}",
        entry.t.format("%Y-%m-%d %H:%M:%S%.3f"),
        short_id(&entry.id),
        entry.kind.as_str(),
        entry.summary()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_id_is_the_random_part_of_a_well_formed_id() {
        assert_eq!(short_id("msg_20261127_021500_ab12cd"), "ab12cd");
        assert_eq!(short_id("custom-id"), "custom-id");
        assert_eq!(short_id("msg_"), "msg_");
        assert!(is_full_id("msg_20261127_021500_ab12cd"));
        assert!(!is_full_id("msg_20261127_0215"));
    }
}
