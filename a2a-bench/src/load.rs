//! `load` and `grpc-load`: blocking SendMessage from N connections in a
//! closed loop, and the HTTP client pieces the other modes share.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use a2a_core::{Message, SendMessageRequest};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;

use crate::agent::request_body;

pub(crate) async fn connect(
    addr: SocketAddr,
) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

pub(crate) fn post(body: Bytes) -> hyper::Request<Full<Bytes>> {
    post_to("/", body)
}

fn post_to(path: &str, body: Bytes) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(path)
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("a2a-version", "1.0")
        .body(Full::new(body))
        .unwrap_or_default()
}

/// `Authorization: Bearer TOKEN`, as a header value made once.
fn bearer(token: Option<&str>) -> anyhow::Result<Option<hyper::header::HeaderValue>> {
    Ok(match token {
        Some(token) => Some(hyper::header::HeaderValue::try_from(format!(
            "Bearer {token}"
        ))?),
        None => None,
    })
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[percentile_index(sorted.len(), p)]
}

/// Where the `p` percentile of `len` sorted values (at least one) is.
pub(crate) fn percentile_index(len: usize, p: f64) -> usize {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = ((len as f64 - 1.0) * p).round() as usize;
    index.min(len.saturating_sub(1))
}

/// One connection of the load generator: sends one blocking SendMessage.
#[async_trait::async_trait]
trait Connection: Send {
    async fn call(&mut self) -> anyhow::Result<()>;
}

struct JsonRpcConnection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    path: std::sync::Arc<str>,
    body: Bytes,
    authorization: Option<hyper::header::HeaderValue>,
}

#[async_trait::async_trait]
impl Connection for JsonRpcConnection {
    async fn call(&mut self) -> anyhow::Result<()> {
        let mut request = post_to(&self.path, self.body.clone());
        if let Some(value) = &self.authorization {
            request
                .headers_mut()
                .insert(hyper::header::AUTHORIZATION, value.clone());
        }
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        anyhow::ensure!(
            status.is_success() && bytes.len() > 100,
            "bad response {status}"
        );
        Ok(())
    }
}

struct GrpcConnection {
    client: a2a_grpc::pb::a2a_service_client::A2aServiceClient<tonic::transport::Channel>,
    request: a2a_grpc::pb::SendMessageRequest,
    authorization: Option<tonic::metadata::MetadataValue<tonic::metadata::Ascii>>,
}

#[async_trait::async_trait]
impl Connection for GrpcConnection {
    async fn call(&mut self) -> anyhow::Result<()> {
        let mut call = tonic::Request::new(self.request.clone());
        call.metadata_mut().insert(
            "a2a-version",
            tonic::metadata::MetadataValue::from_static("1.0"),
        );
        if let Some(value) = &self.authorization {
            call.metadata_mut().insert("authorization", value.clone());
        }
        self.client.send_message(call).await?;
        Ok(())
    }
}

/// Runs `connections` connections in a closed loop for `warmup + seconds`
/// and reports the latencies measured after the warmup.
async fn drive<F, Fut>(
    connections: usize,
    seconds: u64,
    warmup: u64,
    connect: F,
) -> anyhow::Result<()>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Box<dyn Connection>>> + Send + 'static,
{
    let measure_from = Instant::now() + Duration::from_secs(warmup);
    let end = measure_from + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for _ in 0..connections {
        let connection = connect();
        workers.push(tokio::spawn(async move {
            let mut connection = connection.await?;
            let mut latencies = Vec::new();
            loop {
                let sent = Instant::now();
                if sent >= end {
                    break;
                }
                connection.call().await?;
                if sent >= measure_from {
                    latencies.push(sent.elapsed());
                }
            }
            anyhow::Ok(latencies)
        }));
    }
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await??);
    }
    report(seconds, all);
    Ok(())
}

