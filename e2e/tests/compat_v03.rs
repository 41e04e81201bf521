//! A2A 0.3 clients served by the 1.0 server: the 0.3 JSON-RPC method names
//! and shapes, chosen per request, the 0.3 card at `/.well-known/agent.json`,
//! and 1.0 requests that stay exactly as they were.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::{Value, json};
use support::*;

/// A raw JSON-RPC call as a 0.3 client makes it: no `A2A-Version`.
async fn call(
    server: &e2e::RunningSut,
    version: Option<&str>,
    method: &str,
    params: Value,
) -> Value {
    let mut request = reqwest::Client::new()
        .post(format!("http://{}/", server.addr))
        .json(&json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}));
    if let Some(version) = version {
        request = request.header("A2A-Version", version);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn message(text: &str) -> Value {
    json!({"kind": "message", "messageId": a2a_core::new_id(), "role": "user",
        "parts": [{"kind": "text", "text": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_client_sends_gets_and_cancels_in_0_3_shapes() {
    let server = server().await;
    let sent = call(
        &server,
        None,
        "message/send",
        json!({"message": message("echo hi")}),
    )
    .await;
    let task = &sent["result"];
    assert_eq!(task["kind"], "task", "{sent}");
    assert_eq!(task["status"]["state"], "completed");
    let answer = &task["status"]["message"];
    assert_eq!(
        (&answer["kind"], &answer["role"]),
        (&json!("message"), &json!("agent"))
    );
    assert_eq!(answer["parts"][0], json!({"kind": "text", "text": "hi"}));
    assert_eq!(task["history"][0]["kind"], "message");
    assert_eq!(task["history"][0]["role"], "user");

    let got = call(&server, Some("0.3"), "tasks/get", json!({"id": task["id"]})).await;
    assert_eq!(got["result"]["id"], task["id"]);
    assert_eq!(got["result"]["status"]["state"], "completed");

    let reply = call(
        &server,
        None,
        "message/send",
        json!({"message": message("message x")}),
    )
    .await;
    assert_eq!(reply["result"]["kind"], "message");
    assert_eq!(reply["result"]["role"], "agent");

    let waiting = call(
        &server,
        None,
        "message/send",
        json!({"message": message("wait"), "configuration": {"blocking": false}}),
    )
    .await;
    let id = waiting["result"]["id"].clone();
    let canceled = call(&server, None, "tasks/cancel", json!({"id": id})).await;
    assert_eq!(
        canceled["result"]["status"]["state"], "canceled",
        "{canceled}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_stream_ends_with_a_final_status_update() {
    let server = server().await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/", server.addr))
        .json(
            &json!({"jsonrpc": "2.0", "id": 7, "method": "message/stream",
            "params": {"message": message("stream 2")}}),
        )
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = response.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap())
        .collect();
    assert!(events.iter().all(|e| e["id"] == 7 && e["jsonrpc"] == "2.0"));
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["result"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"task"), "{kinds:?}");
    assert!(kinds.contains(&"artifact-update"), "{kinds:?}");
    let last = &events.last().unwrap()["result"];
    assert_eq!(last["kind"], "status-update");
    assert_eq!(last["final"], true);
    assert_eq!(last["status"]["state"], "completed");
    let chunk = events
        .iter()
        .find(|e| e["result"]["kind"] == "artifact-update")
        .unwrap();
    assert_eq!(chunk["result"]["artifact"]["parts"][0]["kind"], "text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_push_configs_take_their_0_3_shapes() {
    let server = server().await;
    let missing = call(&server, None, "tasks/get", json!({"id": "no-such-task"})).await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    assert!(missing["error"].get("data").is_none());
    let bad = call(
        &server,
        None,
        "message/send",
        json!({"message": {"kind": "message", "messageId": "m", "role": "user",
            "parts": [{"kind": "file", "file": {"bytes": "not base64!"}}]}}),
    )
    .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    let listed = call(&server, None, "tasks/get", json!(["no-such-task"])).await;
    assert_eq!(listed["error"]["code"], -32602, "{listed}");

    let task = call(
        &server,
        None,
        "message/send",
        json!({"message": message("wait"), "configuration": {"blocking": false}}),
    )
    .await["result"]
        .clone();
    let set = call(
        &server,
        None,
        "tasks/pushNotificationConfig/set",
        json!({"taskId": task["id"], "pushNotificationConfig":
            {"id": "p1", "url": "http://127.0.0.1:9/hook", "token": "tok"}}),
    )
    .await;
    assert_eq!(set["result"]["taskId"], task["id"], "{set}");
    assert_eq!(set["result"]["pushNotificationConfig"]["id"], "p1");
    let got = call(
        &server,
        None,
        "tasks/pushNotificationConfig/get",
        json!({"id": task["id"], "pushNotificationConfigId": "p1"}),
    )
    .await;
    assert_eq!(
        got["result"]["pushNotificationConfig"]["token"], "tok",
        "{got}"
    );
    let listed = call(
        &server,
        None,
        "tasks/pushNotificationConfig/list",
        json!({"id": task["id"]}),
    )
    .await;
    assert_eq!(listed["result"].as_array().unwrap().len(), 1, "{listed}");
    let deleted = call(
        &server,
        None,
        "tasks/pushNotificationConfig/delete",
        json!({"id": task["id"], "pushNotificationConfigId": "p1"}),
    )
    .await;
    assert_eq!(deleted["result"], Value::Null, "{deleted}");
    call(&server, None, "tasks/cancel", json!({"id": task["id"]})).await;

    let extended = call(
        &server,
        None,
        "agent/getAuthenticatedExtendedCard",
        json!({}),
    )
    .await;
    assert_eq!(extended["result"]["name"], "extended", "{extended}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_0_request_keeps_1_0_behaviour() {
    let server = server().await;
    // A 1.0 client naming a 0.3 method gets what any unknown method gets.
    let named = call(
        &server,
        Some("1.0"),
        "message/send",
        json!({"message": message("echo")}),
    )
    .await;
    assert_eq!(named["error"]["code"], -32601, "{named}");
    assert!(named["error"]["data"].is_array());
    let unknown = call(&server, None, "tasks/list", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    // The 1.0 method names answer in 1.0 shapes, with or without the header.
    let request = json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "echo hi"}]}});
    for version in [Some("1.0"), None] {
        let sent = call(&server, version, "SendMessage", request.clone()).await;
        assert_eq!(
            sent["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{sent}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_json_serves_the_0_3_card_beside_the_1_0_card() {
    let server = server().await;
    let old: Value = reqwest::get(format!("http://{}/.well-known/agent.json", server.addr))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(old["protocolVersion"], "0.3.0");
    assert_eq!(old["url"], format!("http://{}/", server.addr));
    assert_eq!(old["preferredTransport"], "JSONRPC");
    assert_eq!(old["capabilities"]["streaming"], true);
    assert_eq!(old["supportsAuthenticatedExtendedCard"], true);
    assert!(old.get("supportedInterfaces").is_none());
    let current: Value = reqwest::get(format!(
        "http://{}/.well-known/agent-card.json",
        server.addr
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert!(current.get("url").is_none());
    // The 1.0 interfaces first, then where 0.3 is spoken (JSON-RPC and
    // HTTP+JSON, on the same URLs).
    let listed: Vec<(String, String)> = current["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let field = |name: &str| i[name].as_str().unwrap().to_owned();
            (field("protocolBinding"), field("protocolVersion"))
        })
        .collect();
    let expected = [
        ("JSONRPC", "1.0"),
        ("HTTP+JSON", "1.0"),
        ("GRPC", "1.0"),
        ("JSONRPC", "0.3"),
        ("HTTP+JSON", "0.3"),
        ("GRPC", "0.3"),
    ]
    .map(|(b, v)| (b.to_owned(), v.to_owned()));
    assert_eq!(listed, expected);
    let additional: Vec<&str> = old["additionalInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["transport"].as_str().unwrap())
        .collect();
    assert_eq!(additional, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    // A 1.0 client still picks a 1.0 interface from the card.
    let card: a2a_core::AgentCard = serde_json::from_value(current).unwrap();
    let chosen = a2a_client::ClientBuilder::new().choose(&card).unwrap();
    assert_eq!(chosen.protocol_version, "1.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_speaks_0_3_to_an_agent_whose_card_says_0_3() {
    use a2a_client::{CardResolver, ClientBuilder};

    let server = server().await;
    // The 0.3 card, read as 1.0: its JSON-RPC, HTTP+JSON and gRPC
    // interfaces at version 0.3, JSON-RPC (its main url) first.
    let card = CardResolver::new()
        .path("/.well-known/agent.json")
        .resolve(&format!("http://{}", server.addr))
        .await
        .unwrap();
    let bindings: Vec<(&str, &str)> = card
        .supported_interfaces
        .iter()
        .map(|i| (i.protocol_binding.as_str(), i.protocol_version.as_str()))
        .collect();
    assert_eq!(
        bindings,
        [("JSONRPC", "0.3"), ("HTTP+JSON", "0.3"), ("GRPC", "0.3")]
    );
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let client = a2a_grpc::register(ClientBuilder::new())
            .prefer([binding])
            .build(card.clone())
            .unwrap();
        assert_eq!(client.interface().protocol_version, "0.3");
        assert_eq!(client.interface().protocol_binding, binding);
        exercise(&client).await;
    }
}

/// Every 0.3 operation through `client`, which talks 0.3 to the server.
async fn exercise(client: &a2a_client::Client) {
    use a2a_core::{
        CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
        GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
        TaskPushNotificationConfig, TaskState,
    };
    use futures::StreamExt;

    let task = send_task(client, request("echo hello")).await;
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(task.status.message.as_ref().unwrap().text(), "hello");
    let got = client
        .get_task(
            a2a_core::GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(got.id, task.id);

    let mut events = client
        .send_streaming_message(request("stream 2"), None)
        .await
        .unwrap();
    let mut states = Vec::new();
    while let Some(event) = events.next().await {
        states.push(event.unwrap());
    }
    assert!(matches!(
        states.first(),
        Some(a2a_core::StreamResponse::Task(_))
    ));
    assert_eq!(states.last().unwrap().state(), Some(TaskState::Completed));

    let waiting = send_task(client, immediate("wait")).await;
    let mut config = TaskPushNotificationConfig::new(&waiting.id, "http://127.0.0.1:9/hook");
    config.id = "p1".into();
    client
        .create_task_push_notification_config(config, None)
        .await
        .unwrap();
    let got = client
        .get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest {
                task_id: waiting.id.clone(),
                id: "p1".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(got.url, "http://127.0.0.1:9/hook");
    let listed = client
        .list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest {
                task_id: waiting.id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(listed.configs.len(), 1);
    client
        .delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest {
                task_id: waiting.id.clone(),
                id: "p1".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let canceled = client
        .cancel_task(
            CancelTaskRequest {
                id: waiting.id.clone(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    let missing = client
        .get_task(
            a2a_core::GetTaskRequest {
                id: "no-such-task".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(
        missing.protocol_kind(),
        Some(a2a_core::ErrorKind::TaskNotFound)
    );
}

#[test]
fn a_card_offering_1_0_and_0_3_is_used_in_1_0() {
    let mut card = a2a_core::AgentCard::new("both", "speaks both");
    let mut old = a2a_core::AgentInterface::new("http://h/v03", a2a_core::binding::JSONRPC);
    old.protocol_version = "0.3".into();
    card.supported_interfaces.push(old);
    card.supported_interfaces
        .push(a2a_core::AgentInterface::new(
            "http://h/rest",
            a2a_core::binding::HTTP_JSON,
        ));
    let builder = a2a_client::ClientBuilder::new();
    assert_eq!(builder.choose(&card).unwrap().url, "http://h/rest");
    card.supported_interfaces.pop();
    assert_eq!(builder.choose(&card).unwrap().url, "http://h/v03");
    // 0.3 is spoken over JSON-RPC and HTTP+JSON by the built-in transports.
    card.supported_interfaces[0].protocol_binding = a2a_core::binding::HTTP_JSON.into();
    assert_eq!(builder.choose(&card).unwrap().url, "http://h/v03");
    card.supported_interfaces[0].protocol_binding = a2a_core::binding::GRPC.into();
    assert!(builder.choose(&card).is_err());
}

/// A raw HTTP+JSON call as a 0.3 client makes it (no `A2A-Version`): the
/// status and the JSON body.
async fn rest(
    server: &e2e::RunningSut,
    verb: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(verb, format!("http://{}{path}", server.addr));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

fn proto_message(text: &str) -> Value {
    json!({"messageId": a2a_core::new_id(), "role": "ROLE_USER", "content": [{"text": text}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_rest_client_sends_gets_and_cancels_in_0_3_protojson() {
    use reqwest::Method as Verb;
    let server = server().await;
    let (status, sent) = rest(
        &server,
        Verb::POST,
        "/v1/message:send",
        Some(json!({"message": proto_message("echo hi"), "configuration": {"blocking": true}})),
    )
    .await;
    assert_eq!(status, 200, "{sent}");
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let answer = &task["status"]["message"];
    assert_eq!(answer["role"], "ROLE_AGENT");
    assert_eq!(answer["content"][0], json!({"text": "hi"}));
    assert_eq!(task["history"][0]["role"], "ROLE_USER");

    let id = task["id"].as_str().unwrap();
    let (status, got) = rest(
        &server,
        Verb::GET,
        &format!("/v1/tasks/{id}?historyLength=1"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["id"], id);
    assert_eq!(got["history"].as_array().unwrap().len(), 1, "{got}");

    let (_, reply) = rest(
        &server,
        Verb::POST,
        "/v1/message:send",
        Some(json!({"message": proto_message("message x")})),
    )
    .await;
    assert_eq!(reply["message"]["role"], "ROLE_AGENT", "{reply}");

    // The proto's `blocking` is false when left out.
    let (_, waiting) = rest(
        &server,
        Verb::POST,
        "/v1/message:send",
        Some(json!({"message": proto_message("wait"), "configuration": {}})),
    )
    .await;
    let id = waiting["task"]["id"].as_str().unwrap().to_owned();
    let (status, canceled) = rest(
        &server,
        Verb::POST,
        &format!("/v1/tasks/{id}:cancel"),
        Some(json!({"name": format!("tasks/{id}")})),
    )
    .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_rest_stream_carries_protojson_events() {
    let server = server().await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/message:stream", server.addr))
        .json(&json!({"message": proto_message("stream 2")}))
        .send()
        .await
        .unwrap();
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = response.text().await.unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str::<Value>(data.trim()).unwrap())
        .collect();
    assert!(events.first().unwrap().get("task").is_some(), "{text}");
    assert!(
        events.iter().any(|e| e.get("artifactUpdate").is_some()),
        "{text}"
    );
    let last = &events.last().unwrap()["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED", "{text}");
    assert_eq!(last["final"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_errors_and_push_configs_take_their_0_3_shapes() {
    use reqwest::Method as Verb;
    let server = server().await;
    let (status, missing) = rest(&server, Verb::GET, "/v1/tasks/no-such-task", None).await;
    assert_eq!(
        (status, &missing),
        (404, &json!({"message": missing["message"]}))
    );
    assert!(missing["message"].is_string());
    for body in [
        json!({"message": {"messageId": "m", "content": [{"file": {"fileWithBytes": "not base64!"}}]}}),
        json!({"message": {"messageId": "m", "content": [{}]}}),
        json!(["not", "an", "object"]),
        json!({"message": "text"}),
    ] {
        let (status, bad) = rest(&server, Verb::POST, "/v1/message:send", Some(body)).await;
        assert_eq!(status, 422, "{bad}");
        assert!(bad["message"].is_string(), "{bad}");
        assert!(bad.get("error").is_none(), "{bad}");
    }
    let (status, _) = rest(&server, Verb::GET, "/v1/tasks", None).await;
    assert_eq!(status, 404);

    let (_, waiting) = rest(
        &server,
        Verb::POST,
        "/v1/message:send",
        Some(json!({"message": proto_message("wait"), "configuration": {"blocking": false}})),
    )
    .await;
    let id = waiting["task"]["id"].as_str().unwrap().to_owned();
    let configs = format!("/v1/tasks/{id}/pushNotificationConfigs");
    let (status, set) = rest(
        &server,
        Verb::POST,
        &configs,
        Some(json!({"parent": format!("tasks/{id}"), "configId": "p1",
            "config": {"name": format!("tasks/{id}/pushNotificationConfigs/p1"),
                "pushNotificationConfig": {"id": "p1", "url": "http://127.0.0.1:9/hook", "token": "tok"}}})),
    )
    .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(
        set["name"],
        format!("tasks/{id}/pushNotificationConfigs/p1")
    );
    let (_, got) = rest(&server, Verb::GET, &format!("{configs}/p1"), None).await;
    assert_eq!(got["pushNotificationConfig"]["token"], "tok", "{got}");
    let (_, listed) = rest(&server, Verb::GET, &configs, None).await;
    assert_eq!(listed["configs"].as_array().unwrap().len(), 1, "{listed}");
    let (status, _) = rest(&server, Verb::DELETE, &format!("{configs}/p1"), None).await;
    assert_eq!(status, 200);
    rest(
        &server,
        Verb::POST,
        &format!("/v1/tasks/{id}:cancel"),
        Some(json!({})),
    )
    .await;

    let (status, card) = rest(&server, Verb::GET, "/v1/card", None).await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["name"], "extended");
    assert_eq!(card["protocolVersion"], "0.3.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_0_rest_request_under_v1_is_a_tenant() {
    // A 1.0 client that says so reaches tenant `v1` of the 1.0 binding.
    let server = server().await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/message:send", server.addr))
        .header("A2A-Version", "1.0")
        .json(&json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "echo hi"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let sent: Value = response.json().await.unwrap();
    assert_eq!(
        sent["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{sent}"
    );
    assert_eq!(
        sent["task"]["status"]["message"]["parts"][0]["text"], "hi",
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_0_3_grpc_client_sends_streams_gets_and_cancels() {
    use a2a_grpc::v03::pb;
    use futures::StreamExt;
    let server = server().await;
    let mut client = grpc_v03(&server).await;
    let message = |text: &str| pb::Message {
        message_id: a2a_core::new_id(),
        role: pb::Role::User as i32,
        content: vec![pb::Part {
            part: Some(pb::part::Part::Text(text.into())),
            metadata: None,
        }],
        ..Default::default()
    };
    let send = |text: &str, blocking: bool| pb::SendMessageRequest {
        request: Some(message(text)),
        configuration: Some(pb::SendMessageConfiguration {
            blocking,
            ..Default::default()
        }),
        metadata: None,
    };
    let task = match client
        .send_message(send("echo hi", true))
        .await
        .unwrap()
        .into_inner()
        .payload
    {
        Some(pb::send_message_response::Payload::Task(task)) => task,
        other => panic!("expected a task, got {other:?}"),
    };
    let status = task.status.clone().unwrap();
    assert_eq!(status.state, pb::TaskState::Completed as i32);
    let answer = status.update.unwrap();
    assert_eq!(answer.role, pb::Role::Agent as i32);
    assert_eq!(
        answer.content[0].part,
        Some(pb::part::Part::Text("hi".into()))
    );

    let got = client
        .get_task(pb::GetTaskRequest {
            name: format!("tasks/{}", task.id),
            history_length: 0,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.id, task.id);

    let mut events = client
        .send_streaming_message(send("stream 2", true))
        .await
        .unwrap()
        .into_inner();
    let mut payloads = Vec::new();
    while let Some(event) = events.next().await {
        payloads.push(event.unwrap().payload.unwrap());
    }
    use pb::stream_response::Payload;
    assert!(matches!(payloads.first(), Some(Payload::Task(_))));
    assert!(
        payloads
            .iter()
            .any(|p| matches!(p, Payload::ArtifactUpdate(_)))
    );
    match payloads.last() {
        Some(Payload::StatusUpdate(update)) => {
            assert!(update.r#final);
            assert_eq!(
                update.status.as_ref().unwrap().state,
                pb::TaskState::Completed as i32
            );
        }
        other => panic!("expected a final status update, got {other:?}"),
    }

    let waiting = match client
        .send_message(send("wait", false))
        .await
        .unwrap()
        .into_inner()
        .payload
    {
        Some(pb::send_message_response::Payload::Task(task)) => task,
        other => panic!("expected a task, got {other:?}"),
    };
    let canceled = client
        .cancel_task(pb::CancelTaskRequest {
            name: format!("tasks/{}", waiting.id),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        canceled.status.unwrap().state,
        pb::TaskState::Cancelled as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_errors_take_their_0_3_form() {
    use a2a_grpc::v03::pb;
    let server = server().await;
    let mut client = grpc_v03(&server).await;
    let missing = client
        .get_task(pb::GetTaskRequest {
            name: "tasks/no-such-task".into(),
            history_length: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    assert!(
        missing.message().starts_with("TaskNotFoundError: "),
        "{missing:?}"
    );
    // No ErrorInfo detail: 0.3 had none.
    assert!(missing.details().is_empty());
    let unnamed = client
        .get_task(pb::GetTaskRequest {
            name: "no-tasks-here".into(),
            history_length: 0,
        })
        .await
        .unwrap_err();
    assert_eq!(unnamed.code(), tonic::Code::InvalidArgument);
    let empty_part = pb::SendMessageRequest {
        request: Some(pb::Message {
            message_id: "m".into(),
            content: vec![pb::Part::default()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let bad = client.send_message(empty_part).await.unwrap_err();
    assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    assert!(bad.message().starts_with("InvalidParamsError: "), "{bad:?}");
    let card = client
        .get_agent_card(pb::GetAgentCardRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(card.name, "extended");
    assert_eq!(card.protocol_version, "0.3.0");
}

/// A raw client of the server's 0.3 gRPC service.
async fn grpc_v03(
    server: &e2e::RunningSut,
) -> a2a_grpc::v03::pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    a2a_grpc::v03::pb::a2a_service_client::A2aServiceClient::new(channel)
}
