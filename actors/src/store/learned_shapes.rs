//! What each tool's results have looked like (`generation.learnResultShape`): one merged shape
//! per tool (keys and JSON types, never values), given to the next generation prompt, and the
//! tool revision whose page was already remade with it (a page made before the shape was known
//! is remade once per revision, no more). Shared by the sessions (which learn) and the queue
//! (which prompts); persisted beside the cache (`state/result_shapes.json`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::mcp::result_shape;
use crate::process::locks::RecoverRw;
use crate::store::snapshot_file::{self, Writer};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Learned {
    shape: Value,
    /// The tool hash whose page was remade (or first made) knowing the shape.
    remade_for: Option<String>,
}

#[derive(Default)]
pub struct LearnedShapes {
    inner: RwLock<HashMap<String, Learned>>,
    writer: Option<Writer<HashMap<String, Learned>>>,
}

impl LearnedShapes {
    /// With a cache folder, what was learnt before is loaded (at start, before any actor runs)
    /// and every change is written back.
    pub fn new(cache_dir: Option<&Path>) -> Arc<Self> {
        let Some(dir) = cache_dir else { return Arc::new(LearnedShapes::default()) };
        let file = snapshot_file::state_dir(dir).join("result_shapes.json");
        let loaded: HashMap<String, Learned> = std::fs::read(&file).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        Arc::new(LearnedShapes { inner: RwLock::new(loaded), writer: Some(Writer::start(file)) })
    }

    fn save(&self, map: &HashMap<String, Learned>) {
        if let Some(w) = &self.writer {
            w.save(map.clone());
        }
    }

    /// The shape learnt for `tool`, if any.
    pub fn get(&self, tool: &str) -> Option<Value> {
        self.inner.reading().get(tool).map(|l| l.shape.clone())
    }

    /// Adds one result's shape to the tool's; true when that changed what is known.
    pub fn learn(&self, tool: &str, shape: &Value) -> bool {
        let mut map = self.inner.writing();
        let merged = match map.get(tool) {
            Some(l) => result_shape::merge(&l.shape, shape),
            None => shape.clone(),
        };
        if map.get(tool).is_some_and(|l| l.shape == merged) {
            return false;
        }
        let remade_for = map.get(tool).and_then(|l| l.remade_for.clone());
        map.insert(tool.to_string(), Learned { shape: merged, remade_for });
        self.save(&map);
        true
    }

    /// True once per tool revision: the caller remakes (or will first make) its page with the shape.
    pub fn take_remake(&self, tool: &str, tool_hash: &str) -> bool {
        let mut map = self.inner.writing();
        let Some(l) = map.get_mut(tool) else { return false };
        if l.remade_for.as_deref() == Some(tool_hash) {
            return false;
        }
        l.remade_for = Some(tool_hash.to_string());
        self.save(&map);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn learning_merges_and_remakes_once_per_revision() {
        let s = LearnedShapes::new(None);
        assert!(s.learn("t", &json!({"a": "number"})));
        assert!(!s.learn("t", &json!({"a": "number"})), "the same shape again teaches nothing");
        assert!(s.learn("t", &json!({"b": "string"})));
        assert_eq!(s.get("t"), Some(json!({"a": "number", "b": "string"})));
        assert!(s.take_remake("t", "rev1"));
        assert!(!s.take_remake("t", "rev1"), "once per tool revision");
        assert!(s.take_remake("t", "rev2"), "a changed tool is a new revision");
        assert!(!s.take_remake("unknown", "rev1"));
    }
}
