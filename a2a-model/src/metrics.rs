//! Token usage as OpenTelemetry counters (feature `otel`), through the
//! global meter provider: `a2a.model.tokens`, with the attributes `agent`,
//! `model` and `type` (`prompt` or `completion`).

use std::sync::OnceLock;

use opentelemetry::KeyValue;
use opentelemetry::metrics::Counter;

use crate::api::Usage;

fn tokens() -> &'static Counter<u64> {
    static TOKENS: OnceLock<Counter<u64>> = OnceLock::new();
    TOKENS.get_or_init(|| {
        opentelemetry::global::meter("a2a-model")
            .u64_counter("a2a.model.tokens")
            .with_description("Tokens used by model agents' requests")
            .with_unit("{token}")
            .build()
    })
}

/// Adds one model turn's tokens.
pub(crate) fn record(agent: &str, model: &str, usage: Usage) {
    for (kind, count) in [
        ("prompt", usage.prompt_tokens),
        ("completion", usage.completion_tokens),
    ] {
        tokens().add(
            count,
            &[
                KeyValue::new("agent", agent.to_owned()),
                KeyValue::new("model", model.to_owned()),
                KeyValue::new("type", kind),
            ],
        );
    }
}
