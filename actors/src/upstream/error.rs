//! Why something sent to an upstream server failed. Callers decide on the kind (a listing
//! that ends at "method not found", a refusal that says "retry later", a handshake that falls
//! back to initialize); the text is written for the host that reads it in an error.

use std::time::Duration;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UpstreamError {
    /// No link right now; the text is what happened to the last one.
    #[error("{0}")]
    Down(String),
    /// Not ready within the wait; the text says what it is doing or what failed last.
    #[error("the upstream is not connected ({0})")]
    NotReady(String),
    /// Not ready, and trying again cannot help until the configuration changes.
    #[error("the upstream cannot be reached as configured ({0}); check this server's entry in the servers file (mcp-gen-ui keeps trying every 30 s)")]
    Misconfigured(String),
    /// The link could not be set up (spawning the program, connecting, the first exchange).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The link's outgoing queue is at its bound: the upstream stopped reading.
    #[error("the upstream is not reading its input (its queue is full); retry later")]
    QueueFull,
    #[error("the upstream link is closed")]
    LinkClosed,
    #[error("the upstream did not answer {what} within {} s", .limit.as_secs())]
    Timeout { what: &'static str, limit: Duration },
    /// The connection went while a request of ours waited.
    #[error("the upstream connection closed during {what}")]
    ClosedDuring { what: &'static str },
    /// The upstream answered with a JSON-RPC error.
    #[error("the upstream answered {what} with an error: {message}")]
    Remote { what: &'static str, code: i64, message: String },
    /// The upstream broke the protocol (endless paging, ...).
    #[error("{0}")]
    Protocol(String),
    /// The upstream restarted while a request of ours was under way.
    #[error("the upstream restarted during the {0}")]
    Restarted(&'static str),
}

impl UpstreamError {
    /// What to add to this error for a host: "retry shortly", unless retrying cannot help.
    pub fn retry_advice(&self) -> &'static str {
        match self {
            UpstreamError::Misconfigured(_) => "",
            _ => "; retry shortly",
        }
    }

    /// The upstream does not implement the method (JSON-RPC -32601).
    pub fn is_method_not_found(&self) -> bool {
        matches!(self, UpstreamError::Remote { code: crate::mcp::jsonrpc::code::METHOD_NOT_FOUND, .. })
    }
}

/// Why a link could not be set up. Callers decide on [`ConnectError::lasting`]: a host is told
/// to fix the servers file, not to retry shortly, when trying again cannot help.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConnectError {
    /// The program could not be started (`missing`: no such file).
    #[error("cannot start upstream command {command:?}: {reason}")]
    Spawn { command: String, reason: String, missing: bool },
    /// A configured header is not valid HTTP.
    #[error("{0}")]
    BadHeader(String),
    /// Something of our own could not be set up (a pipe, the HTTP client).
    #[error("cannot set up {what}: {reason}")]
    Local { what: &'static str, reason: String },
    /// The server could not be reached.
    #[error("cannot open the upstream SSE stream: {0}")]
    Unreachable(String),
    /// The server answered the opening request with an HTTP error.
    #[error("the upstream SSE endpoint answered HTTP {0}")]
    Status(reqwest::StatusCode),
}

impl ConnectError {
    /// Trying again cannot help until the configuration (or the server's) changes.
    pub fn lasting(&self) -> bool {
        match self {
            ConnectError::Spawn { missing, .. } => *missing,
            ConnectError::BadHeader(_) => true,
            ConnectError::Status(s) => matches!(s.as_u16(), 401 | 403 | 404 | 405),
            ConnectError::Local { .. } | ConnectError::Unreachable(_) => false,
        }
    }
}

/// Why a token exchange gave no token. The text names the authorization server's error code
/// only: its description could echo what was sent.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TokenError {
    #[error("the authorization server could not be reached for a token exchange: {0}")]
    Unreachable(String),
    #[error("the authorization server refused the token exchange (HTTP {status}: {code})")]
    Refused { status: u16, code: String },
    #[error("the authorization server's token exchange answer has no access_token")]
    NoToken,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_retrying_cannot_fix_is_lasting() {
        let spawn = |missing| ConnectError::Spawn { command: "x".into(), reason: "r".into(), missing };
        assert!(spawn(true).lasting() && !spawn(false).lasting());
        assert!(ConnectError::BadHeader("h".into()).lasting());
        for (status, lasting) in [(401, true), (403, true), (404, true), (405, true), (500, false), (502, false), (503, false)] {
            assert_eq!(ConnectError::Status(reqwest::StatusCode::from_u16(status).unwrap()).lasting(), lasting, "{status}");
        }
        assert!(!ConnectError::Unreachable("refused".into()).lasting());
        assert_eq!(UpstreamError::Misconfigured("x".into()).retry_advice(), "");
        assert_eq!(UpstreamError::NotReady("x".into()).retry_advice(), "; retry shortly");
    }
}
