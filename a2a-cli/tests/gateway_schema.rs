//! The committed JSON Schema of gateway files (`schema/gateway.schema.json`,
//! kept equal to `a2a config schema` by `cli_polish`) against real files:
//! the examples validate, and a `[hub]` table passes the schema exactly when
//! `a2a config check` takes it, down to a misspelled key.
//!
//! Editors validate with a full JSON Schema implementation; this test walks
//! the schema with a small validator of its own that knows each keyword the
//! schema uses and fails on any other, so a keyword added to the schema
//! cannot be skipped here without notice.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn schema() -> Value {
    let text = std::fs::read_to_string(root().join("schema/gateway.schema.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `text` (TOML) as the JSON value the schema describes.
fn as_json(text: &str) -> Value {
    let table: toml::Table = toml::from_str(text).unwrap();
    serde_json::to_value(table).unwrap()
}

/// Where `value` breaks `schema` (empty: it is valid).
fn violations(schema: &Value, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(schema, schema, value, "", &mut found);
    found
}

fn check(root: &Value, schema: &Value, value: &Value, at: &str, found: &mut Vec<String>) {
    let rules = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return found.push(format!("{at}: no value is allowed here")),
        Value::Object(rules) => rules,
        other => panic!("{at}: not a schema: {other}"),
    };
    for (keyword, rule) in rules {
        match keyword.as_str() {
            // Annotations, and `definitions` (reached through `$ref`).
            "$schema" | "title" | "description" | "default" | "format" | "definitions" => {}
            "$ref" => {
                let name = rule
                    .as_str()
                    .unwrap()
                    .strip_prefix("#/definitions/")
                    .unwrap();
                check(root, &root["definitions"][name], value, at, found);
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::Array(types) => types.iter().map(|t| t.as_str().unwrap()).collect(),
                    one => vec![one.as_str().unwrap()],
                };
                if !types.iter().any(|t| has_type(value, t)) {
                    found.push(format!("{at}: {value} is not of type {types:?}"));
                }
            }
            "enum" if !rule.as_array().unwrap().contains(value) => {
                found.push(format!("{at}: {value} is not one of {rule}"));
            }
            "const" if rule != value => found.push(format!("{at}: {value} is not {rule}")),
            "enum" | "const" => {}
            "pattern" => {
                if let Some(text) = value.as_str() {
                    if !regex::Regex::new(rule.as_str().unwrap())
                        .unwrap()
                        .is_match(text)
                    {
                        found.push(format!("{at}: {text:?} does not match {rule}"));
                    }
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                if let (Some(number), Some(bound)) = (value.as_f64(), rule.as_f64()) {
                    let within = match keyword.as_str() {
                        "minimum" => number >= bound,
                        "maximum" => number <= bound,
                        "exclusiveMinimum" => number > bound,
                        _ => number < bound,
                    };
                    if !within {
                        found.push(format!("{at}: {number} breaks {keyword} {bound}"));
                    }
                }
            }
            "minItems" => {
                if let Some(items) = value.as_array() {
                    if items.len() < rule.as_u64().unwrap() as usize {
                        found.push(format!("{at}: fewer than {rule} items"));
                    }
                }
            }
            "items" => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    check(root, rule, item, &format!("{at}[{i}]"), found);
                }
            }
            "minProperties" => {
                if let Some(map) = value.as_object() {
                    if map.len() < rule.as_u64().unwrap() as usize {
                        found.push(format!("{at}: fewer than {rule} keys"));
                    }
                }
            }
            "required" => {
                for key in rule.as_array().unwrap() {
                    let key = key.as_str().unwrap();
                    if value.as_object().is_some_and(|map| !map.contains_key(key)) {
                        found.push(format!("{at}: lacks `{key}`"));
                    }
                }
            }
            "propertyNames" => {
                for key in value.as_object().into_iter().flat_map(|map| map.keys()) {
                    check(
                        root,
                        rule,
                        &Value::from(key.as_str()),
                        &format!("{at}.{key}"),
                        found,
                    );
                }
            }
            "properties" => {
                for (key, item) in value.as_object().into_iter().flatten() {
                    if let Some(property) = rule.get(key) {
                        check(root, property, item, &format!("{at}.{key}"), found);
                    }
                }
            }
            "additionalProperties" => {
                let known = rules.get("properties");
                for (key, item) in value.as_object().into_iter().flatten() {
                    if known.and_then(|known| known.get(key)).is_none() {
                        let at = format!("{at}.{key}");
                        if *rule == Value::Bool(false) {
                            found.push(format!("{at}: unknown key"));
                        } else {
                            check(root, rule, item, &at, found);
                        }
                    }
                }
            }
            "allOf" => {
                for part in rule.as_array().unwrap() {
                    check(root, part, value, at, found);
                }
            }
            "oneOf" => {
                let passing = rule
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|case| {
                        let mut inner = Vec::new();
                        check(root, case, value, at, &mut inner);
                        inner.is_empty()
                    })
                    .count();
                if passing != 1 {
                    found.push(format!("{at}: {passing} cases of oneOf pass, not 1"));
                }
            }
            "if" => {
                let mut inner = Vec::new();
                check(root, rule, value, at, &mut inner);
                let branch = if inner.is_empty() { "then" } else { "else" };
                if let Some(branch) = rules.get(branch) {
                    check(root, branch, value, at, found);
                }
            }
            "then" | "else" => {}
            other => panic!("{at}: the schema uses `{other}`, which this test does not check yet"),
        }
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "null" => value.is_null(),
        other => panic!("unknown type {other}"),
    }
}

