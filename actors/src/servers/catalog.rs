//! Pure: the tools hosts see, built from every server's list. A server's tools are curated
//! (allow and deny globs, renames, description overrides), named (`names`), and given the page
//! URI made here for them; a server's own MCP App keeps working, its `resourceUri` namespaced.
//! The catalog routes a call by the name a host used: an exposed name, or (for a server's own
//! app, which calls its tools by their bare names) a bare name exactly one server has.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Value};

use super::glob::{self, Glob};
use super::names;
use crate::mcp::ui_meta;
use crate::messages::{ToolList, ToolsDiff};
use crate::page::tool_hash;

/// What an upstream tool named like one of ours (`_ui_*`) is listed as instead, so that no two
/// tools ever share a name: `upstream_ui_refine` for `_ui_refine`.
pub const RENAMED_UI_PREFIX: &str = "upstream";

/// How one server's tools are shown (the servers file's per-server fields).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Curation {
    /// Globs of the tools to show (empty: all).
    pub allow: Vec<Glob>,
    /// Globs of the tools to hide; wins over `allow`. A hidden tool cannot be called.
    pub deny: Vec<Glob>,
    /// A tool's name as shown (before the server's prefix).
    pub rename: HashMap<String, String>,
    /// A tool's description as shown.
    pub descriptions: HashMap<String, String>,
    /// Globs of the tools that get a page (empty: all shown tools).
    pub pages: Vec<Glob>,
}

impl Curation {
    pub fn shows(&self, tool: &str) -> bool {
        let allowed = self.allow.is_empty() || glob::any(&self.allow, tool);
        allowed && !glob::any(&self.deny, tool)
    }

    /// Whether a tool gets a page: `pages` names it by its own name or as it is shown.
    pub fn has_page(&self, tool: &str, shown: &str) -> bool {
        self.pages.is_empty() || self.pages.iter().any(|g| g.matches(tool) || g.matches(shown))
    }
}

/// How a server's names reach hosts.
#[derive(Debug, Clone, PartialEq)]
pub enum Naming {
    /// As they are: one server behind `--upstream` (`ui://<tool>`, no prefix).
    Bare,
    /// `<prefix>__<tool>`, pages `ui://<prefix>/<tool>`, resource URIs namespaced.
    Prefixed(Arc<str>),
}

impl Naming {
    /// An answer with the server's resource URIs as hosts know them: what a read returns, what
    /// a call's result links to or embeds. With one server, untouched.
    pub fn answer_out(&self, mut answer: Value) -> Value {
        if *self == Naming::Bare {
            return answer;
        }
        let Some(result) = answer.get_mut("result") else { return answer };
        let rename = |v: &mut Value| {
            if let Some(uri) = v.get("uri").and_then(Value::as_str) {
                v["uri"] = json!(self.uri_out(uri));
            }
        };
        for key in ["contents", "content"] {
            for item in result.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten() {
                match item.get("type").and_then(Value::as_str) {
                    Some("resource") => {
                        if let Some(r) = item.get_mut("resource") {
                            rename(r);
                        }
                    }
                    Some("resource_link") | None => rename(item),
                    Some(_) => {}
                }
            }
        }
        // A prompt's messages may embed resources too.
        for m in result.get_mut("messages").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(r) = m.pointer_mut("/content/resource") {
                rename(r);
            }
        }
        // A result may name the app that shows it, as a definition does.
        if let Some(meta) = result.get_mut("_meta") {
            self.app_uris_out(meta);
        }
        answer
    }

    /// A server's own app named in `_meta` (a tool's or a result's), in either dialect and
    /// under both keys, as hosts read it here: its URI namespaced (one server: untouched).
    pub fn app_uris_out(&self, meta: &mut Value) {
        let (Naming::Prefixed(_), Some(meta)) = (self, meta.as_object_mut()) else { return };
        for key in ["ui/resourceUri", "openai/outputTemplate"] {
            if let Some(uri) = meta.get(key).and_then(Value::as_str).map(|u| self.uri_out(u)) {
                meta.insert(key.into(), json!(uri));
            }
        }
        if let Some(ui) = meta.get_mut("ui").and_then(Value::as_object_mut) {
            if let Some(uri) = ui.get("resourceUri").and_then(Value::as_str).map(|u| self.uri_out(u)) {
                ui.insert("resourceUri".into(), json!(uri));
            }
        }
    }

    /// A server's own resource URI as hosts see it.
    pub fn uri_out(&self, uri: &str) -> String {
        match self {
            Naming::Bare => uri.to_string(),
            Naming::Prefixed(p) => names::namespace_uri(p, uri),
        }
    }

    /// A name (tool or prompt) as hosts see it.
    pub fn name_out(&self, name: &str) -> String {
        match self {
            Naming::Bare => name.to_string(),
            Naming::Prefixed(p) => names::exposed_name(p, name),
        }
    }
}

/// One server as the catalog sees it.
#[derive(Debug, Clone)]
pub struct ServerTools {
    pub server: Arc<str>,
    pub naming: Naming,
    pub curation: Arc<Curation>,
    /// The server's list as it sent it (empty until it is first listed).
    pub tools: ToolList,
}

