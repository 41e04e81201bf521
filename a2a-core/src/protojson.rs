//! Serde helpers that give the hand-written types their exact ProtoJSON form.
//!
//! ProtoJSON rules this module implements (digest section 3 and 11):
//! - a `null` value is read as the field's default;
//! - `bytes` are emitted as padded standard base64, and read in standard or
//!   URL-safe alphabets, padded or not;
//! - timestamps are RFC 3339 UTC with 3, 6 or 9 fractional digits on output, any
//!   precision (and any offset, normalised to UTC) on input, within years
//!   0001 to 9999 as ProtoJSON requires;
//! - `int32` accepts a JSON number or a decimal string, as ProtoJSON allows.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serializer};

/// A string read without a copy when the input lets it be borrowed (serde's
/// own `Cow<str>` always copies): for member names and values that are only
/// looked at. An escaped string, which cannot be borrowed, is copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrRef<'de>(pub std::borrow::Cow<'de, str>);

impl std::ops::Deref for StrRef<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for StrRef<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrRefVisitor;
        impl<'de> Visitor<'de> for StrRefVisitor {
            type Value = StrRef<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<StrRef<'de>, E> {
                Ok(StrRef(std::borrow::Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<StrRef<'de>, E> {
                Ok(StrRef(std::borrow::Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<StrRef<'de>, E> {
                Ok(StrRef(std::borrow::Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(StrRefVisitor)
    }
}

/// A value read for sharing (`Arc<T>`), allocated once: serde's own `Arc<T>`
/// reads a `Box<T>` and then moves it into a second allocation.
struct Shared<T>(std::sync::Arc<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(|value| Shared(std::sync::Arc::new(value)))
    }
}

/// Reads an optional shared value (`null` or absent: `None`).
pub(crate) fn shared_option<'de, D, T>(
    deserializer: D,
) -> Result<Option<std::sync::Arc<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Shared<T>>::deserialize(deserializer)?.map(|shared| shared.0))
}

/// Reads a list of shared values whose JSON `null` means an empty list.
pub(crate) fn nullable_shared_list<'de, D, T>(
    deserializer: D,
) -> Result<Vec<std::sync::Arc<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let list = Option::<Vec<Shared<T>>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(list.into_iter().map(|shared| shared.0).collect())
}

/// `skip_serializing_if` predicate for implicit-presence scalars.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

/// Reads a field whose JSON `null` means "the default value".
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Encodes bytes the way ProtoJSON emits them: standard alphabet, padded.
pub fn encode_bytes(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes ProtoJSON bytes: standard or URL-safe alphabet, with or without padding.
pub fn decode_bytes(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    let url_safe = text.contains(['-', '_']);
    let padded = text.ends_with('=');
    match (url_safe, padded) {
        (false, true) => STANDARD.decode(text),
        (false, false) => STANDARD_NO_PAD.decode(text),
        (true, true) => URL_SAFE.decode(text),
        (true, false) => URL_SAFE_NO_PAD.decode(text),
    }
}

/// Formats a timestamp as ProtoJSON emits it: UTC, `Z`, and 3, 6 or 9
/// fractional digits, the fewest that hold the value exactly.
pub fn format_timestamp(ts: &DateTime<Utc>) -> String {
    match millisecond_timestamp(ts) {
        // Only ASCII digits and separators were written.
        Some(text) => std::str::from_utf8(&text).unwrap_or_default().to_owned(),
        None => {
            // Fewer digits than the value has would change it on every JSON
            // hop, while the gRPC binding carries nanoseconds through.
            let nanos = ts.timestamp_subsec_nanos();
            let precision = if nanos % 1_000_000 == 0 {
                SecondsFormat::Millis
            } else if nanos % 1_000 == 0 {
                SecondsFormat::Micros
            } else {
                SecondsFormat::Nanos
            };
            ts.to_rfc3339_opts(precision, true)
        }
    }
}

/// The usual shape of [`format_timestamp`]'s text, for a whole number of
/// milliseconds in the years 0 to 9999 (and no leap second); `None` for
/// anything else.
///
/// Every task carries timestamps, so this skips chrono's general formatter
/// (several times the cost).
pub(crate) fn millisecond_timestamp(ts: &DateTime<Utc>) -> Option<[u8; 24]> {
    let millis = ts.timestamp_millis();
    let days = millis.div_euclid(86_400_000);
    let of_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    if ts.timestamp_subsec_nanos() % 1_000_000 != 0
        || !(0..=9999).contains(&year)
        || ts.timestamp_subsec_millis() > 999
    {
        return None;
    }
    // Every value below is in 0..=9999 (checked above for the year), so
    // each fits a u32 and its digits are found without 64-bit divisions.
    let small = |value: i64| u32::try_from(value).unwrap_or(0);
    let mut text = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, value: u32| {
        let mut value = value;
        for slot in text[at..at + width].iter_mut().rev() {
            // One decimal digit: below 10, so the cast keeps it.
            #[allow(clippy::cast_possible_truncation)]
            let digit = (value % 10) as u8;
            *slot = b'0' + digit;
            value /= 10;
        }
    };
    let of_day = small(of_day);
    put(0, 4, small(year));
    put(5, 2, small(month));
    put(8, 2, small(day));
    put(11, 2, of_day / 3_600_000);
    put(14, 2, of_day / 60_000 % 60);
    put(17, 2, of_day / 1000 % 60);
    put(20, 3, of_day % 1000);
    Some(text)
}

/// The proleptic Gregorian (year, month, day) of a day count from 1970-01-01
/// (the well-known era-based conversion: 400-year eras of 146,097 days).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Parses an RFC 3339 timestamp of any sub-second precision into UTC,
/// refusing instants outside ProtoJSON's range (years 0001 to 9999, in UTC).
pub fn parse_timestamp(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    use chrono::Datelike as _;
    let ts = DateTime::parse_from_rfc3339(text)?.with_timezone(&Utc);
    if (1..=9999).contains(&ts.year()) {
        return Ok(ts);
    }
    // An offset can carry a four-digit year out of range ("9999-12-31T23:00:00
    // -05:00"), and such an instant has no RFC 3339 text to be written back
    // as. chrono makes its out-of-range error only inside its parser, so ask
    // it for one.
    Err(chrono::format::Parsed::new()
        .set_year(i64::MAX)
        .expect_err("i64::MAX is no year"))
}

/// `serde(with)` module for `Option<DateTime<Utc>>` timestamps.
pub(crate) mod timestamp {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(
        value: &Option<DateTime<Utc>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(ts) => serializer.serialize_str(&format_timestamp(ts)),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<DateTime<Utc>>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(None),
            Some(text) => parse_timestamp(&text).map(Some).map_err(|err| {
                de::Error::custom(format_args!("invalid RFC 3339 timestamp {text:?}: {err}"))
            }),
        }
    }
}

