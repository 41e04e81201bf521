//! What the hub shows: its channels, threads and history, and the channel
//! a message goes to when it names none.

use super::{Hub, MAX_PAGE, unknown_thread};
use crate::config::ChannelConfig;
use crate::error::HubError;
use crate::model::{ChannelView, HubMessage, ThreadView};

impl Hub {
    /// The channels.
    pub fn channels(&self) -> Vec<ChannelView> {
        let config = &self.inner.config;
        config
            .channels
            .iter()
            .map(|c| ChannelView {
                name: c.name.clone(),
                description: c.description.clone(),
                default_agent: c.default_agent.clone(),
                members: self.members(c),
                threads_allowed: config.threads_allowed(&c.name),
                is_default: config.default_channel.as_deref() == Some(&c.name),
                sink: config.is_sink(&c.name),
            })
            .collect()
    }

    /// The agents in `channel`: those it names, else every agent (none in a
    /// sink).
    pub(super) fn members(&self, channel: &ChannelConfig) -> Vec<String> {
        match &channel.members {
            Some(members) => members.clone(),
            None if self.inner.config.is_sink(&channel.name) => Vec::new(),
            None => self.agent_names(),
        }
    }

    /// The channel `name`, or why there is none.
    pub(super) fn channel(&self, name: &str) -> Result<&ChannelConfig, HubError> {
        self.inner.config.channel(name).ok_or_else(|| {
            let known: Vec<&str> = self
                .inner
                .config
                .channels
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            HubError::not_found(format!(
                "no channel named {name:?} (channels: {}); add it as [hub.channels.{name}]",
                known.join(", ")
            ))
        })
    }

    /// Where what names no channel goes, or why nothing can.
    pub(super) fn default_channel(&self) -> Result<String, HubError> {
        self.inner.config.default_channel.clone().ok_or_else(|| {
            HubError::invalid(
                "no channel given and the hub has no default channel: name one, or set \
                 default_channel = \"NAME\" under [hub] in the gateway file \
                 (HubConfig::default_channel in code)",
            )
        })
    }

    /// A page of at most `limit` threads (at most [`MAX_PAGE`]), of one
    /// channel or all, the most recently active first, starting after
    /// `cursor` (a page's [`ThreadPage::next_cursor`]). An unreadable cursor
    /// is an invalid request.
    pub fn threads_page(
        &self,
        channel: Option<&str>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ThreadPage, HubError> {
        let after = match cursor {
            None => None,
            Some(cursor) => Some(
                cursor
                    .split_once('|')
                    .and_then(|(at, id)| {
                        let at = chrono::DateTime::parse_from_rfc3339(at).ok()?;
                        Some((at.with_timezone(&chrono::Utc), id.to_owned()))
                    })
                    .ok_or_else(|| HubError::invalid("the cursor is not one the hub gave"))?,
            ),
        };
        let limit = limit.clamp(1, MAX_PAGE);
        let mut threads: Vec<ThreadView> = {
            let state = self.state();
            state
                .threads
                .values()
                .filter(|t| channel.is_none_or(|c| t.view.channel == c))
                .filter(|t| {
                    after.as_ref().is_none_or(|(at, id)| {
                        t.view.last_activity < *at
                            || (t.view.last_activity == *at && t.view.id > *id)
                    })
                })
                .map(|t| t.view.clone())
                .collect()
        };
        threads.sort_by(|a, b| b.last_activity.cmp(&a.last_activity).then(a.id.cmp(&b.id)));
        let next_cursor = (threads.len() > limit).then(|| {
            let last = &threads[limit - 1];
            format!("{}|{}", crate::store::stamp(last.last_activity), last.id)
        });
        threads.truncate(limit);
        Ok(ThreadPage {
            threads,
            next_cursor,
        })
    }

    /// Every thread, of one channel or all, the most recently active first
    /// (in process; the API pages them, see [`Hub::threads_page`]).
    pub fn threads(&self, channel: Option<&str>) -> Vec<ThreadView> {
        let state = self.state();
        let mut threads: Vec<ThreadView> = state
            .threads
            .values()
            .filter(|t| channel.is_none_or(|c| t.view.channel == c))
            .map(|t| t.view.clone())
            .collect();
        threads.sort_by(|a, b| b.last_activity.cmp(&a.last_activity).then(a.id.cmp(&b.id)));
        threads
    }

    /// The thread `id`.
    pub fn thread(&self, id: &str) -> Option<ThreadView> {
        self.state().threads.get(id).map(|t| t.view.clone())
    }

    /// The last `limit` messages of `channel` at channel level, or of
    /// `thread` (whose channel is then taken from it), oldest first.
    pub async fn messages(
        &self,
        channel: Option<&str>,
        thread: Option<&str>,
        limit: usize,
    ) -> Result<Vec<HubMessage>, HubError> {
        let channel = match thread {
            Some(thread) => {
                self.thread(thread)
                    .ok_or_else(|| unknown_thread(thread))?
                    .channel
            }
            None => {
                let channel =
                    channel.ok_or_else(|| HubError::invalid("name a channel or a thread"))?;
                self.channel(channel)?.name.clone()
            }
        };
        self.inner
            .store
            .messages(channel, thread.map(str::to_owned), limit.min(MAX_PAGE))
            .await
    }
}

/// A page of threads (see [`Hub::threads_page`]).
#[derive(Debug, Clone)]
pub struct ThreadPage {
    /// The threads, the most recently active first.
    pub threads: Vec<ThreadView>,
    /// Where the next page starts; `None` on the last page.
    pub next_cursor: Option<String>,
}
