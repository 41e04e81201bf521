//! The collaboration hub of `a2a serve --config` killed with SIGKILL while
//! people post and collaborate: after a restart on the same data directory,
//! every message and thread the hub acknowledged is there, with its
//! participants.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

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

struct Server {
    child: Child,
    url: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGKILL: nothing gets to finish.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(file: &Path, data: &Path) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--port", "0", "--config"])
        .arg(file)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut banner = String::new();
    while !banner.contains("Press Ctrl-C") {
        assert!(stdout.read_line(&mut banner).unwrap() > 0, "{banner}");
    }
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    Server {
        child,
        url,
        _stdout: stdout,
    }
}

/// Status and body of one HTTP/1.1 request; `None` when the server is gone.
fn call(url: &str, method: &str, path: &str, body: Option<&str>) -> Option<(u16, String)> {
    let authority = url.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n")?.1.to_owned();
    Some((status, body))
}

fn json(url: &str, path: &str) -> serde_json::Value {
    let (status, body) = call(url, "GET", path, None).unwrap();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[derive(Debug)]
enum Acknowledged {
    Message(String),
    Thread(String),
}

#[test]
fn a_hub_killed_mid_flight_loses_no_acknowledged_message_or_thread() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("gateway.toml");
    std::fs::write(&file, GATEWAY).unwrap();
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
                    let Some((status, reply)) =
                        call(&url, "POST", "/hub/api/messages", Some(&body.to_string()))
                    else {
                        return;
                    };
                    if status == 201 {
                        let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
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
                    let Some((status, reply)) = call(
                        &url,
                        "POST",
                        "/hub/api/collaborate",
                        Some(&body.to_string()),
                    ) else {
                        return;
                    };
                    if status == 200 {
                        let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
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
