//! The hub's API client (`a2a_hub::api::HubApiClient`) against the real
//! router on a port: every call, the live feed, the hub's refusals with
//! their kinds, a server without a hub, no server, authentication, and a
//! client that cannot be made.

#![allow(clippy::unwrap_used)] // the helpers too, not only the tests

mod support;

use std::collections::HashMap;
use std::time::Duration;

use a2a_hub::api::{
    CollaborateRequest, FeedEvent, HubApiClient, HubApiError, HubApiErrorKind, HubFeed,
    MessagesQuery, PostMessage,
};
use a2a_hub::{HubErrorKind, HubMessage, Sender};
use a2a_server::auth::{BearerAuth, Principal};
use support::{World, general_and_ops, team, world, world_built};

async fn served() -> (World, HubApiClient) {
    let world = world(general_and_ops(), team()).await;
    let url = world.serve().await;
    // The operator's client: without authentication, its token is what
    // lets it resume a paused thread.
    let api = HubApiClient::builder(&url)
        .bearer_token(world.hub.operator_token())
        .build()
        .unwrap();
    (world, api)
}

/// `text` from `from` in `channel`.
fn post(text: &str, channel: &str, from: &str) -> PostMessage {
    PostMessage {
        channel: Some(channel.into()),
        from: Some(from.into()),
        ..PostMessage::new(text)
    }
}

/// The hub's refusal of `failed`: its kind, and the status it came with.
fn refusal<T: std::fmt::Debug>(failed: Result<T, HubApiError>) -> (HubErrorKind, u16, HubApiError) {
    let err = failed.unwrap_err();
    assert_eq!(err.kind(), HubApiErrorKind::Refused, "{err}");
    let kind = err.hub_error().unwrap().kind();
    (kind, err.status().unwrap(), err)
}

/// The next message of `feed` (within 10 s), past other events.
async fn next_message(feed: &mut HubFeed) -> HubMessage {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let FeedEvent::Message(message) = feed.next().await.unwrap() {
                return message;
            }
        }
    })
    .await
    .expect("no message on the feed within 10 s")
}

#[tokio::test]
async fn channels_posts_and_history_come_back_as_the_hub_holds_them() {
    let (world, api) = served().await;
    let channels = api.channels().await.unwrap();
    assert_eq!(channels, world.hub.channels());
    assert!(channels[0].is_default && channels[0].name == "general");

    let posted = api
        .post(&post("@beta hello", "general", "ann"))
        .await
        .unwrap();
    assert_eq!(posted.handlers, ["beta"]);
    assert_eq!(posted.from, Sender::Person("ann".into()));
    world.hub.wait_idle().await;

    let query = MessagesQuery {
        channel: Some("general".into()),
        limit: Some(10),
        ..MessagesQuery::default()
    };
    let messages = api.messages(&query).await.unwrap();
    assert_eq!(messages, world.channel_messages("general").await);
    let answer = messages
        .iter()
        .find(|m| m.reply_to.as_deref() == Some(posted.id.as_str()))
        .unwrap();
    assert_eq!(answer.text, "beta: beta hello");
}

#[tokio::test]
async fn a_collaboration_opens_a_thread_the_client_lists_reads_and_resumes() {
    let (world, api) = served().await;
    let request = CollaborateRequest {
        from: Some("ann".into()),
        ..CollaborateRequest::new("beta", "check the build")
    };
    let done = api.collaborate(&request).await.unwrap();
    assert_eq!(
        (done.target.as_str(), done.channel.as_str()),
        ("beta", "general")
    );
    assert!(!done.continued);
    world.hub.wait_idle().await;

    let listed = api.threads(Some("general")).await.unwrap();
    assert_eq!(listed, world.hub.threads(Some("general")));
    assert!(api.threads(Some("ops")).await.unwrap().is_empty());
    let thread = api.thread(&done.thread).await.unwrap().unwrap();
    assert_eq!(thread.participants, ["beta"]);
    assert_eq!(api.thread("no-such-thread").await.unwrap(), None);

    let query = MessagesQuery {
        thread: Some(done.thread.clone()),
        ..MessagesQuery::default()
    };
    let messages = api.messages(&query).await.unwrap();
    assert_eq!(messages, world.thread_messages(&done.thread).await);

    let resumed = api.resume(&done.thread).await.unwrap();
    assert_eq!(resumed.id, done.thread);
    assert!(!resumed.paused);
}

