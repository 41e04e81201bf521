//! The wire format of the process protocol (see `PROCESS_PROTOCOL.md`): one
//! JSON object per line, each with a `type`.

use a2a_core::{Message, Part, StreamResponse, TaskState};
use a2a_server::store::Checkpoint;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// The protocol version announced in `hello`; bumped only for changes an
/// existing agent would misread.
pub(crate) const PROTOCOL_VERSION: u32 = 1;

/// The first line every child reads.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "hello")]
pub(crate) struct Hello<'a> {
    pub(crate) protocol: u32,
    pub(crate) agent: &'a str,
}

/// A message for the agent to work on. Kept whole in the task's entry so a
/// restarted child can be given it again.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename = "execute", rename_all = "camelCase")]
pub(crate) struct Execute {
    pub(crate) task_id: String,
    pub(crate) context_id: String,
    /// The request context's own message, shared (written as the message).
    pub(crate) message: std::sync::Arc<Message>,
    pub(crate) follow_up: bool,
    pub(crate) resumed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) checkpoint: Option<CheckpointLine>,
    /// The execution's W3C trace context (with the `otel` feature and a
    /// propagator installed), for the agent's own calls to carry on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) traceparent: Option<String>,
    /// The W3C `tracestate` that goes with `traceparent`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tracestate: Option<String>,
}

/// The gateway's lines other than `hello` and `execute`.
#[derive(Debug, Serialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum Notice<'a> {
    /// Stop working on a task.
    Cancel { task_id: &'a str },
    /// The checkpoint sent with an event of this task is stored.
    Checkpointed { task_id: &'a str, turn: u64 },
}

/// A turn checkpoint as the child writes and reads it: the turn number and
/// any JSON value as the agent's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CheckpointLine {
    pub(crate) turn: u64,
    #[serde(default)]
    pub(crate) state: Value,
}

impl CheckpointLine {
    pub(crate) fn into_checkpoint(self) -> Checkpoint {
        // Serializing a `Value` cannot fail (its map keys are strings).
        let state = serde_json::to_vec(&self.state).unwrap_or_default();
        Checkpoint::new(self.turn, state)
    }

    /// A stored checkpoint for a resumed execution. State the store holds
    /// that is not JSON (never written through this protocol) is handed over
    /// as a string rather than dropped.
    pub(crate) fn from_checkpoint(checkpoint: &Checkpoint) -> Self {
        let state = match checkpoint.state.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&checkpoint.state).unwrap_or_else(|_| {
                Value::String(String::from_utf8_lossy(&checkpoint.state).into_owned())
            }),
        };
        CheckpointLine {
            turn: checkpoint.turn,
            state,
        }
    }
}

/// One line from the agent.
#[derive(Debug, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(crate) enum FromAgent {
    /// The task moves to a state.
    Status {
        #[serde(alias = "task_id")]
        task_id: String,
        #[serde(deserialize_with = "state_name")]
        state: TaskState,
        #[serde(flatten)]
        content: Content,
        checkpoint: Option<CheckpointLine>,
    },
    /// An artifact, whole or a chunk of one.
    Artifact {
        #[serde(alias = "task_id")]
        task_id: String,
        #[serde(alias = "artifact_id")]
        artifact_id: Option<String>,
        name: Option<String>,
        #[serde(flatten)]
        content: Content,
        #[serde(default)]
        append: bool,
        #[serde(default, alias = "last_chunk")]
        last_chunk: bool,
        checkpoint: Option<CheckpointLine>,
    },
    /// A direct reply instead of a task.
    Reply {
        #[serde(alias = "task_id")]
        task_id: String,
        #[serde(flatten)]
        content: Content,
    },
    /// Any A2A event, as ProtoJSON.
    Event {
        #[serde(alias = "task_id")]
        task_id: String,
        event: Box<StreamResponse>,
        checkpoint: Option<CheckpointLine>,
    },
    /// A log line for the gateway's log.
    Log {
        #[serde(default, alias = "task_id")]
        task_id: Option<String>,
        #[serde(default)]
        level: Option<String>,
        #[serde(default)]
        text: String,
    },
}

impl FromAgent {
    /// The task the line is about (`None` for a log line without one).
    pub(crate) fn task_id(&self) -> Option<&str> {
        match self {
            FromAgent::Status { task_id, .. }
            | FromAgent::Artifact { task_id, .. }
            | FromAgent::Reply { task_id, .. }
            | FromAgent::Event { task_id, .. } => Some(task_id),
            FromAgent::Log { task_id, .. } => task_id.as_deref(),
        }
    }
}

/// What a status, artifact or reply line carries: `parts` (ProtoJSON parts),
/// `text`, or both (the text becomes the last part).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Content {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    parts: Option<Vec<Part>>,
}

