//! Full-text search of the log through an index kept beside it.
//!
//! The index is a SQLite database (`log-search.sqlite` in the data directory)
//! with an FTS5 table over the text of every line. The log's files stay the
//! record: the index is derived from them, caught up with the lines written
//! since it was last used before each search, and rebuilt from scratch when
//! it is missing, of another version, or corrupt.
//!
//! Each daily file (a single server's, or each cluster node's: see
//! [`LogConfig::node`](crate::LogConfig::node)) is tracked by how many of
//! its bytes are indexed, so catching up reads only what was appended. A
//! file keeps its bytes when the log moves it to the archive and gzips it:
//! the index follows the move without reading it again (a gzip file states
//! its length in its trailer). A file that shrank or changed is indexed
//! again; a file that is gone leaves the index.
//!
//! A line's row id is its day (days since 1970) times 2³² plus its number
//! among the day's lines as they were indexed, so days come in row order:
//! the latest matches of a word come straight off the full-text index a
//! day at a time (within a day, sorted by time, since the files of several
//! nodes interleave), and a date range is a row id range.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Datelike as _, NaiveDate, Utc};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};

use crate::entry::{EntryType, LogEntry};
use crate::log::{LogError, day_file, io_error, parse_day_file};
use crate::{ARCHIVE_DIR, STREAM_DIR};

/// The index's file, in the data directory.
pub const SEARCH_INDEX_FILE: &str = "log-search.sqlite";

/// The layout of the index; an index of another version is rebuilt.
const SCHEMA_VERSION: &str = "2";

/// Lines indexed per transaction while catching up: bounds the memory and
/// the journal of a first build over a large log.
const LINES_PER_TRANSACTION: usize = 50_000;

/// Why a search failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The log's files could not be read.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The index could not be opened, written or queried (after a rebuild
    /// if it was corrupt).
    #[error("the log's search index {path}: {message}")]
    Index {
        /// The index's file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// What to find.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// The words to find, all of them, in any order and any case. Text in
    /// double quotes is a phrase; a word ending in `*` matches as a prefix.
    /// Anything else is taken literally: FTS5 syntax (`NEAR`, `-`, `:`,
    /// parentheses) has no effect.
    pub text: String,
    /// Only lines from or to this agent.
    pub agent: Option<String>,
    /// Only lines at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only lines before this time.
    pub before: Option<DateTime<Utc>>,
    /// Only lines of this type.
    pub kind: Option<EntryType>,
    /// At most this many lines (the latest matches); `None` for all.
    pub limit: Option<usize>,
}

impl SearchQuery {
    /// A query for `text`, with no filter and no limit.
    pub fn new(text: impl Into<String>) -> SearchQuery {
        SearchQuery {
            text: text.into(),
            ..SearchQuery::default()
        }
    }

    /// Sets [`SearchQuery::agent`].
    #[must_use]
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }

    /// Sets [`SearchQuery::since`].
    #[must_use]
    pub fn since(mut self, t: DateTime<Utc>) -> Self {
        self.since = Some(t);
        self
    }

    /// Sets [`SearchQuery::before`].
    #[must_use]
    pub fn before(mut self, t: DateTime<Utc>) -> Self {
        self.before = Some(t);
        self
    }

    /// Sets [`SearchQuery::kind`].
    #[must_use]
    pub fn kind(mut self, kind: EntryType) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Sets [`SearchQuery::limit`].
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// One line found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The line.
    pub entry: LogEntry,
    /// The line as stored in the log (JSON, without the newline).
    pub json: String,
}

/// The lines a search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchResult {
    /// The matches, in the log's order (the latest ones, if limited).
    pub lines: Vec<Found>,
    /// Earlier matches were left out by the limit.
    pub more: bool,
}

/// What catching up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Update {
    /// The index was (re)built from nothing: it was missing, of another
    /// version, or corrupt.
    pub rebuilt: bool,
    /// Lines added to the index.
    pub lines_added: u64,
    /// Lines of the log that did not parse (torn by a crash), skipped.
    pub skipped: u64,
    /// Daily files indexed again from their start (the file shrank or
    /// changed).
    pub days_reindexed: u64,
    /// Daily files dropped from the index (the file is gone).
    pub days_dropped: u64,
}

