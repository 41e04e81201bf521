//! How a hub is set up: its channels, where threads may open, the loop
//! guards, what observers keep and how delivery retries; and the `[hub]`
//! table of a gateway file that says the same.
//!
//! ```toml
//! [hub]
//! default_channel = "general"          # where collaborations naming no channel go
//! thread_channels = ["general", "dev"] # where agents may open threads (default: every channel)
//! operator_channel = "ops"             # where escalations are posted (a sink: it calls no agent)
//! accounts = { default = "alpha" }     # other ids that name an agent
//!
//! [hub.channels.general]
//! description = "Everything."
//! default_agent = "alpha"              # handles what mentions nobody
//! members = ["alpha", "beta"]          # default: every agent
//!
//! [hub.guards]
//! pair_limit = 3                       # collaborations of one pair per window; one more is refused
//! pair_window_secs = 300
//! thread_burst = 6                     # messages a thread may take per window; one more pauses it
//! thread_burst_window_secs = 60
//! cool_down_secs = 300                 # a paused thread resumes on its own after this (0: never)
//! anonymous_threads = 5                # threads one address may open without authentication per window
//! anonymous_window_secs = 60
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use a2a_conversation::Clock;
use a2a_gateway::config::ConfigError;
use serde::Deserialize;
use toml::Spanned;

/// The JSON Schema of gateway files with the `[hub]` table described: its
/// keys, what each holds, and no other key (as [`HubConfig::from_gateway_file`]
/// refuses any other). It is what `a2a config schema` prints and the
/// repository keeps as `schema/gateway.schema.json`.
#[cfg(feature = "schema")]
pub fn json_schema() -> serde_json::Value {
    a2a_gateway::config::json_schema_with_hub::<RawHub>()
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelConfig {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The agent that handles messages that mention nobody.
    pub default_agent: Option<String>,
    /// The agents in it (`None`: every agent of the hub).
    pub members: Option<Vec<String>>,
}

impl ChannelConfig {
    /// A channel every agent is in, with no default agent.
    pub fn new(name: impl Into<String>) -> Self {
        ChannelConfig {
            name: name.into(),
            description: String::new(),
            default_agent: None,
            members: None,
        }
    }

    /// Its default agent.
    #[must_use]
    pub fn default_agent(mut self, agent: impl Into<String>) -> Self {
        self.default_agent = Some(agent.into());
        self
    }

    /// Its members.
    #[must_use]
    pub fn members<S: Into<String>>(mut self, agents: impl IntoIterator<Item = S>) -> Self {
        self.members = Some(agents.into_iter().map(Into::into).collect());
        self
    }

    /// Its description.
    #[must_use]
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }
}

/// The loop guards: each trips with a warning in the log and on record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardConfig {
    /// Collaborations one agent may start with the same target within
    /// `pair_window`; the next is refused (default 3: the 4th is refused).
    pub pair_limit: u32,
    /// See `pair_limit` (default 5 minutes).
    pub pair_window: Duration,
    /// Messages a thread may take within `burst_window`; the next pauses it
    /// (default 6).
    pub thread_burst: u32,
    /// See `thread_burst` (default 60 s).
    pub burst_window: Duration,
    /// How long a paused thread stays paused unless a person resumes it
    /// (default 5 minutes; `None`: until a person resumes it).
    pub cool_down: Option<Duration>,
    /// Threads a caller without authentication may open from one address
    /// within `anonymous_window` (default 5); the next is refused.
    pub anonymous_threads: u32,
    /// See `anonymous_threads` (default 60 s).
    pub anonymous_window: Duration,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            pair_limit: 3,
            pair_window: Duration::from_secs(5 * 60),
            thread_burst: 6,
            burst_window: Duration::from_secs(60),
            cool_down: Some(Duration::from_secs(5 * 60)),
            anonymous_threads: 5,
            anonymous_window: Duration::from_secs(60),
        }
    }
}

/// What observers keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserverConfig {
    /// Records per agent; the oldest goes first (default 50).
    pub max_per_agent: usize,
    /// How long a record is kept (default 24 hours).
    pub ttl: Duration,
}

impl Default for ObserverConfig {
    fn default() -> Self {
        ObserverConfig {
            max_per_agent: 50,
            ttl: Duration::from_secs(24 * 3600),
        }
    }
}

