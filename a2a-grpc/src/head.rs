//! Who calls before what they say, on gRPC: a request's head (its path and
//! metadata) is authenticated before the gRPC service polls its body, and
//! the body's bytes count against the server's [`BodyBudget`] as they come.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use a2a_core::Method;
use a2a_server::auth::HeadCheck;
use a2a_server::http::{BodyBudget, BudgetHold};
use a2a_server::{A2aService, CallContext, ServiceParams};
use axum::body::{Body, Bytes};
use tonic::Status;
use tonic::codegen::{BoxFuture, http};

use crate::error::to_status;

/// What a body the budget has no room for is answered with.
const OVER_BUDGET: &str =
    "the server is receiving too many request bodies at once; try again shortly";

/// `inner` behind the head's authentication: a caller the service refuses
/// is answered `UNAUTHENTICATED` without a byte of its body read; one it
/// admits reaches `inner` with the [`Head`] in the request's extensions and
/// its body counted against `budget`.
#[derive(Clone)]
pub(crate) struct HeadFirst<S> {
    pub(crate) inner: S,
    pub(crate) service: A2aService,
    pub(crate) budget: BodyBudget,
    /// How long the body may take to arrive.
    pub(crate) within: std::time::Duration,
    /// The operation a path names, when the head's context can say.
    pub(crate) method_of: fn(&str) -> Option<Method>,
}

impl<S> tower::Service<http::Request<Body>> for HeadFirst<S>
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = futures::future::Either<S::Future, BoxFuture<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        use futures::future::Either;
        // The body is wrapped once, in the type tonic reads (no extra layer).
        let (hold, within) = (self.budget.try_take(0), self.within);
        let budgeted = move |body| {
            tonic::body::Body::new(Budgeted {
                inner: body,
                hold,
                deadline: None,
                within,
            })
        };
        if !self.service.authenticates_heads() {
            // Nothing to check on the head: no task of its own either.
            return Either::Left(self.inner.call(request.map(budgeted)));
        }
        let request = request.map(budgeted);
        let mut inner = self.inner.clone();
        let service = self.service.clone();
        let method_of = self.method_of;
        Either::Right(Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            // A placeholder where the path names no operation (0.3's rpcs, an
            // unknown name): the method is no credential.
            let named = method_of(parts.uri.path());
            let method = named.unwrap_or(Method::SendMessage);
            // The headers are lent to the head's context and given back, not
            // copied: tonic reads them again for the call.
            let params = ServiceParams::from_headers(std::mem::take(&mut parts.headers));
            let mut ctx =
                CallContext::new(method, params).with_binding(a2a_server::telemetry::binding::GRPC);
            let checked = service.authenticate_head(&mut ctx).await;
            parts.headers = std::mem::take(&mut ctx.service_params).into_headers();
            match checked {
                // What the head's check found goes on with a call of an
                // operation it named (0.3's rpcs check again), with its
                // context, which the call gives the headers back rather than
                // building it again (its requested extensions are read from
                // the same headers). One value: each more in the request's
                // extensions costs a map insert and removal.
                Ok(check) => {
                    if named.is_some() {
                        parts.extensions.insert(Head { check, ctx });
                    }
                }
                // The body is dropped unread.
                Err(err) => return Ok(to_status(&err).into_http()),
            }
            inner.call(http::Request::from_parts(parts, body)).await
        }))
    }
}

/// A request body whose pieces are added to a budget hold as they come,
/// held until the body is dropped (tonic drops it once the message is
/// read), and which fails once it has waited `within` for its pieces.
struct Budgeted {
    inner: Body,
    hold: Option<BudgetHold>,
    /// Set when the body first has to wait: a message that comes with its
    /// headers (nearly all) never arms a timer.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    within: std::time::Duration,
}

impl http_body::Body for Budgeted {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        use std::future::Future as _;
        let this = &mut *self;
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            Poll::Ready(Some(Err(err))) => return Poll::Ready(Some(Err(err.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {
                let within = this.within;
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(within)));
                std::task::ready!(deadline.as_mut().poll(cx));
                let late = Status::invalid_argument(format!(
                    "request message was not received within {} s",
                    within.as_secs()
                ));
                return Poll::Ready(Some(Err(Box::new(late))));
            }
        };
        if let Some(data) = frame.data_ref() {
            let fits = this
                .hold
                .as_mut()
                .is_some_and(|hold| hold.try_grow(data.len()));
            if !fits {
                return Poll::Ready(Some(Err(Box::new(Status::unavailable(OVER_BUDGET)))));
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// What the head's authentication found for a call of an operation the
/// head named: the check, and the context it was made with, without its
/// service parameters (they went back to the request).
#[derive(Clone)]
pub(crate) struct Head {
    check: HeadCheck,
    ctx: CallContext,
}

/// The [`HeadCheck`] of a call of `method` whose service parameters are
/// `params`, and its context: the head's, when its authentication left one
/// for the same operation in `extensions`, else none and a new one.
pub(crate) fn head_of(
    extensions: &mut tonic::Extensions,
    method: Method,
    params: ServiceParams,
) -> (HeadCheck, CallContext) {
    match extensions.remove::<Head>() {
        Some(Head { check, mut ctx }) if ctx.method == method => {
            ctx.service_params = params;
            (check, ctx)
        }
        _ => (
            HeadCheck::default(),
            CallContext::new(method, params).with_binding(a2a_server::telemetry::binding::GRPC),
        ),
    }
}
