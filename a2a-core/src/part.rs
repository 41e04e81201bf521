//! `Part`: one piece of content in a message or artifact.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Metadata;
use crate::protojson::{StrRef, decode_bytes, encode_bytes};

/// One piece of content: text, raw bytes, a URL reference or structured data.
///
/// `filename`, `media_type` and `metadata` apply to every kind of content.
///
/// ```
/// use a2a_core::Part;
/// let hello = Part::text("hello");
/// let image = Part::raw(vec![0x89, b'P', b'N', b'G']).with_media_type("image/png").with_filename("a.png");
/// let report = Part::url("https://example.com/report.pdf").with_media_type("application/pdf");
/// let record = Part::data(serde_json::json!({"key": "value"}));
/// assert_eq!(hello.as_text(), Some("hello"));
/// # let _ = (image, report, record);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The content itself (the proto `oneof content`).
    pub content: PartContent,
    /// Extra information about this part.
    pub metadata: Option<Metadata>,
    /// A file name for the content, if it has one.
    pub filename: String,
    /// The media type of the content, such as `text/plain` or `image/png`.
    pub media_type: String,
}

/// The content of a [`Part`]: exactly one of four kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// Plain text.
    Text(String),
    /// Raw bytes (base64 in JSON).
    Raw(Vec<u8>),
    /// A URL that points to the content.
    Url(String),
    /// Any JSON value, including `null`.
    Data(Value),
}

impl PartContent {
    /// The ProtoJSON key of this content kind.
    pub const fn key(&self) -> &'static str {
        match self {
            PartContent::Text(_) => "text",
            PartContent::Raw(_) => "raw",
            PartContent::Url(_) => "url",
            PartContent::Data(_) => "data",
        }
    }
}

impl Part {
    /// A part holding the given content and nothing else.
    pub fn new(content: PartContent) -> Self {
        Part {
            content,
            metadata: None,
            filename: String::new(),
            media_type: String::new(),
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::new(PartContent::Text(text.into()))
    }

    /// A raw-bytes part.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Part::new(PartContent::Raw(bytes.into()))
    }

    /// A part that references its content by URL.
    pub fn url(url: impl Into<String>) -> Self {
        Part::new(PartContent::Url(url.into()))
    }

    /// A structured-data part. Any JSON value is allowed.
    pub fn data(data: impl Into<Value>) -> Self {
        Part::new(PartContent::Data(data.into()))
    }

    /// Sets the media type.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = media_type.into();
        self
    }

    /// Sets the file name.
    #[must_use]
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = filename.into();
        self
    }

    /// Sets the metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The bytes, if this is a raw part.
    pub fn as_raw(&self) -> Option<&[u8]> {
        match &self.content {
            PartContent::Raw(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The URL, if this is a URL part.
    pub fn as_url(&self) -> Option<&str> {
        match &self.content {
            PartContent::Url(url) => Some(url),
            _ => None,
        }
    }

    /// The JSON value, if this is a data part.
    pub fn as_data(&self) -> Option<&Value> {
        match &self.content {
            PartContent::Data(data) => Some(data),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 1
            + usize::from(self.metadata.is_some())
            + usize::from(!self.filename.is_empty())
            + usize::from(!self.media_type.is_empty());
        let mut map = serializer.serialize_map(Some(len))?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(bytes) => map.serialize_entry("raw", &encode_bytes(bytes))?,
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(data) => map.serialize_entry("data", data)?,
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if !self.filename.is_empty() {
            map.serialize_entry("filename", &self.filename)?;
        }
        if !self.media_type.is_empty() {
            map.serialize_entry("mediaType", &self.media_type)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartVisitor)
    }
}

struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Part;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Part object with exactly one of `text`, `raw`, `url`, `data`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Part, A::Error> {
        let mut content: Option<PartContent> = None;
        let mut metadata = None;
        let mut filename = String::new();
        let mut media_type = String::new();
        while let Some(key) = map.next_key::<StrRef<'de>>()? {
            let next = match &*key {
                "text" => PartContent::Text(map.next_value()?),
                "raw" => {
                    let text: StrRef<'de> = map.next_value()?;
                    let bytes = decode_bytes(&text).map_err(|err| {
                        de::Error::custom(format_args!("part field `raw` is not base64: {err}"))
                    })?;
                    PartContent::Raw(bytes)
                }
                "url" => PartContent::Url(map.next_value()?),
                "data" => PartContent::Data(map.next_value()?),
                "metadata" => {
                    metadata = map.next_value()?;
                    continue;
                }
                "filename" => {
                    filename = map.next_value::<Option<String>>()?.unwrap_or_default();
                    continue;
                }
                "mediaType" | "media_type" => {
                    media_type = map.next_value::<Option<String>>()?.unwrap_or_default();
                    continue;
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                    continue;
                }
            };
            if let Some(first) = &content {
                return Err(de::Error::custom(format_args!(
                    "part has both `{}` and `{}`; exactly one content field is allowed",
                    first.key(),
                    next.key()
                )));
            }
            content = Some(next);
        }
        let content = content.ok_or_else(|| {
            de::Error::custom(
                "part has no content; expected exactly one of `text`, `raw`, `url`, `data`",
            )
        })?;
        Ok(Part {
            content,
            metadata,
            filename,
            media_type,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_part_keeps_null() {
        let part: Part = serde_json::from_value(json!({"data": null})).unwrap();
        assert_eq!(part.content, PartContent::Data(Value::Null));
        assert_eq!(serde_json::to_value(&part).unwrap(), json!({"data": null}));
    }

    #[test]
    fn raw_is_padded_standard_base64_out() {
        let part = Part::raw(vec![0xfb, 0xff]).with_filename("x.bin");
        assert_eq!(
            serde_json::to_value(&part).unwrap(),
            json!({"raw": "+/8=", "filename": "x.bin"})
        );
        let back: Part =
            serde_json::from_value(json!({"raw": "-_8", "media_type": "a/b"})).unwrap();
        assert_eq!(back.as_raw(), Some(&[0xfb, 0xff][..]));
        assert_eq!(back.media_type, "a/b");
    }

    #[test]
    fn zero_or_two_content_keys_are_errors() {
        let err = serde_json::from_value::<Part>(json!({"text": "a", "url": "b"})).unwrap_err();
        assert!(err.to_string().contains("`text` and `url`"), "{err}");
        let err = serde_json::from_value::<Part>(json!({"mediaType": "text/plain"})).unwrap_err();
        assert!(err.to_string().contains("no content"), "{err}");
    }
}
