//! `Message` and `Role`: one turn of a conversation.

use serde::{Deserialize, Serialize};

use crate::protojson::{enum_serde, nullable};
use crate::{Metadata, Part};

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// Not set; never valid on a sent message.
    #[default]
    Unspecified,
    /// The client (a user or a calling agent).
    User,
    /// The remote agent.
    Agent,
}

enum_serde!(Role, "Role", {
    Unspecified = 0 => "ROLE_UNSPECIFIED",
    User = 1 => "ROLE_USER",
    Agent = 2 => "ROLE_AGENT",
});

/// One message exchanged between a client and an agent.
///
/// ```
/// use a2a_core::{Message, Part, Role};
/// let question = Message::user_text("What is the weather?");
/// assert_eq!(question.role, Role::User);
/// let answer = Message::agent(vec![Part::text("Sunny")]).with_context_id("ctx-1");
/// assert_eq!(answer.text(), "Sunny");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Unique id, chosen by whoever created the message.
    #[serde(default, alias = "message_id", deserialize_with = "nullable")]
    pub message_id: String,
    /// The conversation this message belongs to.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// The task this message belongs to, if any.
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    /// The sender.
    #[serde(default, deserialize_with = "nullable")]
    pub role: Role,
    /// The content.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// Extra information, keyed by extension URI where it belongs to an extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// URIs of the extensions that contributed to this message.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    /// Other tasks given as context for this message.
    #[serde(
        default,
        alias = "reference_task_ids",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with a fresh id, the given role and parts.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Message {
            message_id: crate::new_id(),
            role,
            parts,
            ..Message::default()
        }
    }

    /// A user message with the given parts.
    pub fn user(parts: Vec<Part>) -> Self {
        Message::new(Role::User, parts)
    }

    /// A user message holding one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Message::user(vec![Part::text(text)])
    }

    /// An agent message with the given parts.
    pub fn agent(parts: Vec<Part>) -> Self {
        Message::new(Role::Agent, parts)
    }

    /// An agent message holding one text part.
    pub fn agent_text(text: impl Into<String>) -> Self {
        Message::agent(vec![Part::text(text)])
    }

    /// Sets the message id.
    #[must_use]
    pub fn with_message_id(mut self, id: impl Into<String>) -> Self {
        self.message_id = id.into();
        self
    }

    /// Sets the context id.
    #[must_use]
    pub fn with_context_id(mut self, id: impl Into<String>) -> Self {
        self.context_id = id.into();
        self
    }

    /// Sets the task id.
    #[must_use]
    pub fn with_task_id(mut self, id: impl Into<String>) -> Self {
        self.task_id = id.into();
        self
    }

    /// All text parts joined by newlines (the common way to read a reply).
    pub fn text(&self) -> String {
        // Written straight into the answer: no list of the parts' texts to
        // join, and a message of one text part costs one allocation.
        let mut texts = self.parts.iter().filter_map(Part::as_text);
        let Some(first) = texts.next() else {
            return String::new();
        };
        let mut text = first.to_owned();
        for next in texts {
            text.push('\n');
            text.push_str(next);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_joins_the_text_parts_by_newlines_and_skips_the_others() {
        let message = |parts| Message::new(Role::Agent, parts);
        assert_eq!(message(vec![]).text(), "");
        assert_eq!(message(vec![Part::url("https://x.test/a")]).text(), "");
        assert_eq!(message(vec![Part::text("one")]).text(), "one");
        assert_eq!(
            message(vec![
                Part::text("one"),
                Part::raw(vec![1, 2]),
                Part::text(""),
                Part::text("three"),
            ])
            .text(),
            "one\n\nthree"
        );
    }
}
