//! Service parameter names (HTTP headers / gRPC metadata) and the protocol version.

/// The protocol version this SDK speaks, as sent in `A2A-Version`.
pub const PROTOCOL_VERSION: &str = "1.0";

/// Header carrying the protocol version (`Major.Minor`).
pub const VERSION_HEADER: &str = "A2A-Version";

/// Header carrying the comma-separated extension URIs requested for a call.
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// The 0.3 name of [`EXTENSIONS_HEADER`], still accepted on input.
pub const LEGACY_EXTENSIONS_HEADER: &str = "X-A2A-Extensions";

/// Header carrying a push config's token to the webhook.
pub const NOTIFICATION_TOKEN_HEADER: &str = "A2A-Notification-Token";

/// The 0.3 name of [`NOTIFICATION_TOKEN_HEADER`], still sent for older receivers.
pub const LEGACY_NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Path of the public agent card, relative to the domain root.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// Media type of HTTP+JSON requests and responses.
pub const A2A_JSON_MEDIA_TYPE: &str = "application/a2a+json";

/// Splits a comma-separated service-parameter value into trimmed, non-empty items.
pub fn split_list(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Whether `requested` (`Major.Minor`, patch tolerated) has the same major and
/// minor as [`PROTOCOL_VERSION`].
pub fn is_supported_version(requested: &str) -> bool {
    // What every 1.0 client sends, checked before the general parse.
    if requested == "1.0" {
        return true;
    }
    let mut parts = requested.trim().split('.');
    matches!((parts.next(), parts.next()), (Some("1"), Some("0")))
}

#[cfg(test)]
mod version_tests {
    use super::is_supported_version;

    #[test]
    fn only_versions_of_the_same_major_and_minor_are_supported() {
        for supported in ["1.0", " 1.0 ", "1.0.3", "1.0.0"] {
            assert!(is_supported_version(supported), "{supported:?}");
        }
        for unsupported in ["", "1", "1.1", "0.3", "10", "2.0", "1,0", "v1.0"] {
            assert!(!is_supported_version(unsupported), "{unsupported:?}");
        }
    }
}
