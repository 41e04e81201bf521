//! `a2a hub`: the collaboration hub of a running gateway, through its HTTP
//! API (`/hub/api`, called with [`a2a_hub::api::HubApiClient`]) and its live
//! feed. Every command prints text for people, or with `--json` what the
//! API answered (`watch`: one JSON object per line).

use std::collections::HashMap;

use a2a_hub::api::{
    ChannelList, CollaborateRequest, CollaborationAnswer, FeedEvent, HubApiClient, HubFeed,
    MessageList, MessagesQuery, PostMessage, PostedMessage, ResumedThread, ThreadList,
};
use a2a_hub::{DeliveryState, DeliveryStatus, HubMessage, ThreadView};
use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::json;

use crate::cli::{HubArgs, HubCollaborateArgs, HubCommand, HubPostArgs, HubServer};
use crate::output;
use crate::output::{out, outln};

/// Runs one `a2a hub` command.
pub(crate) async fn run(args: HubArgs) -> anyhow::Result<()> {
    let api = client(&args.server)?;
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
        HubCommand::Resume { thread, data_dir } => {
            let api = match &args.server.token {
                Some(_) => api,
                None => with_operator_token(&args.server, &data_dir)?.unwrap_or(api),
            };
            resume(&api, &thread, json).await
        }
        HubCommand::Collaborate(collaborate_args) => {
            collaborate(&api, collaborate_args, json).await
        }
    }
}

/// The hub's API at the server the arguments name, with their credentials.
fn client(server: &HubServer) -> anyhow::Result<HubApiClient> {
    let mut builder = HubApiClient::builder(&server.url);
    for header in &server.headers {
        let (name, value) = header
            .split_once(':')
            .with_context(|| format!("header {header:?} is not `Name: value`"))?;
        builder = builder.header(name, value);
    }
    if let Some(token) = &server.token {
        builder = builder.bearer_token(token);
    }
    if let Some(path) = &server.tls_ca {
        // Read and checked as every other command does.
        let roots = a2a_client::RootCertificates::none().add_pem_file(path)?;
        builder = builder.root_certificates(roots);
    }
    Ok(builder.build()?)
}

/// The hub's API with the operator token of the server whose data directory
/// is `data_dir`, when it holds one (`None`: it does not, and the call goes
/// as it is, for an authenticating server to judge).
fn with_operator_token(
    server: &HubServer,
    data_dir: &std::path::Path,
) -> anyhow::Result<Option<HubApiClient>> {
    let file = data_dir.join("hub").join(a2a_hub::OPERATOR_TOKEN_FILE);
    let token = match std::fs::read_to_string(&file) {
        Ok(token) => token.trim().to_owned(),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(anyhow::anyhow!(
                "cannot read the operator token in {}: {err}",
                file.display()
            ));
        }
    };
    let with_token = HubServer {
        token: Some(token),
        ..server.clone()
    };
    client(&with_token).map(Some)
}

