//! Pure: tool search for a profile in search mode. Each tool is a document of its name (split
//! into words: `get_current_weather` is "get current weather"), its server, its description and
//! its schema's property names and descriptions, ranked for a plain-language query with BM25
//! (the `bm25` crate's embedder: its tokenizer, with stemming, stop words and Unicode
//! normalisation, and its BM25 term weights). Scoring is ours over an inverted index whose
//! postings carry each term's weight times its IDF, made once per catalog, so a query touches
//! only the postings of its terms and keeps the best few without sorting every match (the
//! crate's own engine scores and sorts every match: too slow at 5,000 tools). The name's words count
//! twice: a tool is best found by what it is called. People and tools use different words for
//! one thing ("folder" and "directory", "picture" and "image"): a query's words are joined by
//! their synonyms from a small general table of the words tools are described with
//! ([`SYNONYMS`]), so a task finds a tool that says it differently.

use std::collections::HashMap;

use bm25::{Embedder, EmbedderBuilder, Language};
use serde_json::Value;

use super::catalog::ExposedTool;

/// Results at most (`limit` is clamped to it).
pub const MAX_RESULTS: usize = 50;
/// A query longer than this is cut (it comes from a host).
pub const MAX_QUERY: usize = 1000;

/// Groups of words that name one thing in tool descriptions, general, not any server's: each
/// word of a query brings the others of its group.
pub const SYNONYMS: &[&[&str]] = &[
    &["folder", "directory", "dir"],
    &["picture", "image", "photo", "png"],
    &["add", "sum", "plus", "total"],
    &["remove", "delete", "erase", "forget"],
    &["make", "create", "new"],
    &["show", "display", "view"],
    &["find", "search", "lookup", "query"],
    &["list", "enumerate"],
    &["rename", "move"],
    &["save", "write", "store"],
    &["change", "edit", "modify", "update"],
    &["size", "big", "bytes"],
    &["zip", "gzip", "compress"],
    &["env", "environment", "variables"],
];

/// The query with each word's synonyms after it.
fn expanded(query: &str) -> String {
    let mut out = query.to_string();
    for word in query.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let w = word.to_lowercase();
        for group in SYNONYMS.iter().filter(|g| g.contains(&w.as_str())) {
            for other in group.iter().filter(|o| **o != w) {
                out.push(' ');
                out.push_str(other);
            }
        }
    }
    out
}

/// One tool found.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// As the profile shows it.
    pub name: String,
    /// The first line of its description.
    pub summary: String,
    pub score: f64,
}

pub struct ToolIndex {
    embedder: Embedder,
    /// A term to the tools that have it and its weight in each (BM25 weight times IDF).
    postings: HashMap<u32, Vec<(u32, f32)>>,
    /// By tool number: the name shown and the summary.
    tools: Vec<(String, String)>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ToolIndex({} tools)", self.tools.len())
    }
}

