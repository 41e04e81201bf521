//! `a2a serve`'s log and, built with the `otel` feature, its OpenTelemetry
//! export: spans and metrics over OTLP when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` /
//! `..._METRICS_ENDPOINT`) is set, as HTTP/protobuf or, with
//! `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` (or the per-signal `..._TRACES_PROTOCOL` /
//! `..._METRICS_PROTOCOL`), gRPC; the other standard `OTEL_*` variables
//! (headers, timeout, service name, resource attributes, the sampler
//! `OTEL_TRACES_SAMPLER`/`OTEL_TRACES_SAMPLER_ARG`, the batch processor's
//! `OTEL_BSP_*`) apply as usual, `OTEL_TRACES_EXPORTER=none` or
//! `OTEL_METRICS_EXPORTER=none` leaves one signal out (`otlp`, the default,
//! is the one exporter this build has), and `OTEL_SDK_DISABLED=true` turns it
//! all off.
//!
//! The sampler decides once per trace, at the server's entry (the caller's
//! `traceparent` first), and the SDK records the spans of the traces it
//! samples itself, with no `tracing` bridge
//! (`a2a_server::telemetry::otel::record_spans`): the call, execution, push
//! and client spans are exported, and the trace context of a trace not
//! sampled still goes on to the agents it calls.
//!
//! Spans over HTTP/protobuf are written by an exporter of this crate
//! ([`otlp_spans`]), which encodes the SDK's spans in one pass instead of
//! converting them to the generated types first; metrics, and spans over
//! gRPC, use the standard exporters.
//!
//! Built without the feature, `a2a serve` says so once at start when one of
//! those variables asks for an export it cannot make.

