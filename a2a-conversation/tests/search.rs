//! Searching the conversation log through its full-text index, on real files.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use a2a_conversation::{
    ConversationLog, EntryType, LogConfig, LogEntry, LogSearch, SEARCH_INDEX_FILE, SearchQuery,
};
use chrono::{DateTime, TimeZone, Utc};

fn at(d: u32, h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, d, h, 0, 0).unwrap()
}

fn line(t: DateTime<Utc>, kind: EntryType, from: &str, to: &str, text: &str) -> LogEntry {
    LogEntry::new(t, kind, from, Some(to.into()), text)
}

/// Gzips after 2 days, archives after 1: as of the 23rd, the 20th is
/// gzipped, the 21st archived, the 23rd live.
fn config() -> LogConfig {
    LogConfig::default()
        .archive_after_days(1)
        .gzip_after_days(2)
}

async fn write(dir: &Path, entries: Vec<LogEntry>) -> Vec<String> {
    let log = ConversationLog::open(dir, config()).unwrap();
    let mut ids = Vec::new();
    for entry in entries {
        ids.push(log.append(entry).await.unwrap());
    }
    log.flush().await.unwrap();
    ids
}

async fn archive(dir: &Path, as_of: DateTime<Utc>) {
    let log = ConversationLog::open(dir, config()).unwrap();
    log.archive(as_of.date_naive()).await.unwrap();
}

fn texts(dir: &Path, query: &SearchQuery) -> Vec<String> {
    let mut search = LogSearch::open(dir).unwrap();
    let found = search.search(query).unwrap();
    found.lines.iter().map(|f| f.entry.content_text()).collect()
}

/// Lines on the 20th, 21st and 23rd, each day with one zebra.
fn three_days() -> Vec<LogEntry> {
    let mut entries = Vec::new();
    for (day, name) in [(20, "gzipped"), (21, "archived"), (23, "live")] {
        entries.push(line(
            at(day, 9),
            EntryType::Request,
            "alpha",
            "beta",
            "plan the route",
        ));
        entries.push(line(
            at(day, 10),
            EntryType::Response,
            "beta",
            "alpha",
            &format!("a zebra on the {name} day"),
        ));
        entries.push(line(
            at(day, 11),
            EntryType::Request,
            "alpha",
            "gamma",
            "nothing here",
        ));
    }
    entries
}

#[tokio::test]
async fn words_are_found_across_live_archived_and_gzipped_days() {
    let dir = tempfile::tempdir().unwrap();
    let ids = write(dir.path(), three_days()).await;
    archive(dir.path(), at(23, 12)).await;
    let stream = dir.path().join("stream");
    assert!(stream.join("archive/2026-11-20.jsonl.gz").exists());
    assert!(stream.join("archive/2026-11-21.jsonl").exists());
    assert!(stream.join("2026-11-23.jsonl").exists());

    let mut search = LogSearch::open(dir.path()).unwrap();
    let found = search.search(&SearchQuery::new("ZEBRA")).unwrap();
    let texts: Vec<String> = found.lines.iter().map(|f| f.entry.content_text()).collect();
    assert_eq!(
        texts,
        [
            "a zebra on the gzipped day",
            "a zebra on the archived day",
            "a zebra on the live day"
        ]
    );
    assert!(!found.more);
    assert_eq!(found.lines[0].entry.id, ids[1]);
    // The line as stored, byte for byte.
    let stored = std::fs::read_to_string(stream.join("2026-11-23.jsonl")).unwrap();
    assert_eq!(stored.lines().nth(1).unwrap(), found.lines[2].json);
    // All words are required.
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("zebra archived")),
        ["a zebra on the archived day"]
    );
    assert!(texts_of(&mut search, SearchQuery::new("zebra giraffe")).is_empty());
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("route")).len(),
        3,
        "a word found on each day"
    );
}

fn texts_of(search: &mut LogSearch, query: SearchQuery) -> Vec<String> {
    search
        .search(&query)
        .unwrap()
        .lines
        .iter()
        .map(|f| f.entry.content_text())
        .collect()
}

#[tokio::test]
async fn the_index_follows_days_into_the_archive_without_indexing_them_again() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), three_days()).await;
    let mut search = LogSearch::open(dir.path()).unwrap();
    let first = search.update().unwrap();
    assert!(first.rebuilt);
    assert_eq!(first.lines_added, 9);
    assert_eq!(search.update().unwrap().lines_added, 0);

    archive(dir.path(), at(23, 12)).await;
    let moved = search.update().unwrap();
    assert_eq!(moved.lines_added, 0, "{moved:?}");
    assert_eq!(moved.days_reindexed, 0, "{moved:?}");
    assert_eq!(moved.days_dropped, 0, "{moved:?}");
    assert_eq!(texts_of(&mut search, SearchQuery::new("zebra")).len(), 3);

    // A day whose file is gone leaves the index.
    std::fs::remove_file(dir.path().join("stream/archive/2026-11-20.jsonl.gz")).unwrap();
    let dropped = search.update().unwrap();
    assert_eq!(dropped.days_dropped, 1);
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("zebra")),
        ["a zebra on the archived day", "a zebra on the live day"]
    );
}

