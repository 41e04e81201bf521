//! Human-readable and JSON output.

use std::io::IsTerminal as _;

use a2a_core::{AgentCard, Message, Part, PartContent, StreamResponse, Task, TaskState};
use serde::Serialize;

/// Prints `value` as pretty JSON.
pub(crate) fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn paint(state: TaskState) -> String {
    let name = state.as_str().trim_start_matches("TASK_STATE_");
    if !std::io::stdout().is_terminal() || std::env::var_os("NO_COLOR").is_some() {
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
pub(crate) fn message(message: &Message) {
    println!("{}", parts(&message.parts));
}

/// A task: id, state, status message and artifacts.
pub(crate) fn task(task: &Task) {
    println!(
        "task {} [{}] context {}",
        task.id,
        paint(task.status.state),
        task.context_id
    );
    if let Some(message) = &task.status.message {
        println!("  {}", parts(&message.parts));
    }
    for artifact in &task.artifacts {
        let name = if artifact.name.is_empty() {
            &artifact.artifact_id
        } else {
            &artifact.name
        };
        println!("  artifact {name}: {}", parts(&artifact.parts));
    }
}

/// One stream event, as it arrives.
pub(crate) fn event(event: &StreamResponse) {
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
            println!("[{}] {text}", paint(update.status.state));
        }
        StreamResponse::ArtifactUpdate(update) => {
            let name = if update.artifact.name.is_empty() {
                &update.artifact.artifact_id
            } else {
                &update.artifact.name
            };
            println!("  artifact {name}: {}", parts(&update.artifact.parts));
        }
    }
}

/// A card summary.
pub(crate) fn card(card: &AgentCard) {
    println!("{} {} — {}", card.name, card.version, card.description);
    for interface in &card.supported_interfaces {
        println!(
            "  {} {} ({})",
            interface.protocol_binding, interface.url, interface.protocol_version
        );
    }
    let caps = &card.capabilities;
    println!(
        "  streaming: {}, push notifications: {}, extended card: {}",
        caps.supports_streaming(),
        caps.supports_push_notifications(),
        caps.supports_extended_agent_card()
    );
    for skill in &card.skills {
        println!("  skill {}: {}", skill.id, skill.description);
    }
}
