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
    limit: AtomicUsize,
}

impl std::fmt::Debug for BodyBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyBudget")
            .field("bytes", &self.bytes())
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
                limit: AtomicUsize::new(bytes.max(1)),
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
        self.inner.limit.load(Ordering::Relaxed)
    }

    /// Makes the budget `bytes` (at least one byte) for every holder of a
    /// clone: how a server sets the size of [`BodyBudget::shared`], which
    /// routers built from default configs count against, before it serves.
    /// Bodies held already stay held.
    pub fn resize(&self, bytes: usize) {
        self.inner.limit.store(bytes.max(1), Ordering::Relaxed);
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
        if before.saturating_add(bytes) > inner.limit.load(Ordering::Relaxed) {
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

/// A request body the [`BodyBudget`] had no room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server is receiving too many request bodies at once; try again shortly")]
pub struct OverBudget;

/// `request` with its body held to `config`'s read timeout
/// ([`HttpConfig::body_read_timeout`](super::HttpConfig::body_read_timeout),
/// counted from now) and counted against its budget, for routes served
/// beside the bindings (which hold their bodies so themselves): a body
/// that does not arrive in time, or that the budget has no room for as it
/// comes, fails its reader with an error. A declared `Content-Length` the
/// budget has no room for is refused at once: answer [`OverBudget`] with
/// 503 and `Retry-After`.
pub fn guard_body(
    request: axum::extract::Request,
    config: &super::HttpConfig,
) -> Result<axum::extract::Request, OverBudget> {
    let declared = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let hold = config
        .body_budget
        .try_take(declared.unwrap_or(0))
        .ok_or(OverBudget)?;
    let within = config.body_read_timeout;
    Ok(request.map(|body| {
        axum::body::Body::new(Guarded {
            inner: body,
            hold,
            grow: declared.is_none(),
            deadline: Box::pin(tokio::time::sleep(within)),
            within,
        })
    }))
}

/// A body with a deadline, its pieces counted against a budget.
struct Guarded {
    inner: axum::body::Body,
    hold: BudgetHold,
    /// Whether pieces are added as they come (no length was declared).
    grow: bool,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    within: std::time::Duration,
}

impl hyper::body::Body for Guarded {
    type Data = bytes::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<bytes::Bytes>, Self::Error>>> {
        use std::future::Future as _;
        use std::task::Poll;
        let this = &mut *self;
        let frame = match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {
                std::task::ready!(this.deadline.as_mut().poll(cx));
                let late = format!(
                    "request body was not received within {} s",
                    this.within.as_secs()
                );
                return Poll::Ready(Some(Err(late.into())));
            }
        };
        if let Some(data) = frame.data_ref() {
            if this.grow && !this.hold.try_grow(data.len()) {
                return Poll::Ready(Some(Err(OverBudget.into())));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
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
        assert!(
            budget.try_take(11).is_none(),
            "larger than the whole budget"
        );
        budget.resize(20);
        assert!(budget.try_take(11).is_some());
    }

    fn request(length: Option<usize>, body: axum::body::Body) -> axum::extract::Request {
        let mut request = axum::http::Request::post("/");
        if let Some(length) = length {
            request = request.header("content-length", length);
        }
        request.body(body).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_guarded_body_is_cut_at_the_read_timeout_and_counted_while_held() {
        use http_body_util::BodyExt as _;
        let config = super::super::HttpConfig {
            body_budget: BodyBudget::new(100),
            body_read_timeout: std::time::Duration::from_secs(5),
            ..Default::default()
        };
        // One byte now, the rest never.
        let (sender, trickle) =
            futures::channel::mpsc::unbounded::<Result<bytes::Bytes, std::io::Error>>();
        sender
            .unbounded_send(Ok(bytes::Bytes::from_static(b"{")))
            .unwrap();
        let guarded = guard_body(
            request(None, axum::body::Body::from_stream(trickle)),
            &config,
        )
        .unwrap();
        let started = tokio::time::Instant::now();
        let read = guarded.into_body().collect().await;
        assert!(read.is_err(), "a body that stops coming fails its reader");
        assert_eq!(started.elapsed(), std::time::Duration::from_secs(5));
        assert_eq!(config.body_budget.held(), 0, "given back when dropped");
        drop(sender);

        // A declared length is held whole from the start.
        let held = guard_body(request(Some(60), axum::body::Body::empty()), &config).unwrap();
        assert_eq!(config.body_budget.held(), 60);
        let refused = guard_body(request(Some(60), axum::body::Body::empty()), &config);
        assert_eq!(refused.err(), Some(OverBudget));
        // Without one, pieces are counted as they come.
        let pieces =
            futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 50]))]);
        let counted = guard_body(
            request(None, axum::body::Body::from_stream(pieces)),
            &config,
        )
        .unwrap();
        assert!(
            counted.into_body().collect().await.is_err(),
            "60 + 50 is over 100"
        );
        drop(held);
        assert_eq!(config.body_budget.held(), 0);
    }
}
