//! `PostgresCluster`: the cluster bus of servers sharing one PostgreSQL
//! database, on LISTEN/NOTIFY (see `CLUSTER.md` for the design).

use std::borrow::Cow;

use a2a_server::cluster::{CancelNotice, ClusterBus, ClusterNotice, Interest};
use a2a_server::store::StoreError;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio::sync::mpsc;

use crate::common::{backend, parse_event};
use crate::{OpenError, PostgresStore};

/// Where the database announces committed task events (a trigger, migration 0003).
const EVENTS: &str = "a2a_events";
/// Where nodes send each other cancels.
const CONTROL: &str = "a2a_control";
/// NOTIFY refuses payloads of 8,000 bytes or more.
const PAYLOAD_LIMIT: usize = 7_999;
/// Notices buffered between the listening connection and the node.
const BUFFER: usize = 1_024;

/// The cluster bus on a [`PostgresStore`] opened with
/// [`PostgresStore::connect_cluster`]: events are announced by the
/// transactions that commit them, cancels are sent with `pg_notify`, and one
/// connection per node listens for both.
#[derive(Debug, Clone)]
pub struct PostgresCluster {
    pool: PgPool,
    /// The store's schema: several agents' stores may share one database.
    schema: String,
}

impl PostgresCluster {
    /// The bus of `store`, which must have been opened for cluster mode
    /// (otherwise its writes would not announce their events).
    pub async fn new(store: &PostgresStore) -> Result<Self, OpenError> {
        let pool = store.pool().clone();
        let (setting, schema): (Option<String>, String) =
            sqlx::query_as("SELECT current_setting('a2a.cluster', true), current_schema()")
                .fetch_one(&pool)
                .await?;
        if setting.as_deref() != Some("on") {
            return Err(OpenError::Unsupported(
                "a cluster on a store not opened for cluster mode (use PostgresStore::connect_cluster)"
                    .to_owned(),
            ));
        }
        Ok(PostgresCluster { pool, schema })
    }
}

/// The header of an event announcement.
#[derive(Deserialize)]
struct Announced<'a> {
    #[serde(borrow)]
    schema: Cow<'a, str>,
    #[serde(borrow)]
    task: Cow<'a, str>,
    version: u64,
}

/// A cancel as sent on the control channel.
#[derive(Serialize, Deserialize)]
struct Control {
    schema: String,
    #[serde(flatten)]
    cancel: CancelNotice,
}

#[async_trait]
impl ClusterBus for PostgresCluster {
    async fn listen(
        &self,
        interest: Interest,
    ) -> Result<mpsc::Receiver<ClusterNotice>, StoreError> {
        let mut listener = PgListener::connect_with(&self.pool)
            .await
            .map_err(backend)?;
        listener
            .listen_all([EVENTS, CONTROL])
            .await
            .map_err(backend)?;
        let (notices, receiver) = mpsc::channel(BUFFER);
        let (pool, schema) = (self.pool.clone(), self.schema.clone());
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    () = notices.closed() => return,
                    received = listener.try_recv() => received,
                };
                let notice = match received {
                    Ok(Some(notification)) => {
                        let decoded = decode(
                            &pool,
                            &schema,
                            notification.channel(),
                            notification.payload(),
                            &interest,
                        )
                        .await;
                        match decoded {
                            Some(notice) => notice,
                            None => continue,
                        }
                    }
                    // The connection dropped (the next call reconnects):
                    // whatever was announced meanwhile is lost.
                    Ok(None) => ClusterNotice::Resync,
                    Err(err) => {
                        // Dropping the sender makes the node listen anew.
                        tracing::warn!(error = %err, "the cluster listener failed");
                        return;
                    }
                };
                if notices.send(notice).await.is_err() {
                    return;
                }
            }
        });
        Ok(receiver)
    }

    async fn send_cancel(&self, notice: &CancelNotice) -> Result<(), StoreError> {
        let payload = serde_json::to_string(&Control {
            schema: self.schema.clone(),
            cancel: notice.clone(),
        })
        .map_err(|e| StoreError::Backend(format!("encoding a cancel: {e}")))?;
        if payload.len() > PAYLOAD_LIMIT {
            return Err(StoreError::Invalid(format!(
                "the cancel's metadata is too large to send to the node running task {} \
                 ({} bytes; at most about {PAYLOAD_LIMIT})",
                notice.task_id,
                payload.len()
            )));
        }
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CONTROL)
            .bind(payload)
            .execute(&self.pool)
            .await
            .map_err(backend)?;
        Ok(())
    }
}

/// Turns a notification into a notice, or `None` when it is not for this
/// node (another schema, a task nobody here watches) or cannot be read.
async fn decode(
    pool: &PgPool,
    schema: &str,
    channel: &str,
    payload: &str,
    interest: &Interest,
) -> Option<ClusterNotice> {
    match channel {
        EVENTS => {
            let (header, event) = match payload.split_once('\n') {
                Some((header, event)) => (header, Some(event)),
                None => (payload, None),
            };
            let announced: Announced<'_> = serde_json::from_str(header)
                .inspect_err(|e| tracing::warn!(error = %e, "unreadable event announcement"))
                .ok()?;
            if announced.schema != schema || !interest(&announced.task) {
                return None;
            }
            let event = match event {
                Some(json) => parse_event(json),
                None => read_event(pool, &announced.task, announced.version).await,
            };
            match event {
                Ok(event) => Some(ClusterNotice::Event {
                    task_id: announced.task.into_owned(),
                    version: announced.version,
                    event: Box::new(event),
                }),
                Err(err) => {
                    // The subscriber sees the version missing and resyncs.
                    tracing::warn!(task_id = %announced.task, error = %err, "cannot read an announced event");
                    None
                }
            }
        }
        CONTROL => {
            let control: Control = serde_json::from_str(payload)
                .inspect_err(|e| tracing::warn!(error = %e, "unreadable cluster control message"))
                .ok()?;
            (control.schema == schema).then_some(ClusterNotice::Cancel(control.cancel))
        }
        _ => None,
    }
}

/// An event announced by reference (too large for NOTIFY).
async fn read_event(
    pool: &PgPool,
    task_id: &str,
    version: u64,
) -> Result<a2a_core::StreamResponse, StoreError> {
    let version = i64::try_from(version)
        .map_err(|_| StoreError::Backend(format!("event version {version} is out of range")))?;
    let json: String = sqlx::query_scalar(
        "SELECT e.event FROM task_events e JOIN tasks t ON t.seq = e.task_seq \
         WHERE t.task_id = $1 AND e.version = $2",
    )
    .bind(task_id)
    .bind(version)
    .fetch_one(pool)
    .await
    .map_err(backend)?;
    parse_event(&json)
}