/// `serde(deserialize_with)` for `int32` fields: a number, or a decimal string.
pub(crate) fn int32<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    deserializer.deserialize_any(Int32Visitor)
}

/// `serde(deserialize_with)` for `optional int32` fields.
pub(crate) fn opt_int32<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i32>, D::Error> {
    struct OptVisitor;
    impl<'de> Visitor<'de> for OptVisitor {
        type Value = Option<i32>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a 32-bit integer or null")
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            int32(d).map(Some)
        }
    }
    deserializer.deserialize_option(OptVisitor)
}

struct Int32Visitor;

impl Visitor<'_> for Int32Visitor {
    type Value = i32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a 32-bit integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i32, E> {
        i32::try_from(v).map_err(|_| E::custom(format_args!("{v} is out of range for int32")))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i32, E> {
        i32::try_from(v).map_err(|_| E::custom(format_args!("{v} is out of range for int32")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i32, E> {
        if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX) {
            #[allow(clippy::cast_possible_truncation)]
            Ok(v as i32)
        } else {
            Err(E::custom(format_args!("{v} is not a 32-bit integer")))
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i32, E> {
        v.trim()
            .parse::<i32>()
            .map_err(|_| E::invalid_type(de::Unexpected::Str(v), &self))
    }

    fn visit_unit<E: de::Error>(self) -> Result<i32, E> {
        Ok(0)
    }
}

/// Implements `Serialize`/`Deserialize` for a protobuf `oneof` wrapper held as a Rust enum.
///
/// The JSON form is an object with exactly one member key (the camelCase field
/// name, snake_case accepted); unknown keys are ignored; zero or two members are
/// an error naming the keys.
macro_rules! oneof_serde {
    ($ty:ident, $what:literal, { $($variant:ident => $json:literal $(| $snake:literal)?),+ $(,)? }) => {
        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(Some(1))?;
                match self {
                    $($ty::$variant(inner) => map.serialize_entry($json, inner)?,)+
                }
                map.end()
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct OneofVisitor;
                impl<'de> ::serde::de::Visitor<'de> for OneofVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", $what, " object with exactly one of: ", $($json, " "),+))
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$ty, A::Error> {
                        let mut found: Option<($ty, &'static str)> = None;
                        while let Some(key) = map.next_key::<crate::protojson::StrRef<'de>>()? {
                            let value = match &*key {
                                $($json $(| $snake)? => ($ty::$variant(map.next_value()?), $json),)+
                                _ => {
                                    map.next_value::<::serde::de::IgnoredAny>()?;
                                    continue;
                                }
                            };
                            if let Some((_, first)) = &found {
                                return Err(::serde::de::Error::custom(format_args!(
                                    concat!($what, " has both `{}` and `{}`; exactly one is allowed"),
                                    first, value.1
                                )));
                            }
                            found = Some(value);
                        }
                        found.map(|(v, _)| v).ok_or_else(|| {
                            ::serde::de::Error::custom(concat!(
                                $what, " has none of its members; expected exactly one of: ", $($json, " "),+
                            ))
                        })
                    }
                }
                deserializer.deserialize_map(OneofVisitor)
            }
        }
    };
}
pub(crate) use oneof_serde;

/// Implements ProtoJSON enum serde: the full proto name out; the name or the number in.
macro_rules! enum_serde {
    ($ty:ident, $what:literal, { $($variant:ident = $num:literal => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// The proto enum value name (also its ProtoJSON form).
            pub const fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name,)+ }
            }

            /// The proto enum number.
            pub const fn number(self) -> i32 {
                match self { $($ty::$variant => $num,)+ }
            }

            /// Looks up a value by its proto enum number.
            pub const fn from_number(number: i32) -> Option<Self> {
                match number { $($num => Some($ty::$variant),)+ _ => None }
            }

            /// Looks up a value by its proto enum name.
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some($ty::$variant),)+ _ => None }
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = crate::protojson::UnknownEnumValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_name(s)
                    .or_else(|| s.parse::<i32>().ok().and_then(Self::from_number))
                    .ok_or_else(|| crate::protojson::UnknownEnumValue { enum_name: $what, value: s.to_owned() })
            }
        }

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct EnumVisitor;
                impl ::serde::de::Visitor<'_> for EnumVisitor {
                    type Value = $ty;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str(concat!("a ", $what, " name (", $($name, " ",)+ ") or number"))
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<$ty, E> {
                        $ty::from_name(v).ok_or_else(|| E::custom(format_args!(
                            concat!("unknown ", $what, " value {:?}; expected one of: ", $($name, " "),+), v
                        )))
                    }
                    fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<$ty, E> {
                        i32::try_from(v).ok().and_then($ty::from_number).ok_or_else(|| {
                            E::custom(format_args!(concat!("unknown ", $what, " number {}"), v))
                        })
                    }
                    fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<$ty, E> {
                        i32::try_from(v).ok().and_then($ty::from_number).ok_or_else(|| {
                            E::custom(format_args!(concat!("unknown ", $what, " number {}"), v))
                        })
                    }
                    fn visit_unit<E: ::serde::de::Error>(self) -> Result<$ty, E> {
                        Ok($ty::default())
                    }
                }
                deserializer.deserialize_any(EnumVisitor)
            }
        }
    };
}
pub(crate) use enum_serde;