/// How delivery to an agent is retried, by the class of its failure.
///
/// Refusals (403, 404, an unknown agent, a protocol error) and an agent that
/// cannot be reached fail at once and are escalated; a busy agent (429) is
/// tried again after the wait it asked for; a server error (5xx) is tried
/// again after 1 s, 2 s and 4 s; an attempt that takes longer than
/// `timeout` is tried again `timeout_retries` times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryPolicy {
    /// Longest wait for one attempt (default 10 s).
    pub timeout: Duration,
    /// Retries after a timeout (default 3).
    pub timeout_retries: u32,
    /// Retries after a server error (default 3).
    pub server_error_retries: u32,
    /// Wait before the first retry after a server error; doubles each time
    /// (default 1 s).
    pub backoff: Duration,
    /// Retries after a busy answer (default 3).
    pub busy_retries: u32,
    /// Longest `Retry-After` honoured; a longer one is cut to this
    /// (default 5 minutes).
    pub max_retry_after: Duration,
    /// Wait after a busy answer without `Retry-After` (default 1 s).
    pub busy_default_wait: Duration,
}

impl Default for DeliveryPolicy {
    fn default() -> Self {
        DeliveryPolicy {
            timeout: Duration::from_secs(10),
            timeout_retries: 3,
            server_error_retries: 3,
            backoff: Duration::from_secs(1),
            busy_retries: 3,
            max_retry_after: Duration::from_secs(5 * 60),
            busy_default_wait: Duration::from_secs(1),
        }
    }
}

/// A whole hub's setup. Start from [`HubConfig::default`] (one channel,
/// `general`, the default) and change what you need.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// The channels.
    pub channels: Vec<ChannelConfig>,
    /// Where collaborations naming no channel go (`None`: they fail, saying
    /// how to set one).
    pub default_channel: Option<String>,
    /// Where agents may open threads (`None`: every channel but the
    /// operator's).
    pub thread_channels: Option<Vec<String>>,
    /// Where escalations are posted; a sink (its messages call no agent).
    pub operator_channel: Option<String>,
    /// Ids that are not agent names but stand for one (`default` → `alpha`).
    pub accounts: BTreeMap<String, String>,
    /// The loop guards.
    pub guards: GuardConfig,
    /// What observers keep.
    pub observers: ObserverConfig,
    /// How delivery retries.
    pub delivery: DeliveryPolicy,
    /// A second collaboration of the same agent with the same target within
    /// this continues the first one's thread (default 6 hours).
    pub reuse_window: Duration,
    /// Longest time `collaborate` waits for the target to take the message
    /// before it answers that delivery goes on in the background (default 2 s).
    pub collaborate_wait: Duration,
    /// The file the agents come from: an unknown target that is in it now
    /// was added after the start, and the error says to restart.
    pub config_file: Option<PathBuf>,
    /// Where the hub's time comes from (tests use the paused tokio clock).
    pub clock: Clock,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            channels: vec![ChannelConfig::new("general").description("Everyone, every agent.")],
            default_channel: Some("general".to_owned()),
            thread_channels: None,
            operator_channel: None,
            accounts: BTreeMap::new(),
            guards: GuardConfig::default(),
            observers: ObserverConfig::default(),
            delivery: DeliveryPolicy::default(),
            reuse_window: Duration::from_secs(6 * 3600),
            collaborate_wait: Duration::from_secs(2),
            config_file: None,
            clock: Clock::System,
        }
    }
}

#[derive(Deserialize)]
struct RawFile {
    hub: Option<Spanned<RawHub>>,
    // The gateway reads and checks the rest.
    #[serde(flatten)]
    _rest: BTreeMap<String, toml::Value>,
}

// The doc comments of the three raw types below are the descriptions of the
// `[hub]` table's JSON Schema (feature `schema`); `deny_unknown_fields` is
// its `additionalProperties: false`, so the schema refuses the keys the
// reader refuses. `Spanned` (for error positions) is left out of it.

