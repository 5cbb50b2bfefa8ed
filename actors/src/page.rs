//! The page types every layer shares: what a generated (or fallback) page is, how it was
//! made, and which of a tool's fields it depends on. At the bottom of the crate: the stores
//! keep these, the generation makes them, the sessions and the edge serve them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Bumped when `UiEntry`'s stored shape changes; older files on disk are skipped.
pub const ENTRY_FORMAT: u32 = 1;

/// Objects with sorted keys, so equal JSON hashes equally whatever the upstream's key order.
pub fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&m[k]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// What of a tool the generated page depends on: name, title, description, input schema, and
/// (beyond the seed, since the prompt includes them) output schema and annotations.
pub fn tool_hash(tool: &Value) -> String {
    let pick = |k: &str| tool.get(k).cloned().unwrap_or(Value::Null);
    let subject = serde_json::json!({
        "name": pick("name"), "title": pick("title"), "description": pick("description"),
        "inputSchema": pick("inputSchema"), "outputSchema": pick("outputSchema"), "annotations": pick("annotations"),
    });
    hex::encode(Sha256::digest(format!("{}\0", canonical(&subject)).as_bytes()))
}

/// Rich (a page written for the tool) or minimal (the generated form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiType {
    Rich,
    Minimal,
}

/// Degradation levels 0-3 of the seed design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PageKind {
    Generated,
    Repaired,
    Template,
    Emergency,
}

impl PageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PageKind::Generated => "generated",
            PageKind::Repaired => "repaired",
            PageKind::Template => "template",
            PageKind::Emergency => "emergency",
        }
    }

    pub fn level(self) -> u8 {
        match self {
            PageKind::Generated => 0,
            PageKind::Repaired => 1,
            PageKind::Template => 2,
            PageKind::Emergency => 3,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct UiEntry {
    pub format: u32,
    pub key: String,
    pub tool_name: String,
    pub html: String,
    pub kind: PageKind,
    pub ui_type: Option<UiType>,
    /// Unix milliseconds.
    pub generated_at: u64,
    pub duration_ms: u64,
    pub provider: String,
    pub model: String,
    pub prompt_version: String,
    pub template_version: String,
    pub fallback_reason: Option<String>,
    pub warnings: Vec<String>,
    pub repairs: Vec<String>,
    pub request_id: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Unix milliseconds after which the page is stale and made again (pages served because
    /// of a transient failure); None: kept until evicted, invalidated or regenerated.
    #[serde(default)]
    pub expires_at: Option<u64>,
}

impl UiEntry {
    /// Whether the page is past its expiry at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at.is_some_and(|t| now_ms >= t)
    }
}

/// Fallback reasons that may go away by themselves: a page served for one of these is kept only
/// for `cache.fallbackTtlSecs`, so a passing outage does not pin the template.
pub fn transient_reason(reason: &str) -> bool {
    matches!(reason, "TIMEOUT" | "RATE_LIMIT" | "SERVER_ERROR" | "NETWORK_ERROR" | "ABORTED" | "internal")
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
