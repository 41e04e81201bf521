use super::*;
use serde_json::json;

#[test]
fn a_0_3_message_send_becomes_the_1_0_request_and_back() {
    let params: MessageSendParams = serde_json::from_value(json!({
        "message": {"kind": "message", "messageId": "m1", "role": "user", "contextId": "c1",
            "parts": [
                {"kind": "text", "text": "hi"},
                {"kind": "file", "file": {"name": "a.txt", "mimeType": "text/plain", "bytes": "aGk="}},
                {"kind": "file", "file": {"uri": "https://example.com/x"}},
                {"kind": "data", "data": {"k": 1}}
            ]},
        "configuration": {"blocking": false, "historyLength": 3, "acceptedOutputModes": ["text/plain"]}
    }))
    .unwrap();
    let request = params.clone().into_v1().unwrap();
    assert_eq!(request.message.context_id, "c1");
    assert_eq!(request.message.role, crate::Role::User);
    assert_eq!(
        request.message.parts[1].content,
        crate::PartContent::Raw(b"hi".to_vec())
    );
    assert_eq!(request.message.parts[1].filename, "a.txt");
    assert_eq!(request.message.parts[1].media_type, "text/plain");
    assert_eq!(
        request.message.parts[2].content,
        crate::PartContent::Url("https://example.com/x".into())
    );
    let configuration = request.configuration.clone().unwrap();
    assert!(configuration.return_immediately);
    assert_eq!(configuration.history_length, Some(3));
    let back = MessageSendParams::from_v1(request);
    assert_eq!(back.message.parts[..3], params.message.parts[..3]);
    assert_eq!(
        serde_json::to_value(&back.message).unwrap()["kind"],
        json!("message")
    );
}

#[test]
fn hostile_0_3_parts_are_errors_not_panics() {
    for part in [
        json!({"kind": "file", "file": {"bytes": "not base64!"}}),
        json!({"kind": "file", "file": {}}),
        json!({"kind": "file", "file": {"bytes": "aGk=", "uri": "https://x"}}),
    ] {
        let part: Part = serde_json::from_value(part).unwrap();
        assert_eq!(
            part.into_v1().unwrap_err().kind(),
            crate::ErrorKind::InvalidParams
        );
    }
    assert!(serde_json::from_value::<Part>(json!({"kind": "video"})).is_err());
    assert!(serde_json::from_value::<Event>(json!({"kind": 5})).is_err());
}

#[test]
fn a_1_0_task_and_events_take_their_0_3_shapes() {
    let mut task = crate::Task::new("t1", "c1", crate::TaskState::InputRequired);
    task.history.push(crate::Message::user_text("hi").into());
    let json =
        serde_json::to_value(Event::from_v1(crate::StreamResponse::Task(task.clone()))).unwrap();
    assert_eq!(json["kind"], "task");
    assert_eq!(json["status"]["state"], "input-required");
    assert_eq!(json["history"][0]["role"], "user");
    assert_eq!(
        json["history"][0]["parts"][0],
        json!({"kind": "text", "text": "hi"})
    );
    let update = crate::TaskStatusUpdateEvent {
        task_id: "t1".into(),
        context_id: "c1".into(),
        status: crate::TaskStatus::new(crate::TaskState::Completed),
        metadata: None,
    };
    let json =
        serde_json::to_value(Event::from_v1(crate::StreamResponse::StatusUpdate(update))).unwrap();
    assert_eq!(json["kind"], "status-update");
    assert_eq!(json["final"], true);
    assert_eq!(json["status"]["state"], "completed");
    let read: Event = serde_json::from_value(json).unwrap();
    assert!(matches!(
        read.into_v1().unwrap(),
        crate::StreamResponse::StatusUpdate(u) if u.status.state == crate::TaskState::Completed
    ));
    let back: Task =
        serde_json::from_value(serde_json::to_value(Task::from_v1(task.clone())).unwrap()).unwrap();
    assert_eq!(back.into_v1().unwrap(), task);
}

#[test]
fn push_configs_nest_in_0_3_and_flatten_in_1_0() {
    let config: TaskPushNotificationConfig = serde_json::from_value(json!({
        "taskId": "t1",
        "pushNotificationConfig": {"id": "p1", "url": "https://hook", "token": "tok",
            "authentication": {"schemes": ["Bearer"], "credentials": "x"}}
    }))
    .unwrap();
    let flat = config.clone().into_v1();
    assert_eq!((flat.task_id.as_str(), flat.id.as_str()), ("t1", "p1"));
    assert_eq!(flat.authentication.as_ref().unwrap().scheme, "Bearer");
    assert_eq!(TaskPushNotificationConfig::from_v1(flat), config);
}

