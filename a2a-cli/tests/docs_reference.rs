//! Keeps the book's configuration reference (`docs/src/configuration.md`)
//! true to the code: every `a2a serve` flag is described there and every flag
//! described there exists, and its complete `gateway.toml` is accepted by the
//! gateway's and the hub's readers (which refuse unknown keys), sets every key
//! those readers know, and each key has a row in the reference's tables.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use a2a_gateway::config::{AgentConfig, AgentSource, GatewayConfig};
use a2a_hub::HubConfig;

/// The environment variable the complete file's remote agent reads its
/// token from. Set only in the child process the test runs itself in, so
/// the test changes no environment of its own.
const TOKEN_VAR: &str = "REVIEWER_TOKEN";
/// Set in that child: it is the one that reads the file.
const CHILD_VAR: &str = "A2A_DOCS_REFERENCE_CHILD";

fn repo_file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn read(path: &str) -> String {
    let file = repo_file(path);
    std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("{}: {err}", file.display()))
}

fn reference() -> String {
    read("docs/src/configuration.md")
}

/// The lines of `page` from the heading `start` up to the next heading of
/// the same or a higher level.
fn section<'a>(page: &'a str, start: &str) -> &'a str {
    let from = page
        .find(start)
        .unwrap_or_else(|| panic!("the reference has no {start:?} section"));
    let level = start.chars().take_while(|c| *c == '#').count();
    let rest = &page[from + start.len()..];
    let end = rest
        .match_indices('\n')
        .map(|(at, _)| at + 1)
        .find(|&at| {
            let hashes = rest[at..].chars().take_while(|c| *c == '#').count();
            (1..=level).contains(&hashes) && rest[at + hashes..].starts_with(' ')
        })
        .unwrap_or(rest.len());
    &rest[..end]
}

/// The first cell of each table row of `text` that is one code span:
/// "| `--port PORT` | ..." gives "--port PORT".
fn first_cells(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(cell, _)| cell.to_owned())
        .collect()
}

/// The long flags `a2a serve --help` lists, `--help` aside.
fn serve_flags() -> BTreeSet<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success(), "a2a serve --help failed: {out:?}");
    let help = String::from_utf8(out.stdout).unwrap();
    help.lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .flat_map(|line| line.split([' ', ',', '=']))
        .filter(|word| word.starts_with("--"))
        .map(str::to_owned)
        .filter(|flag| flag != "--help")
        .collect()
}

#[test]
fn every_serve_flag_is_in_the_reference_and_only_those() {
    let flags = serve_flags();
    assert!(
        flags.len() >= 20 && flags.contains("--port") && flags.contains("--config"),
        "read too few flags from the help: {flags:?}"
    );
    let page = reference();
    let table = section(&page, "## `a2a serve`");
    let described: BTreeSet<String> = first_cells(table)
        .iter()
        .filter_map(|cell| cell.split_whitespace().next())
        .filter(|flag| flag.starts_with("--"))
        .map(str::to_owned)
        .collect();
    // `-p`, `--port PORT`: the short form's row names the long one second.
    let short_rows: BTreeSet<String> = table
        .lines()
        .filter_map(|line| line.strip_prefix("| `-p`, `"))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|flag| flag.trim_end_matches('`').to_owned())
        .collect();
    let described: BTreeSet<String> = described.union(&short_rows).cloned().collect();
    let missing: Vec<_> = flags.difference(&described).collect();
    assert!(
        missing.is_empty(),
        "flags of `a2a serve` missing from docs/src/configuration.md: {missing:?}"
    );
    let stale: Vec<_> = described.difference(&flags).collect();
    assert!(
        stale.is_empty(),
        "flags in docs/src/configuration.md that `a2a serve` does not have: {stale:?}"
    );
}

/// The structs named `Raw*` in a reader's source, each with its serde field
/// names: the keys its file format has, table by table.
fn raw_structs(source_path: &str) -> Vec<(String, BTreeSet<String>)> {
    raw_structs_at_least(source_path, 3)
}

/// [`raw_structs`], of a reader with at least `least` of them (the
/// `[mcp.NAME]` reader has one, `pub(crate)` for the file's reader).
fn raw_structs_at_least(source_path: &str, least: usize) -> Vec<(String, BTreeSet<String>)> {
    let source = read(source_path).replace("\npub(crate) struct Raw", "\nstruct Raw");
    let mut structs = Vec::new();
    let mut rest = source.as_str();
    while let Some(at) = rest.find("\nstruct Raw") {
        rest = &rest[at + "\nstruct ".len()..];
        let name = rest.split(|c: char| !c.is_alphanumeric()).next().unwrap();
        let body_start = rest.find('{').unwrap() + 1;
        let body_end = body_start + rest[body_start..].find("\n}").unwrap();
        let body = &rest[body_start..body_end];
        let mut keys = BTreeSet::new();
        let mut renamed = None;
        for line in body.lines().map(str::trim) {
            if let Some(attr) = line.strip_prefix("#[serde(") {
                if let Some((_, name)) = attr.split_once("rename = \"") {
                    renamed = name.split('"').next().map(str::to_owned);
                }
                continue;
            }
            if line.starts_with("//") || line.starts_with('#') {
                continue;
            }
            let Some((field, _)) = line.split_once(':') else {
                continue;
            };
            let field = field.trim_start_matches("pub ").trim();
            let key = renamed.take().unwrap_or_else(|| field.to_owned());
            // `_rest`: what another reader checks (the hub's view of the file).
            if !key.starts_with('_') && key.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                keys.insert(key);
            }
        }
        structs.push((name.to_owned(), keys));
        rest = &rest[body_end..];
    }
    assert!(
        structs.len() >= least,
        "found {} `struct Raw*` in {source_path}: the reader's file types moved, update this test",
        structs.len()
    );
    structs
}

