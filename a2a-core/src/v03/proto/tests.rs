use super::*;
use crate::v03;
use serde_json::json;

#[test]
fn a_python_send_request_reads_and_writes_back() {
    let body = json!({
        "message": {"messageId": "m1", "role": "ROLE_USER",
            "content": [{"text": "hi"}, {"data": {"data": {"a": 1}}},
                {"file": {"fileWithUri": "https://x/f", "mimeType": "text/plain"}}]},
        "configuration": {"blocking": true, "acceptedOutputModes": ["text/plain"]}
    });
    let params = v03::MessageSendParams::from_protojson(body.clone()).unwrap();
    let v1 = params.clone().into_v1().unwrap();
    assert_eq!(v1.message.text(), "hi");
    assert!(!v1.configuration.unwrap().return_immediately);
    let back = params.to_protojson();
    assert_eq!(back, body);
}

#[test]
fn enums_by_name_or_number_and_hostile_parts() {
    let state = |state: Value| {
        v03::TaskStatus::from_protojson(json!({ "state": state }))
            .unwrap()
            .state
    };
    assert_eq!(
        state(json!("TASK_STATE_CANCELLED")),
        v03::TaskState::Canceled
    );
    assert_eq!(state(json!(2)), v03::TaskState::Working);
    assert_eq!(state(json!(99)), v03::TaskState::Unknown);
    let two = json!({"text": "a", "data": {}});
    assert!(v03::Part::from_protojson(two).is_err());
    assert!(v03::Part::from_protojson(json!({})).is_err());
    assert!(v03::Event::from_protojson(json!({})).is_err());
}

#[test]
fn push_config_names() {
    assert_eq!(
        push_config_name_parts("tasks/t1/pushNotificationConfigs/c1"),
        Some(("t1", "c1"))
    );
    assert_eq!(
        push_config_name_parts("tasks//pushNotificationConfigs/c"),
        None
    );
    assert_eq!(task_id_of("tasks/t1"), Some("t1"));
    assert_eq!(task_id_of("tasks/"), None);
    assert_eq!(task_id_of("other/t1"), None);
}

#[test]
fn errors_by_status() {
    let err = error_from_http(409, br#"{"message":"no"}"#);
    assert_eq!(err.kind(), crate::ErrorKind::TaskNotCancelable);
    assert_eq!(err.message(), "no");
    assert_eq!(
        error_from_http(404, b"garbage").kind(),
        crate::ErrorKind::TaskNotFound
    );
    assert_eq!(http_status(crate::ErrorKind::InvalidParams), 422);
}

/// A task with every kind of content, in both forms.
fn full_task() -> (v03::Task, Value) {
    let jsonrpc = json!({
        "kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": "input-required", "timestamp": "2025-01-01T00:00:00Z",
            "message": {"kind": "message", "messageId": "s1", "role": "agent",
                "parts": [{"kind": "text", "text": "more?"}], "taskId": "t1"}},
        "history": [{"kind": "message", "messageId": "m1", "role": "user",
            "contextId": "c1", "extensions": ["urn:x"], "metadata": {"k": [1, 2]},
            "parts": [
                {"kind": "file", "file": {"bytes": "aGk=", "name": "a.txt"},
                    "metadata": {"m": true}},
                {"kind": "data", "data": {"deep": {"er": [{}]}}}]}],
        "artifacts": [{"artifactId": "a1", "name": "out", "description": "",
            "parts": [{"kind": "text", "text": ""}]}],
        "metadata": {}
    });
    let proto = json!({
        "id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2025-01-01T00:00:00Z",
            "message": {"messageId": "s1", "role": "ROLE_AGENT",
                "content": [{"text": "more?"}], "taskId": "t1"}},
        "history": [{"messageId": "m1", "role": "ROLE_USER",
            "contextId": "c1", "extensions": ["urn:x"], "metadata": {"k": [1, 2]},
            "content": [
                {"file": {"fileWithBytes": "aGk=", "name": "a.txt"}, "metadata": {"m": true}},
                {"data": {"data": {"deep": {"er": [{}]}}}}]}],
        "artifacts": [{"artifactId": "a1", "name": "out", "parts": [{"text": ""}]}],
        "metadata": {}
    });
    (serde_json::from_value(jsonrpc).unwrap(), proto)
}

