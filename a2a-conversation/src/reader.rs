//! Reading the log: days, ranges, the last lines, and chains.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use crate::entry::{LogEntry, day_of_id};
use crate::log::{LogError, day_file, day_of_file, io_error};
use crate::{ARCHIVE_DIR, STREAM_DIR};

/// The most lines a chain follows (a guard against a cycle of parents).
const MAX_CHAIN: usize = 100_000;

/// The lines of one day.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DayRead {
    /// The lines that parsed, in file order.
    pub entries: Vec<LogEntry>,
    /// Lines that did not parse (a line torn by a crash), skipped.
    pub skipped: usize,
}

/// Reads a log folder (`data_dir/stream`), live, archived and gzipped days
/// alike; safe beside a writer that appends and archives.
#[derive(Debug, Clone)]
pub struct LogReader {
    dir: PathBuf,
}

impl LogReader {
    /// A reader of the log under `data_dir`.
    pub fn new(data_dir: impl AsRef<Path>) -> LogReader {
        LogReader {
            dir: data_dir.as_ref().join(STREAM_DIR),
        }
    }

    /// The lines of `day`; a day with no file has none.
    pub fn day(&self, day: NaiveDate) -> Result<DayRead, LogError> {
        let Some(bytes) = self.day_bytes(day)? else {
            return Ok(DayRead::default());
        };
        let mut read = DayRead::default();
        for line in lines(&bytes) {
            match serde_json::from_slice::<LogEntry>(line) {
                Ok(entry) => read.entries.push(entry),
                Err(err) => {
                    read.skipped += 1;
                    tracing::warn!(%day, error = %err, "skipping an unreadable conversation log line (torn by a crash?)");
                }
            }
        }
        Ok(read)
    }

    /// The lines of the days from `from` to `to`, both included, in order.
    pub fn range(&self, from: NaiveDate, to: NaiveDate) -> Result<DayRead, LogError> {
        let mut read = DayRead::default();
        for day in self.days()?.into_iter().filter(|d| (from..=to).contains(d)) {
            let one = self.day(day)?;
            read.entries.extend(one.entries);
            read.skipped += one.skipped;
        }
        Ok(read)
    }

    /// The last `count` lines, from the latest day with any.
    pub fn tail(&self, count: usize) -> Result<Vec<LogEntry>, LogError> {
        let mut tail = Vec::new();
        for day in self.days()?.into_iter().rev() {
            let mut entries = self.day(day)?.entries;
            let keep = count - tail.len();
            let start = entries.len().saturating_sub(keep);
            entries.drain(..start);
            entries.append(&mut tail);
            tail = entries;
            if tail.len() >= count {
                break;
            }
        }
        Ok(tail)
    }

    /// Every day that has a file, live or archived, in order.
    pub fn days(&self) -> Result<Vec<NaiveDate>, LogError> {
        let mut days = Vec::new();
        for dir in [self.dir.clone(), self.dir.join(ARCHIVE_DIR)] {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(io_error(format!("listing {}", dir.display()))(err)),
            };
            for entry in entries {
                let entry = entry.map_err(io_error(format!("listing {}", dir.display())))?;
                if let Some(day) = entry.file_name().to_str().and_then(day_of_file) {
                    days.push(day);
                }
            }
        }
        days.sort_unstable();
        days.dedup();
        Ok(days)
    }

    /// The chain of line `id`: the line, its parent, its parent's parent, and
    /// so on to the root, returned root first.
    ///
    /// A line's id names its day, so each step reads one day's file (each
    /// needed day once, found by id without parsing the other lines), never
    /// the whole log. A parent that is not in the log ends the chain there.
    pub fn chain(&self, id: &str) -> Result<Vec<LogEntry>, LogError> {
        let mut days: HashMap<NaiveDate, Option<Vec<u8>>> = HashMap::new();
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut next = Some(id.to_owned());
        while let Some(id) = next.take() {
            if !seen.insert(id.clone()) || chain.len() >= MAX_CHAIN {
                break;
            }
            let Some(day) = day_of_id(&id) else { break };
            let bytes = match days.entry(day) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(slot) => slot.insert(self.day_bytes(day)?),
            };
            let Some(bytes) = bytes else { break };
            let Some(entry) = find_line(bytes, &id) else {
                break;
            };
            next.clone_from(&entry.parent_id);
            chain.push(entry);
        }
        chain.reverse();
        Ok(chain)
    }

    /// The bytes of `day`'s file, wherever it is now (live, archived or
    /// gzipped); `None` if it has none.
    fn day_bytes(&self, day: NaiveDate) -> Result<Option<Vec<u8>>, LogError> {
        let live = day_file(&self.dir, day);
        let archived = day_file(&self.dir.join(ARCHIVE_DIR), day);
        let mut gzipped = archived.clone().into_os_string();
        gzipped.push(".gz");
        let gzipped = PathBuf::from(gzipped);
        // The archive moves a file along this order with renames; a second
        // pass finds it if it moved while the first one looked.
        for _pass in 0..2 {
            for path in [&live, &archived] {
                match std::fs::read(path) {
                    Ok(bytes) => return Ok(Some(bytes)),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                    Err(err) => return Err(io_error(format!("reading {}", path.display()))(err)),
                }
            }
            match std::fs::File::open(&gzipped) {
                Ok(file) => {
                    let mut bytes = Vec::new();
                    flate2::read::GzDecoder::new(file)
                        .read_to_end(&mut bytes)
                        .map_err(io_error(format!("reading {}", gzipped.display())))?;
                    return Ok(Some(bytes));
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(io_error(format!("reading {}", gzipped.display()))(err));
                }
            }
        }
        Ok(None)
    }
}

/// The non-empty lines of `bytes`.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
}

/// The line with id `id` in `bytes`: lines start with their id
/// (`{"id":"…"`), so only the matching line is parsed.
fn find_line(bytes: &[u8], id: &str) -> Option<LogEntry> {
    let needle = format!("{{\"id\":\"{id}\"");
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut from = 0;
    while let Some(found) = finder.find(&bytes[from..]) {
        let start = from + found;
        let at_line_start = start == 0 || bytes[start - 1] == b'\n';
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |n| start + n);
        if at_line_start {
            if let Ok(entry) = serde_json::from_slice::<LogEntry>(&bytes[start..end]) {
                return Some(entry);
            }
        }
        from = end.min(bytes.len());
        if from >= bytes.len() {
            break;
        }
    }
    None
}