/// The search index of a data directory's log.
#[derive(Debug)]
pub struct LogSearch {
    conn: Connection,
    path: PathBuf,
    stream: PathBuf,
    /// The index was created from nothing when opened, and the next
    /// [`Update`] says so.
    fresh: bool,
}

/// Where a day's file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Live,
    Archived,
    Gzipped,
}

impl Place {
    fn as_str(self) -> &'static str {
        match self {
            Place::Live => "live",
            Place::Archived => "archived",
            Place::Gzipped => "gzip",
        }
    }
}

/// What the index knows of a daily file.
#[derive(Debug, Clone, Copy)]
struct DayState {
    place: Option<Place>,
    /// Bytes of the (uncompressed) file indexed.
    bytes: u64,
    /// The gzip file's size when the file was last seen gzipped.
    gz_size: Option<u64>,
}

/// A daily file on disk: its day, its node's tag (`""` for a single
/// server's), and where it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct DiskFile {
    day: NaiveDate,
    tag: String,
    place: Place,
}

impl LogSearch {
    /// Opens the index of the log under `data_dir`, creating it if missing
    /// and rebuilding it if it is corrupt or of another version. The index
    /// is not caught up yet: [`LogSearch::search`] and
    /// [`LogSearch::update`] do that.
    pub fn open(data_dir: impl AsRef<Path>) -> Result<LogSearch, SearchError> {
        let data_dir = data_dir.as_ref();
        let path = data_dir.join(SEARCH_INDEX_FILE);
        let stream = data_dir.join(STREAM_DIR);
        match open_index(&path) {
            Ok((conn, fresh)) => Ok(LogSearch {
                conn,
                path,
                stream,
                fresh,
            }),
            Err(err) if is_damage(&err) => {
                tracing::warn!(path = %path.display(), error = %err, "the log's search index is unreadable; rebuilding it");
                remove_index(&path).map_err(|e| index_error(&path, &e))?;
                let (conn, _) = open_index(&path).map_err(|e| index_error(&path, &e))?;
                Ok(LogSearch {
                    conn,
                    path,
                    stream,
                    fresh: true,
                })
            }
            Err(err) => Err(index_error(&path, &err)),
        }
    }

    /// The index's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Catches the index up with the log's files: indexes lines appended
    /// since the last update, follows days moved to the archive, and drops
    /// days whose files are gone. A corrupt index is rebuilt.
    pub fn update(&mut self) -> Result<Update, SearchError> {
        let mut update = self.with_rebuild(Self::catch_up)?;
        update.rebuilt |= std::mem::take(&mut self.fresh);
        Ok(update)
    }

    /// Catches up (as [`LogSearch::update`]) and finds the lines matching
    /// `query`.
    pub fn search(&mut self, query: &SearchQuery) -> Result<SearchResult, SearchError> {
        self.update()?;
        self.with_rebuild(|this| {
            // Rebuilt while searching: the new index must catch up first.
            if std::mem::take(&mut this.fresh) {
                this.catch_up()?;
            }
            this.find(query)
        })
    }

    /// Searches several logs as one: the data directories of cluster nodes
    /// that do not share one, each with its own index (caught up as
    /// [`LogSearch::search`] does). The matches are merged in time order
    /// (lines of equal times in the order of `indexes`), and the limit
    /// keeps the latest of them all.
    pub fn search_all(
        indexes: &mut [LogSearch],
        query: &SearchQuery,
    ) -> Result<SearchResult, SearchError> {
        let mut files = Vec::with_capacity(indexes.len());
        let mut more = false;
        for index in indexes.iter_mut() {
            let found = index.search(query)?;
            more |= found.more;
            files.push(found.lines);
        }
        let mut heads: Vec<std::iter::Peekable<std::vec::IntoIter<Found>>> = files
            .into_iter()
            .map(|lines| lines.into_iter().peekable())
            .collect();
        let mut lines = Vec::new();
        loop {
            // The earliest head; the first index's at equal times.
            let next = heads
                .iter_mut()
                .enumerate()
                .filter_map(|(n, head)| Some((head.peek()?.entry.t, n)))
                .min();
            let Some((_, n)) = next else { break };
            lines.extend(heads[n].next());
        }
        if let Some(limit) = query.limit {
            more |= lines.len() > limit;
            lines.drain(..lines.len().saturating_sub(limit));
        }
        Ok(SearchResult { lines, more })
    }

