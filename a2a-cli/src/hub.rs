//! `a2a hub`: the collaboration hub of a running gateway, through its HTTP
//! API (`/hub/api`, see `a2a_hub::http`) and its live feed of server-sent
//! events. Every command prints text for people, or with `--json` what the
//! API answered (`watch`: one JSON object per line).

use std::collections::HashMap;
use std::time::Duration;

use a2a_hub::{ChannelView, Collaboration, HubMessage, ThreadView};
use anyhow::{Context as _, bail};
use futures::StreamExt as _;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cli::{HubArgs, HubCollaborateArgs, HubCommand, HubPostArgs, HubServer};
use crate::output;

/// Runs one `a2a hub` command.
pub(crate) async fn run(args: HubArgs) -> anyhow::Result<()> {
    let api = Api::new(&args.server)?;
    let json = args.server.json;
    match args.command {
        HubCommand::Channels => channels(&api, json).await,
        HubCommand::Threads { channel } => threads(&api, channel.as_deref(), json).await,
        HubCommand::Messages {
            channel,
            thread,
            limit,
        } => messages(&api, channel, thread, limit, json).await,
        HubCommand::Post(post_args) => post(&api, post_args, json).await,
        HubCommand::Watch { channel } => watch(&api, channel.as_deref(), json).await,
        HubCommand::Resume { thread } => resume(&api, &thread, json).await,
        HubCommand::Collaborate(collaborate_args) => {
            collaborate(&api, collaborate_args, json).await
        }
    }
}

/// The hub's API at one server, with the caller's credentials.
struct Api {
    http: reqwest::Client,
    base: Url,
    headers: HeaderMap,
}

/// An API error body: `{"error": {"message"}}`.
#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorMessage,
}

#[derive(Deserialize)]
struct ErrorMessage {
    message: String,
    status: Option<Value>,
}

impl Api {
    fn new(server: &HubServer) -> anyhow::Result<Api> {
        let mut base = Url::parse(server.url.trim())
            .with_context(|| format!("--url {:?} is not a URL", server.url))?;
        if !matches!(base.scheme(), "http" | "https") {
            bail!("--url takes an http(s) URL, got {:?}", server.url);
        }
        // The base is the server's: `/hub/api/...` goes after its path.
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let mut headers = HeaderMap::new();
        for header in &server.headers {
            let (name, value) = header
                .split_once(':')
                .with_context(|| format!("header {header:?} is not `Name: value`"))?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .with_context(|| format!("header {header:?} has an invalid name"))?;
            let value = HeaderValue::from_str(value.trim())
                .with_context(|| format!("header {header:?} has an invalid value"))?;
            headers.append(name, value);
        }
        if let Some(token) = &server.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
                .context("--token holds characters a header cannot carry")?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        // A connect timeout only: `watch` streams without end.
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true);
        if let Some(path) = &server.tls_ca {
            // Read and checked as every other command does.
            let roots = a2a_client::RootCertificates::none().add_pem_file(path)?;
            let certificates = roots
                .added()
                .iter()
                .map(|c| reqwest::Certificate::from_der(c.as_ref()))
                .collect::<Result<Vec<_>, _>>()
                .with_context(|| format!("unusable CA certificate in {}", path.display()))?;
            builder = builder.tls_certs_merge(certificates);
        }
        let http = builder.build().context("cannot set up the HTTP client")?;
        Ok(Api {
            http,
            base,
            headers,
        })
    }

    /// The URL of `path` (under `/hub/api`) with the `query` pairs that
    /// have a value.
    fn url(&self, path: &str, query: &[(&str, Option<&str>)]) -> anyhow::Result<Url> {
        let mut url = self
            .base
            .join(&format!("hub/api/{path}"))
            .with_context(|| format!("cannot make a URL of {path:?}"))?;
        {
            let mut pairs = url.query_pairs_mut();
            for (key, value) in query {
                if let Some(value) = value {
                    pairs.append_pair(key, value);
                }
            }
        }
        if url.query() == Some("") {
            url.set_query(None);
        }
        Ok(url)
    }

    /// Sends a request; a refusal becomes the error the API gave.
    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&Value>,
    ) -> anyhow::Result<reqwest::Response> {
        let mut request = self
            .http
            .request(method, url.clone())
            .headers(self.headers.clone());
        if let Some(body) = body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(body)?);
        }
        let response = request.send().await.map_err(|err| {
            anyhow::Error::new(err).context(format!("cannot reach the hub at {}", self.base))
        })?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        match serde_json::from_str::<ErrorBody>(&text) {
            // The hub's own errors are `{"error": {"message"}}`; the A2A
            // binding's (a route it does not know) carry a `status` too.
            Ok(body) if body.error.status.is_none() => bail!("{}", body.error.message),
            Ok(body) if status != StatusCode::NOT_FOUND => {
                bail!("the hub answered {status}: {}", body.error.message)
            }
            _ => {}
        }
        if status == StatusCode::NOT_FOUND {
            bail!(
                "no collaboration hub at {} (HTTP 404 for {}): serve a gateway file with a \
                 [hub] table (`a2a serve --config FILE`)",
                self.base,
                url.path()
            );
        }
        let text = text.trim();
        match text.is_empty() {
            true => bail!("the hub answered {status}"),
            false => bail!("the hub answered {status}: {text}"),
        }
    }

    async fn get(&self, path: &str, query: &[(&str, Option<&str>)]) -> anyhow::Result<Value> {
        let url = self.url(path, query)?;
        let response = self.send(Method::GET, url, None).await?;
        read_json(response).await
    }

    async fn post(&self, path: &str, body: &Value) -> anyhow::Result<Value> {
        let url = self.url(path, &[])?;
        let response = self.send(Method::POST, url, Some(body)).await?;
        read_json(response).await
    }

    async fn channel_list(&self) -> anyhow::Result<(Value, Vec<ChannelView>)> {
        let answer = self.get("channels", &[]).await?;
        let channels = field(&answer, "channels")?;
        Ok((answer, channels))
    }

    async fn thread_list(&self, channel: Option<&str>) -> anyhow::Result<(Value, Vec<ThreadView>)> {
        let answer = self.get("threads", &[("channel", channel)]).await?;
        let threads = field(&answer, "threads")?;
        Ok((answer, threads))
    }

    /// The thread `id`, if the hub lists it.
    async fn thread(&self, id: &str) -> anyhow::Result<Option<ThreadView>> {
        let (_, threads) = self.thread_list(None).await?;
        Ok(threads.into_iter().find(|t| t.id == id))
    }
}