#[test]
fn a_task_reshapes_both_ways() {
    let (task, proto) = full_task();
    assert_eq!(task.to_protojson(), proto);
    let back = v03::Task::from_protojson(proto).unwrap();
    // The empty description is the proto default: it reads back as absent.
    let mut expected = task;
    expected.artifacts[0].description = None;
    assert_eq!(back, expected);
}

#[test]
fn events_reshape_both_ways() {
    let (task, _) = full_task();
    let status = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"}, "final": true}});
    let artifact = json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1",
        "artifact": {"artifactId": "a1", "parts": [{"data": {"data": {"x": null}}}]},
        "lastChunk": true}});
    for body in [status, artifact] {
        let event = v03::Event::from_protojson(body.clone()).unwrap();
        assert_eq!(event.to_protojson(), body);
    }
    let event = v03::Event::Task(task.clone());
    assert_eq!(
        v03::Event::from_protojson(event.to_protojson())
            .unwrap()
            .to_protojson(),
        event.to_protojson()
    );
    let update = v03::Event::from_protojson(json!({"status_update": {"task_id": "t",
        "status": {"state": 3}, "final": null}}))
    .unwrap();
    let v03::Event::StatusUpdate(update) = update else {
        panic!("not a status update: {update:?}")
    };
    assert_eq!((update.task_id.as_str(), update.is_final), ("t", false));
    assert_eq!(update.status.state, v03::TaskState::Completed);
    // `msg` is the proto's name of the message member.
    let message = json!({"msg": {"messageId": "m", "content": []}});
    let result = v03::SendMessageResult::from_protojson(message).unwrap();
    assert!(matches!(result, v03::SendMessageResult::Message(_)));
    let update = json!({"artifactUpdate": {"artifact": {}}});
    assert!(v03::SendMessageResult::from_protojson(update).is_err());
}

