//! The bytes a card signature covers.

use a2a_core::AgentCard;
use serde_json::Value;

/// The card as signed: its ProtoJSON without `signatures`, with `""`, `[]`
/// and `{}` dropped at every depth (and what becomes empty by that), in RFC
/// 8785 canonical form. `false`, `0` and `null` stay: an explicit `false`
/// is signed, an absent field is not.
///
/// The card is serialized from its type, never taken from the bytes a
/// server sent, so a signature covers what the card means rather than how
/// one server spelled it.
pub fn canonical_payload(card: &AgentCard) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(card)?;
    if let Value::Object(fields) = &mut value {
        fields.remove("signatures");
    }
    let cleaned = without_empties(value).unwrap_or(Value::Object(serde_json::Map::new()));
    serde_json_canonicalizer::to_string(&cleaned)
}

/// `value` without empty strings, arrays and objects; `None` when it is one.
fn without_empties(value: Value) -> Option<Value> {
    match value {
        Value::String(text) if text.is_empty() => None,
        Value::Array(items) => {
            let items: Vec<Value> = items.into_iter().filter_map(without_empties).collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(fields) => {
            let fields: serde_json::Map<String, Value> = fields
                .into_iter()
                .filter_map(|(key, value)| without_empties(value).map(|value| (key, value)))
                .collect();
            (!fields.is_empty()).then_some(Value::Object(fields))
        }
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empties_go_and_explicit_falses_stay() {
        let value = serde_json::json!({
            "a": "", "b": [], "c": {}, "d": [""], "e": {"f": ""},
            "g": false, "h": 0, "i": null, "j": ["x", ""],
        });
        assert_eq!(
            without_empties(value).unwrap(),
            serde_json::json!({"g": false, "h": 0, "i": null, "j": ["x"]})
        );
    }

    #[test]
    fn the_payload_is_in_rfc_8785_form() {
        let mut card = AgentCard::new("Émile 😀", "d");
        card.signatures.push(a2a_core::AgentCardSignature {
            protected: "p".into(),
            signature: "s".into(),
            header: None,
        });
        let payload = canonical_payload(&card).unwrap();
        // Keys in order, no blanks between tokens, text as UTF-8, no
        // signatures, and the empty capabilities gone.
        assert_eq!(
            payload,
            r#"{"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"description":"d","name":"Émile 😀","version":"1.0.0"}"#
        );
    }
}
