//! `Client`: calls one agent through the transport chosen from its card.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::StreamExt as _;

use a2a_core::{
    AgentCard, AgentInterface, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse,
    ListTasksRequest, ListTasksResponse, Message, Method, SendMessageRequest, SendMessageResponse,
    SubscribeToTaskRequest, Task, TaskPushNotificationConfig, binding,
};

use crate::http::HttpSettings;
use crate::{
    CallOptions, CardResolver, ClientError, ClientInterceptor, EventStream, JsonRpcTransport,
    RestTransport, RetryPolicy, Transport,
};

/// Makes a [`Transport`] for one interface of a card.
pub trait TransportFactory: Send + Sync + 'static {
    /// Creates a transport talking to `interface`.
    fn create(&self, interface: &AgentInterface) -> Result<Arc<dyn Transport>, ClientError>;
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

/// Configures how a [`Client`] is made from a card.
pub struct ClientBuilder {
    factories: HashMap<String, Arc<dyn TransportFactory>>,
    preferences: Vec<String>,
    defaults: CallOptions,
    interceptors: Vec<Arc<dyn ClientInterceptor>>,
    retry: RetryPolicy,
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
        ClientBuilder::with_http_client(http, HttpSettings::default())
    }

    /// Built-in transports on a custom HTTP client and settings.
    pub fn with_http_client(http: reqwest::Client, settings: HttpSettings) -> Self {
        let mut builder = ClientBuilder {
            factories: HashMap::new(),
            preferences: vec![binding::JSONRPC.to_owned(), binding::HTTP_JSON.to_owned()],
            defaults: CallOptions::default(),
            interceptors: Vec::new(),
            retry: RetryPolicy::default(),
        };
        let (h, s) = (http.clone(), settings.clone());
        builder = builder.transport(binding::JSONRPC, move |i: &AgentInterface| {
            Ok(
                Arc::new(JsonRpcTransport::with_client(h.clone(), &i.url).with_settings(s.clone()))
                    as Arc<dyn Transport>,
            )
        });
        builder.transport(binding::HTTP_JSON, move |i: &AgentInterface| {
            Ok(Arc::new(
                RestTransport::with_client(http.clone(), &i.url).with_settings(settings.clone()),
            ) as Arc<dyn Transport>)
        })
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

    /// Sets the retry policy (default: [`RetryPolicy::default`]).
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The interface this builder would pick from `card`.
    pub fn choose<'c>(&self, card: &'c AgentCard) -> Result<&'c AgentInterface, ClientError> {
        let rank = |i: &AgentInterface| {
            self.preferences
                .iter()
                .position(|p| *p == i.protocol_binding)
                .unwrap_or(self.preferences.len())
        };
        card.supported_interfaces
            .iter()
            .filter(|i| {
                self.factories.contains_key(&i.protocol_binding)
                    && compatible_version(&i.protocol_version)
            })
            .min_by_key(|i| rank(i))
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
        let interface = self.choose(&card)?.clone();
        let transport = self.factories[&interface.protocol_binding].create(&interface)?;
        Ok(Client {
            transport,
            interface,
            card: Some(Arc::new(card)),
            defaults: Arc::new(self.defaults.clone()),
            interceptors: self.interceptors.clone().into(),
            retry: self.retry.clone(),
        })
    }
}

