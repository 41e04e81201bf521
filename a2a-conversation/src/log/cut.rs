//! Lines over the log's length bound: their long strings are cut, each with a
//! marker saying how many bytes went, so that one huge message cannot make a
//! line no reader can hold.

use serde_json::Value;

use crate::entry::{Line, LogEntry};

/// The metadata key of a cut line: how many bytes were cut from it in all.
pub(crate) const CUT_BYTES_KEY: &str = "cutBytes";

/// Strings are never cut shorter than this (a marker is about as long).
const MIN_KEPT: usize = 64;

/// The line `line` (with id `id`) as an owned entry, for cutting.
pub(crate) fn owned(line: &Line<'_>, id: &str) -> LogEntry {
    LogEntry {
        id: id.to_owned(),
        t: line.t,
        from_agent: line.from_agent.to_owned(),
        to_agent: line.to_agent.map(str::to_owned),
        kind: line.kind,
        content: line.content.to_value(),
        parent_id: line.parent_id.map(str::to_owned),
        metadata: line
            .metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
            .collect(),
        node: None,
    }
}

/// Encodes `entry` into `out` (cleared first) within `max` bytes, cutting the
/// longest strings of its content and metadata as far as needed. Returns how
/// many bytes were cut. Slow, and only for lines already found too long.
pub(crate) fn encode_within(
    entry: &LogEntry,
    max: usize,
    out: &mut Vec<u8>,
) -> serde_json::Result<u64> {
    // Each round allows every string half as much as the last, until the
    // line fits; a line that still does not fit with its strings at the
    // minimum has its bulk elsewhere (a huge array of numbers, say) and
    // loses its content whole.
    let mut cap = max / 2;
    loop {
        let mut cut = entry.clone();
        let mut total = cut_strings(&mut cut.content, cap)
            + cut
                .metadata
                .values_mut()
                .map(|value| cut_strings(value, cap))
                .sum::<u64>();
        if cap <= MIN_KEPT {
            total += cut_everything(&mut cut, entry);
        }
        cut.metadata
            .insert(CUT_BYTES_KEY.to_owned(), Value::from(total));
        out.clear();
        cut.write_json(out)?;
        if out.len() <= max || cap <= MIN_KEPT {
            return Ok(total);
        }
        cap = (cap / 2).max(MIN_KEPT);
    }
}

/// Cuts every string in `value` longer than `cap` bytes; returns the bytes cut.
fn cut_strings(value: &mut Value, cap: usize) -> u64 {
    match value {
        Value::String(text) => cut_text(text, cap),
        Value::Array(items) => items.iter_mut().map(|v| cut_strings(v, cap)).sum(),
        Value::Object(fields) => fields.values_mut().map(|v| cut_strings(v, cap)).sum(),
        _ => 0,
    }
}

/// Cuts `text` to at most `cap` bytes (at a character boundary) followed by
/// the marker; returns the bytes cut.
fn cut_text(text: &mut String, cap: usize) -> u64 {
    if text.len() <= cap {
        return 0;
    }
    let mut keep = cap;
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    let cut = text.len() - keep;
    text.truncate(keep);
    text.push_str(&marker(cut));
    cut as u64
}

fn marker(cut: usize) -> String {
    format!("…[{cut} bytes cut]")
}

/// The last resort: the content and metadata replaced by markers, and the
/// names cut short. Returns the bytes cut (of the original).
fn cut_everything(cut: &mut LogEntry, original: &LogEntry) -> u64 {
    let mut total = 0;
    let content = original.content.to_string().len();
    cut.content = Value::String(format!("[content of {content} bytes cut]"));
    total += content as u64;
    let metadata = Value::Object(original.metadata.clone()).to_string().len();
    if metadata > 4 * MIN_KEPT {
        cut.metadata.clear();
        total += metadata as u64;
    }
    total += cut_text(&mut cut.from_agent, MIN_KEPT);
    if let Some(to) = cut.to_agent.as_mut() {
        total += cut_text(to, MIN_KEPT);
    }
    if let Some(parent) = cut.parent_id.as_mut() {
        total += cut_text(parent, MIN_KEPT);
    }
    total
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::entry::EntryType;

    fn entry(content: Value) -> LogEntry {
        LogEntry::new(
            chrono::Utc::now(),
            EntryType::Response,
            "beta",
            Some("alpha".into()),
            content,
        )
        .meta("taskId", "t-1")
    }

    #[test]
    fn a_long_text_is_cut_with_a_marker_and_the_line_fits() {
        let text = "é".repeat(300_000); // 600,000 bytes
        let original = entry(Value::String(text));
        let mut out = Vec::new();
        let cut = encode_within(&original, 100_000, &mut out).unwrap();
        assert!(out.len() <= 100_000, "{}", out.len());
        let back: LogEntry = serde_json::from_slice(&out).unwrap();
        let content = back.content_text();
        assert!(
            content.ends_with(&format!("…[{cut} bytes cut]")),
            "{content:.80}"
        );
        assert_eq!(back.metadata[CUT_BYTES_KEY], cut);
        assert_eq!(back.metadata["taskId"], "t-1");
        let kept = content.len() - marker(cut as usize).len();
        assert_eq!(kept as u64 + cut, 600_000);
    }

    #[test]
    fn strings_inside_data_parts_are_cut_where_they_are() {
        let original = entry(serde_json::json!([
            {"text": "see the data"},
            {"data": {"blob": "z".repeat(500_000), "small": "kept"}},
        ]));
        let mut out = Vec::new();
        let cut = encode_within(&original, 50_000, &mut out).unwrap();
        assert!(out.len() <= 50_000);
        let back: LogEntry = serde_json::from_slice(&out).unwrap();
        assert_eq!(back.content[0]["text"], "see the data");
        assert_eq!(back.content[1]["data"]["small"], "kept");
        let blob = back.content[1]["data"]["blob"].as_str().unwrap();
        assert!(blob.ends_with(&format!("…[{cut} bytes cut]")));
    }

    #[test]
    fn bulk_that_is_not_strings_goes_whole() {
        let numbers: Vec<u32> = (0..100_000).collect();
        let original = entry(serde_json::json!({ "numbers": numbers }));
        let mut out = Vec::new();
        let cut = encode_within(&original, 10_000, &mut out).unwrap();
        assert!(out.len() <= 10_000);
        let back: LogEntry = serde_json::from_slice(&out).unwrap();
        assert!(back.content_text().starts_with("[content of "), "{back:?}");
        assert!(cut > 500_000);
    }
}
