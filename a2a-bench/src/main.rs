//! Benchmarks of the server's hot paths. Run them with `scripts/bench.sh`,
//! which pins the server and the load generator to different cores.
//!
//! - `sdk`: the SDK serving an echo agent over JSON-RPC (one worker thread);
//! - `bare`: a bare axum handler that parses the same request and writes the
//!   same response JSON with no SDK behind it (the reference);
//! - `load`: blocking `SendMessage` from N keep-alive connections: throughput,
//!   latency percentiles and the slowest request;
//! - `grpc-load`: the same over gRPC, on tonic's channel or (`--raw`) on
//!   hyper's HTTP/2 client, the leaner generator;
//! - `streams`: N concurrent `SendStreamingMessage` calls, time to first
//!   event; with `--hold --server-pid`, the server's resident memory per
//!   stream held open;
//! - `memory`: resident memory per stored completed task;
//! - `seed`: fills a durable store with completed tasks and pending jobs;
//! - `recovery`: seeds a store, then times a fresh server start on it until
//!   it answers `GetTask` over HTTP and its recovery pass has run;
//! - `handler`, `router`, `jwt`: the request handler, the whole router and
//!   JWT authentication timed in process, without sockets;
//! - `allocs`: heap allocations per blocking and per streaming SendMessage
//!   on the server side, the SDK's and the bare handler's, counted by the
//!   allocator over loopback HTTP in process.
//!
//! A module per kind of mode: the SDK server (`sdk`), the bare references
//! (`bare`), the load generators (`load`), streams (`streams`), the durable
//! stores' seeding and recovery (`durable`) and the in-process micro modes
//! (`micro`); `agent` is the echo agent they all serve.

// Both the SDK and the bare reference run on the same allocator. It counts
// allocations only for `allocs`: in every other mode counting stays off, and
// each allocation pays one relaxed load of a flag never written.
#[global_allocator]
static ALLOCATOR: a2a_alloc::Counting<a2a_alloc::Mimalloc> =
    a2a_alloc::Counting::new(a2a_alloc::Mimalloc);

mod agent;
mod allocs;
mod bare;
mod durable;
mod jwt_keys;
mod load;
mod micro;
mod sdk;
mod streams;

use std::net::SocketAddr;

use a2a_store_sql::StoreLocation;
use clap::{Parser, Subcommand};

use self::streams::StreamsMode;

