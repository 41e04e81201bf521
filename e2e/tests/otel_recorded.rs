//! The SDK's spans recorded without the `tracing` bridge
//! (`a2a_server::telemetry::otel::record_spans`, what `a2a serve` exports):
//! a client calls agent A, whose execution calls agent B, on each binding,
//! and every span (the client's root, A's call and execution, A's call to B,
//! B's call and execution) reaches the span processor in one trace, with the
//! parents, kinds, attributes, events and statuses the bridge gives them; a
//! push delivery is a span of the trace and carries it to the webhook; a
//! gateway agent's in-process call to its peer stays in the trace.
//! Needs `--features otel`.
#![cfg(feature = "otel")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::OnceLock;
use std::time::Duration;

use a2a_client::CallOptions;
use a2a_core::{GetTaskRequest, Message, SendMessageRequest};
use a2a_server::http::HttpConfig;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, Sampler, SimpleSpanProcessor, SpanData};
use support::BINDINGS;
use support::telemetry::{
    AToB, B, a_to_b, agent_a, alpha_to_beta_in_process, attribute, client_for,
    gateway_of_alpha_and_beta, has, named, text_of,
};

/// Spans kept in memory as each ends; every span is sampled.
fn exporter() -> &'static InMemorySpanExporter {
    static EXPORTER: OnceLock<InMemorySpanExporter> = OnceLock::new();
    EXPORTER.get_or_init(|| {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let exporter = InMemorySpanExporter::default();
        let _recorder = a2a_server::telemetry::otel::record_spans(
            Box::new(Sampler::AlwaysOn),
            SimpleSpanProcessor::new(exporter.clone()),
            &Resource::builder().with_service_name("e2e").build(),
        );
        exporter
    })
}

/// Runs one test of this file at a time: each reads every span exported.
async fn alone() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let guard = ONE_AT_A_TIME.lock().await;
    exporter().reset();
    guard
}

