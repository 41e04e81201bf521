#![doc = include_str!("../README.md")]
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod card;
mod error;
mod event;
pub mod json_writer;
mod jsonrpc;
mod message;
pub mod operation;
mod part;
pub mod protojson;
mod push;
mod request;
pub mod rest;
mod security;
mod service_params;
#[cfg(feature = "otel")]
pub mod span_record;
mod task;
#[cfg(feature = "otel")]
pub mod trace_scope;
pub mod v03;

#[cfg(feature = "arbitrary")]
pub mod arbitrary;

pub use card::{
    AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension, AgentInterface,
    AgentProvider, AgentSkill, binding,
};
pub use error::{
    A2aError, ERROR_DOMAIN, ERROR_INFO_TYPE, ErrorKind, GrpcCode, HttpErrorBody, HttpStatusError,
    JsonRpcError,
};
pub use event::{
    SendMessageResponse, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent,
};
pub use jsonrpc::{JsonRpcRequest, JsonRpcResponse, Method};
pub use message::{Message, Role};
pub use part::{Part, PartContent};
pub use push::{
    AuthenticationInfo, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
pub use request::{
    CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest, ListTasksRequest,
    ListTasksResponse, SendMessageConfiguration, SendMessageRequest, SubscribeToTaskRequest,
};
pub use security::{
    ApiKeySecurityScheme, AuthorizationCodeOAuthFlow, ClientCredentialsOAuthFlow,
    DeviceCodeOAuthFlow, HttpAuthSecurityScheme, ImplicitOAuthFlow, MutualTlsSecurityScheme,
    OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme, PasswordOAuthFlow,
    SecurityRequirement, SecurityScheme, StringList,
};
pub use service_params::*;
pub use task::{Artifact, Task, TaskState, TaskStatus};

/// A `google.protobuf.Struct`: a JSON object of arbitrary values.
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// A fresh unique id: a UUID v7, whose first bits are the time it was made and
/// the rest (74 bits) random.
///
/// Ids made one after another sort one after another, so a durable store
/// whose indexes are keyed by task, context or message id adds each new key
/// next to the last one instead of on a random page: a batch of new tasks
/// dirties a few index pages, not one per task. (A v4 id costs one clock
/// read less; the store's write volume is worth far more.)
///
/// The random bits come from the thread's cryptographic generator, so ids
/// cannot be guessed from earlier ones. Unlike `Uuid::now_v7`, ids made in
/// the same millisecond are not ordered by a shared counter: nothing here
/// needs that, and its lock cost a third of each id.
pub fn new_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });
    // Two words from the generator's buffer: cheaper than ten single bytes.
    let random = rand::random::<u128>().to_le_bytes();
    let mut bits = [0u8; 10];
    bits.copy_from_slice(&random[..10]);
    let id = uuid::Builder::from_unix_timestamp_millis(millis, &bits).into_uuid();
    // Encoding into a stack buffer skips the formatting machinery of `to_string`.
    let mut buffer = uuid::Uuid::encode_buffer();
    id.hyphenated().encode_lower(&mut buffer).to_owned()
}

/// The current time, to the millisecond.
///
/// ProtoJSON carries any precision up to nanoseconds, but tasks are ordered
/// and paged by their status time in milliseconds (in every store), so a time
/// made here reads back equal from any store and sorts as it was written.
pub fn now() -> chrono::DateTime<chrono::Utc> {
    // From the system clock's milliseconds directly: `Utc::now()` and a
    // truncation cost three calendar conversions instead of one.
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since
        .ok()
        .and_then(|since| i64::try_from(since.as_millis()).ok())
        .and_then(chrono::DateTime::from_timestamp_millis)
        .unwrap_or_else(|| {
            // A clock before 1970.
            let now = chrono::Utc::now();
            chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now)
        })
}

#[cfg(test)]
mod id_tests {
    #[test]
    fn now_is_the_current_millisecond() {
        let before = chrono::Utc::now().timestamp_millis();
        let now = super::now();
        let after = chrono::Utc::now().timestamp_millis();
        assert_eq!(now.timestamp_subsec_nanos() % 1_000_000, 0);
        assert!((before..=after).contains(&now.timestamp_millis()));
    }

    #[test]
    fn ids_are_distinct_version_7_uuids_stamped_now() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| super::new_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(100) {
            let uuid = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(uuid.get_version_num(), 7, "{id}");
            assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{id}");
            let (seconds, nanos) = uuid.get_timestamp().unwrap().to_unix();
            let millis = u128::from(seconds) * 1000 + u128::from(nanos / 1_000_000);
            assert!(millis + 1 >= before && millis <= before + 60_000, "{id}");
            assert_eq!(id, &id.to_lowercase());
        }
    }
}