#[test]
fn the_1_0_card_has_a_0_3_form_and_a_0_3_card_reads_as_1_0() {
    let mut card = crate::AgentCard::new("Echo", "Repeats")
        .with_interface("http://h/rest", crate::binding::HTTP_JSON)
        .with_interface("http://h/", crate::binding::JSONRPC)
        .with_streaming(true);
    card.security_schemes.insert(
        "key".into(),
        crate::SecurityScheme::ApiKey(crate::ApiKeySecurityScheme {
            description: String::new(),
            location: "header".into(),
            name: "X-Key".into(),
        }),
    );
    card.security_requirements
        .push(crate::SecurityRequirement::single("key", vec![]));
    let old = AgentCard::from_v1(&card).unwrap();
    let json = serde_json::to_value(&old).unwrap();
    assert_eq!(json["url"], "http://h/");
    assert_eq!(json["preferredTransport"], "JSONRPC");
    assert_eq!(json["protocolVersion"], "0.3.0");
    assert_eq!(
        json["securitySchemes"]["key"],
        json!({"type": "apiKey", "in": "header", "name": "X-Key"})
    );
    assert_eq!(json["security"], json!([{"key": []}]));
    // Both bindings this SDK serves in 0.3, JSON-RPC (the url) first.
    assert_eq!(
        json["additionalInterfaces"],
        json!([{"url": "http://h/", "transport": "JSONRPC"},
            {"url": "http://h/rest", "transport": "HTTP+JSON"}])
    );
    let read = parse_any_card(&serde_json::to_vec(&json).unwrap()).unwrap();
    assert_eq!(read.supported_interfaces.len(), 2);
    assert!(
        read.supported_interfaces
            .iter()
            .all(|i| i.protocol_version == "0.3")
    );
    assert_eq!(read.supported_interfaces[0].url, "http://h/");
    assert_eq!(read.security_schemes, card.security_schemes);
    assert_eq!(read.security_requirements, card.security_requirements);
    let current = parse_any_card(&serde_json::to_vec(&card).unwrap()).unwrap();
    assert_eq!(current, card);
}

#[test]
fn version_and_method_names() {
    assert!(is_v03_version(None));
    assert!(is_v03_version(Some(" ")));
    assert!(is_v03_version(Some("0.3")));
    assert!(is_v03_version(Some("0.3.0")));
    assert!(!is_v03_version(Some("1.0")));
    for method in Method::ALL {
        assert_eq!(Method::from_name(method.name()), Some(method));
        assert_eq!(Method::from_v1(method.v1()), Some(method));
    }
    assert_eq!(Method::from_name("SendMessage"), None);
}

#[test]
fn errors_keep_their_0_3_codes() {
    let err = crate::A2aError::task_not_found("t1");
    let old = error_to_v03(&err);
    assert_eq!(old.code, -32001);
    assert!(old.data.is_none());
    assert_eq!(error_from_v03(&old).kind(), crate::ErrorKind::TaskNotFound);
    let version = crate::A2aError::new(crate::ErrorKind::VersionNotSupported, "no");
    assert_eq!(error_to_v03(&version).code, -32600);
}

#[test]
fn advertise_lists_0_3_interfaces_after_the_1_0_ones() {
    let mut card = crate::AgentCard::new("Echo", "Repeats")
        .with_interface("http://h/", crate::binding::JSONRPC)
        .with_interface("h:1", crate::binding::GRPC)
        .with_interface("http://h/rest", crate::binding::HTTP_JSON);
    advertise(&mut card, &SERVED_BINDINGS);
    advertise(&mut card, &SERVED_BINDINGS);
    let listed: Vec<(&str, &str)> = card
        .supported_interfaces
        .iter()
        .map(|i| (i.protocol_binding.as_str(), i.protocol_version.as_str()))
        .collect();
    assert_eq!(
        listed,
        [
            ("JSONRPC", "1.0"),
            ("GRPC", "1.0"),
            ("HTTP+JSON", "1.0"),
            ("JSONRPC", "0.3"),
            ("HTTP+JSON", "0.3"),
        ]
    );
    // The 0.3 card lists the card's 0.3 interfaces.
    let old = AgentCard::from_v1(&card).unwrap();
    assert_eq!(old.additional_interfaces.len(), 2);
    // A signed card is left alone.
    let mut signed =
        crate::AgentCard::new("S", "signed").with_interface("http://h/", crate::binding::JSONRPC);
    signed.signatures.push(Default::default());
    advertise(&mut signed, &SERVED_BINDINGS);
    assert_eq!(signed.supported_interfaces.len(), 1);
}
