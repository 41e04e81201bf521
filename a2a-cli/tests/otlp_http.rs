//! `a2a serve` exports spans over OTLP/HTTP with protobuf (the default
//! protocol) when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: the spans reach
//! `/v1/traces` of a collector (an axum server here) as an
//! `ExportTraceServiceRequest`, with the headers `OTEL_EXPORTER_OTLP_HEADERS`
//! names; a collector that fails an export does not stop the next one; and a
//! compression this build cannot do is refused at start.
#![cfg(feature = "otel")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message as _;
use support::{ok, serve_with_env};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// One export the collector took: its headers and what it held.
struct Received {
    headers: HeaderMap,
    request: ExportTraceServiceRequest,
}

/// Starts a collector on 127.0.0.1 whose `/v1/traces` fails the first
/// `failures` exports with a 503 and takes the rest: its base URL, the
/// exports it took, and how many exports were attempted.
async fn collector(failures: usize) -> (String, UnboundedReceiver<Received>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (taken, taken_rx) = unbounded_channel::<Received>();
    let attempts = Arc::new(AtomicUsize::new(0));
    let failed = attempts.clone();
    let traces = move |headers: HeaderMap, body: Bytes| {
        let taken: UnboundedSender<Received> = taken.clone();
        let failed = failed.clone();
        async move {
            if failed.fetch_add(1, Ordering::SeqCst) < failures {
                return (StatusCode::SERVICE_UNAVAILABLE, Vec::new());
            }
            let request = ExportTraceServiceRequest::decode(body).unwrap();
            let _ = taken.send(Received { headers, request });
            (
                StatusCode::OK,
                ExportTraceServiceResponse::default().encode_to_vec(),
            )
        }
    };
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(traces))
        .route(
            "/v1/metrics",
            axum::routing::post(|| async { StatusCode::OK }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), taken_rx, attempts)
}

/// The names of the spans in `request`.
fn span_names(request: &ExportTraceServiceRequest) -> Vec<String> {
    request
        .resource_spans
        .iter()
        .flat_map(|resource| &resource.scope_spans)
        .flat_map(|scope| &scope.spans)
        .map(|span| span.name.clone())
        .collect()
}

/// Waits for exports until their spans hold each of `wanted`; returns them.
async fn until_spans(taken: &mut UnboundedReceiver<Received>, wanted: &[&str]) -> Vec<Received> {
    let deadline = Instant::now() + support::PATIENCE;
    let mut exports = Vec::new();
    while Instant::now() < deadline {
        let names: Vec<String> = exports
            .iter()
            .flat_map(|r: &Received| span_names(&r.request))
            .collect();
        if wanted.iter().all(|w| names.iter().any(|n| n == w)) {
            return exports;
        }
        match tokio::time::timeout(Duration::from_millis(200), taken.recv()).await {
            Ok(Some(received)) => exports.push(received),
            Ok(None) => break,
            Err(_) => {}
        }
    }
    panic!("the collector never received all of {wanted:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_v1_traces_as_protobuf_with_the_configured_headers() {
    let (endpoint, mut taken, _) = collector(0).await;
    let server = tokio::task::spawn_blocking(move || {
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-api-key=s%20e%2Ccret,x-team=a2a",
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_SERVICE_NAME", "otlp-http-test"),
        ];
        serve_with_env(&["--store", "memory", "--no-conversation-log"], &env)
    })
    .await
    .unwrap();
    let url = server.url.clone();
    tokio::task::spawn_blocking(move || ok(&["send", &url, "hello over http"]))
        .await
        .unwrap();
    let exports = until_spans(&mut taken, &["SendStreamingMessage", "execution"]).await;
    for export in &exports {
        assert_eq!(export.headers["content-type"], "application/x-protobuf");
        assert_eq!(export.headers["x-api-key"], "s e,cret");
        assert_eq!(export.headers["x-team"], "a2a");
        let resource = export.request.resource_spans[0].resource.as_ref().unwrap();
        assert!(
            resource.attributes.iter().any(|kv| kv.key == "service.name"
                && format!("{:?}", kv.value).contains("otlp-http-test")),
            "{resource:?}"
        );
    }
    // The execution is a child of the call, in the same trace.
    let spans: Vec<_> = exports
        .iter()
        .flat_map(|r| &r.request.resource_spans)
        .flat_map(|resource| &resource.scope_spans)
        .flat_map(|scope| &scope.spans)
        .collect();
    let call = spans
        .iter()
        .find(|s| s.name == "SendStreamingMessage")
        .unwrap();
    let execution = spans.iter().find(|s| s.name == "execution").unwrap();
    assert_eq!(call.trace_id.len(), 16);
    assert_eq!(execution.trace_id, call.trace_id);
    assert_eq!(execution.parent_span_id, call.span_id);
    assert!(
        call.attributes.iter().any(|kv| kv.key == "a2a.operation"),
        "{:?}",
        call.attributes
    );
    drop(server);
}

/// A failed export loses its batch (the SDK does not retry), but the
/// exporter goes on: the next call's spans arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_failed_an_export_gets_the_next_one() {
    let (endpoint, mut taken, attempts) = collector(1).await;
    let server = tokio::task::spawn_blocking(move || {
        let env = [
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                format!("{endpoint}/v1/traces"),
            ),
            ("OTEL_BSP_SCHEDULE_DELAY", "100".into()),
            ("OTEL_METRICS_EXPORTER", "none".into()),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        serve_with_env(&["--store", "memory", "--no-conversation-log"], &env)
    })
    .await
    .unwrap();
    let url = server.url.clone();
    // The first export fails; calls go on until one's spans arrive.
    let deadline = Instant::now() + support::PATIENCE;
    loop {
        assert!(
            Instant::now() < deadline,
            "no export arrived after the failed one"
        );
        let url = url.clone();
        tokio::task::spawn_blocking(move || ok(&["send", &url, "again"]))
            .await
            .unwrap();
        if let Ok(Some(received)) = tokio::time::timeout(Duration::from_secs(1), taken.recv()).await
        {
            assert!(!span_names(&received.request).is_empty());
            break;
        }
    }
    // The one that arrived came after the one that failed.
    assert!(attempts.load(Ordering::SeqCst) >= 2);
    drop(server);
}

#[test]
fn a_compression_this_build_cannot_do_is_refused_at_start() {
    let refusal = support::serve_refused_with_env(
        &["--store", "memory", "--no-conversation-log"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_METRICS_EXPORTER", "none"),
            ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip"),
        ],
    );
    assert!(
        refusal
            .stderr
            .contains("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION"),
        "{}",
        refusal.stderr
    );
}
