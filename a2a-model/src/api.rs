//! The chat completions API (`POST {base_url}/chat/completions`), as the
//! OpenAI-compatible endpoints share it: the request and answer types
//! (only the fields this agent uses; unknown fields are ignored, so the
//! answers of Ollama, vLLM or llama.cpp read as OpenAI's do), one request
//! with retries, and a streamed answer read from its server-sent events.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use serde::{Deserialize, Serialize};

use crate::config::ModelSettings;

/// One message of a chat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text; none for an assistant message that only calls tools.
    #[serde(default)]
    pub content: Option<String>,
    /// The tools an assistant message calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message of `role` saying `text`.
    pub fn text(role: &str, text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: role.to_owned(),
            content: Some(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A `tool` message answering call `id` with `content`.
    pub fn tool_result(id: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: "tool".to_owned(),
            content: Some(content.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(id.into()),
        }
    }

    /// The text, or nothing.
    pub fn content_str(&self) -> &str {
        self.content.as_deref().unwrap_or_default()
    }
}

/// A tool call the model makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, which its result names.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
}

fn function() -> String {
    "function".to_owned()
}

/// The function a tool call names, and its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object as text (as the model wrote it).
    #[serde(default)]
    pub arguments: String,
}

/// A tool as a request offers it to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The function.
    pub function: FunctionDefinition,
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDefinition {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its parameters as a JSON Schema.
    pub parameters: serde_json::Value,
}

/// Tokens a request used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Both.
    #[serde(default)]
    pub total_tokens: u64,
}

impl Usage {
    /// Adds `other` to this.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [ToolDefinition],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChatMessage,
}

#[derive(Deserialize)]
struct ChunkResponse {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The assistant's message: its text, its tool calls.
    pub message: ChatMessage,
    /// What it used, when the endpoint said.
    pub usage: Option<Usage>,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The endpoint answered with an error status.
    #[error("the model endpoint answered {status}: {message}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// What its body said (shortened).
        message: String,
    },
    /// No answer within the request timeout.
    #[error("the model endpoint did not answer within {0:?}")]
    Timeout(Duration),
    /// The connection failed or broke.
    #[error("the model endpoint could not be reached: {0}")]
    Connection(String),
    /// The streamed answer stopped before it finished.
    #[error("the model's streamed answer was cut off before it finished: {0}")]
    Cut(String),
    /// The answer could not be read.
    #[error("the model's answer could not be read: {0}")]
    Malformed(String),
}

impl ModelError {
    /// Whether another attempt may succeed: 429, a 5xx, a timeout, a lost
    /// connection (before any of the answer arrived).
    pub fn is_retryable(&self) -> bool {
        match self {
            ModelError::Status { status, .. } => *status == 429 || *status >= 500,
            ModelError::Timeout(_) | ModelError::Connection(_) => true,
            ModelError::Cut(_) | ModelError::Malformed(_) => false,
        }
    }
}

/// How the client waits between two attempts. The default sleeps on the
/// tokio clock; a test can record the waits instead.
pub type Sleep = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The wait before retry `attempt` (1 for the first retry): the server's
/// `Retry-After` when it sent one, else `backoff` doubled for each earlier
/// retry; never more than `max`.
pub fn retry_delay(
    attempt: u32,
    retry_after: Option<Duration>,
    backoff: Duration,
    max: Duration,
) -> Duration {
    let exponential = backoff.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    retry_after.unwrap_or(exponential).min(max)
}

/// Reads a `Retry-After` value: seconds, or an HTTP date (the wait until
/// then; a date past is no wait).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A chat completions client for one endpoint and model.
#[derive(Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    url: String,
    settings: Arc<ModelSettings>,
    sleep: Sleep,
}

impl std::fmt::Debug for ChatClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatClient")
            .field("url", &self.url)
            .field("model", &self.settings.model)
            .finish_non_exhaustive()
    }
}

/// What a request asks for, besides the settings.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The chat so far.
    pub messages: &'a [ChatMessage],
    /// The tools the model may call.
    pub tools: &'a [ToolDefinition],
    /// Whether to stream the answer.
    pub stream: bool,
}

impl ChatClient {
    /// A client for the endpoint and model of `settings`.
    pub fn new(settings: Arc<ModelSettings>) -> ChatClient {
        // No whole-request timeout here: a streamed answer may take minutes;
        // the client times the start and each gap instead.
        let http = reqwest::Client::builder()
            .connect_timeout(settings.request_timeout)
            .build()
            .unwrap_or_default();
        ChatClient {
            http,
            url: format!("{}/chat/completions", settings.base_url),
            settings,
            sleep: Arc::new(|wait| Box::pin(tokio::time::sleep(wait))),
        }
    }

    /// Waits between attempts with `sleep` instead of the tokio clock.
    #[must_use]
    pub fn with_sleep(mut self, sleep: Sleep) -> ChatClient {
        self.sleep = sleep;
        self
    }

