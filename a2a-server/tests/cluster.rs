//! Cluster mode on the handler, in one process with in-memory stores and a
//! bus that carries nothing: a node that stood still past its lease timeout
//! stops the executions whose jobs another node holds now, without writing.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{A2aError, AgentCard, GetTaskRequest, Method, SendMessageResponse, TaskState};
use a2a_server::cluster::{CancelNotice, ClusterBus, ClusterConfig, ClusterNotice, Interest};
use a2a_server::store::{InMemoryJobStore, InMemoryTaskStore, JobState, JobStore, StoreError};
use a2a_server::{
    AgentExecutor, CallContext, DefaultRequestHandler, EventQueue, JobConfig, RequestContext,
    RequestHandler, ServiceParams,
};
use support::immediate;
use tokio::sync::{Notify, mpsc};

/// A bus with no other node on it.
struct Alone(std::sync::Mutex<Vec<mpsc::Sender<ClusterNotice>>>);

#[async_trait::async_trait]
impl ClusterBus for Alone {
    async fn listen(
        &self,
        _interest: Interest,
    ) -> Result<mpsc::Receiver<ClusterNotice>, StoreError> {
        let (sender, receiver) = mpsc::channel(1);
        self.0.lock().unwrap().push(sender);
        Ok(receiver)
    }

    async fn send_cancel(&self, _notice: &CancelNotice) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Works, then waits to be told to stop, and says when it was.
#[derive(Clone, Default)]
struct Waits {
    stopped: Arc<Notify>,
}

#[async_trait::async_trait]
impl AgentExecutor for Waits {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        events.working().await?;
        ctx.cancellation.cancelled().await;
        self.stopped.notify_one();
        Ok(())
    }
}

fn ctx() -> CallContext {
    CallContext::new(Method::SendMessage, ServiceParams::new())
}

/// Node A of a cluster with a lease of `lease` on `jobs`, its agent already
/// at work on a task: the handler and that task.
async fn node_at_work(
    agent: &Waits,
    jobs: &InMemoryJobStore,
    lease: Duration,
) -> (DefaultRequestHandler, a2a_core::Task) {
    let mut config = JobConfig::default();
    config.node = "node-a".into();
    let mut cluster = ClusterConfig::default();
    cluster.lease_timeout = lease;
    let handler = DefaultRequestHandler::builder(agent.clone(), AgentCard::new("waits", "waits"))
        .task_store(InMemoryTaskStore::new())
        .job_store(jobs.clone())
        .job_config(config)
        .cluster(Alone(Default::default()), cluster)
        .build();
    handler.recovered().await;
    let SendMessageResponse::Task(task) =
        handler.send_message(&ctx(), immediate("go")).await.unwrap()
    else {
        panic!("expected a task")
    };
    (handler, task)
}

#[tokio::test(start_paused = true)]
async fn a_node_that_stood_still_past_its_lease_stops_work_another_node_holds() {
    let (jobs, agent) = (InMemoryJobStore::new(), Waits::default());
    let (handler, task) = node_at_work(&agent, &jobs, Duration::from_secs(3)).await;
    // While node A stood still, node B took the job over and finished it.
    let job = jobs.get(&task.id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.node.as_str()),
        (JobState::Running, "node-a")
    );
    jobs.release(&task.id, job.heartbeat).await.unwrap();
    assert!(jobs.claim(&task.id, "node-b", job.heartbeat).await.unwrap());
    jobs.finish(&task.id, JobState::Completed, None, job.heartbeat)
        .await
        .unwrap();
    // Node A wakes up: its first tick finds the silence longer than the lease.
    tokio::time::advance(Duration::from_secs(7)).await;
    tokio::time::timeout(Duration::from_secs(5), agent.stopped.notified())
        .await
        .expect("node A stops its copy of the execution");
    // And it wrote nothing: the task is as the agent left it, the job is node B's.
    let stored = handler
        .get_task(
            &ctx(),
            GetTaskRequest {
                id: task.id.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(stored.status.state, TaskState::Working);
    let job = jobs.get(&task.id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.node.as_str()),
        (JobState::Completed, "node-b")
    );
}

#[tokio::test(start_paused = true)]
async fn a_node_whose_leases_are_renewed_keeps_its_work() {
    let (jobs, agent) = (InMemoryJobStore::new(), Waits::default());
    let (_handler, task) = node_at_work(&agent, &jobs, Duration::from_secs(5)).await;
    // A minute of heartbeats and lease passes: the lease stays node A's.
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let job = jobs.get(&task.id).await.unwrap().unwrap();
    assert_eq!(
        (job.state, job.node.as_str(), job.attempts),
        (JobState::Running, "node-a", 1)
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(10), agent.stopped.notified())
            .await
            .is_err(),
        "the execution runs on"
    );
}
