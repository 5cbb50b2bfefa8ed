//! Names in the configuration that match nothing: a rule's, a profile's or a server's glob that
//! no configured server or listed tool answers to. Such a setting looks fine and does nothing (a
//! deny that matches nothing fails open), so each is a warning: in `check` and the start's log
//! for what the configuration alone shows (server names, and the `<server>__` of tool and prompt
//! names), and in the start's log once each server has listed its tools for the rest
//! (`at_start.rs`). `checkStrict` / `check --strict` make them errors.
//!
//! Pure: the configuration's names (a [`Scope`]) and, for the second part, each listed server's
//! tools in, the warnings out.

pub mod at_start;

use std::collections::{BTreeMap, HashMap};

use mcp_gen_ui_actors::servers::catalog::Curation;
use mcp_gen_ui_actors::servers::glob::Glob;
use mcp_gen_ui_actors::servers::names::SEPARATOR;

use crate::config::cli::Args;
use crate::config::file::ConfigError;
use crate::config::file::{EffectConfig, ProfileConfig, RuleConfig};
use crate::config::nearest::nearest;
use crate::config::settings::{self, EnvLookup, Settings};

/// One server as the configuration names it.
#[derive(Debug, Clone)]
pub struct ServerNames {
    pub name: String,
    /// What its tools and prompts start with (`<prefix>__`) with several servers.
    pub prefix: String,
    pub curation: Curation,
    /// Where its entry is written: `servers.<name>`, or `<file>: <key>.<name>`.
    pub at: String,
}

/// The names the configuration gives, owned (the start's check runs after the settings are gone).
#[derive(Debug, Clone)]
pub struct Scope {
    pub servers: Vec<ServerNames>,
    /// One server behind `--upstream`: names are its own, with no `<server>__`.
    pub bare: bool,
    pub rules: Vec<RuleConfig>,
    pub profiles: BTreeMap<String, ProfileConfig>,
    /// This service's own tools (`_ui_*`, the search tools): rules and profiles may name them.
    pub own_tools: Vec<String>,
}

/// What `check` cannot see without starting the servers, and so leaves to the start.
pub const LEFT_TO_THE_START: &str = "the tool names of tools.allow, tools.deny, enabledTools, rename and descriptions, and of rules and profiles beyond their <server>__ (check starts no server; a start checks them once each server has listed its tools); rules' prompt names beyond their <server>__, and resource URIs beyond their server";

impl Scope {
    pub fn of(s: &Settings) -> Scope {
        let file = s.upstreams.file.as_ref().map(|f| f.display().to_string());
        let servers = s
            .upstreams
            .servers
            .iter()
            .map(|srv| ServerNames {
                name: srv.name.clone(),
                prefix: srv.prefix.clone(),
                curation: srv.curation.clone(),
                at: match &file {
                    Some(f) => format!("{f}: {}", srv.name),
                    None if s.upstreams.bare => "upstream".to_string(),
                    None => format!("servers.{}", srv.name),
                },
            })
            .collect();
        let own_tools = mcp_gen_ui_actors::session::ui_tools::definitions()
            .into_iter()
            .chain(mcp_gen_ui_actors::session::discovery::definitions())
            .filter_map(|d| d.get("name").and_then(serde_json::Value::as_str).map(str::to_string))
            .collect();
        Scope { servers, bare: s.upstreams.bare, rules: s.config.policy.rules.clone(), profiles: s.config.profiles.clone(), own_tools }
    }

    fn server_names(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.name.as_str()).collect()
    }

    /// The servers a glob over names hosts see (tools, prompts) could name: those whose
    /// `<prefix>__` it can start with. With one server, that one.
    fn servers_named_by(&self, pattern: &str) -> Vec<&ServerNames> {
        if self.bare {
            return self.servers.iter().collect();
        }
        let head = literal_head(pattern);
        let open = head.len() < pattern.len();
        self.servers
            .iter()
            .filter(|s| {
                let want = format!("{}{SEPARATOR}", s.prefix);
                head.starts_with(&want) || (open && want.starts_with(head))
            })
            .collect()
    }

    fn names_own_tool(&self, pattern: &str) -> bool {
        Glob::new(pattern).is_ok_and(|g| self.own_tools.iter().any(|t| g.matches(t)))
    }
}

