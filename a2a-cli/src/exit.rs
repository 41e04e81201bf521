//! The exit statuses of `a2a`, in one place: `main` maps errors to them,
//! `a2a --help` lists them ([`HELP`]), and so do the crate's docs.

use a2a_client::{ClientError, ClientErrorKind};

/// The command did what was asked.
pub const SUCCESS: u8 = 0;
/// The command failed; the reason is on standard error.
pub const FAILURE: u8 = 1;
/// The command line is wrong: an unknown command, a bad or missing
/// argument (clap's own status for usage errors).
pub const USAGE: u8 = 2;
/// The server or agent could not be reached: no connection could be made,
/// or it broke, or the call timed out. Worth retrying later, unlike
/// [`FAILURE`].
pub const UNREACHABLE: u8 = 3;

/// What `a2a --help` says about the statuses.
pub const HELP: &str = "\
Exit status:
  0  success
  1  failure (the reason is on standard error)
  2  usage error: unknown command, bad or missing argument
  3  unreachable: no connection to the server or agent, or it timed out";

/// The status a command that failed with `err` exits with.
pub fn status(err: &anyhow::Error) -> u8 {
    let unreachable = err.chain().any(|cause| {
        if let Some(err) = cause.downcast_ref::<ClientError>() {
            return matches!(
                err.kind(),
                ClientErrorKind::Connection | ClientErrorKind::Timeout
            );
        }
        if let Some(err) = cause.downcast_ref::<a2a_hub::api::HubApiError>() {
            return err.kind() == a2a_hub::api::HubApiErrorKind::Unreachable;
        }
        if let Some(err) = cause.downcast_ref::<reqwest::Error>() {
            return err.is_connect() || err.is_timeout();
        }
        false
    });
    match unreachable {
        true => UNREACHABLE,
        false => FAILURE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failure_to_reach_is_unreachable() {
        let refused = ClientError::new(ClientErrorKind::Connection, "connection refused");
        let wrapped = anyhow::Error::new(refused).context("cannot get the agent card");
        assert_eq!(status(&wrapped), UNREACHABLE);
        let slow = ClientError::new(ClientErrorKind::Timeout, "timed out");
        assert_eq!(status(&slow.into()), UNREACHABLE);
        let answered = ClientError::new(ClientErrorKind::Protocol, "TASK_NOT_FOUND");
        assert_eq!(status(&answered.into()), FAILURE);
        assert_eq!(status(&anyhow::anyhow!("bad file")), FAILURE);
    }
}
