//! A process agent (a Python script speaking the JSON-lines protocol) in
//! the hub: it reads what the hub tells it from the message's metadata, and
//! collaborates over HTTP with its own secret, like a Rust agent through
//! its peers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use a2a_core::AgentCard;
use a2a_gateway::Gateway;
use a2a_gateway::process::{ProcessAgent, ProcessAgentConfig};
use a2a_hub::{ChannelConfig, Hub, HubConfig, Post, Sender};
use a2a_server::http::HttpConfig;
use support::{Calls, answers, scripted};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_agent_handles_hub_messages_and_collaborates_over_http() {
    let config = HubConfig {
        channels: vec![ChannelConfig::new("general"), ChannelConfig::new("dev")],
        ..HubConfig::default()
    };
    let hub = Hub::builder(config).open().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}", listener.local_addr().unwrap());
    let mut builder = Gateway::builder();
    let secret = builder.agent_secret("gamma");
    let script = ProcessAgentConfig::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/agents/hub_agent.py"
        ))
        .env("A2A_AGENT_NAME", "gamma")
        .env("A2A_GATEWAY_URL", format!("{base_url}/agents"))
        .env("A2A_AGENT_TOKEN", secret);
    let gamma = ProcessAgent::spawn("gamma", script).unwrap();
    let calls = Calls::default();
    let beta = answers(|text| format!("beta reviewed: {}", text.replace('@', "")));
    let gateway = builder
        .agent(hub.agent_definition())
        .agent(gamma.definition(AgentCard::new("gamma", "a Python script")))
        .agent(scripted("beta", beta, &calls, hub.name()))
        .build(&base_url)
        .unwrap();
    hub.connect(&gateway, Default::default()).unwrap();
    let app = gateway
        .router(HttpConfig::default())
        .merge(a2a_hub::http::router(hub.clone(), gateway.clone()));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    // The hub's context reaches the script in the message's metadata.
    let asked = hub
        .post(Post::new(
            Sender::Person("ann".into()),
            "general",
            "@gamma status?",
        ))
        .await
        .unwrap();
    hub.wait_idle().await;
    let answer = hub
        .messages(Some("general"), None, 10)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(answer.reply_to.as_deref(), Some(asked.id.as_str()));
    assert_eq!(
        answer.text,
        "heard ann as primary in general: @gamma status?"
    );

    // The script collaborates with beta, in the channel it was asked in.
    hub.post(Post::new(
        Sender::Person("ann".into()),
        "dev",
        "@gamma get beta to review the deploy script",
    ))
    .await
    .unwrap();
    hub.wait_idle().await;
    let threads = hub.threads(Some("dev"));
    assert_eq!(threads.len(), 1, "{:?}", hub.threads(None));
    assert_eq!(threads[0].title, "gamma → beta · deploy script review");
    assert_eq!(threads[0].participants, ["gamma", "beta"]);
    let said = hub.messages(Some("dev"), None, 10).await.unwrap();
    let passed = said.iter().find(|m| m.from.name() == "gamma").unwrap();
    assert!(
        passed.text.starts_with("passing it on: delivered to beta"),
        "{passed:?}"
    );
    let thread = hub.messages(None, Some(&threads[0].id), 10).await.unwrap();
    assert_eq!(thread[1].text, "beta reviewed: beta deploy script review");
    assert_eq!(thread[1].handlers, ["gamma"]);
    gamma.shutdown(std::time::Duration::from_secs(2)).await;
}
