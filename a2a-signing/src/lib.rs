//! Signed agent cards (A2A 1.0, the card's `signatures`): a detached JWS
//! over the card's canonical JSON.
//!
//! The signed bytes are the card's ProtoJSON with `signatures` removed and
//! empty values (`""`, `[]`, `{}`) dropped everywhere, in RFC 8785 form
//! ([`canonical_payload`]); the protected header names the algorithm and the
//! key (`alg`, `kid`, `typ: "JOSE"`, optionally `jku`). That is what the
//! Python and JavaScript SDKs sign, so cards signed there verify here and the
//! other way round. For a card whose required fields are filled in (the spec
//! requires them) it is also the spec's form.
//!
//! ```
//! use a2a_core::AgentCard;
//! use a2a_signing::{CardSigner, SigningAlgorithm, TrustedKeys};
//! # let (private_pem, jwks) = a2a_signing::testing::ed25519_pair("key-1");
//! let signer = CardSigner::from_pem(&private_pem, SigningAlgorithm::EdDsa, "key-1")?;
//! let mut card = AgentCard::new("Echo", "Repeats what you say");
//! signer.sign(&mut card)?;
//!
//! let trusted = TrustedKeys::from_jwks_json(&jwks)?;
//! let verified = trusted.verify(&card)?;
//! assert_eq!(verified.kid, "key-1");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod canonical;
mod sign;
pub mod testing;
mod verify;

pub use self::canonical::canonical_payload;
pub use self::sign::{CardSigner, SigningAlgorithm};
pub use self::verify::{SignatureError, TrustedKeys, Verified};
