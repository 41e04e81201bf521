//! A process agent hosted by the gateway next to others, called by name over
//! HTTP, and stopped by the gateway's shutdown.
// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod process_support;

use std::time::Duration;

use a2a_client::ClientBuilder;
use a2a_core::{AgentCard, Message, SendMessageRequest, SendMessageResponse, TaskState};
use a2a_gateway::Gateway;
use a2a_gateway::process::{Phase, ProcessAgent};
use a2a_server::http::{HttpConfig, ServeConfig};
use process_support::*;

#[tokio::test]
async fn the_gateway_hosts_a_process_agent_and_stops_it() {
    let agent = ProcessAgent::spawn("py", config()).unwrap();
    let listener = a2a_server::http::bind("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    let addr = listener.local_addr().unwrap();
    let card = AgentCard::new("Py", "The process test agent.").with_streaming(true);
    let gateway = Gateway::builder()
        .agent(agent.definition(card))
        .build(&format!("http://{addr}"))
        .unwrap();
    let app = gateway.router(HttpConfig::default());
    let service = gateway.service().clone();
    tokio::spawn(async move {
        let never = std::future::pending::<()>();
        a2a_server::http::serve_with(listener, app, service, never, ServeConfig::default()).await
    });

    let builder = ClientBuilder::new();
    let card = builder
        .resolver()
        .resolve(&format!("http://{addr}/agents/py"))
        .await
        .unwrap();
    let client = builder.build(card).unwrap();
    let request = SendMessageRequest::new(Message::user_text("echo through the gateway"));
    let SendMessageResponse::Task(task) = client.send_message(request, None).await.unwrap() else {
        panic!("expected a task")
    };
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(status_text(&task), "through the gateway");

    gateway.service().shutdown(Duration::from_secs(2)).await;
    let state = agent.state().borrow().clone();
    assert_eq!(state.phase, Phase::Stopped);
    assert_eq!(state.last_exit.as_deref(), Some("exited (status 0)"));
    assert!(agent.command_line().starts_with("python3 -u "));
}
