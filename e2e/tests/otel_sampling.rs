//! Sampling decided once per trace at the server's entry
//! (`a2a_server::telemetry::otel::sample_at_entry`), with the pipeline
//! `a2a serve` installs: the bridge admits the sampled targets only, and the
//! trace context of work not sampled goes with its futures. A client calls agent A,
//! whose execution calls agent B; each agent notes the `traceparent` it
//! received. Needs `--features otel`.
#![cfg(feature = "otel")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use a2a_client::{Client, ClientBuilder};
use a2a_core::{A2aError, AgentCard, Message, SendMessageRequest, binding};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext, User, auth};
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{
    InMemorySpanExporter, Sampler, SamplingResult, SdkTracerProvider, ShouldSample, SpanData,
};
use support::card;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;

/// This file's own spans (the caller's root) go to the bridge too.
const TEST_TARGET: &str = module_path!();

/// The ratio of `parentbased_traceidratio`, as `f64` bits: each test sets its own.
static RATIO: AtomicU64 = AtomicU64::new(0);

/// `OTEL_TRACES_SAMPLER=parentbased_traceidratio` with the ratio of [`RATIO`].
#[derive(Debug, Clone)]
struct ParentBasedRatio;

impl ShouldSample for ParentBasedRatio {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let ratio = f64::from_bits(RATIO.load(Ordering::SeqCst));
        Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio))).should_sample(
            parent_context,
            trace_id,
            name,
            span_kind,
            attributes,
            links,
        )
    }
}

struct Telemetry {
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
}

/// The pipeline of `a2a serve`, exporting into memory.
fn telemetry() -> &'static Telemetry {
    static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let exporter = InMemorySpanExporter::default();
        let sampler = a2a_server::telemetry::otel::sample_at_entry(Box::new(ParentBasedRatio));
        let provider = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_simple_exporter(exporter.clone())
            .build();
        let suffix = a2a_server::telemetry::otel::UNSAMPLED_SUFFIX;
        let mut targets = Targets::new().with_target(TEST_TARGET, LevelFilter::INFO);
        for target in [
            a2a_server::telemetry::SERVER_TARGET,
            a2a_server::telemetry::EXECUTION_TARGET,
            a2a_server::telemetry::PUSH_TARGET,
            a2a_client::telemetry::CLIENT_TARGET,
        ] {
            targets = targets
                .with_target(target, LevelFilter::INFO)
                .with_target(format!("{target}{suffix}"), LevelFilter::OFF);
        }
        let bridge = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("e2e"))
            .with_filter(targets);
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(bridge))
            .unwrap();
        Telemetry { provider, exporter }
    })
}

/// Runs one test of this file at a time: the ratio is the process's.
async fn alone(ratio: f64) -> tokio::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let guard = ONE_AT_A_TIME.lock().await;
    telemetry();
    RATIO.store(ratio.to_bits(), Ordering::SeqCst);
    guard
}

/// Agent B: answers.
struct B;

#[async_trait::async_trait]
impl AgentExecutor for B {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.complete_with_text("B answers").await
    }
}

/// Agent A: asks B, then answers.
struct A {
    b: Client,
}

#[async_trait::async_trait]
impl AgentExecutor for A {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        self.b
            .send_message(
                SendMessageRequest::new(Message::user_text(ctx.message.text())),
                None,
            )
            .await
            .map_err(|err| A2aError::internal(err.to_string()))?;
        events.complete_with_text("A answers").await
    }
}

/// The `traceparent` values an agent received, in order.
type Heard = Arc<Mutex<Vec<String>>>;

/// Serves `agent` (named `name`) over JSON-RPC, noting every `traceparent`;
/// its push deliveries may go to loopback webhooks.
async fn agent<E: AgentExecutor>(name: &str, agent: E, heard: Heard) -> std::net::SocketAddr {
    let name = name.to_owned();
    let sut = e2e::start_service(
        agent,
        move |addr| {
            let mut card: AgentCard = card(addr);
            card.name = name;
            card
        },
        |b| b.push_address_policy(e2e::loopback_policy()),
        move |service| {
            service.with_authentication(auth::from_fn(move |ctx| {
                if let Some(value) = ctx.service_params.get("traceparent") {
                    heard.lock().unwrap().push(value.to_owned());
                }
                Ok(User::anonymous())
            }))
        },
        HttpConfig::default(),
    )
    .await
    .unwrap();
    sut.addr
}

