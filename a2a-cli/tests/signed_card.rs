//! `a2a serve --card-key` signs the card (every agent's in a gateway), and
//! `a2a card --verify --jwks` checks it against keys the user trusts.

// Panicking on an unexpected result is how these tests assert.
#![allow(clippy::unwrap_used)]

mod support;

use a2a_signing::testing::ed25519_pair;
use support::{a2a, arg, gateway_file, serve_in_memory, serve_refused};

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

    let signed = serve_in_memory(&[
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
    let unsigned = serve_in_memory(&[]);
    let out = a2a(&["card", &unsigned.url, "--verify", "--jwks", trusted]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("the agent card is not signed"), "{stderr}");

    // Every agent of a gateway is signed, with its gateway interfaces.
    let gateway = gateway_file(
        dir.path(),
        "[agents.alpha]\nkind = \"rust\"\nexecutor = \"echo\"\n\n[agents.beta]\nkind = \"rust\"\nexecutor = \"echo\"\n",
    );
    let server = serve_in_memory(&[
        "--config",
        arg(&gateway),
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
    let refusal = serve_refused(&[
        "--store",
        "memory",
        "--card-key",
        arg(&key),
        "--card-key-id",
        "k",
    ]);
    let stderr = refusal.stderr;
    assert!(stderr.contains("not a PEM private key"), "{stderr}");
}
