//! One trace across a multi-agent exchange: a client calls agent A, whose
//! execution calls agent B, on each binding; every span of it (client, A's
//! call and execution, A's call to B, B's call and execution) reaches the
//! OpenTelemetry SDK under the client's trace id, also through a gateway's
//! process agent; and the server's and client's metrics. Needs `--features otel`.
#![cfg(feature = "otel")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::OnceLock;
use std::time::Duration;

use a2a_client::{CallOptions, Client};
use a2a_core::{
    A2aError, AgentCard, ErrorKind, GetTaskRequest, Message, SendMessageRequest,
    SendMessageResponse,
};
use a2a_server::http::HttpConfig;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};
use opentelemetry::trace::{SpanKind, TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, SdkMeterProvider};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use support::BINDINGS;
use support::telemetry::{
    B, a_to_b, agent_a, alpha_to_beta_in_process, client_for, gateway_of_alpha_and_beta, has,
    named, serve_with_beta, text_of,
};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

/// The process's OpenTelemetry pipeline: W3C propagation, and spans kept in
/// memory as each ends (tests filter them by trace id).
struct Telemetry {
    provider: SdkTracerProvider,
    exporter: InMemorySpanExporter,
    meters: SdkMeterProvider,
    metrics: InMemoryMetricExporter,
}

/// Runs one test of this file at a time. The meter and tracer are global,
/// and every test's calls move the counters the counting tests compare.
async fn alone() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE_AT_A_TIME.lock().await
}

fn telemetry() -> &'static Telemetry {
    static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("e2e"));
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
            .unwrap();
        // Before any server answers: it makes its instruments once.
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics.clone())
            .build();
        opentelemetry::global::set_meter_provider(meters.clone());
        Telemetry {
            provider,
            exporter,
            meters,
            metrics,
        }
    })
}

/// The spans of `trace` once `expected` of them have ended (some end just
/// after the answer is sent).
async fn spans_of(trace: TraceId, expected: usize) -> Vec<SpanData> {
    spans_until(trace, |spans| spans.len() >= expected).await
}

