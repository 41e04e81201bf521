//! `Client`: calls one agent through the transport chosen from its card.

use std::collections::HashMap;

use a2a_signing::TrustedKeys;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use futures::StreamExt as _;

use a2a_core::operation::{Request, UnaryResponse};

use a2a_core::{
    AgentCard, AgentInterface, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Message, Method, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, binding,
};

use crate::http::HttpSettings;
use crate::{
    CallOptions, CardResolver, ClientError, ClientErrorKind, ClientInterceptor, EventStream,
    JsonRpcTransport, RestTransport, ResumePolicy, RetryPolicy, RootCertificates, Transport,
};
#[cfg(feature = "v03")]
use crate::{JsonRpcV03Transport, RestV03Transport};

/// Makes a [`Transport`] for one interface of a card.
pub trait TransportFactory: Send + Sync + 'static {
    /// Creates a transport talking to `interface`.
    fn create(&self, interface: &AgentInterface) -> Result<Arc<dyn Transport>, ClientError>;

    /// Creates a transport with the builder's shared setup: its HTTP
    /// client, settings and trusted roots. [`ClientBuilder::build`] calls
    /// this one. The default ignores `context` and calls
    /// [`create`](Self::create); a factory whose transport makes its own
    /// connections (gRPC) overrides it, so that it trusts the same roots as
    /// the HTTP bindings.
    fn create_in(
        &self,
        interface: &AgentInterface,
        context: &TransportContext,
    ) -> Result<Arc<dyn Transport>, ClientError> {
        let _ = context;
        self.create(interface)
    }

    /// Whether this factory's transports also speak A2A 0.3 (to interfaces
    /// whose `protocolVersion` is `0.3`). The built-in JSON-RPC and
    /// HTTP+JSON factories do when the crate feature `v03` is on; the
    /// default is `false`.
    fn speaks_v03(&self) -> bool {
        false
    }
}

/// What a [`ClientBuilder`] shares with every transport it makes (see
/// [`TransportFactory::create_in`]).
#[derive(Debug, Clone)]
pub struct TransportContext {
    http: reqwest::Client,
    settings: HttpSettings,
    roots: RootCertificates,
}

impl Default for TransportContext {
    fn default() -> Self {
        TransportContext {
            http: crate::http::default_client(),
            settings: HttpSettings::default(),
            roots: RootCertificates::system(),
        }
    }
}

impl TransportContext {
    /// The HTTP client of the JSON bindings and the card fetch.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Timeouts and limits.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The certificate authorities trusted for `https` URLs.
    pub fn roots(&self) -> &RootCertificates {
        &self.roots
    }
}