    /// Runs `work`; if it finds the index damaged, rebuilds the index from
    /// nothing and runs it once more.
    fn with_rebuild<T>(
        &mut self,
        work: impl Fn(&mut Self) -> Result<T, Failure>,
    ) -> Result<T, SearchError> {
        match work(self) {
            Ok(value) => Ok(value),
            Err(Failure::Index(err)) if is_damage(&err) => {
                tracing::warn!(path = %self.path.display(), error = %err, "the log's search index is corrupt; rebuilding it");
                self.rebuild()?;
                work(self).map_err(|e| e.into_search(&self.path))
            }
            Err(err) => Err(err.into_search(&self.path)),
        }
    }

    /// Deletes the index's files and starts an empty index.
    fn rebuild(&mut self) -> Result<(), SearchError> {
        let path = self.path.clone();
        // The old connection must go before its files do.
        let placeholder = Connection::open_in_memory().map_err(|e| index_error(&path, &e))?;
        drop(std::mem::replace(&mut self.conn, placeholder));
        remove_index(&path).map_err(|e| index_error(&path, &e))?;
        let (conn, _) = open_index(&path).map_err(|e| index_error(&path, &e))?;
        self.conn = conn;
        self.fresh = true;
        Ok(())
    }

    fn catch_up(&mut self) -> Result<Update, Failure> {
        let mut update = Update::default();
        let on_disk = self.files_on_disk()?;
        let known: Vec<(i64, String)> = {
            let mut stmt = self.conn.prepare_cached("SELECT day, node FROM file")?;
            let rows = stmt.query_map([], |row| Ok((row.get::<_, i64>(0)?, row.get(1)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        for (day, tag) in known {
            let gone = on_disk
                .binary_search_by(|f| (day_number(f.day), f.tag.as_str()).cmp(&(day, &tag)))
                .is_err();
            if gone {
                let tx = self
                    .conn
                    .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                drop_file(&tx, day, &tag)?;
                tx.commit()?;
                update.days_dropped += 1;
            }
        }
        for file in &on_disk {
            self.catch_up_file(file, &mut update)?;
        }
        Ok(update)
    }

    /// Every daily file, and where it is (the first of live, archived,
    /// gzipped, as a reader looks), by day and node.
    fn files_on_disk(&self) -> Result<Vec<DiskFile>, Failure> {
        let mut files: Vec<DiskFile> = Vec::new();
        let archive = self.stream.join(ARCHIVE_DIR);
        for dir in [&self.stream, &archive] {
            let entries = match std::fs::read_dir(dir) {
                Ok(entries) => entries,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                Err(err) => return Err(io_error(format!("listing {}", dir.display()))(err).into()),
            };
            for entry in entries {
                let entry = entry.map_err(io_error(format!("listing {}", dir.display())))?;
                let name = entry.file_name();
                let Some(name) = name.to_str().and_then(parse_day_file) else {
                    continue;
                };
                let place = match (dir == &self.stream, name.gzipped) {
                    (true, false) => Place::Live,
                    (false, false) => Place::Archived,
                    (_, true) => Place::Gzipped,
                };
                files.push(DiskFile {
                    day: name.day,
                    tag: name.tag.unwrap_or_default().to_owned(),
                    place,
                });
            }
        }
        files.sort_unstable();
        files.dedup_by(|later, first| (later.day, &later.tag) == (first.day, &first.tag));
        Ok(files)
    }

    /// Indexes what the index lacks of a daily file.
    fn catch_up_file(&mut self, file: &DiskFile, update: &mut Update) -> Result<(), Failure> {
        let place = file.place;
        let number = day_number(file.day);
        let tag = file.tag.as_str();
        let known = self.file_state(number, tag)?;
        let path = self.file_path(file.day, tag, place);
        let Some(size) = file_size(&path)? else {
            // Moved on (archived or gzipped) since the listing: the next
            // update finds it in its new place.
            return Ok(());
        };
        let (bytes, from) = match place {
            Place::Live | Place::Archived => {
                if known.place.is_some() && known.bytes == size {
                    if known.place != Some(place) {
                        self.set_place(number, tag, place, None)?;
                    }
                    return Ok(());
                }
                // The indexed part must still be the file's beginning: the
                // file is longer and a line ends where the index stopped.
                let from = if known.bytes < size && ends_a_line(&path, known.bytes)? {
                    known.bytes
                } else {
                    0
                };
                let Some(bytes) = read_from(&path, place, from)? else {
                    return Ok(());
                };
                (bytes, from)
            }
            Place::Gzipped => {
                if known.place == Some(Place::Gzipped) && known.gz_size == Some(size) {
                    return Ok(());
                }
                // Gzipping keeps the bytes: a file indexed to its end before
                // it was gzipped needs no reading, only its new place.
                if known.place.is_some_and(|p| p != Place::Gzipped)
                    && gzip_length(&path)? == Some(known.bytes as u32)
                {
                    self.set_place(number, tag, place, Some(size))?;
                    return Ok(());
                }
                let Some(mut bytes) = read_from(&path, place, 0)? else {
                    return Ok(());
                };
                let at = usize::try_from(known.bytes).unwrap_or(usize::MAX);
                let continues = at == 0 || bytes.get(at - 1) == Some(&b'\n');
                if continues {
                    bytes.drain(..at);
                    (bytes, known.bytes)
                } else {
                    (bytes, 0)
                }
            }
        };
        let restart = known.place.is_some() && from == 0;
        update.days_reindexed += u64::from(restart);
        let gz_size = (place == Place::Gzipped).then_some(size);
        let target = DayTarget {
            number,
            tag,
            place,
            gz_size,
        };
        self.index_lines(target, known, restart, &bytes, update)
    }

    /// Indexes the whole lines of `bytes` (what follows `known.bytes` in the
    /// day's file, or the whole file if `restart`), in transactions of
    /// [`LINES_PER_TRANSACTION`] lines, each recording how far the day is
    /// indexed.
    ///
    /// Each transaction first checks that the index still holds what this
    /// update read: another process catching up the same day at the same
    /// time gets there first, and this one leaves the day to it.
    fn index_lines(
        &mut self,
        target: DayTarget<'_>,
        known: DayState,
        restart: bool,
        bytes: &[u8],
        update: &mut Update,
    ) -> Result<(), Failure> {
        // A last line without its newline is still being written (or was
        // torn): it waits for the next update.
        let whole = memchr::memrchr(b'\n', bytes).map_or(0, |at| at + 1);
        let mut rest = &bytes[..whole];
        if rest.is_empty() && !restart {
            // Nothing new, but the day may have moved (a gzip file written
            // again): noted, so the next update does not read it again.
            if known.place.is_some() {
                self.set_place(target.number, target.tag, target.place, target.gz_size)?;
            }
            return Ok(());
        }
        let mut state = known;
        let mut first = true;
        let mut text = String::new();
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = file_state_in(&tx, target.number, target.tag)?;
            if (now.place.is_some(), now.bytes) != (state.place.is_some(), state.bytes) {
                return Ok(());
            }
            if first && restart {
                drop_file(&tx, target.number, target.tag)?;
                state = DayState::empty();
            }
            first = false;
            // The day's next line number: other files of the day (other
            // nodes') take numbers from the same count.
            let mut lines: i64 = tx
                .query_row(
                    "SELECT lines FROM day WHERE day = ?1",
                    [target.number],
                    |row| row.get(0),
                )
                .optional()?
                .unwrap_or(0);
            {
                let mut insert_line = tx.prepare_cached(
                    "INSERT INTO line (id, t, kind, from_agent, to_agent, node, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                )?;
                let mut insert_text =
                    tx.prepare_cached("INSERT INTO line_text (rowid, text) VALUES (?1, ?2)")?;
                let mut count = 0;
                while count < LINES_PER_TRANSACTION && !rest.is_empty() {
                    let end = memchr::memchr(b'\n', rest).map_or(rest.len(), |at| at + 1);
                    let (line, after) = rest.split_at(end);
                    rest = after;
                    state.bytes += line.len() as u64;
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let parsed = std::str::from_utf8(line).ok().and_then(|json| {
                        Some((json, serde_json::from_str::<LogEntry>(json).ok()?))
                    });
                    let Some((json, entry)) = parsed else {
                        update.skipped += 1;
                        continue;
                    };
                    let id = target.number * (1 << 32) + lines;
                    lines += 1;
                    insert_line.execute(params![
                        id,
                        entry.t.timestamp_micros(),
                        entry.kind.as_str(),
                        entry.from_agent,
                        entry.to_agent,
                        target.tag,
                        json,
                    ])?;
                    text.clear();
                    searchable_text(&entry.content, &mut text);
                    insert_text.execute(params![id, text])?;
                    count += 1;
                    update.lines_added += 1;
                }
            }
            state.place = Some(target.place);
            tx.execute(
                "INSERT INTO file (day, node, place, bytes, gz_size) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (day, node) DO UPDATE SET place = excluded.place,
                   bytes = excluded.bytes, gz_size = excluded.gz_size",
                params![
                    target.number,
                    target.tag,
                    target.place.as_str(),
                    state.bytes as i64,
                    target.gz_size.map(|s| s as i64)
                ],
            )?;
            tx.execute(
                "INSERT INTO day (day, lines) VALUES (?1, ?2)
                 ON CONFLICT (day) DO UPDATE SET lines = excluded.lines",
                params![target.number, lines],
            )?;
            tx.commit()?;
            if rest.is_empty() {
                return Ok(());
            }
        }
    }

    fn file_state(&self, number: i64, tag: &str) -> Result<DayState, Failure> {
        Ok(file_state_in(&self.conn, number, tag)?)
    }

    fn set_place(
        &self,
        number: i64,
        tag: &str,
        place: Place,
        gz_size: Option<u64>,
    ) -> Result<(), Failure> {
        self.conn.execute(
            "UPDATE file SET place = ?3, gz_size = ?4 WHERE day = ?1 AND node = ?2",
            params![number, tag, place.as_str(), gz_size.map(|s| s as i64)],
        )?;
        Ok(())
    }

    fn file_path(&self, day: NaiveDate, tag: &str, place: Place) -> PathBuf {
        let tag = Some(tag).filter(|t| !t.is_empty());
        match place {
            Place::Live => day_file(&self.stream, day, tag),
            Place::Archived => day_file(&self.stream.join(ARCHIVE_DIR), day, tag),
            Place::Gzipped => {
                let mut name = day_file(&self.stream.join(ARCHIVE_DIR), day, tag).into_os_string();
                name.push(".gz");
                PathBuf::from(name)
            }
        }
    }

    fn find(&mut self, query: &SearchQuery) -> Result<SearchResult, Failure> {
        let Some(expression) = match_expression(&query.text) else {
            return Ok(SearchResult::default());
        };
        // The time bounds narrow the row ids to their days first (cheap in
        // FTS5), then the lines' own times decide at the edges.
        let low = query
            .since
            .map_or(i64::MIN, |t| day_number(t.date_naive()) * (1 << 32));
        let high = query.before.map_or(i64::MAX, |t| {
            (day_number(t.date_naive()) + 1) * (1 << 32) - 1
        });
        let since = query.since.map_or(i64::MIN, |t| t.timestamp_micros());
        let before = query.before.map_or(i64::MAX, |t| t.timestamp_micros());
        let mut stmt = self.conn.prepare_cached(
            "SELECT line.id, line.t, line.node, line.json
             FROM line_text JOIN line ON line.id = line_text.rowid
             WHERE line_text MATCH ?1 AND line_text.rowid BETWEEN ?2 AND ?3
               AND line.t >= ?4 AND line.t < ?5
               AND (?6 IS NULL OR line.from_agent = ?6 OR line.to_agent = ?6)
               AND (?7 IS NULL OR line.kind = ?7)
             ORDER BY line_text.rowid DESC",
        )?;
        let mut rows = stmt.query(params![
            expression,
            low,
            high,
            since,
            before,
            query.agent,
            query.kind.map(EntryType::as_str),
        ])?;
        // Days come latest first. Within a day, a single file's lines are
        // in row order; the files of several nodes interleave, so a day of
        // several files is read whole before the limit is applied.
        let mut matches: Vec<Match> = Vec::new();
        let mut limit_day = None;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            let day = id >> 32;
            if limit_day.is_some_and(|limit_day| day < limit_day) {
                break;
            }
            matches.push(Match {
                day,
                t: row.get(1)?,
                node: row.get(2)?,
                json: row.get(3)?,
            });
            if limit_day.is_none() && query.limit.is_some_and(|n| matches.len() > n) {
                let files: i64 = self.conn.query_row(
                    "SELECT count(*) FROM file WHERE day = ?1",
                    [day],
                    |row| row.get(0),
                )?;
                if files <= 1 {
                    break;
                }
                limit_day = Some(day);
            }
        }
        matches.reverse();
        let mut matches = merge_days(matches);
        let more = query.limit.is_some_and(|n| matches.len() > n);
        if let Some(n) = query.limit {
            matches.drain(..matches.len().saturating_sub(n));
        }
        let lines = matches
            .into_iter()
            .filter_map(|found| {
                let entry = serde_json::from_str::<LogEntry>(&found.json).ok()?;
                Some(Found {
                    entry,
                    json: found.json,
                })
            })
            .collect();
        Ok(SearchResult { lines, more })
    }
}

/// A line found, before it is parsed.
#[derive(Debug)]
struct Match {
    /// Its day's number.
    day: i64,
    /// Its time, in microseconds.
    t: i64,
    /// Its file's node tag (`""`: a single server's).
    node: String,
    json: String,
}

/// Matches in row order, each day's lines as the reader has them: a
/// single file's in file order, the files of several nodes merged by time
/// (each file's lines in its own order; equal times by node, the single
/// server's first), as [`LogReader`](crate::LogReader) merges them.
fn merge_days(matches: Vec<Match>) -> Vec<Match> {
    let mut merged = Vec::with_capacity(matches.len());
    let mut rest = matches.into_iter().peekable();
    while let Some(first) = rest.next() {
        let day = first.day;
        let mut files: std::collections::BTreeMap<String, std::collections::VecDeque<Match>> =
            std::collections::BTreeMap::new();
        files
            .entry(first.node.clone())
            .or_default()
            .push_back(first);
        while let Some(next) = rest.next_if(|m| m.day == day) {
            files.entry(next.node.clone()).or_default().push_back(next);
        }
        let mut files: Vec<_> = files.into_values().collect();
        loop {
            let earliest = files
                .iter()
                .enumerate()
                .filter_map(|(n, file)| Some((file.front()?.t, n)))
                .min();
            let Some((_, n)) = earliest else { break };
            merged.extend(files[n].pop_front());
        }
    }
    merged
}

/// Where a daily file's lines go in the index.
#[derive(Debug, Clone, Copy)]
struct DayTarget<'a> {
    number: i64,
    /// The node's tag, `""` for a single server.
    tag: &'a str,
    place: Place,
    gz_size: Option<u64>,
}

/// What the index holds of the file of day `number` and node `tag`.
fn file_state_in(conn: &Connection, number: i64, tag: &str) -> Result<DayState, rusqlite::Error> {
    let mut stmt =
        conn.prepare_cached("SELECT place, bytes, gz_size FROM file WHERE day = ?1 AND node = ?2")?;
    let row = stmt
        .query_row(params![number, tag], |row| {
            Ok(DayState {
                place: match row.get_ref(0)?.as_str()? {
                    "live" => Some(Place::Live),
                    "archived" => Some(Place::Archived),
                    "gzip" => Some(Place::Gzipped),
                    _ => None,
                },
                bytes: row.get::<_, i64>(1)?.max(0) as u64,
                gz_size: row.get::<_, Option<i64>>(2)?.map(|s| s.max(0) as u64),
            })
        })
        .optional()?;
    Ok(row.unwrap_or(DayState::empty()))
}

impl DayState {
    fn empty() -> DayState {
        DayState {
            place: None,
            bytes: 0,
            gz_size: None,
        }
    }
}

/// A failure inside the index's work, before it is told apart (damage is
/// repaired by a rebuild; the rest is reported).
#[derive(Debug)]
enum Failure {
    Index(rusqlite::Error),
    Log(LogError),
}

impl From<rusqlite::Error> for Failure {
    fn from(err: rusqlite::Error) -> Self {
        Failure::Index(err)
    }
}

impl From<LogError> for Failure {
    fn from(err: LogError) -> Self {
        Failure::Log(err)
    }
}

impl Failure {
    fn into_search(self, path: &Path) -> SearchError {
        match self {
            Failure::Index(err) => index_error(path, &err),
            Failure::Log(err) => SearchError::Log(err),
        }
    }
}

fn index_error(path: &Path, err: &dyn std::fmt::Display) -> SearchError {
    SearchError::Index {
        path: path.to_owned(),
        message: err.to_string(),
    }
}

/// Whether `err` says the index's file is damaged or not an index at all
/// (repaired by rebuilding it), rather than busy, full or unwritable.
fn is_damage(err: &rusqlite::Error) -> bool {
    match err {
        rusqlite::Error::SqliteFailure(e, _) => {
            matches!(e.code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
        }
        // An index of another version, or a file with other tables in it.
        rusqlite::Error::QueryReturnedNoRows | rusqlite::Error::InvalidColumnType(..) => true,
        _ => false,
    }
}

/// Opens (creating if missing) the index at `path`; whether it was created.
/// An index of another version is an error that [`is_damage`] accepts.
fn open_index(path: &Path) -> Result<(Connection, bool), rusqlite::Error> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    // Readers go on while another process catches the index up.
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    // A bigger page cache than SQLite's 2 MiB default keeps FTS5's merges
    // of a first build over a large log in memory.
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA cache_size = -65536")?;
    let tables: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        [],
        |row| row.get(0),
    )?;
    if tables == 0 {
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS day (day INTEGER PRIMARY KEY, lines INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS file (
                 day INTEGER NOT NULL, node TEXT NOT NULL, place TEXT NOT NULL,
                 bytes INTEGER NOT NULL, gz_size INTEGER, PRIMARY KEY (day, node));
             CREATE TABLE IF NOT EXISTS line (
                 id INTEGER PRIMARY KEY, t INTEGER NOT NULL, kind TEXT NOT NULL,
                 from_agent TEXT NOT NULL, to_agent TEXT, node TEXT NOT NULL,
                 json TEXT NOT NULL);
             CREATE VIRTUAL TABLE IF NOT EXISTS line_text USING fts5(
                 text, content = '', contentless_delete = 1,
                 tokenize = 'unicode61 remove_diacritics 2');
             INSERT OR IGNORE INTO meta (key, value) VALUES ('version', '{SCHEMA_VERSION}');
             COMMIT;"
        ))?;
        return Ok((conn, true));
    }
    let version: String =
        conn.query_row("SELECT value FROM meta WHERE key = 'version'", [], |row| {
            row.get(0)
        })?;
    if version != SCHEMA_VERSION {
        return Err(rusqlite::Error::QueryReturnedNoRows);
    }
    Ok((conn, false))
}

