//! What people expect of a command line: `a2a config check` and the
//! gateway file's schema, shell completions, a manual page, examples in
//! `--help`, documented exit statuses, and colors only on a terminal.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Instant;

use clap::Parser as _;

use support::{PATIENCE, a2a, arg, command, gateway_file, ok, serve_in_memory, stop_with};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `a2a ARGS`: its exit code and standard error.
fn refused(args: &[&str]) -> (i32, String) {
    let out = a2a(args);
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn has_escapes(bytes: &[u8]) -> bool {
    bytes.contains(&0x1b)
}

/// `a2a` with nothing in the environment against colors but the pipes
/// (`CLICOLOR_FORCE` would force clap's on anything).
fn uncolored_command() -> Command {
    let mut command = command();
    command.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
    command
}

// ===== the gateway file: schema and check =====

#[test]
fn the_schema_in_the_repository_is_the_one_the_code_makes() {
    let made = ok(&["config", "schema"]);
    let kept = std::fs::read_to_string(root().join("schema/gateway.schema.json")).unwrap();
    assert!(
        made == kept,
        "schema/gateway.schema.json is stale: regenerate it with \
         `cargo run -p agent2agent-cli -- config schema > schema/gateway.schema.json`"
    );
    let schema: serde_json::Value = serde_json::from_str(&made).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(
        schema["definitions"]["Agent"]["properties"]["kind"]["enum"],
        serde_json::json!(["rust", "process", "remote", "model"])
    );
}

#[test]
fn the_example_gateway_files_name_the_schema_and_pass_the_check() {
    for (name, hub) in [
        ("gateway.toml", "hub: off"),
        ("hub.toml", "hub: on"),
        ("team.toml", "hub: on"),
    ] {
        let file = root().join("examples/gateway").join(name);
        let text = std::fs::read_to_string(&file).unwrap();
        let first = text.lines().next().unwrap();
        let schema = first.strip_prefix("#:schema ").unwrap();
        assert!(
            file.parent().unwrap().join(schema).is_file(),
            "{name}: {first}"
        );
        let out = ok(&["config", "check", arg(&file)]);
        assert!(
            out.contains(": ok, 3 agent(s)") && out.contains(hub),
            "{out}"
        );
    }
}

#[test]
fn config_check_summarizes_a_sound_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = gateway_file(
        dir.path(),
        "[gateway]\ndefault = \"second\"\n\n[agents.first]\nkind = \"rust\"\nexecutor = \"echo\"\n\n\
         [agents.second]\nkind = \"process\"\ncommand = [\"python3\", \"agent.py\"]\n\n\
         [agents.third]\nkind = \"remote\"\nurl = \"http://127.0.0.1:9\"\n",
    );
    let out = ok(&["config", "check", arg(&file)]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("gateway.toml: ok, 3 agent(s)"), "{out}");
    assert_eq!(
        lines[1..]
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>(),
        [
            "first rust",
            "second process (default)",
            "third remote",
            "hub: off"
        ]
    );
}

#[test]
fn config_check_names_the_line_column_and_key_of_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    // (file, what stderr must say)
    let cases: [(&str, &[&str]); 8] = [
        (
            "[agents.a]\nkind = \"rust\nexecutor = \"echo\"\n",
            &["gateway.toml:2:"],
        ),
        (
            "[agents.a]\nkind = \"rust\"\nexecuter = \"echo\"\n",
            &["gateway.toml:3:1:", "unknown field `executer`"],
        ),
        (
            "[agents.a]\nkind = \"rust\"\nexecutor = \"nope\"\n",
            &[
                "gateway.toml:3:12: agents.a.executor:",
                "no Rust agent named \"nope\"",
            ],
        ),
        (
            "[agents.a]\nkind = \"process\"\n",
            &["agents.a.command:", "needs `command`"],
        ),
        (
            "[agents.a]\nkind = \"remote\"\nurl = \"http://\"\n",
            &["gateway.toml:3:7: agents.a.url:"],
        ),
        (
            "[agents.a]\nkind = \"remote\"\nurl = \"http://x\"\nexecutor = \"echo\"\n",
            &["agents.a.executor:", "for rust agents"],
        ),
        (
            "[agents.a]\nkind = \"rust\"\nexecutor = \"echo\"\n\n[hub]\n",
            &["hub.channels:", "no channels"],
        ),
        (
            "[agents.hub]\nkind = \"rust\"\nexecutor = \"echo\"\n\n[hub.channels.general]\n",
            &["agents.hub.agent:", "rename the agent"],
        ),
    ];
    for (text, says) in cases {
        let file = gateway_file(dir.path(), text);
        let (code, stderr) = refused(&["config", "check", arg(&file)]);
        assert_eq!(code, 1, "{text}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        for part in says {
            assert!(stderr.contains(part), "{text}: {stderr} lacks {part}");
        }
    }
    let (code, stderr) = refused(&["config", "check", arg(&dir.path().join("none.toml"))]);
    assert_eq!(code, 1);
    assert!(stderr.contains("cannot read the file"), "{stderr}");
}