#[derive(Parser)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the SDK with an echo agent.
    Sdk {
        #[arg(long)]
        port: u16,
        /// Where state lives: memory, sqlite:DIR or a postgres:// URL (durable
        /// executions on for the SQL stores).
        #[arg(long, default_value = "memory")]
        store: StoreLocation,
        /// Write the conversation log under this data directory (as `a2a
        /// serve` does by default).
        #[arg(long)]
        conversation_log: Option<std::path::PathBuf>,
        /// Serve the echo agent as agent `bench` of a gateway, beside another
        /// agent (load it at /agents/bench, or at / through tenant routing).
        #[arg(long)]
        gateway: bool,
        /// Join a cluster on the (PostgreSQL) store as this node.
        #[arg(long, conflicts_with = "gateway")]
        node_id: Option<String>,
        /// Require `Authorization: Bearer TOKEN` on every call (what an
        /// authenticated server pays per request; load it with the same
        /// `--bearer-token`).
        #[arg(long, value_name = "TOKEN", conflicts_with = "gateway")]
        bearer_token: Option<String>,
    },
    /// Fill a durable store with completed tasks and pending jobs, then close it.
    Seed {
        #[arg(long)]
        store: StoreLocation,
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
        #[arg(long, default_value_t = 0)]
        pending: usize,
    },
    /// Seed a store, then time a fresh server start on it until it serves
    /// GetTask over HTTP and its recovery pass has run.
    Recovery {
        #[arg(long)]
        store: StoreLocation,
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
        #[arg(long, default_value_t = 1000)]
        pending: usize,
    },
    /// Serve the bare reference handler.
    Bare {
        #[arg(long)]
        port: u16,
        /// Install the log `a2a serve` installs, as `sdk` does. Without a
        /// subscriber, the `log` fallback that sqlx turns on in `tracing`
        /// makes each of hyper's and h2's disabled spans cost a record
        /// (about 11,000 instructions a gRPC call).
        #[arg(long)]
        log: bool,
    },
    /// Serve the bare reference handler over gRPC: the same work as `bare`
    /// (decode, build the task, encode) on hyper's HTTP/2 with the gRPC
    /// framing written by hand, no tonic and no SDK: the floor under the
    /// SDK's gRPC binding.
    BareGrpc {
        #[arg(long)]
        port: u16,
        /// Install the log `a2a serve` installs, as `sdk` does. Without a
        /// subscriber, the `log` fallback that sqlx turns on in `tracing`
        /// makes each of hyper's and h2's disabled spans cost a record
        /// (about 11,000 instructions a gRPC call).
        #[arg(long)]
        log: bool,
    },
    /// Serve the same bare gRPC handler on the h2 crate alone, without
    /// hyper or axum: the floor under any gRPC server written on h2.
    BareH2 {
        #[arg(long)]
        port: u16,
        /// Install the log `a2a serve` installs, as `sdk` does. Without a
        /// subscriber, the `log` fallback that sqlx turns on in `tracing`
        /// makes each of hyper's and h2's disabled spans cost a record
        /// (about 11,000 instructions a gRPC call).
        #[arg(long)]
        log: bool,
    },
    /// Generate load against a JSON-RPC endpoint.
    Load {
        #[arg(long)]
        addr: SocketAddr,
        /// The endpoint's path.
        #[arg(long, default_value = "/")]
        path: String,
        #[arg(long, default_value_t = 64)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 2)]
        warmup: u64,
        /// Send `Authorization: Bearer TOKEN` with every call.
        #[arg(long, value_name = "TOKEN")]
        bearer_token: Option<String>,
    },
    /// Generate unary SendMessage load over gRPC.
    GrpcLoad {
        #[arg(long)]
        addr: SocketAddr,
        /// Send the calls on hyper's HTTP/2 client directly (the gRPC framing
        /// done here), not through tonic's channel and its buffer task: a
        /// leaner generator, so the figure is the server's.
        #[arg(long)]
        raw: bool,
        #[arg(long, default_value_t = 64)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        seconds: u64,
        #[arg(long, default_value_t = 2)]
        warmup: u64,
        /// Send `Authorization: Bearer TOKEN` with every call.
        #[arg(long, value_name = "TOKEN")]
        bearer_token: Option<String>,
    },
    /// Open many streams at once and time their first event.
    Streams {
        #[arg(long)]
        addr: SocketAddr,
        #[arg(long, default_value_t = 1000)]
        count: usize,
        /// Keep every stream open after its first event (the agent holds
        /// the task working), and report the server's resident memory with
        /// all of them open against before any (needs `--server-pid`).
        #[arg(long)]
        hold: bool,
        /// Only connect and fetch the card on every connection, then close
        /// them: under callgrind, a full run's count less this one's is
        /// what the streaming calls alone cost the server.
        #[arg(long, conflicts_with = "hold")]
        connect_only: bool,
        /// The server's process id: with `--hold`, to read its resident
        /// memory; always, to report the CPU time it spent and the page
        /// faults it took from the moment the streams are sent until the
        /// last first event.
        #[arg(long)]
        server_pid: Option<u32>,
        /// Write every stream's first-event latency to this file, in
        /// microseconds, one a line, sorted (for a distribution chart).
        #[arg(long, value_name = "FILE", conflicts_with = "connect_only")]
        latencies: Option<std::path::PathBuf>,
    },
    /// Time blocking SendMessage calls on the handler in-process (no HTTP).
    Handler {
        #[arg(long, default_value_t = 200_000)]
        count: usize,
        /// Write the conversation log under this data directory.
        #[arg(long)]
        conversation_log: Option<std::path::PathBuf>,
    },
    /// Verify `count` JWT bearer tokens (HS256, key from a local JWKS, cached)
    /// with `JwtAuth`, as every call to a server that requires one does.
    Jwt {
        #[arg(long, default_value_t = 100_000)]
        count: usize,
        /// Signature algorithm: hs256, rs256 or es256.
        #[arg(long, default_value = "hs256")]
        alg: String,
        /// Verify every call in full (no remembered tokens).
        #[arg(long)]
        uncached: bool,
    },
    /// Serve blocking SendMessage calls through the whole router in process
    /// (no sockets, no connection handling): the request path of one binding,
    /// `http_json` or `grpc`, for instruction counts that a route added
    /// elsewhere must leave unchanged.
    Router {
        #[arg(long, default_value = "http_json")]
        binding: String,
        #[arg(long, default_value_t = 10_000)]
        count: usize,
    },
    /// Count the server's heap allocations per blocking and per streaming
    /// JSON-RPC SendMessage (echo agent, in-memory store), the SDK's and the
    /// bare handler's, over a loopback connection in this process.
    Allocs {
        #[arg(long, default_value_t = 10_000)]
        calls: usize,
        #[arg(long, default_value_t = 2_000)]
        warmup: usize,
    },
    /// Measure resident memory per stored completed task.
    Memory {
        #[arg(long, default_value_t = 100_000)]
        tasks: usize,
    },
}

