//! `a2a serve` built with `otel` exports over OTLP/gRPC when
//! `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`: spans and metrics reach a collector
//! (a tonic server here), each alone when the other's exporter is `none`,
//! and an unknown protocol is refused at start.
#![cfg(feature = "otel")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use support::{ok, serve_with_env};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// What the collector received: span names, and metric names.
struct Collector {
    spans: UnboundedSender<String>,
    metrics: UnboundedSender<String>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        for resource in request.into_inner().resource_spans {
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let _ = self.spans.send(span.name);
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        for resource in request.into_inner().resource_metrics {
            for scope in resource.scope_metrics {
                for metric in scope.metrics {
                    let _ = self.metrics.send(metric.name);
                }
            }
        }
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// Starts the collector on a free port: its address and what it receives.
async fn collector() -> (String, UnboundedReceiver<String>, UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (spans, spans_rx) = unbounded_channel();
    let (metrics, metrics_rx) = unbounded_channel();
    let traces = TraceServiceServer::new(Collector {
        spans: spans.clone(),
        metrics: metrics.clone(),
    });
    let meters = MetricsServiceServer::new(Collector { spans, metrics });
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(traces)
            .add_service(meters)
            .serve_with_incoming(tokio_stream_of(listener))
            .await
            .unwrap();
    });
    (format!("http://{addr}"), spans_rx, metrics_rx)
}

/// The listener's connections as the stream tonic serves.
fn tokio_stream_of(
    listener: tokio::net::TcpListener,
) -> impl futures::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    futures::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(stream, _)| stream);
        Some((accepted, listener))
    })
}

/// Waits until `names` has given each of `wanted`, in any order.
async fn received(names: &mut UnboundedReceiver<String>, wanted: &[&str]) {
    let deadline = Instant::now() + support::PATIENCE;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if wanted.iter().all(|w| seen.iter().any(|s| s == w)) {
            return;
        }
        match tokio::time::timeout(Duration::from_millis(200), names.recv()).await {
            Ok(Some(name)) => seen.push(name),
            Ok(None) => break,
            Err(_) => {}
        }
    }
    panic!("the collector never received all of {wanted:?}; it received {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_and_metrics_reach_an_otlp_grpc_collector() {
    let (endpoint, mut spans, mut metrics) = collector().await;
    let server = tokio::task::spawn_blocking(move || {
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
        ];
        serve_with_env(&["--store", "memory", "--no-conversation-log"], &env)
    })
    .await
    .unwrap();
    let url = server.url.clone();
    tokio::task::spawn_blocking(move || ok(&["send", &url, "hello over grpc"]))
        .await
        .unwrap();
    received(&mut spans, &["SendStreamingMessage", "execution"]).await;
    received(&mut metrics, &["a2a.server.requests"]).await;
    drop(server);
}

/// Serves with `exporter` (`OTEL_TRACES_EXPORTER` or
/// `OTEL_METRICS_EXPORTER`) set to `none`, sends one message, stops the
/// server cleanly (which flushes what it exports), and returns what the
/// collector got: span names, metric names.
async fn one_signal_left_out(exporter: &'static str) -> (Vec<String>, Vec<String>) {
    let (endpoint, mut spans, mut metrics) = collector().await;
    tokio::task::spawn_blocking(move || {
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            (exporter, "none"),
        ];
        let server = serve_with_env(&["--store", "memory", "--no-conversation-log"], &env);
        ok(&["send", &server.url, "one signal"]);
        server.stop(support::PATIENCE);
    })
    .await
    .unwrap();
    // The server flushed both providers before it exited, and the collector
    // took each export before answering it: whatever was sent is here.
    let drain = |names: &mut UnboundedReceiver<String>| {
        std::iter::from_fn(|| names.try_recv().ok()).collect::<Vec<_>>()
    };
    (drain(&mut spans), drain(&mut metrics))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn traces_exporter_none_exports_metrics_alone() {
    let (spans, metrics) = one_signal_left_out("OTEL_TRACES_EXPORTER").await;
    assert!(spans.is_empty(), "{spans:?}");
    assert!(
        metrics.iter().any(|m| m == "a2a.server.requests"),
        "{metrics:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_exporter_none_exports_spans_alone() {
    let (spans, metrics) = one_signal_left_out("OTEL_METRICS_EXPORTER").await;
    assert!(metrics.is_empty(), "{metrics:?}");
    assert!(spans.iter().any(|s| s == "execution"), "{spans:?}");
}

#[test]
fn an_unknown_exporter_is_refused_at_start() {
    let refusal = serve_refused_with_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
        ("OTEL_TRACES_EXPORTER", "zipkin"),
    ]);
    assert!(
        refusal.contains("OTEL_TRACES_EXPORTER") && refusal.contains("otlp"),
        "{refusal}"
    );
}

#[test]
fn an_unknown_otlp_protocol_is_refused_at_start() {
    let refusal = serve_refused_with_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "carrier-pigeon"),
    ]);
    assert!(
        refusal.contains("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") && refusal.contains("grpc"),
        "{refusal}"
    );
}

/// `a2a serve` (in memory) with `env`, which must refuse to start: its
/// standard error.
fn serve_refused_with_env(env: &[(&str, &str)]) -> String {
    support::serve_refused_with_env(&["--store", "memory", "--no-conversation-log"], env).stderr
}
