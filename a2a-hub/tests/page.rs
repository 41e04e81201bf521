//! The hub's page in a real browser: headless Chromium, driven by
//! `tests/browser/page.mjs` (puppeteer-core), against a served hub of
//! scripted agents. Needs `node`, the script's `node_modules`
//! (`npm ci` in `a2a-hub/tests/browser`; `scripts/test.sh` does it) and
//! Chromium (`$CHROMIUM`, or `chromium` / `chromium-browser` on the PATH).
//! Without them the test is skipped with a note, and fails under `CI=true`.

#![allow(clippy::unwrap_used)] // the helpers too, not only the tests

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use a2a_hub::{ChannelConfig, Collaborate, HubConfig, Sender};
use a2a_server::auth::{BearerAuth, Principal};
use serde_json::{Value, json};
use support::{team, world, world_built};

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Chromium, node and the script's modules; or why the test cannot run.
fn browser() -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser");
    let chromium = match std::env::var_os("CHROMIUM") {
        Some(path) => PathBuf::from(path),
        None => on_path("chromium")
            .or_else(|| on_path("chromium-browser"))
            .ok_or("no Chromium: set CHROMIUM, or install Debian's `chromium`")?,
    };
    let node = on_path("node").ok_or("no node on the PATH")?;
    if !dir.join("node_modules/puppeteer-core").is_dir() {
        return Err(format!(
            "no puppeteer-core: run `npm ci` in {}",
            dir.display()
        ));
    }
    Ok((chromium, node, dir))
}

/// What `page.mjs` saw, run with `args` against `url`; `None` (after a
/// note) when the browser is missing outside CI.
async fn run_page(url: String, args: &[&str]) -> Option<Value> {
    let (chromium, node, dir) = match browser() {
        Ok(found) => found,
        Err(missing) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("the browser test cannot run under CI: {missing}")
        }
        Err(missing) => {
            eprintln!("skipped the browser test: {missing} (scripts/test.sh installs it)");
            return None;
        }
    };
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let run = tokio::task::spawn_blocking(move || {
        Command::new(node)
            .arg(dir.join("page.mjs"))
            .arg(&url)
            .args(args)
            .env("CHROMIUM", chromium)
            .current_dir(dir)
            .output()
    });
    let output = run.await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "page.mjs failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|err| panic!("page.mjs printed no result ({err}):\n{stdout}\n{stderr}"));
    assert_eq!(seen["status"], 200);
    assert_eq!(seen["notReloaded"], true, "the page reloaded: {seen}");
    assert_eq!(seen["errors"], json!([]), "{seen}");
    Some(seen)
}

/// `(from, text)` of the messages `page.mjs` saw, the hub's notices left out.
fn texts(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["from"].as_str().unwrap().to_owned(),
                m["text"].as_str().unwrap().to_owned(),
            )
        })
        .filter(|(from, _)| from != "hub")
        .collect()
}

