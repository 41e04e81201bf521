//! Keys for tests and examples: a fresh Ed25519 pair, as a PEM private key
//! and the JWKS of its public key.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::KeyPair as _;

/// A new Ed25519 key: its PKCS#8 PEM, and a JWKS holding its public key
/// under `kid`.
pub fn ed25519_pair(kid: &str) -> (String, String) {
    let rng = ring::rand::SystemRandom::new();
    let Ok(pkcs8) = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng) else {
        unreachable!("the system's random source works");
    };
    let Ok(pair) = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()) else {
        unreachable!("ring reads the key it made");
    };
    let pem = pem::encode(&pem::Pem::new("PRIVATE KEY", pkcs8.as_ref().to_vec()));
    let jwks = serde_json::json!({ "keys": [{
        "kty": "OKP",
        "crv": "Ed25519",
        "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref()),
        "kid": kid,
        "alg": "EdDSA",
        "use": "sig",
    }]});
    (pem, jwks.to_string())
}

/// A new P-256 key for ES256: its PKCS#8 PEM, and a JWKS holding its
/// public key under `kid`.
pub fn es256_pair(kid: &str) -> (String, String) {
    let rng = ring::rand::SystemRandom::new();
    let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let Ok(pkcs8) = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng) else {
        unreachable!("the system's random source works");
    };
    let Ok(pair) = ring::signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng) else {
        unreachable!("ring reads the key it made");
    };
    // An uncompressed point: 0x04, x, y.
    let point = pair.public_key().as_ref();
    let pem = pem::encode(&pem::Pem::new("PRIVATE KEY", pkcs8.as_ref().to_vec()));
    let jwks = serde_json::json!({ "keys": [{
        "kty": "EC",
        "crv": "P-256",
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        "kid": kid,
        "alg": "ES256",
        "use": "sig",
    }]});
    (pem, jwks.to_string())
}
