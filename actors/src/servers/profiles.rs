//! Profiles: named views of the fleet, one per kind of client (`/mcp/<profile>`, `--profile`).
//! A profile selects tools by server and tool globs, shows some of them under other names,
//! descriptions or annotations, and either lists them all or (search mode) lists the pinned ones
//! plus `search_tools`, `describe_tools` and `call_tool`. Pages, refinements and the cache stay
//! the catalog's: a renamed tool keeps its page, and its page's calls by the catalog's name still
//! reach it. Pure, but for [`Profiles`], the set in force (swapped whole on a reload) and each
//! profile's search index (made again when the catalog changes).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use serde_json::Value;

use super::catalog::{Catalog, ExposedTool};
use super::glob::Glob;
use super::search::ToolIndex;

/// The tools search mode adds; names a profile may not give a tool.
pub const SEARCH_TOOLS: [&str; 3] = ["search_tools", "describe_tools", "call_tool"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discovery {
    /// Every selected tool is listed.
    #[default]
    List,
    /// The pinned tools are listed, with the three search tools for the rest.
    Search,
}

/// How one tool is shown in a profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Override {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Merged over the tool's own annotations.
    pub annotations: Option<serde_json::Map<String, Value>>,
}

/// A profile as configured (the config layer fills it in; `compile` checks it).
#[derive(Debug, Clone, Default)]
pub struct ProfileSpec {
    pub name: String,
    pub servers: Option<Vec<String>>,
    pub tools: Vec<String>,
    /// By the tool's name as the catalog has it (`memory__read_graph`).
    pub overrides: BTreeMap<String, Override>,
    pub discovery: Discovery,
    pub pin: Vec<String>,
}

/// Why a profile cannot be used: the field under `profiles.<name>` and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("profiles.{profile}.{field}: {message}")]
pub struct ProfileError {
    pub profile: String,
    pub field: String,
    pub message: String,
}

#[derive(Debug)]
pub struct Profile {
    pub name: Arc<str>,
    servers: Option<Vec<Glob>>,
    tools: Vec<Glob>,
    overrides: HashMap<String, Override>,
    /// A shown name to the catalog's name.
    aliases: HashMap<String, String>,
    pub discovery: Discovery,
    pin: Vec<Glob>,
    /// The search index of the catalog it was made from (search mode).
    index: Mutex<Option<(Arc<Catalog>, Arc<ToolIndex>)>>,
}

