//! Signed cards: ours verify, the Python SDK's (a2a-sdk 1.3.0, in
//! `tests/data`) verify byte for byte, and anything altered, unsigned or
//! signed by a stranger does not.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use a2a_core::AgentCard;
use a2a_signing::testing::{ed25519_pair, es256_pair};
use a2a_signing::{CardSigner, SignatureError, SigningAlgorithm, TrustedKeys, canonical_payload};

const PYTHON_CARD: &str = include_str!("data/python-signed-card.json");
const PYTHON_JWKS: &str = include_str!("data/python-jwks.json");
const PYTHON_PAYLOAD: &str = include_str!("data/python-canonical-payload.txt");

fn python_card() -> AgentCard {
    serde_json::from_str(PYTHON_CARD).unwrap()
}

#[test]
fn the_python_sdks_canonical_bytes_are_ours() {
    assert_eq!(canonical_payload(&python_card()).unwrap(), PYTHON_PAYLOAD);
}

#[test]
fn a_card_signed_by_the_python_sdk_verifies_with_each_of_its_algorithms() {
    let trusted = TrustedKeys::from_jwks_json(PYTHON_JWKS).unwrap();
    let card = python_card();
    assert_eq!(card.signatures.len(), 3);
    for (kid, alg) in [
        ("es-key-1", "ES256"),
        ("ed-key-1", "EdDSA"),
        ("rs-key-1", "RS256"),
    ] {
        let mut one = card.clone();
        one.signatures.retain(|s| {
            let header = base64_json(&s.protected);
            header["kid"] == kid
        });
        let verified = trusted.verify(&one).unwrap();
        assert_eq!(
            (verified.kid.as_str(), verified.algorithm.as_str()),
            (kid, alg)
        );
    }
}

fn base64_json(text: &str) -> serde_json::Value {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn an_altered_card_does_not_verify() {
    let trusted = TrustedKeys::from_jwks_json(PYTHON_JWKS).unwrap();
    let mut card = python_card();
    card.description = "tampered".into();
    let err = trusted.verify(&card).unwrap_err();
    let SignatureError::Invalid(reasons) = &err else {
        panic!("{err}");
    };
    assert_eq!(reasons.len(), 3);
    assert!(
        reasons[0].ends_with("the signature does not match the card"),
        "{err}"
    );
    // An explicit `false` where the signer had none is a change too.
    let mut card = python_card();
    card.capabilities.extended_agent_card = Some(false);
    assert!(trusted.verify(&card).is_err());
}

#[test]
fn our_signatures_verify_and_strangers_do_not() {
    for (algorithm, (pem, jwks)) in [
        (SigningAlgorithm::EdDsa, ed25519_pair("ours")),
        (SigningAlgorithm::Es256, es256_pair("ours")),
    ] {
        let signer = CardSigner::from_pem(&pem, algorithm, "ours").unwrap();
        let mut card = AgentCard::new("Echo", "Repeats what you say")
            .with_interface("http://127.0.0.1:8080/", "JSONRPC");
        signer.sign(&mut card).unwrap();
        let trusted = TrustedKeys::from_jwks_json(&jwks).unwrap();
        assert_eq!(trusted.verify(&card).unwrap().algorithm, algorithm.name());
        // Through the wire and back.
        let wire: AgentCard = serde_json::from_str(&serde_json::to_string(&card).unwrap()).unwrap();
        assert!(trusted.verify(&wire).is_ok());
        // A key nobody trusts.
        let stranger = TrustedKeys::from_jwks_json(PYTHON_JWKS).unwrap();
        let err = stranger.verify(&card).unwrap_err();
        assert_eq!(
            err,
            SignatureError::Invalid(vec!["ours: not a trusted key".into()])
        );
    }
}

#[test]
fn an_unsigned_card_and_a_confused_algorithm_are_refused() {
    let trusted = TrustedKeys::from_jwks_json(PYTHON_JWKS).unwrap();
    let unsigned = AgentCard::new("Echo", "Repeats what you say");
    assert_eq!(
        trusted.verify(&unsigned).unwrap_err(),
        SignatureError::Unsigned
    );
    // HS256 with the EC public key as the secret: never.
    use base64::Engine as _;
    let mut card = python_card();
    for signature in &mut card.signatures {
        signature.protected = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"HS256","kid":"es-key-1","typ":"JOSE"}"#);
    }
    let err = trusted.verify(&card).unwrap_err();
    assert!(
        err.to_string()
            .contains("HS256 is not an algorithm of this key"),
        "{err}"
    );
}

#[test]
fn a_key_of_the_wrong_kind_is_refused_when_the_signer_is_made() {
    let (ed, _) = ed25519_pair("k");
    let err = CardSigner::from_pem(&ed, SigningAlgorithm::Es256, "k").unwrap_err();
    assert_eq!(
        err,
        SignatureError::Key("the key is not a ES256 key".into())
    );
    let err = CardSigner::from_pem("nonsense", SigningAlgorithm::EdDsa, "k").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("unusable key: not a PEM private key"),
        "{err}"
    );
}
