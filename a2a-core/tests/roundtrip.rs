//! Property test: every top-level message survives JSON -> core -> JSON unchanged.

use a2a_core::arbitrary as arb;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn json_round_trip<T>(value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let text = serde_json::to_string(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: T =
        serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
    prop_assert_eq!(&back, value);
    prop_assert_eq!(
        serde_json::to_value(&back).map_err(|e| TestCaseError::fail(e.to_string()))?,
        json
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test] fn send_message_request(v in arb::send_message_request()) { json_round_trip(&v)?; }
    #[test] fn send_message_response(v in arb::send_message_response()) { json_round_trip(&v)?; }
    #[test] fn stream_response(v in arb::stream_response()) { json_round_trip(&v)?; }
    #[test] fn task(v in arb::task()) { json_round_trip(&v)?; }
    #[test] fn message(v in arb::message()) { json_round_trip(&v)?; }
    #[test] fn get_task_request(v in arb::get_task_request()) { json_round_trip(&v)?; }
    #[test] fn list_tasks_request(v in arb::list_tasks_request()) { json_round_trip(&v)?; }
    #[test] fn list_tasks_response(v in arb::list_tasks_response()) { json_round_trip(&v)?; }
    #[test] fn cancel_task_request(v in arb::cancel_task_request()) { json_round_trip(&v)?; }
    #[test] fn subscribe_to_task_request(v in arb::subscribe_to_task_request()) { json_round_trip(&v)?; }
    #[test] fn push_config(v in arb::push_config()) { json_round_trip(&v)?; }
    #[test] fn get_push_config_request(v in arb::get_push_config_request()) { json_round_trip(&v)?; }
    #[test] fn delete_push_config_request(v in arb::delete_push_config_request()) { json_round_trip(&v)?; }
    #[test] fn list_push_configs_request(v in arb::list_push_configs_request()) { json_round_trip(&v)?; }
    #[test] fn list_push_configs_response(v in arb::list_push_configs_response()) { json_round_trip(&v)?; }
    #[test] fn get_extended_agent_card_request(v in arb::get_extended_agent_card_request()) { json_round_trip(&v)?; }
    #[test] fn agent_card(v in arb::agent_card()) { json_round_trip(&v)?; }
}

/// Found by the `protojson_requests` fuzz target: serde_json's default float
/// reader took this long decimal one ulp off the nearest double, so the
/// number written back read as another number, and metadata changed on every
/// hop. serde_json's `float_roundtrip` reads it exactly.
#[test]
fn long_decimals_survive_a_round_trip() {
    let json = r#"{"messageId":"m","role":"ROLE_USER","parts":[{"data":[11111111111111111111111111111111111111111111111111111111111111111111111112.5]}]}"#;
    let message: a2a_core::Message = serde_json::from_str(json).unwrap_or_default();
    let text = serde_json::to_string(&message).unwrap_or_default();
    let again: a2a_core::Message = serde_json::from_str(&text).unwrap_or_default();
    assert_eq!(again, message, "{text}");
    assert!(!message.parts.is_empty());
}