/// `read_graph`, `getCurrentTime`, `memory__x-y`: words.
pub fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    let mut prev_lower = false;
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' || c == '/' {
            out.push(' ');
            prev_lower = false;
        } else {
            if c.is_uppercase() && prev_lower {
                out.push(' ');
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// The text a tool is found by.
fn document(shown: &str, t: &ExposedTool) -> String {
    let def = &*t.def;
    let name = words(shown);
    let mut text = format!("{name} {name} {} {}", words(&t.server), def.get("description").and_then(Value::as_str).unwrap_or_default());
    if let Some(props) = def.pointer("/inputSchema/properties").and_then(Value::as_object) {
        for (k, v) in props {
            text.push(' ');
            text.push_str(&words(k));
            if let Some(d) = v.get("description").and_then(Value::as_str) {
                text.push(' ');
                text.push_str(d);
            }
        }
    }
    text
}

fn summary(t: &ExposedTool) -> String {
    let d = t.def.get("description").and_then(Value::as_str).unwrap_or_default();
    let line = d.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let mut s: String = line.chars().take(200).collect();
    if line.chars().count() > 200 {
        s.push('…');
    }
    s
}

impl ToolIndex {
    pub fn build<'a>(tools: impl Iterator<Item = (&'a str, &'a ExposedTool)>) -> ToolIndex {
        let mut docs = Vec::new();
        let mut list = Vec::new();
        for (shown, t) in tools {
            docs.push(document(shown, t));
            list.push((shown.to_string(), summary(t)));
        }
        let corpus: Vec<&str> = docs.iter().map(String::as_str).collect();
        let embedder = EmbedderBuilder::<u32>::with_fit_to_corpus(Language::English, &corpus).build();
        let mut postings: HashMap<u32, Vec<(u32, f32)>> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            // The embedding has an entry per occurrence, each with the term's whole weight.
            let mut seen = std::collections::HashSet::new();
            for te in embedder.embed(d).iter().filter(|te| seen.insert(te.index)) {
                postings.entry(te.index).or_default().push((i as u32, te.value));
            }
        }
        // IDF as BM25 has it: ln(1 + (N - n + 0.5) / (n + 0.5)).
        let n = docs.len() as f32;
        for list in postings.values_mut() {
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (_, w) in list.iter_mut() {
                *w *= idf;
            }
        }
        ToolIndex { embedder, postings, tools: list }
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The best `limit` tools for `query`, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let end = query.char_indices().nth(MAX_QUERY).map_or(query.len(), |(i, _)| i);
        let query = expanded(&words(&query[..end]));
        let mut terms: Vec<u32> = self.embedder.embed(&query).indices().copied().collect();
        terms.sort_unstable();
        terms.dedup();
        let mut scores = vec![0f32; self.tools.len()];
        let mut touched = Vec::new();
        for t in &terms {
            for &(doc, w) in self.postings.get(t).map_or(&[][..], Vec::as_slice) {
                let s = &mut scores[doc as usize];
                if *s == 0.0 {
                    touched.push(doc);
                }
                *s += w;
            }
        }
        let limit = limit.clamp(1, MAX_RESULTS);
        let by_score = |a: &u32, b: &u32| scores[*b as usize].total_cmp(&scores[*a as usize]).then(a.cmp(b));
        if touched.len() > limit {
            touched.select_nth_unstable_by(limit - 1, by_score);
            touched.truncate(limit);
        }
        touched.sort_by(by_score);
        touched
            .into_iter()
            .filter(|d| scores[*d as usize] > 0.0)
            .map(|d| {
                let (name, summary) = &self.tools[d as usize];
                Hit { name: name.clone(), summary: summary.clone(), score: (f64::from(scores[d as usize]) * 1000.0).round() / 1000.0 }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn tool(server: &str, name: &str, description: &str, props: Value) -> ExposedTool {
        ExposedTool {
            server: Arc::from(server),
            bare: name.into(),
            name: format!("{server}__{name}"),
            def: Arc::new(json!({"name": name, "description": description, "inputSchema": {"type": "object", "properties": props}})),
            page: format!("ui://{server}/{name}"),
            hash: String::new(),
            ui: true,
        }
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("get_current_weather"), "get current weather");
        assert_eq!(words("getCurrentTime"), "get current time");
        assert_eq!(words("memory__read-graph"), "memory  read graph");
    }

    #[test]
    fn a_plain_task_finds_its_tool_first() {
        let tools = [
            tool(
                "time",
                "get_current_time",
                "Get current time in a specific timezone",
                json!({"timezone": {"description": "IANA timezone name"}}),
            ),
            tool("memory", "read_graph", "Read the entire knowledge graph", json!({})),
            tool("weather", "get_forecast", "Daily forecast for a city", json!({"city": {"description": "City name"}, "days": {}})),
        ];
        let index = ToolIndex::build(tools.iter().map(|t| (t.name.as_str(), t)));
        assert_eq!(index.search("what time is it in Tokyo", 3)[0].name, "time__get_current_time");
        assert_eq!(index.search("forecast for Lisbon this week", 3)[0].name, "weather__get_forecast");
        let hits = index.search("show me the knowledge graph", 3);
        assert_eq!(hits[0].name, "memory__read_graph");
        assert_eq!(hits[0].summary, "Read the entire knowledge graph");
        assert!(index.search("zzzz qqqq", 3).is_empty());
        assert_eq!(index.search(&"time ".repeat(10_000), 100).len(), 1, "long queries are cut, limits clamped");
    }
}
