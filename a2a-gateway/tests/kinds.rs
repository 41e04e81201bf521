//! One gateway hosting an agent of each kind (Rust, external process,
//! remote A2A server) over real sockets: each answers on every binding, each
//! keeps its tasks, and each calls the others by name without knowing what
//! they are.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;

use a2a_client::Client;
use a2a_core::{A2aError, AgentCard, ErrorKind, TaskState, binding};
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_gateway::remote::{RemoteAgent, RemoteAgentConfig};
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_server::http::HttpConfig;
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use tokio::sync::oneshot;

mod support;

use support::{BINDINGS, Relay, get, serve, status_text, task};

/// The remote agent: says who asked, as the gateway forwarded it.
struct Far;

#[async_trait::async_trait]
impl AgentExecutor for Far {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let caller = ctx
            .metadata
            .as_ref()
            .and_then(|m| m.get("a2a-gateway/caller"))
            .and_then(|c| c.get("user"))
            .and_then(|u| u.as_str())
            .filter(|u| !u.is_empty())
            .unwrap_or("anonymous")
            .to_owned();
        events
            .complete_with_text(format!("remote: {} (from {caller})", ctx.message.text()))
            .await
    }
}

struct Running {
    addr: SocketAddr,
    gateway: Gateway,
    _stops: Vec<oneshot::Sender<()>>,
}

async fn start() -> Running {
    // The remote: a plain A2A server of its own.
    let remote = a2a_server::http::bind("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let remote_addr = remote.local_addr().unwrap();
    let card = AgentCard::new("Far", "A remote agent.")
        .with_interface(format!("http://{remote_addr}/"), binding::JSONRPC)
        .with_streaming(true);
    let service = A2aService::new(DefaultRequestHandler::builder(Far, card).build());
    let remote_stop = serve(
        remote,
        a2a_grpc::router(service.clone(), HttpConfig::default()),
        service,
    );

    let listener = a2a_server::http::bind("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let addr = listener.local_addr().unwrap();
    let base_url = format!("http://{addr}");
    let mut builder = Gateway::builder();
    let secret = builder.agent_secret("script");
    let script = ProcessAgentConfig::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/agents/caller.py"
        ))
        .env("A2A_GATEWAY_URL", format!("{base_url}/agents"))
        .env("A2A_AGENT_TOKEN", secret);
    let script = ProcessAgent::spawn("script", script).unwrap();
    let far = RemoteAgent::new(
        "far",
        RemoteAgentConfig::new(format!("http://{remote_addr}")),
    );
    let gateway = builder
        .agent(AgentDefinition::with_peers(
            "relay",
            AgentCard::new("Relay", "Passes messages on.").with_streaming(true),
            |peers| Arc::new(Relay(peers)),
        ))
        .agent(script.definition(AgentCard::new("Script", "A Python script.").with_streaming(true)))
        .agent(far.definition().await)
        .build(&base_url)
        .unwrap();
    let gateway_stop = serve(
        listener,
        gateway.router(HttpConfig::default()),
        gateway.service().clone(),
    );
    Running {
        addr,
        gateway,
        _stops: vec![remote_stop, gateway_stop],
    }
}

async fn client(running: &Running, agent: &str, on: &str) -> Client {
    support::client(running.addr, agent, on).await
}

#[tokio::test]
async fn each_kind_answers_on_every_binding() {
    let running = start().await;
    let table = running.gateway.table();
    for row in [
        "relay   rust",
        "script  process  python3",
        "far     remote   http://",
    ] {
        assert!(table.contains(row), "{row:?} in\n{table}");
    }
    for on in BINDINGS {
        let script = client(&running, "script", on).await;
        let answer = task(script.send_text("hello").await.unwrap());
        assert_eq!(answer.status.state, TaskState::Completed, "{on}");
        assert_eq!(status_text(&answer), "script: hello", "{on}");
        let far = client(&running, "far", on).await;
        let answer = task(far.send_text("hello").await.unwrap());
        assert_eq!(
            status_text(&answer),
            "remote: hello (from anonymous)",
            "{on}"
        );
        let relay = client(&running, "relay", on).await;
        let answer = task(relay.send_text("script hello").await.unwrap());
        assert_eq!(status_text(&answer), "relayed: script: hello", "{on}");
    }
}

#[tokio::test]
async fn agents_of_any_kind_call_each_other_by_name_as_themselves() {
    let running = start().await;
    let relay = client(&running, "relay", binding::JSONRPC).await;
    // Rust to remote, and Rust to process.
    let answer = task(relay.send_text("far hi").await.unwrap());
    assert_eq!(
        status_text(&answer),
        "relayed: remote: hi (from agent:relay)"
    );
    // Process to remote and process to Rust, over HTTP with its own secret.
    let script = client(&running, "script", binding::JSONRPC).await;
    let answer = task(script.send_text("call far hi").await.unwrap());
    assert_eq!(
        status_text(&answer),
        "far said: remote: hi (from agent:script)"
    );
    let answer = task(script.send_text("call relay far via two").await.unwrap());
    assert_eq!(
        status_text(&answer),
        "relay said: relayed: remote: via two (from agent:relay)"
    );
    // A process naming an agent the gateway does not have is told so.
    let answer = task(script.send_text("call nope hi").await.unwrap());
    assert_eq!(answer.status.state, TaskState::Failed);
    assert!(status_text(&answer).contains("404"), "{answer:?}");
}

#[tokio::test]
async fn each_agent_keeps_its_own_tasks() {
    let running = start().await;
    for on in BINDINGS {
        let agents = [
            client(&running, "relay", on).await,
            client(&running, "script", on).await,
            client(&running, "far", on).await,
        ];
        let made = [
            task(agents[0].send_text("script x").await.unwrap()),
            task(agents[1].send_text("x").await.unwrap()),
            task(agents[2].send_text("x").await.unwrap()),
        ];
        for (i, asked) in agents.iter().enumerate() {
            for (j, made) in made.iter().enumerate() {
                let got = asked.get_task(get(&made.id), None).await;
                match i == j {
                    true => assert_eq!(got.unwrap().id, made.id, "{on}"),
                    false => assert_eq!(
                        got.unwrap_err().protocol_kind(),
                        Some(ErrorKind::TaskNotFound),
                        "{on}: agent {i} sees agent {j}'s task"
                    ),
                }
            }
        }
    }
    running
        .gateway
        .service()
        .shutdown(std::time::Duration::from_secs(1))
        .await;
}
