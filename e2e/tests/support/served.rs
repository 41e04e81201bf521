//! A scripted-agent server run by `serve_with` (connection limits, TLS) for
//! one test.

use std::net::SocketAddr;

use a2a_core::AgentCard;
use a2a_server::http::{HttpConfig, ServeConfig, serve_with};
use a2a_server::{A2aService, DefaultRequestHandler};
use e2e::ScriptedAgent;
use tokio::sync::oneshot;

/// A server of [`serve`], stopped with [`Served::stop`].
pub struct Served {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Served {
    /// The server's base URL for `scheme` (`http` or `https`).
    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    /// Stops the server and waits for `serve_with` to return.
    pub async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.serving.await.unwrap().unwrap();
    }
}

/// Serves the scripted agent on every binding (gRPC included) on a free
/// port, with `config`'s connection settings; the card is `card(addr)`.
pub async fn serve(
    card: impl FnOnce(SocketAddr) -> AgentCard,
    config: ServeConfig,
    http: HttpConfig,
) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let handler = DefaultRequestHandler::builder(ScriptedAgent, card(addr)).build();
    let service = A2aService::new(handler);
    let app = a2a_grpc::router(service.clone(), http);
    let (stop, stopped) = oneshot::channel();
    let serving = tokio::spawn(serve_with(
        listener,
        app,
        service,
        async move {
            let _ = stopped.await;
        },
        config,
    ));
    Served {
        addr,
        stop: Some(stop),
        serving,
    }
}