async fn read_json(response: reqwest::Response) -> anyhow::Result<Value> {
    let bytes = response
        .bytes()
        .await
        .context("the hub's answer was cut off")?;
    serde_json::from_slice(&bytes).context("the hub answered something that is not JSON")
}

/// `answer[name]` as a `T`.
fn field<T: serde::de::DeserializeOwned>(answer: &Value, name: &str) -> anyhow::Result<T> {
    let value = answer
        .get(name)
        .with_context(|| format!("the hub's answer has no {name:?}: {answer}"))?;
    serde_json::from_value(value.clone())
        .with_context(|| format!("the hub's {name:?} is not what this program reads"))
}

/// Rows of cells as columns, padded to the widest cell (in characters),
/// the last column unpadded.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i < last {
                let pad = widths[i] - cell.chars().count() + 2;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
        out
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn list_or_dash(names: &[String]) -> String {
    if names.is_empty() {
        "-".to_owned()
    } else {
        names.join(", ")
    }
}

async fn channels(api: &Api, json: bool) -> anyhow::Result<()> {
    let (answer, channels) = api.channel_list().await?;
    if json {
        return output::json(&answer);
    }
    let rows: Vec<Vec<String>> = channels
        .iter()
        .map(|c| {
            let mut flags = Vec::new();
            if c.is_default {
                flags.push("default");
            }
            if c.sink {
                flags.push("sink");
            }
            if c.threads_allowed {
                flags.push("threads");
            }
            vec![
                format!("#{}", c.name),
                c.default_agent.clone().unwrap_or_else(|| "-".to_owned()),
                list_or_dash(&c.members),
                if flags.is_empty() {
                    "-".to_owned()
                } else {
                    flags.join(", ")
                },
                c.description.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "CHANNEL",
                "DEFAULT AGENT",
                "MEMBERS",
                "FLAGS",
                "DESCRIPTION"
            ],
            &rows
        )
    );
    Ok(())
}

