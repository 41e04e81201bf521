//! What a model agent is configured with: [`ModelConfig`] as a file writes
//! it (a `kind = "model"` table of `gateway.toml`, say), and
//! [`ModelSettings`], the same resolved (the API key read from the
//! environment, the system prompt read from its file, durations made).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The request timeout when the configuration sets none.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The retries after a failed request when the configuration sets none.
pub const DEFAULT_RETRIES: u32 = 3;
/// The history budget in messages when the configuration sets none.
pub const DEFAULT_MAX_HISTORY_MESSAGES: usize = 50;
/// The model turns one execution may take before it gives up.
pub const DEFAULT_MAX_TURNS: u32 = 16;

/// A model agent as a configuration file describes it.
///
/// ```toml
/// base_url = "http://127.0.0.1:11434/v1"   # any OpenAI-compatible endpoint
/// model = "qwen2.5:7b"
/// api_key_env = "OPENAI_API_KEY"           # optional: the variable holding the key
/// system = "You plan the work."            # or system_file = "prompts/planner.md"
/// temperature = 0.2
/// max_tokens = 1024
/// request_timeout_secs = 120
/// retries = 3                              # on 429, 5xx, timeouts; Retry-After is honoured
/// max_history_messages = 50                # the budget of earlier messages sent
/// max_history_tokens = 8000                # a rough one (4 characters a token)
/// tools = ["coder", "reviewer"]            # the gateway's agents it may call (default: all)
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The endpoint's base URL, up to and without `/chat/completions`
    /// (`https://api.openai.com/v1`, `http://127.0.0.1:11434/v1`).
    pub base_url: String,
    /// The model's name as the endpoint knows it.
    pub model: String,
    /// The environment variable holding the API key (sent as a bearer
    /// token); none: no key is sent.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The system prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// A file holding the system prompt (relative to the configuration
    /// file's directory); not with `system`.
    #[serde(default)]
    pub system_file: Option<PathBuf>,
    /// Sampling temperature (0 to 2); none: the endpoint's default.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// The most tokens one answer may have; none: the endpoint's default.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Seconds one request may take to answer (for a streamed answer: to
    /// start, and between two chunks). Default 120.
    #[serde(default)]
    pub request_timeout_secs: Option<u64>,
    /// Retries of a request that failed with 429, a 5xx, a timeout or a
    /// lost connection, with exponential backoff (a `Retry-After` header
    /// wins). Default 3.
    #[serde(default)]
    pub retries: Option<u32>,
    /// The most earlier messages (of the task and of its context's earlier
    /// tasks) sent with a request, newest kept. Default 50.
    #[serde(default)]
    pub max_history_messages: Option<usize>,
    /// A rough token budget of the earlier messages (4 characters a
    /// token), newest kept; none: only the message budget.
    #[serde(default)]
    pub max_history_tokens: Option<usize>,
    /// The model turns one execution may take (tool rounds included)
    /// before the task fails. Default 16.
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// The gateway's agents the model may call as tools; none: all the
    /// others.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
}

/// A mistake in a [`ModelConfig`]: the field and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigProblem {
    /// The field (`base_url`, `system_file`...).
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

fn problem(field: &'static str, message: impl Into<String>) -> ConfigProblem {
    ConfigProblem {
        field,
        message: message.into(),
    }
}

/// A model agent's settings, resolved and checked.
#[derive(Clone, PartialEq)]
pub struct ModelSettings {
    /// The endpoint's base URL, without a trailing slash.
    pub base_url: String,
    /// The model's name.
    pub model: String,
    /// The API key, if any.
    pub api_key: Option<String>,
    /// The system prompt, if any.
    pub system: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The most tokens of one answer.
    pub max_tokens: Option<u32>,
    /// How long a request may take to answer (a stream: to start, and
    /// between chunks).
    pub request_timeout: Duration,
    /// Retries after a failed request.
    pub retries: u32,
    /// The first backoff; each retry doubles it, up to `max_backoff`.
    pub backoff: Duration,
    /// The longest wait between two attempts, `Retry-After` included.
    pub max_backoff: Duration,
    /// The most earlier messages sent.
    pub max_history_messages: usize,
    /// The rough token budget of earlier messages.
    pub max_history_tokens: Option<usize>,
    /// The most model turns of one execution.
    pub max_turns: u32,
    /// The agents the model may call (`None`: all).
    pub tools: Option<Vec<String>>,
}

// The temperature is the only float, and `from_config` refuses NaN (it is
// not between 0 and 2), so equality is an equivalence on what is built.
impl Eq for ModelSettings {}

