//! The gateway over real sockets: agents on every binding under their own
//! paths, their tasks kept apart, calls between agents by name, unknown
//! agents refused with the names of the known ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, AgentCard, ErrorKind, TaskState, binding};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_server::auth::{BearerAuth, Principal};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use tokio::sync::oneshot;

mod support;

use support::{BINDINGS, Relay, get, serve, status_text, task};

/// Answers with who called it and what they said.
struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let who = match ctx.call.user.name.as_str() {
            "" => "anonymous",
            name => name,
        };
        events
            .complete_with_text(format!("echo: {} (from {who})", ctx.message.text()))
            .await
    }
}

struct Running {
    addr: SocketAddr,
    gateway: Gateway,
    _stop: oneshot::Sender<()>,
}

async fn start(
    configure: impl FnOnce(a2a_gateway::GatewayBuilder) -> a2a_gateway::GatewayBuilder,
) -> Running {
    let listener = a2a_server::http::bind("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let addr = listener.local_addr().unwrap();
    let builder = Gateway::builder()
        .agent(AgentDefinition::new(
            "echo",
            AgentCard::new("Echo", "Says it back.").with_streaming(true),
            Echo,
        ))
        .agent(AgentDefinition::with_peers(
            "relay",
            AgentCard::new("Relay", "Passes messages on."),
            |peers| Arc::new(Relay(peers)),
        ))
        .config_file("gateway.toml");
    let gateway = configure(builder).build(&format!("http://{addr}")).unwrap();
    let stop = serve(
        listener,
        gateway.router(HttpConfig::default()),
        gateway.service().clone(),
    );
    Running {
        addr,
        gateway,
        _stop: stop,
    }
}

async fn client(running: &Running, agent: &str, on: &str) -> Client {
    support::client(running.addr, agent, on).await
}

#[tokio::test]
async fn every_agent_on_every_binding_under_its_own_path() {
    let running = start(|b| b).await;
    for on in BINDINGS {
        let echo = client(&running, "echo", on).await;
        let answer = task(echo.send_text("hi").await.unwrap());
        assert_eq!(answer.status.state, TaskState::Completed, "{on}");
        assert_eq!(status_text(&answer), "echo: hi (from anonymous)", "{on}");
        // The card says where: its own path, or its name as gRPC tenant.
        let card = echo.card().unwrap();
        assert_eq!(card.name, "Echo");
        let interface = echo.interface();
        match on {
            binding::GRPC => {
                assert_eq!(interface.url, running.addr.to_string());
                assert_eq!(interface.tenant, "echo");
            }
            _ => assert_eq!(
                interface.url,
                format!("http://{}/agents/echo", running.addr)
            ),
        }
    }
}

#[tokio::test]
async fn json_rpc_takes_the_agent_url_with_or_without_a_slash() {
    let running = start(|b| b).await;
    let http = reqwest::Client::new();
    for path in ["/agents/echo", "/agents/echo/"] {
        let answer: serde_json::Value = http
            .post(format!("http://{}{path}", running.addr))
            .json(&serde_json::json!({
                "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
            }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{path}: {answer}"
        );
    }
}

#[tokio::test]
async fn root_card_and_listing_point_to_the_agents() {
    let running = start(|b| b.default_agent("relay")).await;
    let http = reqwest::Client::new();
    let root: AgentCard = http
        .get(format!(
            "http://{}/.well-known/agent-card.json",
            running.addr
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(root.name, "Relay");
    let listing: serde_json::Value = http
        .get(format!("http://{}/agents", running.addr))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listing["default"], "relay");
    let names: Vec<_> = listing["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["echo", "relay"]);
    assert_eq!(
        listing["agents"][0]["cardUrl"],
        format!(
            "http://{}/agents/echo/.well-known/agent-card.json",
            running.addr
        )
    );
    // A standard client following the root card reaches the default agent.
    let client = a2a_grpc::register(ClientBuilder::new())
        .connect(&format!("http://{}", running.addr))
        .await
        .unwrap();
    let answer = task(client.send_text("echo via root").await.unwrap());
    assert_eq!(
        status_text(&answer),
        "relayed: echo: via root (from agent:relay)"
    );
    let table = running.gateway.table();
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("relay  rust  in-process"), "{table}");
}

#[tokio::test]
async fn agents_never_see_each_others_tasks() {
    let running = start(|b| b).await;
    for on in BINDINGS {
        let echo = client(&running, "echo", on).await;
        let relay = client(&running, "relay", on).await;
        let mine = task(echo.send_text("private").await.unwrap());
        let found = echo.get_task(get(&mine.id), None).await.unwrap();
        assert_eq!(found.id, mine.id);
        let elsewhere = relay.get_task(get(&mine.id), None).await.unwrap_err();
        assert_eq!(
            elsewhere.protocol_kind(),
            Some(ErrorKind::TaskNotFound),
            "{on}"
        );
        let listed = relay.list_tasks(Default::default(), None).await.unwrap();
        assert!(listed.tasks.iter().all(|t| t.id != mine.id), "{on}");
    }
}

#[tokio::test]
async fn agents_call_each_other_by_name_as_themselves() {
    let running = start(|b| b).await;
    for on in BINDINGS {
        let relay = client(&running, "relay", on).await;
        let answer = task(relay.send_text("echo ping").await.unwrap());
        assert_eq!(
            status_text(&answer),
            "relayed: echo: ping (from agent:relay)",
            "{on}"
        );
    }
    // The task relay made at echo belongs to relay, not to the caller.
    let echo = client(&running, "echo", binding::JSONRPC).await;
    let seen = echo.list_tasks(Default::default(), None).await.unwrap();
    assert!(seen.tasks.is_empty(), "{:?}", seen.tasks);
    let peers = running.gateway.peers("relay").unwrap();
    let as_relay = peers.client("echo").unwrap();
    let theirs = as_relay.list_tasks(Default::default(), None).await.unwrap();
    assert_eq!(theirs.tasks.len(), 3);
}

#[tokio::test]
async fn unknown_agents_are_refused_naming_the_known_ones() {
    let running = start(|b| b).await;
    let says = |text: &str| {
        assert!(
            text.contains("\"nope\"")
                && text.contains("echo, relay")
                && text.contains("gateway.toml"),
            "{text}"
        );
    };
    // A path under /agents.
    let response = reqwest::get(format!(
        "http://{}/agents/nope/.well-known/agent-card.json",
        running.addr
    ))
    .await
    .unwrap();
    assert_eq!(response.status(), 404);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    says(body["error"]["message"].as_str().unwrap());
    // A tenant on any binding at the root.
    for on in BINDINGS {
        let mut card = running.gateway.agent("echo").unwrap().card().clone();
        for interface in &mut card.supported_interfaces {
            "nope".clone_into(&mut interface.tenant);
            if interface.protocol_binding != binding::GRPC {
                interface.url = format!("http://{}", running.addr);
            }
        }
        let client = a2a_grpc::register(ClientBuilder::new())
            .prefer([on])
            .build(card)
            .unwrap();
        let err = client.send_text("hi").await.unwrap_err();
        assert_eq!(
            err.protocol_kind(),
            Some(ErrorKind::InvalidParams),
            "{on}: {err}"
        );
        says(&err.to_string());
    }
    // An agent asking for one.
    let relay = client(&running, "relay", binding::JSONRPC).await;
    let answer = task(relay.send_text("nope hello").await.unwrap());
    assert_eq!(answer.status.state, TaskState::Failed);
    says(&status_text(&answer));
    says(
        &running
            .gateway
            .peers("relay")
            .unwrap()
            .client("nope")
            .unwrap_err()
            .to_string(),
    );
}

#[tokio::test]
async fn with_authentication_callers_need_credentials_but_agents_are_let_in() {
    let running =
        start(|b| b.authentication(BearerAuth::new().token("s3cret", Principal::new("alice"))))
            .await;
    let base = format!("http://{}/agents/relay", running.addr);
    let anonymous = ClientBuilder::new().connect(&base).await.unwrap();
    let err = anonymous.send_text("echo hi").await.unwrap_err();
    assert_eq!(err.protocol_kind(), Some(ErrorKind::Unauthenticated));
    let alice = ClientBuilder::new()
        .default_options(
            a2a_client::CallOptions::default().header("authorization", "Bearer s3cret"),
        )
        .connect(&base)
        .await
        .unwrap();
    let answer = task(alice.send_text("echo hi").await.unwrap());
    assert_eq!(status_text(&answer), "relayed: echo: hi (from agent:relay)");
    // The cards declare the scheme.
    assert!(!alice.card().unwrap().security_schemes.is_empty());
}

#[test]
fn build_refuses_bad_agent_sets() {
    let card = || AgentCard::new("x", "x");
    let err = Gateway::builder().build("http://h").unwrap_err();
    assert_eq!(err.to_string(), "a gateway needs at least one agent");
    let err = Gateway::builder()
        .agent(AgentDefinition::new("a", card(), Echo))
        .agent(AgentDefinition::new("a", card(), Echo))
        .build("http://h")
        .unwrap_err();
    assert!(err.to_string().contains("two agents are named \"a\""));
    let err = Gateway::builder()
        .agent(AgentDefinition::new("a/b", card(), Echo))
        .build("http://h")
        .unwrap_err();
    assert!(err.to_string().contains("agent name \"a/b\""));
    let err = Gateway::builder()
        .agent(AgentDefinition::new("a", card(), Echo))
        .default_agent("b")
        .build("http://h")
        .unwrap_err();
    assert!(err.to_string().contains("no agent named \"b\""), "{err}");
}

#[tokio::test]
async fn shutdown_reaches_every_agent_then_their_stop_hooks() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let stopped = Arc::new(AtomicUsize::new(0));
    let hook = |stopped: Arc<AtomicUsize>| -> a2a_gateway::StopAgent {
        Box::new(move |_grace| {
            Box::pin(async move {
                stopped.fetch_add(1, Ordering::SeqCst);
            })
        })
    };
    let gateway = Gateway::builder()
        .agent(
            AgentDefinition::new("a", AgentCard::new("A", "a"), Echo)
                .on_shutdown(hook(stopped.clone())),
        )
        .agent(
            AgentDefinition::new("b", AgentCard::new("B", "b"), Echo)
                .on_shutdown(hook(stopped.clone())),
        )
        .build("http://127.0.0.1:1")
        .unwrap();
    let grace = std::time::Duration::from_millis(10);
    gateway.service().shutdown(grace).await;
    assert_eq!(stopped.load(Ordering::SeqCst), 2);
    // A second shutdown does not run them again.
    gateway.service().shutdown(grace).await;
    assert_eq!(stopped.load(Ordering::SeqCst), 2);
    // After shutdown the agents take no new work.
    let peers = gateway.peers("a").unwrap();
    let refused = peers.client("b").unwrap().send_text("late").await;
    assert!(refused.is_err(), "{refused:?}");
}