pub(crate) async fn load(
    addr: SocketAddr,
    path: &str,
    connections: usize,
    seconds: u64,
    warmup: u64,
    bearer_token: Option<&str>,
) -> anyhow::Result<()> {
    let body = request_body(a2a_core::Method::SendMessage);
    let path: std::sync::Arc<str> = path.into();
    let authorization = bearer(bearer_token)?;
    drive(connections, seconds, warmup, || {
        let (body, path, authorization) = (body.clone(), path.clone(), authorization.clone());
        async move {
            let sender = connect(addr).await?;
            Ok(Box::new(JsonRpcConnection {
                sender,
                path,
                body,
                authorization,
            }) as Box<dyn Connection>)
        }
    })
    .await
}

/// One gRPC connection on hyper's HTTP/2 client: each call is one POST of
/// the framed request, its answer read whole and its `grpc-status` checked.
struct RawGrpcConnection {
    sender: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    uri: hyper::Uri,
    body: Bytes,
    authorization: Option<hyper::header::HeaderValue>,
}

#[async_trait::async_trait]
impl Connection for RawGrpcConnection {
    async fn call(&mut self) -> anyhow::Result<()> {
        let mut request = hyper::Request::post(self.uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .header("a2a-version", "1.0")
            .body(Full::new(self.body.clone()))?;
        if let Some(value) = &self.authorization {
            request
                .headers_mut()
                .insert(hyper::header::AUTHORIZATION, value.clone());
        }
        let response = self.sender.send_request(request).await?;
        let status = response.status();
        let answer = response.into_body().collect().await?;
        let grpc_status = answer
            .trailers()
            .and_then(|trailers| trailers.get("grpc-status"))
            .map(|value| value.as_bytes() == b"0");
        let bytes = answer.to_bytes();
        anyhow::ensure!(
            status.is_success() && grpc_status == Some(true) && bytes.len() > 100,
            "bad response {status}"
        );
        Ok(())
    }
}

pub(crate) async fn grpc_load(
    addr: SocketAddr,
    raw: bool,
    connections: usize,
    seconds: u64,
    warmup: u64,
    bearer_token: Option<&str>,
) -> anyhow::Result<()> {
    use a2a_grpc::convert::ToProto as _;
    let authorization = bearer(bearer_token)?;
    let request = SendMessageRequest::new(
        Message::user_text("hello benchmark").with_message_id("bench-message"),
    )
    .to_proto();
    if raw {
        use prost::Message as _;
        // gRPC framing: uncompressed, then the length, then the message.
        let length = u32::try_from(request.encoded_len())?;
        let mut framed = vec![0u8];
        framed.extend_from_slice(&length.to_be_bytes());
        request.encode(&mut framed)?;
        let body = Bytes::from(framed);
        let uri: hyper::Uri = format!(
            "http://{addr}{}",
            a2a_grpc::method_path(a2a_core::Method::SendMessage)
        )
        .parse()?;
        return drive(connections, seconds, warmup, || {
            let (body, uri, authorization) = (body.clone(), uri.clone(), authorization.clone());
            async move {
                let stream = tokio::net::TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                let (sender, connection) = hyper::client::conn::http2::handshake(
                    hyper_util::rt::TokioExecutor::new(),
                    TokioIo::new(stream),
                )
                .await?;
                tokio::spawn(connection);
                Ok(Box::new(RawGrpcConnection {
                    sender,
                    uri,
                    body,
                    authorization,
                }) as Box<dyn Connection>)
            }
        })
        .await;
    }
    let metadata = match &authorization {
        Some(value) => Some(value.to_str()?.parse()?),
        None => None,
    };
    drive(connections, seconds, warmup, || {
        let (request, authorization) = (request.clone(), metadata.clone());
        async move {
            let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
                .connect()
                .await?;
            let client = a2a_grpc::pb::a2a_service_client::A2aServiceClient::new(channel);
            Ok(Box::new(GrpcConnection {
                client,
                request,
                authorization,
            }) as Box<dyn Connection>)
        }
    })
    .await
}

fn report(seconds: u64, mut all: Vec<Duration>) {
    all.sort_unstable();
    #[allow(clippy::cast_precision_loss)]
    let rps = all.len() as f64 / seconds as f64;
    println!(
        "requests={} throughput={rps:.0}/s p50={:?} p99={:?} p99.9={:?} max={:?}",
        all.len(),
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        percentile(&all, 0.999),
        all.last().copied().unwrap_or_default()
    );
}