#[tokio::test]
async fn the_hubs_refusals_keep_their_kind_status_and_message() {
    let (_world, api) = served().await;
    let (kind, status, err) = refusal(api.threads(Some("nope")).await);
    assert_eq!((kind, status), (HubErrorKind::NotFound, 404));
    assert!(
        err.to_string().contains("no channel named \"nope\""),
        "{err}"
    );

    let (kind, status, _) = refusal(api.post(&post("  ", "general", "ann")).await);
    assert_eq!((kind, status), (HubErrorKind::Invalid, 400));

    // A thread id that is no path segment as it stands reaches the hub whole.
    let (kind, _, err) = refusal(api.resume("no/such thread?").await);
    assert_eq!(kind, HubErrorKind::NotFound);
    assert!(err.to_string().contains("no/such thread?"), "{err}");

    // The pair guard: the fourth call within its window is refused, with
    // the wait it asks for.
    let ask = CollaborateRequest::new("beta", "again");
    for _ in 0..3 {
        api.collaborate(&ask).await.unwrap();
    }
    let (kind, status, err) = refusal(api.collaborate(&ask).await);
    assert_eq!((kind, status), (HubErrorKind::Refused, 429));
    assert!(err.hub_error().unwrap().retry_after().is_some(), "{err}");
}

#[tokio::test]
async fn the_feed_brings_what_happens_after_it_opened_in_its_channel() {
    let (world, api) = served().await;
    world
        .hub
        .post(a2a_hub::Post::new(
            Sender::Person("ann".into()),
            "general",
            "before",
        ))
        .await
        .unwrap();
    let mut feed = api.feed(Some("general")).await.unwrap();
    api.post(&post("elsewhere", "ops", "ann")).await.unwrap();
    let posted = api
        .post(&post("@beta watched?", "general", "ann"))
        .await
        .unwrap();
    assert_eq!(next_message(&mut feed).await, posted);
    let answer = next_message(&mut feed).await;
    assert_eq!(answer.reply_to.as_deref(), Some(posted.id.as_str()));

    api.collaborate(&CollaborateRequest::new("beta", "a thread"))
        .await
        .unwrap();
    let opened = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let FeedEvent::Thread(thread) = feed.next().await.unwrap() {
                return thread;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(opened.participants, ["beta"]);

    let unknown = api.feed(Some("nope")).await.unwrap_err();
    assert_eq!(unknown.hub_error().unwrap().kind(), HubErrorKind::NotFound);
}

#[tokio::test]
async fn a_server_without_a_hub_and_no_server_at_all_are_told_apart() {
    let world = world(general_and_ops(), team()).await;
    let app = world
        .gateway
        .router(a2a_server::http::HttpConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let no_hub = HubApiClient::new(&url)
        .unwrap()
        .channels()
        .await
        .unwrap_err();
    assert_eq!(no_hub.kind(), HubApiErrorKind::NoHub, "{no_hub}");
    assert!(
        no_hub.to_string().contains("no collaboration hub at"),
        "{no_hub}"
    );

    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let unreachable = HubApiClient::new(&gone).unwrap().channels().await;
    let unreachable = unreachable.unwrap_err();
    assert_eq!(unreachable.kind(), HubApiErrorKind::Unreachable);
    let said = unreachable.to_string();
    assert!(said.starts_with("cannot reach the hub at"), "{said}");
    assert!(std::error::Error::source(&unreachable).is_some());
}

#[tokio::test]
async fn with_the_gateways_authentication_the_client_presents_its_token() {
    let world = world_built(general_and_ops(), team(), None, HashMap::new(), |gateway| {
        gateway.authentication(BearerAuth::new().token("t", Principal::new("ann")))
    })
    .await;
    let url = world.serve().await;
    for client in [
        HubApiClient::new(&url).unwrap(),
        HubApiClient::builder(&url)
            .bearer_token("wrong")
            .build()
            .unwrap(),
    ] {
        let refused = client.channels().await.unwrap_err();
        assert_eq!(refused.kind(), HubApiErrorKind::Unauthorized, "{refused}");
        assert_eq!(refused.status(), Some(401));
    }
    let api = HubApiClient::builder(&url)
        .bearer_token(" t ")
        .header("x-trace", "api-test")
        .build()
        .unwrap();
    assert_eq!(api.channels().await.unwrap().len(), 2);
    // The person is who the token says, not who the body claims.
    let posted = api
        .post(&post("hello", "general", "mallory"))
        .await
        .unwrap();
    assert_eq!(posted.from, Sender::Person("ann".into()));
}

#[test]
fn a_client_is_made_of_an_http_url_and_headers_that_can_be_sent() {
    for url in ["not a url", "ftp://127.0.0.1/"] {
        let err = HubApiClient::new(url).unwrap_err();
        assert_eq!(err.kind(), HubApiErrorKind::Config, "{url}: {err}");
    }
    let bad_name = HubApiClient::builder("http://127.0.0.1:9")
        .header("no spaces", "x")
        .build()
        .unwrap_err();
    assert_eq!(bad_name.kind(), HubApiErrorKind::Config);
    let bad_token = HubApiClient::builder("http://127.0.0.1:9")
        .bearer_token("line\nbreak")
        .build()
        .unwrap_err();
    assert_eq!(bad_token.kind(), HubApiErrorKind::Config);
    let api = HubApiClient::new("http://127.0.0.1:9/prefix").unwrap();
    assert_eq!(api.base_url(), "http://127.0.0.1:9/prefix/");
}