/// A tool as hosts see it.
#[derive(Debug, Clone)]
pub struct ExposedTool {
    /// The server it belongs to.
    pub server: Arc<str>,
    /// The server's own name for it (what a call to it carries upstream).
    pub bare: String,
    /// The name hosts call it by.
    pub name: String,
    /// The definition hosts see (named, described, the server's own app URI namespaced).
    pub def: Arc<Value>,
    /// The `ui://` page made here for it.
    pub page: String,
    /// `page::tool_hash` of `def`: what its generated page depends on.
    pub hash: String,
    /// Whether it gets a page (its server's `enabledTools`).
    pub ui: bool,
}

/// A tool its server lists that is held (see `pins`): named as hosts would call it.
#[derive(Debug, Clone)]
pub struct HeldTool {
    pub server: Arc<str>,
    /// The server's own name for it.
    pub bare: String,
    /// A new tool (else a changed one).
    pub new: bool,
}

/// Where a call by name goes.
#[derive(Debug)]
pub enum Route<'a> {
    Tool(&'a ExposedTool),
    /// A bare name more than one server has: the exposed names to call instead.
    Ambiguous(Vec<String>),
    /// Configured away: the server that has it.
    Hidden(Arc<str>),
    /// Held by its pin (it changed, or is new) until an admin accepts it.
    Held(&'a HeldTool),
    Unknown,
}

#[derive(Debug, Default)]
pub struct Catalog {
    tools: Vec<ExposedTool>,
    by_name: HashMap<String, usize>,
    by_page: HashMap<String, usize>,
    by_bare: HashMap<String, Vec<usize>>,
    hidden: HashMap<String, Arc<str>>,
    held: HashMap<String, HeldTool>,
    /// Names two tools would have shared, settled with a suffix (for the log).
    pub collisions: Vec<String>,
}

/// A tool on its way into the catalog: (its server, its definition, bare, shown, the name it
/// would like, whether that name is plain).
type Wanted<'a> = (&'a ServerTools, &'a Arc<Value>, String, String, String, bool);

impl Catalog {
    /// Every server's shown tools, named so that a name keeps its owner: plain names
    /// (`<prefix>__<tool>`, or the tool's own with one server) are taken first, in order; names
    /// that had to be made (shortened, suffixed, a `_ui_` tool renamed, a plain name already
    /// taken) come after, each checked against every name taken and suffixed again until free.
    /// A server's list changing can then never hand one of its names to another tool that
    /// another server or it already shows under that name.
    pub fn build(servers: &[ServerTools]) -> Catalog {
        let mut c = Catalog::default();
        let mut bare_taken: HashSet<(Arc<str>, String)> = HashSet::new();
        // (server, its tool, bare, shown, the name it would like, whether that name is plain)
        let mut wanted: Vec<Wanted> = Vec::new();
        for s in servers {
            for t in s.tools.iter() {
                let Some(bare) = t.get("name").and_then(Value::as_str) else { continue };
                if !bare_taken.insert((s.server.clone(), bare.to_string())) {
                    continue; // an upstream that lists a name twice: the first stands
                }
                if !s.curation.shows(bare) {
                    c.hidden.insert(bare.to_string(), s.server.clone());
                    c.hidden.insert(s.naming.name_out(bare), s.server.clone());
                    continue;
                }
                let shown = s.curation.rename.get(bare).map(String::as_str).unwrap_or(bare).to_string();
                let (name, plain) = match &s.naming {
                    Naming::Bare => (shown.clone(), true),
                    Naming::Prefixed(p) => {
                        let plain = format!("{p}{}{shown}", names::SEPARATOR);
                        let is_plain = names::is_api_name(&plain);
                        (if is_plain { plain } else { names::exposed_name(p, &shown) }, is_plain)
                    }
                };
                let (name, plain) = match name.starts_with(ui_meta::UI_TOOL_PREFIX) {
                    true => (format!("{RENAMED_UI_PREFIX}{name}"), false),
                    false => (name, plain),
                };
                wanted.push((s, t, bare.to_string(), shown, name, plain));
            }
        }
        let mut taken: HashSet<String> = HashSet::new();
        let mut given: Vec<Option<String>> = vec![None; wanted.len()];
        for (i, w) in wanted.iter().enumerate() {
            if w.5 && taken.insert(w.4.clone()) {
                given[i] = Some(w.4.clone());
            }
        }
        for (i, (s, _, bare, _, name, _)) in wanted.iter().enumerate() {
            if given[i].is_some() {
                continue;
            }
            let mut settled = name.clone();
            let mut n = 0u32;
            while !taken.insert(settled.clone()) {
                settled = names::with_suffix(name, &format!("{}\0{bare}\0{n}", s.server));
                n += 1;
            }
            if &settled != name {
                c.collisions.push(format!("{name} (server {}, tool {bare}) is listed as {settled}", s.server));
            }
            given[i] = Some(settled);
        }
        for ((s, t, bare, shown, _, _), name) in wanted.into_iter().zip(given) {
            let name = name.expect("every tool was given a name above");
            let page = match &s.naming {
                Naming::Bare => ui_meta::ui_uri(&name),
                Naming::Prefixed(p) => {
                    // Two tools shown under one name (a rename onto another's name): the second
                    // page is named by its unique exposed name.
                    let first = names::page_uri(p, &shown);
                    if c.by_page.contains_key(&first) {
                        names::page_uri(p, &name)
                    } else {
                        first
                    }
                }
            };
            let def = exposed_def(t, &name, s.curation.descriptions.get(&bare), &s.naming);
            let hash = tool_hash(&def);
            let i = c.tools.len();
            c.by_name.insert(name.clone(), i);
            c.by_page.insert(page.clone(), i);
            c.by_bare.entry(bare.clone()).or_default().push(i);
            let ui = s.curation.has_page(&bare, &shown);
            c.tools.push(ExposedTool { server: s.server.clone(), bare, name, def, page, hash, ui });
        }
        c
    }

    /// Tools held by their pins: a call to one (by the name hosts would use, or its own) is
    /// refused saying why, never forwarded (a bare server would otherwise be asked).
    pub fn hold(&mut self, naming: &Naming, held: HeldTool) {
        self.held.insert(naming.name_out(&held.bare), held.clone());
        self.held.insert(held.bare.clone(), held);
    }

    pub fn tools(&self) -> &[ExposedTool] {
        &self.tools
    }

    /// The definitions hosts are listed, in order.
    pub fn definitions(&self) -> Vec<Arc<Value>> {
        self.tools.iter().map(|t| t.def.clone()).collect()
    }

    pub fn tool(&self, name: &str) -> Option<&ExposedTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The tool whose page made here is `uri`.
    pub fn by_page(&self, uri: &str) -> Option<&ExposedTool> {
        self.by_page.get(uri).map(|&i| &self.tools[i])
    }

    /// Where a call to `name` goes: the tool of that exposed name, else the one server's tool
    /// of that bare name.
    pub fn route(&self, name: &str) -> Route<'_> {
        if let Some(t) = self.tool(name) {
            return Route::Tool(t);
        }
        match self.by_bare.get(name).map(Vec::as_slice) {
            Some([only]) => Route::Tool(&self.tools[*only]),
            Some(many) if !many.is_empty() => Route::Ambiguous(many.iter().map(|&i| self.tools[i].name.clone()).collect()),
            _ => match (self.held.get(name), self.hidden.get(name)) {
                (Some(h), _) => Route::Held(h),
                (None, Some(server)) => Route::Hidden(server.clone()),
                (None, None) => Route::Unknown,
            },
        }
    }

    /// What changed, by exposed name: a tool whose definition hashes differently changed. A
    /// name that now belongs to another tool (another server's, or another of the same
    /// server's) was removed and added: nothing kept for the old one (pages, refinements) may
    /// pass to the new one.
    pub fn diff(old: &Catalog, new: &Catalog) -> ToolsDiff {
        let mut d = ToolsDiff::default();
        for t in &new.tools {
            match old.tool(&t.name) {
                None => d.added.push(t.name.clone()),
                Some(o) if o.server != t.server || o.bare != t.bare => {
                    d.removed.push(t.name.clone());
                    d.added.push(t.name.clone());
                }
                Some(o) if o.hash != t.hash => d.changed.push(t.name.clone()),
                Some(_) => d.unchanged.push(t.name.clone()),
            }
        }
        d.removed.extend(old.tools.iter().filter(|o| new.tool(&o.name).is_none()).map(|o| o.name.clone()));
        d
    }
}