/// A string or number that names no value of a protocol enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {enum_name} value {value:?}")]
pub struct UnknownEnumValue {
    /// The enum's protocol name, such as `TaskState`.
    pub enum_name: &'static str,
    /// The text that was not recognised.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        // The fast formatter writes exactly what chrono's RFC 3339 formatter does.
        #[test]
        fn timestamps_format_as_chrono_does(
            millis in -100_000_000_000_000_i64..300_000_000_000_000,
            leap in proptest::bool::weighted(0.05),
        ) {
            let ts = DateTime::from_timestamp_millis(millis).unwrap();
            let ts = if leap {
                // A leap second: chrono keeps it as a nanosecond count past 1e9.
                use chrono::Timelike as _;
                ts.with_nanosecond(1_000_000_000 + ts.nanosecond() % 1_000_000_000).unwrap_or(ts)
            } else {
                ts
            };
            proptest::prop_assert_eq!(
                format_timestamp(&ts),
                ts.to_rfc3339_opts(SecondsFormat::Millis, true)
            );
        }

        // Found by the protojson_requests fuzz target: what is written reads
        // back as the same instant, whatever its precision.
        #[test]
        fn timestamps_read_back_as_written(
            seconds in -62_135_596_800_i64..253_402_300_800,
            nanos in proptest::prop_oneof![
                0_u32..1_000,
                (0_u32..1_000).prop_map(|n| n * 1_000),
                (0_u32..1_000).prop_map(|n| n * 1_000_000),
                0_u32..1_000_000_000,
            ],
        ) {
            let ts = DateTime::from_timestamp(seconds, nanos).unwrap();
            let text = format_timestamp(&ts);
            proptest::prop_assert_eq!(parse_timestamp(&text), Ok(ts), "{}", text);
        }
    }

    #[test]
    fn bytes_accept_every_base64_alphabet() {
        let data = [0xfbu8, 0xff, 0xbf, 0x01];
        for text in ["+/+/AQ==", "+/+/AQ", "-_-_AQ==", "-_-_AQ"] {
            assert_eq!(decode_bytes(text).unwrap(), data, "{text}");
        }
        assert_eq!(encode_bytes(&data), "+/+/AQ==");
        assert!(decode_bytes("not base64!").is_err());
    }

    #[test]
    fn timestamps_keep_their_precision_and_accept_any() {
        let ts = parse_timestamp("2025-11-09T10:30:00.123456789Z").unwrap();
        assert_eq!(format_timestamp(&ts), "2025-11-09T10:30:00.123456789Z");
        let ts = parse_timestamp("2025-11-09T10:30:00.1234Z").unwrap();
        assert_eq!(format_timestamp(&ts), "2025-11-09T10:30:00.123400Z");
        let ts = parse_timestamp("2025-11-09T10:30:00.1Z").unwrap();
        assert_eq!(format_timestamp(&ts), "2025-11-09T10:30:00.100Z");
        let ts = parse_timestamp("2025-11-09T10:30:00Z").unwrap();
        assert_eq!(format_timestamp(&ts), "2025-11-09T10:30:00.000Z");
        let ts = parse_timestamp("2025-11-09T12:30:00+02:00").unwrap();
        assert_eq!(format_timestamp(&ts), "2025-11-09T10:30:00.000Z");
    }

    #[test]
    fn timestamps_outside_years_1_to_9999_are_refused() {
        // Found by the protojson_requests fuzz target: the offset carried the
        // instant into year 10000, which was written as "+10000-01-01T..."
        // and could not be read back.
        for text in [
            "9999-12-31T23:59:59-05:00",
            "0001-01-01T00:00:00+00:01",
            "0000-06-01T00:00:00Z",
        ] {
            assert!(parse_timestamp(text).is_err(), "{text}");
        }
        for text in ["9999-12-31T23:59:59.999999999Z", "0001-01-01T00:00:00.000Z"] {
            let ts = parse_timestamp(text).unwrap();
            assert_eq!(format_timestamp(&ts), text);
        }
    }
}

