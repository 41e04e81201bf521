//! The public agent card at `/.well-known/agent-card.json` (and its 0.3
//! form at `/.well-known/agent.json`), with caching headers.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

/// A card serialized once, with its validators.
#[derive(Debug, Clone)]
pub(crate) struct CardDocument {
    body: Arc<[u8]>,
    etag: HeaderValue,
    last_modified: HeaderValue,
    cache_control: HeaderValue,
}

impl CardDocument {
    pub(crate) fn new<C: serde::Serialize>(card: &C, max_age: u64) -> Self {
        let body: Arc<[u8]> = super::common::to_json(card).into();
        // A content hash: the same card yields the same tag across restarts.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        body.hash(&mut hasher);
        let etag = format!("\"{:016x}\"", hasher.finish());
        let last_modified = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        CardDocument {
            body,
            etag: HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"card\"")),
            last_modified: HeaderValue::from_str(&last_modified)
                .unwrap_or(HeaderValue::from_static("")),
            cache_control: HeaderValue::from_str(&format!("public, max-age={max_age}"))
                .unwrap_or(HeaderValue::from_static("public, max-age=300")),
        }
    }

    pub(crate) fn respond(&self, request: &Request) -> Response {
        let not_modified = request
            .headers()
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|tags| {
                tags.split(',')
                    .any(|t| t.trim() == "*" || t.trim().trim_start_matches("W/") == self.etag)
            });
        let mut response = if not_modified {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            response
        } else {
            let mut response = Response::new(Body::from(self.body.to_vec()));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        };
        let headers = response.headers_mut();
        headers.insert(header::ETAG, self.etag.clone());
        headers.insert(header::LAST_MODIFIED, self.last_modified.clone());
        headers.insert(header::CACHE_CONTROL, self.cache_control.clone());
        response
    }
}
