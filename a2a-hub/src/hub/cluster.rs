//! One hub of several nodes, on a PostgreSQL record they share: each node
//! listens to the others' notices (what their committed writes changed)
//! and feeds its own subscribers, and renews the deliveries it follows
//! while taking over those of nodes that stopped renewing theirs.
//!
//! A node keeps threads and guard windows in memory as a single hub does;
//! a notice updates them from the record. Nodes' posts reach the others
//! within a notice's latency; the pair and anonymous-thread guards count
//! in the record itself (see `guards`), so they hold exactly across nodes,
//! while the burst guard counts the others' events as their notices come.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;

use super::{Hub, ThreadState, guards};
use crate::model::{HubEvent, HubMessage};
use crate::store::postgres::{Notice, Noticed, PgRecord};
use crate::store::{GuardKind, LoadedThread, parse_time};

/// How many message places a node remembers having shown, to show each
/// once when it reads back what it may have missed.
const SEEN: usize = 4096;
/// How far back a node reads after its listener lost its connection
/// (messages commit out of their places' order across nodes).
const CATCH_UP: i64 = 256;

/// The message places a node has shown.
#[derive(Debug, Default)]
struct Seen {
    places: BTreeSet<i64>,
    last: i64,
}

impl Seen {
    /// Whether `seq` is new (and remembers it).
    fn first(&mut self, seq: i64) -> bool {
        if seq <= self.last - CATCH_UP * 4 || !self.places.insert(seq) {
            return false;
        }
        self.last = self.last.max(seq);
        while self.places.len() > SEEN {
            self.places.pop_first();
        }
        true
    }
}

impl Hub {
    /// Starts the cluster's work, once, when the record is in PostgreSQL.
    pub(super) fn start_cluster(&self) {
        use std::sync::atomic::Ordering;
        let Some(record) = self.inner.store.postgres().cloned() else {
            return;
        };
        if self.inner.cluster_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let hub = self.clone();
        let leases = record.clone();
        self.inner
            .tasks
            .spawn(async move { hub.keep_leases(leases).await });
        let hub = self.clone();
        self.inner
            .tasks
            .spawn(async move { hub.listen(record).await });
    }

    /// Renews this node's deliveries and takes over expired ones, every
    /// third of the lease timeout, until the hub stops.
    async fn keep_leases(&self, record: PgRecord) {
        let tick = record.lease() / 3;
        loop {
            tokio::select! {
                () = self.inner.stop.cancelled() => return,
                () = tokio::time::sleep(tick) => {}
            }
            if let Err(err) = record.renew().await {
                tracing::warn!(error = %err, "collaboration hub: the deliveries' leases could not be renewed");
            }
            match record.take_over().await {
                Ok(taken) => {
                    for delivery in taken {
                        tracing::info!(
                            message = %delivery.message_id,
                            agent = %delivery.agent,
                            node = %record.node(),
                            "collaboration hub: took over a delivery whose node stopped renewing it"
                        );
                        self.spawn_delivery(move |hub| async move {
                            hub.resume_delivery(delivery).await;
                        });
                    }
                }
                Err(err) => {
                    tracing::warn!(error = %err, "collaboration hub: expired deliveries could not be taken over");
                }
            }
        }
    }