// ===== completions, manual, help =====

#[test]
fn completions_cover_every_subcommand() {
    for (shell, marker) in [
        ("bash", "complete -F _a2a"),
        ("zsh", "#compdef a2a"),
        ("fish", "complete -c a2a"),
    ] {
        let script = ok(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: {script}");
        for subcommand in ["serve", "send", "jobs", "hub", "conversations", "config"] {
            assert!(script.contains(subcommand), "{shell} lacks {subcommand}");
        }
    }
    let (code, stderr) = refused(&["completions", "tcsh"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn the_manual_page_lists_the_subcommands() {
    let page = ok(&["man"]);
    assert!(page.contains(".TH a2a 1"), "{page}");
    for subcommand in ["serve", "send", "jobs", "hub", "config", "completions"] {
        assert!(page.contains(subcommand), "the page lacks {subcommand}");
    }
    assert!(page.contains("Exit status:"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    let pages = dir.path().join("man1");
    ok(&["man", "--out-dir", arg(&pages)]);
    for name in [
        "a2a.1",
        "a2a-serve.1",
        "a2a-config-check.1",
        "a2a-hub-post.1",
    ] {
        let page = std::fs::read_to_string(pages.join(name)).unwrap();
        assert!(page.starts_with(".ie"), "{name}: {page}");
    }
}

/// `line` split into words as a shell would, for the simple lines of the
/// examples: double quotes group, and a `#` comment, a `>` redirection or a
/// `|` pipe ends the command.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            ' ' if !quoted => words.extend(word.take()),
            '#' | '>' | '|' if !quoted && word.is_none() => break,
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

#[test]
fn the_main_subcommands_show_examples_that_parse() {
    for subcommand in [
        "serve",
        "card",
        "send",
        "log",
        "jobs",
        "hub",
        "conversations",
        "config",
        "completions",
        "man",
    ] {
        let help = ok(&[subcommand, "--help"]);
        let (_, examples) = help
            .split_once("Examples:\n")
            .unwrap_or_else(|| panic!("a2a {subcommand} --help has no examples: {help}"));
        let lines: Vec<&str> = examples.lines().take_while(|l| !l.is_empty()).collect();
        assert!(
            (2..=4).contains(&lines.len()),
            "{subcommand}: {} examples",
            lines.len()
        );
        for line in lines {
            let words = shell_words(line.trim());
            assert_eq!(words[..2], ["a2a", subcommand], "{line}");
            if let Err(err) = a2a_cli::Cli::try_parse_from(&words) {
                panic!("the example {line:?} does not parse: {err}");
            }
        }
    }
}

#[test]
fn help_lists_the_exit_statuses_and_they_hold() {
    let help = ok(&["--help"]);
    let (_, statuses) = help.split_once("Exit status:\n").unwrap();
    let codes: Vec<&str> = statuses
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(codes, ["0", "1", "2", "3"], "{help}");

    // 2: a usage error, clap's own.
    assert_eq!(refused(&["frobnicate"]).0, 2);
    assert_eq!(refused(&["send"]).0, 2);
    // 3: nothing listens where the server should be.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let (code, stderr) = refused(&["card", &closed]);
    assert_eq!(code, 3, "{stderr}");
    let (code, stderr) = refused(&["hub", "channels", "--url", &closed]);
    assert_eq!(code, 3, "{stderr}");
    // 1: the server answered, and the answer is an error.
    let server = serve_in_memory(&[]);
    let (code, stderr) = refused(&["get", &server.url, "no-such-task"]);
    assert_eq!(code, 1, "{stderr}");
}

// ===== colors =====

/// A gateway file whose one agent's child says a line on stderr, which the
/// gateway logs (on its own stderr) as soon as it starts. (The banner shows
/// the command, quotes and all: only the log has `hello-from-child`.)
fn talking_gateway(dir: &Path) -> PathBuf {
    gateway_file(
        dir,
        "[agents.talker]\nkind = \"process\"\n\
         command = [\"sh\", \"-c\", \"echo hello-from-\\\"child\\\" >&2; while read -r line; do :; done\"]\n",
    )
}

/// Reads lines of `from` aside until one contains `wanted`; every byte read
/// up to there, or a panic after [`PATIENCE`].
fn read_until(from: impl std::io::Read + Send + 'static, wanted: &'static str) -> Vec<u8> {
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut from = BufReader::new(from);
        loop {
            let mut line = Vec::new();
            match from.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if sender.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let deadline = Instant::now() + PATIENCE;
    let mut all = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines.recv_timeout(left).unwrap_or_else(|_| {
            panic!(
                "no line with {wanted:?} in time: {}",
                String::from_utf8_lossy(&all)
            )
        });
        all.extend_from_slice(&line);
        if String::from_utf8_lossy(&line).contains(wanted) {
            return all;
        }
    }
}

#[test]
fn piped_output_has_no_colors_even_without_no_color() {
    let dir = tempfile::tempdir().unwrap();
    let help = uncolored_command()
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(!has_escapes(&help.stdout) && help.status.success());
    let usage = uncolored_command().arg("frobnicate").output().unwrap();
    assert!(!usage.stderr.is_empty() && !has_escapes(&usage.stderr));

    let server = serve_in_memory(&[]);
    let sent = uncolored_command()
        .args(["send", &server.url, "hello"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sent.stdout).contains("COMPLETED"));
    assert!(!has_escapes(&sent.stdout));

    // `a2a serve`'s log, on a piped stderr.
    let file = talking_gateway(dir.path());
    let mut child = uncolored_command()
        .args(["serve", "--port", "0", "--store", "memory"])
        .args(["--no-conversation-log", "--config", arg(&file)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = read_until(child.stderr.take().unwrap(), "hello-from-child");
    stop_with(&mut child, "-TERM", PATIENCE);
    assert!(
        !has_escapes(&log),
        "{}",
        String::from_utf8_lossy(&log).escape_debug()
    );
}

/// `a2a ARGS` on a terminal (a pseudo-terminal `script` makes), with
/// `NO_COLOR` set to `no_color` or unset: the `script` process, whose
/// standard output is everything the terminal showed.
fn on_terminal(args: &[&str], no_color: Option<&str>) -> Command {
    let mut line = format!("exec '{}'", env!("CARGO_BIN_EXE_a2a"));
    for word in args {
        assert!(!word.contains('\''), "{word}");
        line.push_str(&format!(" '{word}'"));
    }
    let mut script = Command::new("script");
    script.args(["-qefc", &line, "/dev/null"]);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("A2A_") {
            script.env_remove(name);
        }
    }
    // A terminal that has colors (clap asks), and no other say on them.
    script
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE");
    if let Some(value) = no_color {
        script.env("NO_COLOR", value);
    }
    script.stdin(Stdio::null());
    script
}

fn terminal_output(args: &[&str], no_color: Option<&str>) -> Output {
    let out = on_terminal(args, no_color).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

#[test]
fn a_terminal_gets_colors_unless_no_color_is_set() {
    let server = serve_in_memory(&[]);
    for args in [vec!["serve", "--help"], vec!["send", &server.url, "hello"]] {
        assert!(
            has_escapes(&terminal_output(&args, None).stdout),
            "{args:?}: no colors on a terminal"
        );
        // An empty NO_COLOR is no request (no-color.org).
        assert!(has_escapes(&terminal_output(&args, Some("")).stdout));
        let plain = terminal_output(&args, Some("1")).stdout;
        assert!(
            !has_escapes(&plain),
            "{args:?}: {}",
            String::from_utf8_lossy(&plain).escape_debug()
        );
    }

    // `a2a serve`'s log on a terminal: colored, unless NO_COLOR.
    let dir = tempfile::tempdir().unwrap();
    let file = talking_gateway(dir.path());
    for (no_color, colored) in [(None, true), (Some("1"), false)] {
        let mut script = on_terminal(
            &[
                "serve",
                "--port",
                "0",
                "--store",
                "memory",
                "--no-conversation-log",
                "--config",
                arg(&file),
            ],
            no_color,
        )
        .stdout(Stdio::piped())
        // Where `script` says it was terminated.
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        let shown = read_until(script.stdout.take().unwrap(), "hello-from-child");
        // The server is the terminal's session leader: it goes with it.
        stop_with(&mut script, "-TERM", PATIENCE);
        let log: Vec<u8> = shown
            .split(|b| *b == b'\n')
            .filter(|line| String::from_utf8_lossy(line).contains("hello-from-child"))
            .flatten()
            .copied()
            .collect();
        assert_eq!(
            has_escapes(&log),
            colored,
            "NO_COLOR={no_color:?}: {}",
            String::from_utf8_lossy(&log).escape_debug()
        );
    }
}
