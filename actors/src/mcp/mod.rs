//! Pure helpers for what travels on the wire: JSON-RPC, SSE, the MCP 2026-07-28 revision,
//! `Mcp-Param-*` headers, the MCP Apps additions (`_meta.ui`), and the shape of tool results.

pub mod bad_arguments;
pub mod jsonrpc;
pub mod param_headers;
pub mod result_shape;
pub mod revision_2026;
pub mod sse;
pub mod ui_meta;
