#![doc = include_str!("../README.md")]
//!
//! # What is signed
//!
//! The signed bytes are the card's ProtoJSON with `signatures` removed and
//! empty values (`""`, `[]`, `{}`) dropped everywhere, in RFC 8785 form
//! ([`canonical_payload`]); the protected header names the algorithm and the
//! key (`alg`, `kid`, `typ: "JOSE"`, optionally `jku`). That is what the
//! Python and JavaScript SDKs sign, so cards signed there verify here and the
//! other way round. For a card whose required fields are filled in (the spec
//! requires them) it is also the spec's form.
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod canonical;
mod sign;
pub mod testing;
mod verify;

pub use self::canonical::canonical_payload;
pub use self::sign::{CardSigner, SigningAlgorithm};
pub use self::verify::{SignatureError, TrustedKeys, Verified};
