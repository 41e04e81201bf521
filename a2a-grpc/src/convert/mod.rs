//! Conversion between the `a2a-core` types and the generated protobuf types.
//!
//! `core -> proto` cannot fail ([`ToProto`]); `proto -> core` fails on values the
//! core types cannot hold, such as an unknown enum number or a `Part` without
//! content ([`FromProto`], errors name the field path).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Map, Number, Value};

mod card;
mod task;

/// A protobuf value that has no `a2a-core` equivalent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct ConvertError {
    path: String,
    reason: String,
}

impl ConvertError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        ConvertError {
            path: String::new(),
            reason: reason.into(),
        }
    }

    /// Prefixes the path with the field the error was found in.
    pub(crate) fn at(mut self, field: &str) -> Self {
        self.path = if self.path.is_empty() {
            field.to_owned()
        } else if self.path.starts_with('[') {
            format!("{field}{}", self.path)
        } else {
            format!("{field}.{}", self.path)
        };
        self
    }

    /// The dotted field path, such as `status.state`.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl From<ConvertError> for a2a_core::A2aError {
    fn from(err: ConvertError) -> Self {
        a2a_core::A2aError::invalid_params(err.to_string())
    }
}

/// Converts an `a2a-core` value into its protobuf form.
pub trait ToProto {
    /// The protobuf type.
    type Proto;
    /// Converts.
    fn to_proto(self) -> Self::Proto;
}

/// Converts a protobuf value into its `a2a-core` form.
pub trait FromProto: Sized {
    /// The protobuf type.
    type Proto;
    /// Converts, failing on values the core type cannot hold.
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError>;
}

macro_rules! identity {
    ($($ty:ty),*) => {$(
        impl ToProto for $ty {
            type Proto = $ty;
            fn to_proto(self) -> $ty { self }
        }
        impl FromProto for $ty {
            type Proto = $ty;
            fn from_proto(proto: $ty) -> Result<$ty, ConvertError> { Ok(proto) }
        }
    )*};
}
// `()` is `google.protobuf.Empty`, as tonic types it (`DeleteTaskPushNotificationConfig`).
identity!(String, bool, i32, ());

impl<T: ToProto> ToProto for Vec<T> {
    type Proto = Vec<T::Proto>;
    fn to_proto(self) -> Self::Proto {
        self.into_iter().map(ToProto::to_proto).collect()
    }
}

impl<T: FromProto> FromProto for Vec<T> {
    type Proto = Vec<T::Proto>;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        proto
            .into_iter()
            .enumerate()
            .map(|(i, item)| T::from_proto(item).map_err(|e| e.at(&format!("[{i}]"))))
            .collect()
    }
}

/// A shared value (a task's messages): taken over when this was its last
/// holder, copied otherwise.
impl<T: ToProto + Clone> ToProto for std::sync::Arc<T> {
    type Proto = T::Proto;
    fn to_proto(self) -> Self::Proto {
        std::sync::Arc::unwrap_or_clone(self).to_proto()
    }
}

impl<T: FromProto> FromProto for std::sync::Arc<T> {
    type Proto = T::Proto;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        T::from_proto(proto).map(std::sync::Arc::new)
    }
}

impl<T: ToProto> ToProto for Option<T> {
    type Proto = Option<T::Proto>;
    fn to_proto(self) -> Self::Proto {
        self.map(ToProto::to_proto)
    }
}

impl<T: FromProto> FromProto for Option<T> {
    type Proto = Option<T::Proto>;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        proto.map(T::from_proto).transpose()
    }
}

impl<T: ToProto> ToProto for BTreeMap<String, T> {
    type Proto = BTreeMap<String, T::Proto>;
    fn to_proto(self) -> Self::Proto {
        self.into_iter().map(|(k, v)| (k, v.to_proto())).collect()
    }
}

impl<T: FromProto> FromProto for BTreeMap<String, T> {
    type Proto = BTreeMap<String, T::Proto>;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        proto
            .into_iter()
            .map(|(k, v)| T::from_proto(v).map_err(|e| e.at(&k)).map(|v| (k, v)))
            .collect()
    }
}

/// Converts a message field the core type holds directly but proto keeps optional.
pub(crate) fn required<T: FromProto + Default>(proto: Option<T::Proto>) -> Result<T, ConvertError> {
    Ok(Option::<T>::from_proto(proto)?.unwrap_or_default())
}

/// Implements both conversions for a message whose fields map one to one.
///
/// Fields after `required` are messages the core type holds directly.
macro_rules! mirror {
    ($core:ty => $pb:path { $($field:ident),* $(,)? } $(required { $($req:ident),* $(,)? })?) => {
        impl $crate::convert::ToProto for $core {
            type Proto = $pb;
            fn to_proto(self) -> $pb {
                $pb {
                    $($field: $crate::convert::ToProto::to_proto(self.$field),)*
                    $($($req: Some($crate::convert::ToProto::to_proto(self.$req)),)*)?
                }
            }
        }
        impl $crate::convert::FromProto for $core {
            type Proto = $pb;
            fn from_proto(proto: $pb) -> Result<Self, $crate::convert::ConvertError> {
                Ok(Self {
                    $($field: $crate::convert::FromProto::from_proto(proto.$field)
                        .map_err(|e| e.at(stringify!($field)))?,)*
                    $($($req: $crate::convert::required(proto.$req)
                        .map_err(|e| e.at(stringify!($req)))?,)*)?
                })
            }
        }
    };
}
pub(crate) use mirror;

