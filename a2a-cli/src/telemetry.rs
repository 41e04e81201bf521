//! `a2a serve`'s log and, built with the `otel` feature, its OpenTelemetry
//! export: spans and metrics over OTLP (HTTP/protobuf) when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `..._METRICS_ENDPOINT`) is set; the other standard `OTEL_*` variables
//! (headers, timeout, service name, resource attributes, the sampler
//! `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG`, the batch processor's
//! `OTEL_BSP_*`) apply as usual.

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// The log's filter unless `RUST_LOG` says otherwise: the SDK's spans are for
/// telemetry, and the log keeps quiet about them (a span the log takes up
/// costs a record per call).
const DEFAULT_LOG: &str =
    "info,a2a::server=warn,a2a::client=warn,a2a::execution=warn,a2a::push=warn";

/// What was installed; [`Telemetry::shutdown`] sends what is still buffered.
#[derive(Debug, Default)]
pub(crate) struct Telemetry {
    #[cfg(feature = "otel")]
    export: Option<otel::Export>,
}

impl Telemetry {
    /// Installs the log on stderr (stdout carries the banner scripts read)
    /// and, when configured, the OTLP export.
    pub(crate) fn init() -> anyhow::Result<Telemetry> {
        let log = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG.into()));
        #[cfg(feature = "otel")]
        if otel::configured() {
            let (export, layer) = otel::install()?;
            tracing_subscriber::registry().with(log).with(layer).init();
            return Ok(Telemetry {
                export: Some(export),
            });
        }
        tracing_subscriber::registry().with(log).init();
        Ok(Telemetry::default())
    }

    /// Flushes and stops the export, if any.
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(export) = self.export {
            export.shutdown();
        }
    }
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::metrics::SdkMeterProvider;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::{LevelFilter, Targets};

    /// The variables that switch the export on.
    const ENDPOINTS: [&str; 3] = [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ];

    /// The providers to flush at exit.
    #[derive(Debug)]
    pub(super) struct Export {
        tracer: SdkTracerProvider,
        meter: SdkMeterProvider,
    }

    impl Export {
        pub(super) fn shutdown(self) {
            if let Err(err) = self.tracer.shutdown() {
                eprintln!("warning: flushing the spans failed: {err}");
            }
            if let Err(err) = self.meter.shutdown() {
                eprintln!("warning: flushing the metrics failed: {err}");
            }
        }
    }

    /// Whether an OTLP endpoint is given.
    pub(super) fn configured() -> bool {
        ENDPOINTS
            .iter()
            .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
    }

    /// Installs W3C propagation, the global meter provider and the span
    /// exporter; returns the layer that hands the SDK's spans to it.
    pub(super) fn install<S>() -> anyhow::Result<(Export, impl Layer<S>)>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("a2a");
        }
        let resource = resource.build();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .build()?;
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .build()?;
        let meter = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics)
            .with_resource(resource)
            .build();
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        // Before the first call: the server makes its instruments once.
        opentelemetry::global::set_meter_provider(meter.clone());
        // The spans' own fields say what happened; the bridge's extras (source
        // location, thread, target, busy/idle time taken at every poll) would
        // more than double what each span costs to record and encode. Nothing
        // here reads the OpenTelemetry context of the current thread (the
        // trace context sent on is taken from the span itself), so entering a
        // span need not attach it: an execution's span is entered at every
        // poll.
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer.tracer("a2a"))
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_filter(
                Targets::new()
                    .with_target(a2a_server::telemetry::SERVER_TARGET, LevelFilter::INFO)
                    .with_target(a2a_server::telemetry::EXECUTION_TARGET, LevelFilter::INFO)
                    .with_target(a2a_server::telemetry::PUSH_TARGET, LevelFilter::INFO)
                    .with_target(a2a_client::telemetry::CLIENT_TARGET, LevelFilter::INFO),
            );
        Ok((Export { tracer, meter }, layer))
    }
}
