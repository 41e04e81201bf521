//! The handler's observer: it sees each send as it arrives, its acceptance
//! with the ids the server gave it, every event its execution publishes
//! (with the task after it) and its error; what it leaves in the context's
//! extensions reaches the agent; a resumed execution gets an observer too.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{
    A2aError, AgentCard, ErrorKind, Message, Method, Part, SendMessageRequest, SendMessageResponse,
    StreamResponse, Task, TaskState,
};
use a2a_server::observer::{CallObserver, ExecutionObserver, Observer};
use a2a_server::store::{InMemoryJobStore, InMemoryTaskStore, JobState, JobStore};
use a2a_server::{
    AgentExecutor, CallContext, DefaultRequestHandler, EventQueue, RequestContext, RequestHandler,
    ServiceParams,
};
use support::{immediate, request, status_text, until_terminal};
use tokio::sync::Notify;

/// What the observer leaves for the agent.
#[derive(Debug, Clone)]
struct Note(String);

/// Writes down everything it is shown, in order.
#[derive(Clone, Default)]
struct Witness(Arc<Mutex<Vec<String>>>);

impl Witness {
    fn note(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn seen(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Observer for Witness {
    fn call(
        &self,
        _call: &CallContext,
        request: &SendMessageRequest,
    ) -> Option<Box<dyn CallObserver>> {
        self.note(format!("call {}", request.message.text()));
        Some(Box::new(self.clone()))
    }

    fn resumed(&self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>> {
        self.note(format!("resumed {}", ctx.resumed));
        ctx.extensions.insert(Note("after the restart".into()));
        Some(Box::new(self.clone()))
    }
}

#[async_trait::async_trait]
impl CallObserver for Witness {
    async fn accepted(&mut self, ctx: &mut RequestContext) -> Option<Box<dyn ExecutionObserver>> {
        // The ids are the server's, on the message the agent gets.
        assert_eq!(ctx.message.task_id, ctx.task_id);
        assert_eq!(ctx.message.context_id, ctx.context_id);
        assert!(!ctx.task_id.is_empty() && !ctx.context_id.is_empty());
        self.note("accepted".to_owned());
        ctx.extensions
            .insert(Note(format!("for {}", ctx.call.user.name)));
        Some(Box::new(self.clone()))
    }

    async fn refused(&mut self, error: &A2aError) {
        self.note(format!("refused {}", error.kind()));
    }
}

#[async_trait::async_trait]
impl ExecutionObserver for Witness {
    async fn event(&mut self, event: &StreamResponse, task: Option<&Task>) {
        let kind = match event {
            StreamResponse::Message(_) => "message",
            StreamResponse::Task(_) => "task",
            StreamResponse::StatusUpdate(_) => "status",
            StreamResponse::ArtifactUpdate(_) => "artifact",
        };
        let task = task.map_or("none".to_owned(), |t| format!("{:?}", t.status.state));
        self.note(format!("event {kind}, task {task}"));
    }
}

/// Says what it found in its extensions: replies to "reply", otherwise
/// works and completes; when `hold` is set, a first run waits to be stopped.
#[derive(Clone, Default)]
struct Agent {
    hold: Arc<Mutex<bool>>,
    holding: Arc<Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for Agent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let note = ctx
            .extensions
            .get::<Note>()
            .map_or("nothing".to_owned(), |n| n.0.clone());
        if ctx.message.text() == "reply" {
            return events.reply(vec![Part::text(note)]).await;
        }
        events.working().await?;
        if !ctx.resumed && *self.hold.lock().unwrap() {
            self.holding.notify_one();
            ctx.cancellation.cancelled().await;
            return Ok(());
        }
        events.complete_with_text(note).await
    }
}

fn card() -> AgentCard {
    AgentCard::new("observed", "observed agent")
}

fn call() -> CallContext {
    let mut call = CallContext::new(Method::SendMessage, ServiceParams::new());
    call.user = a2a_server::User::authenticated("ann");
    call
}

async fn send(handler: &DefaultRequestHandler, message: Message) -> SendMessageResponse {
    let request = SendMessageRequest::new(message);
    handler.send_message(&call(), request).await.unwrap()
}

#[tokio::test]
async fn an_observer_sees_each_send_its_events_and_its_error() {
    let witness = Witness::default();
    let handler = DefaultRequestHandler::builder(Agent::default(), card())
        .observer(witness.clone())
        .build();

    let SendMessageResponse::Task(task) = send(&handler, Message::user_text("work")).await else {
        panic!("expected a task");
    };
    assert_eq!(status_text(&task), "for ann", "the agent read the note");
    assert_eq!(
        witness.seen(),
        [
            "call work",
            "accepted",
            "event status, task Working",
            "event status, task Completed",
        ]
    );

    let SendMessageResponse::Message(reply) = send(&handler, Message::user_text("reply")).await
    else {
        panic!("expected a reply");
    };
    assert_eq!(reply.text(), "for ann");
    assert_eq!(
        witness.seen(),
        ["call reply", "accepted", "event message, task none"]
    );

    // Refused before it is accepted: the error, and nothing else.
    let mut unknown = Message::user_text("follow-up");
    unknown.task_id = "no-such-task".into();
    let err = handler
        .send_message(&call(), SendMessageRequest::new(unknown))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TaskNotFound);
    assert_eq!(
        witness.seen(),
        [
            "call follow-up",
            format!("refused {}", ErrorKind::TaskNotFound).as_str()
        ]
    );

    // A streaming send is watched the same way.
    let streaming = DefaultRequestHandler::builder(Agent::default(), card().with_streaming(true))
        .observer(witness.clone())
        .build();
    let stream = streaming
        .send_streaming_message(&call(), request("stream"))
        .await
        .unwrap();
    let events: Vec<_> = futures::StreamExt::collect::<Vec<_>>(stream).await;
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    let seen = witness.seen();
    assert_eq!(seen[..2], ["call stream", "accepted"]);
    assert_eq!(
        seen.last().map(String::as_str),
        Some("event status, task Completed")
    );
}

#[tokio::test]
async fn without_an_observer_the_agent_finds_no_extensions() {
    let handler = DefaultRequestHandler::builder(Agent::default(), card()).build();
    let SendMessageResponse::Task(task) = send(&handler, Message::user_text("work")).await else {
        panic!("expected a task");
    };
    assert_eq!(status_text(&task), "nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_execution_is_observed_from_its_restart() {
    let (tasks, jobs) = (InMemoryTaskStore::new(), InMemoryJobStore::new());
    let witness = Witness::default();
    let agent = Agent::default();
    *agent.hold.lock().unwrap() = true;
    let handler = |agent: Agent| {
        DefaultRequestHandler::builder(agent, card().with_streaming(true))
            .task_store(tasks.clone())
            .job_store(jobs.clone())
            .observer(witness.clone())
            .build()
    };

    let first = handler(agent.clone());
    let response = first.send_message(&call(), immediate("work")).await;
    let SendMessageResponse::Task(task) = response.unwrap() else {
        panic!("expected a task");
    };
    agent.holding.notified().await;
    first.shutdown(Duration::ZERO).await;
    assert_eq!(
        jobs.get(&task.id).await.unwrap().unwrap().state,
        JobState::Pending
    );
    assert_eq!(
        witness.seen(),
        ["call work", "accepted", "event status, task Working"]
    );

    let restarted = handler(agent.clone());
    let done = until_terminal(&restarted, &call(), &task.id).await;
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(status_text(&done), "after the restart");
    // The task reads settled once stored; the observer hears of it right
    // after: wait for the execution to end.
    restarted.shutdown(Duration::from_secs(20)).await;
    assert_eq!(
        witness.seen(),
        [
            "resumed true",
            "event status, task Working",
            "event status, task Completed"
        ]
    );
}
