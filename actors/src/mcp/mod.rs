//! Pure helpers for what travels on the wire: JSON-RPC, SSE, the MCP 2026-07-28 revision,
//! `Mcp-Param-*` headers, the MCP Apps additions (`_meta.ui`), the shape of tool results, and
//! tasks (2025-11-25's wire, and 2026's extension made from it).

pub mod bad_arguments;
pub mod jsonrpc;
pub mod own_id;
pub mod param_headers;
pub mod relayed;
pub mod result_shape;
pub mod revision_2026;
pub mod sse;
pub mod tasks;
pub mod tasks_2026;
pub mod ui_meta;