fn client_of(addr: std::net::SocketAddr) -> Client {
    ClientBuilder::new()
        .prefer([binding::JSONRPC])
        .build(card(addr))
        .unwrap()
        .with_tracked_blocking_sends(false)
}

/// A started pair: A's address, and what A and B heard.
struct Pair {
    a: std::net::SocketAddr,
    a_heard: Heard,
    b_heard: Heard,
}

async fn pair() -> Pair {
    let (a_heard, b_heard) = (Heard::default(), Heard::default());
    let b = agent("agent-b", B, b_heard.clone()).await;
    let a = agent("agent-a", A { b: client_of(b) }, a_heard.clone()).await;
    Pair {
        a,
        a_heard,
        b_heard,
    }
}

/// `traceparent`'s trace id and flags.
fn parse(traceparent: &str) -> (TraceId, String) {
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts.len(), 4, "{traceparent}");
    (TraceId::from_hex(parts[1]).unwrap(), parts[3].to_owned())
}

/// A remote caller's context: trace `trace`, sampled or not.
fn remote(trace: TraceId, sampled: bool) -> Context {
    let flags = if sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    Context::new().with_remote_span_context(SpanContext::new(
        trace,
        SpanId::from(7),
        flags,
        true,
        TraceState::NONE,
    ))
}

/// Sends A one message from inside `root`.
async fn send_within(pair: &Pair, root: &tracing::Span) {
    tracing::Instrument::instrument(
        client_of(pair.a).send_message(SendMessageRequest::new(Message::user_text("hi")), None),
        root.clone(),
    )
    .await
    .unwrap();
}

/// The spans exported so far of `trace`.
fn exported(trace: TraceId) -> Vec<SpanData> {
    let telemetry = telemetry();
    let _ = telemetry.provider.force_flush();
    telemetry
        .exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_context.trace_id() == trace)
        .collect()
}

