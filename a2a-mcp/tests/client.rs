//! The MCP client toolbox against servers the tests start: an rmcp server
//! over streamable HTTP on 127.0.0.1, and stdio servers that crash, hang
//! or break off mid-call (small `sh` and `python3` scripts): each failure
//! is an error that says what happened, within the configured limits.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use a2a_mcp::{McpError, McpServerConfig, McpToolbox};
use serde_json::json;

// The adder MCP server over streamable HTTP (shared with the gateway's tests).
#[path = "support/adder.rs"]
mod adder;

use adder::http_adder;

/// How long anything the tests wait for may take.
const PATIENCE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn an_http_server_is_listed_and_called() {
    let url = http_adder().await;
    let toolbox = McpToolbox::connect("adder", &McpServerConfig::http(&url))
        .await
        .unwrap();
    assert_eq!(toolbox.name(), "adder");
    let tools = toolbox.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "add");
    assert_eq!(tools[0].description, "Adds two numbers.");
    assert_eq!(tools[0].input_schema["required"], json!(["a", "b"]));

    let output = toolbox
        .call("add", json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(output.text, "5");
    assert_eq!(output.structured, Some(json!({ "sum": 5.0 })));
    assert!(!output.is_error);
    let failed = toolbox.call("add", json!({ "a": "x" })).await.unwrap();
    assert!(failed.is_error, "{failed:?}");
    assert_eq!(failed.text, "a and b must be numbers");
    assert_eq!(
        toolbox.call("subtract", json!({})).await,
        Err(McpError::UnknownTool("subtract".into()))
    );
    assert!(matches!(
        toolbox.call("add", json!([1, 2])).await,
        Err(McpError::Protocol(_))
    ));
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    // A port that was free a moment ago: nothing answers there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = McpToolbox::connect("gone", &McpServerConfig::http(format!("http://{addr}/mcp")))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Connect(_)), "{err:?}");
}

#[tokio::test]
async fn a_server_that_exits_at_once_says_why() {
    let config = McpServerConfig::stdio(["sh", "-c", "echo 'no such database' >&2; exit 3"]);
    let err = McpToolbox::connect("crash", &config).await.unwrap_err();
    let McpError::Connect(why) = &err else {
        panic!("{err:?}")
    };
    assert!(why.contains("no such database"), "{why}");
    assert!(why.contains("exit status: 3"), "{why}");
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_a_spawn_error() {
    let config = McpServerConfig::stdio(["/nonexistent/mcp-server"]);
    let err = McpToolbox::connect("missing", &config).await.unwrap_err();
    assert!(matches!(err, McpError::Spawn(_)), "{err:?}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    // Reads every request, answers none.
    let mut config = McpServerConfig::stdio(["sh", "-c", "cat > /dev/null"]);
    config.startup_timeout_secs = Some(1);
    let started = std::time::Instant::now();
    let err = McpToolbox::connect("mute", &config).await.unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < PATIENCE);
}

/// A stdio MCP server in Python (no packages): answers the handshake and
/// the tool list, then on `tools/call` does what `on_call` says.
fn python_server(on_call: &str) -> McpServerConfig {
    let script = format!(
        r#"
import json, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    method, id = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {{"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {{"tools": {{}}}},
                  "serverInfo": {{"name": "py", "version": "0"}}}}
    elif method == "tools/list":
        result = {{"tools": [{{"name": "work", "inputSchema": {{"type": "object"}}}}]}}
    elif method == "tools/call":
        {on_call}
    else:
        continue
    print(json.dumps({{"jsonrpc": "2.0", "id": id, "result": result}}), flush=True)
"#
    );
    McpServerConfig::stdio(["python3", "-c", &script])
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_says_so() {
    let config =
        python_server(r#"print("segfault in work", file=sys.stderr, flush=True); sys.exit(7)"#);
    let toolbox = McpToolbox::connect("crashy", &config).await.unwrap();
    assert_eq!(toolbox.tools()[0].name, "work");
    let err = tokio::time::timeout(PATIENCE, toolbox.call("work", json!({})))
        .await
        .expect("a crash is an error at once, not a hang")
        .unwrap_err();
    let McpError::Closed(why) = &err else {
        panic!("{err:?}")
    };
    assert!(why.contains("segfault in work"), "{why}");
}

#[tokio::test]
async fn a_call_that_hangs_times_out_and_the_child_is_stopped() {
    let mut config = python_server("time.sleep(3600)");
    config.timeout_secs = Some(1);
    let toolbox = McpToolbox::connect("slow", &config).await.unwrap();
    let err = toolbox.call("work", json!({})).await.unwrap_err();
    assert_eq!(
        err,
        McpError::Timeout {
            what: "tools/call work".into(),
            after: Duration::from_secs(1)
        }
    );
    // Its stdin closed, the child still sleeps: shutdown kills it.
    tokio::time::timeout(PATIENCE, toolbox.shutdown(Duration::from_millis(100)))
        .await
        .unwrap();
}

#[test]
fn configs_are_one_of_command_and_url() {
    let both = McpServerConfig {
        url: Some("http://127.0.0.1:1/mcp".into()),
        ..McpServerConfig::stdio(["x"])
    };
    assert!(both.check().is_err());
    assert!(McpServerConfig::default().check().is_err());
    assert!(McpServerConfig::http("ftp://x").check().is_err());
    assert!(McpServerConfig::stdio([""]).check().is_err());
    let parsed: McpServerConfig =
        serde_json::from_value(json!({ "command": ["srv", "--stdio"], "env": { "A": "1" } }))
            .unwrap();
    assert_eq!(parsed.command, ["srv", "--stdio"]);
    assert!(parsed.check().is_ok());
    assert!(serde_json::from_value::<McpServerConfig>(json!({ "cmd": [] })).is_err());
}