/// One unary operation: the interface's tenant, interceptors, retries when
/// `repeatable`, then the transport.
macro_rules! call {
    ($self:ident, $method:ident, $op:ident, $request:ident, $options:ident, $repeatable:expr) => {{
        $self.tenant(&mut $request.tenant);
        let repeatable = $repeatable;
        let transport = &$self.transport;
        $self
            .run(Method::$method, repeatable, $options, |o| {
                let request = $request.clone();
                async move { transport.$op(request, &o).await }
            })
            .await
    }};
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
        }
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

    /// Runs one operation: interceptors around it, retried by the policy when
    /// the operation may be repeated.
    async fn run<T, F, Fut>(
        &self,
        method: Method,
        repeatable: bool,
        call: Option<&CallOptions>,
        attempt: F,
    ) -> Result<T, ClientError>
    where
        F: Fn(CallOptions) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let card = self.card.as_deref();
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
            match attempt(options).await {
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
        outcome
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

    /// `SendMessage`.
    pub async fn send_message(
        &self,
        mut request: SendMessageRequest,
        options: Option<&CallOptions>,
    ) -> Result<SendMessageResponse, ClientError> {
        call!(
            self,
            SendMessage,
            send_message,
            request,
            options,
            self.retry.retry_send_message && !request.message.message_id.is_empty()
        )
    }

    /// `GetTask`.
    pub async fn get_task(
        &self,
        mut request: GetTaskRequest,
        options: Option<&CallOptions>,
    ) -> Result<Task, ClientError> {
        call!(self, GetTask, get_task, request, options, true)
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        mut request: ListTasksRequest,
        options: Option<&CallOptions>,
    ) -> Result<ListTasksResponse, ClientError> {
        call!(self, ListTasks, list_tasks, request, options, true)
    }

    /// `CancelTask`.
    pub async fn cancel_task(
        &self,
        mut request: CancelTaskRequest,
        options: Option<&CallOptions>,
    ) -> Result<Task, ClientError> {
        call!(self, CancelTask, cancel_task, request, options, true)
    }

    /// `CreateTaskPushNotificationConfig`.
    pub async fn create_task_push_notification_config(
        &self,
        mut request: TaskPushNotificationConfig,
        options: Option<&CallOptions>,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        call!(
            self,
            CreateTaskPushNotificationConfig,
            create_task_push_notification_config,
            request,
            options,
            !request.id.is_empty()
        )
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_task_push_notification_config(
        &self,
        mut request: GetTaskPushNotificationConfigRequest,
        options: Option<&CallOptions>,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        call!(
            self,
            GetTaskPushNotificationConfig,
            get_task_push_notification_config,
            request,
            options,
            true
        )
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_task_push_notification_configs(
        &self,
        mut request: ListTaskPushNotificationConfigsRequest,
        options: Option<&CallOptions>,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        call!(
            self,
            ListTaskPushNotificationConfigs,
            list_task_push_notification_configs,
            request,
            options,
            true
        )
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_task_push_notification_config(
        &self,
        mut request: DeleteTaskPushNotificationConfigRequest,
        options: Option<&CallOptions>,
    ) -> Result<(), ClientError> {
        call!(
            self,
            DeleteTaskPushNotificationConfig,
            delete_task_push_notification_config,
            request,
            options,
            true
        )
    }

    /// `SendStreamingMessage`: the events as they come; interceptors see each one.
    pub async fn send_streaming_message(
        &self,
        mut request: SendMessageRequest,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        self.tenant(&mut request.tenant);
        let transport = &self.transport;
        let stream = self
            .run(Method::SendStreamingMessage, false, options, |o| {
                let request = request.clone();
                async move { transport.send_streaming_message(request, &o).await }
            })
            .await?;
        Ok(self.observe(Method::SendStreamingMessage, stream))
    }

    /// `SubscribeToTask`: the events as they come; interceptors see each one.
    pub async fn subscribe_to_task(
        &self,
        mut request: SubscribeToTaskRequest,
        options: Option<&CallOptions>,
    ) -> Result<EventStream, ClientError> {
        self.tenant(&mut request.tenant);
        let transport = &self.transport;
        let stream = self
            .run(Method::SubscribeToTask, false, options, |o| {
                let request = request.clone();
                async move { transport.subscribe_to_task(request, &o).await }
            })
            .await?;
        Ok(self.observe(Method::SubscribeToTask, stream))
    }

    /// `GetExtendedAgentCard`.
    pub async fn get_extended_agent_card(
        &self,
        options: Option<&CallOptions>,
    ) -> Result<AgentCard, ClientError> {
        let mut request = GetExtendedAgentCardRequest::default();
        self.tenant(&mut request.tenant);
        let transport = &self.transport;
        self.run(Method::GetExtendedAgentCard, true, options, |o| {
            let request = request.clone();
            async move { transport.get_extended_agent_card(request, &o).await }
        })
        .await
    }
}