/// The definition hosts see: the upstream's, renamed and described as configured, with the
/// server's own `_meta.ui.resourceUri` (both keys) namespaced so that it can be read here. A
/// definition shown as it came is the upstream's own, shared: thousands of tools are held once.
fn exposed_def(tool: &Arc<Value>, name: &str, description: Option<&String>, naming: &Naming) -> Arc<Value> {
    // A prefixed name always differs from the tool's own, so only a bare server's definitions
    // can be shared; its app URIs need no namespacing.
    let renamed = tool.get("name").and_then(Value::as_str) != Some(name);
    let description = description.filter(|d| tool.get("description").and_then(Value::as_str) != Some(d.as_str()));
    if !renamed && description.is_none() && tool.is_object() {
        return tool.clone();
    }
    Arc::new(changed_def(tool, name, description, naming))
}

fn changed_def(tool: &Value, name: &str, description: Option<&String>, naming: &Naming) -> Value {
    let mut def = tool.clone();
    let Some(obj) = def.as_object_mut() else { return json!({"name": name}) };
    obj.insert("name".into(), json!(name));
    if let Some(d) = description {
        obj.insert("description".into(), json!(d));
    }
    if let Some(meta) = obj.get_mut("_meta") {
        naming.app_uris_out(meta);
    }
    def
}

#[cfg(test)]
mod tests;
