//! What every peer echo server shares, so that the servers
//! `scripts/peers-bench.sh` compares differ only in the SDK they run on:
//! the command line, a tokio runtime with one worker (as a2a-bench's
//! servers have), the allocator and the log.

use std::net::SocketAddr;

// a2a-bench's servers run on this allocator; a peer measured on another
// would be measuring the allocator too.
#[global_allocator]
static ALLOCATOR: a2a_alloc::Mimalloc = a2a_alloc::Mimalloc;

/// The A2A binding a peer server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// JSON-RPC 2.0 over HTTP/1.1, POST `/`.
    JsonRpc,
    /// gRPC, `lf.a2a.v1.A2AService`.
    Grpc,
}

/// A peer server's command line: `--port PORT [--binding jsonrpc|grpc]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Args {
    /// The TCP port on 127.0.0.1.
    pub port: u16,
    /// The binding served on it (one per process: the official SDK's
    /// gRPC server and its HTTP router are separate listeners).
    pub binding: Binding,
}

impl Args {
    /// The address to listen on.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Reads the arguments after the program name.
    pub fn parse_from(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
        let mut port = None;
        let mut binding = Binding::JsonRpc;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--port" => {
                    let text = value("--port")?;
                    port = Some(text.parse().map_err(|_| format!("bad port {text:?}"))?);
                }
                "--binding" => {
                    binding = match value("--binding")?.as_str() {
                        "jsonrpc" => Binding::JsonRpc,
                        "grpc" => Binding::Grpc,
                        other => return Err(format!("unknown binding {other:?}")),
                    }
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(Args {
            port: port.ok_or("--port is required")?,
            binding,
        })
    }

    /// Reads the process's arguments, or exits with the usage.
    pub fn parse() -> Args {
        Args::parse_from(std::env::args().skip(1)).unwrap_or_else(|error| {
            eprintln!("{error}\nusage: PROGRAM --port PORT [--binding jsonrpc|grpc]");
            std::process::exit(2)
        })
    }
}

/// Prepares the process as a2a-bench's `sdk` mode does and runs `server` on
/// a tokio runtime with one worker thread.
///
/// Transparent huge pages go off as they do for a2a-bench and `a2a serve`.
/// The log goes to stderr at `warn` unless `RUST_LOG` says otherwise: no
/// per-request line is charged to a peer whose defaults might write one.
pub fn run<F>(server: F) -> std::io::Result<()>
where
    F: std::future::Future<Output = std::io::Result<()>>,
{
    let _ = a2a_alloc::disable_transparent_huge_pages();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?
        .block_on(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        Args::parse_from(args.iter().map(|arg| arg.to_string()))
    }

    #[test]
    fn reads_port_and_binding() {
        assert_eq!(
            parse(&["--port", "18180"]),
            Ok(Args {
                port: 18180,
                binding: Binding::JsonRpc
            })
        );
        let grpc = parse(&["--binding", "grpc", "--port", "9"]).expect("valid");
        assert_eq!(grpc.binding, Binding::Grpc);
        assert_eq!(grpc.addr(), SocketAddr::from(([127, 0, 0, 1], 9)));
    }

    #[test]
    fn rejects_what_it_does_not_know() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["--port"]).is_err());
        assert!(parse(&["--port", "x"]).is_err());
        assert!(parse(&["--port", "1", "--binding", "rest"]).is_err());
        assert!(parse(&["--port", "1", "--tls"]).is_err());
    }
}
