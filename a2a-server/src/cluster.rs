//! Cluster mode: several servers on one shared database, any of which
//! answers any request for any task.
//!
//! The database does all the coordinating; there is no consensus of our own
//! and no broker:
//!
//! - **Leases.** Every execution is a durable job ([`crate::store::JobStore`]);
//!   a RUNNING job is its node's lease, renewed by the node's heartbeat every
//!   third of [`ClusterConfig::lease_timeout`]. Every node runs a lease pass
//!   at the same pace ([`crate::store::JobStore::take_over`]): jobs whose
//!   heartbeat is older than the timeout go back to PENDING, and any node
//!   claims them with a compare-and-set and resumes them from their last
//!   checkpoint.
//! - **Live events** are announced by the database itself when an event is
//!   committed ([`ClusterBus::listen`]), so subscribers on every node see the
//!   events of an execution that runs elsewhere, in version order. A
//!   subscriber that finds a version missing, or a bus that lost its
//!   connection, resynchronizes from the store.
//! - **Cancels** of a task running on another node are sent to that node
//!   ([`ClusterBus::send_cancel`]), whose execution cancels itself as it would
//!   for a local caller.
//! - **Push notifications** are sent only by the node whose execution wrote
//!   the event, so once per event across the cluster.

use std::sync::Arc;
use std::time::Duration;

use a2a_core::{Metadata, StreamResponse};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use crate::store::{StoreError, Version};

/// Settings of a cluster node.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// How long a node may go without renewing its leases before the others
    /// take its executions over (default 5 s). Heartbeats and lease passes
    /// run every third of it. Nodes' clocks must agree to well within it.
    pub lease_timeout: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            lease_timeout: Duration::from_secs(5),
        }
    }
}

impl ClusterConfig {
    /// How often a node renews its leases and looks for expired ones.
    pub fn heartbeat_interval(&self) -> Duration {
        (self.lease_timeout / 3).max(Duration::from_millis(10))
    }
}

/// A request to cancel a task, sent to the node that runs it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CancelNotice {
    /// The task.
    pub task_id: String,
    /// The node that runs it (every other node ignores the notice).
    pub node: String,
    /// The tenant the cancel came in on.
    #[serde(default)]
    pub tenant: String,
    /// Who asked (already checked to own the task by the node that took the call).
    #[serde(default)]
    pub user: String,
    /// Whether that caller was authenticated.
    #[serde(default)]
    pub authenticated: bool,
    /// The cancel call's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// What a node hears from the cluster.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClusterNotice {
    /// A task event was committed (by any node, this one included).
    Event {
        /// The task.
        task_id: String,
        /// The task version the event produced.
        version: Version,
        /// The event.
        event: Box<StreamResponse>,
    },
    /// Some node asks the node running a task to cancel it.
    Cancel(CancelNotice),
    /// Notices may have been lost (the bus reconnected): every subscriber
    /// reads its task again.
    Resync,
}

/// Which tasks' events the node wants decoded: those someone here subscribes to.
pub type Interest = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How the nodes of a cluster hear of each other's events and cancels.
#[async_trait]
pub trait ClusterBus: Send + Sync + 'static {
    /// Starts listening. Notices arrive in commit order until the receiver is
    /// dropped. Events of tasks for which `interest` answers false may be
    /// skipped without decoding. After a lost connection the bus reconnects
    /// by itself and sends [`ClusterNotice::Resync`].
    async fn listen(&self, interest: Interest)
    -> Result<mpsc::Receiver<ClusterNotice>, StoreError>;

    /// Sends a cancel request to the node named in it.
    async fn send_cancel(&self, notice: &CancelNotice) -> Result<(), StoreError>;
}