fn config() -> HubConfig {
    HubConfig {
        channels: vec![ChannelConfig::new("general"), ChannelConfig::new("ops")],
        default_channel: Some("general".into()),
        ..HubConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_posts_a_mention_and_shows_the_reply_live_and_posts_into_a_clicked_thread() {
    let world = world(config(), team()).await;
    // A thread of the operator with beta in general, for the page to open.
    let opened = world
        .hub
        .collaborate(
            Sender::Person("operator".into()),
            Collaborate::new("beta", "review the release notes").in_channel("general"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    let url = world.serve().await;
    let Some(seen) = run_page(url, &[]).await else {
        return;
    };

    assert_eq!(seen["name"], "operator");
    // alpha's answer came in without a reload, after the mention (the
    // hub's notice of the thread, shown as the page loaded, left out).
    assert_eq!(
        texts(&seen["channel"]),
        [
            (
                "operator".to_owned(),
                "@alpha hello from the browser".to_owned()
            ),
            (
                "alpha".to_owned(),
                "alpha: alpha hello from the browser".to_owned()
            ),
        ]
    );
    assert_eq!(seen["mentionMarked"], "@alpha");
    // Markup typed by a person stays text.
    assert_eq!(seen["markupElements"], 0);
    assert_eq!(seen["injected"], false);
    // The thread, its participants, and the message posted into it.
    assert_eq!(seen["thread"], opened.thread.as_str());
    let participants = seen["participants"].as_str().unwrap();
    assert!(participants.contains("beta"), "{participants}");
    let in_thread = seen["threadMessages"].as_array().unwrap();
    assert!(
        in_thread
            .iter()
            .all(|m| m["thread"] == opened.thread.as_str()),
        "{in_thread:?}"
    );
    assert_eq!(
        in_thread.last().unwrap()["text"],
        "beta: one more thing to check"
    );

    // What the page did is what the hub holds.
    let mut general = world.channel_messages("general").await;
    general.retain(|m| m.from != Sender::Hub);
    assert_eq!(general[0].from, Sender::Person("operator".into()));
    assert_eq!(general[0].handlers, ["alpha"]);
    assert_eq!(general[1].from, Sender::Agent("alpha".into()));
    let thread = world.thread_messages(&opened.thread).await;
    let asked = thread
        .iter()
        .find(|m| m.text == "one more thing to check")
        .unwrap();
    assert_eq!(asked.from, Sender::Person("operator".into()));
    assert_eq!(asked.handlers, ["beta"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_asks_for_the_token_once_resumes_a_paused_thread_and_posts_as_the_token_holder() {
    let mut config = config();
    // A thread pauses at its second message in a minute, until a person
    // resumes it.
    config.guards.thread_burst = 1;
    config.guards.cool_down = None;
    let world = world_built(config, team(), None, HashMap::new(), |gateway| {
        gateway.authentication(BearerAuth::new().token("t", Principal::new("ann")))
    })
    .await;
    let opened = world
        .hub
        .collaborate(
            Sender::Person("ann".into()),
            Collaborate::new("beta", "review the release notes").in_channel("general"),
        )
        .await
        .unwrap();
    world.hub.wait_idle().await;
    assert!(world.hub.thread(&opened.thread).unwrap().paused);
    let url = world.serve().await;
    let Some(seen) = run_page(url, &["--token", "t"]).await else {
        return;
    };

    assert_eq!(seen["tokenFormAfter"], false, "{seen}");
    assert_eq!(seen["tokenFormAfterReload"], false, "{seen}");
    assert_eq!(seen["pausedMarked"], "paused");
    assert_eq!(seen["resumedThread"], opened.thread.as_str());
    assert!(!world.hub.thread(&opened.thread).unwrap().paused);
    // Whatever the name field says, the token says who writes.
    assert_eq!(
        texts(&seen["channel"]),
        [
            ("ann".to_owned(), "@alpha hello with a token".to_owned()),
            (
                "alpha".to_owned(),
                "alpha: alpha hello with a token".to_owned()
            ),
        ]
    );
    let mut general = world.channel_messages("general").await;
    general.retain(|m| m.from != Sender::Hub);
    assert_eq!(general[0].from, Sender::Person("ann".into()));
    assert_eq!(general[0].handlers, ["alpha"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_marks_a_delivery_the_hub_resumed_after_a_restart_with_its_attempt() {
    use std::sync::Arc;
    use std::time::Duration;

    use a2a_hub::{AgentLink, DeliveryState, Hub};
    use support::{Script, World, world_with};

    let dir = tempfile::tempdir().unwrap();
    // beta takes the work and keeps at it until the test ends.
    let working: Script = Arc::new(|_turn| Box::pin(std::future::pending()));
    let agents = vec![("alpha", team().remove(0).1), ("beta", working)];
    let first = world_with(config(), agents, Some(dir.path()), HashMap::new()).await;
    let opened = first
        .hub
        .collaborate(
            Sender::Person("operator".into()),
            Collaborate::new("beta", "review the release notes").in_channel("general"),
        )
        .await
        .unwrap();
    let asked = first.thread_messages(&opened.thread).await[0].id.clone();
    let state_of = |world: &World| {
        let hub = world.hub.clone();
        let (thread, asked) = (opened.thread.clone(), asked.clone());
        async move {
            let messages = hub.messages(None, Some(&thread), 10).await.unwrap();
            let message = messages.into_iter().find(|m| m.id == asked).unwrap();
            message.deliveries.first().map(|d| (d.state, d.attempt))
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while state_of(&first).await != Some((DeliveryState::Working, 1)) {
        assert!(tokio::time::Instant::now() < deadline, "beta never took it");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The hub stops (beta works on); a new hub on the same record follows
    // beta's task again.
    first.hub.shutdown(Duration::from_secs(5)).await;
    let hub = Hub::builder(config()).data_dir(dir.path()).open().unwrap();
    let gateway = a2a_gateway::Gateway::builder()
        .agent(hub.agent_definition())
        .build("http://127.0.0.1:1")
        .unwrap();
    // Through the first gateway, as the hub (the task is the hub's).
    let beta = first.gateway.peers("hub").unwrap().client("beta").unwrap();
    let links = HashMap::from([("beta".to_owned(), AgentLink::client("gateway 1", beta))]);
    hub.connect(&gateway, links).unwrap();
    let second = World {
        hub,
        gateway,
        calls: first.calls.clone(),
    };
    let resumed = Some((DeliveryState::Resumed, 2));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while state_of(&second).await != resumed {
        let now = state_of(&second).await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "not resumed: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let url = second.serve().await;
    let Some(seen) = run_page(url, &["--resumed"]).await else {
        return;
    };
    assert_eq!(seen["thread"], opened.thread.as_str());
    assert_eq!(seen["resumedMark"]["text"], "beta: resumed (attempt 2)");
    assert_eq!(seen["resumedMark"]["attempt"], "2");
    assert_eq!(seen["resumedMark"]["from"], "operator");
}
