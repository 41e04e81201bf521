//! Checking a card's signatures against keys the caller trusts.

use a2a_core::AgentCard;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey};

use crate::canonical::canonical_payload;

/// Why a card's signature could not be made or checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The card carries no signature.
    #[error("the agent card is not signed")]
    Unsigned,
    /// No signature verifies; each one's reason, by key id.
    #[error("no signature of the agent card verifies: {}", .0.join("; "))]
    Invalid(Vec<String>),
    /// A signature or key set that is not what JOSE says.
    #[error("malformed signature data: {0}")]
    Malformed(String),
    /// A key that cannot be used.
    #[error("unusable key: {0}")]
    Key(String),
}

/// Which signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The key it verified with.
    pub kid: String,
    /// Its algorithm.
    pub algorithm: String,
}

/// The public keys a client trusts to sign cards (a JWKS). A signature
/// names its key by `kid`; only these keys are ever used, whatever URL a
/// card's header points to.
#[derive(Debug, Clone)]
pub struct TrustedKeys {
    keys: JwkSet,
}

impl TrustedKeys {
    /// The keys of a JWKS document (`{"keys": [...]}`).
    pub fn from_jwks_json(text: &str) -> Result<TrustedKeys, SignatureError> {
        let keys: JwkSet = serde_json::from_str(text)
            .map_err(|err| SignatureError::Malformed(format!("not a JWKS: {err}")))?;
        Ok(TrustedKeys { keys })
    }

    /// The keys of a parsed JWKS.
    pub fn from_jwks(keys: JwkSet) -> TrustedKeys {
        TrustedKeys { keys }
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.keys.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.keys.keys.is_empty()
    }

    /// Checks `card`: at least one of its signatures must verify with a
    /// trusted key, over the card as its type serializes it.
    pub fn verify(&self, card: &AgentCard) -> Result<Verified, SignatureError> {
        if card.signatures.is_empty() {
            return Err(SignatureError::Unsigned);
        }
        let payload = canonical_payload(card).map_err(|err| {
            SignatureError::Malformed(format!("the card cannot be serialized: {err}"))
        })?;
        let payload = URL_SAFE_NO_PAD.encode(payload);
        let mut reasons = Vec::new();
        for signature in &card.signatures {
            match self.check(&signature.protected, &signature.signature, &payload) {
                Ok(verified) => return Ok(verified),
                Err(reason) => reasons.push(reason),
            }
        }
        Err(SignatureError::Invalid(reasons))
    }

    fn check(&self, protected: &str, signature: &str, payload: &str) -> Result<Verified, String> {
        let header = URL_SAFE_NO_PAD
            .decode(protected.trim_end_matches('='))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .ok_or("its protected header is not base64url JSON")?;
        let text = |key: &str| header.get(key).and_then(|v| v.as_str());
        let alg = text("alg").ok_or("its header names no alg")?;
        let kid = text("kid").ok_or("its header names no kid")?;
        let jwk = self
            .keys
            .find(kid)
            .ok_or_else(|| format!("{kid}: not a trusted key"))?;
        let algorithm = allowed(jwk, alg)
            .ok_or_else(|| format!("{kid}: {alg} is not an algorithm of this key"))?;
        let key =
            DecodingKey::from_jwk(jwk).map_err(|err| format!("{kid}: unusable key: {err}"))?;
        // The header exactly as sent: re-encoding it would change the bytes.
        let input = format!("{protected}.{payload}");
        match jsonwebtoken::crypto::verify(signature, input.as_bytes(), &key, algorithm) {
            Ok(true) => Ok(Verified {
                kid: kid.to_owned(),
                algorithm: alg.to_owned(),
            }),
            Ok(false) => Err(format!("{kid}: the signature does not match the card")),
            Err(err) => Err(format!("{kid}: {err}")),
        }
    }
}

/// `alg` when key `jwk` may verify it: public-key algorithms of the key's
/// own family and curve only (never HMAC with a public key as the secret),
/// and the key's own `alg` when it names one.
fn allowed(jwk: &Jwk, alg: &str) -> Option<Algorithm> {
    use Algorithm::*;
    let algorithm: Algorithm = alg.parse().ok()?;
    let family: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &[RS256, RS384, RS512, PS256, PS384, PS512],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => &[ES256],
            EllipticCurve::P384 => &[ES384],
            _ => &[],
        },
        AlgorithmParameters::OctetKeyPair(_) => &[EdDSA],
        AlgorithmParameters::OctetKey(_) => &[],
    };
    let named = jwk.common.key_algorithm.map(|a| format!("{a:?}"));
    let agrees = named.is_none_or(|named| named.eq_ignore_ascii_case(alg));
    (family.contains(&algorithm) && agrees).then_some(algorithm)
}