/// Prints what the API answered, as JSON (through a `serde_json::Value`:
/// its keys sorted, as the API sends them).
fn print_answer(answer: &impl Serialize) -> anyhow::Result<()> {
    output::json(&serde_json::to_value(answer)?)
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

async fn channels(api: &HubApiClient, json: bool) -> anyhow::Result<()> {
    let channels = api.channels().await?;
    if json {
        return print_answer(&ChannelList { channels });
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
    out!(
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
    )?;
    Ok(())
}

async fn threads(api: &HubApiClient, channel: Option<&str>, json: bool) -> anyhow::Result<()> {
    let threads = api.threads(channel).await?;
    if json {
        return print_answer(&ThreadList {
            threads,
            next_cursor: None,
        });
    }
    if threads.is_empty() {
        match channel {
            Some(channel) => outln!("No threads in #{channel}.")?,
            None => outln!("No threads.")?,
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
    out!(
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
    )?;
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

/// Whom `message` goes to, in words: `delivering to beta (primary)`, or
/// why nobody.
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
    format!("delivering to {}", roles.join(", "))
}

/// Where each delivery of `message` stands, one line each.
fn delivery_lines(message: &HubMessage) -> Vec<String> {
    message
        .deliveries
        .iter()
        .map(|d| format!("  → {}", d.describe()))
        .collect()
}

async fn messages(
    api: &HubApiClient,
    channel: Option<String>,
    thread: Option<String>,
    limit: usize,
    json: bool,
) -> anyhow::Result<()> {
    let channel = match (&channel, &thread) {
        (None, None) => {
            let channels = api.channels().await?;
            let default = channels.into_iter().find(|c| c.is_default).context(
                "the hub has no default channel: name one with --channel (see a2a hub channels)",
            )?;
            Some(default.name)
        }
        _ => channel,
    };
    let query = MessagesQuery {
        channel,
        thread: thread.clone(),
        limit: Some(limit),
    };
    let messages = api.messages(&query).await?;
    if json {
        return print_answer(&MessageList { messages });
    }
    let titles = match &thread {
        Some(id) => api
            .thread(id)
            .await?
            .map(|t| HashMap::from([(t.id, t.title)]))
            .unwrap_or_default(),
        None => HashMap::new(),
    };
    for message in &messages {
        outln!(
            "{} {}",
            message.t.format("%Y-%m-%d %H:%M:%S"),
            message_line(message, &titles)
        )?;
        for line in delivery_lines(message) {
            outln!("{line}")?;
        }
    }
    Ok(())
}

async fn post(api: &HubApiClient, args: HubPostArgs, json: bool) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    let wait = match (args.wait, args.no_wait) {
        (true, _) => true,
        (_, true) => false,
        _ => !json && std::io::stdout().is_terminal(),
    };
    let request = PostMessage {
        text: args.text,
        channel: args.channel,
        thread: args.thread,
        from: args.from,
    };
    // Opened first, so no outcome comes before it.
    let feed = match wait {
        true => Some(api.feed(None).await?),
        false => None,
    };
    let message = api.post(&request).await?;
    if json && !wait {
        return print_answer(&PostedMessage { message });
    }
    if json {
        outln!("{}", json!({ "message": message }))?;
    } else {
        let mut titles = HashMap::new();
        if let Some(id) = &message.thread {
            if let Some(thread) = api.thread(id).await? {
                titles.insert(thread.id, thread.title);
            }
        }
        outln!("{}", message_line(&message, &titles))?;
        outln!("  message {}: {}", message.id, handled_by(&message))?;
    }
    match feed {
        Some(feed) if !message.handlers.is_empty() => {
            tokio::select! {
                waited = wait_for_outcomes(api, feed, &message, json) => waited,
                _ = tokio::signal::ctrl_c() => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// Prints how each delivery of `message` moves on, and the answers, as the
/// feed brings them; returns once every delivery is settled (the hub posts
/// an agent's answer before it shows its delivery settled). A failed
/// delivery is an error, with its reason.
async fn wait_for_outcomes(
    api: &HubApiClient,
    mut feed: HubFeed,
    message: &HubMessage,
    json: bool,
) -> anyhow::Result<()> {
    let mut waiting = Outcomes {
        json,
        states: HashMap::new(),
        printed: std::collections::HashSet::new(),
    };
    while !waiting.settled(message) {
        match feed.next().await? {
            FeedEvent::Delivery(update) if update.id == message.id => {
                waiting.statuses(update.deliveries)?;
            }
            FeedEvent::Message(reply) if reply.reply_to.as_deref() == Some(&message.id) => {
                waiting.answer(&reply)?;
            }
            FeedEvent::Lagged(_) => {
                // Events were missed: what the record says now.
                let query = MessagesQuery {
                    channel: Some(message.channel.clone()),
                    thread: message.thread.clone(),
                    limit: Some(a2a_hub::MAX_PAGE),
                };
                for known in api.messages(&query).await? {
                    if known.id == message.id {
                        waiting.statuses(known.deliveries)?;
                    } else if known.reply_to.as_deref() == Some(&message.id) {
                        waiting.answer(&known)?;
                    }
                }
            }
            _ => {}
        }
    }
    let failed: Vec<String> = waiting
        .states
        .values()
        .filter(|s| matches!(s.state, DeliveryState::Failed | DeliveryState::Abandoned))
        .map(DeliveryStatus::describe)
        .collect();
    if !failed.is_empty() {
        bail!("not delivered: {}", failed.join("; "));
    }
    Ok(())
}

/// What `a2a hub post --wait` has seen of a message's deliveries.
struct Outcomes {
    json: bool,
    states: HashMap<String, DeliveryStatus>,
    /// The answers printed, by message id.
    printed: std::collections::HashSet<String>,
}

impl Outcomes {
    fn settled(&self, message: &HubMessage) -> bool {
        message
            .handlers
            .iter()
            .all(|agent| self.states.get(agent).is_some_and(|s| s.state.is_settled()))
    }

    /// Prints the statuses that changed.
    fn statuses(&mut self, statuses: Vec<DeliveryStatus>) -> anyhow::Result<()> {
        for status in statuses {
            let known = self.states.get(&status.agent);
            if known.is_some_and(|k| k.state == status.state && k.attempt == status.attempt) {
                continue;
            }
            if self.json {
                outln!("{}", json!({ "delivery": status }))?;
            } else {
                outln!("  → {}", status.describe())?;
            }
            self.states.insert(status.agent.clone(), status);
        }
        Ok(())
    }

    /// Prints an answer once.
    fn answer(&mut self, reply: &HubMessage) -> anyhow::Result<()> {
        if !self.printed.insert(reply.id.clone()) {
            return Ok(());
        }
        if self.json {
            outln!("{}", json!({ "message": reply }))
        } else {
            outln!("{}: {}", reply.from.name(), reply.text)
        }
    }
}

async fn collaborate(
    api: &HubApiClient,
    args: HubCollaborateArgs,
    json: bool,
) -> anyhow::Result<()> {
    let request = CollaborateRequest {
        target: args.target,
        text: args.text,
        thread: args.thread,
        channel: args.channel,
        from: args.from,
    };
    let collaboration = api.collaborate(&request).await?;
    if json {
        return print_answer(&CollaborationAnswer { collaboration });
    }
    let done = collaboration;
    outln!("{}", done.confirmation)?;
    outln!(
        "  thread {} in #{} ({}); follow it: a2a hub messages --thread {}",
        done.thread,
        done.channel,
        if done.continued { "continued" } else { "new" },
        done.thread
    )?;
    Ok(())
}

async fn resume(api: &HubApiClient, thread: &str, json: bool) -> anyhow::Result<()> {
    let thread = api.resume(thread).await?;
    if json {
        return print_answer(&ResumedThread { thread });
    }
    outln!(
        "#{} [{}] resumed; participants: {}",
        thread.channel,
        thread.title,
        list_or_dash(&thread.participants)
    )?;
    Ok(())
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

async fn watch(api: &HubApiClient, channel: Option<&str>, json: bool) -> anyhow::Result<()> {
    // A channel the hub does not have is refused here, rather than
    // followed forever in silence; so is a hub that is not there.
    let channels = api.channels().await?;
    if let Some(name) = channel {
        if !channels.iter().any(|c| c.name == name) {
            let known: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
            bail!("no channel named {name:?} (channels: {})", known.join(", "));
        }
    }
    let known = api.threads(channel).await?;
    let threads: HashMap<String, ThreadView> =
        known.into_iter().map(|t| (t.id.clone(), t)).collect();
    let feed = api.feed(channel).await?;
    // On stderr, with --json too: once it is written, the feed is open and
    // nothing posted from now on is missed.
    let place = channel.map_or_else(|| "every channel".to_owned(), |c| format!("#{c}"));
    eprintln!("Following {place} at {} (Ctrl-C to stop).", api.base_url());
    // Until Ctrl-C, which ends the command as asked, or the feed ends.
    tokio::select! {
        followed = follow(api, feed, threads, json) => followed,
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

/// Prints what the open `feed` brings; `threads` are the threads known so
/// far, by id.
async fn follow(
    api: &HubApiClient,
    mut feed: HubFeed,
    mut threads: HashMap<String, ThreadView>,
    json: bool,
) -> anyhow::Result<()> {
    loop {
        match feed.next().await? {
            FeedEvent::Message(message) if json => outln!("{}", json!({ "message": message }))?,
            FeedEvent::Message(message) => {
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
                outln!("{}", message_line(&message, &titles))?;
            }
            FeedEvent::Thread(thread) => {
                if json {
                    outln!("{}", json!({ "thread": thread }))?;
                } else if let Some(line) = thread_line(&thread, threads.get(&thread.id)) {
                    outln!("{line}")?;
                }
                threads.insert(thread.id.clone(), thread);
            }
            FeedEvent::Delivery(message) if json => outln!("{}", json!({ "delivery": message }))?,
            FeedEvent::Delivery(message) => {
                let title = message
                    .thread
                    .as_ref()
                    .and_then(|id| threads.get(id))
                    .map(|t| format!("#{} [{}]", message.channel, t.title))
                    .unwrap_or_else(|| format!("#{}", message.channel));
                for status in &message.deliveries {
                    outln!("{title} message {}: {}", message.id, status.describe())?;
                }
            }
            FeedEvent::Lagged(missed) if json => outln!("{}", json!({ "lagged": missed }))?,
            FeedEvent::Lagged(missed) => eprintln!(
                "warning: {missed} event(s) missed (this reader fell behind); \
                 a2a hub messages shows them"
            ),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_pad_by_characters() {
        let rows = vec![vec!["α → β".to_owned(), "x".to_owned()]];
        assert_eq!(table(&["A", "B"], &rows), "A      B\nα → β  x\n");
    }
}
