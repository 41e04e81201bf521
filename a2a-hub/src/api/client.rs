//! [`HubApiClient`]: typed calls to the hub's HTTP API of a running server,
//! with the caller's credentials, and the errors they fail with.

use std::time::Duration;

use a2a_client::RootCertificates;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::feed::HubFeed;
use super::{
    ChannelList, ChannelQuery, CollaborateRequest, CollaborationAnswer, ErrorBody, MessageList,
    MessagesQuery, PostMessage, PostedMessage, ResumedThread, ThreadList, ThreadsQuery,
};
use crate::error::{HubError, HubErrorKind};
use crate::model::{ChannelView, Collaboration, HubMessage, ThreadView};

/// How long the live feed may say nothing, keep-alives included, before
/// the connection counts as gone (the hub sends one every 15 s).
const FEED_SILENCE: Duration = Duration::from_secs(60);

/// The class of a [`HubApiError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HubApiErrorKind {
    /// The client's setup is unusable: its URL, a header, the token or a CA
    /// certificate.
    Config,
    /// The server could not be reached.
    Unreachable,
    /// The server wants credentials, or refused those given (401).
    Unauthorized,
    /// The hub refused the call and said why ([`HubApiError::hub_error`]).
    Refused,
    /// The server has no hub: it answered 404 for the API.
    NoHub,
    /// The server answered with a status and a body the API does not send.
    Status,
    /// An answer, or an event of the live feed, is not what the API sends.
    Decode,
    /// The live feed broke off, closed or went silent.
    Feed,
}

/// Why a call to the hub's API failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct HubApiError {
    kind: HubApiErrorKind,
    message: String,
    status: Option<u16>,
    hub: Option<HubError>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl HubApiError {
    pub(super) fn new(kind: HubApiErrorKind, message: impl Into<String>) -> Self {
        HubApiError {
            kind,
            message: message.into(),
            status: None,
            hub: None,
            source: None,
        }
    }

    pub(super) fn caused_by(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    fn with_status(mut self, status: StatusCode) -> Self {
        self.status = Some(status.as_u16());
        self
    }

    /// The class.
    pub fn kind(&self) -> HubApiErrorKind {
        self.kind
    }

    /// The HTTP status the server answered with, if it answered.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The hub's own refusal, with its kind and, for a loop guard's, when
    /// to try again.
    pub fn hub_error(&self) -> Option<&HubError> {
        self.hub.as_ref()
    }
}

/// Builds a [`HubApiClient`]; what it is given is checked by
/// [`HubApiClientBuilder::build`].
#[derive(Debug)]
pub struct HubApiClientBuilder {
    base: Result<Url, HubApiError>,
    headers: Vec<(String, String, bool)>,
    roots: Option<RootCertificates>,
    feed_silence: Duration,
}

impl HubApiClientBuilder {
    /// Sends header `name: value` with every call (an API key, say).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into(), false));
        self
    }

    /// Sends `Authorization: Bearer <token>`: a person's token, or an
    /// agent's secret to act as that agent.
    #[must_use]
    pub fn bearer_token(mut self, token: &str) -> Self {
        let value = format!("Bearer {}", token.trim());
        self.headers
            .push((AUTHORIZATION.as_str().to_owned(), value, true));
        self
    }

    /// Also trusts the CA certificates `roots` added, for https.
    #[must_use]
    pub fn root_certificates(mut self, roots: RootCertificates) -> Self {
        self.roots = Some(roots);
        self
    }

    /// How long the live feed may say nothing, keep-alives included, before
    /// it fails (default 60 s; the hub sends a keep-alive every 15 s).
    #[must_use]
    pub fn feed_silence(mut self, silence: Duration) -> Self {
        self.feed_silence = silence;
        self
    }

    /// The client, or why what it was given cannot make one.
    pub fn build(self) -> Result<HubApiClient, HubApiError> {
        let base = self.base?;
        let mut headers = HeaderMap::new();
        for (name, value, sensitive) in self.headers {
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|err| {
                HubApiError::new(
                    HubApiErrorKind::Config,
                    format!("header {name:?} has an invalid name"),
                )
                .caused_by(err)
            })?;
            let mut value = HeaderValue::from_str(value.trim()).map_err(|err| {
                let message = format!("header {name} holds characters a header cannot carry");
                HubApiError::new(HubApiErrorKind::Config, message).caused_by(err)
            })?;
            value.set_sensitive(sensitive);
            // One token, however often given; other headers as often as given.
            if sensitive {
                headers.insert(name, value);
            } else {
                headers.append(name, value);
            }
        }
        // A connect timeout only: the live feed streams without end.
        let mut http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true);
        if let Some(roots) = &self.roots {
            let certificates = roots
                .added()
                .iter()
                .map(|c| reqwest::Certificate::from_der(c.as_ref()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| {
                    HubApiError::new(HubApiErrorKind::Config, "a CA certificate cannot be used")
                        .caused_by(err)
                })?;
            http = http.tls_certs_merge(certificates);
        }
        let http = http.build().map_err(|err| {
            HubApiError::new(HubApiErrorKind::Config, "cannot set up the HTTP client")
                .caused_by(err)
        })?;
        Ok(HubApiClient {
            http,
            base,
            headers,
            feed_silence: self.feed_silence,
        })
    }
}

