//! HTTP/2 keep-alive pings hold a quiet gRPC stream open through a middlebox
//! that cuts connections idle for a while (as NATs and load balancers do):
//! the client's pings (`a2a_grpc::GrpcSettings`) and the server's
//! (`ServeConfig::http2_keep_alive`) each do it alone. The control case,
//! pings slower than the cut on both sides, shows the middlebox does cut
//! the stream.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_client::ClientBuilder;
use a2a_core::{Message, SendMessageRequest, TaskState, binding};
use a2a_grpc::GrpcSettings;
use a2a_server::http::{HttpConfig, ServeConfig};
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The middlebox closes a connection after this long without a byte either way.
const IDLE_CUT: Duration = Duration::from_millis(600);
/// Pings well inside the cut (a sixth of it: wide margins for a busy machine).
const FAST_PING: Duration = Duration::from_millis(100);
/// Pings that never come in time.
const SLOW_PING: Duration = Duration::from_secs(60);
/// The agent's silence between its first and last event: more than three cuts.
const QUIET: &str = "slow 2000";

/// A TCP relay that closes both sides of a connection once no byte has
/// passed in either direction for its idle time.
struct IdleCutter {
    addr: SocketAddr,
    /// Connections it closed for idleness.
    cuts: Arc<AtomicUsize>,
    accepting: tokio::task::JoinHandle<()>,
}

impl Drop for IdleCutter {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

async fn idle_cutter(upstream: SocketAddr, idle: Duration) -> IdleCutter {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cuts = Arc::new(AtomicUsize::new(0));
    let counted = cuts.clone();
    let accepting = tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let cuts = counted.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                if relay_until_idle(client, server, idle).await {
                    cuts.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    IdleCutter {
        addr,
        cuts,
        accepting,
    }
}

/// Relays bytes both ways until a side closes (`false`) or nothing has
/// passed for `idle` (`true`); both sockets close on return.
async fn relay_until_idle(client: TcpStream, server: TcpStream, idle: Duration) -> bool {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let (mut up, mut down) = ([0u8; 16 * 1024], [0u8; 16 * 1024]);
    loop {
        // A new sleep each turn: any byte either way restarts the idle time.
        tokio::select! {
            read = client_read.read(&mut up) => match read {
                Ok(n) if n > 0 => {
                    if server_write.write_all(&up[..n]).await.is_err() {
                        return false;
                    }
                }
                _ => return false,
            },
            read = server_read.read(&mut down) => match read {
                Ok(n) if n > 0 => {
                    if client_write.write_all(&down[..n]).await.is_err() {
                        return false;
                    }
                }
                _ => return false,
            },
            () = tokio::time::sleep(idle) => return true,
        }
    }
}

/// What a quiet stream through the cutter came to: the states it saw, whether
/// it ended in an error, and how many connections the cutter closed.
#[derive(Debug)]
struct Outcome {
    states: Vec<TaskState>,
    failed: bool,
    cuts: usize,
}

/// Streams the quiet command over gRPC through an [`IdleCutter`], with the
/// client and the server pinging at the intervals given.
async fn quiet_stream(client_ping: Duration, server_ping: Duration) -> Outcome {
    let mut config = ServeConfig::default();
    config.grace = Duration::from_millis(100);
    config.http2_keep_alive = server_ping;
    config.http2_keep_alive_timeout = Duration::from_secs(10);
    let server = support::serve(support::card, config, HttpConfig::default()).await;
    let cutter = idle_cutter(server.addr, IDLE_CUT).await;
    // Through the client builder, as an application would set it.
    let settings = GrpcSettings::default().keep_alive(client_ping, Duration::from_secs(10));
    // Not resumed: the cut itself is what this measures.
    let client = a2a_grpc::register_with(ClientBuilder::new(), settings)
        .resume_streams(a2a_client::ResumePolicy::off())
        .prefer([binding::GRPC])
        .build(support::card(cutter.addr))
        .unwrap();
    let request = SendMessageRequest::new(Message::user_text(QUIET));
    let events = client.send_streaming_message(request, None).await.unwrap();
    let events: Vec<_> = tokio::time::timeout(Duration::from_secs(20), events.collect())
        .await
        .expect("the stream ends, with its last event or an error");
    let outcome = Outcome {
        states: events
            .iter()
            .filter_map(|event| event.as_ref().ok()?.state())
            .collect(),
        failed: events.iter().any(Result::is_err),
        cuts: cutter.cuts.load(Ordering::SeqCst),
    };
    server.stop().await;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_timely_pings_the_middlebox_cuts_a_quiet_stream() {
    let outcome = quiet_stream(SLOW_PING, SLOW_PING).await;
    assert!(
        outcome.failed && outcome.cuts >= 1,
        "the cutter should have cut the stream: {outcome:?}"
    );
    assert!(
        !outcome.states.contains(&TaskState::Completed),
        "{outcome:?}"
    );
}

/// The quiet stream lasted to its end, and the cutter never cut it.
#[track_caller]
fn assert_kept_open(outcome: &Outcome) {
    assert!(!outcome.failed, "{outcome:?}");
    assert_eq!(
        outcome.states.last(),
        Some(&TaskState::Completed),
        "{outcome:?}"
    );
    assert_eq!(outcome.cuts, 0, "{outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_pings_keep_a_quiet_stream_open() {
    assert_kept_open(&quiet_stream(FAST_PING, SLOW_PING).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_pings_keep_a_quiet_stream_open() {
    assert_kept_open(&quiet_stream(SLOW_PING, FAST_PING).await);
}
