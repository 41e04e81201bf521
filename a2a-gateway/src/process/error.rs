//! What can go wrong when starting a process agent.

use std::path::PathBuf;

/// Why a process agent could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcessError {
    /// The program could not be started (not found, not executable, ...).
    #[error("agent '{agent}': cannot start {program:?}: {source}")]
    Spawn {
        /// The agent's name.
        agent: String,
        /// The program as configured.
        program: PathBuf,
        /// The operating system's answer.
        #[source]
        source: std::io::Error,
    },
    /// `spawn` was called outside a Tokio runtime, which the supervisor
    /// needs to run on.
    #[error("agent '{agent}': ProcessAgent::spawn must be called within a Tokio runtime")]
    NoRuntime {
        /// The agent's name.
        agent: String,
    },
}