impl std::fmt::Debug for ModelSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("ModelSettings")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("request_timeout", &self.request_timeout)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl ModelSettings {
    /// Settings for `model` at `base_url`, every other one its default.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> ModelSettings {
        ModelSettings {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            system: None,
            temperature: None,
            max_tokens: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            retries: DEFAULT_RETRIES,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
            max_history_messages: DEFAULT_MAX_HISTORY_MESSAGES,
            max_history_tokens: None,
            max_turns: DEFAULT_MAX_TURNS,
            tools: None,
        }
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system = Some(prompt.into());
        self
    }

    /// Resolves `config`: reads the key from the environment and the system
    /// prompt from its file (relative to `base_dir`), and checks every
    /// value. The first mistake is returned, naming its field.
    pub fn from_config(config: &ModelConfig, base_dir: &Path) -> Result<Self, ConfigProblem> {
        let url = config.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.split("://").nth(1).is_none_or(str::is_empty)
        {
            return Err(problem(
                "base_url",
                format!("must be an http:// or https:// URL, got {url:?}"),
            ));
        }
        if config.model.trim().is_empty() {
            return Err(problem("model", "must name the model"));
        }
        let mut settings = ModelSettings::new(url, config.model.trim());
        if let Some(var) = &config.api_key_env {
            match std::env::var(var) {
                Ok(key) if !key.trim().is_empty() => settings.api_key = Some(key.trim().to_owned()),
                _ => {
                    return Err(problem(
                        "api_key_env",
                        format!("environment variable {var} is not set"),
                    ));
                }
            }
        }
        settings.system = match (&config.system, &config.system_file) {
            (Some(_), Some(_)) => {
                return Err(problem(
                    "system_file",
                    "give `system` or `system_file`, not both",
                ));
            }
            (Some(text), None) => Some(text.clone()),
            (None, Some(file)) => {
                let path = base_dir.join(file);
                Some(std::fs::read_to_string(&path).map_err(|err| {
                    problem(
                        "system_file",
                        format!("cannot read {}: {err}", path.display()),
                    )
                })?)
            }
            (None, None) => None,
        };
        if let Some(t) = config.temperature {
            if !(0.0..=2.0).contains(&t) {
                return Err(problem("temperature", "must be between 0 and 2"));
            }
            settings.temperature = Some(t);
        }
        if config.max_tokens == Some(0) {
            return Err(problem("max_tokens", "must be 1 or more"));
        }
        settings.max_tokens = config.max_tokens;
        match config.request_timeout_secs {
            Some(0) => return Err(problem("request_timeout_secs", "must be 1 or more")),
            Some(secs) => settings.request_timeout = Duration::from_secs(secs),
            None => {}
        }
        if let Some(retries) = config.retries {
            if retries > 20 {
                return Err(problem("retries", "must be at most 20"));
            }
            settings.retries = retries;
        }
        if let Some(max) = config.max_history_messages {
            settings.max_history_messages = max;
        }
        settings.max_history_tokens = config.max_history_tokens;
        match config.max_turns {
            Some(0) => return Err(problem("max_turns", "must be 1 or more")),
            Some(turns) => settings.max_turns = turns,
            None => {}
        }
        settings.tools.clone_from(&config.tools);
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ModelConfig {
        ModelConfig {
            base_url: "http://127.0.0.1:11434/v1/".into(),
            model: "m".into(),
            ..ModelConfig::default()
        }
    }

    #[test]
    fn defaults_and_mistakes() {
        let settings = ModelSettings::from_config(&config(), Path::new(".")).unwrap();
        assert_eq!(settings.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(settings.retries, DEFAULT_RETRIES);
        let bad = |change: fn(&mut ModelConfig), field: &str| {
            let mut c = config();
            change(&mut c);
            let err = ModelSettings::from_config(&c, Path::new(".")).unwrap_err();
            assert_eq!(err.field, field, "{err}");
        };
        bad(|c| c.base_url = "ftp://x".into(), "base_url");
        bad(|c| c.base_url = "http://".into(), "base_url");
        bad(|c| c.model = " ".into(), "model");
        bad(|c| c.temperature = Some(3.0), "temperature");
        bad(|c| c.temperature = Some(f32::NAN), "temperature");
        bad(|c| c.request_timeout_secs = Some(0), "request_timeout_secs");
        bad(
            |c| c.api_key_env = Some("A2A_MODEL_TEST_UNSET_VAR".into()),
            "api_key_env",
        );
        bad(
            |c| {
                c.system = Some("a".into());
                c.system_file = Some("b".into());
            },
            "system_file",
        );
        bad(
            |c| c.system_file = Some("/nonexistent/prompt".into()),
            "system_file",
        );
    }

    #[test]
    fn the_key_stays_out_of_debug() {
        let mut settings = ModelSettings::new("http://x", "m");
        settings.api_key = Some("sk-secret".into());
        assert!(!format!("{settings:?}").contains("sk-secret"));
    }
}
