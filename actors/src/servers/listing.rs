//! Requests of the proxy's own to an upstream server: one answer awaited within a limit, or a
//! list followed through every page.

use std::time::Duration;

use serde_json::{json, Value};

use crate::proxy::router::Router;
use crate::upstream::UpstreamError;

/// Pages followed before the upstream is taken to page forever.
const MAX_PAGES: usize = 1000;

/// The result of a request of ours, or why there is none.
pub async fn await_result(rx: tokio::sync::oneshot::Receiver<Value>, limit: Duration, what: &'static str) -> Result<Value, UpstreamError> {
    let msg = match tokio::time::timeout(limit, rx).await {
        Err(_) => return Err(UpstreamError::Timeout { what, limit }),
        Ok(Err(_)) => return Err(UpstreamError::ClosedDuring { what }),
        Ok(Ok(m)) => m,
    };
    if let Some(err) = msg.get("error") {
        let message = err.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_string();
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        return Err(UpstreamError::Remote { what, code, message });
    }
    Ok(msg.get("result").cloned().unwrap_or(Value::Null))
}

/// How much of a list is kept: beyond either bound the list is refused, not truncated (a
/// partial list would look whole).
#[derive(Debug, Clone, Copy)]
pub struct ListBounds {
    pub max_items: usize,
    /// The items' JSON, in bytes, all pages together.
    pub max_bytes: usize,
    /// The setting that names each bound, for the error.
    pub fields: (&'static str, &'static str),
}

impl ListBounds {
    /// Bounds for a host's joined list: as large as the transport allows.
    /// Bytes are not counted: each page is already bounded by `upstream.maxMessageBytes`.
    pub const HOSTS: ListBounds = ListBounds { max_items: 100_000, max_bytes: usize::MAX, fields: ("", "") };
}

/// Every page of a list (`method`, items under `key`), each page awaited within `limit`, the
/// whole within `bounds`. A server that does not serve the method has an empty list.
pub async fn list_all(router: &Router, method: &'static str, key: &str, limit: Duration) -> Result<Vec<Value>, UpstreamError> {
    list_bounded(router, method, key, limit, ListBounds::HOSTS).await
}

/// [`list_all`] within `bounds`.
pub async fn list_bounded(
    router: &Router,
    method: &'static str,
    key: &str,
    limit: Duration,
    bounds: ListBounds,
) -> Result<Vec<Value>, UpstreamError> {
    let mut items = Vec::new();
    let mut bytes = 0usize;
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let rx = router.internal_request(method, params);
        let mut res = match await_result(rx, limit, method).await {
            Ok(r) => r,
            Err(e) if e.is_method_not_found() => return Ok(items),
            Err(e) => return Err(e),
        };
        // Taken, not copied: a list of thousands of tools is held once.
        if let Some(Value::Array(page)) = res.get_mut(key).map(Value::take) {
            for item in page {
                if bounds.max_bytes != usize::MAX {
                    bytes += serde_json::to_vec(&item).map(|t| t.len()).unwrap_or(0);
                }
                if items.len() >= bounds.max_items {
                    return Err(UpstreamError::Protocol(format!(
                        "the upstream lists more than {} items in {method} ({}): raise it, or show fewer of its tools",
                        bounds.max_items, bounds.fields.0
                    )));
                }
                if bytes > bounds.max_bytes {
                    return Err(UpstreamError::Protocol(format!(
                        "the upstream's {method} is more than {} bytes ({}): raise it, or show fewer of its tools",
                        bounds.max_bytes, bounds.fields.1
                    )));
                }
                items.push(item);
            }
        }
        match res.get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => return Ok(items),
        }
    }
    Err(UpstreamError::Protocol(format!("the upstream's {method} paging did not end after {MAX_PAGES} pages")))
}