#[test]
fn push_configs_reshape_both_ways() {
    let proto = json!({"name": "tasks/t1/pushNotificationConfigs/c1",
        "pushNotificationConfig": {"id": "c1", "url": "https://h/x", "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "s"}}});
    let config = v03::TaskPushNotificationConfig::from_protojson(proto.clone()).unwrap();
    assert_eq!(config.task_id, "t1");
    assert_eq!(config.to_protojson(), proto);
    let body = create_push_config_request(&config);
    assert_eq!(body["parent"], "tasks/t1");
    assert_eq!(body["configId"], "c1");
    let mut anonymous = body.clone();
    anonymous["config"]["pushNotificationConfig"]["id"] = json!("");
    let read = read_create_push_config_request(anonymous).unwrap();
    assert_eq!(read, config.push_notification_config);
    let list = list_push_configs_response(std::slice::from_ref(&config), "");
    assert_eq!(list, json!({ "configs": [proto] }));
    assert_eq!(
        read_list_push_configs_response(list).unwrap(),
        (vec![config], String::new())
    );
    let bad = json!({"name": "nope", "pushNotificationConfig": {}});
    assert!(v03::TaskPushNotificationConfig::from_protojson(bad).is_err());
    assert!(v03::TaskPushNotificationConfig::from_protojson(json!({"name": 7})).is_err());
}

#[test]
fn send_configuration_defaults() {
    // Unset `blocking` is the proto's false: do not wait.
    let params = v03::MessageSendParams::from_protojson(json!({"request": {},
        "configuration": {"history_length": 0, "push_notification": {"url": "u"}}}))
    .unwrap();
    let config = params.configuration.clone().unwrap();
    assert_eq!(config.blocking, Some(false));
    assert_eq!(config.history_length, None);
    assert_eq!(config.push_notification_config.unwrap().url, "u");
    // JSON-RPC's unset `blocking` (wait) is spelled out.
    let mut params = params;
    params.configuration = Some(v03::MessageSendConfiguration::default());
    let out = params.to_protojson();
    assert_eq!(out["configuration"], json!({"blocking": true}));
}

#[test]
fn hostile_input_is_invalid_params_never_a_panic() {
    let bodies = [
        json!([]),
        json!("text"),
        json!({"message": 5}),
        json!({"message": {"content": {"text": "not a list"}}}),
        json!({"message": {"content": [5]}}),
        json!({"message": {"content": [{"text": 5}]}}),
        json!({"message": {"content": [{"file": "x"}]}}),
        json!({"message": {"content": [{"file": {"fileWithUri": []}}]}}),
        json!({"message": {"content": [{"data": 3}]}}),
        json!({"message": {"messageId": {"a": 1}}}),
        json!({"message": {}, "configuration": []}),
        json!({"message": {}, "configuration": {"historyLength": "ten"}}),
        json!({"message": {}, "configuration": {"historyLength": 1e12}}),
        json!({"message": {}, "configuration": {"blocking": "yes"}}),
        json!({"message": {}, "configuration": {"pushNotification": 1}}),
        json!({"message": {}, "metadata": [1]}),
    ];
    for body in bodies {
        let err =
            v03::MessageSendParams::from_protojson(body.clone()).expect_err(&body.to_string());
        assert_eq!(err.kind(), crate::ErrorKind::InvalidParams, "{body}");
    }
    // Unknown enum names and numbers are the unspecified value.
    let message = v03::Message::from_protojson(json!({"role": "ROLE_ROBOT"})).unwrap();
    assert_eq!(message.role, v03::Role::User);
    let message = v03::Message::from_protojson(json!({"role": -1})).unwrap();
    assert_eq!(message.role, v03::Role::User);
    let status = v03::TaskStatus::from_protojson(json!({"state": {"x": 1}})).unwrap();
    assert_eq!(status.state, v03::TaskState::Unknown);
    // Missing fields are defaults.
    let task = v03::Task::from_protojson(json!({})).unwrap();
    assert_eq!(task, v03::Task::default());
    for event in [
        json!({"task": {}, "msg": {}}),
        json!({"statusUpdate": 1}),
        json!({"artifactUpdate": {"append": "yes"}}),
        json!({"artifactUpdate": {"artifact": {"parts": [{}]}}}),
        json!({"statusUpdate": {"status": {"update": {"content": [{"text": "a", "file": {}}]}}}}),
    ] {
        assert!(
            v03::Event::from_protojson(event.clone()).is_err(),
            "{event}"
        );
    }
    let list =
        json!({"configs": [{"name": "tasks/t/pushNotificationConfigs/c"}], "nextPageToken": 3});
    assert!(read_list_push_configs_response(list).is_err());
    assert!(read_list_push_configs_response(json!({"configs": {}})).is_err());
    assert!(read_create_push_config_request(json!({"config": []})).is_err());
    assert!(read_create_push_config_request(json!({"configId": 1})).is_err());
}

#[test]
fn deep_nesting_is_copied_whole() {
    // Deeper than the 128 levels serde_json's parser allows: the reshaping
    // has no depth limit of its own, and copies data and metadata whole.
    let mut deep = json!("leaf");
    for _ in 0..500 {
        deep = json!({ "d": deep });
    }
    let mut hostile = json!({"messageId": "m", "role": "ROLE_USER",
        "content": [{"data": {"data": {}}}]});
    hostile["content"][0]["data"]["data"] = json!({ "deep": deep.clone() });
    hostile["metadata"] = json!({ "deep": deep.clone() });
    let message = v03::Message::from_protojson(hostile.clone()).unwrap();
    // (Not assert_eq: a failure would print all 500 levels.)
    assert!(message.metadata.as_ref().unwrap()["deep"] == deep);
    assert!(message.to_protojson() == hostile);
    // A message within a status within an event: as deep as the schema goes.
    let nested = json!({"statusUpdate": {"status": {"message": {"content": [{"text": "x"}],
        "metadata": {"m": {"m": {"m": {}}}}}}}});
    assert!(v03::Event::from_protojson(nested).is_ok());
}