#[tokio::test]
async fn filters_narrow_by_agent_time_and_type() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), three_days()).await;
    let mut search = LogSearch::open(dir.path()).unwrap();

    // From or to the agent.
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("nothing").agent("gamma")).len(),
        3
    );
    assert!(texts_of(&mut search, SearchQuery::new("zebra").agent("gamma")).is_empty());
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("zebra").agent("alpha")).len(),
        3
    );
    // Type.
    assert_eq!(
        texts_of(
            &mut search,
            SearchQuery::new("route").kind(EntryType::Request)
        )
        .len(),
        3
    );
    assert!(
        texts_of(
            &mut search,
            SearchQuery::new("route").kind(EntryType::Response)
        )
        .is_empty()
    );
    // Time: since is inclusive, before exclusive, to the microsecond.
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("zebra").since(at(21, 0))),
        ["a zebra on the archived day", "a zebra on the live day"]
    );
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("zebra").since(at(21, 10))),
        ["a zebra on the archived day", "a zebra on the live day"]
    );
    assert_eq!(
        texts_of(
            &mut search,
            SearchQuery::new("zebra")
                .since(at(20, 10) + chrono::Duration::microseconds(1))
                .before(at(23, 10))
        ),
        ["a zebra on the archived day"]
    );
    assert!(
        texts_of(
            &mut search,
            SearchQuery::new("zebra").since(at(22, 0)).before(at(23, 0))
        )
        .is_empty()
    );
    // The limit keeps the latest matches, in order, and says there are more.
    let limited = search.search(&SearchQuery::new("zebra").limit(2)).unwrap();
    assert!(limited.more);
    let texts: Vec<String> = limited
        .lines
        .iter()
        .map(|f| f.entry.content_text())
        .collect();
    assert_eq!(
        texts,
        ["a zebra on the archived day", "a zebra on the live day"]
    );
    assert!(
        !search
            .search(&SearchQuery::new("zebra").limit(3))
            .unwrap()
            .more
    );
}

#[tokio::test]
async fn new_lines_are_caught_up_including_a_line_finished_after_a_search() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), three_days()).await;
    let mut search = LogSearch::open(dir.path()).unwrap();
    assert_eq!(search.update().unwrap().lines_added, 9);

    write(
        dir.path(),
        vec![
            line(
                at(23, 13),
                EntryType::Error,
                "beta",
                "alpha",
                "the okapi fled",
            ),
            line(at(24, 1), EntryType::State, "beta", "alpha", "okapi found"),
        ],
    )
    .await;
    let caught = search.update().unwrap();
    assert_eq!(caught.lines_added, 2, "{caught:?}");
    assert!(!caught.rebuilt);
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("okapi")),
        ["the okapi fled", "okapi found"]
    );

    // A line still being written (no newline yet) waits for its end.
    let day = dir.path().join("stream/2026-11-24.jsonl");
    let whole = serde_json::to_string(&line(
        at(24, 2),
        EntryType::Response,
        "gamma",
        "alpha",
        "a quokka smiles",
    ))
    .unwrap();
    let (head, tail) = whole.split_at(40);
    append_bytes(&day, head.as_bytes());
    assert_eq!(search.update().unwrap().lines_added, 0);
    assert!(texts_of(&mut search, SearchQuery::new("quokka")).is_empty());
    append_bytes(&day, format!("{tail}\n").as_bytes());
    assert_eq!(search.update().unwrap().lines_added, 1);
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("quokka")),
        ["a quokka smiles"]
    );

    // A new process sees the same index, caught up.
    let mut again = LogSearch::open(dir.path()).unwrap();
    let update = again.update().unwrap();
    assert_eq!((update.rebuilt, update.lines_added), (false, 0));
}

fn append_bytes(path: &Path, bytes: &[u8]) {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

#[tokio::test]
async fn a_day_rewritten_under_the_index_is_indexed_again() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), three_days()).await;
    let mut search = LogSearch::open(dir.path()).unwrap();
    search.update().unwrap();
    let day = dir.path().join("stream/2026-11-23.jsonl");
    let other = serde_json::to_string(&line(
        at(23, 5),
        EntryType::Request,
        "delta",
        "alpha",
        "a narwhal",
    ))
    .unwrap();
    std::fs::write(&day, format!("{other}\n")).unwrap();
    let update = search.update().unwrap();
    assert_eq!(update.days_reindexed, 1, "{update:?}");
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("zebra")),
        ["a zebra on the gzipped day", "a zebra on the archived day"]
    );
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("narwhal")),
        ["a narwhal"]
    );
}

#[tokio::test]
async fn a_deleted_index_is_rebuilt_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), three_days()).await;
    archive(dir.path(), at(23, 12)).await;
    assert_eq!(texts(dir.path(), &SearchQuery::new("zebra")).len(), 3);
    let index = dir.path().join(SEARCH_INDEX_FILE);
    assert!(index.exists());
    std::fs::remove_file(&index).unwrap();
    let mut search = LogSearch::open(dir.path()).unwrap();
    let update = search.update().unwrap();
    assert!(update.rebuilt);
    assert_eq!(update.lines_added, 9);
    assert_eq!(texts_of(&mut search, SearchQuery::new("zebra")).len(), 3);
}

