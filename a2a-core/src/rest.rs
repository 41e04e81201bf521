//! The HTTP+JSON binding's route table, for servers and clients alike: for
//! each operation its HTTP verb, its path template, and whether the fields
//! the path does not bind travel in the body or in the query.
//!
//! A request crosses the binding as its ProtoJSON object: the client takes the
//! path's fields (and `tenant`, the optional `/{tenant}` prefix) out of it and
//! sends the rest as the body or the query; the server puts them back. Both
//! directions are written here once.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::Method;

/// Where the fields that the path does not bind travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carrier {
    /// A JSON object body (`body: "*"`); `{}` when nothing is left.
    Body,
    /// Query parameters.
    Query,
}

/// One operation on the HTTP+JSON binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestRoute {
    /// The operation.
    pub method: Method,
    /// The HTTP verb a client uses.
    pub verb: &'static str,
    /// Another verb a server also accepts (`SubscribeToTask`: the spec's prose
    /// says POST, its proto GET).
    pub also: Option<&'static str>,
    /// The path below the base (and the optional `/{tenant}`): literal
    /// segments, `{field}` segments, and `{field}:verb` segments.
    pub template: &'static str,
    /// Where the remaining fields go.
    pub carrier: Carrier,
}

const fn route(
    method: Method,
    verb: &'static str,
    template: &'static str,
    carrier: Carrier,
) -> RestRoute {
    RestRoute {
        method,
        verb,
        also: None,
        template,
        carrier,
    }
}

/// Every operation's route, in the service's rpc order.
pub const REST_ROUTES: [RestRoute; 11] = [
    route(Method::SendMessage, "POST", "/message:send", Carrier::Body),
    route(
        Method::SendStreamingMessage,
        "POST",
        "/message:stream",
        Carrier::Body,
    ),
    route(Method::GetTask, "GET", "/tasks/{id}", Carrier::Query),
    route(Method::ListTasks, "GET", "/tasks", Carrier::Query),
    route(
        Method::CancelTask,
        "POST",
        "/tasks/{id}:cancel",
        Carrier::Body,
    ),
    RestRoute {
        also: Some("GET"),
        ..route(
            Method::SubscribeToTask,
            "POST",
            "/tasks/{id}:subscribe",
            Carrier::Body,
        )
    },
    route(
        Method::CreateTaskPushNotificationConfig,
        "POST",
        "/tasks/{taskId}/pushNotificationConfigs",
        Carrier::Body,
    ),
    route(
        Method::GetTaskPushNotificationConfig,
        "GET",
        "/tasks/{taskId}/pushNotificationConfigs/{id}",
        Carrier::Query,
    ),
    route(
        Method::ListTaskPushNotificationConfigs,
        "GET",
        "/tasks/{taskId}/pushNotificationConfigs",
        Carrier::Query,
    ),
    route(
        Method::GetExtendedAgentCard,
        "GET",
        "/extendedAgentCard",
        Carrier::Query,
    ),
    route(
        Method::DeleteTaskPushNotificationConfig,
        "DELETE",
        "/tasks/{taskId}/pushNotificationConfigs/{id}",
        Carrier::Query,
    ),
];

/// The field of every request that names its tenant (the `/{tenant}` prefix).
pub const TENANT_FIELD: &str = "tenant";

/// Characters escaped in a path segment (RFC 3986 unreserved ones stay).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One piece of a template segment.
enum Piece<'t> {
    Literal(&'t str),
    /// A field, and the `:verb` after it, if any.
    Field(&'t str, Option<&'t str>),
}

fn pieces(template: &str) -> impl Iterator<Item = Piece<'_>> {
    template.trim_matches('/').split('/').map(|segment| {
        match segment
            .strip_prefix('{')
            .and_then(|rest| rest.split_once('}'))
        {
            Some((field, rest)) => Piece::Field(field, rest.strip_prefix(':')),
            None => Piece::Literal(segment),
        }
    })
}

