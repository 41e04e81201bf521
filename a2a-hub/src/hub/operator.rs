//! The operator token: what proves a person without authentication. A hub
//! whose gateway authenticates nobody cannot tell a person from anyone who
//! reaches its port, so lifting a loop guard's pause (the one decision the
//! guards leave to a person) asks for a secret only the operator holds: a
//! random token the hub keeps in its directory, readable by its owner alone.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::error::HubError;

/// The file in the hub's directory that holds the operator token.
pub const OPERATOR_TOKEN_FILE: &str = "operator-token";

/// The operator token, where it is kept, and whether this start made it.
#[derive(Clone)]
pub(crate) struct OperatorToken {
    pub(crate) token: String,
    pub(crate) file: Option<PathBuf>,
    pub(crate) created: bool,
}

impl std::fmt::Debug for OperatorToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorToken")
            .field("file", &self.file)
            .field("created", &self.created)
            .finish_non_exhaustive()
    }
}

impl OperatorToken {
    /// The token in `dir`, made (mode 0600) when there is none; a hub
    /// without a directory has one for its lifetime only.
    pub(crate) fn load_or_create(dir: Option<&Path>) -> Result<OperatorToken, HubError> {
        let Some(dir) = dir else {
            return Ok(OperatorToken {
                token: fresh(),
                file: None,
                created: true,
            });
        };
        let file = dir.join(OPERATOR_TOKEN_FILE);
        let failed = |what: &str, err: std::io::Error| {
            HubError::store(&format!("{what} {}: {err}", file.display()))
        };
        match std::fs::read_to_string(&file) {
            Ok(text) if is_token(text.trim()) => {
                return Ok(OperatorToken {
                    token: text.trim().to_owned(),
                    file: Some(file),
                    created: false,
                });
            }
            // A torn or emptied file (a crash while it was written) is
            // replaced: the token it held was never shown whole.
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(failed("reading", err)),
        }
        let token = fresh();
        place(dir, &token)?;
        Ok(OperatorToken {
            token,
            file: Some(file),
            created: true,
        })
    }

    /// The token a cluster's nodes share on their record (`created`: this
    /// start put it there), also kept in `dir`, when given, for the
    /// operator's tools that read it there.
    pub(crate) fn shared(
        token: String,
        created: bool,
        dir: Option<&Path>,
    ) -> Result<OperatorToken, HubError> {
        let file = match dir {
            Some(dir) => {
                let file = dir.join(OPERATOR_TOKEN_FILE);
                let current = std::fs::read_to_string(&file).unwrap_or_default();
                if current.trim() != token {
                    std::fs::create_dir_all(dir).map_err(|err| {
                        HubError::store(&format!("creating {}: {err}", dir.display()))
                    })?;
                    place(dir, &token)?;
                }
                Some(file)
            }
            None => None,
        };
        Ok(OperatorToken {
            token,
            file,
            created,
        })
    }

    /// Whether `presented` is the token, compared in constant time.
    pub(crate) fn matches(&self, presented: &str) -> bool {
        let (a, b) = (self.token.as_bytes(), presented.as_bytes());
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// Writes `token` to the token file in `dir`, readable by its owner only,
/// whole or not at all.
fn place(dir: &Path, token: &str) -> Result<(), HubError> {
    let file = dir.join(OPERATOR_TOKEN_FILE);
    let failed = |what: &str, err: std::io::Error| {
        HubError::store(&format!("{what} {}: {err}", file.display()))
    };
    {
        let partial = dir.join(format!("{OPERATOR_TOKEN_FILE}.tmp"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = options
            .open(&partial)
            .map_err(|err| failed("creating", err))?;
        out.write_all(format!("{token}\n").as_bytes())
            .and_then(|()| out.sync_all())
            .map_err(|err| failed("writing", err))?;
        std::fs::rename(&partial, &file).map_err(|err| failed("placing", err))?;
    }
    Ok(())
}

/// 64 hexadecimal digits from the thread's cryptographic generator.
pub(crate) fn fresh() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

fn is_token(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_made_once_kept_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let made = OperatorToken::load_or_create(Some(dir.path())).unwrap();
        assert!(made.created);
        assert!(is_token(&made.token));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(OPERATOR_TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = OperatorToken::load_or_create(Some(dir.path())).unwrap();
        assert!(!again.created);
        assert_eq!(again.token, made.token);
        assert!(again.matches(&made.token));
        assert!(!again.matches("nope"));
        assert!(!again.matches(&made.token[..63]));
        // A torn file is replaced by a new token.
        std::fs::write(dir.path().join(OPERATOR_TOKEN_FILE), "abc").unwrap();
        let replaced = OperatorToken::load_or_create(Some(dir.path())).unwrap();
        assert!(replaced.created);
        assert_ne!(replaced.token, made.token);
    }
}
