//! `A2aService`: the one place every binding sends its decoded calls through:
//! version negotiation, required extensions, interceptors, then the handler.

use std::sync::Arc;

use a2a_core::{A2aError, AgentCard, ErrorKind, VERSION_HEADER, is_supported_version};
use async_trait::async_trait;

use crate::auth::{Authenticate, HeadCheck};
use crate::{CallContext, EventStream, RequestHandler};

/// Whether a card asks callers to authenticate.
fn declares_security(card: &AgentCard) -> bool {
    !card.security_schemes.is_empty() || !card.security_requirements.is_empty()
}

/// Rejects requests missing an id the operation cannot do without.
fn required_ids(request: &Request) -> Result<(), A2aError> {
    let missing = |field: &str| Err(A2aError::invalid_params(format!("{field} is required")));
    match request {
        Request::GetTask(r) if r.id.is_empty() => missing("id"),
        Request::CancelTask(r) if r.id.is_empty() => missing("id"),
        Request::SubscribeToTask(r) if r.id.is_empty() => missing("id"),
        Request::CreatePushConfig(r) if r.task_id.is_empty() => missing("taskId"),
        Request::CreatePushConfig(r) if r.url.is_empty() => missing("url"),
        Request::GetPushConfig(r) if r.task_id.is_empty() || r.id.is_empty() => {
            missing("taskId and id")
        }
        Request::DeletePushConfig(r) if r.task_id.is_empty() || r.id.is_empty() => {
            missing("taskId and id")
        }
        Request::ListPushConfigs(r) if r.task_id.is_empty() => missing("taskId"),
        _ => Ok(()),
    }
}

/// A decoded call: one variant per operation (see [`a2a_core::operation`]).
pub use a2a_core::operation::Request;

/// The answer to a call, a stream being the server's [`EventStream`].
pub type Response = a2a_core::operation::Response<EventStream>;

/// Chooses the service that answers a call from the tenant it names: how one
/// endpoint serves several agents (the A2A `tenant` is an opaque routing value
/// that clients copy from the interface they chose, on every binding).
///
/// See [`A2aService::routed`].
#[async_trait]
pub trait TenantRouter: Send + Sync + 'static {
    /// The service for a call naming `tenant`, and the tenant that service
    /// sees; an error refuses the call before any service looks at it.
    fn route(&self, tenant: &str) -> Result<(A2aService, String), A2aError>;

    /// Winds every routed service down (see [`A2aService::shutdown`]).
    async fn shutdown(&self, grace: std::time::Duration);

    /// The service that authenticates the head of a request whose tenant
    /// the head does not name (JSON-RPC and gRPC carry it in the body), so
    /// that a caller it refuses is answered before the body is read (see
    /// [`A2aService::authenticate_head`]). Give one only when every tenant
    /// authenticates callers the same way (a gateway whose agents share one
    /// authenticator, say). Default: none, and such requests are
    /// authenticated once their body is read.
    fn head_service(&self) -> Option<A2aService> {
        None
    }
}

/// What answers an [`A2aService`]'s calls.
#[derive(Clone)]
enum Backend {
    /// One handler.
    Handler(Arc<dyn RequestHandler>),
    /// Other services, chosen by tenant.
    Routed(Arc<dyn TenantRouter>),
}

/// Hooks around every call, on every binding.
///
/// `before` runs in order and may change the context (an authentication hook
/// sets `ctx.user`), rewrite the request, answer early with `Ok(Some(..))`, or
/// refuse with an error. `after` runs in reverse order for every interceptor
/// whose `before` ran, and may rewrite the outcome (a stream can be wrapped).
#[async_trait]
pub trait CallInterceptor: Send + Sync + 'static {
    /// Runs before the handler.
    async fn before(
        &self,
        ctx: &mut CallContext,
        request: &mut Request,
    ) -> Result<Option<Response>, A2aError> {
        let _ = (ctx, request);
        Ok(None)
    }

    /// Runs after the handler (or after an early answer).
    async fn after(&self, ctx: &CallContext, outcome: &mut Result<Response, A2aError>) {
        let _ = (ctx, outcome);
    }
}