/// The complete example file of the reference.
fn complete_file(page: &str) -> &str {
    let marker = "<!-- docs_reference: complete gateway.toml -->\n```toml\n";
    let start = page
        .find(marker)
        .expect("the reference has no complete gateway.toml")
        + marker.len();
    let len = page[start..].find("```").unwrap();
    &page[start..start + len]
}

#[test]
fn every_gateway_key_is_in_the_reference_and_in_its_complete_file() {
    let page = reference();
    let file = complete_file(&page);
    let tables = section(&page, "## `gateway.toml`");
    // The tables, not the complete file after them.
    let tables = &tables[..tables.find("<!-- docs_reference").unwrap_or(tables.len())];
    let rows: BTreeSet<String> = first_cells(tables).into_iter().collect();
    let mut structs = raw_structs("a2a-gateway/src/config.rs");
    structs.extend(raw_structs("a2a-hub/src/config.rs"));
    structs.extend(raw_structs_at_least("a2a-gateway/src/mcp.rs", 1));
    let keys: BTreeSet<String> = structs.iter().flat_map(|(_, k)| k.clone()).collect();
    assert!(
        keys.contains("task_timeout_secs") && keys.contains("cool_down_secs"),
        "read too few keys: {keys:?}"
    );
    // A key has a row of its own, or holds a table that has a heading
    // (`[hub.guards]`); a skill's keys are in the row of `skills`.
    let skills_row = tables
        .lines()
        .find(|line| line.starts_with("| `skills` |"))
        .expect("the reference has a row for `skills`");
    let described = |table: &str, key: &str| match table {
        "RawSkill" => skills_row.contains(&format!("`{key}`")),
        _ => {
            rows.contains(key)
                || tables.contains(&format!("[{key}]"))
                || tables.contains(&format!("[{key}."))
                || tables.contains(&format!(".{key}]"))
                || tables.contains(&format!(".{key}."))
        }
    };
    let undescribed: Vec<_> = structs
        .iter()
        .flat_map(|(table, keys)| keys.iter().map(move |key| (table, key)))
        .filter(|(table, key)| !described(table, key))
        .map(|(_, key)| key)
        .collect();
    assert!(
        undescribed.is_empty(),
        "gateway.toml keys with no row in docs/src/configuration.md: {undescribed:?}"
    );
    let unknown: Vec<_> = rows.iter().filter(|r| !keys.contains(*r)).collect();
    assert!(
        unknown.is_empty(),
        "rows of docs/src/configuration.md naming no gateway.toml key: {unknown:?}"
    );
    let set_in_file = |key: &str| {
        file.contains(&format!("\n{key} = "))
            || file.contains(&format!("{{ {key} = "))
            || file.contains(&format!(", {key} = "))
            || file.contains(&format!("[{key}]"))
            || file.contains(&format!("[{key}."))
            || file.contains(&format!(".{key}]"))
            || file.contains(&format!(".{key}."))
    };
    let unset: Vec<_> = keys.iter().filter(|k| !set_in_file(k)).collect();
    assert!(
        unset.is_empty(),
        "keys the complete gateway.toml of docs/src/configuration.md does not set: {unset:?}"
    );
}

#[test]
fn the_complete_gateway_file_is_read_with_every_key_set() {
    if std::env::var_os(CHILD_VAR).is_none() {
        // The remote agent's `bearer_token_env` is read at load time: run
        // this test again in a child that has the variable.
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "the_complete_gateway_file_is_read_with_every_key_set",
                "--nocapture",
            ])
            .env(TOKEN_VAR, "t0ken")
            .env(CHILD_VAR, "1")
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && report.contains("1 passed"),
            "{report}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let page = reference();
    let text = complete_file(&page);
    let path = Path::new("/etc/a2a/gateway.toml");
    let config = GatewayConfig::parse(path, text).unwrap_or_else(|err| panic!("{err}"));
    check_gateway(&config, path);
    let names: Vec<String> = config.agents.iter().map(|a| a.name.clone()).collect();
    let hub = HubConfig::from_gateway_file(path, text, &names)
        .unwrap_or_else(|err| panic!("{err}"))
        .expect("the complete file has a [hub] table");
    check_hub(&hub);
}

