//! A blocking `SendMessage` that outlives the client's timeout names the task
//! it started instead of losing it, on every binding, whether the card
//! declares streaming or not; and a tracked send answers as a plain one does.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use a2a_client::{CallOptions, Client, ClientBuilder, ClientErrorKind};
use a2a_core::{SendMessageResponse, TaskState};
use e2e::RunningSut;
use support::{request, server, wait_for_state};

/// A client for `server` on `binding`, from a card that declares streaming or not.
fn client(server: &RunningSut, binding: &str, streaming: bool, tracked: bool) -> Client {
    let card = support::card(server.addr).with_streaming(streaming);
    a2a_grpc::register(ClientBuilder::new())
        .prefer([binding])
        .track_blocking_sends(tracked)
        .build(card)
        .unwrap()
}

fn within(timeout: Duration) -> CallOptions {
    CallOptions {
        timeout: Some(timeout),
        ..CallOptions::default()
    }
}

/// A send the agent takes 1.5 s over, with 300 ms to wait: it must time out.
async fn send_too_slow(client: &Client) -> a2a_client::ClientError {
    let err = client
        .send_message(
            request("slow 1500"),
            Some(&within(Duration::from_millis(300))),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Timeout, "{err}");
    err
}

async fn a_send_that_outlives_the_timeout_names_its_task(binding: &str) {
    let server = server().await;
    for streaming in [true, false] {
        let client = client(&server, binding, streaming, true);
        let err = send_too_slow(&client).await;
        let id = err
            .task_id()
            .unwrap_or_else(|| panic!("streaming={streaming}: no task id in {err}"))
            .to_owned();
        assert!(err.to_string().contains(&id), "{err}");
        // The task went on without the caller, and is there to be read.
        let done = wait_for_state(&client, &id, TaskState::Completed).await;
        assert_eq!(support::status_text(&done), "done");
    }
    // Untracked, the same call loses the task: what tracking is for.
    let plain = client(&server, binding, true, false);
    let err = send_too_slow(&plain).await;
    assert_eq!(err.task_id(), None);
}

async fn a_tracked_send_answers_as_a_plain_one(binding: &str) {
    let server = server().await;
    let plain = client(&server, binding, true, false);
    for streaming in [true, false] {
        let tracked = client(&server, binding, streaming, true);
        for text in ["echo hello", "stream 3", "input", "message hi", "auth"] {
            let expected = plain.send_message(request(text), None).await.unwrap();
            let got = tracked.send_message(request(text), None).await.unwrap();
            match (expected, got) {
                (SendMessageResponse::Task(expected), SendMessageResponse::Task(got)) => {
                    assert_ne!(expected.id, got.id);
                    assert_eq!(got.status.state, expected.status.state, "{text}");
                    assert_eq!(
                        support::status_text(&got),
                        support::status_text(&expected),
                        "{text}"
                    );
                    let parts = |task: &a2a_core::Task| -> Vec<_> {
                        task.artifacts.iter().map(|a| a.parts.clone()).collect()
                    };
                    assert_eq!(parts(&got), parts(&expected), "{text}");
                    assert_eq!(got.history.len(), expected.history.len(), "{text}");
                }
                (SendMessageResponse::Message(expected), SendMessageResponse::Message(got)) => {
                    assert_eq!(got.parts, expected.parts, "{text}");
                }
                (expected, got) => panic!("{text}: expected {expected:?}, got {got:?}"),
            }
        }
    }
}

per_binding!(
    a_send_that_outlives_the_timeout_names_its_task,
    a_tracked_send_answers_as_a_plain_one,
);

/// A tracked blocking follow-up answers with what the agent did with it, not
/// with the task as it stood (a follow-up's stream opens with that).
#[tokio::test]
async fn a_tracked_follow_up_answers_with_the_new_turn() {
    let server = server().await;
    for binding in support::BINDINGS {
        for streaming in [true, false] {
            let client = client(&server, binding, streaming, true);
            let asked = support::send_task(&client, request("input")).await;
            assert_eq!(asked.status.state, TaskState::InputRequired);
            let mut answer = request("echo done");
            answer.message.task_id.clone_from(&asked.id);
            answer.message.context_id.clone_from(&asked.context_id);
            let done = support::send_task(&client, answer).await;
            assert_eq!(
                done.status.state,
                TaskState::Completed,
                "{binding} streaming={streaming}: {done:?}"
            );
            assert_eq!(support::status_text(&done), "done");
        }
    }
}