/// Removes the index's file and SQLite's files beside it.
fn remove_index(path: &Path) -> std::io::Result<()> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(PathBuf::from(name)) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Removes a daily file's lines and its record from the index (the day's
/// count of line numbers goes on, so numbers are never reused).
fn drop_file(conn: &Connection, number: i64, tag: &str) -> Result<(), rusqlite::Error> {
    let (low, high) = (number * (1 << 32), (number + 1) * (1 << 32) - 1);
    conn.execute(
        "DELETE FROM line_text WHERE rowid IN
           (SELECT id FROM line WHERE id BETWEEN ?1 AND ?2 AND node = ?3)",
        params![low, high, tag],
    )?;
    conn.execute(
        "DELETE FROM line WHERE id BETWEEN ?1 AND ?2 AND node = ?3",
        params![low, high, tag],
    )?;
    conn.execute(
        "DELETE FROM file WHERE day = ?1 AND node = ?2",
        params![number, tag],
    )?;
    Ok(())
}

/// Days since 1970-01-01.
fn day_number(day: NaiveDate) -> i64 {
    i64::from(day.num_days_from_ce() - 719_163)
}

fn file_size(path: &Path) -> Result<Option<u64>, LogError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(meta.len())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_error(format!("reading {}", path.display()))(err)),
    }
}

