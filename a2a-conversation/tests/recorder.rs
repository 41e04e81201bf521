//! What a server's recorder writes: each request, the agent's status
//! messages, artifacts (whole, once) and answers, chained after the request;
//! a refused request as an error line; an agent caller's name and line.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use a2a_conversation::{
    ChainTip, ConversationLog, EntryType, HandlerBuilderExt as _, LogConfig, LogEntry, LogReader,
    metadata_keys, parts_content,
};
use a2a_core::{
    A2aError, AgentCard, Artifact, ErrorKind, Message, Method, Part, SendMessageRequest,
    SendMessageResponse, TaskState,
};
use a2a_server::{
    AgentExecutor, CallContext, DefaultRequestHandler, EventQueue, RequestContext, RequestHandler,
    ServiceParams, User,
};

/// Replies to "reply", fails "fail", and otherwise works (with a word on
/// the way), writes an artifact in two chunks and completes. Notes the
/// chain tip it finds.
#[derive(Clone, Default)]
struct Talker {
    tips: Arc<Mutex<Vec<Option<String>>>>,
}

#[async_trait::async_trait]
impl AgentExecutor for Talker {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let tip = ctx.extensions.get::<ChainTip>().and_then(ChainTip::get);
        self.tips.lock().unwrap().push(tip);
        match ctx.message.text().as_str() {
            "reply" => events.reply(vec![Part::text("hi back")]).await,
            "fail" => events.fail("broken").await,
            _ => {
                let on_it = events.agent_message(vec![Part::text("on it")]);
                events.status(TaskState::Working, Some(on_it)).await?;
                let first = Artifact::text("part 1").with_id("a1");
                events.append_artifact(first, false).await?;
                let second = Artifact::text("part 2").with_id("a1");
                events.append_artifact(second, true).await?;
                events.complete_with_text("done").await
            }
        }
    }
}

fn ann() -> CallContext {
    let mut call = CallContext::new(Method::SendMessage, ServiceParams::new());
    call.user = User::authenticated("ann");
    call
}

fn keys(entry: &LogEntry) -> Vec<&str> {
    entry.metadata.keys().map(String::as_str).collect()
}

fn meta<'a>(entry: &'a LogEntry, key: &str) -> &'a str {
    entry.metadata[key].as_str().unwrap()
}

#[tokio::test]
async fn a_server_logs_each_exchange_as_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    let agent = Talker::default();
    let handler = DefaultRequestHandler::builder(agent.clone(), AgentCard::new("talker", "talks"))
        .conversation_log(log.clone())
        .build();

    let work = SendMessageRequest::new(Message::user_text("work"));
    let SendMessageResponse::Task(task) = handler.send_message(&ann(), work).await.unwrap() else {
        panic!("expected a task");
    };
    let fail = SendMessageRequest::new(Message::user_text("fail"));
    handler.send_message(&ann(), fail).await.unwrap();
    let mut unknown = Message::user_text("follow-up");
    unknown.task_id = "no-such-task".into();
    let err = handler
        .send_message(&ann(), SendMessageRequest::new(unknown.clone()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TaskNotFound);
    let mut from_alpha = Message::user_text("reply");
    from_alpha.metadata = Some(
        [
            (metadata_keys::FROM_AGENT.to_owned(), "alpha".into()),
            (
                metadata_keys::LOG_PARENT.to_owned(),
                "msg_alphas_line".into(),
            ),
        ]
        .into_iter()
        .collect(),
    );
    handler
        .send_message(&ann(), SendMessageRequest::new(from_alpha.clone()))
        .await
        .unwrap();
    log.flush().await.unwrap();

    let lines = LogReader::new(dir.path()).tail(100).unwrap();
    let summary: Vec<(EntryType, &str, Option<&str>)> = lines
        .iter()
        .map(|l| (l.kind, l.from_agent.as_str(), l.to_agent.as_deref()))
        .collect();
    use EntryType::{Error, Request, Response, State};
    assert_eq!(
        summary,
        [
            (Request, "ann", Some("talker")),
            (State, "talker", Some("ann")),
            (Response, "talker", Some("ann")),
            (Response, "talker", Some("ann")),
            (Request, "ann", Some("talker")),
            (Error, "talker", Some("ann")),
            (Error, "talker", Some("ann")),
            (Request, "alpha", Some("talker")),
            (Response, "talker", Some("alpha")),
        ]
    );

    // The working exchange: the request, the word on the way, the artifact
    // whole, the answer; each the next one's parent; the agent saw the
    // request's line as its chain tip.
    let [request, state, artifact, done] = &lines[..4] else {
        unreachable!()
    };
    assert_eq!(request.content, "work");
    assert_eq!(request.parent_id, None);
    assert_eq!(keys(request), ["contextId", "messageId", "taskId"]);
    assert_eq!(meta(request, "taskId"), task.id);
    assert_eq!(meta(request, "contextId"), task.context_id);
    assert_eq!(agent.tips.lock().unwrap()[0].as_deref(), Some(&*request.id));
    assert_eq!(state.content, "on it");
    assert_eq!(keys(state), ["contextId", "messageId", "state", "taskId"]);
    assert_eq!(meta(state, "state"), "TASK_STATE_WORKING");
    assert_eq!(artifact.content, parts_content(&task.artifacts[0].parts));
    assert_eq!(keys(artifact), ["artifactId", "contextId", "taskId"]);
    assert_eq!(meta(artifact, "artifactId"), "a1");
    assert_eq!(done.content, "done");
    assert_eq!(meta(done, "state"), "TASK_STATE_COMPLETED");
    for pair in lines[..4].windows(2) {
        assert_eq!(pair[1].parent_id.as_deref(), Some(&*pair[0].id));
        assert_eq!(meta(&pair[1], "taskId"), task.id);
    }

    // A failure is an error line, chained after its request.
    let [request, failed] = &lines[4..6] else {
        unreachable!()
    };
    assert_eq!(failed.content, "broken");
    assert_eq!(meta(failed, "state"), "TASK_STATE_FAILED");
    assert_eq!(failed.parent_id.as_deref(), Some(&*request.id));

    // A refused request: one error line, of its own, with the code and the
    // ids as the caller sent them.
    let refused = &lines[6];
    assert_eq!(refused.content, err.message());
    assert_eq!(refused.parent_id, None);
    assert_eq!(keys(refused), ["code", "messageId", "taskId"]);
    assert_eq!(meta(refused, "code"), ErrorKind::TaskNotFound.to_string());
    assert_eq!(meta(refused, "messageId"), unknown.message_id);
    assert_eq!(meta(refused, "taskId"), "no-such-task");

    // An agent caller: named by the message, its line continued.
    let [request, reply] = &lines[7..] else {
        unreachable!()
    };
    assert_eq!(request.parent_id.as_deref(), Some("msg_alphas_line"));
    assert_eq!(meta(request, "messageId"), from_alpha.message_id);
    assert_eq!(reply.content, "hi back");
    assert_eq!(keys(reply), ["contextId", "messageId"]);
    assert_eq!(reply.parent_id.as_deref(), Some(&*request.id));
}

