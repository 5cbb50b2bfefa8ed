//! The actors of mcp-gen-ui, the typed messages they exchange, and the pure logic they run.
//!
//! One folder per layer, top to bottom (ARCHITECTURE.md draws it):
//! [`session`] (one actor per host) -> [`servers`] (one supervisor per upstream server) ->
//! [`proxy`] (the shared route table) -> [`upstream`] (transports), with [`generation`] (the
//! queue and the pipeline that makes pages), [`store`] (caches, histories, Redis) and
//! [`ui_tools`] (the `_ui_*` tools) beside them, reached through the ports in [`messages`].
//! [`mcp`] holds the wire helpers every layer uses, [`page`] the page types they share,
//! [`process`] how the process holds up (panics, locks, memory, injected faults).

pub mod audience;
pub mod audit;
pub mod generation;
pub mod mcp;
pub mod messages;
pub mod metrics;
pub mod page;
pub mod policy;
pub mod process;
pub mod proxy;
pub mod rate_window;
pub mod servers;
pub mod session;
pub mod store;
#[cfg(test)]
mod test_support;
pub mod trace;
pub mod upstream;
pub mod who;