/// Whether the byte before `at` in `path` ends a line (so the indexed part
/// is still the file's beginning, and what follows starts a line).
fn ends_a_line(path: &Path, at: u64) -> Result<bool, LogError> {
    if at == 0 {
        return Ok(true);
    }
    let context = || format!("reading {}", path.display());
    let mut file = File::open(path).map_err(io_error(context()))?;
    file.seek(SeekFrom::Start(at - 1))
        .map_err(io_error(context()))?;
    let mut last = [0u8; 1];
    match file.read_exact(&mut last) {
        Ok(()) => Ok(last[0] == b'\n'),
        Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(err) => Err(io_error(context())(err)),
    }
}

/// The uncompressed length (modulo 2³²) a gzip file states in its trailer.
fn gzip_length(path: &Path) -> Result<Option<u32>, LogError> {
    let context = || format!("reading {}", path.display());
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error(context())(err)),
    };
    if file.seek(SeekFrom::End(-4)).is_err() {
        return Ok(None);
    }
    let mut trailer = [0u8; 4];
    file.read_exact(&mut trailer).map_err(io_error(context()))?;
    Ok(Some(u32::from_le_bytes(trailer)))
}

/// The bytes of a day's file from `start` (a gzipped file whole); `None` if
/// it moved away meanwhile.
fn read_from(path: &Path, place: Place, start: u64) -> Result<Option<Vec<u8>>, LogError> {
    let context = || format!("reading {}", path.display());
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error(context())(err)),
    };
    let mut bytes = Vec::new();
    if place == Place::Gzipped {
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut bytes)
            .map_err(io_error(context()))?;
    } else {
        file.seek(SeekFrom::Start(start))
            .map_err(io_error(context()))?;
        file.read_to_end(&mut bytes).map_err(io_error(context()))?;
    }
    Ok(Some(bytes))
}

