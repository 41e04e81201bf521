//! A multi-turn agent for crash tests: each turn does a side effect (a line in
//! an effects file), then checkpoints the turn with its artifact, and notes the
//! commit (or, when the checkpoint was not stored, its refusal). A resumed
//! execution starts after its last checkpointed turn, so a turn whose commit
//! was noted must never show its effect again.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_core::{A2aError, Artifact, TaskArtifactUpdateEvent};
use a2a_server::store::Checkpoint;
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

/// The crash-test agent. Messages are `turns N` (default 3) and optionally
/// `ms M` (time per turn, default 20); with `ask` the task ends its turns
/// INPUT_REQUIRED instead of completing.
#[derive(Debug, Clone)]
pub struct TurnAgent {
    effects: Arc<Mutex<std::fs::File>>,
}

impl TurnAgent {
    /// An agent appending its effects to `path`.
    pub fn new(path: PathBuf) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(TurnAgent {
            effects: Arc::new(Mutex::new(file)),
        })
    }

    /// One line, written straight to the file: a process killed right after
    /// still leaves it there (the page cache outlives the process).
    fn note(&self, line: &str) -> Result<(), A2aError> {
        let mut file = self
            .effects
            .lock()
            .map_err(|_| A2aError::internal("effects file lock poisoned"))?;
        file.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| A2aError::internal(format!("effects file: {e}")))
    }
}

fn setting(text: &str, name: &str, default: u64) -> u64 {
    let mut words = text.split_whitespace();
    while let Some(word) = words.next() {
        if word == name {
            return words.next().and_then(|n| n.parse().ok()).unwrap_or(default);
        }
    }
    default
}

#[async_trait::async_trait]
impl AgentExecutor for TurnAgent {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = ctx.message.text();
        let turns = setting(&text, "turns", 3);
        let pause = Duration::from_millis(setting(&text, "ms", 20));
        let done = ctx.checkpoint.as_ref().map_or(0, |c| c.turn);
        if done == 0 {
            events.working().await?;
        }
        let task = events.task_id().to_owned();
        for turn in done + 1..=turns {
            tokio::select! {
                () = ctx.cancellation.cancelled() => return Ok(()),
                () = tokio::time::sleep(pause) => {}
            }
            self.note(&format!("effect {task} {turn}"))?;
            let artifact = Artifact::text(format!("turn {turn}")).with_id(format!("turn-{turn}"));
            let event = TaskArtifactUpdateEvent::new(task.clone(), events.context_id(), artifact);
            let checkpoint = Checkpoint {
                turn,
                state: Vec::new(),
            };
            // Resolves once the turn's event and checkpoint are stored together.
            if let Err(err) = events.send_checkpointed(event, checkpoint).await {
                // Not stored (the execution stopped here: its lease moved to
                // another node, say): noted, so a test knows it was tried.
                self.note(&format!("refused {task} {turn}"))?;
                return Err(err);
            }
            self.note(&format!("committed {task} {turn}"))?;
        }
        if text.split_whitespace().any(|word| word == "ask") {
            return events
                .require_input(format!("{turns} turns done; what next?"))
                .await;
        }
        events
            .complete_with_text(format!("{turns} turns done"))
            .await
    }
}
