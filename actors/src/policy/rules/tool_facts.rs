//! What a tool says of itself, as conditions see it: its `annotations` (with the specification's
//! defaults where the server is silent) and its `title`. The server's own claims: a rule that
//! trusts them trusts the server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// A tool's annotations and title (`annotations.readOnlyHint`, ... and `title` in conditions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolFacts {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
    pub title: Arc<str>,
}

impl ToolFacts {
    /// What is assumed of a tool that says nothing (the MCP specification's defaults: it may
    /// write, destroy, and reach the world), and of a name no server has.
    pub fn unknown() -> ToolFacts {
        ToolFacts { read_only: false, destructive: true, idempotent: false, open_world: true, title: Arc::from("") }
    }

    /// From a tool's definition as listed. A hint that is not a boolean is as if absent.
    pub fn of(def: &Value) -> ToolFacts {
        let d = ToolFacts::unknown();
        let annotations = def.get("annotations");
        let hint = |key: &str, default: bool| annotations.and_then(|a| a.get(key)).and_then(Value::as_bool).unwrap_or(default);
        let title = def.get("title").or_else(|| annotations.and_then(|a| a.get("title"))).and_then(Value::as_str).unwrap_or_default();
        ToolFacts {
            read_only: hint("readOnlyHint", d.read_only),
            destructive: hint("destructiveHint", d.destructive),
            idempotent: hint("idempotentHint", d.idempotent),
            open_world: hint("openWorldHint", d.open_world),
            // A server's words, printed by `check --connect` and read by rules: bounded, and no
            // control characters (no terminal escapes, no line breaks).
            title: Arc::from(title.chars().filter(|c| !c.is_control()).take(256).collect::<String>()),
        }
    }

    /// `annotations` as a condition reads it.
    pub(super) fn annotations(&self) -> Value {
        json!({
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        })
    }
}

/// Where the rules learn a tool's facts by the name hosts call it (the catalog, set by the
/// wiring; None: no such tool).
pub type FactsSource = Arc<dyn Fn(&str) -> Option<ToolFacts> + Send + Sync>;

/// Tools whose facts are remembered at most (more: forgotten all at once, then learnt again).
const REMEMBERED: usize = 20_000;

/// A [`FactsSource`] from `lookup` (a tool's definition as listed now, by the name hosts call
/// it) that reads each definition once: a call asks for its tool's facts whenever some rule
/// reads them, and a definition changes only with its server's list (a new `Arc`).
pub fn remembered(lookup: impl Fn(&str) -> Option<Arc<Value>> + Send + Sync + 'static) -> FactsSource {
    let memo: Mutex<HashMap<String, (Arc<Value>, ToolFacts)>> = Mutex::new(HashMap::new());
    Arc::new(move |name: &str| {
        let def = lookup(name)?;
        let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((known, facts)) = memo.get(name) {
            if Arc::ptr_eq(known, &def) {
                return Some(facts.clone());
            }
        }
        let facts = ToolFacts::of(&def);
        if memo.len() >= REMEMBERED {
            memo.clear();
        }
        memo.insert(name.to_string(), (def, facts.clone()));
        Some(facts)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_is_read_once_and_again_when_its_server_lists_it_anew() {
        let defs: Arc<Mutex<HashMap<String, Arc<Value>>>> = Arc::default();
        let first = Arc::new(json!({"name": "t", "annotations": {"readOnlyHint": true}}));
        defs.lock().unwrap().insert("t".into(), first.clone());
        let d = defs.clone();
        let source = remembered(move |n| d.lock().unwrap().get(n).cloned());
        assert!(source("t").unwrap().read_only);
        assert!(source("t").unwrap().read_only, "remembered");
        assert!(source("nope").is_none());
        // Listed anew with other annotations: a new definition, read again.
        defs.lock().unwrap().insert("t".into(), Arc::new(json!({"name": "t", "annotations": {"readOnlyHint": false}})));
        assert!(!source("t").unwrap().read_only, "what the server says now");
    }

    #[test]
    fn silence_is_the_specifications_defaults_and_a_hint_must_be_a_boolean() {
        assert_eq!(ToolFacts::of(&json!({"name": "t"})), ToolFacts::unknown());
        let f = ToolFacts::of(&json!({"name": "t", "title": "Read", "annotations": {"readOnlyHint": true, "destructiveHint": "no"}}));
        assert!(f.read_only && f.destructive && !f.idempotent && f.open_world);
        assert_eq!(&*f.title, "Read");
        assert_eq!(&*ToolFacts::of(&json!({"annotations": {"title": "Old place"}})).title, "Old place");
        assert_eq!(&*ToolFacts::of(&json!({"title": "A\u{1b}[31mB\nC"})).title, "A[31mBC", "no escapes, no line breaks");
    }
}
