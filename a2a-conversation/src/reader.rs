//! Reading the log: days, ranges, the last lines, and chains.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};

use crate::entry::{LogEntry, day_of_id};
use crate::log::{LogError, day_file, io_error, parse_day_file};
use crate::{ARCHIVE_DIR, STREAM_DIR};

/// The most lines a chain follows (a guard against a cycle of parents).
const MAX_CHAIN: usize = 100_000;

/// The lines of one day.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DayRead {
    /// The lines that parsed: a single file's in file order; the files of
    /// several nodes (or folders) merged in time order, each file's lines
    /// staying in file order, lines of equal times in the order of their
    /// sources (see [`LogReader`]).
    pub entries: Vec<LogEntry>,
    /// Lines that did not parse (a line torn by a crash), skipped.
    pub skipped: usize,
}

/// Reads a log folder (`data_dir/stream`), live, archived and gzipped days
/// alike; safe beside writers that append and archive.
///
/// The log of a cluster is one record in several files: each node writes
/// its own daily files (`YYYY-MM-DD.<node>.jsonl`, see
/// [`LogConfig::node`](crate::LogConfig::node)), in one shared data
/// directory or each in its own. A reader of one data directory reads every
/// node's files there and a single server's (`YYYY-MM-DD.jsonl`); one of
/// several ([`LogReader::merged`]) reads all of theirs. The files of a day
/// are merged in time order (by each line's `t`); lines of equal times
/// come in the order of their sources: the data directories as given, in
/// each the single server's file, then the nodes' by name. A chain follows
/// its parents whichever file they are in.
#[derive(Debug, Clone)]
pub struct LogReader {
    /// The `stream` folders read, in order.
    dirs: Vec<PathBuf>,
}

impl LogReader {
    /// A reader of the log under `data_dir`: the single server's files and
    /// every node's.
    pub fn new(data_dir: impl AsRef<Path>) -> LogReader {
        LogReader::merged([data_dir])
    }

    /// A reader of the logs under several data directories (the nodes of a
    /// cluster that do not share one) as one log.
    pub fn merged<P: AsRef<Path>>(data_dirs: impl IntoIterator<Item = P>) -> LogReader {
        LogReader {
            dirs: data_dirs
                .into_iter()
                .map(|dir| dir.as_ref().join(STREAM_DIR))
                .collect(),
        }
    }

    /// The lines of `day`; a day with no file has none.
    pub fn day(&self, day: NaiveDate) -> Result<DayRead, LogError> {
        let sources = self.sources()?;
        self.day_of(&sources, day)
    }

    /// The lines of `day` from the files of `sources`.
    fn day_of(&self, sources: &[SourceKey], day: NaiveDate) -> Result<DayRead, LogError> {
        let mut read = DayRead::default();
        let mut files: Vec<Vec<LogEntry>> = Vec::new();
        for source in self.day_sources(sources, day)? {
            let mut entries = Vec::new();
            for line in lines(&source) {
                match serde_json::from_slice::<LogEntry>(line) {
                    Ok(entry) => entries.push(entry),
                    Err(err) => {
                        read.skipped += 1;
                        tracing::warn!(%day, error = %err, "skipping an unreadable conversation log line (torn by a crash?)");
                    }
                }
            }
            files.push(entries);
        }
        read.entries = merge_by_time(files);
        Ok(read)
    }

    /// The lines of the days from `from` to `to`, both included, in order.
    pub fn range(&self, from: NaiveDate, to: NaiveDate) -> Result<DayRead, LogError> {
        let sources = self.sources()?;
        let mut read = DayRead::default();
        for day in self.days()?.into_iter().filter(|d| (from..=to).contains(d)) {
            let one = self.day_of(&sources, day)?;
            read.entries.extend(one.entries);
            read.skipped += one.skipped;
        }
        Ok(read)
    }

