//! The edges: where hosts connect. `http/` serves Streamable HTTP, legacy HTTP+SSE, the
//! preview and operations on one port; `stdio` serves one host over stdin/stdout. Both turn
//! the wire into typed messages for host sessions and hold no state of their own.

pub mod http;
pub mod serve;
pub mod stdio;