/// Calls the hub's HTTP API (see [`crate::http`]) of the server at a base
/// URL. Cheap to clone.
#[derive(Debug, Clone)]
pub struct HubApiClient {
    http: reqwest::Client,
    base: Url,
    headers: HeaderMap,
    feed_silence: Duration,
}

impl HubApiClient {
    /// A client of the server at `base_url` (what `a2a serve` prints as
    /// "listening on"), with no credentials.
    pub fn new(base_url: &str) -> Result<Self, HubApiError> {
        HubApiClient::builder(base_url).build()
    }

    /// A builder for a client of the server at `base_url`.
    pub fn builder(base_url: &str) -> HubApiClientBuilder {
        HubApiClientBuilder {
            base: base_of(base_url),
            headers: Vec::new(),
            roots: None,
            feed_silence: FEED_SILENCE,
        }
    }

    /// The server's base URL, as the client uses it.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    /// `GET /hub/api/channels`.
    pub async fn channels(&self) -> Result<Vec<ChannelView>, HubApiError> {
        let answer: ChannelList = self.get("channels", &ChannelQuery::default()).await?;
        Ok(answer.channels)
    }

    /// `GET /hub/api/threads`: of one channel or all, the most recently
    /// active first, every page of them.
    pub async fn threads(&self, channel: Option<&str>) -> Result<Vec<ThreadView>, HubApiError> {
        let mut query = ThreadsQuery {
            channel: channel.map(str::to_owned),
            limit: Some(crate::MAX_PAGE),
            cursor: None,
        };
        let mut threads = Vec::new();
        loop {
            let page: ThreadList = self.get("threads", &query).await?;
            threads.extend(page.threads);
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => return Ok(threads),
            }
        }
    }

    /// The thread `id`, if the hub lists it.
    pub async fn thread(&self, id: &str) -> Result<Option<ThreadView>, HubApiError> {
        let threads = self.threads(None).await?;
        Ok(threads.into_iter().find(|t| t.id == id))
    }

    /// `GET /hub/api/messages`: the last messages of a channel (at channel
    /// level) or of a thread, oldest first.
    pub async fn messages(&self, query: &MessagesQuery) -> Result<Vec<HubMessage>, HubApiError> {
        let answer: MessageList = self.get("messages", query).await?;
        Ok(answer.messages)
    }

    /// `POST /hub/api/messages`: the message as stored, with who handles it.
    pub async fn post(&self, message: &PostMessage) -> Result<HubMessage, HubApiError> {
        let answer: PostedMessage = self
            .call_json(Method::POST, self.url(&["messages"])?, Some(message))
            .await?;
        Ok(answer.message)
    }

    /// `POST /hub/api/collaborate`: answers as soon as the target took the
    /// message, or delivery goes on in the background.
    pub async fn collaborate(
        &self,
        request: &CollaborateRequest,
    ) -> Result<Collaboration, HubApiError> {
        let url = self.url(&["collaborate"])?;
        let answer: CollaborationAnswer = self.call_json(Method::POST, url, Some(request)).await?;
        Ok(answer.collaboration)
    }

    /// `POST /hub/api/threads/{id}/resume`: a person resumes a thread a
    /// loop guard paused.
    pub async fn resume(&self, thread: &str) -> Result<ThreadView, HubApiError> {
        let url = self.url(&["threads", thread, "resume"])?;
        let nothing = serde_json::Map::new();
        let answer: ResumedThread = self.call_json(Method::POST, url, Some(&nothing)).await?;
        Ok(answer.thread)
    }

    /// `GET /hub/api/events`: the live feed, of one channel or all, from now
    /// on.
    pub async fn feed(&self, channel: Option<&str>) -> Result<HubFeed, HubApiError> {
        let mut url = self.url(&["events"])?;
        if let Some(channel) = channel {
            url.query_pairs_mut().append_pair("channel", channel);
        }
        let response = self.send(Method::GET, url, None::<&()>).await?;
        Ok(HubFeed::new(response, self.feed_silence))
    }

    /// The URL of the API's path `segments`.
    fn url(&self, segments: &[&str]) -> Result<Url, HubApiError> {
        let mut url = self
            .base
            .join(super::API_PATH.trim_start_matches('/'))
            .map_err(|err| {
                HubApiError::new(
                    HubApiErrorKind::Config,
                    format!("cannot make a URL of {}", self.base),
                )
                .caused_by(err)
            })?;
        url.path_segments_mut()
            .map_err(|()| {
                HubApiError::new(
                    HubApiErrorKind::Config,
                    format!("{} cannot be a base", self.base),
                )
            })?
            .extend(segments);
        Ok(url)
    }

    async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &impl Serialize,
    ) -> Result<T, HubApiError> {
        let mut url = self.url(&[path])?;
        let pairs = serde_urlencoded::to_string(query).map_err(|err| {
            HubApiError::new(HubApiErrorKind::Config, "the query cannot be written").caused_by(err)
        })?;
        url.set_query((!pairs.is_empty()).then_some(pairs.as_str()));
        self.call_json(Method::GET, url, None::<&()>).await
    }

    async fn call_json<T: DeserializeOwned>(
        &self,
        method: Method,
        url: Url,
        body: Option<&impl Serialize>,
    ) -> Result<T, HubApiError> {
        let response = self.send(method, url, body).await?;
        let bytes = response.bytes().await.map_err(|err| {
            HubApiError::new(HubApiErrorKind::Decode, "the hub's answer was cut off").caused_by(err)
        })?;
        serde_json::from_slice(&bytes).map_err(|err| {
            HubApiError::new(
                HubApiErrorKind::Decode,
                "the hub's answer is not what the API sends",
            )
            .caused_by(err)
        })
    }

    /// Sends a request; a refusal becomes the error the API gave.
    async fn send(
        &self,
        method: Method,
        url: Url,
        body: Option<&impl Serialize>,
    ) -> Result<reqwest::Response, HubApiError> {
        let mut request = self
            .http
            .request(method, url.clone())
            .headers(self.headers.clone());
        if let Some(body) = body {
            let body = serde_json::to_vec(body).map_err(|err| {
                HubApiError::new(HubApiErrorKind::Config, "the body cannot be written")
                    .caused_by(err)
            })?;
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body);
        }
        let response = request.send().await.map_err(|err| {
            let message = format!("cannot reach the hub at {}", self.base);
            HubApiError::new(HubApiErrorKind::Unreachable, message).caused_by(err)
        })?;
        if response.status().is_success() {
            return Ok(response);
        }
        Err(self.refusal(&url, response).await)
    }

    /// The error a response that is no success stands for.
    async fn refusal(&self, url: &Url, response: reqwest::Response) -> HubApiError {
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .map(Duration::from_secs);
        let text = response.text().await.unwrap_or_default();
        match serde_json::from_str::<ErrorBody>(&text) {
            // The hub's own errors are `{"error": {"message"}}`; the A2A
            // binding's (a route it does not know) carry a `status` too.
            Ok(body) if body.error.status.is_none() => {
                return hub_refusal(status, body.error.message, retry_after);
            }
            Ok(body) if status != StatusCode::NOT_FOUND => {
                let message = format!("the hub answered {status}: {}", body.error.message);
                return HubApiError::new(HubApiErrorKind::Status, message).with_status(status);
            }
            _ => {}
        }
        if status == StatusCode::NOT_FOUND {
            let message = format!(
                "no collaboration hub at {} (HTTP 404 for {}): serve a gateway file with a \
                 [hub] table (`a2a serve --config FILE`)",
                self.base,
                url.path()
            );
            return HubApiError::new(HubApiErrorKind::NoHub, message).with_status(status);
        }
        let message = match text.trim() {
            "" => format!("the hub answered {status}"),
            text => format!("the hub answered {status}: {text}"),
        };
        HubApiError::new(HubApiErrorKind::Status, message).with_status(status)
    }
}

