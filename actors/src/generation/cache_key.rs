//! Pure: cache keys. A key is SHA-256 over the tool name, the tool hash,
//! the refinement hash and the config hash, so any change to what the LLM would see, or to how
//! it is asked, makes a new key. The entries kept under them are `page::UiEntry`.

use sha2::{Digest, Sha256};

#[cfg(test)]
use crate::page::tool_hash;

fn sha(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    hex::encode(h.finalize())
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