/// A request that cannot be put on a path: a field the path needs is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the request has no {0} for the HTTP+JSON path")]
pub struct MissingPathField(pub &'static str);

impl RestRoute {
    /// The route of `method`.
    pub fn of(method: Method) -> &'static RestRoute {
        // The table is in `Method::ALL` order; the search is a fallback that
        // keeps this right if either changes.
        REST_ROUTES
            .iter()
            .find(|r| r.method == method)
            .unwrap_or(&REST_ROUTES[0])
    }

    /// Takes the path's fields (and the tenant) out of the request's
    /// ProtoJSON object and returns the path, its segments percent-encoded.
    /// What is left of `fields` is the body or the query ([`RestRoute::carrier`]).
    pub fn take_path(&self, fields: &mut Map<String, Value>) -> Result<String, MissingPathField> {
        let mut path = String::new();
        if let Some(Value::String(tenant)) = fields.remove(TENANT_FIELD) {
            if !tenant.is_empty() {
                path.push('/');
                path.extend(utf8_percent_encode(&tenant, SEGMENT));
            }
        }
        for piece in pieces(self.template) {
            path.push('/');
            match piece {
                Piece::Literal(text) => path.push_str(text),
                Piece::Field(name, verb) => {
                    let value = match fields.remove(name) {
                        Some(Value::String(value)) if !value.is_empty() => value,
                        _ => return Err(MissingPathField(static_name(name))),
                    };
                    path.extend(utf8_percent_encode(&value, SEGMENT));
                    if let Some(verb) = verb {
                        path.push(':');
                        path.push_str(verb);
                    }
                }
            }
        }
        Ok(path)
    }

    /// Whether this route answers `verb`.
    pub fn accepts(&self, verb: &str) -> bool {
        self.verb == verb || self.also == Some(verb)
    }

    /// Matches path `segments` (already split, still percent-encoded) against
    /// the template; on a match, the path's fields, decoded.
    fn bind(&self, segments: &[&str]) -> Option<Result<Vec<(&'static str, String)>, BadSegment>> {
        let template: Vec<Piece<'static>> = pieces(self.template).collect();
        if template.len() != segments.len() {
            return None;
        }
        let mut fields = Vec::new();
        for (piece, segment) in template.iter().zip(segments) {
            match piece {
                Piece::Literal(text) if text == segment => {}
                Piece::Literal(_) => return None,
                Piece::Field(name, verb) => {
                    let raw = match verb {
                        Some(verb) => match segment.rsplit_once(':') {
                            Some((raw, found)) if found == *verb => raw,
                            _ => return None,
                        },
                        // `{id}` never takes a segment that ends in a verb
                        // another route owns.
                        None if segment.ends_with(":cancel") || segment.ends_with(":subscribe") => {
                            return None;
                        }
                        None => segment,
                    };
                    match decode_segment(raw) {
                        Ok(value) => fields.push((*name, value)),
                        Err(err) => return Some(Err(err)),
                    }
                }
            }
        }
        Some(Ok(fields))
    }
}

/// The one place field names are interned: the template's own `&'static str`s.
fn static_name(name: &str) -> &'static str {
    REST_ROUTES
        .iter()
        .flat_map(|r| pieces(r.template))
        .find_map(|piece| match piece {
            Piece::Field(field, _) if field == name => Some(field),
            _ => None,
        })
        .unwrap_or("field")
}

/// A path segment that is not percent-encoded UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path segment {0:?} is not UTF-8")]
pub struct BadSegment(pub String);

fn decode_segment(segment: &str) -> Result<String, BadSegment> {
    percent_decode_str(segment)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| BadSegment(segment.to_owned()))
}

/// A request path matched to its operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestMatch {
    /// The route.
    pub route: &'static RestRoute,
    /// The tenant from the `/{tenant}` prefix (empty without one).
    pub tenant: String,
    /// The fields the path binds (`id`, `taskId`), decoded.
    pub fields: Vec<(&'static str, String)>,
}

/// Why a path matched no operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestMismatch {
    /// No operation lives at this path (HTTP 404).
    #[error("no A2A operation at {0}")]
    NotFound(String),
    /// An operation lives here, but not for this verb (HTTP 405).
    #[error("{verb} is not allowed on {path}")]
    MethodNotAllowed {
        /// The verb used.
        verb: String,
        /// The path.
        path: String,
    },
    /// A segment is not valid percent-encoded UTF-8 (HTTP 400).
    #[error(transparent)]
    BadSegment(#[from] BadSegment),
}

/// Matches `verb path` (relative to the binding's base) to an operation, with
/// or without a `/{tenant}` prefix.
pub fn match_route(verb: &str, path: &str) -> Result<RestMatch, RestMismatch> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    // Without a tenant first; `/{tenant}/tasks` and `/tasks/{id}` have the
    // same shape, and the path without a tenant wins, as the spec's own
    // routes come first.
    let attempts = [
        (None, segments.as_slice()),
        (segments.first(), segments.get(1..).unwrap_or_default()),
    ];
    let mut wrong_verb = false;
    for (tenant, rest) in attempts {
        if rest.is_empty() {
            continue;
        }
        for route in &REST_ROUTES {
            let Some(fields) = route.bind(rest) else {
                continue;
            };
            if !route.accepts(verb) {
                wrong_verb = true;
                continue;
            }
            let tenant = match tenant {
                Some(raw) => decode_segment(raw)?,
                None => String::new(),
            };
            return Ok(RestMatch {
                route,
                tenant,
                fields: fields?,
            });
        }
        if wrong_verb {
            break;
        }
    }
    if wrong_verb {
        Err(RestMismatch::MethodNotAllowed {
            verb: verb.to_owned(),
            path: path.to_owned(),
        })
    } else {
        Err(RestMismatch::NotFound(format!("{verb} {path}")))
    }
}