/// What a test does to the index's file.
type Damage = Box<dyn Fn(&[u8]) -> Vec<u8>>;

#[tokio::test]
async fn a_corrupt_or_torn_index_is_rebuilt_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = three_days();
    // Enough lines that the index spans many pages, so damage in the
    // middle hits pages a search reads.
    for n in 0..3_000 {
        entries.push(line(
            at(22, 1) + chrono::Duration::seconds(n),
            EntryType::Request,
            "alpha",
            "beta",
            &format!(
                "filler {n} with the zebra word and padding {}",
                "p".repeat(100)
            ),
        ));
    }
    write(dir.path(), entries).await;
    let index = dir.path().join(SEARCH_INDEX_FILE);
    let expected = texts(dir.path(), &SearchQuery::new("zebra"));
    assert_eq!(expected.len(), 3_003);

    let good = std::fs::read(&index).unwrap();
    assert!(good.len() > 64 * 1024, "{}", good.len());
    let damages: [(&str, Damage); 4] = [
        (
            "garbage",
            Box::new(|_| b"not a database at all".repeat(100)),
        ),
        ("empty", Box::new(|_| Vec::new())),
        ("torn in half", Box::new(|b| b[..b.len() / 2].to_vec())),
        (
            "overwritten pages",
            Box::new(|b| {
                let mut b = b.to_vec();
                let (from, to) = (b.len() / 4, b.len() * 3 / 4);
                for (n, byte) in b[from..to].iter_mut().enumerate() {
                    *byte = (n * 131 % 251) as u8;
                }
                b
            }),
        ),
    ];
    for (what, damage) in damages {
        std::fs::write(&index, damage(&good)).unwrap();
        let mut search = LogSearch::open(dir.path()).unwrap();
        let found = search
            .search(&SearchQuery::new("zebra"))
            .unwrap_or_else(|e| {
                panic!("{what}: {e}");
            });
        let texts: Vec<String> = found.lines.iter().map(|f| f.entry.content_text()).collect();
        assert_eq!(texts, expected, "{what}");
        let update = search.update().unwrap();
        assert_eq!(update.lines_added, 0, "{what}: {update:?}");
    }
}

#[tokio::test]
async fn search_syntax_in_the_persons_text_is_taken_literally() {
    let dir = tempfile::tempdir().unwrap();
    let mut entries = three_days();
    entries.push(line(
        at(23, 14),
        EntryType::Request,
        "alpha",
        "beta",
        "the quick zebra-crossing \"quoted\" NEAR here: col:umn",
    ));
    write(dir.path(), entries).await;
    let mut search = LogSearch::open(dir.path()).unwrap();
    for query in [
        "\"",
        "\"\"",
        "*",
        "-",
        "-zebra",
        "zebra -gzipped",
        "NEAR(zebra day)",
        "zebra NEAR day",
        "zebra OR",
        "AND",
        "NOT zebra",
        "col:umn",
        "text:zebra",
        "(zebra",
        "^zebra",
        "zebra +day",
        "{zebra}",
        "'zebra'",
        "zebra\\",
        "\u{0}",
    ] {
        search
            .search(&SearchQuery::new(query))
            .unwrap_or_else(|e| panic!("{query:?}: {e}"));
    }
    // Punctuation around a word does not hide it.
    assert_eq!(texts_of(&mut search, SearchQuery::new("-zebra")).len(), 4);
    assert_eq!(texts_of(&mut search, SearchQuery::new("(zebra)")).len(), 4);
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("col:umn")).len(),
        1,
        "a column filter is not one"
    );
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("NEAR here")).len(),
        1
    );
    // Quotes make a phrase; a word ending in * is a prefix.
    assert_eq!(
        texts_of(&mut search, SearchQuery::new("\"quick zebra\"")).len(),
        1
    );
    assert!(texts_of(&mut search, SearchQuery::new("\"zebra quick\"")).is_empty());
    assert_eq!(texts_of(&mut search, SearchQuery::new("zeb*")).len(), 4);
    assert!(texts_of(&mut search, SearchQuery::new("*")).is_empty());
}

#[tokio::test]
async fn the_words_of_a_message_with_parts_are_found_not_its_keys() {
    let dir = tempfile::tempdir().unwrap();
    let content = serde_json::json!([
        {"kind": "text", "text": "see the attached walrus"},
        {"kind": "data", "data": {"animal": "narwhal", "count": 2}}
    ]);
    write(
        dir.path(),
        vec![LogEntry::new(
            at(23, 1),
            EntryType::Response,
            "beta",
            None,
            content,
        )],
    )
    .await;
    let mut search = LogSearch::open(dir.path()).unwrap();
    assert_eq!(texts_of(&mut search, SearchQuery::new("walrus")).len(), 1);
    assert_eq!(texts_of(&mut search, SearchQuery::new("narwhal")).len(), 1);
    assert!(texts_of(&mut search, SearchQuery::new("kind")).is_empty());
}
