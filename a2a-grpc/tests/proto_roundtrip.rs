//! Property test: every top-level message survives core -> proto -> bytes -> proto -> core.

use a2a_core::arbitrary as arb;
use a2a_grpc::convert::{FromProto, ToProto};
use proptest::prelude::*;
use prost::Message as _;

fn proto_round_trip<T>(value: T) -> Result<(), TestCaseError>
where
    T: ToProto + FromProto<Proto = <T as ToProto>::Proto> + Clone + PartialEq + std::fmt::Debug,
    <T as ToProto>::Proto: prost::Message + Default,
{
    let proto = value.clone().to_proto();
    let bytes = proto.encode_to_vec();
    let decoded = <T as ToProto>::Proto::decode(bytes.as_slice())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back = T::from_proto(decoded).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(back, value);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test] fn send_message_request(v in arb::send_message_request()) { proto_round_trip(v)?; }
    #[test] fn send_message_response(v in arb::send_message_response()) { proto_round_trip(v)?; }
    #[test] fn stream_response(v in arb::stream_response()) { proto_round_trip(v)?; }
    #[test] fn task(v in arb::task()) { proto_round_trip(v)?; }
    #[test] fn message(v in arb::message()) { proto_round_trip(v)?; }
    #[test] fn get_task_request(v in arb::get_task_request()) { proto_round_trip(v)?; }
    #[test] fn list_tasks_request(v in arb::list_tasks_request()) { proto_round_trip(v)?; }
    #[test] fn list_tasks_response(v in arb::list_tasks_response()) { proto_round_trip(v)?; }
    #[test] fn cancel_task_request(v in arb::cancel_task_request()) { proto_round_trip(v)?; }
    #[test] fn subscribe_to_task_request(v in arb::subscribe_to_task_request()) { proto_round_trip(v)?; }
    #[test] fn push_config(v in arb::push_config()) { proto_round_trip(v)?; }
    #[test] fn get_push_config_request(v in arb::get_push_config_request()) { proto_round_trip(v)?; }
    #[test] fn delete_push_config_request(v in arb::delete_push_config_request()) { proto_round_trip(v)?; }
    #[test] fn list_push_configs_request(v in arb::list_push_configs_request()) { proto_round_trip(v)?; }
    #[test] fn list_push_configs_response(v in arb::list_push_configs_response()) { proto_round_trip(v)?; }
    #[test] fn get_extended_agent_card_request(v in arb::get_extended_agent_card_request()) { proto_round_trip(v)?; }
    #[test] fn agent_card(v in arb::agent_card()) { proto_round_trip(v)?; }
}

#[test]
fn invalid_proto_values_name_the_field() {
    use a2a_grpc::pb;
    let task = pb::Task {
        id: "t".into(),
        status: Some(pb::TaskStatus {
            state: 42,
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = a2a_core::Task::from_proto(task).unwrap_err();
    assert_eq!(err.to_string(), "status.state: unknown TaskState number 42");

    let message = pb::Message {
        parts: vec![pb::Part::default()],
        ..Default::default()
    };
    let err = a2a_core::Message::from_proto(message).unwrap_err();
    assert_eq!(
        err.to_string(),
        "parts[0]: part has no content; expected one of text, raw, url, data"
    );
}

#[test]
fn timestamps_outside_years_1_to_9999_are_refused_like_json() {
    use a2a_core::A2aError;
    use chrono::{DateTime, Utc};
    let at = |seconds, nanos| prost_types::Timestamp { seconds, nanos };
    // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z: the bounds.
    let first = DateTime::<Utc>::from_proto(at(-62_135_596_800, 0)).unwrap();
    assert_eq!(
        a2a_core::protojson::format_timestamp(&first),
        "0001-01-01T00:00:00.000Z"
    );
    let last = DateTime::<Utc>::from_proto(at(253_402_300_799, 999_999_999)).unwrap();
    assert_eq!(
        a2a_core::protojson::format_timestamp(&last),
        "9999-12-31T23:59:59.999999999Z"
    );
    // One second either side: year 0000 and year 10000, which the JSON
    // bindings refuse too.
    for (seconds, json) in [
        (-62_135_596_801, "0000-12-31T23:59:59Z"),
        (253_402_300_800, "+10000-01-01T00:00:00Z"),
    ] {
        assert!(a2a_core::protojson::parse_timestamp(json).is_err());
        let status = a2a_grpc::pb::TaskStatus {
            state: a2a_core::TaskState::Working.number(),
            timestamp: Some(at(seconds, 0)),
            ..Default::default()
        };
        let err = a2a_core::TaskStatus::from_proto(status).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("timestamp: timestamp {seconds}s is outside years 0001 to 9999")
        );
        assert_eq!(
            A2aError::from(err).kind(),
            a2a_core::ErrorKind::InvalidParams
        );
    }
}