/// The collaboration hub: channels where the gateway's agents and people
/// work together in threads, the loop guards, what observers keep.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "Hub", extend("required" = ["channels"]))
)]
#[serde(deny_unknown_fields)]
struct RawHub {
    /// Where a collaboration naming no channel opens its thread (a declared
    /// channel); without it such a collaboration fails, saying how to set one.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    default_channel: Option<Spanned<String>>,
    /// The channels where threads may open (declared channels; default:
    /// every channel but the operator's).
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    thread_channels: Option<Vec<Spanned<String>>>,
    /// Where escalations and loop-guard notices go: a sink that calls no
    /// agent, created if not declared.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    operator_channel: Option<Spanned<String>>,
    /// Other ids that stand for an agent: id = agent name.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(with = "BTreeMap<String, String>"))]
    accounts: BTreeMap<String, Spanned<String>>,
    /// The channels, by name (1 to 64 letters, digits, '-' or '_'); at least one.
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(
            with = "BTreeMap<String, RawChannel>",
            extend("minProperties" = 1, "propertyNames" = { "pattern": "^[A-Za-z0-9_-]{1,64}$" })
        )
    )]
    channels: BTreeMap<String, Spanned<RawChannel>>,
    /// The loop guards.
    guards: Option<RawGuards>,
    /// Hours within which a collaboration of the same pair continues the
    /// pair's thread (above 0, under a year; default 6).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<f64>", extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 8760))
    )]
    reuse_hours: Option<Spanned<f64>>,
    /// Messages an observing agent keeps a record of (1 to 10000; default 50).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<usize>", extend("minimum" = 1, "maximum" = 10000))
    )]
    observer_records: Option<Spanned<usize>>,
    /// Hours an observer keeps a record (above 0, under a year; default 24).
    #[cfg_attr(
        feature = "schema",
        schemars(with = "Option<f64>", extend("exclusiveMinimum" = 0, "exclusiveMaximum" = 8760))
    )]
    observer_ttl_hours: Option<Spanned<f64>>,
}

/// A channel of the hub.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "Channel")
)]
#[serde(deny_unknown_fields)]
struct RawChannel {
    /// What the channel is for.
    #[serde(default)]
    description: String,
    /// The agent that handles a person's message that mentions nobody.
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    default_agent: Option<Spanned<String>>,
    /// The agents in the channel (default: every agent).
    #[cfg_attr(feature = "schema", schemars(with = "Option<Vec<String>>"))]
    members: Option<Vec<Spanned<String>>>,
}

/// The loop guards: each trips with a warning in the log and on record.
#[derive(Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "Guards")
)]
#[serde(deny_unknown_fields)]
struct RawGuards {
    /// Collaborations of one pair per `pair_window_secs`; one more is
    /// refused (default 3).
    pair_limit: Option<u32>,
    /// The window of `pair_limit`, in seconds (default 300).
    pair_window_secs: Option<u64>,
    /// Messages a thread takes per `thread_burst_window_secs`; one more
    /// pauses it (default 6).
    thread_burst: Option<u32>,
    /// The window of `thread_burst`, in seconds (default 60).
    thread_burst_window_secs: Option<u64>,
    /// Seconds after which a paused thread resumes by itself; 0: only a
    /// person resumes it (default 300).
    cool_down_secs: Option<u64>,
    /// Threads one address may open without authentication per
    /// `anonymous_window_secs` (default 5).
    anonymous_threads: Option<u32>,
    /// The window of `anonymous_threads`, in seconds (default 60).
    anonymous_window_secs: Option<u64>,
}

impl RawGuards {
    /// Sets what the file sets; a cool-down of 0 is none.
    fn apply(&self, guards: &mut GuardConfig) {
        guards.pair_limit = self.pair_limit.unwrap_or(guards.pair_limit);
        if let Some(secs) = self.pair_window_secs {
            guards.pair_window = Duration::from_secs(secs);
        }
        guards.thread_burst = self.thread_burst.unwrap_or(guards.thread_burst);
        if let Some(secs) = self.thread_burst_window_secs {
            guards.burst_window = Duration::from_secs(secs);
        }
        if let Some(secs) = self.cool_down_secs {
            guards.cool_down = (secs > 0).then(|| Duration::from_secs(secs));
        }
        guards.anonymous_threads = self.anonymous_threads.unwrap_or(guards.anonymous_threads);
        if let Some(secs) = self.anonymous_window_secs {
            guards.anonymous_window = Duration::from_secs(secs);
        }
    }
}

/// Reads the `[hub]` table of one gateway file against its agents.
struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
    agents: &'a [String],
}

/// What a channel's name may be.
const CHANNEL_NAME_RULE: &str = "a channel name is 1 to 64 letters, digits, '-' or '_'";

