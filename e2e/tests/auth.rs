//! Enforced authentication and isolation on every binding: the ready
//! authenticators (bearer, API key, JWT against a local JWKS), tenants bound to
//! identities, no caller reaching another's tasks or push configs.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientBuilder, ClientError};
use a2a_core::{
    AuthenticationInfo, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
    TaskPushNotificationConfig,
};
use a2a_server::auth::{ApiKeyAuth, BearerAuth, JwtAuth, Principal};
use a2a_server::http::HttpConfig;
use e2e::RunningSut;
use futures::StreamExt;
use support::*;

/// alice may use tenants `t1` and `t2`, bob any tenant, carol only `t2`.
fn bearer() -> BearerAuth {
    BearerAuth::new()
        .token(
            "alice-token",
            Principal::new("alice").allow_tenants(["t1", "t2"]),
        )
        .token("bob-token", Principal::new("bob"))
        .token("carol-token", Principal::new("carol").allow_tenants(["t2"]))
}

async fn bearer_server() -> RunningSut {
    e2e::start_service(
        e2e::ScriptedAgent,
        card,
        |b| {
            b.push_address_policy(e2e::loopback_policy())
                .extended_card(a2a_core::AgentCard::new("extended", "more"))
        },
        |service| service.with_authentication(bearer()),
        HttpConfig::default(),
    )
    .await
    .unwrap()
}

/// A client on `binding` whose calls go to `tenant`.
fn tenant_client(server: &RunningSut, binding: &str, tenant: &str) -> Client {
    let mut card = card(server.addr);
    for interface in &mut card.supported_interfaces {
        tenant.clone_into(&mut interface.tenant);
    }
    a2a_grpc::register(ClientBuilder::new())
        .prefer([binding])
        .build(card)
        .unwrap()
}

fn token(token: &str) -> CallOptions {
    CallOptions::default().header("authorization", format!("Bearer {token}"))
}

/// The protocol error of a call, streaming calls included (their refusal may
/// come as the call's error or as the stream's first item).
async fn stream_kind(result: Result<a2a_client::EventStream, ClientError>) -> ErrorKind {
    match result {
        Err(err) => err.protocol_kind().unwrap(),
        Ok(mut stream) => {
            let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
                .await
                .unwrap();
            match first {
                Some(Err(err)) => err.protocol_kind().unwrap(),
                other => panic!("expected a refusal, got {other:?}"),
            }
        }
    }
}

/// Every one of the eleven operations, on `task_id`, as `options`; the kind
/// of error each answered with (`None`: it succeeded).
async fn every_operation(
    client: &Client,
    task_id: &str,
    config_id: &str,
    options: Option<&CallOptions>,
) -> Vec<(&'static str, Option<ErrorKind>)> {
    let kind = |r: Result<(), ClientError>| r.err().map(|e| e.protocol_kind().unwrap());
    let mut follow_up = request("echo again");
    follow_up.message.task_id = task_id.to_owned();
    let mut results = vec![
        (
            "SendMessage",
            kind(
                client
                    .send_message(follow_up.clone(), options)
                    .await
                    .map(drop),
            ),
        ),
        (
            "SendStreamingMessage",
            Some(stream_kind(client.send_streaming_message(follow_up, options).await).await),
        ),
        (
            "GetTask",
            kind(
                client
                    .get_task(
                        GetTaskRequest {
                            id: task_id.to_owned(),
                            ..Default::default()
                        },
                        options,
                    )
                    .await
                    .map(drop),
            ),
        ),
        (
            "CancelTask",
            kind(
                client
                    .cancel_task(
                        CancelTaskRequest {
                            id: task_id.to_owned(),
                            ..Default::default()
                        },
                        options,
                    )
                    .await
                    .map(drop),
            ),
        ),
        (
            "SubscribeToTask",
            Some(
                stream_kind(
                    client
                        .subscribe_to_task(
                            SubscribeToTaskRequest {
                                id: task_id.to_owned(),
                                ..Default::default()
                            },
                            options,
                        )
                        .await,
                )
                .await,
            ),
        ),
        (
            "CreateTaskPushNotificationConfig",
            kind(
                client
                    .create_task_push_notification_config(
                        TaskPushNotificationConfig::new(task_id, "http://127.0.0.1:9/intruder"),
                        options,
                    )
                    .await
                    .map(drop),
            ),
        ),
        (
            "GetTaskPushNotificationConfig",
            kind(
                client
                    .get_task_push_notification_config(
                        GetTaskPushNotificationConfigRequest {
                            task_id: task_id.to_owned(),
                            id: config_id.to_owned(),
                            ..Default::default()
                        },
                        options,
                    )
                    .await
                    .map(drop),
            ),
        ),
        (
            "ListTaskPushNotificationConfigs",
            kind(
                client
                    .list_task_push_notification_configs(
                        ListTaskPushNotificationConfigsRequest {
                            task_id: task_id.to_owned(),
                            ..Default::default()
                        },
                        options,
                    )
                    .await
                    .map(|listed| assert!(listed.configs.is_empty(), "{listed:?}")),
            ),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            kind(
                client
                    .delete_task_push_notification_config(
                        DeleteTaskPushNotificationConfigRequest {
                            task_id: task_id.to_owned(),
                            id: config_id.to_owned(),
                            ..Default::default()
                        },
                        options,
                    )
                    .await,
            ),
        ),
    ];
    let listed = client
        .list_tasks(ListTasksRequest::default(), options)
        .await;
    results.push((
        "ListTasks",
        kind(listed.map(|l| assert!(l.tasks.iter().all(|t| t.id != task_id), "{l:?}"))),
    ));
    results.push((
        "GetExtendedAgentCard",
        kind(client.get_extended_agent_card(options).await.map(drop)),
    ));
    results
}

