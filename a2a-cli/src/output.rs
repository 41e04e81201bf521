//! Human-readable and JSON output, all of it through [`line`] and [`text`]:
//! a reader that goes away (`a2a log today | head -1`) ends the command
//! quietly and successfully, as it ends any Unix tool, instead of the panic
//! `println!` raises on a closed pipe. (Rust ignores SIGPIPE, so the write
//! itself is where a closed pipe shows.)

use std::io::{IsTerminal, Write as _};

use a2a_core::{AgentCard, Message, Part, PartContent, StreamResponse, Task, TaskState};
use serde::Serialize;

/// Standard output's reader is gone: nobody reads what the command would
/// still print, so it stops there and exits 0 ([`crate::run`] says so).
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("standard output is closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Whether `err` is (or was caused by) a closed standard output.
pub(crate) fn is_stdout_closed(err: &anyhow::Error) -> bool {
    err.downcast_ref::<StdoutClosed>().is_some()
}

/// Writes `args` to standard output, then a newline when `newline`.
fn write(args: std::fmt::Arguments<'_>, newline: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    match written {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(err) => Err(anyhow::Error::new(err).context("cannot write to standard output")),
    }
}

/// Prints one line; fails with [`StdoutClosed`] when nobody reads any more.
pub(crate) fn line(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    write(args, true)
}

/// Prints text as it is (a table ending in its own newline).
pub(crate) fn text(args: std::fmt::Arguments<'_>) -> anyhow::Result<()> {
    write(args, false)
}

/// Prints one line of a server's banner, whoever reads it: a server keeps
/// serving when its standard output goes away (its log is on stderr).
pub(crate) fn banner(args: std::fmt::Arguments<'_>) {
    // Nothing to do about it: the banner is for people, and they are gone.
    let _ = write(args, true);
}

/// `println!` for the commands: `outln!(...)?` stops at a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}

/// `print!` for the commands (see [`outln!`]).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::text(format_args!($($arg)*))
    };
}

/// `println!` for a server's banner (see [`banner`]).
macro_rules! sayln {
    ($($arg:tt)*) => {
        $crate::output::banner(format_args!($($arg)*))
    };
}

pub(crate) use {out, outln, sayln};

/// Prints `value` as pretty JSON.
pub(crate) fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string_pretty(value)?)
}

/// Whether to color what goes to a stream: only a terminal, and only
/// without `NO_COLOR` (set and not empty: <https://no-color.org>).
pub(crate) fn colors(stream: &impl IsTerminal) -> bool {
    stream.is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn paint(state: TaskState) -> String {
    let name = state.as_str().trim_start_matches("TASK_STATE_");
    if !colors(&std::io::stdout()) {
        return name.to_owned();
    }
    let color = match state {
        TaskState::Completed => "32",
        TaskState::Failed | TaskState::Rejected => "31",
        TaskState::Canceled => "90",
        TaskState::InputRequired | TaskState::AuthRequired => "33",
        _ => "36",
    };
    format!("\x1b[{color}m{name}\x1b[0m")
}

fn part(part: &Part) -> String {
    let name = if part.filename.is_empty() {
        String::new()
    } else {
        format!(" {}", part.filename)
    };
    match &part.content {
        PartContent::Text(text) => text.clone(),
        PartContent::Raw(bytes) => {
            format!("[file{name}, {} bytes, {}]", bytes.len(), part.media_type)
        }
        PartContent::Url(url) => format!("[file{name} at {url}]"),
        PartContent::Data(data) => data.to_string(),
    }
}

fn parts(parts: &[Part]) -> String {
    parts.iter().map(part).collect::<Vec<_>>().join("")
}

/// A message as one or more lines.
pub(crate) fn message(message: &Message) -> anyhow::Result<()> {
    outln!("{}", parts(&message.parts))
}

/// A task: id, state, status message and artifacts.
pub(crate) fn task(task: &Task) -> anyhow::Result<()> {
    outln!(
        "task {} [{}] context {}",
        task.id,
        paint(task.status.state),
        task.context_id
    )?;
    if let Some(message) = &task.status.message {
        outln!("  {}", parts(&message.parts))?;
    }
    for artifact in &task.artifacts {
        let name = if artifact.name.is_empty() {
            &artifact.artifact_id
        } else {
            &artifact.name
        };
        outln!("  artifact {name}: {}", parts(&artifact.parts))?;
    }
    Ok(())
}

/// One stream event, as it arrives.
pub(crate) fn event(event: &StreamResponse) -> anyhow::Result<()> {
    match event {
        StreamResponse::Task(t) => task(t),
        StreamResponse::Message(m) => message(m),
        StreamResponse::StatusUpdate(update) => {
            let text = update
                .status
                .message
                .as_ref()
                .map(|m| parts(&m.parts))
                .unwrap_or_default();
            outln!("[{}] {text}", paint(update.status.state))
        }
        StreamResponse::ArtifactUpdate(update) => {
            let name = if update.artifact.name.is_empty() {
                &update.artifact.artifact_id
            } else {
                &update.artifact.name
            };
            outln!("  artifact {name}: {}", parts(&update.artifact.parts))
        }
    }
}

/// A card summary.
pub(crate) fn card(card: &AgentCard) -> anyhow::Result<()> {
    outln!("{} {} — {}", card.name, card.version, card.description)?;
    for interface in &card.supported_interfaces {
        outln!(
            "  {} {} ({})",
            interface.protocol_binding,
            interface.url,
            interface.protocol_version
        )?;
    }
    let caps = &card.capabilities;
    outln!(
        "  streaming: {}, push notifications: {}, extended card: {}",
        caps.supports_streaming(),
        caps.supports_push_notifications(),
        caps.supports_extended_agent_card()
    )?;
    for skill in &card.skills {
        outln!("  skill {}: {}", skill.id, skill.description)?;
    }
    Ok(())
}
