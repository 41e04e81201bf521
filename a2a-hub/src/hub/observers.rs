//! What observers keep of the messages they do not handle: a compact
//! record each, at most so many, none older than their time to live.

use crate::model::{HubMessage, ObserverRecord};
use crate::store::Write;

use super::{Hub, State};

/// How often records past their time go from every agent, also from those
/// that observe nothing any more.
const SWEEP_EVERY_MINUTES: i64 = 10;

impl Hub {
    /// The observer records agent `agent` holds now, oldest first.
    pub fn observed(&self, agent: &str) -> Vec<ObserverRecord> {
        let now = self.now();
        let ttl = self.ttl();
        self.state()
            .observed
            .get(agent)
            .map(|records| {
                records
                    .iter()
                    .filter(|r| now - r.t < ttl)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Gives `agent` the observer record `record` in memory; only its
    /// newest records within their time to live stay.
    pub(super) fn observe(
        &self,
        state: &mut State,
        agent: &str,
        record: ObserverRecord,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let keep = self.inner.config.observers.max_per_agent;
        let ttl = self.ttl();
        let records = state.observed.entry(agent.to_owned()).or_default();
        records.push_back(record);
        while records.len() > keep || records.front().is_some_and(|r| now - r.t >= ttl) {
            records.pop_front();
        }
    }

    /// Gives each of `observers` the record of `message`, in memory and in
    /// `writes`.
    pub(super) fn keep_for_observers(
        &self,
        state: &mut State,
        message: &HubMessage,
        observers: Vec<String>,
        writes: &mut Vec<Write>,
    ) {
        let now = message.t;
        let record = ObserverRecord::of(message);
        let keep = self.inner.config.observers.max_per_agent;
        let ttl = self.ttl();
        for agent in observers {
            self.observe(state, &agent, record.clone(), now);
            writes.push(Write::Observed {
                agent,
                record: record.clone(),
                keep,
            });
        }
        if state
            .swept
            .is_none_or(|at| now - at >= chrono::Duration::minutes(SWEEP_EVERY_MINUTES))
        {
            state.swept = Some(now);
            for records in state.observed.values_mut() {
                records.retain(|r| now - r.t < ttl);
            }
            state.observed.retain(|_, records| !records.is_empty());
            writes.push(Write::ExpireObserved { before: now - ttl });
        }
    }
}