/// Implements both conversions for a protocol enum held as `i32` in proto.
macro_rules! proto_enum {
    ($($ty:ty => $name:literal),*) => {$(
        impl $crate::convert::ToProto for $ty {
            type Proto = i32;
            fn to_proto(self) -> i32 { self.number() }
        }
        impl $crate::convert::FromProto for $ty {
            type Proto = i32;
            fn from_proto(proto: i32) -> Result<Self, $crate::convert::ConvertError> {
                <$ty>::from_number(proto).ok_or_else(|| $crate::convert::ConvertError::new(
                    format!(concat!("unknown ", $name, " number {}"), proto)))
            }
        }
    )*};
}
proto_enum!(a2a_core::TaskState => "TaskState", a2a_core::Role => "Role");

// ===== google.protobuf well-known types =====

impl ToProto for DateTime<Utc> {
    type Proto = prost_types::Timestamp;
    fn to_proto(self) -> Self::Proto {
        prost_types::Timestamp {
            seconds: self.timestamp(),
            #[allow(clippy::cast_possible_wrap)]
            nanos: self.timestamp_subsec_nanos() as i32,
        }
    }
}

/// The first instant of year 0001 (`0001-01-01T00:00:00Z`), in Unix seconds.
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
/// The first instant after year 9999 (`10000-01-01T00:00:00Z`), in Unix seconds.
const END_TIMESTAMP_SECONDS: i64 = 253_402_300_800;

impl FromProto for DateTime<Utc> {
    type Proto = prost_types::Timestamp;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        let nanos = u32::try_from(proto.nanos)
            .map_err(|_| ConvertError::new(format!("negative nanos {}", proto.nanos)))?;
        // google.protobuf.Timestamp is defined for years 0001 to 9999 only, the
        // range RFC 3339 can write: outside it the JSON bindings refuse the
        // same instant (a2a_core::protojson::parse_timestamp), and a task
        // stored from gRPC could not be served over JSON.
        if !(MIN_TIMESTAMP_SECONDS..END_TIMESTAMP_SECONDS).contains(&proto.seconds) {
            return Err(ConvertError::new(format!(
                "timestamp {}s is outside years 0001 to 9999",
                proto.seconds
            )));
        }
        DateTime::from_timestamp(proto.seconds, nanos)
            .ok_or_else(|| ConvertError::new(format!("timestamp {}s out of range", proto.seconds)))
    }
}

impl ToProto for Map<String, Value> {
    type Proto = prost_types::Struct;
    fn to_proto(self) -> Self::Proto {
        prost_types::Struct {
            fields: self.into_iter().map(|(k, v)| (k, v.to_proto())).collect(),
        }
    }
}

impl FromProto for Map<String, Value> {
    type Proto = prost_types::Struct;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        proto
            .fields
            .into_iter()
            .map(|(k, v)| Value::from_proto(v).map(|v| (k, v)))
            .collect()
    }
}

impl ToProto for Value {
    type Proto = prost_types::Value;
    fn to_proto(self) -> Self::Proto {
        use prost_types::value::Kind;
        let kind = match self {
            Value::Null => Kind::NullValue(0),
            Value::Bool(b) => Kind::BoolValue(b),
            Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => Kind::StringValue(s),
            Value::Array(items) => Kind::ListValue(prost_types::ListValue {
                values: items.into_iter().map(ToProto::to_proto).collect(),
            }),
            Value::Object(map) => Kind::StructValue(map.to_proto()),
        };
        prost_types::Value { kind: Some(kind) }
    }
}

/// Largest integer a `double` holds exactly (2^53).
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

impl FromProto for Value {
    type Proto = prost_types::Value;
    fn from_proto(proto: Self::Proto) -> Result<Self, ConvertError> {
        use prost_types::value::Kind;
        Ok(match proto.kind {
            None | Some(Kind::NullValue(_)) => Value::Null,
            Some(Kind::BoolValue(b)) => Value::Bool(b),
            // A JSON integer travels as a double; give it back as an integer so
            // that `42` stays `42` and not `42.0` after a round trip.
            Some(Kind::NumberValue(n)) if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER =>
            {
                #[allow(clippy::cast_possible_truncation)]
                Value::Number(Number::from(n as i64))
            }
            Some(Kind::NumberValue(n)) => Number::from_f64(n)
                .map(Value::Number)
                .ok_or_else(|| ConvertError::new(format!("number {n} has no JSON form")))?,
            Some(Kind::StringValue(s)) => Value::String(s),
            Some(Kind::ListValue(list)) => Value::Array(
                list.values
                    .into_iter()
                    .map(Value::from_proto)
                    .collect::<Result<_, _>>()?,
            ),
            Some(Kind::StructValue(map)) => Value::Object(Map::from_proto(map)?),
        })
    }
}