async fn threads(api: &Api, channel: Option<&str>, json: bool) -> anyhow::Result<()> {
    let (answer, threads) = api.thread_list(channel).await?;
    if json {
        return output::json(&answer);
    }
    if threads.is_empty() {
        match channel {
            Some(channel) => println!("No threads in #{channel}."),
            None => println!("No threads."),
        }
        return Ok(());
    }
    let rows: Vec<Vec<String>> = threads
        .iter()
        .map(|t| {
            vec![
                t.id.clone(),
                format!("#{}", t.channel),
                list_or_dash(&t.participants),
                t.messages.to_string(),
                if t.paused { "paused" } else { "open" }.to_owned(),
                t.title.clone(),
            ]
        })
        .collect();
    print!(
        "{}",
        table(
            &[
                "THREAD",
                "CHANNEL",
                "PARTICIPANTS",
                "MESSAGES",
                "STATE",
                "TITLE"
            ],
            &rows
        )
    );
    Ok(())
}

/// `#channel [thread title] from: text`, one message as people read it.
fn message_line(message: &HubMessage, titles: &HashMap<String, String>) -> String {
    let place = match &message.thread {
        Some(thread) => format!(
            "#{} [{}]",
            message.channel,
            titles.get(thread).map_or(thread.as_str(), String::as_str)
        ),
        None => format!("#{}", message.channel),
    };
    format!("{place} {}: {}", message.from.name(), message.text)
}

/// Who handles `message`, in words.
fn handled_by(message: &HubMessage) -> String {
    if message.handlers.is_empty() {
        return match message.unrouted.as_deref() {
            Some("paused") => {
                "no agent called: the thread is paused by a loop guard (a person resumes it, \
                 or it resumes after its cool-down)"
                    .to_owned()
            }
            Some("sink") => "no agent called: the channel only records (a sink)".to_owned(),
            Some(reason) => format!("no agent called ({reason})"),
            None => "no agent handles it: it mentions nobody (@name) and there is nobody to \
                     take it by default"
                .to_owned(),
        };
    }
    let roles: Vec<String> = message
        .handlers
        .iter()
        .map(|agent| {
            let role = match message.mentions.iter().position(|m| m == agent) {
                Some(0) => "primary",
                Some(_) => "secondary",
                None if message.thread.is_some() => "participant",
                None => "default agent",
            };
            format!("{agent} ({role})")
        })
        .collect();
    format!("handled by {}", roles.join(", "))
}

async fn messages(
    api: &Api,
    channel: Option<String>,
    thread: Option<String>,
    limit: usize,
    json: bool,
) -> anyhow::Result<()> {
    let channel = match (&channel, &thread) {
        (None, None) => {
            let (_, channels) = api.channel_list().await?;
            let default = channels.into_iter().find(|c| c.is_default).context(
                "the hub has no default channel: name one with --channel (see a2a hub channels)",
            )?;
            Some(default.name)
        }
        _ => channel,
    };
    let limit = limit.to_string();
    let answer = api
        .get(
            "messages",
            &[
                ("channel", channel.as_deref()),
                ("thread", thread.as_deref()),
                ("limit", Some(&limit)),
            ],
        )
        .await?;
    if json {
        return output::json(&answer);
    }
    let messages: Vec<HubMessage> = field(&answer, "messages")?;
    let titles = match &thread {
        Some(id) => api
            .thread(id)
            .await?
            .map(|t| HashMap::from([(t.id, t.title)]))
            .unwrap_or_default(),
        None => HashMap::new(),
    };
    for message in &messages {
        println!(
            "{} {}",
            message.t.format("%Y-%m-%d %H:%M:%S"),
            message_line(message, &titles)
        );
    }
    Ok(())
}

async fn post(api: &Api, args: HubPostArgs, json: bool) -> anyhow::Result<()> {
    let mut body = json!({ "text": args.text });
    for (key, value) in [
        ("channel", args.channel),
        ("thread", args.thread),
        ("from", args.from),
    ] {
        if let Some(value) = value {
            body[key] = Value::String(value);
        }
    }
    let answer = api.post("messages", &body).await?;
    if json {
        return output::json(&answer);
    }
    let message: HubMessage = field(&answer, "message")?;
    let mut titles = HashMap::new();
    if let Some(id) = &message.thread {
        if let Some(thread) = api.thread(id).await? {
            titles.insert(thread.id, thread.title);
        }
    }
    println!("{}", message_line(&message, &titles));
    println!("  message {}: {}", message.id, handled_by(&message));
    Ok(())
}

