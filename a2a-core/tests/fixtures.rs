//! Spec-shaped JSON fixtures parse into the core types and serialize back to
//! the same JSON value.

use std::path::Path;

use a2a_core::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn round_trip<T: DeserializeOwned + Serialize>(name: &str) -> T {
    let original = load(name);
    let parsed: T =
        serde_json::from_value(original.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let again = serde_json::to_value(&parsed).expect("serializable");
    assert_eq!(
        again, original,
        "{name} did not re-serialize to the same JSON"
    );
    parsed
}

#[test]
fn requests() {
    let req: SendMessageRequest = round_trip("send_message_request.json");
    assert!(req.return_immediately());
    assert_eq!(req.history_length(), Some(0));

    let req: SendMessageRequest = round_trip("send_message_request_file.json");
    let parts = &req.message.parts;
    assert_eq!(parts.len(), 5);
    assert_eq!(parts[1].filename, "input_image.png");
    assert!(parts[1].as_raw().is_some_and(|b| b.starts_with(b"\x89PNG")));
    assert_eq!(parts[4].content, PartContent::Data(Value::Null));
    let push = req
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .unwrap();
    assert_eq!(push.authentication.unwrap().scheme, "Bearer");

    let list: ListTasksRequest = round_trip("list_tasks_request.json");
    assert_eq!(list.status, TaskState::Working);
    assert_eq!(list.include_artifacts, Some(false));

    let get: GetTaskRequest = round_trip("get_task_request.json");
    assert_eq!(get.history_length, Some(0));
    let cancel: CancelTaskRequest = round_trip("cancel_task_request.json");
    assert_eq!(cancel.id, "t-1");
    let config: TaskPushNotificationConfig = round_trip("push_config.json");
    assert_eq!(config.task_id, "t-1");
}

#[test]
fn responses() {
    let response: SendMessageResponse = round_trip("send_message_response_task.json");
    let SendMessageResponse::Task(task) = response else {
        panic!("expected a task")
    };
    assert_eq!(task.state(), TaskState::Completed);
    assert_eq!(task.artifacts[0].name, "joke");

    let response: SendMessageResponse = round_trip("send_message_response_message.json");
    assert!(
        matches!(response, SendMessageResponse::Message(m) if m.text() == "Direct message response")
    );

    let task: Task = round_trip("task_input_required.json");
    assert!(task.state().is_interrupted());

    let list: ListTasksResponse = round_trip("list_tasks_response.json");
    assert_eq!(list.next_page_token, "");
    assert_eq!(list.total_size, 2);

    let configs: ListTaskPushNotificationConfigsResponse =
        round_trip("list_push_configs_response.json");
    assert_eq!(configs.configs.len(), 2);
}

#[test]
fn stream_events() {
    let event: StreamResponse = round_trip("stream_status_update.json");
    assert_eq!(event.state(), Some(TaskState::Working));
    let event: StreamResponse = round_trip("stream_artifact_update.json");
    assert!(matches!(event, StreamResponse::ArtifactUpdate(u) if u.append && u.last_chunk));
    let event: StreamResponse = round_trip("stream_task.json");
    assert_eq!(event.task_id(), "t-1");

    let envelope: JsonRpcResponse<StreamResponse> = round_trip("jsonrpc_stream_event.json");
    assert_eq!(
        envelope.result.and_then(|r| r.state()),
        Some(TaskState::Completed)
    );
    let request: JsonRpcRequest<SendMessageRequest> = round_trip("jsonrpc_send_request.json");
    assert_eq!(
        Method::from_name(&request.method),
        Some(Method::SendMessage)
    );
}

#[test]
fn agent_cards() {
    let card: AgentCard = round_trip("agent_card.json");
    assert_eq!(card.supported_interfaces.len(), 3);
    assert_eq!(
        card.interface(binding::GRPC).unwrap().url,
        "georoute-agent.example.com:443"
    );
    assert!(card.capabilities.supports_streaming());
    assert!(!card.capabilities.supports_extended_agent_card());
    assert_eq!(card.security_schemes.len(), 9);
    assert!(matches!(
        &card.security_schemes["oauth"],
        SecurityScheme::OAuth2(OAuth2SecurityScheme { flows: Some(OAuthFlows::AuthorizationCode(f)), .. }) if f.pkce_required
    ));

    // Presence: explicitly-false optional capabilities and required empty fields survive.
    let minimal: AgentCard = round_trip("minimal_agent_card.json");
    assert_eq!(minimal.capabilities.streaming, Some(false));
}

#[test]
fn errors() {
    let response: JsonRpcResponse = round_trip("jsonrpc_error.json");
    let wire = response.error.unwrap();
    let err = A2aError::from_jsonrpc(&wire);
    assert_eq!(err.kind(), ErrorKind::TaskNotFound);
    assert_eq!(err.metadata()["taskId"], "t-9");
    assert_eq!(err.to_jsonrpc(), wire);

    let body: HttpErrorBody = round_trip("http_error.json");
    let err = A2aError::from_http_body(404, &body);
    assert_eq!(err.kind(), ErrorKind::TaskNotFound);
    assert_eq!(err.to_http_body(), body);
}
