//! What the OpenTelemetry tests share: two agents, one calling the other,
//! and readers of exported spans (feature `otel`).

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, SendMessageResponse};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext, User, auth};
use e2e::RunningSut;
use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;

use super::card;

/// Agent B: answers with what it was told.
pub struct B;

#[async_trait::async_trait]
impl AgentExecutor for B {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!("B heard {}", ctx.message.text()))
            .await
    }
}

/// Agent A: asks B, and answers with B's answer.
pub struct A {
    /// The client A asks B with.
    pub b: Client,
}

#[async_trait::async_trait]
impl AgentExecutor for A {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let answer = self
            .b
            .send_message(
                SendMessageRequest::new(Message::user_text(ctx.message.text())),
                None,
            )
            .await
            .map_err(|err| A2aError::internal(err.to_string()))?;
        events.complete_with_text(text_of(&answer)).await
    }
}

/// The text of an answer: a task's status message, or the message.
pub fn text_of(answer: &SendMessageResponse) -> String {
    match answer {
        SendMessageResponse::Task(task) => task
            .status
            .message
            .as_ref()
            .map(|m| m.text())
            .unwrap_or_default(),
        SendMessageResponse::Message(message) => message.text(),
    }
}

/// A card for the agent at an address, under `name`.
pub fn named(name: &'static str) -> impl FnOnce(std::net::SocketAddr) -> AgentCard {
    move |addr| {
        let mut card = card(addr);
        card.name = name.to_owned();
        card
    }
}

/// A client of `card` on `binding`.
pub fn client_for(card: AgentCard, binding: &str) -> Client {
    a2a_grpc::register(ClientBuilder::new())
        .prefer([binding])
        .build(card)
        .unwrap()
        // One plain call per send: one client span to look for.
        .with_tracked_blocking_sends(false)
}

/// The value of attribute `key` of `span`.
pub fn attribute<'s>(span: &'s SpanData, key: &str) -> Option<&'s Value> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| &kv.value)
}

/// Whether `span` has attribute `key` set to `value`.
pub fn has(span: &SpanData, key: &str, value: &str) -> bool {
    attribute(span, key).is_some_and(|v| v.as_str() == value)
}

/// Gateway agent `alpha`: asks its peer `beta` in process.
pub struct ViaPeers {
    /// The gateway's agents, as alpha sees them.
    pub peers: a2a_gateway::Peers,
}

#[async_trait::async_trait]
impl AgentExecutor for ViaPeers {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let beta = self
            .peers
            .client("beta")
            .map_err(|err| A2aError::internal(err.to_string()))?;
        A { b: beta }.execute(ctx, events).await
    }
}