async fn collaborate(api: &Api, args: HubCollaborateArgs, json: bool) -> anyhow::Result<()> {
    let mut body = json!({ "target": args.target, "text": args.text });
    for (key, value) in [
        ("channel", args.channel),
        ("thread", args.thread),
        ("from", args.from),
    ] {
        if let Some(value) = value {
            body[key] = Value::String(value);
        }
    }
    let answer = api.post("collaborate", &body).await?;
    if json {
        return output::json(&answer);
    }
    let done: Collaboration = field(&answer, "collaboration")?;
    println!("{}", done.confirmation);
    println!(
        "  thread {} in #{} ({}); follow it: a2a hub messages --thread {}",
        done.thread,
        done.channel,
        if done.continued { "continued" } else { "new" },
        done.thread
    );
    Ok(())
}

async fn resume(api: &Api, thread: &str, json: bool) -> anyhow::Result<()> {
    let path = format!("threads/{}/resume", utf8_percent_encode(thread));
    let answer = api.post(&path, &json!({})).await?;
    if json {
        return output::json(&answer);
    }
    let thread: ThreadView = field(&answer, "thread")?;
    println!(
        "#{} [{}] resumed; participants: {}",
        thread.channel,
        thread.title,
        list_or_dash(&thread.participants)
    );
    Ok(())
}

/// `segment` as one path segment of a URL.
fn utf8_percent_encode(segment: &str) -> String {
    let mut out = String::new();
    for byte in segment.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte));
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// What the live feed says, as one line of text; `None` for a thread event
/// that changes nothing a person follows (its message count).
fn thread_line(thread: &ThreadView, before: Option<&ThreadView>) -> Option<String> {
    let place = format!("#{} [{}]", thread.channel, thread.title);
    let Some(before) = before else {
        return Some(format!(
            "{place} thread {} opened; participants: {}",
            thread.id,
            list_or_dash(&thread.participants)
        ));
    };
    let mut changes = Vec::new();
    let joined: Vec<String> = thread
        .participants
        .iter()
        .filter(|p| !before.participants.contains(p))
        .cloned()
        .collect();
    if !joined.is_empty() {
        changes.push(format!("{} joined", joined.join(", ")));
    }
    match (before.paused, thread.paused) {
        (false, true) => changes.push("paused by a loop guard".to_owned()),
        (true, false) => changes.push("resumed".to_owned()),
        _ => {}
    }
    (!changes.is_empty()).then(|| format!("{place} {}", changes.join("; ")))
}

/// One server-sent event: its `event` name and its `data`.
#[derive(Debug, Default)]
struct SseEvent {
    name: String,
    data: String,
}