/// What is left of a request object, as query parameters: strings as they
/// are, numbers and booleans in their JSON form; empty and null values are
/// left out (ProtoJSON's defaults).
pub fn to_query(fields: Map<String, Value>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .filter_map(|(key, value)| {
            let text = match value {
                Value::Null => return None,
                Value::String(text) => text,
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                // No request has nested query fields; keep them whole anyway.
                other => other.to_string(),
            };
            (!text.is_empty()).then_some((key, text))
        })
        .collect()
}

/// Query parameters as a request object: `includeArtifacts` is a boolean, the
/// rest are strings (ProtoJSON numbers and enums accept their string forms).
/// `skip` names a parameter that is not a request field (such as the version).
pub fn from_query<'q>(
    pairs: impl IntoIterator<Item = (&'q str, &'q str)>,
    skip: &str,
) -> Map<String, Value> {
    let mut object = Map::new();
    for (key, value) in pairs {
        if key.eq_ignore_ascii_case(skip) {
            continue;
        }
        let value = match (key, value) {
            ("includeArtifacts" | "include_artifacts", "true") => Value::Bool(true),
            ("includeArtifacts" | "include_artifacts", "false") => Value::Bool(false),
            _ => Value::String(value.to_owned()),
        };
        object.insert(key.to_owned(), value);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_table_follows_the_method_list() {
        for (route, method) in REST_ROUTES.iter().zip(Method::ALL) {
            assert_eq!(route.method, method);
            assert_eq!(RestRoute::of(method).method, method);
        }
    }

    #[test]
    fn every_route_round_trips_through_its_path() {
        for route in &REST_ROUTES {
            for tenant in ["", "acme corp"] {
                let mut fields = object(serde_json::json!({
                    "tenant": tenant, "id": "t/1", "taskId": "task 2", "historyLength": 3
                }));
                let path = route.take_path(&mut fields).unwrap();
                let matched = match_route(route.verb, &path).unwrap();
                assert_eq!(matched.route.method, route.method, "{path}");
                assert_eq!(matched.tenant, tenant, "{path}");
                for (name, value) in &matched.fields {
                    let expected = if *name == "id" { "t/1" } else { "task 2" };
                    assert_eq!(value, expected, "{path}");
                    assert!(!fields.contains_key(*name));
                }
                assert!(!fields.contains_key("tenant"));
            }
        }
    }

    #[test]
    fn unknown_paths_wrong_verbs_and_bad_segments() {
        assert!(matches!(
            match_route("GET", "/nope"),
            Err(RestMismatch::NotFound(_))
        ));
        assert!(matches!(
            match_route("DELETE", "/tasks/t-1"),
            Err(RestMismatch::MethodNotAllowed { .. })
        ));
        assert!(matches!(
            match_route("GET", "/tasks/t-1:cancel"),
            Err(RestMismatch::MethodNotAllowed { .. })
        ));
        assert!(matches!(
            match_route("GET", "/tasks/%FF"),
            Err(RestMismatch::BadSegment(_))
        ));
        assert_eq!(
            match_route("GET", "/tasks/t-1:subscribe")
                .unwrap()
                .route
                .method,
            Method::SubscribeToTask
        );
        assert_eq!(match_route("GET", "/acme/tasks").unwrap().tenant, "acme");
        let missing = RestRoute::of(Method::GetTask).take_path(&mut Map::new());
        assert_eq!(missing, Err(MissingPathField("id")));
    }

    #[test]
    fn query_fields_go_both_ways() {
        let fields = object(serde_json::json!({
            "contextId": "c", "pageSize": 5, "includeArtifacts": true, "pageToken": "", "x": null
        }));
        let pairs = to_query(fields);
        assert_eq!(pairs.len(), 3);
        let back = from_query(
            pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
            "A2A-Version",
        );
        assert_eq!(back["includeArtifacts"], Value::Bool(true));
        assert_eq!(back["pageSize"], Value::String("5".into()));
    }
}
