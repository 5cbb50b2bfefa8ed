//! Whose refinement history a message is about: the typed key, and the one place its stored
//! form (files, Redis list names) is made and read.

use serde::{Deserialize, Serialize};

/// Whose refinement history: a tool's shared one, or one person's own of that tool
/// (`refinements.scope: principal`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HistoryKey {
    pub tool: String,
    /// The person (`Who::key`) whose own history it is; None: the tool's shared one.
    pub owner: Option<String>,
}

/// Between the tool and the person in a personal history's stored form: a control character,
/// which neither tool names hosts see nor principals' keys contain. Only the stored form (the
/// snapshot file, Redis list names) carries it; everything else holds the typed key.
const STORED_SEPARATOR: char = '\u{1f}';

impl HistoryKey {
    pub fn shared(tool: &str) -> HistoryKey {
        HistoryKey { tool: tool.to_string(), owner: None }
    }

    pub fn personal(tool: &str, owner: &str) -> HistoryKey {
        HistoryKey { tool: tool.to_string(), owner: Some(owner.to_string()) }
    }

    /// As files and Redis keys carry it: the tool's name, or tool, separator, person (the form
    /// histories were stored in before the key was typed, so they stay reachable).
    pub fn stored(&self) -> String {
        match &self.owner {
            Some(o) => format!("{}{STORED_SEPARATOR}{o}", self.tool),
            None => self.tool.clone(),
        }
    }

    pub fn from_stored(s: &str) -> HistoryKey {
        match s.split_once(STORED_SEPARATOR) {
            Some((tool, owner)) => HistoryKey::personal(tool, owner),
            None => HistoryKey::shared(s),
        }
    }
}

impl Serialize for HistoryKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.stored())
    }
}

impl<'de> Deserialize<'de> for HistoryKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(HistoryKey::from_stored(&String::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keys_keep_the_stored_form_of_before() {
        let mine = HistoryKey::personal("get_weather", "token alice");
        assert_eq!(mine.stored(), "get_weather\u{1f}token alice", "files and Redis lists written before stay reachable");
        assert_eq!(HistoryKey::from_stored(&mine.stored()), mine);
        assert_eq!(HistoryKey::from_stored("get_weather"), HistoryKey::shared("get_weather"));
        // As a map key in the snapshot file: a JSON object keyed by the stored form.
        let map = std::collections::HashMap::from([(mine.clone(), 1), (HistoryKey::shared("t"), 2)]);
        let text = serde_json::to_string(&map).unwrap();
        let back: std::collections::HashMap<HistoryKey, i32> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, map);
        let old: std::collections::HashMap<HistoryKey, i32> = serde_json::from_str("{\"w\\u001fjwt sub=bob\": 3}").unwrap();
        assert_eq!(old.get(&HistoryKey::personal("w", "jwt sub=bob")), Some(&3));
    }
}
