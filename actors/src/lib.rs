//! The actors of mcp-gen-ui, the typed messages they exchange, and the pure logic they run.
//!
//! Actors (one per file, messages beside them): [`upstream_connection`], [`host_session`],
//! [`session_directory`]. Pure logic: [`jsonrpc`], [`sse`], [`ui_meta`], [`template_form`].
//! I/O without actor state: [`upstream`] (transports), [`ui_pages`] (rendering).

pub mod cache_key;
pub mod classified_hook;
pub mod contain;
pub mod faults;
pub mod file_names;
pub mod generate;
pub mod generation_queue;
pub mod host_session;
pub mod input_rounds;
pub mod jsonrpc;
pub mod learned_shapes;
pub mod lease;
pub mod llm;
pub mod messages;
pub mod metrics;
pub mod modern;
pub mod outlet;
pub mod param_headers;
pub mod postprocess;
pub mod prompts;
pub mod ready_pages;
pub mod redis_store;
pub mod refinements;
pub mod replica_sync;
pub mod result_shape;
pub mod router;
pub mod routes;
pub mod session_deps;
pub mod session_table;
pub mod snapshot_file;
pub mod sse;
pub mod template_form;
#[cfg(test)]
mod test_support;
pub mod tool_refresh;
pub mod ui_cache;
pub mod ui_control;
pub mod ui_meta;
pub mod ui_pages;
pub mod ui_tools;
pub mod upstream;
pub mod upstream_connection;
