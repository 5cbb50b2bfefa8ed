//! The upstream servers: one supervisor each (connect, handshake, restart with backoff, the
//! tool registry, subscriptions held for hosts).

pub mod supervisor;
pub mod tool_refresh;