/// Agent A serving on a port of its own, asking B through `b`. A knows its
/// callers (a bearer token names them), so its call spans say who called.
pub async fn agent_a(b: Client) -> RunningSut {
    e2e::start_service(
        A { b },
        named("agent-a"),
        |builder| builder,
        |service| {
            service.with_authentication(auth::from_fn(|ctx| {
                Ok(ctx
                    .service_params
                    .get("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map_or_else(User::anonymous, User::authenticated))
            }))
        },
        HttpConfig::default(),
    )
    .await
    .unwrap()
}

/// The spans of one client → A → B exchange.
pub struct AToB {
    /// The client's call to A.
    pub to_a: SpanData,
    /// A's call span.
    pub a_call: SpanData,
    /// A's execution.
    pub a_execution: SpanData,
    /// A's call to B.
    pub to_b: SpanData,
    /// B's call span.
    pub b_call: SpanData,
}

/// Finds the spans of a client → A → B exchange on `binding` among `spans`
/// and checks what every way of exporting them must give: one of each, two
/// executions, the parent chain across both wires, and what a person
/// searches by (operation, binding, task and context, A's caller `alice`,
/// status events on A's execution).
pub fn a_to_b(spans: &[SpanData], binding: &str) -> AToB {
    let find = |what: &str, pred: &dyn Fn(&SpanData) -> bool| -> SpanData {
        let found: Vec<_> = spans.iter().filter(|s| pred(s)).collect();
        assert_eq!(found.len(), 1, "{binding}: one {what} span in {spans:#?}");
        found[0].clone()
    };
    let to_a = find("client→A", &|s| {
        s.span_kind == SpanKind::Client && has(s, "a2a.agent", "agent-a")
    });
    let a_call = find("A's call", &|s| {
        s.span_kind == SpanKind::Server && has(s, "a2a.agent", "agent-a")
    });
    let to_b = find("A→B", &|s| {
        s.span_kind == SpanKind::Client && has(s, "a2a.agent", "agent-b")
    });
    let b_call = find("B's call", &|s| {
        s.span_kind == SpanKind::Server && has(s, "a2a.agent", "agent-b")
    });
    let executions: Vec<_> = spans.iter().filter(|s| s.name == "execution").collect();
    assert_eq!(executions.len(), 2, "{binding}: {spans:#?}");

    // The parent chain crosses both wires.
    assert_eq!(a_call.parent_span_id, to_a.span_context.span_id());
    assert!(
        a_call.parent_span_is_remote,
        "{binding}: A's parent came over the wire"
    );
    let a_execution = executions
        .iter()
        .find(|e| e.parent_span_id == a_call.span_context.span_id())
        .map(|e| (*e).clone())
        .expect("A's execution under A's call");
    assert_eq!(to_b.parent_span_id, a_execution.span_context.span_id());
    assert_eq!(b_call.parent_span_id, to_b.span_context.span_id());
    assert!(
        executions
            .iter()
            .any(|e| e.parent_span_id == b_call.span_context.span_id())
    );

    // What a person searches by.
    for call in [&a_call, &b_call] {
        assert!(has(call, "a2a.operation", "SendMessage"), "{call:#?}");
        assert!(has(call, "a2a.binding", binding), "{call:#?}");
        assert!(attribute(call, "a2a.task_id").is_some(), "{call:#?}");
        assert!(attribute(call, "a2a.context_id").is_some(), "{call:#?}");
    }
    assert!(has(&a_call, "a2a.caller", "alice"), "{a_call:#?}");
    assert!(
        a_execution
            .events
            .iter()
            .any(|e| e.name == "task status changed"),
        "{binding}: status events on the execution span: {a_execution:#?}"
    );
    AToB {
        to_a,
        a_call,
        a_execution,
        to_b,
        b_call,
    }
}

/// A gateway serving `alpha` (which asks its peer `beta` in process) and
/// `beta` (agent B) on a port of its own; returns a JSON-RPC client of alpha.
pub async fn gateway_of_alpha_and_beta() -> Client {
    use a2a_gateway::{AgentDefinition, Gateway};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let alpha = AgentCard::new("alpha", "asks beta");
    let builder = Gateway::builder().agent(AgentDefinition::with_peers(
        "alpha",
        alpha.clone(),
        |peers| std::sync::Arc::new(ViaPeers { peers }),
    ));
    serve_with_beta(builder, listener, &base_url, alpha).0
}

/// Serves the gateway `builder` makes, with `beta` (agent B) added, on
/// `listener` (whose address `base_url` is); returns a JSON-RPC client of
/// the gateway's agent `front` (its card, before the gateway's interfaces),
/// and the gateway, to shut down.
pub fn serve_with_beta(
    builder: a2a_gateway::GatewayBuilder,
    listener: tokio::net::TcpListener,
    base_url: &str,
    mut front: AgentCard,
) -> (Client, a2a_gateway::Gateway) {
    use a2a_gateway::{AgentDefinition, agent_interfaces};
    let gateway = builder
        .agent(AgentDefinition::new(
            "beta",
            AgentCard::new("beta", "answers"),
            B,
        ))
        .build(base_url)
        .unwrap();
    let app = gateway.router(HttpConfig::default());
    tokio::spawn(async move { axum::serve(listener, app).await });
    front.supported_interfaces = agent_interfaces(base_url, &front.name);
    (client_for(front, a2a_core::binding::JSONRPC), gateway)
}

/// Checks that in `spans`, beta's in-process call (from alpha, by the
/// gateway's in-process binding) sits under a client span that sits under
/// alpha's execution, itself under alpha's call.
pub fn alpha_to_beta_in_process(spans: &[SpanData]) {
    let server = |agent: &str| {
        spans
            .iter()
            .find(|s| s.span_kind == SpanKind::Server && has(s, "a2a.agent", agent))
            .unwrap_or_else(|| panic!("{agent}'s call in {spans:#?}"))
    };
    let (alpha, beta) = (server("alpha"), server("beta"));
    assert!(has(beta, "a2a.binding", "in-process"), "{beta:#?}");
    assert!(has(beta, "a2a.caller", "agent:alpha"), "{beta:#?}");
    let alpha_execution = spans
        .iter()
        .find(|s| s.name == "execution" && s.parent_span_id == alpha.span_context.span_id())
        .expect("alpha's execution under its call");
    let to_beta = spans
        .iter()
        .find(|s| {
            s.span_kind == SpanKind::Client && s.span_context.span_id() == beta.parent_span_id
        })
        .unwrap_or_else(|| panic!("beta's call under a client span: {spans:#?}"));
    assert_eq!(
        to_beta.parent_span_id,
        alpha_execution.span_context.span_id()
    );
}