/// The spans of `trace` once those ended satisfy `done`.
async fn spans_until(trace: TraceId, done: impl Fn(&[SpanData]) -> bool) -> Vec<SpanData> {
    let telemetry = telemetry();
    for _ in 0..100 {
        let _ = telemetry.provider.force_flush();
        let spans: Vec<_> = telemetry
            .exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.span_context.trace_id() == trace)
            .collect();
        if done(&spans) {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the spans of trace {trace} did not all arrive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_to_agent_a_to_agent_b_exchange_is_one_trace_on_every_binding() {
    let _alone = alone().await;
    telemetry();
    let b = e2e::start_server(B, named("agent-b"), |b| b, HttpConfig::default())
        .await
        .unwrap();
    for binding in BINDINGS {
        let b_client = client_for(named("agent-b")(b.addr), binding);
        let a = agent_a(b_client).await;
        let client = client_for(named("agent-a")(a.addr), binding);
        let as_alice = CallOptions::default().header("authorization", "Bearer alice");

        let root = tracing::info_span!("user request");
        let trace = root.context().span().span_context().trace_id();
        assert_ne!(trace, TraceId::INVALID, "the bridge gives the root a trace");
        let answer = tracing::Instrument::instrument(
            client.send_message(
                SendMessageRequest::new(Message::user_text("hi")),
                Some(&as_alice),
            ),
            root.clone(),
        )
        .await
        .unwrap();
        assert_eq!(text_of(&answer), "B heard hi", "{binding}");
        drop(root);

        // root, client→A, A's call and execution, A→B, B's call and execution.
        let spans = spans_of(trace, 7).await;
        a_to_b(&spans, binding);
    }
}

/// The sum, over the points of metric `name` as last exported whose
/// attributes include all of `with`, of what `value` reads from each point
/// (`points` lists a metric's points as attributes and a value).
fn metric_total(
    name: &str,
    with: &[(&str, &str)],
    points: impl Fn(&AggregatedMetrics) -> Vec<(Vec<opentelemetry::KeyValue>, u64)>,
) -> u64 {
    let telemetry = telemetry();
    telemetry.meters.force_flush().unwrap();
    let exported = telemetry.metrics.get_finished_metrics().unwrap();
    let Some(last) = exported.last() else {
        return 0;
    };
    let mut total = 0;
    for metric in last.scope_metrics().flat_map(|s| s.metrics()) {
        if metric.name() != name {
            continue;
        }
        for (attributes, value) in points(metric.data()) {
            let matches = with.iter().all(|(key, wanted)| {
                attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == *key && kv.value.as_str() == *wanted)
            });
            if matches {
                total += value;
            }
        }
    }
    total
}

/// The summed value of counter `name` over the points whose attributes
/// include all of `with`, as last exported.
fn counter(name: &str, with: &[(&str, &str)]) -> u64 {
    metric_total(name, with, |data| {
        let AggregatedMetrics::U64(MetricData::Sum(sum)) = data else {
            panic!("{name} is a u64 counter");
        };
        sum.data_points()
            .map(|p| (p.attributes().cloned().collect(), p.value()))
            .collect()
    })
}

/// One SendMessage and one failed GetTask per binding, each counted once by
/// `side`'s (`a2a.server` or `a2a.client`) requests and duration, the failure
/// once among its errors, by operation, binding and error code.
async fn calls_are_counted_and_timed(side: &str) {
    let server = e2e::start_server(B, named("agent-b"), |b| b, HttpConfig::default())
        .await
        .unwrap();
    let (requests, duration, errors) = (
        format!("{side}.requests"),
        format!("{side}.duration"),
        format!("{side}.errors"),
    );
    for binding in BINDINGS {
        let client = client_for(named("agent-b")(server.addr), binding);
        let sends = [("a2a.operation", "SendMessage"), ("a2a.binding", binding)];
        let missing = [
            ("a2a.operation", "GetTask"),
            ("a2a.binding", binding),
            ("a2a.error_code", ErrorKind::TaskNotFound.reason()),
        ];
        let (sent, timed, failed) = (
            counter(&requests, &sends),
            histogram_count(&duration, &sends),
            counter(&errors, &missing),
        );
        client
            .send_message(SendMessageRequest::new(Message::user_text("hi")), None)
            .await
            .unwrap();
        let unknown = GetTaskRequest {
            id: "no-such-task".into(),
            ..Default::default()
        };
        assert!(client.get_task(unknown, None).await.is_err());
        assert_eq!(counter(&requests, &sends), sent + 1, "{side} {binding}");
        assert_eq!(
            histogram_count(&duration, &sends),
            timed + 1,
            "{side} {binding}"
        );
        assert_eq!(counter(&errors, &missing), failed + 1, "{side} {binding}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_and_errors_are_counted_by_operation_binding_and_code() {
    let _alone = alone().await;
    telemetry();
    calls_are_counted_and_timed("a2a.server").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_deliveries_are_spans_of_the_trace_and_carry_it_to_the_webhook() {
    let _alone = alone().await;
    telemetry();
    let server = e2e::start_server(
        B,
        named("agent-b"),
        |b| b.push_address_policy(e2e::loopback_policy()),
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let client = client_for(named("agent-b")(server.addr), a2a_core::binding::JSONRPC);
    let (url, mut deliveries) = e2e::traceparent_webhook().await;
    let request = e2e::send_with_webhook("hi", url);
    let root = tracing::info_span!("user request");
    let trace = root.context().span().span_context().trace_id();
    tracing::Instrument::instrument(client.send_message(request, None), root.clone())
        .await
        .unwrap();
    drop(root);

    let traceparent = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(
        traceparent.contains(&trace.to_string()),
        "the webhook hears the trace: {traceparent:?} for {trace}"
    );
    let spans = spans_until(trace, |spans| {
        spans.iter().any(|s| s.name == "push delivery")
            && spans.iter().any(|s| s.name == "execution")
    })
    .await;
    let push = spans
        .iter()
        .find(|s| s.name == "push delivery")
        .unwrap_or_else(|| panic!("a delivery span in {spans:#?}"));
    assert!(has(push, "a2a.outcome", "delivered"), "{push:#?}");
    assert!(has(push, "server.address", "127.0.0.1"), "{push:#?}");
    let execution = spans.iter().find(|s| s.name == "execution").unwrap();
    assert_eq!(push.parent_span_id, execution.span_context.span_id());
}

/// Sends `text` under a root span of its own, for an exchange in which a
/// first agent calls a second; returns the answer and the trace once it holds
/// both agents' calls and executions.
async fn send_between_two_agents(
    client: &Client,
    text: &str,
) -> (SendMessageResponse, Vec<SpanData>) {
    let root = tracing::info_span!("user request");
    let trace = root.context().span().span_context().trace_id();
    let answer = tracing::Instrument::instrument(
        client.send_message(SendMessageRequest::new(Message::user_text(text)), None),
        root.clone(),
    )
    .await
    .unwrap();
    drop(root);
    let spans = spans_until(trace, |spans| {
        spans.iter().filter(|s| s.name == "execution").count() == 2
            && spans
                .iter()
                .filter(|s| s.span_kind == SpanKind::Server)
                .count()
                == 2
    })
    .await;
    (answer, spans)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_agents_calling_each_other_in_process_stay_in_the_trace() {
    let _alone = alone().await;
    telemetry();
    let client = gateway_of_alpha_and_beta().await;
    let (answer, spans) = send_between_two_agents(&client, "hi").await;
    assert_eq!(text_of(&answer), "B heard hi");
    alpha_to_beta_in_process(&spans);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_agent_calling_back_into_the_gateway_continues_the_trace() {
    use a2a_gateway::Gateway;
    use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
    let _alone = alone().await;
    telemetry();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let mut builder = Gateway::builder();
    let secret = builder.agent_secret("script");
    // The gateway's test agent: "call NAME TEXT" calls NAME through the
    // gateway with the execute line's traceparent as a header.
    let script = ProcessAgentConfig::new("python3")
        .arg("-u")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../a2a-gateway/tests/agents/caller.py"
        ))
        .env("A2A_GATEWAY_URL", format!("{base_url}/agents"))
        .env("A2A_AGENT_TOKEN", secret);
    let script = ProcessAgent::spawn("script", script).unwrap();
    let card = AgentCard::new("script", "A Python script.");
    let builder = builder.agent(script.definition(card.clone()));
    let (client, gateway) = serve_with_beta(builder, listener, &base_url, card);

    // client→script, script's call and execution, beta's call (over HTTP
    // from Python, with the traceparent it was given) and execution.
    let (answer, spans) = send_between_two_agents(&client, "call beta hi").await;
    assert_eq!(text_of(&answer), "beta said: B heard hi");
    let script_call = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server && has(s, "a2a.agent", "script"))
        .unwrap_or_else(|| panic!("the script's call in {spans:#?}"));
    let script_execution = spans
        .iter()
        .find(|s| s.name == "execution" && s.parent_span_id == script_call.span_context.span_id())
        .expect("the script's execution under its call");
    let beta = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server && has(s, "a2a.agent", "beta"))
        .unwrap_or_else(|| panic!("beta's call in {spans:#?}"));
    assert!(has(beta, "a2a.caller", "agent:script"), "{beta:#?}");
    assert_eq!(
        beta.parent_span_id,
        script_execution.span_context.span_id(),
        "beta's call continues the execution that made it"
    );
    assert!(beta.parent_span_is_remote, "{beta:#?}");
    gateway.service().shutdown(Duration::from_secs(2)).await;
}

/// The number of points recorded in histogram `name` whose attributes
/// include all of `with`, as last exported.
fn histogram_count(name: &str, with: &[(&str, &str)]) -> u64 {
    metric_total(name, with, |data| {
        let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = data else {
            panic!("{name} is an f64 histogram");
        };
        histogram
            .data_points()
            .map(|p| (p.attributes().cloned().collect(), p.count()))
            .collect()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_calls_are_timed_by_operation_and_store() {
    let _alone = alone().await;
    telemetry();
    let dir = tempfile::tempdir().unwrap();
    let store = a2a_store_sql::SqliteStore::open(dir.path()).await.unwrap();
    let server = e2e::start_server(
        B,
        named("agent-b"),
        |b| b.task_store(store.clone()).push_config_store(store),
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let client = client_for(named("agent-b")(server.addr), a2a_core::binding::JSONRPC);
    let create = [
        ("a2a.store.operation", "task.create"),
        ("a2a.store.kind", "SqliteStore"),
    ];
    let get = [
        ("a2a.store.operation", "task.get"),
        ("a2a.store.kind", "SqliteStore"),
    ];
    let (created, got) = (
        histogram_count("a2a.server.store.duration", &create),
        histogram_count("a2a.server.store.duration", &get),
    );
    let answer = client
        .send_message(SendMessageRequest::new(Message::user_text("hi")), None)
        .await
        .unwrap();
    let SendMessageResponse::Task(task) = answer else {
        panic!("B answers with a task")
    };
    let request = GetTaskRequest {
        id: task.id,
        ..Default::default()
    };
    client.get_task(request, None).await.unwrap();
    assert!(histogram_count("a2a.server.store.duration", &create) > created);
    assert!(histogram_count("a2a.server.store.duration", &get) > got);
    // The in-memory stores (every other test's) are not timed.
    let memory = [("a2a.store.kind", "InMemoryTaskStore")];
    assert_eq!(histogram_count("a2a.server.store.duration", &memory), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_calls_and_errors_are_counted_and_timed() {
    let _alone = alone().await;
    telemetry();
    calls_are_counted_and_timed("a2a.client").await;
}

/// Agent `hold`: says it is working, then finishes only when told.
struct Hold {
    release: std::sync::Arc<tokio::sync::Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for Hold {
    async fn execute(&self, _ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.working().await?;
        self.release.notified().await;
        events.complete_with_text("released").await
    }
}

/// The value of up-down counter `name` summed over the points whose
/// attributes include all of `with`, as last exported; `None` when no point
/// matches.
fn up_down(name: &str, with: &[(&str, &str)]) -> Option<i64> {
    let telemetry = telemetry();
    telemetry.meters.force_flush().unwrap();
    let exported = telemetry.metrics.get_finished_metrics().unwrap();
    let last = exported.last()?;
    let mut total = None;
    for metric in last.scope_metrics().flat_map(|s| s.metrics()) {
        if metric.name() != name {
            continue;
        }
        let AggregatedMetrics::I64(MetricData::Sum(sum)) = metric.data() else {
            panic!("{name} is an i64 up-down counter");
        };
        assert!(!sum.is_monotonic(), "{name} goes down too");
        for point in sum.data_points() {
            let matches = with.iter().all(|(key, wanted)| {
                point
                    .attributes()
                    .any(|kv| kv.key.as_str() == *key && kv.value.as_str() == *wanted)
            });
            if matches {
                *total.get_or_insert(0) += point.value();
            }
        }
    }
    total
}

/// An open stream and its running execution are counted while they last,
/// by operation and binding, and no longer once they end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_streams_and_running_executions_are_counted_while_they_last() {
    use futures::StreamExt as _;

    let _alone = alone().await;
    telemetry();
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let server = e2e::start_server(
        Hold {
            release: release.clone(),
        },
        named("hold"),
        |b| b,
        HttpConfig::default(),
    )
    .await
    .unwrap();
    let binding = a2a_core::binding::JSONRPC;
    let streams = [
        ("a2a.operation", "SendStreamingMessage"),
        ("a2a.binding", binding),
    ];
    let (open_before, running_before) = (
        up_down("a2a.server.open_streams", &streams).unwrap_or(0),
        up_down("a2a.server.active_executions", &[]).unwrap_or(0),
    );
    let client = client_for(named("hold")(server.addr), binding);
    let mut stream = client
        .send_streaming_message(SendMessageRequest::new(Message::user_text("hi")), None)
        .await
        .unwrap();
    // The first event: the execution runs and the stream is open.
    stream.next().await.unwrap().unwrap();
    assert_eq!(
        up_down("a2a.server.open_streams", &streams),
        Some(open_before + 1)
    );
    assert_eq!(
        up_down("a2a.server.active_executions", &[]),
        Some(running_before + 1)
    );
    release.notify_one();
    while let Some(event) = stream.next().await {
        event.unwrap();
    }
    drop(stream);
    // The server lets go of both just after the last event is sent.
    for _ in 0..100 {
        let open = up_down("a2a.server.open_streams", &streams);
        let running = up_down("a2a.server.active_executions", &[]);
        if open == Some(open_before) && running == Some(running_before) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the stream and the execution are still counted");
}