#[tokio::test]
async fn a_caller_that_logs_to_the_same_log_is_not_logged_twice() {
    let dir = tempfile::tempdir().unwrap();
    let log = ConversationLog::open(dir.path(), LogConfig::default()).unwrap();
    let other_dir = tempfile::tempdir().unwrap();
    let other = ConversationLog::open(other_dir.path(), LogConfig::default()).unwrap();
    let agent = Talker::default();
    let handler = DefaultRequestHandler::builder(agent.clone(), AgentCard::new("talker", "talks"))
        .conversation_log(log.clone())
        .build();
    // An agent of the gateway (its secret says `agent:hub`).
    let mut hub = CallContext::new(Method::SendMessage, ServiceParams::new());
    hub.user = User::authenticated("agent:hub");

    // The hub logged its delivery in this log: the server takes that line
    // as the request's, and writes only what comes between (the word on
    // the way, the artifact), not the answer the hub logs itself.
    let mut work = Message::user_text("work");
    a2a_conversation::mark_logged(&mut work, &log, "msg_hubs_delivery");
    handler
        .send_message(&hub, SendMessageRequest::new(work))
        .await
        .unwrap();
    // Marked for another log: this server's log has no line of it, so the
    // request is logged, chained after the caller's line.
    let mut reply = Message::user_text("reply");
    a2a_conversation::mark_logged(&mut reply, &other, "msg_in_another_log");
    handler
        .send_message(&hub, SendMessageRequest::new(reply))
        .await
        .unwrap();
    log.flush().await.unwrap();

    let lines = LogReader::new(dir.path()).tail(100).unwrap();
    let summary: Vec<(EntryType, &str, Option<&str>, &str)> = lines
        .iter()
        .map(|l| {
            let content = l.content.as_str().unwrap_or("(parts)");
            (
                l.kind,
                l.from_agent.as_str(),
                l.to_agent.as_deref(),
                content,
            )
        })
        .collect();
    use EntryType::{Request, Response, State};
    assert_eq!(
        summary,
        [
            (State, "talker", Some("hub"), "on it"),
            (Response, "talker", Some("hub"), "part 1part 2"),
            (Request, "hub", Some("talker"), "reply"),
            (Response, "talker", Some("hub"), "hi back"),
        ]
    );
    assert_eq!(lines[0].parent_id.as_deref(), Some("msg_hubs_delivery"));
    assert_eq!(lines[1].parent_id.as_deref(), Some(&*lines[0].id));
    assert_eq!(
        agent.tips.lock().unwrap()[0].as_deref(),
        Some("msg_hubs_delivery")
    );
    assert_eq!(lines[2].parent_id.as_deref(), Some("msg_in_another_log"));
    assert_eq!(lines[3].parent_id.as_deref(), Some(&*lines[2].id));
}