/// JSON-RPC or HTTP+JSON on the builder's HTTP client.
struct BuiltIn(&'static str);

impl TransportFactory for BuiltIn {
    fn create(&self, interface: &AgentInterface) -> Result<Arc<dyn Transport>, ClientError> {
        self.create_in(interface, &TransportContext::default())
    }

    fn speaks_v03(&self) -> bool {
        cfg!(feature = "v03")
    }

    fn create_in(
        &self,
        interface: &AgentInterface,
        context: &TransportContext,
    ) -> Result<Arc<dyn Transport>, ClientError> {
        let (http, settings) = (context.http.clone(), context.settings.clone());
        #[cfg(feature = "v03")]
        if is_v03(&interface.protocol_version) {
            return Ok(if self.0 == binding::JSONRPC {
                Arc::new(
                    JsonRpcV03Transport::with_client(http, &interface.url).with_settings(settings),
                )
            } else {
                Arc::new(
                    RestV03Transport::with_client(http, &interface.url).with_settings(settings),
                )
            });
        }
        Ok(if self.0 == binding::JSONRPC {
            Arc::new(JsonRpcTransport::with_client(http, &interface.url).with_settings(settings))
        } else {
            Arc::new(RestTransport::with_client(http, &interface.url).with_settings(settings))
        })
    }
}

impl<F> TransportFactory for F
where
    F: Fn(&AgentInterface) -> Result<Arc<dyn Transport>, ClientError> + Send + Sync + 'static,
{
    fn create(&self, interface: &AgentInterface) -> Result<Arc<dyn Transport>, ClientError> {
        self(interface)
    }
}

/// Whether this client can speak an interface's protocol version (same major).
fn compatible_version(version: &str) -> bool {
    version.trim().split('.').next() == Some("1")
}

/// Whether an interface speaks A2A 0.3, which the built-in JSON-RPC
/// transport also speaks (an empty version is not taken for 0.3 here: 1.0
/// cards always state it, and 0.3 cards are read with it set).
fn is_v03(version: &str) -> bool {
    !version.trim().is_empty() && a2a_core::v03::is_v03_version(Some(version))
}

/// Whether this builder can use `interface`: a 1.0 interface of a
/// registered binding, or a 0.3 one whose binding's factory speaks 0.3.
fn usable(interface: &AgentInterface, factory: Option<&Arc<dyn TransportFactory>>) -> bool {
    let Some(factory) = factory else {
        return false;
    };
    compatible_version(&interface.protocol_version)
        || (is_v03(&interface.protocol_version) && factory.speaks_v03())
}

/// Configures how a [`Client`] is made from a card.
pub struct ClientBuilder {
    factories: HashMap<String, Arc<dyn TransportFactory>>,
    preferences: Vec<String>,
    defaults: CallOptions,
    interceptors: Vec<Arc<dyn ClientInterceptor>>,
    retry: RetryPolicy,
    resume: ResumePolicy,
    track_blocking_sends: bool,
    context: TransportContext,
    /// Whether `context.http` is the builder's own (so it may be remade with
    /// other roots) rather than one the caller gave.
    own_http: bool,
    /// Why the HTTP client could not be made with the requested roots;
    /// reported by `build`, so that the builder's methods chain.
    setup_error: Option<ClientError>,
    /// Keys a card must be signed by, when the caller asked for signed cards.
    card_keys: Option<Arc<TrustedKeys>>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("bindings", &self.factories.keys().collect::<Vec<_>>())
            .field("preferences", &self.preferences)
            .finish()
    }
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder::new()
    }
}

impl ClientBuilder {
    /// JSON-RPC and HTTP+JSON built in, JSON-RPC preferred.
    pub fn new() -> Self {
        let http = crate::http::default_client();
        let mut builder = ClientBuilder::with_http_client(http, HttpSettings::default());
        builder.own_http = true;
        builder
    }

    /// Built-in transports on a custom HTTP client and settings. The client's
    /// TLS setup is its own: to trust a private CA, add it to the client
    /// (`reqwest::ClientBuilder::tls_certs_merge`) and give it to
    /// [`root_certificates`](Self::root_certificates) too, for gRPC.
    pub fn with_http_client(http: reqwest::Client, settings: HttpSettings) -> Self {
        ClientBuilder {
            factories: HashMap::new(),
            preferences: vec![binding::JSONRPC.to_owned(), binding::HTTP_JSON.to_owned()],
            defaults: CallOptions::default(),
            interceptors: Vec::new(),
            retry: RetryPolicy::default(),
            resume: ResumePolicy::default(),
            track_blocking_sends: true,
            context: TransportContext {
                http,
                settings,
                roots: RootCertificates::system(),
            },
            own_http: false,
            setup_error: None,
            card_keys: None,
        }
        .transport(binding::JSONRPC, BuiltIn(binding::JSONRPC))
        .transport(binding::HTTP_JSON, BuiltIn(binding::HTTP_JSON))
    }

    /// Trusts `roots` for `https` URLs on every binding: JSON-RPC, HTTP+JSON,
    /// gRPC (registered with `a2a_grpc::register`, before or after this
    /// call) and the card fetch of [`resolver`](Self::resolver) and
    /// [`connect`](Self::connect). The builder's HTTP client is remade to
    /// trust them; one given to [`with_http_client`](Self::with_http_client)
    /// is kept as it is. A client that cannot be made is reported by
    /// [`build`](Self::build).
    #[must_use]
    pub fn root_certificates(mut self, roots: RootCertificates) -> Self {
        if self.own_http {
            match roots.http_client() {
                Ok(http) => self.context.http = http,
                Err(err) => self.setup_error = Some(err),
            }
        }
        self.context.roots = roots;
        self
    }

