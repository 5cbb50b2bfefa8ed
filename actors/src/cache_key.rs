//! Pure: cache keys and the entries stored under them (seed design 4.3.3). A key is SHA-256
//! over the tool name, the tool hash, the refinement hash and the config hash, so any change to
//! what the LLM would see, or to how it is asked, makes a new key.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::prompts::UiType;

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

fn sha(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
}

/// What of a tool the generated page depends on: name, title, description, input schema, and
/// (beyond the seed, since the prompt includes them) output schema and annotations.
pub fn tool_hash(tool: &Value) -> String {
    let pick = |k: &str| tool.get(k).cloned().unwrap_or(Value::Null);
    let subject = serde_json::json!({
        "name": pick("name"), "title": pick("title"), "description": pick("description"),
        "inputSchema": pick("inputSchema"), "outputSchema": pick("outputSchema"), "annotations": pick("annotations"),
    });
    sha(&[&canonical(&subject).to_string()])
}

pub fn refinements_hash(refinements: &[String]) -> String {
    if refinements.is_empty() {
        return "none".into();
    }
    let parts: Vec<&str> = refinements.iter().map(String::as_str).collect();
    sha(&parts)
}

/// Everything about how pages are made that is not the tool itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFingerprint {
    pub prompt_version: String,
    pub prompts_hash: String,
    pub template_version: String,
    pub provider: String,
    pub model: String,
    pub temperature: f64,
    /// `generation.styleGuide` (empty: none): a new style makes new pages.
    pub style_guide: String,
}

impl ConfigFingerprint {
    pub fn hash(&self) -> String {
        sha(&[
            &self.prompt_version,
            &self.prompts_hash,
            &self.template_version,
            &self.provider,
            &self.model,
            &format!("{:.4}", self.temperature),
            &self.style_guide,
        ])
    }
}

pub fn cache_key(tool_name: &str, tool_hash: &str, refinements_hash: &str, config_hash: &str) -> String {
    sha(&[tool_name, tool_hash, refinements_hash, config_hash])
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fp() -> ConfigFingerprint {
        ConfigFingerprint {
            prompt_version: "1".into(),
            prompts_hash: "p".into(),
            template_version: "1".into(),
            provider: "openai".into(),
            model: "m".into(),
            temperature: 0.2,
            style_guide: String::new(),
        }
    }

    #[test]
    fn key_order_does_not_matter() {
        let a = json!({"name": "t", "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}}});
        let b = json!({"inputSchema": {"properties": {"b": {}, "a": {}}, "type": "object"}, "name": "t"});
        assert_eq!(tool_hash(&a), tool_hash(&b));
    }

    #[test]
    fn every_input_changes_the_key() {
        let tool = json!({"name": "t", "description": "d", "inputSchema": {}});
        let base = cache_key("t", &tool_hash(&tool), &refinements_hash(&[]), &fp().hash());
        let described = json!({"name": "t", "description": "d2", "inputSchema": {}});
        assert_ne!(base, cache_key("t", &tool_hash(&described), &refinements_hash(&[]), &fp().hash()));
        assert_ne!(base, cache_key("t", &tool_hash(&tool), &refinements_hash(&["bigger".into()]), &fp().hash()));
        for changed in [
            ConfigFingerprint { model: "m2".into(), ..fp() },
            ConfigFingerprint { prompts_hash: "p2".into(), ..fp() },
            ConfigFingerprint { prompt_version: "2".into(), ..fp() },
            ConfigFingerprint { template_version: "2".into(), ..fp() },
            ConfigFingerprint { temperature: 0.7, ..fp() },
            ConfigFingerprint { style_guide: "use the brand colour #ff6600".into(), ..fp() },
        ] {
            assert_ne!(base, cache_key("t", &tool_hash(&tool), &refinements_hash(&[]), &changed.hash()), "{changed:?}");
        }
        assert_eq!(base, cache_key("t", &tool_hash(&tool), &refinements_hash(&[]), &fp().hash()));
    }

    #[test]
    fn refinement_order_matters() {
        assert_ne!(refinements_hash(&["a".into(), "b".into()]), refinements_hash(&["b".into(), "a".into()]));
    }
}