/// Whether `s` is a profile name: what a URL path segment and a flag take as they are.
pub fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Whether a tool name is one the LLM APIs accept (what an override may rename to).
fn valid_tool_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Profile {
    pub fn compile(spec: &ProfileSpec) -> Result<Profile, ProfileError> {
        let err = |field: String, message: String| ProfileError { profile: spec.name.clone(), field, message };
        if !valid_name(&spec.name) {
            return Err(err("(name)".into(), "a profile name is 1 to 64 of a-z, 0-9, - and _ (it is a URL path segment)".into()));
        }
        let globs = |field: &str, list: &[String]| -> Result<Vec<Glob>, ProfileError> {
            list.iter().enumerate().map(|(i, p)| Glob::new(p).map_err(|e| err(format!("{field}[{i}]"), e.to_string()))).collect()
        };
        if spec.tools.is_empty() {
            return Err(err("tools".into(), "is empty: the profile would have no tools; give globs such as [\"memory__*\"]".into()));
        }
        let tools = globs("tools", &spec.tools)?;
        let servers = spec.servers.as_deref().map(|s| globs("servers", s)).transpose()?;
        let pin = globs("pin", &spec.pin)?;
        if !spec.pin.is_empty() && spec.discovery == Discovery::List {
            return Err(err(
                "pin".into(),
                "only a profile with \"discovery\": \"search\" pins tools (in list mode every tool is listed)".into(),
            ));
        }
        let mut aliases = HashMap::new();
        for (tool, o) in &spec.overrides {
            let Some(shown) = &o.name else { continue };
            let field = format!("overrides.{tool}.name");
            if !valid_tool_name(shown) {
                return Err(err(field, format!("{shown:?} is not a tool name hosts accept: 1 to 64 of A-Z, a-z, 0-9, _ and -")));
            }
            if shown.starts_with(crate::mcp::ui_meta::UI_TOOL_PREFIX)
                || (spec.discovery == Discovery::Search && SEARCH_TOOLS.contains(&shown.as_str()))
            {
                return Err(err(field, format!("{shown:?} is a name of this service's own tools; choose another")));
            }
            if let Some(other) = aliases.insert(shown.clone(), tool.clone()) {
                return Err(err(field, format!("{shown:?} is also the name given to {other:?}; names in a profile must differ")));
            }
        }
        Ok(Profile {
            name: Arc::from(spec.name.as_str()),
            servers,
            tools,
            overrides: spec.overrides.clone().into_iter().collect(),
            aliases,
            discovery: spec.discovery,
            pin,
            index: Mutex::new(None),
        })
    }

    /// Whether the profile selects the tool (callable, its page readable).
    pub fn includes(&self, t: &ExposedTool) -> bool {
        self.servers.as_deref().is_none_or(|s| super::glob::any(s, &t.server)) && super::glob::any(&self.tools, &t.name)
    }

    /// Whether the profile may select something of `server` (its server globs allow it).
    pub fn includes_server(&self, server: &str) -> bool {
        self.servers.as_deref().is_none_or(|s| super::glob::any(s, server))
    }

    /// Whether `tools/list` shows it.
    pub fn listed(&self, t: &ExposedTool) -> bool {
        self.includes(t) && (self.discovery == Discovery::List || super::glob::any(&self.pin, &t.name))
    }

    /// The name hosts of this profile call it by.
    pub fn shown_name<'a>(&'a self, t: &'a ExposedTool) -> &'a str {
        self.overrides.get(&t.name).and_then(|o| o.name.as_deref()).unwrap_or(&t.name)
    }

    /// The catalog's name of what a host of this profile calls `name` (its own name when the
    /// profile renames nothing to it).
    pub fn resolve<'a>(&'a self, name: &'a str) -> &'a str {
        self.aliases.get(name).map_or(name, String::as_str)
    }

    /// The tool's definition as this profile shows it: its name, description and annotations
    /// overridden where the profile says.
    pub fn present(&self, t: &ExposedTool, mut def: Value) -> Value {
        let Some(o) = self.overrides.get(&t.name) else { return def };
        if let Some(n) = &o.name {
            def["name"] = Value::from(n.as_str());
        }
        if let Some(d) = &o.description {
            def["description"] = Value::from(d.as_str());
        }
        if let Some(a) = &o.annotations {
            let mut merged = def.get("annotations").and_then(Value::as_object).cloned().unwrap_or_default();
            merged.extend(a.clone());
            def["annotations"] = Value::Object(merged);
        }
        def
    }

    /// The tools it selects, as it shows them: (shown name, tool).
    pub fn selected<'a>(&'a self, catalog: &'a Catalog) -> impl Iterator<Item = (&'a str, &'a ExposedTool)> + 'a {
        catalog.tools().iter().filter(|t| self.includes(t)).map(|t| (self.shown_name(t), t))
    }

    /// The search index of `catalog`'s tools in this profile, if it was made for this catalog.
    pub fn index_for(&self, catalog: &Arc<Catalog>) -> Option<Arc<ToolIndex>> {
        let held = self.index.lock().unwrap_or_else(|e| e.into_inner());
        held.as_ref().filter(|(c, _)| Arc::ptr_eq(c, catalog)).map(|(_, i)| i.clone())
    }

    /// Makes the index of `catalog` (CPU work: callers run it off the threads that route
    /// messages) and keeps it.
    pub fn build_index(&self, catalog: &Arc<Catalog>) -> Arc<ToolIndex> {
        if let Some(i) = self.index_for(catalog) {
            return i;
        }
        let index = Arc::new(ToolIndex::build(self.selected(catalog)));
        *self.index.lock().unwrap_or_else(|e| e.into_inner()) = Some((catalog.clone(), index.clone()));
        index
    }
}

/// The profiles in force, by name (swapped whole on a reload).
#[derive(Default)]
pub struct Profiles {
    map: RwLock<Arc<HashMap<String, Arc<Profile>>>>,
}

impl Profiles {
    pub fn new(list: Vec<Arc<Profile>>) -> Profiles {
        let p = Profiles::default();
        p.replace(list);
        p
    }

    pub fn replace(&self, list: Vec<Arc<Profile>>) {
        let map = list.into_iter().map(|p| (p.name.to_string(), p)).collect();
        *self.map.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(map);
    }

    pub fn get(&self, name: &str) -> Option<Arc<Profile>> {
        self.map.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Every profile, by name.
    pub fn all(&self) -> Vec<Arc<Profile>> {
        let mut v: Vec<Arc<Profile>> = self.map.read().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    pub fn names(&self) -> Vec<String> {
        self.all().iter().map(|p| p.name.to_string()).collect()
    }
}

#[cfg(test)]
mod tests;