async fn alice_task(client: &Client) -> (Task, TaskPushNotificationConfig) {
    let alice = token("alice-token");
    let task = match client
        .send_message(request("input"), Some(&alice))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(task) => task,
        other => panic!("{other:?}"),
    };
    let mut config = TaskPushNotificationConfig::new(&task.id, "http://127.0.0.1:9/alice");
    config.token = "alice-push-token".into();
    config.authentication = Some(AuthenticationInfo {
        scheme: "Bearer".into(),
        credentials: "alice-webhook-secret".into(),
    });
    let config = client
        .create_task_push_notification_config(config, Some(&alice))
        .await
        .unwrap();
    (task, config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_credentials_every_operation_is_refused_on_every_binding() {
    let server = bearer_server().await;
    for binding in BINDINGS {
        let client = tenant_client(&server, binding, "t1");
        let (task, config) = alice_task(&client).await;
        for options in [None, Some(token("forged"))] {
            for (operation, outcome) in
                every_operation(&client, &task.id, &config.id, options.as_ref()).await
            {
                assert_eq!(
                    outcome,
                    Some(ErrorKind::Unauthenticated),
                    "{binding} {operation}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_identity_reaches_another_identitys_task_on_any_binding() {
    let server = bearer_server().await;
    for binding in BINDINGS {
        let t1 = tenant_client(&server, binding, "t1");
        let (task, config) = alice_task(&t1).await;
        // bob in alice's tenant, and alice herself in her other tenant.
        for (client, who) in [
            (&t1, "bob-token"),
            (&tenant_client(&server, binding, "t2"), "alice-token"),
        ] {
            for (operation, outcome) in
                every_operation(client, &task.id, &config.id, Some(&token(who))).await
            {
                let expected = match operation {
                    // Nothing of alice's is named: these answer, showing nothing of hers.
                    "ListTasks" | "GetExtendedAgentCard" => None,
                    _ => Some(ErrorKind::TaskNotFound),
                };
                assert_eq!(outcome, expected, "{binding} {who} {operation}");
            }
        }
        // alice's task and config are untouched, and only she sees the secret.
        let alice = token("alice-token");
        let get = GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        };
        let task_now = t1.get_task(get, Some(&alice)).await.unwrap();
        assert_eq!(task_now.status.state, task.status.state, "{binding}");
        let listed = t1
            .list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest {
                    task_id: task.id.clone(),
                    ..Default::default()
                },
                Some(&alice),
            )
            .await
            .unwrap();
        assert_eq!(listed.configs.len(), 1, "{binding}");
        assert_eq!(listed.configs[0].url, "http://127.0.0.1:9/alice");
        assert_eq!(
            listed.configs[0]
                .authentication
                .as_ref()
                .unwrap()
                .credentials,
            "alice-webhook-secret",
            "{binding}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_identity_is_refused_a_tenant_it_may_not_use_on_every_binding() {
    let server = bearer_server().await;
    for binding in BINDINGS {
        let t1 = tenant_client(&server, binding, "t1");
        let (task, config) = alice_task(&t1).await;
        for (operation, outcome) in
            every_operation(&t1, &task.id, &config.id, Some(&token("carol-token"))).await
        {
            assert_eq!(
                outcome,
                Some(ErrorKind::Unauthorized),
                "{binding} {operation}"
            );
        }
        // carol's own tenant works.
        let t2 = tenant_client(&server, binding, "t2");
        t2.send_message(request("echo hi"), Some(&token("carol-token")))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_refusals_carry_the_status_and_challenge_and_the_card_stays_public() {
    let server = bearer_server().await;
    let http = reqwest::Client::new();
    let base = format!("http://{}", server.addr);
    let card = http
        .get(format!("{base}{}", a2a_core::AGENT_CARD_PATH))
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 200);
    let card: serde_json::Value = card.json().await.unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert!(card["securityRequirements"][0]["schemes"]["bearer"].is_object());

    let rest = http
        .get(format!("{base}/tasks/anything"))
        .header("a2a-version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 401);
    assert_eq!(rest.headers()["www-authenticate"], r#"Bearer realm="a2a""#);

    let rpc = http
        .post(format!("{base}/"))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(rpc.headers()["www-authenticate"], r#"Bearer realm="a2a""#);
    let body: serde_json::Value = rpc.json().await.unwrap();
    assert_eq!(body["error"]["code"], -31401);

    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut raw = a2a_grpc::pb::a2a_service_client::A2aServiceClient::new(channel);
    let status = raw
        .get_task(a2a_grpc::pb::GetTaskRequest {
            id: "x".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_in_a_header_are_enforced_on_every_binding() {
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        card,
        |b| b,
        |service| {
            service.with_authentication(
                ApiKeyAuth::new("X-API-Key")
                    .unwrap()
                    .key("key-1", Principal::new("alice")),
            )
        },
        HttpConfig::default(),
    )
    .await
    .unwrap();
    for binding in BINDINGS {
        let client = client(&server, binding);
        let good = CallOptions::default().header("x-api-key", "key-1");
        client
            .send_message(request("echo x"), Some(&good))
            .await
            .unwrap();
        let bad = CallOptions::default().header("x-api-key", "key-2");
        for options in [None, Some(&bad)] {
            let refused = client.send_message(request("echo x"), options).await;
            assert_eq!(
                protocol_kind(refused),
                ErrorKind::Unauthenticated,
                "{binding}"
            );
        }
    }
    let rest = reqwest::Client::new()
        .get(format!("http://{}/tasks/x", server.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 401);
    assert_eq!(
        rest.headers()["www-authenticate"],
        r#"ApiKey realm="a2a", header="x-api-key""#
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_without_a_json_content_type_are_refused() {
    let server = server().await;
    let http = reqwest::Client::new();
    let base = format!("http://{}", server.addr);
    let send = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"echo x"}]}}"#;
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut rest = http.post(format!("{base}/message:send")).body(send);
        let rpc_body =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{send}}}"#);
        let mut rpc = http.post(format!("{base}/")).body(rpc_body);
        if let Some(content_type) = content_type {
            rest = rest.header("content-type", content_type);
            rpc = rpc.header("content-type", content_type);
        }
        let rest = rest.send().await.unwrap();
        assert_eq!(rest.status(), 415, "{content_type:?}");
        let rpc: serde_json::Value = rpc.send().await.unwrap().json().await.unwrap();
        assert_eq!(rpc["error"]["code"], -32005, "{content_type:?}");
    }
    for content_type in ["application/json", "application/a2a+json; charset=utf-8"] {
        let rest = http
            .post(format!("{base}/message:send"))
            .header("content-type", content_type)
            .body(send)
            .send()
            .await
            .unwrap();
        assert_eq!(rest.status(), 200, "{content_type}");
    }
}

// --- JWT against a JWKS served on 127.0.0.1 ---

const KEY_1: &[u8] = b"the first HMAC key, 32 bytes long";
const KEY_2: &[u8] = b"the second HMAC key, also long...";

fn jwk(kid: &str, secret: &[u8]) -> serde_json::Value {
    use base64::Engine as _;
    serde_json::json!({
        "kty": "oct",
        "kid": kid,
        "alg": "HS256",
        "k": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
    })
}

/// A JWKS endpoint whose key set the test can change; counts its fetches.
struct Jwks {
    url: String,
    keys: std::sync::Arc<std::sync::Mutex<serde_json::Value>>,
    fetches: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

async fn jwks(keys: serde_json::Value) -> Jwks {
    let keys = std::sync::Arc::new(std::sync::Mutex::new(keys));
    let fetches = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (served, counted) = (keys.clone(), fetches.clone());
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let (served, counted) = (served.clone(), counted.clone());
            async move {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let set = serde_json::json!({ "keys": served.lock().unwrap().clone() });
                axum::Json(set)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Jwks { url, keys, fetches }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn jwt(kid: &str, secret: &[u8], claims: serde_json::Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret),
    )
    .unwrap()
}

fn claims(sub: &str) -> serde_json::Value {
    serde_json::json!({
        "sub": sub, "aud": "my-agent", "iss": "https://issuer.example",
        "exp": now() + 600, "nbf": now() - 10,
    })
}

fn with(mut claims: serde_json::Value, key: &str, value: serde_json::Value) -> serde_json::Value {
    claims[key] = value;
    claims
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwts_are_verified_against_the_jwks_on_every_binding() {
    let keys = jwks(serde_json::json!([jwk("k1", KEY_1)])).await;
    let url = keys.url.clone();
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        card,
        |b| b,
        move |service| {
            service.with_authentication(
                JwtAuth::new(url, "my-agent", "https://issuer.example").min_refetch(Duration::ZERO),
            )
        },
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let good = jwt("k1", KEY_1, claims("alice"));
    let refused = [
        ("bad signature", jwt("k1", KEY_2, claims("alice"))),
        (
            "expired",
            jwt(
                "k1",
                KEY_1,
                with(claims("alice"), "exp", (now() - 120).into()),
            ),
        ),
        (
            "not yet valid",
            jwt(
                "k1",
                KEY_1,
                with(claims("alice"), "nbf", (now() + 600).into()),
            ),
        ),
        (
            "wrong audience",
            jwt("k1", KEY_1, with(claims("alice"), "aud", "other".into())),
        ),
        (
            "wrong issuer",
            jwt(
                "k1",
                KEY_1,
                with(claims("alice"), "iss", "https://evil".into()),
            ),
        ),
        ("unknown key", jwt("k9", KEY_1, claims("alice"))),
        ("not a JWT", "garbage".to_owned()),
    ];
    for binding in BINDINGS {
        let client = client(&server, binding);
        let task = match client
            .send_message(request("input"), Some(&token(&good)))
            .await
            .unwrap()
        {
            SendMessageResponse::Task(task) => task,
            other => panic!("{other:?}"),
        };
        for (why, bad) in &refused {
            let get = GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            };
            let err = client.get_task(get, Some(&token(bad))).await;
            assert_eq!(
                protocol_kind(err),
                ErrorKind::Unauthenticated,
                "{binding} {why}"
            );
        }
        // Another subject is another identity.
        let get = GetTaskRequest {
            id: task.id.clone(),
            ..Default::default()
        };
        let mallory = jwt("k1", KEY_1, claims("mallory"));
        let err = client.get_task(get, Some(&token(&mallory))).await;
        assert_eq!(protocol_kind(err), ErrorKind::TaskNotFound, "{binding}");
    }
    // A key added to the set is picked up when a token names it.
    keys.keys
        .lock()
        .unwrap()
        .as_array_mut()
        .unwrap()
        .push(jwk("k2", KEY_2));
    let before = keys.fetches.load(std::sync::atomic::Ordering::SeqCst);
    let rotated = jwt("k2", KEY_2, claims("alice"));
    let client = client(&server, BINDINGS[0]);
    client
        .send_message(request("echo x"), Some(&token(&rotated)))
        .await
        .unwrap();
    assert_eq!(
        keys.fetches.load(std::sync::atomic::Ordering::SeqCst),
        before + 1
    );
    // Known keys are served from the cache.
    client
        .send_message(request("echo x"), Some(&token(&good)))
        .await
        .unwrap();
    assert_eq!(
        keys.fetches.load(std::sync::atomic::Ordering::SeqCst),
        before + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwt_tenants_claim_binds_the_identity_to_those_tenants() {
    let keys = jwks(serde_json::json!([jwk("k1", KEY_1)])).await;
    let url = keys.url.clone();
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        card,
        |b| b,
        move |service| {
            service.with_authentication(JwtAuth::new(url, "my-agent", "https://issuer.example"))
        },
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let limited = jwt(
        "k1",
        KEY_1,
        with(claims("alice"), "tenants", serde_json::json!(["t1"])),
    );
    for binding in BINDINGS {
        let t1 = tenant_client(&server, binding, "t1");
        t1.send_message(request("echo x"), Some(&token(&limited)))
            .await
            .unwrap();
        let t2 = tenant_client(&server, binding, "t2");
        let refused = t2
            .send_message(request("echo x"), Some(&token(&limited)))
            .await;
        assert_eq!(protocol_kind(refused), ErrorKind::Unauthorized, "{binding}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_that_declares_security_refuses_calls_nobody_authenticated() {
    let secured = |addr| {
        let mut card = card(addr);
        a2a_server::auth::declare_on(&mut card, &bearer());
        card
    };
    // A hand-written hook that lets anonymous callers through is not enough.
    let server = e2e::start_service(
        e2e::ScriptedAgent,
        secured,
        |b| b,
        |service| {
            service.with_authentication(a2a_server::auth::from_fn(|ctx| {
                Ok(
                    if ctx.service_params.get("authorization") == Some("Bearer hook-token") {
                        a2a_server::User::authenticated("hooked")
                    } else {
                        a2a_server::User::anonymous()
                    },
                )
            }))
        },
        HttpConfig::default(),
    )
    .await
    .unwrap();
    for binding in BINDINGS {
        let client = client(&server, binding);
        let refused = client.send_message(request("echo x"), None).await;
        assert_eq!(
            protocol_kind(refused),
            ErrorKind::Unauthenticated,
            "{binding}"
        );
        client
            .send_message(request("echo x"), Some(&token("hook-token")))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_jwt_is_remembered_for_a_while_and_no_longer() {
    use a2a_server::auth::Authenticate as _;
    let keys = jwks(serde_json::json!([jwk("k1", KEY_1)])).await;
    let ttl = Duration::from_millis(300);
    let auth = JwtAuth::new(keys.url.clone(), "my-agent", "https://issuer.example")
        .min_refetch(Duration::ZERO)
        .verified_ttl(ttl);
    let call = |token: &str| {
        let mut params = a2a_server::ServiceParams::new();
        params
            .append("authorization", &format!("Bearer {token}"))
            .unwrap();
        a2a_server::CallContext::new(a2a_core::Method::GetTask, params)
    };
    let good = jwt("k1", KEY_1, claims("alice"));
    assert_eq!(auth.authenticate(&call(&good)).await.unwrap().name, "alice");
    // The cache is keyed by the whole token: a tampered one is checked, and refused.
    let mut tampered = good.clone();
    tampered.pop();
    tampered.push(if good.ends_with('A') { 'B' } else { 'A' });
    assert!(auth.authenticate(&call(&tampered)).await.is_err());
    // A remembered token is never trusted past its `exp`: once that passes,
    // it is checked again and refused (no leeway here).
    let auth = JwtAuth::new(keys.url.clone(), "my-agent", "https://issuer.example")
        .leeway(Duration::ZERO)
        .verified_ttl(Duration::from_secs(3600));
    let short = jwt(
        "k1",
        KEY_1,
        with(claims("alice"), "exp", (now() + 1).into()),
    );
    assert!(auth.authenticate(&call(&short)).await.is_ok());
    assert!(auth.authenticate(&call(&short)).await.is_ok());
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let err = auth.authenticate(&call(&short)).await.unwrap_err();
    assert_eq!(err.kind(), a2a_core::ErrorKind::Unauthenticated, "{err}");
}
