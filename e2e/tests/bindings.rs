//! What every binding must do alike: authentication sets the caller, version
//! negotiation, required extensions. Dropped streams.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use a2a_client::CallOptions;
use a2a_core::{ErrorKind, GetTaskRequest, TaskState};
use a2a_server::http::HttpConfig;
use a2a_server::{A2aService, User, auth};
use futures::StreamExt;
use support::*;

/// Bearer tokens `alice-token` and `bob-token`; anything else is refused.
fn authenticated(service: A2aService) -> A2aService {
    service.with_authentication(auth::from_fn(|ctx| {
        match ctx.service_params.get("authorization") {
            Some("Bearer alice-token") => Ok(User::authenticated("alice")),
            Some("Bearer bob-token") => Ok(User::authenticated("bob")),
            Some(_) => Err(ErrorKind::Unauthenticated.into()),
            None => Ok(User::anonymous()),
        }
    }))
}

fn as_user(token: &str) -> CallOptions {
    CallOptions::default().header("authorization", format!("Bearer {token}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_hook_scopes_tasks_to_their_caller_on_every_binding() {
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        card,
        |b| b,
        authenticated,
        HttpConfig::default(),
    )
    .await
    .unwrap();
    for binding in BINDINGS {
        let client = client(&server, binding);
        let (alice, bob) = (as_user("alice-token"), as_user("bob-token"));
        let task = match client
            .send_message(request("input"), Some(&alice))
            .await
            .unwrap()
        {
            a2a_core::SendMessageResponse::Task(task) => task,
            other => panic!("{other:?}"),
        };
        let get = || GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        };
        assert_eq!(
            client.get_task(get(), Some(&alice)).await.unwrap().id,
            task.id,
            "{binding}"
        );
        assert_eq!(
            protocol_kind(client.get_task(get(), Some(&bob)).await),
            ErrorKind::TaskNotFound,
            "{binding}"
        );
        assert_eq!(
            protocol_kind(client.get_task(get(), None).await),
            ErrorKind::TaskNotFound,
            "{binding}"
        );
        let listed = client
            .list_tasks(Default::default(), Some(&bob))
            .await
            .unwrap();
        assert!(listed.tasks.iter().all(|t| t.id != task.id), "{binding}");
        let err = client.get_task(get(), Some(&as_user("forged"))).await;
        assert_eq!(protocol_kind(err), ErrorKind::Unauthenticated, "{binding}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_version_negotiation_uses_metadata() {
    // (The HTTP bindings' header and query forms are covered in hostile.rs.)
    let server = server().await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut raw = a2a_grpc::pb::a2a_service_client::A2aServiceClient::new(channel);
    let get = |version: &str| {
        let mut request = tonic::Request::new(a2a_grpc::pb::GetTaskRequest {
            id: "x".into(),
            ..Default::default()
        });
        request
            .metadata_mut()
            .insert("a2a-version", version.parse().unwrap());
        request
    };
    let status = raw.get_task(get("0.3")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        a2a_grpc::from_status(&status).kind(),
        ErrorKind::VersionNotSupported
    );
    let status = raw.get_task(get("1.0")).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(
        a2a_grpc::from_status(&status).kind(),
        ErrorKind::TaskNotFound
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_extensions_are_enforced_and_activated_ones_echoed() {
    let with_extension = |addr| {
        let mut card = card(addr);
        card.capabilities.extensions.push(a2a_core::AgentExtension {
            uri: "urn:example:required".into(),
            required: true,
            ..Default::default()
        });
        card
    };
    let server = e2e::start_server(
        e2e::ScriptedAgent,
        with_extension,
        |b| b,
        HttpConfig::default(),
    )
    .await
    .unwrap();
    for binding in BINDINGS {
        let client = a2a_grpc::register(a2a_client::ClientBuilder::new())
            .prefer([binding])
            .build(with_extension(server.addr))
            .unwrap();
        let refused = client.send_message(request("echo x"), None).await;
        assert_eq!(
            protocol_kind(refused),
            ErrorKind::ExtensionSupportRequired,
            "{binding}"
        );
        let options = CallOptions::default().extension("urn:example:required");
        assert!(
            client
                .send_message(request("echo x"), Some(&options))
                .await
                .is_ok(),
            "{binding}"
        );
    }
    // The HTTP response names the extensions the server activated.
    let response = reqwest::Client::new()
        .post(format!("http://{}/message:send", server.addr))
        .header("A2A-Extensions", "urn:example:required, urn:unknown")
        .json(&serde_json::json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "echo x"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["a2a-extensions"], "urn:example:required");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_disconnect_does_not_cancel_the_agent() {
    let server = server().await;
    for binding in BINDINGS {
        let client = client(&server, binding);
        let mut stream = client
            .send_streaming_message(request("slow 300"), None)
            .await
            .unwrap();
        let first = stream.next().await.unwrap().unwrap();
        drop(stream);
        // The agent was still working when the stream went away ...
        let now = client
            .get_task(
                GetTaskRequest {
                    id: first.task_id().into(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        assert!(
            now.status.state.is_active(),
            "{binding}: {}",
            now.status.state
        );
        // ... and finishes untouched: dropping a stream is not a cancel.
        let done = wait_for_state(&client, first.task_id(), TaskState::Completed).await;
        assert_eq!(status_text(&done), "done");
    }
}

/// Records each call's `api_key` query parameter; refuses calls without it.
#[derive(Clone, Default)]
struct QueryKeys(std::sync::Arc<std::sync::Mutex<Vec<(a2a_core::Method, String)>>>);

#[async_trait::async_trait]
impl a2a_server::CallInterceptor for QueryKeys {
    async fn before(
        &self,
        ctx: &mut a2a_server::CallContext,
        _request: &mut a2a_server::Request,
    ) -> Result<Option<a2a_server::Response>, a2a_core::A2aError> {
        let Some(key) = ctx.query_param("api_key") else {
            return Err(ErrorKind::Unauthenticated.into());
        };
        self.0.lock().unwrap().push((ctx.method, key.to_owned()));
        ctx.user = User::authenticated("key-holder");
        Ok(None)
    }
}

fn api_key_card(addr: std::net::SocketAddr) -> a2a_core::AgentCard {
    let mut card = card(addr);
    card.security_schemes.insert(
        "key".into(),
        a2a_core::SecurityScheme::ApiKey(a2a_core::ApiKeySecurityScheme {
            location: "query".into(),
            name: "api_key".into(),
            ..Default::default()
        }),
    );
    card
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_key_in_the_query_reaches_the_server_on_every_operation() {
    use a2a_core::{
        CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
        GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest, Method,
        SubscribeToTaskRequest, TaskPushNotificationConfig,
    };
    let keys = QueryKeys::default();
    let recorder = keys.clone();
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        api_key_card,
        |b| {
            b.push_address_policy(e2e::loopback_policy())
                .extended_card(a2a_core::AgentCard::new("extended", "more"))
        },
        move |service| service.with_interceptor(recorder),
        HttpConfig::default(),
    )
    .await
    .unwrap();
    for binding in BINDINGS {
        let client = a2a_grpc::register(a2a_client::ClientBuilder::new())
            .prefer([binding])
            .interceptor(a2a_client::AuthInterceptor::new().credential("key", "k-123"))
            // Each operation as itself: a tracked send would arrive as
            // SendStreamingMessage and GetTask.
            .track_blocking_sends(false)
            .build(api_key_card(server.addr))
            .unwrap();
        if binding == a2a_core::binding::GRPC {
            // No query string in gRPC: the key is refused loudly, not dropped.
            let err = client
                .send_message(request("echo hi"), None)
                .await
                .unwrap_err();
            assert_eq!(
                err.kind(),
                a2a_client::ClientErrorKind::Unsupported,
                "{err}"
            );
            assert!(err.to_string().contains("api_key"), "{err}");
            continue;
        }
        keys.0.lock().unwrap().clear();
        let task = send_task(&client, request("input")).await;
        let id = task.id.clone();
        let stream = client
            .send_streaming_message(request("echo streamed"), None)
            .await
            .unwrap();
        collect(stream).await;
        client
            .get_task(
                GetTaskRequest {
                    id: id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        client.list_tasks(Default::default(), None).await.unwrap();
        let mut subscription = client
            .subscribe_to_task(
                SubscribeToTaskRequest {
                    id: id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        subscription.next().await.unwrap().unwrap();
        drop(subscription);
        let config = client
            .create_task_push_notification_config(
                TaskPushNotificationConfig::new(id.clone(), "http://127.0.0.1:9/hook"),
                None,
            )
            .await
            .unwrap();
        client
            .get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest {
                    task_id: id.clone(),
                    id: config.id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        client
            .list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest {
                    task_id: id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        client
            .delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest {
                    task_id: id.clone(),
                    id: config.id,
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        client
            .cancel_task(
                CancelTaskRequest {
                    id: id.clone(),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap();
        client.get_extended_agent_card(None).await.unwrap();

        let seen = keys.0.lock().unwrap().clone();
        for method in Method::ALL {
            assert!(
                seen.iter().any(|(m, key)| *m == method && key == "k-123"),
                "{binding}: {method:?} arrived without the key ({seen:?})"
            );
        }
    }
}
