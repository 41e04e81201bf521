//! An agent that exports its traces and metrics to an OpenTelemetry
//! collector over OTLP/HTTP: a span per call (named after the operation,
//! such as `SendStreamingMessage`), one per execution (`execution`), and the
//! `a2a.server.*` metrics.
//!
//! Run with: `OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run -p examples --features otel --bin otel_agent [-- 127.0.0.1:8080]`
//! Then:     `cargo run -p examples --bin hello_client -- http://127.0.0.1:8080`
//!
//! Any OTLP/HTTP collector will do, for instance Jaeger:
//! `docker run --rm -p 16686:16686 -p 4318:4318 jaegertracing/all-in-one`
//! (traces at http://127.0.0.1:16686, service `otel-example`). The SDK's
//! own variables apply: `OTEL_EXPORTER_OTLP_ENDPOINT` (default
//! `http://localhost:4318`), `OTEL_SERVICE_NAME`, `OTEL_BSP_SCHEDULE_DELAY`
//! (ms between span batches), `OTEL_METRIC_EXPORT_INTERVAL` (ms), the
//! samplers. It prints `agent card: http://ADDRESS/.well-known/agent-card.json`
//! once it listens (give `127.0.0.1:0` to take any free port), and flushes
//! what it has on Ctrl-C or SIGTERM.

use a2a_core::{A2aError, AgentCard, binding};
use a2a_server::{A2aService, AgentExecutor, DefaultRequestHandler, EventQueue, RequestContext};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::BatchSpanProcessor;

struct Hello;

#[async_trait::async_trait]
impl AgentExecutor for Hello {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events
            .complete_with_text(format!("Hello, {}!", ctx.message.text()))
            .await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".into());

    // ANCHOR: install
    // The exporters read OTEL_EXPORTER_OTLP_ENDPOINT and the rest.
    let resource = Resource::builder()
        .with_service_name("otel-example")
        .build();
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()?;
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .build()?;
    let meter = SdkMeterProvider::builder()
        .with_resource(resource.clone())
        .with_periodic_exporter(metrics)
        .build();
    // W3C `traceparent`: a client's span becomes the parent of ours.
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    // Before the handler is built: the server makes its instruments once.
    opentelemetry::global::set_meter_provider(meter.clone());
    // The SDK records its spans (a call, an execution, a push) itself and
    // hands them to the batch processor; the sampler (here the SDK's, from
    // OTEL_TRACES_SAMPLER) decides once per trace, where it enters. A program
    // that wants its own `tracing` spans in the same traces installs the
    // `tracing_opentelemetry` bridge instead, with `sample_at_entry`.
    let tracer = a2a_server::telemetry::otel::record_spans(
        opentelemetry_sdk::trace::Config::default().sampler,
        BatchSpanProcessor::builder(spans).build(),
        &resource,
    );
    // ANCHOR_END: install

    let listener = tokio::net::TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let card = AgentCard::new("otel-hello", "Says hello, traced")
        .with_interface(format!("http://{addr}/"), binding::JSONRPC)
        .with_interface(format!("http://{addr}"), binding::HTTP_JSON)
        .with_interface(addr.to_string(), binding::GRPC)
        .with_streaming(true);
    let handler = DefaultRequestHandler::builder(Hello, card).build();
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), Default::default());
    println!("agent card: http://{addr}/.well-known/agent-card.json");
    a2a_server::http::serve(listener, app, service).await?;

    // Whatever is still batched goes out before the process ends.
    tracer.shutdown()?;
    meter.shutdown()?;
    Ok(())
}
