//! The bytes of request bodies a server holds at once, shared by every
//! route: many callers sending large bodies together cannot take the
//! server's memory, each being within the per-body limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The default [`BodyBudget`]: 256 MiB of request bodies at once.
pub const DEFAULT_BODY_BUDGET: usize = 256 * 1024 * 1024;

/// How long a caller refused for want of budget is asked to wait.
pub(crate) const RETRY_AFTER_SECS: u64 = 1;

/// A budget of request-body bytes in flight, shared by every router (and
/// route) given a clone of it: a body counts against it from when it is
/// announced (its `Content-Length`) or, without one, as its pieces arrive,
/// until it has been read and parsed. A body that does not fit is refused
/// at once (HTTP 503 with `Retry-After`, gRPC `UNAVAILABLE`) rather than
/// queued: the caller retries, and the server never holds more than the
/// budget.
///
/// [`BodyBudget::shared`] (what `HttpConfig::default()` uses) is one budget
/// for the whole process, so routers built from default configs share it.
#[derive(Clone)]
pub struct BodyBudget {
    inner: Arc<Inner>,
}

struct Inner {
    held: AtomicUsize,
    limit: usize,
}

impl std::fmt::Debug for BodyBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyBudget")
            .field("bytes", &self.inner.limit)
            .field("held", &self.held())
            .finish()
    }
}

impl BodyBudget {
    /// A budget of its own of `bytes` (at least one byte).
    pub fn new(bytes: usize) -> Self {
        BodyBudget {
            inner: Arc::new(Inner {
                held: AtomicUsize::new(0),
                limit: bytes.max(1),
            }),
        }
    }

    /// The process-wide budget of [`DEFAULT_BODY_BUDGET`] bytes.
    pub fn shared() -> Self {
        static SHARED: std::sync::OnceLock<BodyBudget> = std::sync::OnceLock::new();
        SHARED
            .get_or_init(|| BodyBudget::new(DEFAULT_BODY_BUDGET))
            .clone()
    }

    /// The budget's size, in bytes.
    pub fn bytes(&self) -> usize {
        self.inner.limit
    }

    /// The bytes of bodies held now.
    pub fn held(&self) -> usize {
        self.inner.held.load(Ordering::Relaxed)
    }

    /// `bytes` more of the budget, or `None` when they do not fit.
    pub fn try_take(&self, bytes: usize) -> Option<BudgetHold> {
        let mut hold = BudgetHold {
            budget: self.clone(),
            bytes: 0,
        };
        hold.try_grow(bytes).then_some(hold)
    }
}

impl Default for BodyBudget {
    fn default() -> Self {
        BodyBudget::shared()
    }
}

/// Bytes of a [`BodyBudget`] held for one body, given back when dropped.
#[derive(Debug)]
pub struct BudgetHold {
    budget: BodyBudget,
    bytes: usize,
}

impl BudgetHold {
    /// Holds `bytes` more, if they fit; false (holding as before) if not.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        if bytes == 0 {
            return true;
        }
        let inner = &self.budget.inner;
        let before = inner.held.fetch_add(bytes, Ordering::AcqRel);
        if before.saturating_add(bytes) > inner.limit {
            inner.held.fetch_sub(bytes, Ordering::AcqRel);
            return false;
        }
        self.bytes += bytes;
        true
    }

    /// The bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for BudgetHold {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.budget
                .inner
                .held
                .fetch_sub(self.bytes, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_count_until_dropped_and_what_does_not_fit_is_refused() {
        let budget = BodyBudget::new(10);
        let six = budget.try_take(6).unwrap();
        assert!(budget.try_take(5).is_none(), "6 + 5 is over 10");
        let mut four = budget.try_take(4).unwrap();
        assert_eq!(budget.held(), 10);
        assert!(!four.try_grow(1));
        assert_eq!(four.bytes(), 4, "a refused growth keeps what was held");
        drop(six);
        assert!(four.try_grow(6));
        assert_eq!(budget.held(), 10);
        drop(four);
        assert_eq!(budget.held(), 0);
        assert!(budget.try_take(11).is_none(), "larger than the whole budget");
    }
}
