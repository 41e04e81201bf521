//! A round-robin HTTP proxy for testing a cluster from one address: each
//! request (HTTP/1.1 or h2c, so gRPC too) goes to the next backend in turn,
//! and its answer (streams included) comes back as it is produced.
//! `cargo run -p e2e --bin round-robin -- --port 9999 --to 127.0.0.1:9001 --to 127.0.0.1:9002`
//! prints `round-robin listening on URL` once it serves.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use clap::Parser;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, Version};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// Serves until killed.
#[derive(Debug, Parser)]
struct Args {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A backend, as host:port (repeat for each).
    #[arg(long = "to", required = true)]
    backends: Vec<String>,
}

type Body = BoxBody<Bytes, hyper::Error>;

struct Proxy {
    backends: Vec<String>,
    next: AtomicUsize,
    http1: Client<HttpConnector, Incoming>,
    http2: Client<HttpConnector, Incoming>,
}

impl Proxy {
    async fn forward(&self, mut request: Request<Incoming>) -> Response<Body> {
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % self.backends.len();
        let backend = &self.backends[turn];
        let path = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        match format!("http://{backend}{path}").parse() {
            Ok(uri) => *request.uri_mut() = uri,
            Err(_) => return failure(StatusCode::BAD_REQUEST, "unusable request path"),
        }
        let client = match request.version() {
            Version::HTTP_2 => &self.http2,
            _ => &self.http1,
        };
        match client.request(request).await {
            Ok(response) => response.map(BodyExt::boxed),
            Err(err) => failure(
                StatusCode::BAD_GATEWAY,
                &format!("backend {backend}: {err}"),
            ),
        }
    }
}

fn failure(status: StatusCode, text: &str) -> Response<Body> {
    let body = Full::new(Bytes::from(text.to_owned()))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let listener =
        tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port))).await?;
    let proxy = Arc::new(Proxy {
        backends: args.backends,
        next: AtomicUsize::new(0),
        http1: Client::builder(TokioExecutor::new()).build_http(),
        http2: Client::builder(TokioExecutor::new())
            .http2_only(true)
            .build_http(),
    });
    println!("round-robin listening on http://{}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let proxy = proxy.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let proxy = proxy.clone();
                async move { Ok::<_, std::convert::Infallible>(proxy.forward(request).await) }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