/// How strictly `A2A-Version` is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionPolicy {
    /// A missing header is accepted as the current version (default; many peers omit it).
    #[default]
    Lenient,
    /// A missing header means 0.3, which this server does not serve.
    Strict,
}

/// Binding-independent front of a [`RequestHandler`].
#[derive(Clone)]
pub struct A2aService {
    backend: Backend,
    card: Arc<AgentCard>,
    interceptors: Arc<[Arc<dyn CallInterceptor>]>,
    version_policy: VersionPolicy,
    authentication: Option<Arc<dyn Authenticate>>,
    /// Whether the card declares security: then no anonymous call reaches the handler.
    requires_authentication: bool,
}

impl std::fmt::Debug for A2aService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService")
            .field("agent", &self.card.name)
            .field("interceptors", &self.interceptors.len())
            .field("version_policy", &self.version_policy)
            .field("authentication", &self.authentication.is_some())
            .finish()
    }
}

impl A2aService {
    /// A service over `handler`, serving the handler's card.
    ///
    /// Without [`A2aService::with_authentication`] every caller is the same
    /// anonymous user: all of them share one space of tasks per tenant.
    pub fn new(handler: impl RequestHandler) -> Self {
        A2aService::from_shared(Arc::new(handler))
    }

    /// A service over a handler the caller keeps a handle on as well.
    pub fn from_arc<H: RequestHandler>(handler: Arc<H>) -> Self {
        A2aService::from_shared(handler)
    }

    /// A service over a type-erased shared handler.
    ///
    /// Without [`A2aService::with_authentication`] (or an interceptor that
    /// authenticates) every caller is the same anonymous user: all callers
    /// share one space of tasks and push configs per tenant. If the handler's
    /// card declares security schemes, calls nobody authenticated are refused.
    pub fn from_shared(handler: Arc<dyn RequestHandler>) -> Self {
        let card = handler.card().clone();
        A2aService {
            requires_authentication: declares_security(&card),
            card: Arc::new(card),
            backend: Backend::Handler(handler),
            interceptors: Arc::from(Vec::new()),
            version_policy: VersionPolicy::default(),
            authentication: None,
        }
    }

    /// A service that answers no call itself: each goes to the service
    /// `router` picks by the call's tenant, with the tenant it gives, and that
    /// service's checks, authentication and interceptors apply. `card` is what
    /// this endpoint's agent card route serves.
    ///
    /// Checks and interceptors added to this service do not run (each routed
    /// service has its own).
    pub fn routed(card: AgentCard, router: impl TenantRouter) -> Self {
        A2aService {
            requires_authentication: declares_security(&card),
            card: Arc::new(card),
            backend: Backend::Routed(Arc::new(router)),
            interceptors: Arc::from(Vec::new()),
            version_policy: VersionPolicy::default(),
            authentication: None,
        }
    }

    /// Enforces `auth` on every call of every binding, before anything else
    /// runs (the one way to authenticate: a closure becomes an
    /// [`Authenticate`] through [`crate::auth::from_fn`]): a call it refuses gets [`ErrorKind::Unauthenticated`] (or
    /// [`ErrorKind::Unauthorized`] for a tenant the identity may not use).
    /// The public card declares `auth`'s schemes and stays readable to all.
    #[must_use]
    pub fn with_authentication(mut self, auth: impl Authenticate) -> Self {
        let mut card = (*self.card).clone();
        crate::auth::declare_on(&mut card, &auth);
        // An authenticator that declares no scheme may admit anonymous
        // callers (`auth::from_fn` returning `User::anonymous()`); one that
        // declares a scheme makes every call prove who it is.
        self.requires_authentication = declares_security(&card);
        self.card = Arc::new(card);
        self.authentication = Some(Arc::new(auth));
        self
    }

