//! `a2a serve` as built by default: with no OpenTelemetry variables it
//! installs no exporter (nothing dials the OTLP ports), and with them the
//! sampler decides once per trace at the server's entry, following the
//! caller's `traceparent` whatever the ratio.
#![cfg(feature = "otel")]
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

/// `a2a serve --store memory` with `env` and without any other `OTEL_*`
/// variable: the process (killed when dropped) and its URL.
struct Served {
    child: Child,
    url: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(env: &[(&str, &str)]) -> Served {
    let mut command = support::command();
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    let mut child = command
        .args([
            "serve",
            "--port",
            "0",
            "--store",
            "memory",
            "--no-conversation-log",
        ])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("Press Ctrl-C") {
        assert_ne!(
            stdout.read_line(&mut banner).unwrap(),
            0,
            "a2a serve stopped: {banner}"
        );
    }
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    Served {
        child,
        url,
        _stdout: stdout,
    }
}

#[test]
fn without_otel_variables_no_exporter_is_installed_and_nothing_is_dialled() {
    // The OTLP exporters' default endpoints: an exporter installed without
    // an endpoint variable would send there, at the latest when the server
    // flushes on its way out. A port already taken cannot be watched.
    let watched: Vec<std::net::TcpListener> = [4317, 4318]
        .into_iter()
        .filter_map(|port| std::net::TcpListener::bind(("127.0.0.1", port)).ok())
        .collect();
    // Variables that configure an export, but name no endpoint.
    let mut server = serve(&[
        ("OTEL_SERVICE_NAME", "quiet"),
        ("OTEL_TRACES_SAMPLER", "always_on"),
        ("OTEL_BSP_SCHEDULE_DELAY", "1"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "1"),
    ]);
    support::ok(&["send", &server.url, "hello"]);
    let status = support::stop_with(&mut server.child, "-TERM", support::PATIENCE);
    assert!(status.success(), "{status}");
    for listener in &watched {
        listener.set_nonblocking(true).unwrap();
        let err = listener.accept().map(|_| ()).unwrap_err();
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::WouldBlock,
            "{:?} was dialled",
            listener.local_addr()
        );
    }
}

/// Receives the trace ids (hex) of the spans exported to it.
struct Collector(UnboundedSender<String>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        for resource in request.into_inner().resource_spans {
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let hex: String = span.trace_id.iter().map(|b| format!("{b:02x}")).collect();
                    let _ = self.0.send(hex);
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// An OTLP/gRPC trace collector on a free port: its endpoint and the trace
/// ids it receives.
async fn collector() -> (String, UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = unbounded_channel();
    let incoming = futures::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(stream, _)| stream);
        Some((accepted, listener))
    });
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(Collector(tx)))
            .serve_with_incoming(incoming)
            .await
            .unwrap();
    });
    (format!("http://{addr}"), rx)
}

/// `a2a serve` exporting to `endpoint` over gRPC, sampling by
/// `parentbased_traceidratio` at `ratio`.
fn serve_sampling(endpoint: &str, ratio: &str) -> Served {
    serve(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", ratio),
        ("OTEL_BSP_SCHEDULE_DELAY", "50"),
    ])
}

/// A blocking JSON-RPC SendMessage to `url` with `traceparent`.
async fn send_with(url: &str, traceparent: &str) {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    });
    let answer = reqwest::Client::new()
        .post(url)
        .header("traceparent", traceparent)
        .header("a2a-version", "1.0")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success(), "{}", answer.status());
    let answer: serde_json::Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
    assert!(answer.get("result").is_some(), "{answer}");
}

/// Waits for a span of `trace`; returns every trace id received until then.
async fn until_trace(ids: &mut UnboundedReceiver<String>, trace: &str) -> Vec<String> {
    let deadline = Instant::now() + support::PATIENCE;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_millis(200), ids.recv()).await {
            Ok(Some(id)) => {
                let found = id == trace;
                seen.push(id);
                if found {
                    return seen;
                }
            }
            Ok(None) => break,
            Err(_) => {}
        }
    }
    panic!("no span of trace {trace} arrived; received {seen:?}");
}

const SAMPLED: &str = "5a3f1ed05a3f1ed05a3f1ed05a3f1ed0";
const NOT_SAMPLED: &str = "0ff0ff0ff0ff0ff0ff0ff0ff0ff0ff00";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_caller_is_exported_even_at_ratio_zero() {
    let (endpoint, mut ids) = collector().await;
    let server = tokio::task::spawn_blocking(move || serve_sampling(&endpoint, "0"))
        .await
        .unwrap();
    send_with(&server.url, &format!("00-{SAMPLED}-00f067aa0ba902b7-01")).await;
    until_trace(&mut ids, SAMPLED).await;
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_not_sampled_is_not_exported_even_at_ratio_one() {
    let (endpoint, mut ids) = collector().await;
    let server = tokio::task::spawn_blocking(move || serve_sampling(&endpoint, "1"))
        .await
        .unwrap();
    send_with(
        &server.url,
        &format!("00-{NOT_SAMPLED}-00f067aa0ba902b7-00"),
    )
    .await;
    // A sampled call after it: its spans end after the first call's would
    // have, and the exporter sends spans in the order they end.
    send_with(&server.url, &format!("00-{SAMPLED}-00f067aa0ba902b7-01")).await;
    let seen = until_trace(&mut ids, SAMPLED).await;
    assert!(!seen.iter().any(|id| id == NOT_SAMPLED), "{seen:?}");
    drop(server);
}
