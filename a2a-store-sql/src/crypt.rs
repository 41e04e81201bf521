//! Encryption at rest of push-config credentials.
//!
//! A credential is sealed with XChaCha20-Poly1305 under the operator's 32-byte
//! key, with a fresh random 24-byte nonce per value (long enough that random
//! nonces never repeat in practice), and stored as
//! `a2a-enc-v1:` + base64(nonce ‖ ciphertext ‖ tag). The tag makes a wrong key
//! an error instead of garbage.

use std::path::Path;

use a2a_server::store::StoreError;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

const PREFIX: &str = "a2a-enc-v1:";
const NONCE_LEN: usize = 24;

/// The operator's key for push-config credentials (32 bytes).
#[derive(Clone)]
pub struct PushKey {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for PushKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print key material.
        f.write_str("PushKey(..)")
    }
}

/// Why a key could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key file could not be read.
    #[error("reading the key file {path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The key is not 32 bytes in one of the accepted forms.
    #[error("a push-credentials key is 32 bytes: raw, or written as 64 hex digits or in base64")]
    Malformed,
}

impl PushKey {
    /// A key of these 32 bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> Self {
        PushKey {
            cipher: XChaCha20Poly1305::new(bytes.into()),
        }
    }

    /// A key written as text (64 hex digits, or base64 of 32 bytes), or as
    /// exactly 32 raw bytes; surrounding whitespace is ignored in text.
    pub fn parse(data: &[u8]) -> Result<Self, KeyError> {
        // Text forms are longer than 32 bytes, so 32 bytes are the key itself.
        if let Ok(bytes) = <&[u8; 32]>::try_from(data) {
            return Ok(PushKey::from_bytes(bytes));
        }
        let text = std::str::from_utf8(data)
            .map_err(|_| KeyError::Malformed)?
            .trim();
        let bytes = if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| KeyError::Malformed)?
        } else {
            STANDARD.decode(text).map_err(|_| KeyError::Malformed)?
        };
        let bytes = <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| KeyError::Malformed)?;
        Ok(PushKey::from_bytes(&bytes))
    }

    /// Reads a key file (see [`PushKey::parse`]).
    pub fn from_file(path: &Path) -> Result<Self, KeyError> {
        let data = std::fs::read(path).map_err(|source| KeyError::Io {
            path: path.to_owned(),
            source,
        })?;
        PushKey::parse(&data)
    }

    /// Seals `plain` into its stored form.
    pub(crate) fn seal(&self, plain: &str) -> Result<String, StoreError> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .cipher
            .encrypt(&nonce, plain.as_bytes())
            .map_err(|_| StoreError::Backend("encrypting push credentials failed".into()))?;
        let mut bytes = Vec::with_capacity(NONCE_LEN + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        Ok(format!("{PREFIX}{}", STANDARD.encode(bytes)))
    }

    /// Opens a sealed value; `None` when it was not sealed under this key.
    pub(crate) fn open(&self, sealed: &str) -> Option<String> {
        let bytes = STANDARD.decode(sealed.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < NONCE_LEN {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let plain = self
            .cipher
            .decrypt(XNonce::from_slice(nonce), ciphertext)
            .ok()?;
        String::from_utf8(plain).ok()
    }
}

/// Whether a stored value is sealed.
pub(crate) fn is_sealed(stored: &str) -> bool {
    stored.starts_with(PREFIX)
}

/// The stored form of a credential: sealed under `key` when there is one.
pub(crate) fn seal(key: Option<&PushKey>, plain: &str) -> Result<String, StoreError> {
    match key {
        Some(key) if !plain.is_empty() => key.seal(plain),
        _ => Ok(plain.to_owned()),
    }
}

/// A credential from its stored form.
pub(crate) fn unseal(key: Option<&PushKey>, stored: &str) -> Result<String, StoreError> {
    if !is_sealed(stored) {
        // Stored before a key was configured (or without one).
        return Ok(stored.to_owned());
    }
    let key = key.ok_or_else(|| {
        StoreError::Backend("push credentials are encrypted and no key was given".into())
    })?;
    key.open(stored).ok_or_else(|| {
        StoreError::Backend("push credentials do not open with the configured key".into())
    })
}

/// The value stored to recognise the key a database was used with.
pub(crate) const KEY_CHECK: &str = "a2a push-credentials key check";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_with_their_key_only() {
        let key = PushKey::from_bytes(&[7; 32]);
        let sealed = key.seal("s3cr3t").unwrap();
        assert!(!sealed.contains("s3cr3t"));
        assert_ne!(
            key.seal("s3cr3t").unwrap(),
            sealed,
            "a fresh nonce per value"
        );
        assert_eq!(unseal(Some(&key), &sealed).unwrap(), "s3cr3t");
        let other = PushKey::from_bytes(&[8; 32]);
        assert!(unseal(Some(&other), &sealed).is_err());
        assert!(unseal(None, &sealed).is_err());
        assert_eq!(unseal(Some(&key), "plain").unwrap(), "plain");
        let mut bytes = STANDARD.decode(&sealed[PREFIX.len()..]).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let tampered = format!("{PREFIX}{}", STANDARD.encode(bytes));
        assert!(
            key.open(&tampered).is_none(),
            "a changed value does not open"
        );
    }

    #[test]
    fn keys_parse_from_hex_base64_and_raw() {
        let hex = "00".repeat(31) + "ff";
        let b64 = STANDARD.encode([1u8; 32]);
        for text in [hex.as_str(), b64.as_str(), &format!(" {hex}\n")] {
            assert!(PushKey::parse(text.as_bytes()).is_ok(), "{text}");
        }
        assert!(PushKey::parse(&[200u8; 32]).is_ok());
        for bad in ["short", &"zz".repeat(32), &STANDARD.encode([1u8; 31])] {
            assert!(matches!(
                PushKey::parse(bad.as_bytes()),
                Err(KeyError::Malformed)
            ));
        }
    }
}
