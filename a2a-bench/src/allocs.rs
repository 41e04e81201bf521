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
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .on_thread_start(a2a_alloc::count_this_thread)
            .enable_all()
            .build()?;
        // Bound from the uncounted thread; served on the counted worker.
        let listener = runtime.block_on(async { crate::sdk::listen(0) })?;
        let addr = listener.local_addr()?;
        runtime.spawn(async move {
            let served = match server {
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
            };
            if let Err(error) = served {
                eprintln!("{} server failed: {error:#}", server.label());
            }
        });
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        client.block_on(async {
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
        })?;
        // The server's tasks end with its runtime.
        runtime.shutdown_timeout(Duration::from_secs(1));
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
