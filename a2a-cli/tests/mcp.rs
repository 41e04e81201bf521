//! MCP end to end with the official Rust MCP SDK's client (`rmcp`): the
//! agents of `a2a serve` (a gateway's, or the lone echo agent) listed and
//! called as tools over stdio (`a2a mcp --url`) and over streamable HTTP
//! (`/mcp`, authenticated as the bindings are); progress of a streamed
//! task; an input-required round trip; and the MCP client toolbox
//! (`a2a_mcp::McpToolbox`) against `a2a mcp` as its server.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2a_mcp::rmcp::model::{
    CallToolRequestParam, CallToolResult, ClientRequest, ProgressNotificationParam, Request,
    ServerResult,
};
use a2a_mcp::rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use a2a_mcp::rmcp::transport::StreamableHttpClientTransport;
use a2a_mcp::rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use a2a_mcp::rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use a2a_mcp::{McpServerConfig, McpToolbox};
use serde_json::{Value, json};
use support::{PATIENCE, Server, arg, gateway_file, serve_in_memory};

const GATEWAY: &str = r#"[agents.planner]
kind = "rust"
executor = "echo"
description = "Plans the work."
skills = [{ id = "plan", name = "Plan", description = "Breaks a goal into steps." }]

[agents.coder]
kind = "rust"
executor = "echo"
description = "Writes the code."
"#;

/// A client that counts the progress notifications it gets.
#[derive(Clone, Default)]
struct Counting {
    progress: Arc<AtomicUsize>,
    said: Arc<tokio::sync::Notify>,
}

impl ClientHandler for Counting {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.fetch_add(1, Ordering::SeqCst);
        self.said.notify_waiters();
    }
}

/// `a2a mcp --url URL ARGS` as a child, the rmcp client connected to it.
async fn stdio_client(url: &str, args: &[&str]) -> RunningService<RoleClient, Counting> {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["mcp", "--url", url])
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    // The child lives as long as the test's runtime: dropped with it.
    std::mem::forget(child);
    tokio::time::timeout(PATIENCE, Counting::default().serve((stdout, stdin)))
        .await
        .unwrap()
        .unwrap()
}

/// The rmcp client of `/mcp` at `url`, with `token` if any.
async fn http_client(url: &str, token: Option<&str>) -> RunningService<RoleClient, Counting> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{url}/mcp"));
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    tokio::time::timeout(PATIENCE, Counting::default().serve(transport))
        .await
        .unwrap()
        .unwrap()
}

async fn call(
    client: &RunningService<RoleClient, Counting>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let Value::Object(arguments) = args else {
        panic!("arguments must be an object")
    };
    tokio::time::timeout(
        PATIENCE,
        client.call_tool(CallToolRequestParam {
            name: tool.to_owned().into(),
            arguments: Some(arguments),
        }),
    )
    .await
    .unwrap()
    .unwrap()
}

/// The result's text items, joined.
fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn structured(result: &CallToolResult, key: &str) -> String {
    result.structured_content.as_ref().unwrap()[key]
        .as_str()
        .unwrap()
        .to_owned()
}

fn gateway(dir: &tempfile::TempDir, extra: &[&str]) -> Server {
    let file = gateway_file(dir.path(), GATEWAY);
    let mut args = vec!["--config", arg(&file)];
    args.extend(extra);
    serve_in_memory(&args)
}

