//! A client that asks for signed cards makes clients only from cards signed
//! by keys it trusts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use a2a_client::{ClientBuilder, ClientErrorKind, TrustedKeys};
use a2a_core::{AgentCard, binding};
use a2a_signing::testing::ed25519_pair;
use a2a_signing::{CardSigner, SigningAlgorithm};

fn card() -> AgentCard {
    AgentCard::new("Echo", "Repeats what you say")
        .with_interface("http://127.0.0.1:1/", binding::JSONRPC)
}

#[test]
fn only_cards_signed_by_a_trusted_key_make_clients() {
    let (pem, jwks) = ed25519_pair("k1");
    let signer = CardSigner::from_pem(&pem, SigningAlgorithm::EdDsa, "k1").unwrap();
    let trusted = TrustedKeys::from_jwks_json(&jwks).unwrap();
    let builder = ClientBuilder::new().verify_cards(trusted);

    let mut signed = card();
    signer.sign(&mut signed).unwrap();
    assert!(builder.build(signed.clone()).is_ok());

    let err = builder.build(card()).unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Signature);
    assert_eq!(
        err.to_string(),
        "the card of \"Echo\" is not trusted: the agent card is not signed"
    );

    let mut altered = signed.clone();
    altered.description = "Repeats something else".into();
    let err = builder.build(altered).unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Signature);
    assert!(
        err.to_string()
            .contains("k1: the signature does not match the card"),
        "{err}"
    );

    // A builder that asks for nothing takes any card.
    assert!(ClientBuilder::new().build(card()).is_ok());
}

#[tokio::test]
async fn trusted_keys_are_fetched_from_a_jwks_url() {
    let (_, jwks) = ed25519_pair("k1");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route(
            "/jwks.json",
            axum::routing::get(move || async move { jwks }),
        )
        .route("/nothing", axum::routing::get(|| async { "not keys" }));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let builder = ClientBuilder::new();
    let keys = builder
        .fetch_trusted_keys(&format!("http://{addr}/jwks.json"))
        .await
        .unwrap();
    assert_eq!(keys.len(), 1);
    let err = builder
        .fetch_trusted_keys(&format!("http://{addr}/nothing"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ClientErrorKind::Decode);
    let err = builder
        .fetch_trusted_keys(&format!("http://{addr}/missing"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
}
