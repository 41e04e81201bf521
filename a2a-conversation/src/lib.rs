#![doc = include_str!("../README.md")]
//!
//! # How it works
//!
//! - [`ConversationLog`] keeps every message that enters or leaves an agent
//!   (requests, replies, status changes with a message, errors) as one line of
//!   JSON in a daily file `stream/YYYY-MM-DD.jsonl`. Appending never waits for
//!   the disk: lines go through a bounded queue to a writer thread, and what
//!   happens when the queue is full is a policy ([`WhenFull`]). Old days move
//!   to `stream/archive/` and are later gzipped. [`LogReader`] reads a day, a
//!   range of days, the last lines, and the chain of a message (its
//!   `parent_id`s back to the root), across archived and gzipped days.
//!   [`LogSearch`] finds lines by their words across all days, through a
//!   full-text index (SQLite FTS5) kept beside the log and caught up from
//!   its files.
//! - On a cluster (`a2a serve --node-id`), the log stays one record in
//!   files, off the shared database (it is the largest write volume: whole
//!   message bodies): each node writes its own daily files,
//!   `stream/YYYY-MM-DD.<node>.jsonl` ([`LogConfig::node`]), so nodes may
//!   share one data directory or each keep their own. [`LogReader`] reads
//!   every node's files (of one directory, or of several with
//!   [`LogReader::merged`]) merged in time order, and a chain follows its
//!   parents from node to node; [`LogSearch`] and the index's rebuild read
//!   them all too.
//! - [`ConversationIndex`] maps a route (a work session and a pair of agents,
//!   `ws-1::alpha|beta`) to the A2A conversation (`contextId`) the pair keeps,
//!   so that agent A writing to agent B again continues where they left off.
//!   Lookups are from memory; the index is saved atomically and, if it is
//!   missing, corrupt or behind, rebuilt from the log on open.
//! - [`ChainTip`] carries "the latest line of this exchange" through an
//!   execution, so that a request, the calls an agent makes while answering
//!   it, and the answer form one chain.
//!
//! It plugs into the SDK from outside (the SDK knows nothing of it): on a
//! server, the [`Recorder`] is the handler's observer
//! ([`HandlerBuilderExt::conversation_log`]) and writes what the agent takes
//! and gives; on a client, [`ClientExt::send_in_conversation`] continues a
//! pair's conversation and logs both sides.
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
mod entry;
mod index;
mod log;
mod reader;
mod search;
mod server;

// Searching the log, through its full-text index.
pub use self::search::{
    Found, LogSearch, SEARCH_INDEX_FILE, SearchError, SearchQuery, SearchResult, Update,
};

pub use self::client::{ClientExt, Conversations};
pub use self::entry::{
    ChainTip, EntryType, Line, LineContent, LogEntry, new_entry_id, parts_content,
};
pub use self::index::{
    ConversationIndex, DEFAULT_REUSE_WINDOW, DEFAULT_WORKSPACE, INDEX_FILE, IndexError, Route,
    RouteKey, RouteStore,
};
pub use self::log::{Clock, ConversationLog, Flush, LogConfig, LogError, WhenFull};
pub use self::reader::{DayRead, LogReader};
pub use self::server::{HandlerBuilderExt, Recorder, mark_logged};

/// The folder of the daily files, under a data directory.
pub const STREAM_DIR: &str = "stream";
/// The folder of archived days, under [`STREAM_DIR`].
pub const ARCHIVE_DIR: &str = "archive";

/// Message metadata keys by which an agent that calls another tells it who it
/// is and which log line the call continues (set by the client, read by the
/// server when it logs the request).
pub mod metadata_keys {
    /// The calling agent's name.
    pub const FROM_AGENT: &str = "a2aFromAgent";
    /// The id of the caller's log line that this message continues.
    pub const LOG_PARENT: &str = "a2aLogParent";
    /// Which log the sender wrote the message to, as line
    /// [`LOG_PARENT`]: a server writing to the same log does not write it
    /// again (see [`mark_logged`](crate::mark_logged)).
    pub const LOG_OWNER: &str = "a2aLogOwner";
}
