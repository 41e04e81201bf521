//! The hub and the gateway's conversation index keep one notion of a
//! pair's conversation: a collaborate continues what the pair said through
//! `Peers`, and a `Peers` call continues the pair's hub thread.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;

use a2a_conversation::{ConversationIndex, RouteKey};
use a2a_gateway::{Conversations, Gateway};
use a2a_hub::{Collaborate, Hub, HubConfig, Sender};
use support::{Calls, answers, scripted};

struct World {
    hub: Hub,
    gateway: Gateway,
    calls: Calls,
    conversations: Conversations,
}

async fn world() -> World {
    let conversations = Conversations::new(ConversationIndex::in_memory());
    let hub = Hub::builder(HubConfig::default())
        .conversations(conversations.clone())
        .open()
        .unwrap();
    let calls = Calls::default();
    let gateway = Gateway::builder()
        .agent(hub.agent_definition())
        .agent(scripted(
            "alpha",
            answers(|t| format!("alpha: {t}")),
            &calls,
            hub.name(),
        ))
        .agent(scripted(
            "beta",
            answers(|t| format!("beta: {t}")),
            &calls,
            hub.name(),
        ))
        .conversations(conversations.clone().relay(hub.name()))
        .build("http://127.0.0.1:1")
        .unwrap();
    hub.connect(&gateway, HashMap::new()).unwrap();
    World {
        hub,
        gateway,
        calls,
        conversations,
    }
}

/// Alpha asks beta through its peers; the context of beta's task.
async fn peers_call(world: &World, text: &str) -> String {
    let answer = world
        .gateway
        .peers("alpha")
        .unwrap()
        .client("beta")
        .unwrap()
        .send_text(text)
        .await
        .unwrap();
    match answer {
        a2a_core::SendMessageResponse::Task(task) => task.context_id,
        a2a_core::SendMessageResponse::Message(message) => message.context_id,
    }
}

fn pair() -> RouteKey {
    RouteKey::new("default", "alpha", "beta")
}

#[tokio::test]
async fn hub_collaborate_continues_the_conversation_the_pair_had_through_peers() {
    let world = world().await;
    let context = peers_call(&world, "hello").await;
    let collaboration = world
        .hub
        .collaborate(
            Sender::Agent("alpha".into()),
            Collaborate::new("beta", "code review"),
        )
        .await
        .unwrap();
    assert_eq!(
        collaboration.thread, context,
        "the thread is the pair's conversation"
    );
    world.hub.wait_idle().await;
    let delivered = world.calls.of("beta");
    assert_eq!(delivered.last().unwrap().context_id, context);
    assert_eq!(
        world.conversations.index().get(&pair()).unwrap().context_id,
        context
    );
    // And back to Peers: still the same conversation.
    assert_eq!(peers_call(&world, "after the review").await, context);
}

#[tokio::test]
async fn peers_continue_the_pairs_hub_thread() {
    let world = world().await;
    let collaboration = world
        .hub
        .collaborate(
            Sender::Agent("beta".into()),
            Collaborate::new("alpha", "plan the release"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let route = world.conversations.index().get(&pair()).unwrap();
    assert_eq!(route.context_id, collaboration.thread);
    assert_eq!(
        peers_call(&world, "about that plan").await,
        collaboration.thread
    );
    // A second collaborate, the other way round, continues the same thread.
    let again = world
        .hub
        .collaborate(
            Sender::Agent("alpha".into()),
            Collaborate::new("beta", "one more thing"),
        )
        .await
        .unwrap();
    assert!(again.continued, "{again:?}");
    assert_eq!(again.thread, collaboration.thread);
    // The hub's own deliveries are not a pair's turns.
    assert!(
        world
            .conversations
            .index()
            .entries()
            .iter()
            .all(|(key, _)| !key.as_str().contains("hub")),
        "{:?}",
        world.conversations.index().entries()
    );
}