/// The words of a line's content: its text, or the strings in a message's
/// parts (not the JSON's keys and punctuation).
fn searchable_text(content: &serde_json::Value, out: &mut String) {
    match content {
        serde_json::Value::String(text) => {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(text);
        }
        serde_json::Value::Array(items) => {
            for item in items {
                searchable_text(item, out);
            }
        }
        serde_json::Value::Object(fields) => {
            for value in fields.values() {
                searchable_text(value, out);
            }
        }
        serde_json::Value::Number(n) => {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&n.to_string());
        }
        serde_json::Value::Bool(_) | serde_json::Value::Null => {}
    }
}

/// The FTS5 expression for a person's search text: each word, and each
/// double-quoted phrase, becomes a quoted FTS5 string (so no character of
/// theirs is FTS5 syntax), all of them required. A word ending in `*` is a
/// prefix. `None` if the text has no word to search for.
fn match_expression(text: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut push = |chunk: &str, phrase: bool| {
        let (stem, prefix) = match chunk.strip_suffix('*') {
            Some(stem) if !phrase => (stem.trim_end_matches('*'), true),
            _ => (chunk, false),
        };
        // A chunk of only punctuation holds no token: as an FTS5 string it
        // would match nothing (or fail), so it is left out.
        if !stem.chars().any(char::is_alphanumeric) {
            return;
        }
        let mut term = String::with_capacity(stem.len() + 3);
        term.push('"');
        term.push_str(&stem.replace('"', "\"\""));
        term.push('"');
        if prefix {
            term.push('*');
        }
        terms.push(term);
    };
    for (n, part) in text.split('"').enumerate() {
        if n % 2 == 1 {
            push(part, true);
        } else {
            for word in part.split_whitespace() {
                push(word, false);
            }
        }
    }
    (!terms.is_empty()).then(|| terms.join(" "))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_persons_text_becomes_quoted_terms() {
        assert_eq!(
            match_expression("hello world").as_deref(),
            Some("\"hello\" \"world\"")
        );
        assert_eq!(
            match_expression("say \"good morning\" rout*").as_deref(),
            Some("\"say\" \"good morning\" \"rout\"*")
        );
        assert_eq!(
            match_expression("a NEAR(b) -c col:d").as_deref(),
            Some("\"a\" \"NEAR(b)\" \"-c\" \"col:d\"")
        );
        assert_eq!(match_expression("* - \"\" ()"), None);
        assert_eq!(
            match_expression("unbalanced \"quote here").as_deref(),
            Some("\"unbalanced\" \"quote here\"")
        );
    }

    #[test]
    fn day_numbers_count_from_1970() {
        assert_eq!(day_number(NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()), 0);
        assert_eq!(
            day_number(NaiveDate::from_ymd_opt(2026, 11, 27).unwrap()),
            (NaiveDate::from_ymd_opt(2026, 11, 27).unwrap()
                - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
            .num_days()
        );
    }
}