/// A JSON document that does not match the expected message, with the path of
/// the offending field (such as `message.parts[0]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() || path == "." { String::new() } else { format!("{path}: ") })]
pub struct DecodeError {
    /// Dotted path of the field that failed (`.` or empty for the top level).
    pub path: String,
    /// What was wrong.
    pub message: String,
    /// Whether the text was not JSON at all (as opposed to JSON of the wrong shape).
    pub syntax: bool,
}

impl From<DecodeError> for crate::A2aError {
    fn from(err: DecodeError) -> Self {
        if err.syntax {
            crate::A2aError::parse_error(err.to_string())
        } else {
            crate::A2aError::invalid_params(err.to_string())
        }
    }
}

fn decode_error(err: serde_path_to_error::Error<serde_json::Error>) -> DecodeError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    let syntax = matches!(
        inner.classify(),
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof
    );
    // serde_json appends " at line L column C", which is noise for one-line bodies.
    let mut message = inner.to_string();
    if let Some(pos) = message.rfind(" at line ") {
        message.truncate(pos);
    }
    DecodeError {
        path,
        message,
        syntax,
    }
}

/// The text of a JSON document, or a syntax error if it is not UTF-8.
///
/// JSON text is UTF-8 throughout (RFC 8259, section 8.1), but serde_json
/// checks only the strings a reader keeps: a stray byte inside a member the
/// reader skips (an unknown field) would pass, and whether a body is JSON
/// would depend on the reader. Every reader of request bodies checks here
/// first, so all bindings give the same parse error for the same bytes (and
/// serde_json need not check each kept string again).
pub fn json_text(bytes: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(bytes).map_err(|err| DecodeError {
        path: String::new(),
        message: format!("invalid JSON: {err}"),
        syntax: true,
    })
}

/// Parses ProtoJSON bytes into `T`, reporting the path of any field that fails.
///
/// The common, valid case takes the plain (fast) path; only a failure is parsed
/// a second time with path tracking, to say where it went wrong.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    decode_seed(bytes, std::marker::PhantomData::<T>)
}

/// [`decode`] for a value that `seed` reads (such as a request whose type
/// depends on its method).
pub fn decode_seed<'de, S>(bytes: &'de [u8], seed: S) -> Result<S::Value, DecodeError>
where
    S: serde::de::DeserializeSeed<'de> + Clone,
{
    let text = json_text(bytes)?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    if let Ok(value) = seed.clone().deserialize(&mut deserializer) {
        if deserializer.end().is_ok() {
            return Ok(value);
        }
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let mut track = serde_path_to_error::Track::new();
    let value = seed
        .deserialize(serde_path_to_error::Deserializer::new(
            &mut deserializer,
            &mut track,
        ))
        .map_err(|err| decode_error(serde_path_to_error::Error::new(track.path(), err)))?;
    deserializer.end().map_err(|err| DecodeError {
        path: String::new(),
        message: err.to_string(),
        syntax: true,
    })?;
    Ok(value)
}

/// Converts an already-parsed JSON value into `T`, reporting the failing field's path.
pub fn decode_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(decode_error)
}