    /// The settings.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// Sends `ask` (retrying as the settings say) and reads the answer;
    /// `on_text` gets each piece of a streamed answer's text as it arrives.
    /// Dropping the future drops the request and its connection.
    pub async fn complete(
        &self,
        ask: Ask<'_>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, ModelError> {
        let body = serde_json::to_vec(&ChatRequest {
            model: &self.settings.model,
            messages: ask.messages,
            tools: ask.tools,
            temperature: self.settings.temperature,
            max_tokens: self.settings.max_tokens,
            stream: ask.stream,
            stream_options: ask.stream.then_some(StreamOptions {
                include_usage: true,
            }),
        })
        .map_err(|err| ModelError::Malformed(err.to_string()))?;
        let body = bytes::Bytes::from(body);
        let mut attempt = 0;
        loop {
            let outcome = self.send(body.clone()).await;
            let (error, retry_after) = match outcome {
                Ok(response) => match ask.stream {
                    true => return self.read_stream(response, on_text).await,
                    false => return self.read_whole(response).await,
                },
                Err(failure) => failure,
            };
            attempt += 1;
            if !error.is_retryable() || attempt > self.settings.retries {
                return Err(error);
            }
            let wait = retry_delay(
                attempt,
                retry_after,
                self.settings.backoff,
                self.settings.max_backoff,
            );
            tracing::info!(model = %self.settings.model, attempt, ?wait, error = %error, "retrying the model request");
            (self.sleep)(wait).await;
        }
    }

    /// One attempt, up to the answer's head: the response when it is a
    /// success, else the error and the server's `Retry-After`.
    async fn send(
        &self,
        body: bytes::Bytes,
    ) -> Result<reqwest::Response, (ModelError, Option<Duration>)> {
        let mut request = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(key) = &self.settings.api_key {
            request = request.bearer_auth(key);
        }
        let limit = self.settings.request_timeout;
        let response = match tokio::time::timeout(limit, request.send()).await {
            Err(_) => return Err((ModelError::Timeout(limit), None)),
            Ok(Err(err)) => return Err((ModelError::Connection(err.to_string()), None)),
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, std::time::SystemTime::now()));
        // The body says why; a slow or huge one is not worth waiting for.
        let text = match tokio::time::timeout(limit, response.bytes()).await {
            Ok(Ok(bytes)) => error_message(&bytes),
            _ => String::new(),
        };
        Err((
            ModelError::Status {
                status: status.as_u16(),
                message: text,
            },
            retry_after,
        ))
    }

    async fn read_whole(&self, response: reqwest::Response) -> Result<Completion, ModelError> {
        let limit = self.settings.request_timeout;
        let bytes = match tokio::time::timeout(limit, response.bytes()).await {
            Err(_) => return Err(ModelError::Timeout(limit)),
            Ok(Err(err)) => return Err(ModelError::Connection(err.to_string())),
            Ok(Ok(bytes)) => bytes,
        };
        let answer: ChatResponse =
            serde_json::from_slice(&bytes).map_err(|err| ModelError::Malformed(err.to_string()))?;
        let message = answer
            .choices
            .into_iter()
            .next()
            .map(|c| c.message)
            .ok_or_else(|| ModelError::Malformed("the answer has no choices".into()))?;
        Ok(Completion {
            message,
            usage: answer.usage,
        })
    }

    async fn read_stream(
        &self,
        response: reqwest::Response,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Completion, ModelError> {
        let limit = self.settings.request_timeout;
        let mut body = response.bytes_stream();
        let mut reader = StreamReader::default();
        loop {
            let chunk = match tokio::time::timeout(limit, body.next()).await {
                Err(_) => return Err(ModelError::Cut(format!("nothing for {limit:?}"))),
                Ok(None) => return reader.finish(),
                Ok(Some(Err(err))) => return Err(ModelError::Cut(err.to_string())),
                Ok(Some(Ok(chunk))) => chunk,
            };
            if reader.feed(&chunk, on_text)? {
                return reader.finish();
            }
        }
    }
}

/// What an error body says: OpenAI's `{"error": {"message": ...}}`, or the
/// start of the text.
fn error_message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Wrapped {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        message: String,
    }
    if let Ok(wrapped) = serde_json::from_slice::<Wrapped>(body) {
        return wrapped.error.message;
    }
    String::from_utf8_lossy(body).chars().take(300).collect()
}

/// A streamed answer as it arrives: its lines cut out of the chunks, its
/// text and tool calls put together.
#[derive(Debug, Default)]
pub struct StreamReader {
    line: Vec<u8>,
    text: String,
    calls: Vec<ToolCall>,
    usage: Option<Usage>,
    finished: bool,
    done: bool,
}