fn one_worker() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?)
}

fn install_log_if(log: bool) {
    if log {
        sdk::install_log();
    }
}

fn main() -> anyhow::Result<()> {
    // As `a2a serve` does: the benchmark measures what it runs.
    let _ = a2a_alloc::disable_transparent_huge_pages();
    match Args::parse().command {
        Command::Sdk {
            port,
            store,
            conversation_log,
            gateway,
            node_id,
            bearer_token,
        } => {
            sdk::install_log();
            one_worker()?.block_on(async {
                sdk::serve_sdk(
                    sdk::listen(port)?,
                    store,
                    conversation_log,
                    gateway,
                    node_id,
                    bearer_token,
                )
                .await
            })
        }
        Command::Seed {
            store,
            tasks,
            pending,
        } => one_worker()?.block_on(durable::seed(&store, tasks, pending)),
        Command::Recovery {
            store,
            tasks,
            pending,
        } => one_worker()?.block_on(durable::recovery(store, tasks, pending)),
        Command::Bare { port, log } => {
            install_log_if(log);
            one_worker()?.block_on(async { bare::serve_bare(sdk::listen(port)?).await })
        }
        Command::BareGrpc { port, log } => {
            install_log_if(log);
            one_worker()?.block_on(bare::serve_bare_grpc(port))
        }
        Command::BareH2 { port, log } => {
            install_log_if(log);
            one_worker()?.block_on(bare::serve_bare_h2(port))
        }
        Command::Load {
            addr,
            path,
            connections,
            seconds,
            warmup,
            bearer_token,
        } => one_worker()?.block_on(load::load(
            addr,
            &path,
            connections,
            seconds,
            warmup,
            bearer_token.as_deref(),
        )),
        Command::GrpcLoad {
            addr,
            raw,
            connections,
            seconds,
            warmup,
            bearer_token,
        } => one_worker()?.block_on(load::grpc_load(
            addr,
            raw,
            connections,
            seconds,
            warmup,
            bearer_token.as_deref(),
        )),
        Command::Streams {
            addr,
            count,
            hold,
            connect_only,
            server_pid,
            latencies,
        } => {
            let mode = if hold {
                StreamsMode::Hold
            } else if connect_only {
                StreamsMode::ConnectOnly
            } else {
                StreamsMode::FirstEvent
            };
            one_worker()?.block_on(streams::streams(
                addr,
                count,
                mode,
                server_pid,
                latencies.as_deref(),
            ))
        }
        Command::Handler {
            count,
            conversation_log,
        } => one_worker()?
            .block_on(async { tokio::spawn(micro::handler_only(count, conversation_log)).await? }),
        Command::Router { binding, count } => one_worker()?
            .block_on(async move { tokio::spawn(micro::router_only(binding, count)).await? }),
        Command::Allocs { calls, warmup } => allocs::allocs(calls, warmup),
        Command::Memory { tasks } => one_worker()?.block_on(micro::memory(tasks)),
        Command::Jwt {
            count,
            alg,
            uncached,
        } => one_worker()?.block_on(micro::jwt_only(count, &alg, uncached)),
    }
}