impl Content {
    pub(crate) fn into_parts(self) -> Vec<Part> {
        let mut parts = self.parts.unwrap_or_default();
        parts.extend(self.text.map(Part::text));
        parts
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.text.is_none() && self.parts.as_ref().is_none_or(Vec::is_empty)
    }
}

/// A state by its short name (`working`, `input-required`, ...) or its
/// ProtoJSON name (`TASK_STATE_WORKING`). Submitted and unspecified are the
/// gateway's to set, not the agent's.
fn state_name<'de, D: Deserializer<'de>>(deserializer: D) -> Result<TaskState, D::Error> {
    use serde::de::Error as _;
    let name = String::deserialize(deserializer)?;
    let state = match name.to_ascii_lowercase().replace('-', "_").as_str() {
        "working" => Some(TaskState::Working),
        "completed" => Some(TaskState::Completed),
        "failed" => Some(TaskState::Failed),
        "canceled" | "cancelled" => Some(TaskState::Canceled),
        "rejected" => Some(TaskState::Rejected),
        "input_required" => Some(TaskState::InputRequired),
        "auth_required" => Some(TaskState::AuthRequired),
        _ => name.parse::<TaskState>().ok(),
    };
    match state {
        Some(TaskState::Submitted | TaskState::Unspecified) | None => {
            Err(D::Error::custom(format_args!(
                "unknown state {name:?}; expected working, completed, failed, canceled, \
                 rejected, input-required or auth-required"
            )))
        }
        Some(state) => Ok(state),
    }
}

/// Why a line could not be used.
#[derive(Debug)]
pub(crate) enum BadLine {
    /// Not JSON at all (or not UTF-8).
    NotJson(String),
    /// JSON without a `type` this gateway knows (the type, if it has one);
    /// ignored for forward compatibility.
    UnknownType(Option<String>),
    /// A known type with fields that do not fit; `task_id` when the line
    /// names one, so that task can be told.
    Invalid {
        kind: String,
        task_id: Option<String>,
        error: String,
    },
}

/// Parses one line. The common case is one pass; the line is read a second
/// time only to say what is wrong with it.
pub(crate) fn parse(line: &[u8]) -> Result<FromAgent, BadLine> {
    let error = match serde_json::from_slice::<FromAgent>(line) {
        Ok(parsed) => return Ok(parsed),
        Err(error) => error,
    };
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(error) => return Err(BadLine::NotJson(error.to_string())),
    };
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !matches!(kind, "status" | "artifact" | "reply" | "event" | "log") {
        let kind = (!kind.is_empty()).then(|| kind.to_owned());
        return Err(BadLine::UnknownType(kind));
    }
    let task_id = ["taskId", "task_id"]
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str))
        .map(str::to_owned);
    Err(BadLine::Invalid {
        kind: kind.to_owned(),
        task_id,
        error: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn short_and_protojson_state_names() {
        for (name, state) in [
            ("working", TaskState::Working),
            ("input-required", TaskState::InputRequired),
            ("INPUT_REQUIRED", TaskState::InputRequired),
            ("TASK_STATE_AUTH_REQUIRED", TaskState::AuthRequired),
        ] {
            let line = format!(r#"{{"type":"status","taskId":"t","state":"{name}"}}"#);
            let FromAgent::Status { state: got, .. } = parse(line.as_bytes()).unwrap() else {
                panic!("not a status")
            };
            assert_eq!(got, state, "{name}");
        }
        let bad = parse(br#"{"type":"status","taskId":"t","state":"submitted"}"#);
        assert!(matches!(bad, Err(BadLine::Invalid { task_id: Some(t), .. }) if t == "t"));
    }

    #[test]
    fn bad_lines_are_told_apart() {
        assert!(matches!(parse(b"not json"), Err(BadLine::NotJson(_))));
        assert!(matches!(parse(b"[1]"), Err(BadLine::UnknownType(_))));
        assert!(matches!(
            parse(br#"{"type":"progress","taskId":"t"}"#),
            Err(BadLine::UnknownType(_))
        ));
        assert!(matches!(
            parse(br#"{"type":"artifact"}"#),
            Err(BadLine::Invalid { task_id: None, .. })
        ));
    }

    #[test]
    fn content_puts_text_last() {
        let line = br#"{"type":"reply","taskId":"t","parts":[{"data":{"a":1}}],"text":"hi"}"#;
        let FromAgent::Reply { content, .. } = parse(line).unwrap() else {
            panic!("not a reply")
        };
        let parts = content.into_parts();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[1].as_text(), Some("hi"));
    }

    #[test]
    fn checkpoint_state_round_trips_as_json() {
        let line = CheckpointLine {
            turn: 2,
            state: serde_json::json!({"done": ["a"]}),
        };
        let stored = line.clone().into_checkpoint();
        assert_eq!(CheckpointLine::from_checkpoint(&stored), line);
        let foreign = Checkpoint::new(1, b"\xffraw".to_vec());
        assert!(CheckpointLine::from_checkpoint(&foreign).state.is_string());
    }
}