/// The most bytes one line of a stream may have (a line is one event's
/// data): more is not an answer this agent can use.
const MAX_LINE: usize = 4 << 20;

impl StreamReader {
    /// Reads `chunk`; `on_text` gets each piece of text. Returns whether the
    /// stream said it is done (`data: [DONE]`).
    pub fn feed(
        &mut self,
        chunk: &[u8],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<bool, ModelError> {
        for &byte in chunk {
            if byte != b'\n' {
                if self.line.len() >= MAX_LINE {
                    return Err(ModelError::Malformed("a stream line is too long".into()));
                }
                self.line.push(byte);
                continue;
            }
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, on_text)?;
            if self.done {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn line_done(
        &mut self,
        line: &[u8],
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), ModelError> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Comments, event names, ids and blank lines carry nothing here:
        // every event of this API is one `data:` line.
        let Some(data) = line.strip_prefix(b"data:") else {
            return Ok(());
        };
        let data = data.strip_prefix(b" ").unwrap_or(data);
        if data == b"[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: ChunkResponse =
            serde_json::from_slice(data).map_err(|err| ModelError::Malformed(err.to_string()))?;
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage);
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                on_text(&text);
                self.text.push_str(&text);
            }
            for delta in choice.delta.tool_calls {
                // Indexes come in order; one far past the end is nonsense.
                if delta.index > self.calls.len() || delta.index > 128 {
                    return Err(ModelError::Malformed(format!(
                        "tool call index {} out of order",
                        delta.index
                    )));
                }
                if delta.index == self.calls.len() {
                    self.calls.push(ToolCall {
                        id: String::new(),
                        kind: function(),
                        function: FunctionCall {
                            name: String::new(),
                            arguments: String::new(),
                        },
                    });
                }
                let call = &mut self.calls[delta.index];
                if let Some(id) = delta.id {
                    call.id = id;
                }
                if let Some(function) = delta.function {
                    if let Some(name) = function.name {
                        call.function.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        call.function.arguments.push_str(&arguments);
                    }
                }
            }
            if choice.finish_reason.is_some() {
                self.finished = true;
            }
        }
        Ok(())
    }

    /// The answer, once the stream ended: an error when it ended before the
    /// model finished (no `[DONE]`, no finish reason).
    pub fn finish(self) -> Result<Completion, ModelError> {
        if !self.done && !self.finished {
            return Err(ModelError::Cut(
                "the stream ended before the model finished".into(),
            ));
        }
        Ok(Completion {
            message: ChatMessage {
                role: "assistant".into(),
                content: (!self.text.is_empty() || self.calls.is_empty()).then_some(self.text),
                tool_calls: self.calls,
                tool_call_id: None,
            },
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_wins_and_backoff_doubles_up_to_the_cap() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(60);
        assert_eq!(retry_delay(1, None, base, max), base);
        assert_eq!(retry_delay(3, None, base, max), Duration::from_secs(2));
        assert_eq!(retry_delay(40, None, base, max), max);
        let after = Some(Duration::from_secs(7));
        assert_eq!(retry_delay(1, after, base, max), Duration::from_secs(7));
        assert_eq!(
            retry_delay(1, Some(Duration::from_secs(600)), base, max),
            max
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after(" 3 ", now), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn a_stream_puts_text_and_tool_calls_together_across_chunks() {
        let events = concat!(
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
            ": a comment\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"echo\",\"arguments\":\"{\\\"mes\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"sage\\\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\r\n\r\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n",
            "data: [DONE]\n\n",
        );
        let mut reader = StreamReader::default();
        let mut seen = String::new();
        let mut done = false;
        // Byte by byte: a line may be split anywhere.
        for byte in events.as_bytes().chunks(7) {
            done = reader.feed(byte, &mut |t| seen.push_str(t)).unwrap();
            if done {
                break;
            }
        }
        assert!(done);
        let completion = reader.finish().unwrap();
        assert_eq!(seen, "Hello");
        assert_eq!(completion.message.content.as_deref(), Some("Hello"));
        assert_eq!(completion.message.tool_calls[0].function.name, "echo");
        assert_eq!(
            completion.message.tool_calls[0].function.arguments,
            "{\"message\":1}"
        );
        assert_eq!(completion.usage.unwrap().total_tokens, 5);
    }

    #[test]
    fn a_stream_without_an_end_is_cut_and_garbage_is_an_error() {
        let mut reader = StreamReader::default();
        reader
            .feed(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n",
                &mut |_| {},
            )
            .unwrap();
        assert!(matches!(reader.finish(), Err(ModelError::Cut(_))));
        let mut reader = StreamReader::default();
        assert!(reader.feed(b"data: {nope\n", &mut |_| {}).is_err());
        let mut reader = StreamReader::default();
        let far = b"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":99999}]}}]}\n";
        assert!(reader.feed(far, &mut |_| {}).is_err());
    }
}
