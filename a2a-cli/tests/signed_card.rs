//! `a2a serve --card-key` signs the card (every agent's in a gateway), and
//! `a2a card --verify --jwks` checks it against keys the user trusts.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Output, Stdio};

use a2a_signing::testing::ed25519_pair;

struct Server {
    child: Child,
    url: String,
    _stdout: BufReader<std::process::ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args([
            "serve",
            "--port",
            "0",
            "--store",
            "memory",
            "--no-conversation-log",
        ])
        .args(args)
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

fn a2a(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn a_signed_card_verifies_with_the_trusted_keys_and_not_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let (pem, jwks) = ed25519_pair("card-key-1");
    let (_, other_jwks) = ed25519_pair("card-key-1");
    let key = dir.path().join("key.pem");
    let trusted = dir.path().join("jwks.json");
    let stranger = dir.path().join("other.json");
    std::fs::write(&key, pem).unwrap();
    std::fs::write(&trusted, jwks).unwrap();
    std::fs::write(&stranger, other_jwks).unwrap();
    let key = key.to_str().unwrap();
    let (trusted, stranger) = (trusted.to_str().unwrap(), stranger.to_str().unwrap());

    let signed = serve(&[
        "--card-key",
        key,
        "--card-key-id",
        "card-key-1",
        "--card-key-alg",
        "EdDSA",
    ]);
    let out = a2a(&["card", &signed.url, "--verify", "--jwks", trusted]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Signature: verified with key card-key-1 (EdDSA)"),
        "{stdout}"
    );

    // The same kid, another key: refused.
    let out = a2a(&["card", &signed.url, "--verify", "--jwks", stranger]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("is not trusted"), "{stderr}");
    assert!(
        stderr.contains("the signature does not match the card"),
        "{stderr}"
    );

    // A server that signs nothing.
    let unsigned = serve(&[]);
    let out = a2a(&["card", &unsigned.url, "--verify", "--jwks", trusted]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the agent card is not signed"), "{stderr}");

    // Every agent of a gateway is signed, with its gateway interfaces.
    let gateway = dir.path().join("gateway.toml");
    std::fs::write(
        &gateway,
        "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n\n[agents.beta]\nkind = \"rust\"\nexecutor = \"echo\"\n",
    )
    .unwrap();
    let server = serve(&[
        "--config",
        gateway.to_str().unwrap(),
        "--card-key",
        key,
        "--card-key-id",
        "card-key-1",
        "--card-key-alg",
        "EdDSA",
    ]);
    for agent in ["alpha", "beta"] {
        let url = format!("{}/agents/{agent}", server.url);
        let out = a2a(&["card", &url, "--verify", "--jwks", trusted]);
        assert!(
            out.status.success(),
            "{agent}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn serve_refuses_an_unusable_card_key_before_it_binds() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key.pem");
    std::fs::write(&key, "not a key").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--port", "0", "--store", "memory", "--card-key"])
        .arg(&key)
        .args(["--card-key-id", "k"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("not a PEM private key"), "{stderr}");
}