    /// Requires every card this builder makes a client from to carry a
    /// signature that verifies with one of `keys` ([`TrustedKeys`]: a JWKS
    /// from a file, or [`fetch_trusted_keys`](Self::fetch_trusted_keys)). A
    /// card without one fails [`build`](Self::build) and
    /// [`connect`](Self::connect) with [`ClientErrorKind::Signature`]. Keys
    /// are only ever taken from here, never from a URL the card names.
    #[must_use]
    pub fn verify_cards(mut self, keys: TrustedKeys) -> Self {
        self.card_keys = Some(Arc::new(keys));
        self
    }

    /// Reads the JWKS at `url` (with this builder's HTTP client and trusted
    /// roots) as keys to [`verify_cards`](Self::verify_cards) with.
    pub async fn fetch_trusted_keys(&self, url: &str) -> Result<TrustedKeys, ClientError> {
        let response = self
            .context
            .http
            .get(url)
            .timeout(std::time::Duration::from_secs(30))
            .send()
            .await
            .map_err(|err| {
                ClientError::new(
                    ClientErrorKind::Connection,
                    format!("fetching the keys at {url}: {err}"),
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(ClientError::new(
                ClientErrorKind::Http,
                format!("fetching the keys at {url}: HTTP {status}"),
            )
            .with_http_status(status.as_u16()));
        }
        let body = crate::http::read_limited(response, crate::resolver::MAX_CARD_SIZE)
            .await
            .map_err(|err| {
                ClientError::new(
                    ClientErrorKind::Decode,
                    format!("reading the keys at {url}: {err}"),
                )
            })?;
        let text = String::from_utf8_lossy(&body);
        TrustedKeys::from_jwks_json(&text).map_err(|err| {
            ClientError::new(ClientErrorKind::Decode, format!("the keys at {url}: {err}"))
        })
    }

    /// A card resolver on this builder's HTTP client (and so its trusted roots).
    pub fn resolver(&self) -> CardResolver {
        CardResolver::with_client(self.context.http.clone())
    }

    /// Fetches the agent card at `base_url` with [`resolver`](Self::resolver)
    /// and builds a client for it.
    pub async fn connect(&self, base_url: &str) -> Result<Client, ClientError> {
        if let Some(err) = &self.setup_error {
            return Err(ClientError::new(err.kind(), err.to_string()));
        }
        let card = self.resolver().resolve(base_url).await?;
        self.build(card)
    }

    /// Registers (or replaces) the transport of a binding, e.g. gRPC from `a2a-grpc`.
    #[must_use]
    pub fn transport(mut self, protocol_binding: &str, factory: impl TransportFactory) -> Self {
        self.factories
            .insert(protocol_binding.to_owned(), Arc::new(factory));
        self
    }

    /// Bindings in order of preference; the card's order breaks ties and
    /// bindings not listed come after.
    #[must_use]
    pub fn prefer<S: Into<String>>(mut self, bindings: impl IntoIterator<Item = S>) -> Self {
        self.preferences = bindings.into_iter().map(Into::into).collect();
        self
    }

    /// Options applied to every call (headers such as `authorization`, extensions).
    #[must_use]
    pub fn default_options(mut self, options: CallOptions) -> Self {
        self.defaults = options;
        self
    }

    /// Adds an interceptor (runs after those added before it).
    #[must_use]
    pub fn interceptor(mut self, interceptor: impl ClientInterceptor) -> Self {
        self.interceptors.push(Arc::new(interceptor));
        self
    }

    /// Whether a blocking `SendMessage` learns its task's id as soon as the
    /// agent makes the task (default: yes), so a call that runs out of time
    /// or loses its connection fails with the id ([`ClientError::task_id`])
    /// instead of losing the task. The call is then made as
    /// `SendStreamingMessage` when the card declares streaming (followed by
    /// `GetTask` for the finished task), else as `SendMessage` with
    /// `returnImmediately` and `GetTask` until the task is done; the answer is
    /// the same as a plain blocking call's. With `false`, it is one plain
    /// blocking call, and a timeout leaves the caller without the task.
    #[must_use]
    pub fn track_blocking_sends(mut self, track: bool) -> Self {
        self.track_blocking_sends = track;
        self
    }

    /// Sets the retry policy (default: [`RetryPolicy::default`]).
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Whether and how the task streams of the clients made here are
    /// resumed when cut (default: [`ResumePolicy::default`], on; see
    /// [`crate::resume`]). [`ResumePolicy::off`] hands a cut stream's end to
    /// the caller as it comes.
    #[must_use]
    pub fn resume_streams(mut self, policy: ResumePolicy) -> Self {
        self.resume = policy;
        self
    }

    /// The interfaces of `card` this builder can use, the one
    /// [`choose`](Self::choose) picks first, then the others in order of
    /// preference: where a cut stream is resumed.
    fn ranked<'c>(&self, card: &'c AgentCard) -> Vec<&'c AgentInterface> {
        let rank = |i: &AgentInterface| {
            self.preferences
                .iter()
                .position(|p| *p == i.protocol_binding)
                .unwrap_or(self.preferences.len())
        };
        let mut usable: Vec<&AgentInterface> = card
            .supported_interfaces
            .iter()
            .filter(|i| usable(i, self.factories.get(&i.protocol_binding)))
            .collect();
        usable.sort_by_key(|i| (is_v03(&i.protocol_version), rank(i)));
        usable
    }