/// Reads `event:` and `data:` lines off a byte stream (the hub's feed is
/// the plain WHATWG format: comments for keep-alive, a blank line ends an
/// event).
#[derive(Debug, Default)]
struct SseReader {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

/// The largest event `watch` takes (the API caps a message at 64 KiB).
const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

impl SseReader {
    fn push(&mut self, chunk: &[u8]) -> anyhow::Result<Vec<SseEvent>> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8_lossy(&line);
            if line.is_empty() {
                let event = std::mem::take(&mut self.current);
                if std::mem::take(&mut self.has_data) {
                    events.push(event);
                }
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            let (name, value) = line.split_once(':').unwrap_or((&line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match name {
                "event" => value.clone_into(&mut self.current.name),
                "data" => {
                    if self.has_data {
                        self.current.data.push('\n');
                    }
                    self.current.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        if self.buffer.len() + self.current.data.len() > MAX_EVENT_BYTES {
            bail!("the hub sent an event larger than {MAX_EVENT_BYTES} bytes");
        }
        Ok(events)
    }
}

async fn watch(api: &Api, channel: Option<&str>, json: bool) -> anyhow::Result<()> {
    // A channel the hub does not have is refused here, rather than
    // followed forever in silence; so is a hub that is not there.
    let (_, channels) = api.channel_list().await?;
    if let Some(name) = channel {
        if !channels.iter().any(|c| c.name == name) {
            let known: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
            bail!("no channel named {name:?} (channels: {})", known.join(", "));
        }
    }
    let (_, known) = api.thread_list(channel).await?;
    let threads: HashMap<String, ThreadView> =
        known.into_iter().map(|t| (t.id.clone(), t)).collect();
    let url = api.url("events", &[("channel", channel)])?;
    let response = api.send(Method::GET, url, None).await?;
    // On stderr, with --json too: once it is written, the feed is open and
    // nothing posted from now on is missed.
    let place = channel.map_or_else(|| "every channel".to_owned(), |c| format!("#{c}"));
    eprintln!("Following {place} at {} (Ctrl-C to stop).", api.base);
    // Until Ctrl-C, which ends the command as asked, or the feed ends.
    tokio::select! {
        followed = follow(api, response, threads, json) => followed,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

/// How long the live feed may say nothing, keep-alives included, before
/// `watch` gives up on the connection.
const FEED_SILENCE: Duration = Duration::from_secs(60);

/// Prints what the open feed `response` brings; `threads` are the threads
/// known so far, by id.
async fn follow(
    api: &Api,
    response: reqwest::Response,
    mut threads: HashMap<String, ThreadView>,
    json: bool,
) -> anyhow::Result<()> {
    let mut body = response.bytes_stream();
    let mut reader = SseReader::default();
    loop {
        // The hub sends a keep-alive every 15 s: silence means the
        // connection is gone without having been closed.
        let chunk = match tokio::time::timeout(FEED_SILENCE, body.next()).await {
            Ok(Some(chunk)) => chunk.context("the hub's live feed broke off")?,
            Ok(None) => bail!("the hub closed its live feed (the server stopped?)"),
            Err(_) => bail!(
                "the hub's live feed went silent for {} s (the connection is gone?)",
                FEED_SILENCE.as_secs()
            ),
        };
        for event in reader.push(&chunk)? {
            match event.name.as_str() {
                "message" => {
                    let message: HubMessage = serde_json::from_str(&event.data)
                        .context("the hub sent a message this program cannot read")?;
                    if json {
                        println!("{}", json!({ "message": message }));
                        continue;
                    }
                    if let Some(id) = &message.thread {
                        if !threads.contains_key(id) {
                            if let Some(thread) = api.thread(id).await? {
                                threads.insert(thread.id.clone(), thread);
                            }
                        }
                    }
                    let titles: HashMap<String, String> = message
                        .thread
                        .iter()
                        .filter_map(|id| threads.get(id).map(|t| (id.clone(), t.title.clone())))
                        .collect();
                    println!("{}", message_line(&message, &titles));
                }
                "thread" => {
                    let thread: ThreadView = serde_json::from_str(&event.data)
                        .context("the hub sent a thread this program cannot read")?;
                    if json {
                        println!("{}", json!({ "thread": thread }));
                    } else if let Some(line) = thread_line(&thread, threads.get(&thread.id)) {
                        println!("{line}");
                    }
                    threads.insert(thread.id.clone(), thread);
                }
                "lagged" => {
                    let missed: u64 = event.data.trim().parse().unwrap_or(0);
                    if json {
                        println!("{}", json!({ "lagged": missed }));
                    } else {
                        eprintln!(
                            "warning: {missed} event(s) missed (this reader fell behind); \
                             a2a hub messages shows them"
                        );
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_across_chunks_with_their_names() {
        let mut reader = SseReader::default();
        let mut events = Vec::new();
        for chunk in [
            &b"event: mess"[..],
            b"age\r\ndata: {\"a\":",
            b"1}\r\n\r\n: keep-alive\n\nevent: lagged\ndata: 3\n",
            b"\n",
        ] {
            events.extend(reader.push(chunk).unwrap_or_default());
        }
        let got: Vec<(&str, &str)> = events
            .iter()
            .map(|e| (e.name.as_str(), e.data.as_str()))
            .collect();
        assert_eq!(got, [("message", "{\"a\":1}"), ("lagged", "3")]);
    }

    #[test]
    fn tables_pad_by_characters() {
        let rows = vec![vec!["α → β".to_owned(), "x".to_owned()]];
        assert_eq!(table(&["A", "B"], &rows), "A      B\nα → β  x\n");
    }
}