/// The spans of `trace` once those exported satisfy `done`.
async fn exported_until(trace: TraceId, done: impl Fn(&[SpanData]) -> bool) -> Vec<SpanData> {
    for _ in 0..200 {
        let spans = exported(trace);
        if done(&spans) {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "the spans of trace {trace} did not all arrive: {:#?}",
        exported(trace)
    );
}

/// Both executions of a sampled exchange (A's and B's) exported: a trace
/// made after an unsampled one, whose spans would have been exported first.
async fn a_sampled_exchange_after(pair: &Pair) {
    RATIO.store(1f64.to_bits(), Ordering::SeqCst);
    let root = tracing::info_span!(target: TEST_TARGET, "later request");
    let trace = root.context().span().span_context().trace_id();
    send_within(pair, &root).await;
    drop(root);
    exported_until(trace, |spans| {
        spans.iter().filter(|s| s.name == "execution").count() == 2
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_ratio_zero_nothing_is_exported_and_called_agents_get_the_trace_not_sampled() {
    let _alone = alone(0.0).await;
    let pair = pair().await;
    let root = tracing::info_span!(target: TEST_TARGET, "user request");
    let context = root.context();
    let trace = context.span().span_context().trace_id();
    assert!(!context.span().span_context().is_sampled());
    send_within(&pair, &root).await;
    drop(root);

    let a_heard = pair.a_heard.lock().unwrap().clone();
    let b_heard = pair.b_heard.lock().unwrap().clone();
    assert_eq!(a_heard.len(), 1, "{a_heard:?}");
    assert_eq!(b_heard.len(), 1, "{b_heard:?}");
    // A's call to B went on in the caller's trace, marked not sampled, with
    // a span id of its own.
    assert_eq!(parse(&a_heard[0]), (trace, "00".to_owned()));
    assert_eq!(parse(&b_heard[0]), (trace, "00".to_owned()));
    assert_ne!(a_heard[0], b_heard[0]);

    a_sampled_exchange_after(&pair).await;
    assert!(exported(trace).is_empty(), "{:#?}", exported(trace));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_trace_context_starts_a_trace_at_the_server_not_sampled_at_ratio_zero() {
    let _alone = alone(0.0).await;
    let pair = pair().await;
    // No span, no propagator's headers: a plain JSON-RPC call.
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": SendMessageRequest::new(Message::user_text("hi")),
    });
    let answer = reqwest::Client::new()
        .post(format!("http://{}/", pair.a))
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: serde_json::Value = answer.json().await.unwrap();
    assert!(answer.get("result").is_some(), "{answer}");

    assert!(pair.a_heard.lock().unwrap().is_empty());
    let b_heard = pair.b_heard.lock().unwrap().clone();
    assert_eq!(b_heard.len(), 1, "{b_heard:?}");
    let (trace, flags) = parse(&b_heard[0]);
    assert_ne!(trace, TraceId::INVALID);
    assert_eq!(flags, "00");

    a_sampled_exchange_after(&pair).await;
    assert!(exported(trace).is_empty(), "{:#?}", exported(trace));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_caller_is_followed_even_at_ratio_zero() {
    let _alone = alone(0.0).await;
    let pair = pair().await;
    let trace = TraceId::from(0x5a3_1ed_u128);
    let root = tracing::info_span!(target: TEST_TARGET, "user request");
    root.set_parent(remote(trace, true)).unwrap();
    send_within(&pair, &root).await;
    drop(root);

    // The root, client→A, A's call and execution, A→B, B's call and execution.
    let spans = exported_until(trace, |spans| spans.len() >= 7).await;
    let servers = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Server)
        .count();
    assert_eq!(servers, 2, "{spans:#?}");
    let b_heard = pair.b_heard.lock().unwrap().clone();
    assert_eq!(parse(&b_heard[0]), (trace, "01".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_not_sampled_is_followed_even_at_ratio_one() {
    let _alone = alone(1.0).await;
    let pair = pair().await;
    let trace = TraceId::from(0x0ff_u128);
    let root = tracing::info_span!(target: TEST_TARGET, "user request");
    root.set_parent(remote(trace, false)).unwrap();
    send_within(&pair, &root).await;
    drop(root);

    let a_heard = pair.a_heard.lock().unwrap().clone();
    let b_heard = pair.b_heard.lock().unwrap().clone();
    assert_eq!(parse(&a_heard[0]), (trace, "00".to_owned()));
    assert_eq!(parse(&b_heard[0]), (trace, "00".to_owned()));

    a_sampled_exchange_after(&pair).await;
    assert!(exported(trace).is_empty(), "{:#?}", exported(trace));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_delivery_of_a_trace_not_sampled_carries_it_to_the_webhook() {
    let _alone = alone(0.0).await;
    let heard = Heard::default();
    let addr = agent("agent-b", B, heard).await;
    let (url, mut deliveries) = e2e::traceparent_webhook().await;
    let request = e2e::send_with_webhook("hi", url);
    let trace = TraceId::from(0x9_005_u128);
    let root = tracing::info_span!(target: TEST_TARGET, "user request");
    root.set_parent(remote(trace, false)).unwrap();
    tracing::Instrument::instrument(client_of(addr).send_message(request, None), root.clone())
        .await
        .unwrap();
    drop(root);

    let traceparent = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .unwrap()
        .unwrap();
    // The delivery goes on in the caller's trace, not sampled, as a span of
    // its own: neither the caller's id nor the server call's.
    assert_eq!(parse(&traceparent), (trace, "00".to_owned()));
    assert!(
        !traceparent.contains(&SpanId::from(7).to_string()),
        "{traceparent}"
    );
    a_sampled_exchange_after(&pair().await).await;
    assert!(exported(trace).is_empty(), "{:#?}", exported(trace));
}
