//! Request validation shared by the operations.

use a2a_core::{A2aError, AgentCard, ErrorKind, Message, Role};

/// Checks the fields a client message must carry.
pub(crate) fn message(message: &Message) -> Result<(), A2aError> {
    if message.message_id.trim().is_empty() {
        return Err(A2aError::invalid_params("message.messageId is required"));
    }
    if message.parts.is_empty() {
        return Err(A2aError::invalid_params(
            "message.parts must contain at least one part",
        ));
    }
    if message.role == Role::Unspecified {
        return Err(A2aError::invalid_params("message.role is required"));
    }
    Ok(())
}

/// Checks an optional `historyLength`.
pub(crate) fn history_length(value: Option<i32>) -> Result<(), A2aError> {
    match value {
        Some(n) if n < 0 => Err(A2aError::invalid_params(format!(
            "historyLength must not be negative, got {n}"
        ))),
        _ => Ok(()),
    }
}

/// The bare `type/subtype` of a media type, lowercased.
fn essence(media_type: &str) -> String {
    media_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn accepts(pattern: &str, media_type: &str) -> bool {
    let pattern = essence(pattern);
    if pattern == "*/*" || pattern == media_type {
        return true;
    }
    match pattern.strip_suffix("/*") {
        Some(kind) => media_type.split('/').next() == Some(kind),
        None => false,
    }
}

/// Rejects parts whose media type the agent does not accept.
///
/// The accepted types are the card's `defaultInputModes` plus every skill's
/// `inputModes`. A part without a media type is accepted. An agent that
/// declares no input modes accepts everything.
pub(crate) fn content_types(card: &AgentCard, message: &Message) -> Result<(), A2aError> {
    // Most parts name no media type: then there is nothing to gather.
    if message.parts.iter().all(|part| part.media_type.is_empty()) {
        return Ok(());
    }
    let accepted: Vec<&str> = card
        .default_input_modes
        .iter()
        .chain(card.skills.iter().flat_map(|s| s.input_modes.iter()))
        .map(String::as_str)
        .collect();
    if accepted.is_empty() {
        return Ok(());
    }
    for part in &message.parts {
        if part.media_type.is_empty() {
            continue;
        }
        let media_type = essence(&part.media_type);
        if !accepted.iter().any(|pattern| accepts(pattern, &media_type)) {
            return Err(A2aError::new(
                ErrorKind::ContentTypeNotSupported,
                format!(
                    "media type {} is not accepted; accepted: {}",
                    part.media_type,
                    accepted.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_core::Part;

    #[test]
    fn media_types_match_exactly_or_by_wildcard() {
        let card = AgentCard {
            default_input_modes: vec!["text/plain".into(), "image/*".into()],
            ..AgentCard::default()
        };
        let ok = Message::user(vec![
            Part::text("a").with_media_type("Text/Plain; charset=utf-8"),
            Part::raw(vec![1]).with_media_type("image/png"),
            Part::text("no type"),
        ]);
        assert!(content_types(&card, &ok).is_ok());
        let bad = Message::user(vec![Part::data(1).with_media_type("application/json")]);
        assert_eq!(
            content_types(&card, &bad).unwrap_err().kind(),
            ErrorKind::ContentTypeNotSupported
        );
    }

    #[test]
    fn messages_need_id_parts_and_role() {
        assert!(message(&Message::user_text("x")).is_ok());
        assert!(message(&Message::user(vec![])).is_err());
        assert!(message(&Message::user_text("x").with_message_id("")).is_err());
        let mut no_role = Message::user_text("x");
        no_role.role = Role::Unspecified;
        assert!(message(&no_role).is_err());
        assert!(history_length(Some(-1)).is_err());
    }
}
