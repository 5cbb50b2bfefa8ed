//! The upstream servers: one supervisor each (connect, handshake, restart with backoff, the
//! tool registry, subscriptions held for hosts).

pub mod catalog;
pub mod fleet;
pub mod glob;
pub mod listing;
pub mod names;
pub mod pins;
pub mod principals;
pub mod profiles;
pub mod registry;
pub mod search;
pub mod supervisor;
pub mod tool_refresh;
