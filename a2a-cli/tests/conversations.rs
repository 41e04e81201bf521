//! `a2a serve --config` runs the conversation index: a process agent that
//! calls another through `$A2A_GATEWAY_URL` continues one conversation with
//! it, across a restart; `a2a conversations list|show` shows the pair and
//! the messages of its conversation.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use support::{arg, fails, gateway_file, json, ok, serve};

fn call_twice(url: &str) {
    for text in ["call echo hello", "call echo hello"] {
        let out = ok(&["send", &format!("{url}/agents/caller"), text]);
        assert!(out.contains("COMPLETED"), "{out}");
    }
}

#[test]
fn cli_conversations_list_and_show_the_pair_a_process_agent_continues_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../a2a-gateway/tests/agents/caller.py"
    );
    let file = gateway_file(
        dir.path(),
        &format!(
            "[gateway]\nname = \"team\"\n\n\
             [agents.caller]\nkind = \"process\"\ncommand = [\"python3\", {script:?}]\n\n\
             [agents.echo]\nkind = \"rust\"\nexecutor = \"echo\"\n"
        ),
    );
    let data = dir.path().join("data");
    let args = ["--config", arg(&file), "--data-dir", arg(&data)];
    let gateway = serve(&args);
    call_twice(&gateway.url);
    gateway.stop(Duration::from_secs(20));
    assert!(data.join("conversations.json").is_file());

    // After a restart, the pair goes on in the same conversation.
    let gateway = serve(&args);
    let out = ok(&[
        "send",
        &format!("{}/agents/caller", gateway.url),
        "call echo hello",
    ]);
    assert!(out.contains("COMPLETED"), "{out}");
    gateway.stop(Duration::from_secs(20));

    let listed = ok(&["conversations", "list", "--data-dir", arg(&data)]);
    assert!(listed.contains("caller ↔ echo"), "{listed}");
    assert!(listed.contains("team"), "{listed}");
    let all = json(&["conversations", "list", "--data-dir", arg(&data)]);
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["key"], "team::caller|echo");
    let context = all[0]["contextId"].as_str().unwrap().to_owned();

    // Every call of the pair is in that one conversation.
    let shown = ok(&[
        "conversations",
        "show",
        "echo|caller",
        "--data-dir",
        arg(&data),
    ]);
    assert!(shown.contains(&context), "{shown}");
    let requests = shown
        .lines()
        .filter(|l| l.contains(" request ") && l.contains("→ echo: hello"))
        .count();
    assert_eq!(requests, 3, "{shown}");
    let by_context = ok(&["conversations", "show", &context, "--data-dir", arg(&data)]);
    assert_eq!(by_context, shown);

    let unknown = fails(&[
        "conversations",
        "show",
        "nobody|else",
        "--data-dir",
        arg(&data),
    ]);
    assert!(unknown.contains("no conversation"), "{unknown}");
}

#[test]
fn cli_conversations_list_reads_a_postgres_servers_index_table() {
    let Some(database) = support::Database::create() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../a2a-gateway/tests/agents/caller.py"
    );
    let file = gateway_file(
        dir.path(),
        &format!(
            "[agents.caller]\nkind = \"process\"\ncommand = [\"python3\", {script:?}]\n\n\
             [agents.echo]\nkind = \"rust\"\nexecutor = \"echo\"\n"
        ),
    );
    let data = dir.path().join("data");
    let store = database.url.as_str();
    let args = [
        "--config",
        arg(&file),
        "--data-dir",
        arg(&data),
        "--store",
        store,
    ];
    let gateway = serve(&args);
    call_twice(&gateway.url);
    gateway.stop(Duration::from_secs(20));
    // The index is the store's table, not a file of the data directory.
    assert!(!data.join("conversations.json").exists());

    let all = json(&["conversations", "list", "--store", store]);
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["key"], "default::caller|echo");
    let listed = ok(&["conversations", "list", "--store", store]);
    assert!(listed.contains("caller ↔ echo"), "{listed}");
    // The messages come from the data directory's log.
    let shown = ok(&[
        "conversations",
        "show",
        "caller|echo",
        "--store",
        store,
        "--data-dir",
        arg(&data),
    ]);
    assert!(shown.contains("→ echo: hello"), "{shown}");
}