#[tokio::test]
async fn stdio_lists_and_calls_every_agent_of_a_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let server = gateway(&dir, &[]);
    let client = stdio_client(&server.url, &[]).await;
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["planner", "coder"]);
    let planner = &tools[0];
    let description = planner.description.as_deref().unwrap();
    assert!(description.starts_with("Plans the work."), "{description}");
    assert!(
        description.contains("Plan: Breaks a goal into steps."),
        "{description}"
    );
    assert_eq!(planner.input_schema["required"], json!(["message"]));

    let result = call(&client, "coder", json!({ "message": "hello over stdio" })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(text(&result).contains("hello over stdio"), "{result:?}");
    assert_eq!(structured(&result, "state"), "completed");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stdio_input_required_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let server = gateway(&dir, &[]);
    let client = stdio_client(&server.url, &[]).await;
    // The echo agent asks what to echo when told `?`.
    let asked = call(&client, "planner", json!({ "message": "?" })).await;
    assert_eq!(asked.is_error, Some(false), "{asked:?}");
    assert!(text(&asked).contains("What should I echo?"), "{asked:?}");
    assert_eq!(structured(&asked, "state"), "input-required");
    let task = structured(&asked, "taskId");
    let context = structured(&asked, "contextId");
    assert!(
        text(&asked).contains(&task),
        "the answer names the task: {asked:?}"
    );

    let answered = call(
        &client,
        "planner",
        json!({ "message": "the answer", "taskId": task, "contextId": context }),
    )
    .await;
    assert_eq!(structured(&answered, "state"), "completed", "{answered:?}");
    assert_eq!(structured(&answered, "taskId"), task);
    assert!(text(&answered).contains("the answer"), "{answered:?}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn http_mcp_is_authenticated_like_the_bindings() {
    let server = serve_in_memory(&["--auth-bearer-token", "s3cret"]);
    assert!(server.banner.contains("/mcp"), "{}", server.banner);
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let accept = "accept: application/json, text/event-stream";
    let refused = support::http(&server.url, "POST /mcp", &[accept], Some(initialize)).unwrap();
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(
        refused
            .head
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{refused:?}"
    );
    let wrong = support::http(
        &server.url,
        "POST /mcp",
        &[accept, "authorization: Bearer wrong"],
        Some(initialize),
    )
    .unwrap();
    assert_eq!(wrong.status, 401, "{wrong:?}");

    let client = http_client(&server.url, Some("s3cret")).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "a2a_echo_agent");
    let result = call(&client, "a2a_echo_agent", json!({ "message": "over http" })).await;
    assert!(text(&result).contains("over http"), "{result:?}");
    assert_eq!(structured(&result, "state"), "completed");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn http_mcp_of_a_gateway_reports_progress_of_a_streamed_task() {
    let dir = tempfile::tempdir().unwrap();
    let server = gateway(&dir, &[]);
    let handler = Counting::default();
    let progress = handler.progress.clone();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url)),
    );
    let client = handler.serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 2);
    // Five words: the echo agent streams each as an artifact chunk, and
    // says how many it echoed at the end.
    let Value::Object(arguments) = json!({ "message": "one two three four five" }) else {
        unreachable!()
    };
    let request = ClientRequest::CallToolRequest(Request::new(CallToolRequestParam {
        name: "coder".into(),
        arguments: Some(arguments),
    }));
    // rmcp gives every request a progress token of its own.
    let handle = client
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("not a tool result")
    };
    assert!(
        text(&result).contains("one two three four five"),
        "{result:?}"
    );
    // Notifications come before the result on the same stream; the
    // client's handler may still be counting the last ones.
    let said = tokio::time::timeout(PATIENCE, async {
        loop {
            let waiting = client.service().said.notified();
            if progress.load(Ordering::SeqCst) >= 5 {
                break;
            }
            waiting.await;
        }
    })
    .await;
    assert!(
        said.is_ok(),
        "{} progress notifications",
        progress.load(Ordering::SeqCst)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_toolbox_uses_a2a_mcp_as_its_stdio_server_and_http_mcp() {
    let server = serve_in_memory(&["--auth-bearer-token", "s3cret"]);
    let config = McpServerConfig {
        command: vec![
            env!("CARGO_BIN_EXE_a2a").to_owned(),
            "mcp".to_owned(),
            "--url".to_owned(),
            server.url.clone(),
            "--bearer-token-env".to_owned(),
            "ECHO_TOKEN".to_owned(),
        ],
        env: [("ECHO_TOKEN".to_owned(), "s3cret".to_owned())].into(),
        ..McpServerConfig::default()
    };
    let toolbox = McpToolbox::connect("echo", &config).await.unwrap();
    let tools = toolbox.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "a2a_echo_agent");
    assert_eq!(tools[0].input_schema["type"], "object");
    let output = toolbox
        .call("a2a_echo_agent", json!({ "message": "via the toolbox" }))
        .await
        .unwrap();
    assert!(!output.is_error, "{output:?}");
    assert!(output.text.contains("via the toolbox"), "{output:?}");
    assert_eq!(output.structured.unwrap()["state"], "completed");
    toolbox.shutdown(PATIENCE).await;

    // The same agent over HTTP, with the token.
    let mut http = McpServerConfig::http(format!("{}/mcp", server.url));
    http.bearer_token = Some("s3cret".to_owned());
    let toolbox = McpToolbox::connect("echo-http", &http).await.unwrap();
    let output = toolbox
        .call("a2a_echo_agent", json!({ "message": "?" }))
        .await
        .unwrap();
    assert!(output.text.contains("What should I echo?"), "{output:?}");
    assert_eq!(output.structured.unwrap()["state"], "input-required");
    let refused = McpToolbox::connect(
        "no-token",
        &McpServerConfig::http(format!("{}/mcp", server.url)),
    )
    .await;
    assert!(refused.is_err(), "{refused:?}");
}