/// The part of a glob before its first wildcard.
fn literal_head(pattern: &str) -> &str {
    &pattern[..pattern.find(['*', '?']).unwrap_or(pattern.len())]
}

fn effect_word(effect: Option<EffectConfig>) -> &'static str {
    match effect {
        Some(EffectConfig::Deny) => "the deny rule denies nothing by it",
        _ => "the rule allows nothing by it",
    }
}

fn did_you_mean<'a>(pattern: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    if pattern.contains(['*', '?']) {
        return String::new();
    }
    nearest(pattern, candidates).map(|m| format!("; did you mean {m:?}?")).unwrap_or_default()
}

/// What the configuration alone shows: server names in rules and profiles, and the
/// `<server>__` of the tool and prompt names of rules and profiles (several servers).
pub fn statically(scope: &Scope) -> Vec<String> {
    let mut out = Vec::new();
    let servers = scope.server_names();
    let listed = servers.join(", ");
    let server_glob = |field: String, pattern: &str, what: &str, out: &mut Vec<String>| {
        let Ok(g) = Glob::new(pattern) else { return };
        if !servers.iter().any(|s| g.matches(s)) {
            let mean = did_you_mean(pattern, servers.iter().copied());
            out.push(format!("{field}: {pattern:?} matches no server (the servers are {listed}): {what}{mean}"));
        }
    };
    let prefixes: Vec<String> = scope.servers.iter().map(|s| format!("{}{SEPARATOR}", s.prefix)).collect();
    let name_glob = |field: String, pattern: &str, what: &str, out: &mut Vec<String>| {
        if scope.bare || !scope.servers_named_by(pattern).is_empty() || scope.names_own_tool(pattern) {
            return;
        }
        out.push(format!(
            "{field}: {pattern:?} names no server's tools or prompts (they are named <server>__<name>: {}...): {what}",
            prefixes.join("..., ")
        ));
    };
    for (i, r) in scope.rules.iter().enumerate() {
        let what = effect_word(r.effect);
        for (j, p) in r.servers.iter().flatten().enumerate() {
            server_glob(format!("policy.rules[{i}].servers[{j}]"), p, what, &mut out);
        }
        for (j, p) in r.tools.iter().flatten().enumerate() {
            name_glob(format!("policy.rules[{i}].tools[{j}]"), p, what, &mut out);
        }
        for (j, p) in r.prompts.iter().flatten().enumerate() {
            name_glob(format!("policy.rules[{i}].prompts[{j}]"), p, what, &mut out);
        }
        for (j, p) in r.resources.iter().flatten().enumerate() {
            if let Some(named) = uri_server(p).filter(|_| !scope.bare) {
                if !scope.servers.iter().any(|s| s.prefix == named) {
                    out.push(format!(
                        "policy.rules[{i}].resources[{j}]: {p:?} names the server {named:?}, which is not one (the servers are {listed}): {what}"
                    ));
                }
            }
        }
    }
    for (name, p) in &scope.profiles {
        let what = "the profile gets nothing by it";
        for (j, pat) in p.servers.iter().flatten().enumerate() {
            server_glob(format!("profiles.{name}.servers[{j}]"), pat, what, &mut out);
        }
        for (j, pat) in p.tools.iter().enumerate() {
            name_glob(format!("profiles.{name}.tools[{j}]"), pat, what, &mut out);
        }
        for (j, pat) in p.pin.iter().enumerate() {
            name_glob(format!("profiles.{name}.pin[{j}]"), pat, "nothing is pinned by it", &mut out);
        }
        for tool in p.overrides.keys() {
            name_glob(format!("profiles.{name}.overrides.{tool}"), tool, "it overrides nothing", &mut out);
        }
    }
    out
}

/// The server a resource glob names, when its literal part says it: `scheme://<server>+...`,
/// `scheme:<server>+...` (a server's own URIs) or `ui://<server>/...` (its pages).
fn uri_server(pattern: &str) -> Option<&str> {
    let head = literal_head(pattern);
    let (scheme, rest) = head.split_once(':')?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let end = if scheme == "ui" { rest.find(['/', '+'])? } else { rest.find('+')? };
    Some(&rest[..end]).filter(|s| !s.is_empty())
}

/// One server's tools as it listed them: its own names, and the names hosts see.
#[derive(Debug, Clone, Default)]
pub struct Listed {
    pub own: Vec<String>,
    pub shown: Vec<String>,
}