    /// The interface this builder would pick from `card`.
    pub fn choose<'c>(&self, card: &'c AgentCard) -> Result<&'c AgentInterface, ClientError> {
        let rank = |i: &AgentInterface| {
            self.preferences
                .iter()
                .position(|p| *p == i.protocol_binding)
                .unwrap_or(self.preferences.len())
        };
        // 1.0 before 0.3 whatever the binding: 0.3 only when nothing else will do.
        card.supported_interfaces
            .iter()
            .filter(|i| usable(i, self.factories.get(&i.protocol_binding)))
            .min_by_key(|i| (is_v03(&i.protocol_version), rank(i)))
            .ok_or_else(|| {
                let offered: Vec<String> = card
                    .supported_interfaces
                    .iter()
                    .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
                    .collect();
                ClientError::unsupported(format!(
                    "no interface of {:?} is usable (offered: {}; supported: {})",
                    card.name,
                    offered.join(", "),
                    self.factories
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// A client for `card`, on the preferred usable interface.
    pub fn build(&self, card: AgentCard) -> Result<Client, ClientError> {
        if let Some(err) = &self.setup_error {
            return Err(ClientError::new(err.kind(), err.to_string()));
        }
        if let Some(keys) = &self.card_keys {
            keys.verify(&card).map_err(|err| {
                ClientError::new(
                    ClientErrorKind::Signature,
                    format!("the card of {:?} is not trusted: {err}", card.name),
                )
            })?;
        }
        let interface = self.choose(&card)?.clone();
        let transport =
            self.factories[&interface.protocol_binding].create_in(&interface, &self.context)?;
        let others = self
            .ranked(&card)
            .into_iter()
            .filter(|i| **i != interface)
            .map(|i| Alternative {
                interface: i.clone(),
                factory: self.factories[&i.protocol_binding].clone(),
                transport: OnceLock::new(),
            })
            .collect();
        Ok(Client {
            transport,
            interface,
            card: Some(Arc::new(card)),
            defaults: Arc::new(self.defaults.clone()),
            interceptors: self.interceptors.clone().into(),
            retry: self.retry.clone(),
            resume: self.resume.clone(),
            others: Arc::new(Alternatives {
                list: others,
                context: self.context.clone(),
            }),
            track_blocking_sends: self.track_blocking_sends,
        })
    }
}

/// An interface of the card besides the one a [`Client`] uses, with its
/// transport once made.
struct Alternative {
    interface: AgentInterface,
    factory: Arc<dyn TransportFactory>,
    transport: OnceLock<Arc<dyn Transport>>,
}

/// The other interfaces a [`Client`] may resume a stream on, in order of
/// preference, and what their transports are made with.
#[derive(Default)]
struct Alternatives {
    list: Vec<Alternative>,
    context: TransportContext,
}

/// Calls one agent. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> Result<(), a2a_client::ClientError> {
/// let client = a2a_client::Client::connect("http://127.0.0.1:9999").await?;
/// let reply = client.send_text("hello").await?;
/// # let _ = reply; Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    transport: Arc<dyn Transport>,
    interface: AgentInterface,
    card: Option<Arc<AgentCard>>,
    defaults: Arc<CallOptions>,
    interceptors: Arc<[Arc<dyn ClientInterceptor>]>,
    retry: RetryPolicy,
    resume: ResumePolicy,
    /// Where a cut stream may also be resumed.
    others: Arc<Alternatives>,
    track_blocking_sends: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("interface", &self.interface)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Fetches the agent card at `base_url` and connects with the default builder.
    pub async fn connect(base_url: &str) -> Result<Client, ClientError> {
        let card = CardResolver::new().resolve(base_url).await?;
        ClientBuilder::new().build(card)
    }

    /// A client on an explicit transport (no card).
    pub fn from_transport(transport: impl Transport, interface: AgentInterface) -> Client {
        Client {
            transport: Arc::new(transport),
            interface,
            card: None,
            defaults: Arc::new(CallOptions::default()),
            interceptors: Arc::from(Vec::new()),
            retry: RetryPolicy::default(),
            resume: ResumePolicy::default(),
            others: Arc::new(Alternatives::default()),
            track_blocking_sends: true,
        }
    }

    /// This client, resuming cut task streams as `policy` says (see
    /// [`ClientBuilder::resume_streams`]).
    #[must_use]
    pub fn with_stream_resume(mut self, policy: ResumePolicy) -> Self {
        self.resume = policy;
        self
    }

    /// How this client resumes cut task streams.
    pub fn resume_policy(&self) -> &ResumePolicy {
        &self.resume
    }

    /// How many interfaces a stream may be resumed on: this client's own,
    /// then the card's other usable ones.
    pub(crate) fn interface_count(&self) -> usize {
        1 + self.others.list.len()
    }

    /// This client on interface `index` of [`interface_count`]
    /// (0 is its own), its transport made on first use.
    ///
    /// [`interface_count`]: Self::interface_count
    pub(crate) fn on_interface(&self, index: usize) -> Result<Client, ClientError> {
        let Some(other) = index.checked_sub(1).and_then(|i| self.others.list.get(i)) else {
            return Ok(self.clone());
        };
        let transport = match other.transport.get() {
            Some(transport) => transport.clone(),
            None => {
                let made = other
                    .factory
                    .create_in(&other.interface, &self.others.context)?;
                other.transport.get_or_init(|| made).clone()
            }
        };
        Ok(Client {
            transport,
            interface: other.interface.clone(),
            ..self.clone()
        })
    }

    /// This client, with blocking sends tracked or not (see
    /// [`ClientBuilder::track_blocking_sends`]).
    #[must_use]
    pub fn with_tracked_blocking_sends(mut self, track: bool) -> Self {
        self.track_blocking_sends = track;
        self
    }

    /// The interface in use.
    pub fn interface(&self) -> &AgentInterface {
        &self.interface
    }

    /// The card the client was made from, if any.
    pub fn card(&self) -> Option<&AgentCard> {
        self.card.as_deref()
    }

    fn options(&self, call: Option<&CallOptions>) -> CallOptions {
        let mut options = (*self.defaults).clone();
        if let Some(call) = call {
            options.headers.extend(call.headers.iter().cloned());
            options.extensions.extend(call.extensions.iter().cloned());
            options.query.extend(call.query.iter().cloned());
            options.timeout = call.timeout.or(options.timeout);
            options.idle_timeout = call.idle_timeout.or(options.idle_timeout);
        }
        options
    }

    /// Runs one call: the interface's tenant, interceptors around it,
    /// retried by the policy when the operation may be repeated. Only a
    /// call that may be repeated is copied for its attempts; any other
    /// goes to the transport as it is.
    async fn run<T, F, Fut>(
        &self,
        mut request: Request,
        repeatable: bool,
        call: Option<&CallOptions>,
        attempt: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(Request, CallOptions) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let method = request.method();
        self.tenant(request.tenant_mut());
        let mut pending = Some(request);
        let card = self.card.as_deref();
        let span = crate::telemetry::client_span(
            method,
            &self.interface.protocol_binding,
            card.map_or("", |c| c.name.as_str()),
            &self.interface.url,
        );
        #[cfg(feature = "otel")]
        let started = std::time::Instant::now();
        #[cfg(feature = "otel")]
        let trace_context = crate::telemetry::call_context(&span);
        let mut retries = 0;
        let outcome = loop {
            let mut options = self.options(call);
            if let Err(err) = self
                .interceptors
                .iter()
                .try_for_each(|i| i.before(method, &mut options, card))
            {
                break Err(err);
            }
            #[cfg(feature = "otel")]
            if let Some(context) = &trace_context {
                crate::telemetry::inject(context, &mut options.headers);
            }
            let this = if repeatable {
                pending.clone()
            } else {
                pending.take()
            };
            // Only a repeatable call comes round again, and it is still there.
            let Some(this) = this else {
                break Err(ClientError::unsupported(format!(
                    "{method} may not be repeated"
                )));
            };
            match tracing::Instrument::instrument(attempt(this, options), span.span.clone()).await {
                Ok(value) => break Ok(value),
                Err(err) => match self.retry.delay(retries, &err).filter(|_| repeatable) {
                    Some(wait) => {
                        tracing::debug!(%method, retry = retries + 1, ?wait, error = %err, "retrying");
                        tokio::time::sleep(wait).await;
                        retries += 1;
                    }
                    None => break Err(err),
                },
            }
        };
        for interceptor in self.interceptors.iter() {
            interceptor.after(method, outcome.as_ref().err());
        }
        if let Err(err) = &outcome {
            crate::telemetry::record_error(&span, err);
        }
        #[cfg(feature = "otel")]
        crate::telemetry::record_call(
            method,
            &self.interface.protocol_binding,
            started.elapsed(),
            outcome.as_ref().err(),
        );
        outcome
    }

    /// One unary operation, answered with its own kind of answer `T`.
    async fn unary<T>(
        &self,
        request: Request,
        repeatable: bool,
        options: Option<&CallOptions>,
    ) -> Result<T, ClientError>
    where
        T: TryFrom<UnaryResponse, Error = UnaryResponse>,
    {
        let method = request.method();
        let transport = &self.transport;
        let answer = self
            .run(request, repeatable, options, |request, o| async move {
                transport.call(request, &o).await
            })
            .await?;
        T::try_from(answer).map_err(|other| {
            ClientError::decode(format!(
                "{method} was answered with {} instead of its own answer",
                other.kind()
            ))
        })
    }

    /// One streaming operation: the events as they come, resumed when cut
    /// (as the client's [`ResumePolicy`] says); interceptors see each one.
    async fn streaming(
        &self,
        request: Request,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        let method = request.method();
        let stream = self.open_stream(request, options).await?;
        let stream = match self.resume.enabled {
            true => {
                crate::resume::resuming(self.clone(), stream, options.cloned(), self.resume.clone())
            }
            false => stream,
        };
        Ok(self.observe(method, stream))
    }

    /// One streaming operation, never resumed (for the task follower, which
    /// recovers in its own way); interceptors see each event.
    pub(crate) async fn streaming_once(
        &self,
        request: Request,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        let method = request.method();
        let stream = self.open_stream(request, options).await?;
        Ok(self.observe(method, stream))
    }

    /// Opens one stream on this client's transport, as it comes.
    pub(crate) async fn open_stream(
        &self,
        request: Request,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        let transport = &self.transport;
        self.run(request, false, options, |request, o| async move {
            transport.stream(request, &o).await
        })
        .await
    }

    /// Passes every event of a stream through the interceptors.
    fn observe(&self, method: Method, stream: EventStream) -> EventStream {
        if self.interceptors.is_empty() {
            return stream;
        }
        let interceptors = self.interceptors.clone();
        Box::pin(stream.map(move |item| {
            item.map(|mut event| {
                for interceptor in interceptors.iter() {
                    interceptor.on_event(method, &mut event);
                }
                event
            })
        }))
    }

    fn tenant(&self, tenant: &mut String) {
        if tenant.is_empty() {
            tenant.clone_from(&self.interface.tenant);
        }
    }

    /// Sends a user text message and waits for the result (blocking send).
    pub async fn send_text(&self, text: &str) -> Result<SendMessageResponse, ClientError> {
        self.send_message(SendMessageRequest::new(Message::user_text(text)), None)
            .await
    }

    /// `SendMessage`. A blocking send (no `returnImmediately`) is tracked
    /// unless turned off ([`ClientBuilder::track_blocking_sends`]): when it
    /// fails after the agent made the task, the error carries the task's id
    /// ([`ClientError::task_id`]).
    pub async fn send_message(
        &self,
        request: SendMessageRequest,
        options: Option<&CallOptions>,
    ) -> Result<SendMessageResponse, ClientError> {
        let blocking = !request
            .configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately);
        if blocking && self.track_blocking_sends {
            return self.send_tracked(request, options).await;
        }
        self.send_message_once(request, options).await
    }

    async fn send_message_once(
        &self,
        request: SendMessageRequest,
        options: Option<&CallOptions>,
    ) -> Result<SendMessageResponse, ClientError> {
        let repeatable = self.retry.retry_send_message && !request.message.message_id.is_empty();
        self.unary(Request::SendMessage(Box::new(request)), repeatable, options)
            .await
    }

    /// A blocking send that knows its task from the first event on (see
    /// [`crate::follow`]), within the call's timeout.
    async fn send_tracked(
        &self,
        request: SendMessageRequest,
        options: Option<&CallOptions>,
    ) -> Result<SendMessageResponse, ClientError> {
        let deadline = self
            .options(options)
            .timeout
            .or_else(|| self.transport.default_timeout())
            .map(|timeout| tokio::time::Instant::now() + timeout);
        let send_once = |request| self.send_message_once(request, options);
        crate::follow::send_tracked(self, request, options, deadline, send_once).await
    }

    /// `GetTask`.
    pub async fn get_task(
        &self,
        request: GetTaskRequest,
        options: Option<&CallOptions>,
    ) -> Result<Task, ClientError> {
        self.unary(Request::GetTask(request), true, options).await
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        request: ListTasksRequest,
        options: Option<&CallOptions>,
    ) -> Result<ListTasksResponse, ClientError> {
        self.unary(Request::ListTasks(request), true, options).await
    }

    /// `CancelTask`.
    pub async fn cancel_task(
        &self,
        request: CancelTaskRequest,
        options: Option<&CallOptions>,
    ) -> Result<Task, ClientError> {
        self.unary(Request::CancelTask(request), true, options)
            .await
    }

    /// `CreateTaskPushNotificationConfig` (repeated on failure only when the
    /// config has its own id, so a retry cannot make a second one).
    pub async fn create_task_push_notification_config(
        &self,
        request: TaskPushNotificationConfig,
        options: Option<&CallOptions>,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        let repeatable = !request.id.is_empty();
        self.unary(Request::CreatePushConfig(request), repeatable, options)
            .await
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_task_push_notification_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        options: Option<&CallOptions>,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.unary(Request::GetPushConfig(request), true, options)
            .await
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_task_push_notification_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        options: Option<&CallOptions>,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        self.unary(Request::ListPushConfigs(request), true, options)
            .await
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_task_push_notification_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        options: Option<&CallOptions>,
    ) -> Result<(), ClientError> {
        self.unary(Request::DeletePushConfig(request), true, options)
            .await
    }

    /// `SendStreamingMessage`: the events as they come; interceptors see
    /// each one. A task stream cut before the task settles is resumed (see
    /// [`crate::resume`]) unless [`ClientBuilder::resume_streams`] says not.
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        self.streaming(Request::SendStreamingMessage(Box::new(request)), options)
            .await
    }

    /// `SubscribeToTask`: the events as they come; interceptors see each
    /// one. Cut before the task settles, it is resumed as
    /// [`send_streaming_message`](Self::send_streaming_message)'s stream is.
    pub async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        self.streaming(Request::SubscribeToTask(request), options)
            .await
    }

    /// `GetExtendedAgentCard`.
    pub async fn get_extended_agent_card(
        &self,
        options: Option<&CallOptions>,
    ) -> Result<AgentCard, ClientError> {
        let request = GetExtendedAgentCardRequest::default();
        self.unary(Request::GetExtendedAgentCard(request), true, options)
            .await
    }
}
