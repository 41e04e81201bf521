//! An MCP server for tests: one tool, `add`, over streamable HTTP on
//! 127.0.0.1 (rmcp's server). Included by path by the tests that need it.

use a2a_mcp::rmcp::model::{
    CallToolRequestParam, CallToolResult, Content, ListToolsResult, PaginatedRequestParam,
    ServerCapabilities, ServerInfo, Tool,
};
use a2a_mcp::rmcp::service::RequestContext;
use a2a_mcp::rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use a2a_mcp::rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService,
};
use a2a_mcp::rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

/// A server with one tool, `add`, adding `a` and `b`.
#[derive(Clone)]
pub(crate) struct Adder;

impl ServerHandler for Adder {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            ..ServerInfo::default()
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParam>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
            "required": ["a", "b"]
        });
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "add",
            "Adds two numbers.",
            std::sync::Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParam,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let (Some(a), Some(b)) = (
            args.get("a").and_then(|v| v.as_f64()),
            args.get("b").and_then(|v| v.as_f64()),
        ) else {
            return Ok(CallToolResult::error(vec![Content::text(
                "a and b must be numbers",
            )]));
        };
        let mut result = CallToolResult::success(vec![Content::text(format!("{}", a + b))]);
        result.structured_content = Some(json!({ "sum": a + b }));
        Ok(result)
    }
}

/// The adder over streamable HTTP at `http://127.0.0.1:PORT/mcp`.
pub(crate) async fn http_adder() -> String {
    let service = StreamableHttpService::new(
        || Ok(Adder),
        std::sync::Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().route_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}
