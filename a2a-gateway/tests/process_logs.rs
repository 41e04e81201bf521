//! What the gateway logs about a process agent: its stderr and its `log`
//! lines with the agent's name, and a warning for each kind of bad line.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod process_support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use process_support::*;

/// Collects everything logged.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// On the test's one thread (the default runtime is single-threaded), so the
/// supervisor and the child's readers log into it too.
#[tokio::test]
async fn stderr_log_lines_and_bad_lines_are_logged_with_the_agent_name() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let gateway = Gateway::start(config().max_line_bytes(100_000));
    assert_eq!(status_text(&gateway.task("stderr").await), "wrote stderr");
    assert_eq!(status_text(&gateway.task("garbage").await), "survived");
    gateway
        .agent
        .shutdown(std::time::Duration::from_secs(5))
        .await;

    let logs = captured.text();
    let line_with = |needle: &str| {
        logs.lines()
            .find(|line| line.contains(needle))
            .unwrap_or_else(|| panic!("no log line with {needle:?} in:\n{logs}"))
            .to_owned()
    };
    assert!(line_with("a line on stderr").contains("agent=test"));
    assert!(line_with("about to finish").contains("WARN"));
    for warning in [
        "agent line is not JSON",
        "agent line of unknown type \"telepathy\"",
        "agent line without a \"type\"",
        "agent line for a task it does not have",
        "agent artifact line without a taskId",
        "agent line over the length limit dropped",
    ] {
        let line = line_with(warning);
        assert!(
            line.contains("WARN") && line.contains("agent=test"),
            "{line}"
        );
    }
    assert!(line_with("agent process started").contains("INFO"));
}
