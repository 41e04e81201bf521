//! `streams`: many streaming SendMessage calls at once, each on its own
//! connection, their first events timed (or, with `--hold`, held open).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use a2a_core::{JsonRpcRequest, Message, SendMessageRequest};
use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};

use crate::agent::{HOLD, request_body};
use crate::load::{connect, percentile, percentile_index, post};

/// A process's CPU time so far (the sum over its threads of
/// `/proc/PID/task/TID/schedstat`) and its minor page faults (from
/// `/proc/PID/stat`).
fn cpu_and_faults_of(pid: u32) -> anyhow::Result<(Duration, u64)> {
    let mut nanos = 0u64;
    let mut threads_read = 0;
    for thread in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread that ends between the listing and the read is skipped
        // (the server's threads are its runtime's, which live as long as it).
        let Ok(schedstat) = std::fs::read_to_string(thread?.path().join("schedstat")) else {
            continue;
        };
        threads_read += 1;
        nanos += schedstat
            .split_whitespace()
            .next()
            .context("empty schedstat")?
            .parse::<u64>()?;
    }
    anyhow::ensure!(threads_read > 0, "no schedstat for process {pid}");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (which may hold spaces) start with
    // the state; minflt is the tenth field of the line, the eighth after it.
    let after_name = stat.rsplit_once(')').context("no command name")?.1;
    let minor_faults: u64 = after_name
        .split_whitespace()
        .nth(7)
        .context("short stat line")?
        .parse()?;
    Ok((Duration::from_nanos(nanos), minor_faults))
}

/// A process's resident memory in bytes, from `/proc/PID/status`.
fn resident_of(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .context("no VmRSS")?
        .parse()?;
    Ok(kib * 1024)
}

/// What `a2a-bench streams` does with each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamsMode {
    /// Time the first event of a stream that then runs to its end.
    FirstEvent,
    /// Time the first event and hold every stream open.
    Hold,
    /// Send no stream at all (see `--connect-only`).
    ConnectOnly,
}