    /// The last `count` lines (in time order), from the latest day with any.
    pub fn tail(&self, count: usize) -> Result<Vec<LogEntry>, LogError> {
        let sources = self.sources()?;
        let mut tail = Vec::new();
        for day in self.days()?.into_iter().rev() {
            if tail.len() >= count {
                break;
            }
            let mut entries = self.day_of(&sources, day)?.entries;
            let keep = count - tail.len();
            let start = entries.len().saturating_sub(keep);
            entries.drain(..start);
            entries.append(&mut tail);
            tail = entries;
        }
        Ok(tail)
    }

    /// Every day that has a file, live or archived, of any node, in order.
    pub fn days(&self) -> Result<Vec<NaiveDate>, LogError> {
        let mut days = BTreeSet::new();
        self.list(|_, name| {
            days.insert(name.day);
        })?;
        Ok(days.into_iter().collect())
    }

    /// The nodes whose files are in the log (live or archived), by name in
    /// their files ([`LogConfig::node`](crate::LogConfig::node) as a file
    /// name carries it), each once; a single server's files are not a node's.
    pub fn nodes(&self) -> Result<Vec<String>, LogError> {
        let mut nodes = BTreeSet::new();
        self.list(|_, name| {
            if let Some(tag) = name.tag {
                nodes.insert(tag.to_owned());
            }
        })?;
        Ok(nodes.into_iter().collect())
    }

    /// Calls `found` with each daily file's folder number and name, live
    /// and archived, in every folder.
    fn list(
        &self,
        mut found: impl FnMut(usize, crate::log::DayFileName<'_>),
    ) -> Result<(), LogError> {
        for (n, stream) in self.dirs.iter().enumerate() {
            for dir in [stream.clone(), stream.join(ARCHIVE_DIR)] {
                let entries = match std::fs::read_dir(&dir) {
                    Ok(entries) => entries,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(err) => return Err(io_error(format!("listing {}", dir.display()))(err)),
                };
                for entry in entries {
                    let entry = entry.map_err(io_error(format!("listing {}", dir.display())))?;
                    if let Some(name) = entry.file_name().to_str().and_then(parse_day_file) {
                        found(n, name);
                    }
                }
            }
        }
        Ok(())
    }

    /// Every writer of the log, in the order of lines of equal times: each
    /// folder's single server, then its nodes by name.
    fn sources(&self) -> Result<Vec<SourceKey>, LogError> {
        let mut tags: BTreeSet<(usize, String)> = BTreeSet::new();
        self.list(|n, name| {
            if let Some(tag) = name.tag {
                tags.insert((n, tag.to_owned()));
            }
        })?;
        let mut sources = Vec::new();
        for n in 0..self.dirs.len() {
            sources.push(SourceKey { dir: n, tag: None });
            sources.extend(
                tags.range((n, String::new())..)
                    .take_while(|(m, _)| *m == n)
                    .map(|(_, tag)| SourceKey {
                        dir: n,
                        tag: Some(tag.clone()),
                    }),
            );
        }
        Ok(sources)
    }

    /// The chain of line `id`: the line, its parent, its parent's parent, and
    /// so on to the root, returned root first.
    ///
    /// A line's id names its day, so each step reads one day's files (each
    /// needed day once, found by id without parsing the other lines), never
    /// the whole log. A parent that is not in the log ends the chain there.
    /// A parent may be in any node's file: a request from an agent on one
    /// node to an agent on another continues the caller's line. Should two
    /// nodes have written lines of the same id (ids are unique within a
    /// process, and only very likely across processes), the parent is the
    /// one on the child's node if there is one, else the latest one not
    /// after the child.
    pub fn chain(&self, id: &str) -> Result<Vec<LogEntry>, LogError> {
        let sources = self.sources()?;
        let mut days: HashMap<NaiveDate, Vec<Vec<u8>>> = HashMap::new();
        let mut chain: Vec<LogEntry> = Vec::new();
        let mut seen = HashSet::new();
        let mut next = Some(id.to_owned());
        while let Some(id) = next.take() {
            if !seen.insert(id.clone()) || chain.len() >= MAX_CHAIN {
                break;
            }
            let Some(day) = day_of_id(&id) else { break };
            let files = match days.entry(day) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(slot) => slot.insert(self.day_sources(&sources, day)?),
            };
            let mut found = files.iter().filter_map(|bytes| find_line(bytes, &id));
            let Some(first) = found.next() else { break };
            let entry = match (found.next(), chain.last()) {
                (None, _) | (_, None) => first,
                (Some(second), Some(child)) => {
                    let all = [first, second].into_iter().chain(found);
                    pick_parent(all, child)
                }
            };
            next.clone_from(&entry.parent_id);
            chain.push(entry);
        }
        chain.reverse();
        Ok(chain)
    }