/// The spans exported so far once they satisfy `done` (some end just after
/// the answer is sent).
async fn spans_until(done: impl Fn(&[SpanData]) -> bool) -> Vec<SpanData> {
    for _ in 0..100 {
        let spans = exporter().get_finished_spans().unwrap();
        if done(&spans) {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the spans did not all arrive: {:#?}",
        exporter().get_finished_spans().unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_to_agent_a_to_agent_b_exchange_is_one_recorded_trace_on_every_binding() {
    let _alone = alone().await;
    let b = e2e::start_server(B, named("agent-b"), |b| b, HttpConfig::default())
        .await
        .unwrap();
    for binding in BINDINGS {
        exporter().reset();
        let b_client = client_for(named("agent-b")(b.addr), binding);
        let a = agent_a(b_client).await;
        let client = client_for(named("agent-a")(a.addr), binding);
        let as_alice = CallOptions::default().header("authorization", "Bearer alice");
        // Outside any trace: the client's span is the root of a new one.
        client
            .send_message(
                SendMessageRequest::new(Message::user_text("hi")),
                Some(&as_alice),
            )
            .await
            .unwrap();

        // client→A, A's call and execution, A→B, B's call and execution.
        let spans = spans_until(|spans| spans.len() >= 6).await;
        assert_eq!(spans.len(), 6, "{binding}: {spans:#?}");
        let AToB {
            to_a,
            a_call,
            a_execution,
            to_b,
            b_call,
        } = a_to_b(&spans, binding);
        // One trace, sampled, its root the client's call.
        let trace = to_a.span_context.trace_id();
        assert_ne!(trace, TraceId::INVALID);
        for span in &spans {
            assert_eq!(span.span_context.trace_id(), trace, "{binding}: {span:#?}");
            assert!(span.span_context.is_sampled());
            assert_eq!(span.instrumentation_scope.name(), "a2a");
            assert!(span.start_time <= span.end_time);
        }
        assert_eq!(to_a.parent_span_id, SpanId::INVALID);

        // Within this process, parents are local.
        assert!(!a_execution.parent_span_is_remote);
        assert_eq!(a_execution.span_kind, SpanKind::Internal);

        // What a person searches by, under the names the bridge gives.
        for call in [&a_call, &b_call] {
            assert_eq!(call.name, "SendMessage");
            assert!(attribute(call, "a2a.error_code").is_none(), "{call:#?}");
            assert_eq!(call.status, Status::Unset);
        }
        assert!(attribute(&b_call, "a2a.caller").is_none(), "{b_call:#?}");
        assert!(
            has(&to_b, "a2a.operation", "SendMessage") && has(&to_b, "a2a.binding", binding),
            "{to_b:#?}"
        );
        assert!(
            attribute(&to_b, "server.address").is_some_and(|v| v.as_str().contains("127.0.0.1")),
            "{to_b:#?}"
        );
        let states: Vec<_> = a_execution
            .events
            .iter()
            .filter(|e| e.name == "task status changed")
            .map(|e| e.attributes[0].value.as_str().into_owned())
            .collect();
        assert!(
            states.last().is_some_and(|s| s == "TASK_STATE_COMPLETED"),
            "{binding}: status events on the execution span: {a_execution:#?}"
        );
        assert_eq!(
            attribute(&a_execution, "a2a.task_id"),
            attribute(&a_call, "a2a.task_id")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_is_an_error_span_with_its_code_on_both_sides() {
    let _alone = alone().await;
    let server = e2e::start_server(B, named("agent-b"), |b| b, HttpConfig::default())
        .await
        .unwrap();
    let client = client_for(named("agent-b")(server.addr), a2a_core::binding::JSONRPC);
    let err = client
        .get_task(
            GetTaskRequest {
                id: "no-such-task".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(err.protocol_kind(), Some(a2a_core::ErrorKind::TaskNotFound));
    let spans = spans_until(|spans| spans.len() >= 2).await;
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = spans
            .iter()
            .find(|s| s.span_kind == kind)
            .unwrap_or_else(|| panic!("a {kind:?} span in {spans:#?}"));
        assert_eq!(span.name, "GetTask");
        assert!(has(span, "a2a.error_code", "TASK_NOT_FOUND"), "{span:#?}");
        assert!(matches!(span.status, Status::Error { .. }), "{span:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_deliveries_are_recorded_spans_of_the_trace_and_carry_it_to_the_webhook() {
    let _alone = alone().await;
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
    client
        .send_message(e2e::send_with_webhook("hi", url), None)
        .await
        .unwrap();

    let traceparent = tokio::time::timeout(Duration::from_secs(10), deliveries.recv())
        .await
        .unwrap()
        .unwrap();
    let spans = spans_until(|spans| {
        spans.iter().any(|s| s.name == "push delivery")
            && spans.iter().any(|s| s.name == "execution")
    })
    .await;
    let push = spans
        .iter()
        .find(|s| s.name == "push delivery")
        .unwrap_or_else(|| panic!("a delivery span in {spans:#?}"));
    let execution = spans.iter().find(|s| s.name == "execution").unwrap();
    assert_eq!(push.span_kind, SpanKind::Client);
    assert!(has(push, "a2a.outcome", "delivered"), "{push:#?}");
    assert!(has(push, "server.address", "127.0.0.1"), "{push:#?}");
    assert_eq!(push.parent_span_id, execution.span_context.span_id());
    // The webhook hears the delivery's own span, sampled.
    assert_eq!(
        traceparent,
        format!(
            "00-{}-{}-01",
            push.span_context.trace_id(),
            push.span_context.span_id()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_agents_calling_each_other_in_process_are_one_recorded_trace() {
    let _alone = alone().await;
    let client = gateway_of_alpha_and_beta().await;
    let answer = client
        .send_message(SendMessageRequest::new(Message::user_text("hi")), None)
        .await
        .unwrap();
    assert_eq!(text_of(&answer), "B heard hi");

    // client→alpha, alpha's call and execution, alpha→beta, beta's call and execution.
    let spans = spans_until(|spans| spans.len() >= 6).await;
    assert_eq!(spans.len(), 6, "{spans:#?}");
    let trace = spans[0].span_context.trace_id();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace));
    alpha_to_beta_in_process(&spans);
    assert!(
        spans
            .iter()
            .filter(|s| s.span_kind == SpanKind::Server && has(s, "a2a.agent", "beta"))
            .all(|beta| spans
                .iter()
                .any(|s| s.name == "execution" && s.parent_span_id == beta.span_context.span_id())),
        "beta's execution under its call: {spans:#?}"
    );
}
