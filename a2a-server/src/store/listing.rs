//! The ListTasks rules every task store follows, defined once: which tasks a
//! request matches, their order, page sizes and the page-token format.
//!
//! Order: newest status timestamp first (a task without one counts as the
//! epoch), ties in creation order. Each store gives its tasks a creation
//! sequence number; a page token is the (timestamp, sequence) of the last task
//! of a page, so the next page starts right after it whatever was written since.

use a2a_core::{ListTasksRequest, Task, TaskState};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::error::StoreError;

/// The page size when a request gives none.
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// A task's position in list order: its status timestamp (milliseconds since
/// the epoch) and its creation sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListPosition {
    /// The status timestamp in milliseconds (0 when the task has none).
    pub timestamp_ms: i64,
    /// The store's creation sequence number of the task.
    pub sequence: u64,
}

impl ListPosition {
    /// The position of a task with status timestamp `timestamp_ms`, created `sequence`th.
    pub fn new(timestamp_ms: i64, sequence: u64) -> Self {
        ListPosition {
            timestamp_ms,
            sequence,
        }
    }

    /// Whether `self` is listed after `other` (newest first, then creation order).
    pub fn is_after(&self, other: &ListPosition) -> bool {
        self.timestamp_ms < other.timestamp_ms
            || (self.timestamp_ms == other.timestamp_ms && self.sequence > other.sequence)
    }

    /// The page token that resumes a listing right after this position.
    pub fn page_token(&self) -> String {
        URL_SAFE_NO_PAD.encode(format!("{}|{}", self.timestamp_ms, self.sequence))
    }

    /// Reads a page token; an empty token is the first page.
    pub fn from_page_token(token: &str) -> Result<Option<ListPosition>, StoreError> {
        if token.is_empty() {
            return Ok(None);
        }
        let invalid = || StoreError::Invalid(format!("invalid pageToken {token:?}"));
        let bytes = URL_SAFE_NO_PAD.decode(token).map_err(|_| invalid())?;
        let text = std::str::from_utf8(&bytes).map_err(|_| invalid())?;
        let (ts, sequence) = text.split_once('|').ok_or_else(invalid)?;
        Ok(Some(ListPosition {
            timestamp_ms: ts.parse().map_err(|_| invalid())?,
            sequence: sequence.parse().map_err(|_| invalid())?,
        }))
    }
}

impl Ord for ListPosition {
    /// List order: a position that is listed earlier compares less.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .timestamp_ms
            .cmp(&self.timestamp_ms)
            .then(self.sequence.cmp(&other.sequence))
    }
}

impl PartialOrd for ListPosition {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The status timestamp a task is listed by, in milliseconds (0 without one).
pub fn status_timestamp_ms(task: &Task) -> i64 {
    task.status.timestamp.map_or(0, |ts| ts.timestamp_millis())
}

/// A ListTasks request read into what a store filters and pages by.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskQuery<'a> {
    /// Only tasks of this context.
    pub context_id: Option<&'a str>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is at or after this (milliseconds).
    pub timestamp_from_ms: Option<i64>,
    /// The most tasks on one page (at least 1).
    pub page_size: usize,
    /// Start after this position (from the page token).
    pub after: Option<ListPosition>,
}

impl<'a> TaskQuery<'a> {
    /// Reads `request`; a malformed page token is [`StoreError::Invalid`].
    pub fn from_request(request: &'a ListTasksRequest) -> Result<Self, StoreError> {
        let page_size = request
            .page_size
            .and_then(|size| usize::try_from(size).ok())
            .filter(|size| *size > 0)
            .unwrap_or(DEFAULT_PAGE_SIZE);
        Ok(TaskQuery {
            context_id: Some(request.context_id.as_str()).filter(|c| !c.is_empty()),
            state: Some(request.status).filter(|s| *s != TaskState::Unspecified),
            timestamp_from_ms: request
                .status_timestamp_after
                .map(|ts| ts.timestamp_millis()),
            page_size,
            after: ListPosition::from_page_token(&request.page_token)?,
        })
    }

    /// Whether a task with these attributes passes the filters (not the page cursor).
    pub fn matches(&self, context_id: &str, state: TaskState, timestamp_ms: i64) -> bool {
        self.context_id.is_none_or(|c| c == context_id)
            && self.state.is_none_or(|s| s == state)
            && self
                .timestamp_from_ms
                .is_none_or(|from| timestamp_ms >= from)
    }

    /// Whether a task at `position` belongs to this page or a later one.
    pub fn is_past_cursor(&self, position: &ListPosition) -> bool {
        self.after.is_none_or(|after| position.is_after(&after))
    }

    /// The page size as the response reports it.
    pub fn page_size_i32(&self) -> i32 {
        i32::try_from(self.page_size).unwrap_or(i32::MAX)
    }

    /// The next page token, given the last task of this page and whether more follow.
    pub fn next_page_token(last: Option<&ListPosition>, more: bool) -> String {
        match last {
            Some(position) if more => position.page_token(),
            _ => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip_and_reject_garbage() {
        let position = ListPosition::new(-5, 42);
        assert_eq!(
            ListPosition::from_page_token(&position.page_token()).unwrap(),
            Some(position)
        );
        assert_eq!(ListPosition::from_page_token("").unwrap(), None);
        for bad in ["%%", "bm9waXBl", &URL_SAFE_NO_PAD.encode("1|x")] {
            assert!(matches!(
                ListPosition::from_page_token(bad),
                Err(StoreError::Invalid(_))
            ));
        }
    }

    #[test]
    fn order_is_newest_first_then_creation_order() {
        let mut positions = vec![
            ListPosition::new(1, 3),
            ListPosition::new(2, 2),
            ListPosition::new(1, 1),
        ];
        positions.sort();
        assert_eq!(
            positions,
            [
                ListPosition::new(2, 2),
                ListPosition::new(1, 1),
                ListPosition::new(1, 3)
            ]
        );
        assert!(ListPosition::new(1, 3).is_after(&ListPosition::new(1, 1)));
        assert!(!ListPosition::new(2, 9).is_after(&ListPosition::new(1, 1)));
    }
}