/// Every field of the gateway's configuration is set, to what the file says
/// and not to its default. The patterns name every field (no `..` where the
/// fields are public), so a new field fails to compile here until it is in
/// the file, the reference and this check.
fn check_gateway(config: &GatewayConfig, path: &Path) {
    let GatewayConfig {
        path: read_from,
        default,
        name,
        agents,
        mcp,
    } = config;
    assert_eq!(read_from, path);
    assert_eq!(default.as_deref(), Some("planner"));
    assert_eq!(name.as_deref(), Some("team-a"));
    assert_eq!(agents.len(), 3);
    for agent in agents {
        check_agent(agent);
    }
    let [files, search] = mcp.as_slice() else {
        panic!("two [mcp.NAME] tables: {mcp:?}")
    };
    assert_eq!(files.name, "files");
    let files = &files.config;
    assert_eq!(files.command, ["mcp-files", "--root", "docs"]);
    assert_eq!(files.env.get("LOG_LEVEL").map(String::as_str), Some("warn"));
    assert_eq!(files.pass_env, ["HTTPS_PROXY"]);
    assert_eq!(
        files.working_dir.as_deref(),
        Some(Path::new("/etc/a2a/tools"))
    );
    assert_eq!(files.timeout_secs, Some(60));
    assert_eq!(files.startup_timeout_secs, Some(10));
    assert_eq!(search.name, "search");
    let search = &search.config;
    assert_eq!(search.url.as_deref(), Some("https://search.example/mcp"));
    assert_eq!(search.bearer_token_env.as_deref(), Some(TOKEN_VAR));
    assert_eq!(search.bearer_token.as_deref(), Some("t0ken"));
}

fn check_agent(agent: &AgentConfig) {
    let dir = Path::new("/etc/a2a");
    match &agent.source {
        AgentSource::Rust { executor } => {
            assert_eq!(executor, "echo");
            assert_eq!(agent.title.as_deref(), Some("Planner"));
            assert_eq!(agent.description.as_deref(), Some("Plans the work."));
            let [skill] = agent.skills.as_slice() else {
                panic!("one skill: {:?}", agent.skills);
            };
            assert_eq!(
                (skill.id.as_str(), skill.name.as_str(), skill.tags.len()),
                ("plan", "Plan", 1)
            );
            assert!(!skill.description.is_empty() && skill.examples.len() == 1);
        }
        AgentSource::Process {
            command,
            env,
            pass_env,
            task_timeout,
            working_dir,
            resume_on_crash,
        } => {
            assert_eq!(command, &["python3", "agents/coder.py"]);
            assert_eq!(env.get("CODER_MODEL").map(String::as_str), Some("small"));
            assert_eq!(pass_env, &["OPENAI_API_KEY"]);
            assert_eq!(*task_timeout, Some(Duration::from_secs(900)));
            assert_eq!(working_dir, &dir.join("agents"));
            assert!(*resume_on_crash);
        }
        AgentSource::Remote {
            url,
            bearer_token,
            allowed_origins,
            allowed_networks,
        } => {
            assert_eq!(url, "https://reviewer.example");
            assert_eq!(bearer_token.as_deref(), Some("t0ken"));
            assert_eq!(allowed_origins, &["https://rpc.reviewer.example"]);
            assert_eq!(allowed_networks, &["10.0.0.0/8"]);
        }
    }
}

/// Every key of the `[hub]` table is set, and not to its default.
fn check_hub(hub: &HubConfig) {
    let defaults = HubConfig::default();
    assert_eq!(hub.default_channel.as_deref(), Some("general"));
    assert_eq!(
        hub.thread_channels.as_deref(),
        Some(&["general".to_owned(), "dev".to_owned()][..])
    );
    assert_eq!(hub.operator_channel.as_deref(), Some("ops"));
    assert_eq!(
        hub.accounts.get("default").map(String::as_str),
        Some("planner")
    );
    assert_eq!(hub.reuse_window, Duration::from_secs(12 * 3600));
    assert_eq!(hub.observers.max_per_agent, 100);
    assert_eq!(hub.observers.ttl, Duration::from_secs(48 * 3600));
    let general = hub.channel("general").unwrap();
    assert_eq!(general.description, "Everything.");
    assert_eq!(general.default_agent.as_deref(), Some("planner"));
    assert_eq!(general.members.as_ref().map(Vec::len), Some(3));
    let guards = &hub.guards;
    let fallback = &defaults.guards;
    assert_eq!(guards.pair_limit, 4);
    assert_eq!(guards.pair_window, Duration::from_secs(600));
    assert_eq!(guards.thread_burst, 8);
    assert_eq!(guards.burst_window, Duration::from_secs(120));
    assert_eq!(guards.cool_down, None);
    assert_eq!(guards.anonymous_threads, 2);
    assert_eq!(guards.anonymous_window, Duration::from_secs(30));
    assert_ne!(guards.pair_limit, fallback.pair_limit);
    assert_ne!(guards.cool_down, fallback.cool_down);
}