/// `a2a config check` on `text`, written to a file in `dir`: whether it
/// passed, and its standard error.
fn config_check(dir: &Path, text: &str) -> (bool, String) {
    let file = dir.join("gateway.toml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["config", "check"])
        .arg(&file)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn the_example_gateway_files_validate() {
    let schema = schema();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples/gateway"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.push(root().join("examples/process/gateway.toml"));
    assert!(files.len() >= 3, "{files:?}");
    for file in files {
        let value = as_json(&std::fs::read_to_string(&file).unwrap());
        let broken = violations(&schema, &value);
        assert!(broken.is_empty(), "{}: {broken:?}", file.display());
    }
}

/// The agents every case below shares.
const AGENTS: &str = "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n\n\
                      [agents.beta]\nkind = \"rust\"\nexecutor = \"echo\"\n\n";

/// A `[hub]` table that sets every key the hub reads.
const HUB: &str = r#"[hub]
default_channel = "general"
thread_channels = ["general", "dev"]
operator_channel = "ops"
accounts = { default = "alpha" }
reuse_hours = 6
observer_records = 50
observer_ttl_hours = 24.5

[hub.channels.general]
description = "Everything."
default_agent = "alpha"
members = ["alpha", "beta"]

[hub.channels.dev]

[hub.guards]
pair_limit = 3
pair_window_secs = 300
thread_burst = 6
thread_burst_window_secs = 60
cool_down_secs = 0
anonymous_threads = 5
anonymous_window_secs = 60
"#;

#[test]
fn a_hub_table_passes_the_schema_exactly_when_config_check_takes_it() {
    let schema = schema();
    let dir = tempfile::tempdir().unwrap();
    for table in ["Hub", "Channel", "Guards"] {
        let table = &schema["definitions"][table];
        assert_eq!(table["additionalProperties"], false, "{table}");
        for key in table["properties"].as_object().unwrap().keys() {
            assert!(
                HUB.contains(&format!("{key} =")) || HUB.contains(&format!("hub.{key}")),
                "HUB lacks {key}"
            );
        }
    }

    // (the `[hub]` table, what `a2a config check` says about it; None: it passes)
    let cases: Vec<(String, Option<&str>)> = vec![
        (HUB.to_owned(), None),
        ("[hub.channels.general]\n".to_owned(), None),
        (
            HUB.replace("default_channel", "defualt_channel"),
            Some("unknown field `defualt_channel`"),
        ),
        (
            HUB.replace("default_agent", "default_agnet"),
            Some("unknown field `default_agnet`"),
        ),
        (
            HUB.replace("pair_limit", "pair_limt"),
            Some("unknown field `pair_limt`"),
        ),
        ("[hub]\n".to_owned(), Some("no channels")),
        (
            "[hub.channels.\"no spaces\"]\n".to_owned(),
            Some("a channel name is"),
        ),
        (
            HUB.replace("observer_records = 50", "observer_records = 0"),
            Some("hub.observer_records"),
        ),
        (
            HUB.replace("reuse_hours = 6", "reuse_hours = 0"),
            Some("hub.reuse_hours"),
        ),
        (
            HUB.replace("members = [\"alpha\", \"beta\"]", "members = \"alpha\""),
            Some("expected a sequence"),
        ),
    ];
    for (hub, refusal) in cases {
        let text = format!("{AGENTS}{hub}");
        let broken = violations(&schema, &as_json(&text));
        let (passed, stderr) = config_check(dir.path(), &text);
        match refusal {
            None => {
                assert!(
                    broken.is_empty(),
                    "{hub}\nthe schema refuses it: {broken:?}"
                );
                assert!(passed, "{hub}\nconfig check refuses it: {stderr}");
            }
            Some(says) => {
                assert!(!broken.is_empty(), "{hub}\nthe schema takes it");
                assert!(!passed, "{hub}\nconfig check takes it");
                assert!(stderr.contains(says), "{hub}\n{stderr} lacks {says:?}");
            }
        }
    }
}
