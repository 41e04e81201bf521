//! A gRPC client given a DNS resolver connects only where that resolver
//! says: the gateway's remote links pass the address policy's guarded
//! resolver, so a name that turns to a refused address when the connection
//! is made is not reached.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use a2a_client::{ClientBuilder, ClientErrorKind};
use a2a_core::{AgentCard, binding};
use a2a_grpc::GrpcSettings;
use a2a_server::push::{AddressPolicy, GuardedResolver};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use support::*;

/// Resolves every name to one address, and remembers the names asked.
#[derive(Clone)]
struct FixedResolver {
    to: SocketAddr,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Resolve for FixedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        self.asked.lock().unwrap().push(name.as_str().to_owned());
        let addrs: Addrs = Box::new(std::iter::once(self.to));
        Box::pin(async move { Ok(addrs) })
    }
}

fn grpc_card(url: String) -> AgentCard {
    AgentCard::new("scripted", "scripted test agent").with_interface(url, binding::GRPC)
}

#[tokio::test]
async fn a_grpc_connection_resolves_its_host_through_the_given_resolver() {
    let server = server().await;
    let resolver = FixedResolver {
        to: server.addr,
        asked: Arc::default(),
    };
    // A name no system resolver knows: only the given resolver can reach it.
    let url = format!("not-a-real-host.invalid:{}", server.addr.port());
    let client = a2a_grpc::register_with(
        ClientBuilder::new(),
        GrpcSettings::default().dns_resolver(Arc::new(resolver.clone())),
    )
    .build(grpc_card(url))
    .unwrap();
    let task = send_task(&client, request("complete")).await;
    assert!(!task.id.is_empty());
    assert_eq!(
        resolver.asked.lock().unwrap().as_slice(),
        ["not-a-real-host.invalid"]
    );
}

#[tokio::test]
async fn a_grpc_connection_to_a_name_the_policy_refuses_is_not_made() {
    let server = server().await;
    // `localhost` is loopback, which the default policy refuses.
    let url = format!("localhost:{}", server.addr.port());
    let guarded = GuardedResolver::new(AddressPolicy::default());
    let client = a2a_grpc::register_with(
        ClientBuilder::new(),
        GrpcSettings::default().dns_resolver(Arc::new(guarded)),
    )
    .build(grpc_card(url))
    .unwrap();
    let err = client
        .send_message(request("complete"), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Connection, "{err}");
}