    /// Listens to the other nodes' notices until the hub stops; after a
    /// lost connection, reads back the messages it may have missed.
    async fn listen(&self, record: PgRecord) {
        let mut seen = Seen::default();
        let mut listener = loop {
            match self.listener(&record).await {
                Ok(listener) => break listener,
                Err(err) => {
                    tracing::warn!(error = %err, "collaboration hub: cannot listen to the other nodes; retrying");
                    tokio::select! {
                        () = self.inner.stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        };
        // What the other nodes posted since this node loaded its record and
        // before its listener started was announced to nobody here.
        seen.last = record.loaded_up_to();
        match record.others_since(seen.last).await {
            Ok(missed) => {
                for (seq, message) in missed {
                    if seen.first(seq) {
                        match record.observers_of(&message.id).await {
                            Ok(observers) => self.remote_observed(&message, observers),
                            Err(err) => {
                                tracing::warn!(error = %err, "collaboration hub: cannot read who observes another node's message");
                            }
                        }
                        self.remote_message(&record, message).await;
                    }
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "collaboration hub: cannot read what the other nodes posted since the start");
            }
        }
        loop {
            let received = tokio::select! {
                () = self.inner.stop.cancelled() => return,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(notification)) => {
                    match serde_json::from_str::<Notice>(notification.payload()) {
                        Ok(notice) if notice.node != record.node() => {
                            self.noticed(&record, notice.what, &mut seen).await;
                        }
                        Ok(_) => {}
                        Err(err) => {
                            tracing::debug!(error = %err, "collaboration hub: an unreadable notice");
                        }
                    }
                }
                // The connection was lost and is made again on the next
                // call: notices in between are gone, the record is not.
                Ok(None) => self.catch_up(&record, &mut seen).await,
                Err(err) => {
                    tracing::warn!(error = %err, "collaboration hub: listening to the other nodes failed; retrying");
                    tokio::select! {
                        () = self.inner.stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_millis(500)) => {}
                    }
                    self.catch_up(&record, &mut seen).await;
                }
            }
        }
    }

    async fn listener(&self, record: &PgRecord) -> Result<PgListener, sqlx::Error> {
        let mut listener = PgListener::connect_with(record.pool()).await?;
        listener.listen(record.channel()).await?;
        Ok(listener)
    }

    /// Shows the other nodes' messages the listener may have missed.
    async fn catch_up(&self, record: &PgRecord, seen: &mut Seen) {
        match record.others_since(seen.last - CATCH_UP).await {
            Ok(missed) => {
                for (seq, message) in missed {
                    if seen.first(seq) {
                        self.remote_message(record, message).await;
                    }
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "collaboration hub: cannot read back the other nodes' messages");
            }
        }
    }

    /// What another node's notice changes here.
    async fn noticed(&self, record: &PgRecord, what: Noticed, seen: &mut Seen) {
        match what {
            Noticed::Message { seq, observers } => {
                if !seen.first(seq) {
                    return;
                }
                match record.message_at(seq).await {
                    Ok(Some(message)) => {
                        self.remote_observed(&message, observers);
                        self.remote_message(record, message).await;
                    }
                    Ok(None) => {}
                    Err(err) => {
                        tracing::warn!(error = %err, "collaboration hub: cannot read another node's message");
                    }
                }
            }
            Noticed::Thread { thread } => self.remote_thread(record, &thread).await,
            Noticed::Delivery { message } => {
                if let Ok(Some(updated)) = record.message(&message).await {
                    let _ = self
                        .inner
                        .events
                        .send(HubEvent::Delivery(Arc::new(updated)));
                }
            }
            Noticed::Guard { guard, key, at } => {
                let (Some(guard), Some(at)) = (GuardKind::parse(&guard), parse_time(&at)) else {
                    return;
                };
                let now = self.now();
                let mut state = self.state();
                match guard {
                    GuardKind::Burst => state.bursts.restore(key, at, now),
                    GuardKind::AnonymousThread => state.anonymous_threads.restore(key, at, now),
                    GuardKind::Pair => {
                        if let Some(pair) = guards::pair_of_key(&key) {
                            state.pairs.restore(pair, at, now);
                        }
                    }
                }
            }
            Noticed::Reset { guard, key } => {
                if GuardKind::parse(&guard) == Some(GuardKind::Burst) {
                    self.state().bursts.reset(&key);
                }
            }
        }
    }

    /// Another node's message kept by `observers`: their records here
    /// too, so what they are told next includes it.
    fn remote_observed(&self, message: &HubMessage, observers: Vec<String>) {
        if observers.is_empty() {
            return;
        }
        let record = crate::model::ObserverRecord::of(message);
        let now = self.now();
        let mut state = self.state();
        for agent in observers {
            self.observe(&mut state, &agent, record.clone(), now);
        }
    }

    /// Another node's message: its thread as the record now holds it,
    /// then the message, to this node's subscribers.
    async fn remote_message(&self, record: &PgRecord, message: HubMessage) {
        if let Some(thread) = &message.thread {
            self.remote_thread(record, thread).await;
        }
        let _ = self.inner.events.send(HubEvent::Message(Arc::new(message)));
    }

    /// Takes thread `id` from the record into memory, and shows it.
    pub(super) async fn remote_thread(&self, record: &PgRecord, id: &str) {
        let loaded = match record.thread(id).await {
            Ok(Some(loaded)) => loaded,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(error = %err, "collaboration hub: cannot read another node's thread");
                return;
            }
        };
        let LoadedThread { view, paused_until } = loaded;
        {
            let mut state = self.state();
            let threads: &mut HashMap<String, ThreadState> = &mut state.threads;
            threads.insert(
                view.id.clone(),
                ThreadState {
                    view: view.clone(),
                    paused_until,
                },
            );
        }
        let _ = self.inner.events.send(HubEvent::Thread(Arc::new(view)));
    }
}

#[cfg(test)]
mod tests {
    use super::Seen;

    #[test]
    fn a_place_is_shown_once() {
        let mut seen = Seen {
            last: 10,
            ..Seen::default()
        };
        assert!(seen.first(12));
        assert!(!seen.first(12));
        assert!(seen.first(11));
        assert_eq!(seen.last, 12);
    }
}