/// What each listed server's tools show: the per-server globs and names that match none of its
/// tools, and the tool names of rules and profiles that match no tool hosts see, when every
/// server they could name has listed (`listed` holds those that have; a per-person server's
/// tools come with the first person, so names of it are left).
pub fn with_tools(scope: &Scope, listed: &HashMap<String, Listed>) -> Vec<String> {
    let mut out = Vec::new();
    for s in &scope.servers {
        let Some(tools) = listed.get(&s.name) else { continue };
        let own: Vec<&str> = tools.own.iter().map(String::as_str).collect();
        let of = |field: &str, pattern: &str, what: &str, also: &[&str], out: &mut Vec<String>| {
            let Ok(g) = Glob::new(pattern) else { return };
            if !own.iter().chain(also).any(|t| g.matches(t)) {
                let mean = did_you_mean(pattern, own.iter().copied());
                out.push(format!("{}.{field}: {pattern:?} matches no tool of {} ({} listed): {what}{mean}", s.at, s.name, own.len()));
            }
        };
        let c = &s.curation;
        for (j, g) in c.allow.iter().enumerate() {
            of(&format!("tools.allow[{j}]"), g.as_str(), "it shows nothing", &[], &mut out);
        }
        for (j, g) in c.deny.iter().enumerate() {
            of(&format!("tools.deny[{j}]"), g.as_str(), "it hides nothing", &[], &mut out);
        }
        let shown: Vec<&str> = tools.shown.iter().map(String::as_str).collect();
        for (j, g) in c.pages.iter().enumerate() {
            of(&format!("enabledTools[{j}]"), g.as_str(), "no tool gets a page by it", &shown, &mut out);
        }
        let mut renamed: Vec<&String> = c.rename.keys().collect();
        renamed.sort();
        for tool in renamed {
            of(&format!("rename.{tool}"), tool, "nothing is renamed", &[], &mut out);
        }
        let mut described: Vec<&String> = c.descriptions.keys().collect();
        described.sort();
        for tool in described {
            of(&format!("descriptions.{tool}"), tool, "no description is replaced", &[], &mut out);
        }
    }
    // Tool names as hosts see them, and whether a glob's servers have all listed.
    let shown: Vec<&str> = listed.values().flat_map(|l| l.shown.iter().map(String::as_str)).collect();
    let hosts_see = |field: String, pattern: &str, what: &str, out: &mut Vec<String>| {
        let servers = scope.servers_named_by(pattern);
        if servers.is_empty() || servers.iter().any(|s| !listed.contains_key(&s.name)) || scope.names_own_tool(pattern) {
            return; // named no server (said statically), or not all of them known
        }
        let Ok(g) = Glob::new(pattern) else { return };
        if !shown.iter().any(|t| g.matches(t)) {
            let mean = did_you_mean(pattern, shown.iter().copied());
            out.push(format!("{field}: {pattern:?} matches no tool hosts are shown: {what}{mean}"));
        }
    };
    for (i, r) in scope.rules.iter().enumerate() {
        for (j, p) in r.tools.iter().flatten().enumerate() {
            hosts_see(format!("policy.rules[{i}].tools[{j}]"), p, effect_word(r.effect), &mut out);
        }
    }
    for (name, p) in &scope.profiles {
        for (j, pat) in p.tools.iter().enumerate() {
            hosts_see(format!("profiles.{name}.tools[{j}]"), pat, "the profile gets nothing by it", &mut out);
        }
        for (j, pat) in p.pin.iter().enumerate() {
            hosts_see(format!("profiles.{name}.pin[{j}]"), pat, "nothing is pinned by it", &mut out);
        }
        for tool in p.overrides.keys() {
            hosts_see(format!("profiles.{name}.overrides.{tool}"), tool, "it overrides nothing", &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests;

/// The settings a run resolves, with the names that match no configured server among their
/// warnings (what the configuration alone shows; the start adds the tools it finds).
pub fn resolve(args: &Args, env: EnvLookup) -> Result<Settings, ConfigError> {
    let mut settings = settings::resolve(args, env)?;
    let unmatched = statically(&Scope::of(&settings));
    settings.warnings.extend(unmatched);
    Ok(settings)
}
