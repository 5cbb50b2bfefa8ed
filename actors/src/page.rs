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

/// Degradation levels 0-3: a written page, a repaired one, the template, the emergency page.
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
    pub fallback_reason: Option<FallbackReason>,
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

/// Why a page is the template (or the emergency page) rather than one the LLM wrote. Stored
/// and shown as the same strings as before this was a type (`"TIMEOUT"`, `"offline"`,
/// `"not_html"`, ...), so pages kept on disk or in Redis read back as they were written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FallbackReason {
    /// No provider is configured: every page is the template, by design.
    Offline,
    /// The tool was classified as one the template serves well.
    Minimal,
    /// The provider failed (after the retries the generation allows).
    Llm(LlmFailure),
    /// Every answer was rejected by the checks a served page must pass; the label says which
    /// check (`not_html`, `script_syntax`, ...).
    Rejected(String),
    /// This service failed while making the page (a contained panic, a queue restart).
    Internal,
}

/// How a provider request failed, as the generation decides on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LlmFailure {
    /// Too slow: no first token within `generation.firstTokenMs`, or the page not finished
    /// within `generation.maxGenerationMs`.
    Timeout,
    /// The answer started, then nothing came for `generation.stallMs`.
    Stalled,
    /// The answer was cut at the token limit (`max_tokens`, `length`), every attempt.
    Truncated,
    RateLimit,
    InvalidRequest,
    ServerError,
    NetworkError,
    ContentFiltered,
    /// The generation was stopped before its end (shutdown, the tool changed).
    Aborted,
}

impl LlmFailure {
    pub const ALL: [LlmFailure; 9] = [
        LlmFailure::Timeout,
        LlmFailure::Stalled,
        LlmFailure::Truncated,
        LlmFailure::RateLimit,
        LlmFailure::InvalidRequest,
        LlmFailure::ServerError,
        LlmFailure::NetworkError,
        LlmFailure::ContentFiltered,
        LlmFailure::Aborted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LlmFailure::Timeout => "TIMEOUT",
            LlmFailure::Stalled => "STALLED",
            LlmFailure::Truncated => "TRUNCATED",
            LlmFailure::RateLimit => "RATE_LIMIT",
            LlmFailure::InvalidRequest => "INVALID_REQUEST",
            LlmFailure::ServerError => "SERVER_ERROR",
            LlmFailure::NetworkError => "NETWORK_ERROR",
            LlmFailure::ContentFiltered => "CONTENT_FILTERED",
            LlmFailure::Aborted => "ABORTED",
        }
    }
}

impl FallbackReason {
    /// The label stored, shown to hosts and used as the metric's `reason`.
    pub fn as_str(&self) -> &str {
        match self {
            FallbackReason::Offline => "offline",
            FallbackReason::Minimal => "minimal",
            FallbackReason::Llm(f) => f.as_str(),
            FallbackReason::Rejected(label) => label,
            FallbackReason::Internal => "internal",
        }
    }

    /// Read back from its label; a label this build does not know is a rejection's (those are
    /// the only open-ended ones).
    pub fn parse(label: &str) -> FallbackReason {
        match label {
            "offline" => FallbackReason::Offline,
            "minimal" => FallbackReason::Minimal,
            "internal" => FallbackReason::Internal,
            other => match LlmFailure::ALL.iter().find(|f| f.as_str() == other) {
                Some(f) => FallbackReason::Llm(*f),
                None => FallbackReason::Rejected(other.to_string()),
            },
        }
    }

    /// May go away by itself: a page served for it is kept only for a while (a backoff up to
    /// `cache.fallbackTtlSecs`), so a passing outage does not pin the template.
    pub fn transient(&self) -> bool {
        match self {
            FallbackReason::Llm(f) => matches!(
                f,
                LlmFailure::Timeout
                    | LlmFailure::Stalled
                    | LlmFailure::RateLimit
                    | LlmFailure::ServerError
                    | LlmFailure::NetworkError
                    | LlmFailure::Aborted
            ),
            FallbackReason::Internal => true,
            FallbackReason::Offline | FallbackReason::Minimal | FallbackReason::Rejected(_) => false,
        }
    }

    /// Something went wrong (worth a warning), as opposed to the template by design.
    pub fn is_failure(&self) -> bool {
        !matches!(self, FallbackReason::Offline | FallbackReason::Minimal)
    }
}

impl std::fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FallbackReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FallbackReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(FallbackReason::parse(&String::deserialize(d)?))
    }
}

/// Where a page that is being written has got to, as a read that could not wait for it, or
/// the page's own status call, is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Writing {
    pub phase: Phase,
    /// Characters of the page received so far (the current attempt's).
    pub chars: u64,
    /// 1 for the first attempt; more after a retry.
    pub attempt: u32,
    /// Since the generation began (a wait for a slot included).
    pub elapsed_ms: u64,
    /// About how long until the page is written, from the model's pace (None: not known yet).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta_ms: Option<u64>,
}

/// What a generation in flight is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for a free generation slot (`generation.maxConcurrentGenerations`).
    Queued,
    /// The request is sent; no token yet.
    Asking,
    /// Tokens are arriving.
    Writing,
    /// The answer is being checked (and repaired).
    Checking,
    /// Waiting before the next attempt.
    Retrying,
    /// Another replica is making it (`cache.type: redis`).
    OtherReplica,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Queued => "queued",
            Phase::Asking => "asking",
            Phase::Writing => "writing",
            Phase::Checking => "checking",
            Phase::Retrying => "retrying",
            Phase::OtherReplica => "other_replica",
        }
    }
}

/// Unix milliseconds now.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_reasons_read_back_as_they_were_written() {
        let all = [FallbackReason::Offline, FallbackReason::Minimal, FallbackReason::Internal, FallbackReason::Rejected("not_html".into())]
            .into_iter()
            .chain(LlmFailure::ALL.map(FallbackReason::Llm));
        for r in all {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<FallbackReason>(&json).unwrap(), r, "{json}");
        }
        assert_eq!(serde_json::to_string(&FallbackReason::Llm(LlmFailure::RateLimit)).unwrap(), "\"RATE_LIMIT\"");
    }

    #[test]
    fn only_passing_failures_are_transient() {
        assert!(FallbackReason::Llm(LlmFailure::Stalled).transient());
        assert!(FallbackReason::Internal.transient());
        for lasting in [LlmFailure::Truncated, LlmFailure::InvalidRequest, LlmFailure::ContentFiltered] {
            assert!(!FallbackReason::Llm(lasting).transient(), "{lasting:?}");
        }
        assert!(!FallbackReason::Rejected("script_syntax".into()).transient());
        assert!(!FallbackReason::Offline.is_failure() && !FallbackReason::Minimal.is_failure());
        assert!(FallbackReason::Rejected("x".into()).is_failure());
    }
}
