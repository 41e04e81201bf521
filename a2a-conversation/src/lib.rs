//! The conversation log and the conversation index.
//!
//! - [`ConversationLog`] keeps every message that enters or leaves an agent
//!   (requests, replies, status changes with a message, errors) as one line of
//!   JSON in a daily file `stream/YYYY-MM-DD.jsonl`. Appending never waits for
//!   the disk: lines go through a bounded queue to a writer thread, and what
//!   happens when the queue is full is a policy ([`WhenFull`]). Old days move
//!   to `stream/archive/` and are later gzipped. [`LogReader`] reads a day, a
//!   range of days, the last lines, and the chain of a message (its
//!   `parent_id`s back to the root), across archived and gzipped days.
//! - [`ConversationIndex`] maps a route (a work session and a pair of agents,
//!   `ws-1::alpha|beta`) to the A2A conversation (`contextId`) the pair keeps,
//!   so that agent A writing to agent B again continues where they left off.
//!   Lookups are from memory; the index is saved atomically and, if it is
//!   missing, corrupt or behind, rebuilt from the log on open.
//! - [`ChainTip`] carries "the latest line of this exchange" through an
//!   execution, so that a request, the calls an agent makes while answering
//!   it, and the answer form one chain.

mod entry;
mod index;
mod log;
mod reader;

pub use self::entry::{
    ChainTip, EntryType, Line, LineContent, LogEntry, new_entry_id, parts_content,
};
pub use self::index::{ConversationIndex, INDEX_FILE, IndexError, Route, RouteKey};
pub use self::log::{Clock, ConversationLog, Flush, LogConfig, LogError, WhenFull};
pub use self::reader::{DayRead, LogReader};

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
}