pub(crate) async fn streams(
    addr: SocketAddr,
    count: usize,
    mode: StreamsMode,
    server_pid: Option<u32>,
    latencies: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let hold = mode == StreamsMode::Hold;
    let body = if hold {
        let message = Message::user_text(HOLD).with_message_id("bench-hold");
        Bytes::from(serde_json::to_vec(&JsonRpcRequest::new(
            1,
            a2a_core::Method::SendStreamingMessage,
            SendMessageRequest::new(message),
        ))?)
    } else {
        request_body(a2a_core::Method::SendStreamingMessage)
    };
    let before = server_pid.map(resident_of).transpose()?;
    // One more than the streams: this task reads the server's counters when
    // they are all sent.
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(count + 1));
    // Held streams stay open (their bodies are kept here) until all are counted.
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let opened = std::sync::Arc::new(tokio::sync::Barrier::new(count + 1));
    // The server's counters when the first event that sets the p99 arrives:
    // what the server spent up to it, apart from what it spends after.
    // The rank `percentile` reads the p99 from; the order first events arrive
    // in is near enough the order of their latencies for this figure. Held
    // streams report memory instead.
    let p99_rank = match mode {
        StreamsMode::FirstEvent => percentile_index(count.max(1), 0.99) + 1,
        StreamsMode::Hold | StreamsMode::ConnectOnly => 0,
    };
    let arrived = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server_at_p99 = std::sync::Arc::new(std::sync::OnceLock::new());
    let mut tasks = Vec::new();
    for _ in 0..count {
        let (body, barrier, release, opened, arrived, server_at_p99) = (
            body.clone(),
            barrier.clone(),
            release.clone(),
            opened.clone(),
            arrived.clone(),
            server_at_p99.clone(),
        );
        tasks.push(tokio::spawn(async move {
            // One request first, so the server has accepted and set up every
            // connection before the clock starts: this measures streams, not
            // connection setup.
            let connected = async {
                let mut sender = connect(addr).await?;
                let card = hyper::Request::get(a2a_core::AGENT_CARD_PATH)
                    .header("host", "127.0.0.1")
                    .body(Full::new(Bytes::new()))?;
                sender
                    .send_request(card)
                    .await?
                    .into_body()
                    .collect()
                    .await?;
                anyhow::Ok(sender)
            }
            .await;
            // Every task passes both barriers whatever happens to its own
            // connection, so a failed one is reported instead of leaving the
            // rest waiting for it.
            barrier.wait().await;
            let mut reached_opened = false;
            let timed = async {
                let mut sender = connected?;
                if mode == StreamsMode::ConnectOnly {
                    return anyhow::Ok(Duration::ZERO);
                }
                let sent = Instant::now();
                let response = sender.send_request(post(body)).await?;
                let mut body = response.into_body();
                while let Some(frame) = body.frame().await {
                    if frame?
                        .data_ref()
                        .is_some_and(|d| d.windows(5).any(|w| w == b"data:"))
                    {
                        let first = sent.elapsed();
                        let rank = arrived.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                        // Read on this (the only) worker: it delays the streams
                        // still to come by one read of /proc, about as long
                        // as a first event takes to handle here.
                        #[allow(clippy::collapsible_if)] // the MSRV has no let chains
                        if let (true, Some(pid)) = (rank == p99_rank, server_pid) {
                            if let Ok(counters) = cpu_and_faults_of(pid) {
                                let _ = server_at_p99.set(counters);
                            }
                        }
                        if hold {
                            let released = release.notified();
                            reached_opened = true;
                            opened.wait().await;
                            released.await;
                            drop((body, sender));
                        }
                        return anyhow::Ok(first);
                    }
                }
                anyhow::bail!("stream ended without an event")
            }
            .await;
            if hold && !reached_opened {
                opened.wait().await;
            }
            timed
        }));
    }
    barrier.wait().await;
    // Counters a kernel does not keep (no schedstat) leave the figure out.
    let server_at_send = server_pid.and_then(|pid| cpu_and_faults_of(pid).ok());
    if hold {
        // Every stream has had its first event and is still open.
        opened.wait().await;
        let during = server_pid.map(resident_of).transpose()?;
        if let (Some(before), Some(during)) = (before, during) {
            #[allow(clippy::cast_precision_loss)]
            let per_stream = during.saturating_sub(before) as f64 / count as f64;
            println!(
                "open streams={count} server resident: before={}MiB with them open={}MiB per stream={per_stream:.0}B",
                before >> 20,
                during >> 20
            );
        }
        release.notify_waiters();
    }
    let mut firsts = Vec::new();
    for task in tasks {
        firsts.push(task.await??);
    }
    let server_now = server_pid.and_then(|pid| cpu_and_faults_of(pid).ok());
    let server_spent = match (server_at_send, server_at_p99.get(), server_now) {
        (Some((cpu, faults)), Some((cpu_p99, faults_p99)), Some((cpu_now, faults_now)))
            if !hold =>
        {
            format!(
                " server cpu until p99={:?} until all={:?} page-faults until p99={} until all={}",
                cpu_p99.saturating_sub(cpu),
                cpu_now.saturating_sub(cpu),
                faults_p99.saturating_sub(faults),
                faults_now.saturating_sub(faults)
            )
        }
        _ => String::new(),
    };
    if mode == StreamsMode::ConnectOnly {
        println!("connections={count} opened, card fetched, closed");
        return Ok(());
    }
    firsts.sort_unstable();
    if let Some(path) = latencies {
        // The whole distribution, for charts (scripts/bench_report.py): the
        // percentiles below are three points of it.
        let lines: String = firsts
            .iter()
            .map(|first| format!("{:.3}\n", first.as_secs_f64() * 1e6))
            .collect();
        std::fs::write(path, lines).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "streams={count} first-event p50={:?} p99={:?} max={:?}{server_spent}",
        percentile(&firsts, 0.5),
        percentile(&firsts, 0.99),
        firsts.last().copied().unwrap_or_default()
    );
    Ok(())
}
