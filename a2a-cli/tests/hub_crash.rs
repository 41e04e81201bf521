//! The collaboration hub of `a2a serve --config` killed with SIGKILL while
//! people post and collaborate: after a restart on the same data directory,
//! every message and thread the hub acknowledged is there, with its
//! participants.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};

use support::{Server, arg, gateway_file};

const GATEWAY: &str = r#"
[agents.alpha]
kind = "rust"
executor = "echo"

[agents.beta]
kind = "rust"
executor = "echo"

[hub]
default_channel = "general"

[hub.channels.general]
default_agent = "alpha"
"#;

/// The gateway of `file` with its state in `data`; killed outright when
/// dropped.
fn serve(file: &Path, data: &Path) -> Server {
    support::serve(&["--config", arg(file), "--data-dir", arg(data)])
}

/// A POST of `body` to the hub's API; `None` when the server is gone.
fn post(url: &str, path: &str, body: &serde_json::Value) -> Option<(u16, serde_json::Value)> {
    let response = support::http(url, &format!("POST {path}"), &[], Some(&body.to_string()))?;
    let reply = serde_json::from_str(&response.body).unwrap_or_default();
    Some((response.status, reply))
}

fn json(url: &str, path: &str) -> serde_json::Value {
    let response = support::get(url, path);
    assert_eq!(response.status, 200, "{}", response.body);
    serde_json::from_str(&response.body).unwrap()
}

#[derive(Debug)]
enum Acknowledged {
    Message(String),
    Thread(String),
}

#[test]
fn a_hub_killed_mid_flight_loses_no_acknowledged_message_or_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(dir.path(), GATEWAY);
    let data = dir.path().join("data");
    let server = serve(&file, &data);

    let (acknowledged, received) = mpsc::channel::<Acknowledged>();
    let stop = Arc::new(AtomicBool::new(false));
    let people: Vec<_> = (0..4)
        .map(|person| {
            let (url, acknowledged, stop) =
                (server.url.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let body = serde_json::json!({
                        "text": format!("@beta hi {n}"),
                        "channel": "general",
                        "from": format!("p{person}"),
                    });
                    let Some((status, reply)) = post(&url, "/hub/api/messages", &body) else {
                        return;
                    };
                    if status == 201 {
                        let id = reply["message"]["id"].as_str().unwrap().to_owned();
                        if acknowledged.send(Acknowledged::Message(id)).is_err() {
                            return;
                        }
                    }
                    // A new person each time: the pair guard stays out of it.
                    let body = serde_json::json!({
                        "target": "beta",
                        "text": format!("review {n}"),
                        "from": format!("p{person}-{n}"),
                    });
                    let Some((status, reply)) = post(&url, "/hub/api/collaborate", &body) else {
                        return;
                    };
                    if status == 200 {
                        let id = reply["collaboration"]["thread"]
                            .as_str()
                            .unwrap()
                            .to_owned();
                        if acknowledged.send(Acknowledged::Thread(id)).is_err() {
                            return;
                        }
                    }
                }
            })
        })
        .collect();
    drop(acknowledged);
    let mut seen: Vec<Acknowledged> = received.iter().take(60).collect();
    assert_eq!(seen.len(), 60, "the hub stopped acknowledging");
    // Killed outright while people are still posting.
    drop(server);
    stop.store(true, Ordering::Relaxed);
    for person in people {
        person.join().unwrap();
    }
    seen.extend(received.try_iter());

    let server = serve(&file, &data);
    let messages = json(&server.url, "/hub/api/messages?channel=general&limit=1000");
    let stored: HashSet<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    let threads = json(&server.url, "/hub/api/threads");
    let threads: Vec<&serde_json::Value> = threads["threads"].as_array().unwrap().iter().collect();
    let (mut messages_checked, mut threads_checked) = (0, 0);
    for acknowledged in &seen {
        match acknowledged {
            Acknowledged::Message(id) => {
                assert!(
                    stored.contains(id.as_str()),
                    "acknowledged message {id} lost"
                );
                messages_checked += 1;
            }
            Acknowledged::Thread(id) => {
                let thread = threads
                    .iter()
                    .find(|t| t["id"] == id.as_str())
                    .unwrap_or_else(|| panic!("acknowledged thread {id} lost"));
                assert_eq!(
                    thread["participants"],
                    serde_json::json!(["beta"]),
                    "{thread}"
                );
                let path = format!("/hub/api/messages?thread={id}");
                let first = &json(&server.url, &path)["messages"][0];
                assert!(
                    first["text"].as_str().unwrap().starts_with("@beta review"),
                    "{first}"
                );
                threads_checked += 1;
            }
        }
    }
    assert!(messages_checked > 0 && threads_checked > 0, "{seen:?}");
}