    /// The files of `day` of each of `sources` that has one, read whole,
    /// in the order of `sources`.
    fn day_sources(&self, sources: &[SourceKey], day: NaiveDate) -> Result<Vec<Vec<u8>>, LogError> {
        let mut files = Vec::new();
        for source in sources {
            let stream = &self.dirs[source.dir];
            if let Some(bytes) = day_bytes(stream, day, source.tag.as_deref())? {
                files.push(bytes);
            }
        }
        Ok(files)
    }
}

/// A writer of the log: a folder (by number), and the node's tag there
/// (`None`: a single server).
#[derive(Debug, Clone)]
struct SourceKey {
    dir: usize,
    tag: Option<String>,
}

/// Of lines sharing an id, the likely parent of `child`: one on the
/// child's node, else the latest not after the child, else the first.
fn pick_parent(candidates: impl Iterator<Item = LogEntry>, child: &LogEntry) -> LogEntry {
    let candidates: Vec<LogEntry> = candidates.collect();
    let best = candidates
        .iter()
        .position(|c| c.node == child.node)
        .or_else(|| {
            candidates
                .iter()
                .enumerate()
                .filter(|(_, c)| c.t <= child.t)
                .max_by_key(|(_, c)| c.t)
                .map(|(n, _)| n)
        })
        .unwrap_or(0);
    candidates
        .into_iter()
        .nth(best)
        .unwrap_or_else(|| child.clone())
}

/// Merges files of lines, each in its own order, into one in time order:
/// each file's lines keep their order, and of lines of equal times the
/// earlier file's come first. One file comes back as it is.
pub(crate) fn merge_by_time(mut files: Vec<Vec<LogEntry>>) -> Vec<LogEntry> {
    files.retain(|file| !file.is_empty());
    if files.len() <= 1 {
        return files.pop().unwrap_or_default();
    }
    let total = files.iter().map(Vec::len).sum();
    let mut merged = Vec::with_capacity(total);
    let mut iters: Vec<std::vec::IntoIter<LogEntry>> =
        files.into_iter().map(Vec::into_iter).collect();
    // The head of each file, smallest (time, file) first.
    let mut heads: BinaryHeap<std::cmp::Reverse<(DateTime<Utc>, usize)>> = BinaryHeap::new();
    let mut pending: Vec<Option<LogEntry>> = Vec::with_capacity(iters.len());
    for (n, iter) in iters.iter_mut().enumerate() {
        let head = iter.next();
        if let Some(entry) = &head {
            heads.push(std::cmp::Reverse((entry.t, n)));
        }
        pending.push(head);
    }
    while let Some(std::cmp::Reverse((_, n))) = heads.pop() {
        if let Some(entry) = pending[n].take() {
            merged.push(entry);
        }
        if let Some(next) = iters[n].next() {
            heads.push(std::cmp::Reverse((next.t, n)));
            pending[n] = Some(next);
        }
    }
    merged
}

/// The bytes of `day`'s file of node `tag` (a single server's for `None`)
/// in the log folder `stream`, wherever it is now (live, archived or
/// gzipped); `None` if it has none.
fn day_bytes(
    stream: &Path,
    day: NaiveDate,
    tag: Option<&str>,
) -> Result<Option<Vec<u8>>, LogError> {
    let live = day_file(stream, day, tag);
    let archived = day_file(&stream.join(ARCHIVE_DIR), day, tag);
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