/// The hub's own refusal, answered with `status`.
fn hub_refusal(status: StatusCode, message: String, retry_after: Option<Duration>) -> HubApiError {
    let kind = match status.as_u16() {
        401 => None,
        404 => Some(HubErrorKind::NotFound),
        429 => Some(HubErrorKind::Refused),
        502 => Some(HubErrorKind::Undelivered),
        503 => Some(HubErrorKind::Store),
        _ => Some(HubErrorKind::Invalid),
    };
    let Some(kind) = kind else {
        return HubApiError::new(HubApiErrorKind::Unauthorized, message).with_status(status);
    };
    let mut error = HubApiError::new(HubApiErrorKind::Refused, message.clone()).with_status(status);
    error.hub = Some(HubError::answered(kind, message, retry_after));
    error
}

/// `base_url` as the base of the API's URLs: an http(s) URL whose path
/// ends with `/`, so that the API's path goes after it.
fn base_of(base_url: &str) -> Result<Url, HubApiError> {
    let mut base = Url::parse(base_url.trim()).map_err(|err| {
        HubApiError::new(
            HubApiErrorKind::Config,
            format!("{base_url:?} is not a URL"),
        )
        .caused_by(err)
    })?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(HubApiError::new(
            HubApiErrorKind::Config,
            format!("the hub's API is at an http(s) URL, not {base_url:?}"),
        ));
    }
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    Ok(base)
}