#[cfg(feature = "otel")]
mod otlp_spans;

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// The log's filter unless `RUST_LOG` says otherwise: the SDK's spans are for
/// telemetry, and the log keeps quiet about them (a span the log takes up
/// costs a record per call). The hub's table of agents, which it logs when
/// it starts, is in the banner already: printed once, on stdout.
const DEFAULT_LOG: &str = "info,a2a::server=warn,a2a::client=warn,a2a::execution=warn,\
                           a2a::push=warn,a2a_hub::hub::links=warn";

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
        #[cfg(not(feature = "otel"))]
        if configured(|name| std::env::var_os(name)) {
            eprintln!(
                "warning: OTEL_EXPORTER_OTLP_*ENDPOINT is set, but this a2a was built without \
                 the `otel` feature: nothing is exported"
            );
        }
        let log = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(crate::output::colors(&std::io::stderr()))
            .with_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| DEFAULT_LOG.into()));
        #[cfg(feature = "otel")]
        if configured(|name| std::env::var_os(name)) {
            let export = otel::install()?;
            // The spans are the server's to record: the log is the one layer.
            tracing_subscriber::registry().with(log).init();
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

/// The variables that switch the export on.
const ENDPOINTS: [&str; 3] = [
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
];

/// Whether the environment (read through `var`) asks for an export: an OTLP
/// endpoint is given and the SDK is not disabled (`OTEL_SDK_DISABLED=true`).
/// With neither, nothing of OpenTelemetry is installed.
fn configured(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    let disabled = var("OTEL_SDK_DISABLED")
        .is_some_and(|v| v.to_string_lossy().trim().eq_ignore_ascii_case("true"));
    !disabled
        && ENDPOINTS
            .iter()
            .any(|name| var(name).is_some_and(|v| !v.is_empty()))
}

#[cfg(feature = "otel")]
mod otel {
    use std::time::Duration;

    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::error::OTelSdkResult;
    use opentelemetry_sdk::metrics::data::ResourceMetrics;
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
    use opentelemetry_sdk::metrics::{SdkMeterProvider, Temporality};
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanExporter};

    /// The providers to flush at exit (a signal left out has none).
    #[derive(Debug)]
    pub(super) struct Export {
        tracer: Option<a2a_server::telemetry::otel::SpanRecorder>,
        meter: Option<SdkMeterProvider>,
    }

    impl Export {
        pub(super) fn shutdown(self) {
            if let Some(Err(err)) = self.tracer.map(|recorder| recorder.shutdown()) {
                eprintln!("warning: flushing the spans failed: {err}");
            }
            if let Some(Err(err)) = self.meter.map(|meter| meter.shutdown()) {
                eprintln!("warning: flushing the metrics failed: {err}");
            }
        }
    }

    /// Whether `signal` (`TRACES` or `METRICS`) is exported, as
    /// `OTEL_{signal}_EXPORTER` says: `otlp` (the default) or `none`; this
    /// build has no other exporter, and says so rather than export nothing.
    pub(super) fn exported(
        signal: &str,
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> anyhow::Result<bool> {
        let name = format!("OTEL_{signal}_EXPORTER");
        let value = var(&name).map(|v| v.to_string_lossy().trim().to_ascii_lowercase());
        match value.as_deref() {
            None | Some("" | "otlp") => Ok(true),
            Some("none") => Ok(false),
            Some(other) => anyhow::bail!(
                "{name}={other:?}: this build exports over OTLP only (`otlp` or `none`)"
            ),
        }
    }

    /// How one signal is sent.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Protocol {
        HttpProtobuf,
        Grpc,
    }

    /// The protocol of `signal` (`TRACES` or `METRICS`): its own variable,
    /// else the general one, else HTTP/protobuf (the specification's default).
    fn protocol(signal: &str) -> anyhow::Result<Protocol> {
        let own = format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL");
        let (name, value) = [own.as_str(), "OTEL_EXPORTER_OTLP_PROTOCOL"]
            .into_iter()
            .find_map(|name| {
                std::env::var(name)
                    .ok()
                    .filter(|v| !v.is_empty())
                    .map(|v| (name, v))
            })
            .unwrap_or(("", String::new()));
        match value.as_str() {
            "" | "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => {
                anyhow::bail!("{name}={other:?}: this build exports OTLP as grpc or http/protobuf")
            }
        }
    }

    /// The runtime the gRPC exporters run on. The SDK exports from threads of
    /// its own, outside any Tokio runtime, and tonic needs one; one worker
    /// drives its connections for both signals.
    fn export_runtime() -> anyhow::Result<&'static tokio::runtime::Runtime> {
        static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
        if let Some(runtime) = RUNTIME.get() {
            return Ok(runtime);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-grpc")
            .enable_all()
            .build()?;
        Ok(RUNTIME.get_or_init(|| runtime))
    }

    /// An exporter whose calls run on [`export_runtime`].
    #[derive(Debug)]
    struct OnRuntime<E> {
        exporter: E,
        runtime: tokio::runtime::Handle,
    }

    impl<E> OnRuntime<E> {
        /// An exporter made by `build` inside the export runtime (tonic
        /// connects from within one) and run on it from then on.
        fn build<Error>(build: impl FnOnce() -> Result<E, Error>) -> anyhow::Result<Self>
        where
            Error: std::error::Error + Send + Sync + 'static,
        {
            let runtime = export_runtime()?;
            let _context = runtime.enter();
            Ok(OnRuntime {
                exporter: build()?,
                runtime: runtime.handle().clone(),
            })
        }
    }

    impl<E: SpanExporter> SpanExporter for OnRuntime<E> {
        fn export(
            &self,
            batch: Vec<SpanData>,
        ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            // Called on the SDK's own thread, so blocking on the runtime is allowed.
            std::future::ready(self.runtime.block_on(self.exporter.export(batch)))
        }

        fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
            let _context = self.runtime.enter();
            self.exporter.shutdown_with_timeout(timeout)
        }

        fn force_flush(&self) -> OTelSdkResult {
            let _context = self.runtime.enter();
            self.exporter.force_flush()
        }

        fn set_resource(&mut self, resource: &Resource) {
            self.exporter.set_resource(resource);
        }
    }

    impl<E: PushMetricExporter> PushMetricExporter for OnRuntime<E> {
        fn export(
            &self,
            metrics: &ResourceMetrics,
        ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
            std::future::ready(self.runtime.block_on(self.exporter.export(metrics)))
        }

        fn force_flush(&self) -> OTelSdkResult {
            let _context = self.runtime.enter();
            self.exporter.force_flush()
        }

        fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
            let _context = self.runtime.enter();
            self.exporter.shutdown_with_timeout(timeout)
        }

        fn temporality(&self) -> Temporality {
            self.exporter.temporality()
        }
    }

    /// Installs W3C propagation, the global meter provider and the span
    /// exporter, to which the server hands the spans it records. Without a
    /// span export (`OTEL_TRACES_EXPORTER=none`) nothing is recorded;
    /// without a metric export, there is no meter provider.
    pub(super) fn install() -> anyhow::Result<Export> {
        let mut resource = Resource::builder();
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("a2a");
        }
        let resource = resource.build();
        let traces = exported("TRACES", |name| std::env::var_os(name))?;
        let metrics = exported("METRICS", |name| std::env::var_os(name))?;
        let meter = if metrics {
            let meter = SdkMeterProvider::builder().with_resource(resource.clone());
            let meter = match protocol("METRICS")? {
                Protocol::HttpProtobuf => meter.with_periodic_exporter(
                    opentelemetry_otlp::MetricExporter::builder()
                        .with_http()
                        .build()?,
                ),
                Protocol::Grpc => meter.with_periodic_exporter(OnRuntime::build(|| {
                    opentelemetry_otlp::MetricExporter::builder()
                        .with_tonic()
                        .build()
                })?),
            };
            let meter = meter.build();
            // Before the first call: the server makes its instruments once.
            opentelemetry::global::set_meter_provider(meter.clone());
            Some(meter)
        } else {
            None
        };
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        if !traces {
            return Ok(Export {
                tracer: None,
                meter,
            });
        }
        // The sampler `OTEL_TRACES_SAMPLER` names decides at the server's
        // entry, once per trace; the SDK records the spans of the traces it
        // samples itself and hands them to the batch processor (`OTEL_BSP_*`),
        // with no `tracing` bridge: only the SDK's spans are exported, and
        // the bridge's span builder, registry extensions and SDK span made
        // at close would cost more than the rest of the span's life.
        let processor = match protocol("TRACES")? {
            Protocol::HttpProtobuf => {
                BatchSpanProcessor::builder(super::otlp_spans::HttpSpanExporter::new(
                    super::otlp_spans::HttpConfig::from_env(|name| std::env::var(name).ok())?,
                )?)
                .build()
            }
            Protocol::Grpc => BatchSpanProcessor::builder(OnRuntime::build(|| {
                opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .build()
            })?)
            .build(),
        };
        let recorder = a2a_server::telemetry::otel::record_spans(
            opentelemetry_sdk::trace::Config::default().sampler,
            processor,
            &resource,
        );
        Ok(Export {
            tracer: Some(recorder),
            meter,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::configured;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        assert!(!configured(env(&[])));
        // The other variables alone ask for nothing.
        assert!(!configured(env(&[
            ("OTEL_SERVICE_NAME", "agent"),
            ("OTEL_TRACES_SAMPLER", "always_on"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", ""),
        ])));
    }

    #[test]
    fn any_endpoint_asks_for_the_export_unless_the_sdk_is_disabled() {
        for name in super::ENDPOINTS {
            assert!(
                configured(env(&[(name, "http://127.0.0.1:4318")])),
                "{name}"
            );
        }
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(!configured(env(&[endpoint, ("OTEL_SDK_DISABLED", "true")])));
        assert!(!configured(env(&[
            endpoint,
            ("OTEL_SDK_DISABLED", " TRUE ")
        ])));
        assert!(configured(env(&[endpoint, ("OTEL_SDK_DISABLED", "false")])));
    }

    /// `OTEL_{TRACES,METRICS}_EXPORTER`: OTLP unless `none`; any other
    /// exporter is refused by name rather than silently not used.
    #[cfg(feature = "otel")]
    #[test]
    fn each_signal_is_exported_over_otlp_unless_its_exporter_is_none() {
        use super::otel::exported;
        assert!(exported("TRACES", env(&[])).unwrap());
        assert!(exported("TRACES", env(&[("OTEL_TRACES_EXPORTER", "otlp")])).unwrap());
        assert!(!exported("TRACES", env(&[("OTEL_TRACES_EXPORTER", " None ")])).unwrap());
        assert!(!exported("METRICS", env(&[("OTEL_METRICS_EXPORTER", "none")])).unwrap());
        // One signal's setting leaves the other alone.
        assert!(exported("METRICS", env(&[("OTEL_TRACES_EXPORTER", "none")])).unwrap());
        let err = exported("METRICS", env(&[("OTEL_METRICS_EXPORTER", "prometheus")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("OTEL_METRICS_EXPORTER=\"prometheus\""),
            "{err}"
        );
    }

    /// The bridge's filter shuts out the not-sampled spans by their targets,
    /// which both SDK crates spell out.
    #[cfg(feature = "otel")]
    #[test]
    fn the_unsampled_targets_are_the_sampled_ones_with_the_suffix() {
        use a2a_server::telemetry::otel::UNSAMPLED_SUFFIX;
        assert_eq!(
            a2a_client::telemetry::UNSAMPLED_CLIENT_TARGET,
            format!("{}{UNSAMPLED_SUFFIX}", a2a_client::telemetry::CLIENT_TARGET)
        );
    }
}
