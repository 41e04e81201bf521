//! `allocs`: heap allocations per call on the server side, counted by the
//! binary's allocator (`a2a_alloc::Counting`), for the SDK with an echo agent
//! and the in-memory store and for the bare reference handler.
//!
//! Both servers run in this process on a runtime of their own (one worker,
//! as `sdk` and `bare` serve) whose threads alone are counted; the client
//! drives them over a real loopback HTTP/1.1 connection from a
//! current-thread runtime on the main thread, which is not counted. Calls go
//! one after another on one keep-alive connection, after a warm-up that
//! fills the caches and pools that a server reuses, so the figure is what a
//! call costs in the steady state. The counts are exact, not sampled: two
//! runs of the same binary agree within a small fraction of an allocation.

use std::time::Duration;

use a2a_core::Method;
use a2a_store_sql::StoreLocation;
use bytes::Bytes;
use http_body_util::BodyExt as _;

use crate::agent::request_body;
use crate::load::{connect, post};

/// Which server `allocs` counts.
#[derive(Debug, Clone, Copy)]
enum Server {
    Sdk,
    Bare,
}

impl Server {
    fn label(self) -> &'static str {
        match self {
            Self::Sdk => "sdk",
            Self::Bare => "bare",
        }
    }
}

/// How long the server is left to finish the work a call leaves behind
/// once its answer is out (a task's last write, a stream's teardown) before
/// the counter is read.
const SETTLE: Duration = Duration::from_millis(100);

pub(crate) fn allocs(calls: usize, warmup: usize) -> anyhow::Result<()> {
    anyhow::ensure!(calls > 0, "--calls must be at least 1");
    a2a_alloc::start_counting();
    for server in [Server::Sdk, Server::Bare] {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // The server's own thread runs its accept loop (`block_on`, as
        // `sdk` and `bare` serve), its runtime's worker the connections;
        // both are counted, and nothing else is.
        let serving = std::thread::spawn(move || -> anyhow::Result<()> {
            a2a_alloc::count_this_thread();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .on_thread_start(a2a_alloc::count_this_thread)
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = crate::sdk::listen(0)?;
                addr_tx.send(listener.local_addr()?)?;
                let served = async move {
                    match server {
                        Server::Sdk => {
                            crate::sdk::serve_sdk(
                                listener,
                                StoreLocation::Memory,
                                None,
                                false,
                                None,
                                None,
                            )
                            .await
                        }
                        Server::Bare => crate::bare::serve_bare(listener).await,
                    }
                };
                tokio::select! {
                    served = served => served,
                    _ = stopped => Ok(()),
                }
            })?;
            runtime.shutdown_background();
            Ok(())
        });
        let addr = addr_rx.recv()?;
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let measured = client.block_on(async {
            let mut sender = connect(addr).await?;
            for (method, name) in [
                (Method::SendMessage, "SendMessage"),
                (Method::SendStreamingMessage, "SendStreamingMessage"),
            ] {
                let body = request_body(method);
                for _ in 0..warmup {
                    call(&mut sender, &body).await?;
                }
                tokio::time::sleep(SETTLE).await;
                let before = a2a_alloc::allocation_counts();
                for _ in 0..calls {
                    call(&mut sender, &body).await?;
                }
                tokio::time::sleep(SETTLE).await;
                let after = a2a_alloc::allocation_counts();
                #[allow(clippy::cast_precision_loss)]
                let per_call = |count: u64| count as f64 / calls as f64;
                println!(
                    "{} {name}: {:.2} allocations, {:.2} reallocations per call ({calls} calls)",
                    server.label(),
                    per_call(after.allocations - before.allocations),
                    per_call(after.reallocations - before.reallocations),
                );
            }
            anyhow::Ok(())
        });
        // Stopped before the next server starts, so that its idle
        // housekeeping is not counted against the next one.
        let _ = stop.send(());
        match serving.join() {
            Ok(result) => result?,
            Err(_) => anyhow::bail!("the {} server panicked", server.label()),
        }
        measured?;
    }
    Ok(())
}

/// One call on the keep-alive connection, its whole answer read (for a
/// stream, up to its end).
async fn call(
    sender: &mut hyper::client::conn::http1::SendRequest<http_body_util::Full<Bytes>>,
    body: &Bytes,
) -> anyhow::Result<()> {
    sender.ready().await?;
    let response = sender.send_request(post(body.clone())).await?;
    let status = response.status();
    let answer = response.into_body().collect().await?.to_bytes();
    anyhow::ensure!(
        status.is_success() && answer.windows(9).any(|w| w == b"COMPLETED"),
        "bad answer {status}: {}",
        String::from_utf8_lossy(&answer)
    );
    Ok(())
}
