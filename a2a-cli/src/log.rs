//! `a2a log`: the conversation log of a data directory, for people or scripts.

use a2a_conversation::{LogEntry, LogReader};
use anyhow::Context as _;

use crate::cli::{LogArgs, LogCommand};

pub(crate) fn run(args: &LogArgs) -> anyhow::Result<()> {
    let reader = LogReader::new(&args.data_dir);
    let context = || {
        format!(
            "reading the conversation log in {}",
            args.data_dir.display()
        )
    };
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
            let chain = reader.chain(id).with_context(context)?;
            anyhow::ensure!(!chain.is_empty(), "no line {id} in the conversation log");
            (chain, 0)
        }
        LogCommand::Tail { lines } => (reader.tail(*lines).with_context(context)?, 0),
    };
    for entry in &entries {
        println!("{}", render(entry, args.json)?);
    }
    if skipped > 0 {
        eprintln!("warning: {skipped} unreadable line(s) skipped (torn by a crash?)");
    }
    Ok(())
}

fn render(entry: &LogEntry, json: bool) -> anyhow::Result<String> {
    if json {
        return Ok(serde_json::to_string(entry)?);
    }
    Ok(format!(
        "{} {:<8} {}",
        entry.t.format("%Y-%m-%d %H:%M:%S%.3f"),
        entry.kind.as_str(),
        entry.summary()
    ))
}
