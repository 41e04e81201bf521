//! Malformed input is rejected with an error that names the field and what is wrong.

use a2a_core::protojson::decode;
use a2a_core::*;
use serde_json::json;

fn error_of<T: serde::de::DeserializeOwned + std::fmt::Debug>(value: serde_json::Value) -> String {
    let bytes = serde_json::to_vec(&value).expect("serializable");
    decode::<T>(&bytes)
        .expect_err("should be rejected")
        .to_string()
}

#[test]
fn part_with_two_content_keys() {
    let err = error_of::<SendMessageRequest>(json!({
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"text": "a", "data": 1}]}
    }));
    assert!(err.starts_with("message.parts[1]: part has both"), "{err}");
    assert!(err.contains("`data`") && err.contains("`text`"), "{err}");
}

#[test]
fn part_without_content() {
    let err = error_of::<Artifact>(json!({"artifactId": "a", "parts": [{"filename": "a.txt"}]}));
    assert_eq!(
        err,
        "parts[0]: part has no content; expected exactly one of `text`, `raw`, `url`, `data`"
    );
}

#[test]
fn unknown_enum_string() {
    let err = error_of::<Task>(json!({"id": "t", "status": {"state": "completed"}}));
    assert!(
        err.starts_with("status.state: unknown TaskState value \"completed\""),
        "{err}"
    );
    let err = error_of::<Message>(json!({"role": "ROLE_ROBOT", "parts": []}));
    assert!(
        err.starts_with("role: unknown Role value \"ROLE_ROBOT\""),
        "{err}"
    );
    let err = error_of::<TaskStatus>(json!({"state": 42}));
    assert_eq!(err, "state: unknown TaskState number 42");
}

#[test]
fn enum_numbers_are_accepted() {
    let status: TaskStatus = serde_json::from_value(json!({"state": 6})).unwrap();
    assert_eq!(status.state, TaskState::InputRequired);
}

#[test]
fn string_where_number_belongs() {
    let err = error_of::<GetTaskRequest>(json!({"id": "t", "historyLength": "many"}));
    assert_eq!(
        err,
        "historyLength: invalid type: string \"many\", expected a 32-bit integer"
    );
    let err =
        error_of::<ListTasksResponse>(json!({"tasks": [], "nextPageToken": "", "pageSize": true}));
    assert!(err.starts_with("pageSize: invalid type: boolean"), "{err}");
    // ProtoJSON allows int32 as a decimal string.
    let ok: GetTaskRequest =
        serde_json::from_value(json!({"id": "t", "historyLength": "3"})).unwrap();
    assert_eq!(ok.history_length, Some(3));
}

#[test]
fn number_where_string_belongs() {
    let err = error_of::<SendMessageRequest>(
        json!({"message": {"messageId": 5, "role": "ROLE_USER", "parts": []}}),
    );
    assert_eq!(
        err,
        "message.messageId: invalid type: integer `5`, expected a string"
    );
}

#[test]
fn oneof_with_two_members() {
    let err =
        error_of::<StreamResponse>(json!({"task": {"id": "t"}, "message": {"messageId": "m"}}));
    assert!(err.contains("StreamResponse has both"), "{err}");
    let err = error_of::<SendMessageResponse>(json!({}));
    assert!(err.contains("none of its members"), "{err}");
}

#[test]
fn bad_base64_and_timestamp() {
    let err = error_of::<Message>(json!({"parts": [{"raw": "***"}]}));
    assert!(
        err.starts_with("parts[0]: part field `raw` is not base64"),
        "{err}"
    );
    let err =
        error_of::<TaskStatus>(json!({"state": "TASK_STATE_WORKING", "timestamp": "yesterday"}));
    assert!(
        err.starts_with("timestamp: invalid RFC 3339 timestamp \"yesterday\""),
        "{err}"
    );
}

#[test]
fn syntax_errors_are_parse_errors() {
    let err = decode::<Task>(b"{\"id\": ").unwrap_err();
    assert!(err.syntax);
    assert_eq!(A2aError::from(err).kind(), ErrorKind::ParseError);
    let err = decode::<Task>(b"{\"id\": 1}").unwrap_err();
    assert_eq!(A2aError::from(err).kind(), ErrorKind::InvalidParams);
    assert!(decode::<Task>(b"{} trailing").unwrap_err().syntax);
}

#[test]
fn lenient_input_forms() {
    // snake_case keys, unknown fields, nulls and 0.3-era `kind` are all tolerated.
    let message: Message = serde_json::from_value(json!({
        "message_id": "m", "context_id": "c", "task_id": null, "role": "ROLE_AGENT", "kind": "message",
        "parts": [{"text": "x", "media_type": "text/plain", "unknown": 1}], "extra": {"a": 1}
    }))
    .unwrap();
    assert_eq!(
        (message.message_id.as_str(), message.context_id.as_str()),
        ("m", "c")
    );
    assert_eq!(message.parts[0].media_type, "text/plain");
    let event: StreamResponse =
        serde_json::from_value(json!({"status_update": {"task_id": "t"}, "x": 1})).unwrap();
    assert_eq!(event.task_id(), "t");
}

#[test]
fn invalid_utf8_in_a_skipped_member_is_a_syntax_error() {
    // serde_json checks only the strings it keeps: the byte 0xd0 inside an
    // unknown member was skipped unchecked, and the body accepted.
    let body = b"{\"id\":\"t\",\"unknown\":\"\xd0\"}";
    let err = decode::<GetTaskRequest>(body).expect_err("not UTF-8");
    assert!(err.syntax, "{err}");
    assert_eq!(A2aError::from(err).kind(), ErrorKind::ParseError);
    let err = decode::<GetTaskRequest>(b"{\"\xd0\":1,\"id\":\"t\"}").expect_err("not UTF-8");
    assert!(err.syntax, "{err}");
    // The same body without the stray byte is a request.
    assert!(decode::<GetTaskRequest>(b"{\"id\":\"t\",\"unknown\":\"x\"}").is_ok());
}