#[test]
fn the_example_mcp_gateway_file_names_the_schema_and_passes_the_check() {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gateway/mcp.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("#:schema ../../schema/gateway.schema.json\n"));
    let out = support::ok(&["config", "check", arg(&file)]);
    assert!(out.contains(": ok, 1 agent(s)"), "{out}");
    assert!(
        out.contains("mcp: echo (a2a mcp --url http://127.0.0.1:9998)"),
        "{out}"
    );
    assert!(
        out.contains("mcp: echo-http (http://127.0.0.1:9998/mcp)"),
        "{out}"
    );
}

#[test]
fn a_gateway_that_cannot_start_its_mcp_server_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(
        dir.path(),
        &format!(
            "{GATEWAY}\n[mcp.broken]\ncommand = [\"sh\", \"-c\", \"echo out of disk >&2; exit 4\"]\n"
        ),
    );
    let refusal = support::serve_refused(&[
        "--store",
        "memory",
        "--no-conversation-log",
        "--config",
        arg(&file),
    ]);
    assert!(refusal.stderr.contains("mcp.broken"), "{}", refusal.stderr);
    assert!(refusal.stderr.contains("out of disk"), "{}", refusal.stderr);
}

// ===== [mcp.NAME] in gateway files =====

use a2a_gateway::config::GatewayConfig;

const ONE_AGENT: &str = "[agents.a]\nkind = \"rust\"\nexecutor = \"echo\"\n\n";

fn parse_mcp(mcp: &str) -> Result<GatewayConfig, a2a_gateway::config::ConfigError> {
    GatewayConfig::parse("/etc/a2a/gateway.toml", &format!("{ONE_AGENT}{mcp}"))
}

fn mcp_error(mcp: &str) -> String {
    parse_mcp(mcp).unwrap_err().to_string()
}

#[test]
fn servers_are_read_in_file_order_with_paths_from_the_file() {
    let config = parse_mcp(
        "[mcp.zeta]\ncommand = [\"srv\", \"--stdio\"]\nenv = { A = \"1\" }\n\n\
         [mcp.alpha]\nurl = \"http://127.0.0.1:9/mcp\"\ntimeout_secs = 5\n",
    )
    .unwrap();
    let names: Vec<&str> = config.mcp.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["zeta", "alpha"]);
    let zeta = &config.mcp[0].config;
    assert_eq!(zeta.command, ["srv", "--stdio"]);
    assert_eq!(
        zeta.working_dir.as_deref(),
        Some(std::path::Path::new("/etc/a2a"))
    );
    let alpha = &config.mcp[1].config;
    assert_eq!(alpha.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
    assert_eq!(alpha.timeout_secs, Some(5));
    assert!(parse_mcp("").unwrap().mcp.is_empty());
}

#[test]
fn errors_name_the_file_line_and_field() {
    assert_eq!(
        mcp_error("[mcp.x]\ncommand = [\"a\"]\nurl = \"http://h/mcp\"\n"),
        "/etc/a2a/gateway.toml:7:7: mcp.x.url: give `command` (stdio) or `url` (streamable HTTP), not both"
    );
    let missing = mcp_error("[mcp.x]\ntimeout_secs = 3\n");
    assert!(
        missing.contains("mcp.x.command: an MCP server needs"),
        "{missing}"
    );
    let foreign = mcp_error("[mcp.x]\nurl = \"http://h/mcp\"\nenv = { A = \"1\" }\n");
    assert!(
        foreign.contains(":7:7: mcp.x.env: `env` is not for a `url` server"),
        "{foreign}"
    );
    let token = mcp_error("[mcp.x]\ncommand = [\"a\"]\nbearer_token_env = \"T\"\n");
    assert!(token.contains("mcp.x.bearer_token_env"), "{token}");
    let unset =
        mcp_error("[mcp.x]\nurl = \"http://h/mcp\"\nbearer_token_env = \"A2A_MCP_UNSET_VAR\"\n");
    assert!(
        unset.contains("environment variable A2A_MCP_UNSET_VAR is not set"),
        "{unset}"
    );
    assert!(mcp_error("[mcp.x]\nurl = \"ftp://h\"\n").contains("mcp.x.url: must be an http"));
    assert!(mcp_error("[mcp.x]\ncommand = []\n").contains("mcp.x.command: must name a program"));
    assert!(
        mcp_error("[mcp.x]\ncommand = [\"a\"]\ntimeout_secs = 0\n").contains("mcp.x.timeout_secs")
    );
    assert!(
        mcp_error("[mcp.x]\ncommand = [\"a\"]\nenv = { \"1A\" = \"b\" }\n").contains("mcp.x.env")
    );
    assert!(mcp_error("[mcp.x]\ncommand = [\"a\"]\nport = 3\n").contains("unknown field `port`"));
    assert!(mcp_error("[mcp.\"bad name\"]\ncommand = [\"a\"]\n").contains("mcp.bad name"));
}
