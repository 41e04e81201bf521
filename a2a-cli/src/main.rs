//! The `a2a` command line: `a2a serve` runs an A2A server with a built-in agent.

use clap::Parser as _;

// A server allocates a little for every request; mimalloc keeps that cheap.
#[global_allocator]
static ALLOCATOR: a2a_alloc::Mimalloc = a2a_alloc::Mimalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // Huge-page faults stall a worker for milliseconds (see the function).
    // A kernel that refuses the switch serves the same, with that tail.
    let _ = a2a_alloc::disable_transparent_huge_pages();
    // A usage error exits here with clap's status, `a2a_cli::exit::USAGE`.
    let cli = a2a_cli::Cli::parse();
    match a2a_cli::run(cli).await {
        Ok(()) => a2a_cli::exit::SUCCESS.into(),
        Err(err) => {
            eprintln!("error: {err:#}");
            a2a_cli::exit::status(&err).into()
        }
    }
}
