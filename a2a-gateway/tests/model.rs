//! A model agent in a gateway (`kind = "model"`): its tools are the other
//! agents, called through `Peers`, and the tools of MCP servers; their
//! answers go back to the model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use a2a_core::{A2aError, AgentCard, SendMessageResponse, TaskState};
use a2a_gateway::config::GatewayConfig;
use a2a_gateway::{AgentDefinition, Gateway};
use a2a_server::{AgentExecutor, EventQueue, RequestContext};

// The fake chat completions endpoint the model agent's own tests use.
#[path = "../../a2a-model/tests/support/fake.rs"]
mod fake;

use fake::Fake;
use serde_json::json;

// An MCP server with one tool, `add` (the MCP client's tests use it too).
#[path = "../../a2a-mcp/tests/support/adder.rs"]
mod adder;

use a2a_mcp::{McpServerConfig, McpToolbox};
use a2a_model::ToolSet;

/// Says the message back, naming who asked.
struct Echo;

#[async_trait::async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventQueue) -> Result<(), A2aError> {
        let text = format!("echo: {} (from {})", ctx.message.text(), ctx.call.user.name);
        events.complete_with_text(text).await
    }
}

#[tokio::test]
async fn a_model_agent_calls_another_agent_of_the_gateway_as_a_tool() {
    let fake = Fake::start(vec![
        fake::calls(&[("c1", "echo", json!({ "message": "ping" }))]),
        fake::text("The echo agent said ping back."),
    ])
    .await;
    // The agent as a gateway file describes it.
    let file = format!(
        "[agents.thinker]\nkind = \"model\"\nbase_url = \"{}\"\nmodel = \"fake\"\nsystem = \"Use the echo agent.\"\ndescription = \"Thinks.\"\n\n[agents.echo]\nkind = \"rust\"\nexecutor = \"echo\"\n",
        fake.base_url()
    );
    let config = GatewayConfig::parse("gateway.toml", &file).unwrap();
    let thinker = &config.agents[0];
    let card = AgentCard::new("thinker", "Thinks.").with_streaming(true);
    let gateway = Gateway::builder()
        .agent(a2a_gateway::model::definition(thinker, card, ToolSet::new(), None).unwrap())
        .agent(AgentDefinition::new(
            "echo",
            AgentCard::new("echo", "Says it back.").with_streaming(true),
            Echo,
        ))
        .build("http://127.0.0.1:1")
        .unwrap();
    assert_eq!(gateway.agent("thinker").unwrap().kind.as_str(), "model");

    let client = gateway.peers("echo").unwrap().client("thinker").unwrap();
    let SendMessageResponse::Task(task) = client.send_text("ask echo").await.unwrap() else {
        panic!("a task");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(
        task.status.message.unwrap().text(),
        "The echo agent said ping back."
    );
    // The model was offered the other agent (not itself) and ask_user.
    let first = fake.request(0);
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["ask_user", "echo"]);
    assert!(
        first["tools"][1]["function"]["description"]
            .as_str()
            .unwrap()
            .contains("Says it back.")
    );
    // The echo agent's answer went back to the model, as the tool's result:
    // it was called as the model agent.
    let second = fake.request(1);
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(result["tool_call_id"], "c1");
    assert_eq!(result["content"], "echo: ping (from agent:thinker)");
}

#[tokio::test]
async fn a_model_agent_calls_a_tool_of_an_mcp_server() {
    let url = adder::http_adder().await;
    let toolbox = McpToolbox::connect("calc", &McpServerConfig::http(url))
        .await
        .unwrap();
    let fake = Fake::start(vec![
        fake::calls(&[("c1", "calc_add", json!({ "a": 2, "b": 3 }))]),
        fake::text("2 and 3 make 5."),
    ])
    .await;
    let file = format!(
        "[agents.thinker]\nkind = \"model\"\nbase_url = \"{}\"\nmodel = \"fake\"\ndescription = \"Thinks.\"\n",
        fake.base_url()
    );
    let config = GatewayConfig::parse("gateway.toml", &file).unwrap();
    let tools = a2a_gateway::model::mcp_tools(std::slice::from_ref(&toolbox));
    let card = AgentCard::new("thinker", "Thinks.");
    let gateway = Gateway::builder()
        .agent(a2a_gateway::model::definition(&config.agents[0], card, tools, None).unwrap())
        .agent(AgentDefinition::new(
            "echo",
            AgentCard::new("echo", "Says it back."),
            Echo,
        ))
        .mcp_toolboxes(vec![toolbox])
        .build("http://127.0.0.1:1")
        .unwrap();

    let client = gateway.peers("echo").unwrap().client("thinker").unwrap();
    let SendMessageResponse::Task(task) = client.send_text("add 2 and 3").await.unwrap() else {
        panic!("a task");
    };
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(task.status.message.unwrap().text(), "2 and 3 make 5.");
    // The server's tool was offered under its server's name...
    let first = fake.request(0);
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"calc_add"), "{offered:?}");
    // ...and its result went back to the model as the tool's answer.
    let second = fake.request(1);
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(result["tool_call_id"], "c1");
    assert_eq!(result["content"], "5");
}