    /// Whether calls must be authenticated (the card declares security).
    pub fn requires_authentication(&self) -> bool {
        self.requires_authentication
    }

    /// Adds an interceptor (runs after those added before it).
    #[must_use]
    pub fn with_interceptor(mut self, interceptor: impl CallInterceptor) -> Self {
        let mut all: Vec<_> = self.interceptors.iter().cloned().collect();
        all.push(Arc::new(interceptor));
        self.interceptors = all.into();
        self
    }

    /// Sets how `A2A-Version` is checked.
    #[must_use]
    pub fn with_version_policy(mut self, policy: VersionPolicy) -> Self {
        self.version_policy = policy;
        self
    }

    /// The public agent card.
    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    /// Winds the handler down: no new work, running work gets `grace` (see
    /// [`RequestHandler::shutdown`]). Call it after the server stops accepting.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        match &self.backend {
            Backend::Handler(handler) => handler.shutdown(grace).await,
            Backend::Routed(router) => router.shutdown(grace).await,
        }
    }

    /// Checks the requested protocol version.
    pub fn check_version(&self, ctx: &CallContext) -> Result<(), A2aError> {
        match ctx.service_params.version().map(str::trim) {
            Some(v) if !v.is_empty() && is_supported_version(v) => Ok(()),
            Some(v) if !v.is_empty() => Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                format!(
                    "protocol version {v} is not supported; this agent speaks {}",
                    a2a_core::PROTOCOL_VERSION
                ),
            )),
            _ if self.version_policy == VersionPolicy::Strict => Err(A2aError::new(
                ErrorKind::VersionNotSupported,
                format!(
                    "no {VERSION_HEADER} given (0.3 assumed); this agent speaks {}",
                    a2a_core::PROTOCOL_VERSION
                ),
            )),
            _ => Ok(()),
        }
    }

    fn check_extensions(&self, ctx: &mut CallContext) -> Result<(), A2aError> {
        let declared = &self.card.capabilities.extensions;
        if let Some(missing) = declared
            .iter()
            .find(|e| e.required && !ctx.is_extension_requested(&e.uri))
        {
            return Err(A2aError::new(
                ErrorKind::ExtensionSupportRequired,
                format!(
                    "this agent requires extension {}; request it in A2A-Extensions",
                    missing.uri
                ),
            ));
        }
        ctx.activated_extensions = ctx
            .requested_extensions
            .iter()
            .filter(|uri| declared.iter().any(|e| &e.uri == *uri))
            .cloned()
            .collect();
        Ok(())
    }

    /// Runs one call: checks, interceptors, handler, in the call's span (see
    /// [`crate::telemetry`]).
    pub fn call<'a>(
        &'a self,
        ctx: &'a mut CallContext,
        request: Request,
    ) -> impl Future<Output = Result<Response, A2aError>> + Send + 'a {
        // Boxed before the future is made: a pointer is cheaper than the
        // request to keep in it and move through the futures below.
        self.call_boxed(ctx, Box::new(request), HeadCheck::default())
    }

    /// [`A2aService::call`] for a request whose head
    /// [`A2aService::authenticate_head`] checked: the caller it found is
    /// used when the call turns out to be for the tenant the head was
    /// checked for (most calls), so the credentials are verified once.
    pub fn call_checked<'a>(
        &'a self,
        ctx: &'a mut CallContext,
        request: Request,
        head: HeadCheck,
    ) -> impl Future<Output = Result<Response, A2aError>> + Send + 'a {
        self.call_boxed(ctx, Box::new(request), head)
    }

    /// Whether [`A2aService::authenticate_head`] can refuse anything: a
    /// binding skips building the head's context when it cannot.
    pub fn authenticates_heads(&self) -> bool {
        match &self.backend {
            Backend::Handler(_) => self
                .authentication
                .as_ref()
                .is_some_and(|auth| auth.decides_on_head()),
            // Which service a tenant goes to is only known per request.
            Backend::Routed(_) => true,
        }
    }

    /// Authenticates a request from its head alone, before any byte of its
    /// body is read: `ctx` holds the head's service parameters (headers and
    /// query), the method when the head names it (HTTP+JSON's path, gRPC's
    /// rpc; a JSON-RPC head's method is a placeholder, its name being in the
    /// body) and the tenant when the head names it (empty when not: the body
    /// may name one).
    ///
    /// A caller whose credentials the authenticator refuses is refused here
    /// ([`ErrorKind::Unauthenticated`]), as is an anonymous caller where the
    /// card declares security, so that a server never reads, buffers or
    /// parses the body of a caller it would refuse. What depends on the body
    /// (the tenant the call asks for, say) is still decided by the call,
    /// which [`A2aService::call_checked`] gives the returned [`HeadCheck`].
    /// A routed service checks the head with the service the head's tenant
    /// goes to (see [`TenantRouter::head_service`] for heads that name none);
    /// a tenant it does not know is refused here as the call would be.
    pub async fn authenticate_head(&self, ctx: &mut CallContext) -> Result<HeadCheck, A2aError> {
        match &self.backend {
            Backend::Handler(_) => self.authenticate_own_head(ctx).await,
            Backend::Routed(router) => {
                if ctx.tenant.is_empty() {
                    return match router.head_service() {
                        Some(target) => Box::pin(target.authenticate_head(ctx)).await,
                        None => Ok(HeadCheck::default()),
                    };
                }
                let (target, tenant) = router.route(&ctx.tenant)?;
                let asked = std::mem::replace(&mut ctx.tenant, tenant);
                let checked = Box::pin(target.authenticate_head(ctx)).await;
                ctx.tenant = asked;
                checked
            }
        }
    }

    async fn authenticate_own_head(&self, ctx: &CallContext) -> Result<HeadCheck, A2aError> {
        let Some(auth) = self
            .authentication
            .as_ref()
            .filter(|auth| auth.decides_on_head())
        else {
            return Ok(HeadCheck::default());
        };
        match auth.authenticate(ctx).await {
            // An interceptor may still authenticate one the authenticator
            // left anonymous; without interceptors nobody will.
            Ok(user)
                if !user.authenticated
                    && self.requires_authentication
                    && self.interceptors.is_empty() =>
            {
                Err(A2aError::new(
                    ErrorKind::Unauthenticated,
                    "this agent requires authentication",
                ))
            }
            Ok(user) => Ok(HeadCheck::admitted(user, &ctx.tenant, auth)),
            Err(err) if err.kind() == ErrorKind::Unauthenticated => Err(err),
            // A tenant refused here may not be the call's (the body may name
            // another): the call decides.
            Err(_) => Ok(HeadCheck::default()),
        }
    }

    async fn call_boxed(
        &self,
        ctx: &mut CallContext,
        request: Box<Request>,
        head: HeadCheck,
    ) -> Result<Response, A2aError> {
        let traced = crate::telemetry::server_span(ctx, &request);
        let named = crate::telemetry::named_ids(&request);
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        let mut agent = None;
        let handle = traced.handle();
        let outcome = traced
            .instrument(self.call_inner(ctx, request, &mut agent, head))
            .await;
        let agent = agent.as_deref().unwrap_or(&self.card).name.as_str();
        crate::telemetry::record_outcome(&handle, ctx, agent, named, &outcome);
        #[cfg(feature = "otel")]
        let outcome = {
            use crate::telemetry::otel;
            otel::record_call(
                ctx.method,
                ctx.binding,
                started.elapsed(),
                outcome.as_ref().err(),
            );
            match outcome {
                Ok(Response::Stream(stream)) => Ok(Response::Stream(otel::count_stream(
                    ctx.method,
                    ctx.binding,
                    stream,
                ))),
                other => other,
            }
        };
        outcome
    }

    /// [`A2aService::call`] without the span: a routed call goes on to its
    /// target here, and `agent` learns which agent answered.
    async fn call_inner(
        &self,
        ctx: &mut CallContext,
        mut request: Box<Request>,
        agent: &mut Option<Arc<AgentCard>>,
        head: HeadCheck,
    ) -> Result<Response, A2aError> {
        if ctx.tenant.is_empty() {
            request.tenant().clone_into(&mut ctx.tenant);
        }
        if let Backend::Routed(router) = &self.backend {
            let (target, tenant) = router.route(&ctx.tenant)?;
            tenant.clone_into(request.tenant_mut());
            ctx.tenant = tenant;
            *agent = Some(target.card.clone());
            return Box::pin(target.call_inner(ctx, request, agent, head)).await;
        }
        if let Some(auth) = &self.authentication {
            ctx.user = match head.user_for(auth, &ctx.tenant) {
                Some(user) => user,
                None => auth.authenticate(ctx).await?,
            };
        }
        self.check_version(ctx)?;
        required_ids(&request)?;
        self.check_extensions(ctx)?;
        let mut ran = 0;
        let mut outcome = None;
        for interceptor in self.interceptors.iter() {
            ran += 1;
            match interceptor.before(ctx, &mut request).await {
                Ok(None) => {}
                Ok(Some(early)) => {
                    outcome = Some(Ok(early));
                    break;
                }
                Err(err) => {
                    outcome = Some(Err(err));
                    break;
                }
            }
        }
        let mut outcome = match outcome {
            Some(outcome) => outcome,
            // An interceptor may have authenticated the caller; nobody did.
            None if self.requires_authentication && !ctx.user.authenticated => Err(A2aError::new(
                ErrorKind::Unauthenticated,
                "this agent requires authentication",
            )),
            None => self.dispatch(ctx, request).await,
        };
        for interceptor in self.interceptors.iter().take(ran).rev() {
            interceptor.after(ctx, &mut outcome).await;
        }
        outcome
    }

    async fn dispatch(
        &self,
        ctx: &CallContext,
        request: Box<Request>,
    ) -> Result<Response, A2aError> {
        let h = match &self.backend {
            Backend::Handler(handler) => handler,
            // `call` hands routed calls on before dispatching.
            Backend::Routed(_) => {
                return Err(A2aError::internal("a routed service has no handler"));
            }
        };
        Ok(match *request {
            Request::SendMessage(r) => Response::SendMessage(h.send_message(ctx, *r).await?),
            Request::SendStreamingMessage(r) => {
                Response::Stream(h.send_streaming_message(ctx, *r).await?)
            }
            Request::GetTask(r) => Response::Task(h.get_task(ctx, r).await?),
            Request::ListTasks(r) => Response::ListTasks(h.list_tasks(ctx, r).await?),
            Request::CancelTask(r) => Response::Task(h.cancel_task(ctx, r).await?),
            Request::SubscribeToTask(r) => Response::Stream(h.subscribe_to_task(ctx, r).await?),
            Request::CreatePushConfig(r) => {
                Response::PushConfig(h.create_task_push_notification_config(ctx, r).await?)
            }
            Request::GetPushConfig(r) => {
                Response::PushConfig(h.get_task_push_notification_config(ctx, r).await?)
            }
            Request::ListPushConfigs(r) => {
                Response::PushConfigs(h.list_task_push_notification_configs(ctx, r).await?)
            }
            Request::DeletePushConfig(r) => {
                h.delete_task_push_notification_config(ctx, r).await?;
                Response::Empty
            }
            Request::GetExtendedAgentCard(r) => {
                Response::AgentCard(Box::new(h.get_extended_agent_card(ctx, r).await?))
            }
        })
    }
}
