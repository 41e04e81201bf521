//! The loop guards' counting: how many events of one key fell within a
//! sliding window. Kept in memory: after a restart every window starts
//! empty, which errs towards letting agents talk, never towards losing a
//! message.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

/// Events per key within a sliding window.
#[derive(Debug)]
pub(crate) struct Window<K> {
    window: Duration,
    events: HashMap<K, VecDeque<Instant>>,
}

impl<K: Hash + Eq + Clone> Window<K> {
    pub(crate) fn new(window: Duration) -> Self {
        Window {
            window,
            events: HashMap::new(),
        }
    }

    /// Counts an event of `key` at `now` if fewer than `limit` fell within
    /// the window, and says so; else counts nothing and says how long until
    /// the oldest leaves the window.
    pub(crate) fn admit(&mut self, key: &K, limit: u32, now: Instant) -> Result<(), Duration> {
        let events = self.recent(key, now);
        if events.len() >= limit as usize {
            let oldest = events.front().copied().unwrap_or(now);
            return Err((oldest + self.window).saturating_duration_since(now));
        }
        events.push_back(now);
        Ok(())
    }

    /// Counts an event of `key` at `now` and says how many fell within the
    /// window, this one included.
    pub(crate) fn count(&mut self, key: &K, now: Instant) -> usize {
        let events = self.recent(key, now);
        events.push_back(now);
        events.len()
    }

    /// Forgets `key`'s events (a person resumed a paused thread).
    pub(crate) fn reset(&mut self, key: &K) {
        self.events.remove(key);
    }

    fn recent(&mut self, key: &K, now: Instant) -> &mut VecDeque<Instant> {
        // Keys without recent events are dropped now and then, so the map
        // does not grow with every pair that ever talked.
        if self.events.len() > 4096 {
            let window = self.window;
            self.events.retain(|_, events| {
                events
                    .back()
                    .is_some_and(|last| now.saturating_duration_since(*last) < window)
            });
        }
        let events = self.events.entry(key.clone()).or_default();
        while events
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= self.window)
        {
            events.pop_front();
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_window_admits_up_to_its_limit_and_says_when_to_come_back() {
        let mut pairs = Window::new(Duration::from_secs(300));
        let key = ("alpha", "beta");
        for _ in 0..3 {
            assert!(pairs.admit(&key, 3, Instant::now()).is_ok());
            tokio::time::advance(Duration::from_secs(10)).await;
        }
        let wait = pairs.admit(&key, 3, Instant::now()).unwrap_err();
        assert_eq!(wait, Duration::from_secs(270));
        tokio::time::advance(wait).await;
        assert!(pairs.admit(&key, 3, Instant::now()).is_ok());
        assert!(pairs.admit(&("alpha", "gamma"), 3, Instant::now()).is_ok());
    }
}
