//! The proxy path: the shared route table between host sessions and one upstream server
//! (ids, progress tokens, cancellations, server-to-client requests, deadlines), and the input
//! rounds of a 2026 upstream; whose each task is.

pub mod hosts;
pub mod input_rounds;
pub mod router;
pub mod routes;
pub mod shares;
pub mod task_runs;
pub mod tasks;
