#![doc = include_str!("../README.md")]
//!
//! # How it works
//!
//! There is no chat service behind it. The hub holds channels (from the
//! configuration) and threads (each one A2A conversation, its id the
//! `contextId` its agents see), stores every message in its own SQLite
//! record (or, for a gateway cluster, in a PostgreSQL schema every node
//! shares: [`HubBuilder::postgres`]) and the conversation log, and delivers each message over A2A to
//! the agents that handle it:
//!
//! - agents mentioned with `@name` handle it, the first as primary, the
//!   rest as secondaries;
//! - with no mention, a person's message at channel level goes to the
//!   channel's default agent, and a message in a thread to every other
//!   participant; an agent mentioned in a thread joins it;
//! - every other agent of the channel observes: it keeps a compact record
//!   (sender, 50 characters, message id, time), at most 50 for a day, and
//!   its next execution receives them ([`HubContext::observed`]).
//!
//! An agent answers by ending its task with text: the hub posts the answer
//! where the message was, however late. `collaborate` ([`Hub::collaborate`],
//! [`HubClient::collaborate`] for agents) opens a thread between two agents,
//! or continues the pair's thread of the last six hours, and returns as soon
//! as the target took the message. Loop guards keep agents from talking in
//! circles: the hub's own messages call nobody, a pair may collaborate three
//! times in five minutes, and a thread of more than six messages in a
//! minute pauses until a person resumes it or a cool-down passes.
//!
//! A model agent (`kind = "model"`, `a2a-model`) takes part the same way:
//! its model is offered `collaborate` and `post` as tools ([`tools`],
//! [`Hub::model_tools`]), which call the hub as that agent.
//!
//! People and scripts reach the hub through its HTTP API and live feed
//! ([`http`], served beside the gateway), and programs call that API with
//! [`api::HubApiClient`], which shares the API's types.
// docs.rs (`--cfg docsrs`) marks the items each feature adds.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
pub mod api;
pub mod config;
mod error;
pub mod http;
mod hub;
mod model;
pub mod routing;
mod store;
pub mod tools;

pub use self::agent::{
    CONTEXT_METADATA, DEFAULT_PERSON, FROM_METADATA, HubAgent, HubClient, HubContext, HubRequest,
    MIRROR_METADATA, PostRequest,
};
pub use self::config::{ChannelConfig, DeliveryPolicy, GuardConfig, HubConfig, ObserverConfig};
pub use self::error::{HubError, HubErrorKind};
pub use self::hub::delivery;
pub use self::hub::{
    AgentLink, DEFAULT_HUB_NAME, DEFAULT_LEASE_TIMEOUT, HUB_METADATA, Hub, HubBuilder, MAX_PAGE,
    MAX_TEXT_BYTES, OPERATOR_TOKEN_FILE, Post, ThreadPage,
};
pub use self::model::{
    Caller, ChannelView, Collaborate, Collaboration, DeliveryState, DeliveryStatus, EXCERPT_CHARS,
    HubEvent, HubMessage, ObserverRecord, Role, Sender, ThreadView,
};
pub use self::store::HUB_DB;