impl Reader<'_> {
    fn error(&self, span: Range<usize>, field: &str, message: String) -> ConfigError {
        ConfigError::at(self.path, self.text, span, field, message)
    }

    /// `name`, if it is an agent of the gateway.
    fn agent(&self, name: &Spanned<String>, field: &str) -> Result<String, ConfigError> {
        if self.agents.iter().any(|a| a == name.get_ref()) {
            return Ok(name.get_ref().clone());
        }
        let message = format!(
            "no agent named {:?} (agents: {})",
            name.get_ref(),
            self.agents.join(", ")
        );
        Err(self.error(name.span(), field, message))
    }

    /// The channels, in the order of the file.
    fn channels(
        &self,
        raw: &BTreeMap<String, Spanned<RawChannel>>,
    ) -> Result<Vec<ChannelConfig>, ConfigError> {
        let mut channels = Vec::new();
        for (name, channel) in raw {
            channels.push((channel.span().start, self.channel(name, channel)?));
        }
        channels.sort_by_key(|(start, _)| *start);
        Ok(channels.into_iter().map(|(_, c)| c).collect())
    }

    fn channel(
        &self,
        name: &str,
        channel: &Spanned<RawChannel>,
    ) -> Result<ChannelConfig, ConfigError> {
        let field = format!("hub.channels.{name}");
        if !is_valid_channel_name(name) {
            return Err(self.error(channel.span(), &field, CHANNEL_NAME_RULE.to_owned()));
        }
        let raw = channel.get_ref();
        let default_agent = raw
            .default_agent
            .as_ref()
            .map(|a| self.agent(a, &format!("{field}.default_agent")))
            .transpose()?;
        let members = raw
            .members
            .as_ref()
            .map(|members| {
                members
                    .iter()
                    .map(|m| self.agent(m, &format!("{field}.members")))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        Ok(ChannelConfig {
            name: name.to_owned(),
            description: raw.description.clone(),
            default_agent,
            members,
        })
    }

    /// `name`, if it is one of the channels `names`.
    fn declared(
        &self,
        names: &[String],
        name: &Spanned<String>,
        field: &str,
    ) -> Result<String, ConfigError> {
        let wanted = name.get_ref();
        if names.iter().any(|c| c == wanted) {
            return Ok(wanted.clone());
        }
        let message = format!("no channel named {wanted:?}: add it as [hub.channels.{wanted}]");
        Err(self.error(name.span(), field, message))
    }

    /// The operator's channel, added to `channels` when they lack it: it
    /// need not be declared, as it only records.
    fn operator_channel(
        &self,
        name: Option<&Spanned<String>>,
        channels: &mut Vec<ChannelConfig>,
    ) -> Result<Option<String>, ConfigError> {
        let Some(name) = name else {
            return Ok(None);
        };
        let operator = name.get_ref();
        if channels.iter().any(|c| c.name == *operator) {
            return Ok(Some(operator.clone()));
        }
        if !is_valid_channel_name(operator) {
            let field = "hub.operator_channel";
            return Err(self.error(name.span(), field, CHANNEL_NAME_RULE.to_owned()));
        }
        channels.push(
            ChannelConfig::new(operator.clone())
                .description("Operator notices: escalations and loop guards.")
                .members(Vec::<String>::new()),
        );
        Ok(Some(operator.clone()))
    }

    /// The reuse window and what observers keep.
    fn limits(&self, hub: &RawHub, config: &mut HubConfig) -> Result<(), ConfigError> {
        if let Some(reuse) = &hub.reuse_hours {
            config.reuse_window = self.hours(reuse, "hub.reuse_hours")?;
        }
        if let Some(ttl) = &hub.observer_ttl_hours {
            config.observers.ttl = self.hours(ttl, "hub.observer_ttl_hours")?;
        }
        if let Some(records) = &hub.observer_records {
            if *records.get_ref() == 0 || *records.get_ref() > 10_000 {
                let message = "must be 1 to 10000".to_owned();
                return Err(self.error(records.span(), "hub.observer_records", message));
            }
            config.observers.max_per_agent = *records.get_ref();
        }
        Ok(())
    }

    fn hours(&self, value: &Spanned<f64>, field: &str) -> Result<Duration, ConfigError> {
        let hours = *value.get_ref();
        if hours.is_finite() && hours > 0.0 && hours < 24.0 * 365.0 {
            return Ok(Duration::from_secs_f64(hours * 3600.0));
        }
        let message = "must be a number of hours above 0 and under a year".to_owned();
        Err(self.error(value.span(), field, message))
    }
}

impl HubConfig {
    /// The `[hub]` table of the gateway file at `path` (contents `text`),
    /// checked against the gateway's `agents`; `None` when the file has no
    /// such table. Errors name the line, the column and the field.
    pub fn from_gateway_file(
        path: &Path,
        text: &str,
        agents: &[String],
    ) -> Result<Option<HubConfig>, ConfigError> {
        let reader = Reader { path, text, agents };
        let raw: RawFile = toml::from_str(text).map_err(|err| {
            let span = err.span().unwrap_or(0..0);
            reader.error(span, "", err.message().trim().to_owned())
        })?;
        let Some(hub) = raw.hub else {
            return Ok(None);
        };
        let hub_span = hub.span();
        let hub = hub.into_inner();
        let mut channels = reader.channels(&hub.channels)?;
        let names: Vec<String> = channels.iter().map(|c| c.name.clone()).collect();
        let default_channel = hub
            .default_channel
            .as_ref()
            .map(|c| reader.declared(&names, c, "hub.default_channel"))
            .transpose()?;
        let thread_channels = hub
            .thread_channels
            .as_ref()
            .map(|list| {
                list.iter()
                    .map(|c| reader.declared(&names, c, "hub.thread_channels"))
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let operator_channel =
            reader.operator_channel(hub.operator_channel.as_ref(), &mut channels)?;
        let mut accounts = BTreeMap::new();
        for (account, agent) in &hub.accounts {
            let agent = reader.agent(agent, &format!("hub.accounts.{account}"))?;
            accounts.insert(account.clone(), agent);
        }
        if channels.is_empty() {
            let message = "no channels: add a [hub.channels.NAME] table".to_owned();
            return Err(reader.error(hub_span, "hub.channels", message));
        }
        let mut config = HubConfig {
            channels,
            default_channel,
            thread_channels,
            operator_channel,
            accounts,
            config_file: Some(path.to_owned()),
            ..HubConfig::default()
        };
        if let Some(guards) = &hub.guards {
            guards.apply(&mut config.guards);
        }
        reader.limits(&hub, &mut config)?;
        Ok(Some(config))
    }

    /// The channel named `name`.
    pub fn channel(&self, name: &str) -> Option<&ChannelConfig> {
        self.channels.iter().find(|c| c.name == name)
    }

    /// Whether agents may open threads in `channel`.
    pub fn threads_allowed(&self, channel: &str) -> bool {
        if self.operator_channel.as_deref() == Some(channel) {
            return false;
        }
        match &self.thread_channels {
            Some(allowed) => allowed.iter().any(|c| c == channel),
            None => self.channel(channel).is_some(),
        }
    }

    /// Whether `channel` only records (the operator's channel).
    pub fn is_sink(&self, channel: &str) -> bool {
        self.operator_channel.as_deref() == Some(channel)
    }
}

/// Whether `name` can name a channel (and stand in a URL path as it is).
pub fn is_valid_channel_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agents() -> Vec<String> {
        ["alpha", "beta"].map(String::from).to_vec()
    }

    #[test]
    fn a_hub_table_gives_channels_guards_and_accounts() {
        let text = r#"
[agents.alpha]
kind = "rust"
executor = "echo"

[hub]
default_channel = "general"
thread_channels = ["general"]
operator_channel = "ops"
accounts = { default = "alpha" }
reuse_hours = 1.5

[hub.channels.general]
default_agent = "alpha"

[hub.channels.dev]
members = ["beta"]

[hub.guards]
pair_limit = 2
cool_down_secs = 0
"#;
        let config = HubConfig::from_gateway_file(Path::new("g.toml"), text, &agents())
            .unwrap()
            .unwrap();
        let names: Vec<_> = config.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["general", "dev", "ops"]);
        assert_eq!(config.default_channel.as_deref(), Some("general"));
        assert!(config.threads_allowed("general"));
        assert!(!config.threads_allowed("dev"));
        assert!(!config.threads_allowed("ops"));
        assert!(config.is_sink("ops"));
        assert_eq!(config.accounts["default"], "alpha");
        assert_eq!(config.guards.pair_limit, 2);
        assert_eq!(config.guards.cool_down, None);
        assert_eq!(config.reuse_window, Duration::from_secs(5400));
    }

    #[test]
    fn a_file_without_a_hub_table_has_no_hub() {
        let text = "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n";
        assert!(
            HubConfig::from_gateway_file(Path::new("g.toml"), text, &agents())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let text = "[hub]\ndefault_channel = \"nope\"\n\n[hub.channels.general]\ndefault_agent = \"alpha\"\n";
        let err = HubConfig::from_gateway_file(Path::new("g.toml"), text, &agents()).unwrap_err();
        assert_eq!((err.line, err.field.as_str()), (2, "hub.default_channel"));
        assert!(err.message.contains("[hub.channels.nope]"), "{err}");

        let text = "[hub.channels.general]\ndefault_agent = \"zeta\"\n";
        let err = HubConfig::from_gateway_file(Path::new("g.toml"), text, &agents()).unwrap_err();
        assert_eq!(
            (err.line, err.field.as_str()),
            (2, "hub.channels.general.default_agent")
        );
        assert!(err.message.contains("alpha, beta"), "{err}");

        let text = "[hub]\ncolour = 1\n";
        let err = HubConfig::from_gateway_file(Path::new("g.toml"), text, &agents()).unwrap_err();
        assert!(err.message.contains("colour"), "{err}");
    }
}
