//! Signing a card with a private key.

use a2a_core::{AgentCard, AgentCardSignature};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey};

use crate::canonical::canonical_payload;
use crate::verify::SignatureError;

/// The algorithms a card can be signed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// ECDSA on P-256 with SHA-256 (`ES256`), the spec's example.
    Es256,
    /// Ed25519 (`EdDSA`).
    EdDsa,
    /// RSA PKCS#1 v1.5 with SHA-256 (`RS256`).
    Rs256,
}

impl SigningAlgorithm {
    /// Its JOSE name (`ES256`, `EdDSA`, `RS256`).
    pub fn name(self) -> &'static str {
        match self {
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::EdDsa => "EdDSA",
            SigningAlgorithm::Rs256 => "RS256",
        }
    }

    /// The algorithm with JOSE name `name`.
    pub fn from_name(name: &str) -> Option<SigningAlgorithm> {
        [
            SigningAlgorithm::Es256,
            SigningAlgorithm::EdDsa,
            SigningAlgorithm::Rs256,
        ]
        .into_iter()
        .find(|alg| alg.name().eq_ignore_ascii_case(name))
    }

    fn jose(self) -> Algorithm {
        match self {
            SigningAlgorithm::Es256 => Algorithm::ES256,
            SigningAlgorithm::EdDsa => Algorithm::EdDSA,
            SigningAlgorithm::Rs256 => Algorithm::RS256,
        }
    }
}

/// Signs agent cards with one private key.
pub struct CardSigner {
    key: EncodingKey,
    algorithm: SigningAlgorithm,
    kid: String,
    jku: Option<String>,
}

impl std::fmt::Debug for CardSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardSigner")
            .field("algorithm", &self.algorithm)
            .field("kid", &self.kid)
            .field("jku", &self.jku)
            .finish_non_exhaustive()
    }
}

impl CardSigner {
    /// A signer with the private key in `pem` (PKCS#8 `PRIVATE KEY` for
    /// ES256 and EdDSA; PKCS#1 `RSA PRIVATE KEY` for RS256), published
    /// under key id `kid` (what verifiers look the public key up by).
    pub fn from_pem(
        pem: &str,
        algorithm: SigningAlgorithm,
        kid: impl Into<String>,
    ) -> Result<CardSigner, SignatureError> {
        let block = pem::parse(pem)
            .map_err(|err| SignatureError::Key(format!("not a PEM private key: {err}")))?;
        let expected = match algorithm {
            SigningAlgorithm::Rs256 => "RSA PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        if block.tag() != expected {
            return Err(SignatureError::Key(format!(
                "a {} key is a PEM block \"{expected}\", not \"{}\"",
                algorithm.name(),
                block.tag()
            )));
        }
        let der = block.contents();
        let key = match algorithm {
            SigningAlgorithm::Es256 => EncodingKey::from_ec_der(der),
            SigningAlgorithm::EdDsa => EncodingKey::from_ed_der(der),
            SigningAlgorithm::Rs256 => EncodingKey::from_rsa_der(der),
        };
        let signer = CardSigner {
            key,
            algorithm,
            kid: kid.into(),
            jku: None,
        };
        // A key of another kind fails here, not on the first card.
        signer.signature_of(b"probe").map_err(|_| {
            SignatureError::Key(format!("the key is not a {} key", algorithm.name()))
        })?;
        Ok(signer)
    }

    /// Names `url` (`jku`) as where the signer's public keys are published.
    /// Verifiers take keys only from places they trust; this is a hint.
    #[must_use]
    pub fn jku(mut self, url: impl Into<String>) -> Self {
        self.jku = Some(url.into());
        self
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    fn signature_of(&self, input: &[u8]) -> Result<String, SignatureError> {
        jsonwebtoken::crypto::sign(input, &self.key, self.algorithm.jose())
            .map_err(|err| SignatureError::Key(format!("signing failed: {err}")))
    }

    /// Adds this signer's signature to `card` (after any it has). Sign a
    /// card once it is final: every field but `signatures` is covered.
    pub fn sign(&self, card: &mut AgentCard) -> Result<(), SignatureError> {
        let mut header = serde_json::Map::new();
        header.insert("alg".into(), self.algorithm.name().into());
        header.insert("kid".into(), self.kid.clone().into());
        header.insert("typ".into(), "JOSE".into());
        if let Some(jku) = &self.jku {
            header.insert("jku".into(), jku.clone().into());
        }
        let header = serde_json::to_vec(&header)
            .map_err(|err| SignatureError::Malformed(err.to_string()))?;
        let protected = URL_SAFE_NO_PAD.encode(header);
        let payload = canonical_payload(card).map_err(|err| {
            SignatureError::Malformed(format!("the card cannot be serialized: {err}"))
        })?;
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(payload));
        let signature = self.signature_of(input.as_bytes())?;
        card.signatures.push(AgentCardSignature {
            protected,
            signature,
            header: None,
        });
        Ok(())
    }
}
