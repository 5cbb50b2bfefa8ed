//! Several upstream servers: the servers file (`--servers-file`, a Claude Desktop or VS Code
//! file as it is) or `servers` in the config file, resolved into what each server runs with.
//! Read at start and again on every reload (the caller keeps the running set when a reload
//! fails). Every error names the file, the server and the field.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_gen_ui_actors::servers::catalog::Curation;
use mcp_gen_ui_actors::servers::glob::Glob;
use mcp_gen_ui_actors::servers::names;
use mcp_gen_ui_actors::upstream::UpstreamSpec;
use serde_json::{Map, Value};

use super::vars::{expand_vars, read_env_file};

use super::{http_url, EnvLookup, MAX_TIMEOUT_MS};
use crate::config::file::{ConfigError, ServerEntryConfig};

/// One upstream server as it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSettings {
    /// Its key in the file (`default` behind `--upstream`).
    pub name: String,
    /// Its name in exposed names, page URIs, metric labels and keys (`names::server_prefix`).
    pub prefix: String,
    pub spec: UpstreamSpec,
    pub request_timeout: Duration,
    pub max_message_bytes: usize,
    /// What its tool list may hold (`upstream.maxTools`, `upstream.maxToolListBytes`).
    pub max_tools: usize,
    pub max_tool_list_bytes: usize,
    pub curation: Curation,
    pub required: bool,
    /// `perPrincipal`: a connection per person (None: one for everyone).
    pub per_principal: Option<PerPrincipal>,
}

/// A server that acts as each person.
#[derive(Debug, Clone, PartialEq)]
pub struct PerPrincipal {
    /// `perPrincipalMax`.
    pub max: usize,
    /// The secrets its `env` and `headers` name (`${principal:NAME}`).
    pub secrets: Vec<String>,
    pub exchange: Option<std::sync::Arc<mcp_gen_ui_actors::upstream::token_exchange::ExchangeConfig>>,
}

/// `${principal:NAME}`: filled in per person from the principal secrets file.
pub const PRINCIPAL_VAR: &str = "${principal:";

/// The secret names a value holds as `${principal:NAME}`.
pub fn principal_vars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(PRINCIPAL_VAR) {
        let after = &rest[i + PRINCIPAL_VAR.len()..];
        let Some(end) = after.find('}') else { break };
        out.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

impl ServerSettings {
    /// Whether a change from `self` to `new` needs the server restarted (not just shown anew).
    pub fn needs_restart(&self, new: &ServerSettings) -> bool {
        self.spec != new.spec
            || self.per_principal != new.per_principal
            || self.request_timeout != new.request_timeout
            || self.max_message_bytes != new.max_message_bytes
            || (self.max_tools, self.max_tool_list_bytes) != (new.max_tools, new.max_tool_list_bytes)
    }
}

/// The servers of a file or section: those to run, the warnings to log, and the entries marked
/// `disabled` (kept in the file, not started: said, but not a warning).
#[derive(Debug, Default)]
pub struct Read {
    pub servers: Vec<ServerSettings>,
    pub warnings: Vec<String>,
    pub disabled: Vec<String>,
    /// Keys other MCP clients write into their own server files, which mean nothing here:
    /// named once (not a warning: a file used as it is passes `check --strict`).
    pub notes: Vec<String>,
}

/// Keys that Claude Desktop, Cline, VS Code, Cursor or Claude Code write into a server entry
/// and that are safe to ignore here (client-side approval lists, UI hints). Keys whose loss
/// would change what runs or what is allowed (`disabledTools`, `envFile`) stay warnings.
const OTHER_CLIENTS_KEYS: &[&str] = &["alwaysAllow", "autoApprove", "networkTimeout", "dev", "gallery", "description", "icon"];

/// What every entry falls back to (the `upstream` section's limits).
#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    pub request_timeout_ms: u64,
    pub max_message_bytes: u64,
    pub max_tools: usize,
    pub max_tool_list_bytes: usize,
}

/// Reads a servers file: a Claude Desktop file (`mcpServers`) or a VS Code `mcp.json`
/// (`servers`), as they are. Returns the servers and the warnings to log. An error about the
/// file as a whole names `named_by` (the flag or key that gave it); one about an entry names
/// the entry's field in the file (`mcpServers.gh.env.T`) and the file.
pub fn read_file(path: &Path, named_by: &str, env: EnvLookup, defaults: Defaults) -> Result<Read, ConfigError> {
    let field = named_by;
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::new(field, format!("cannot read {}: {e}", path.display())))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        ConfigError::new(field, format!("{} is not valid JSON ({e}); it must be a Claude Desktop or VS Code servers file", path.display()))
    })?;
    let (key, map) = match (doc.get("mcpServers"), doc.get("servers")) {
        (Some(Value::Object(m)), _) => ("mcpServers", m),
        (_, Some(Value::Object(m))) => ("servers", m),
        _ => {
            return Err(ConfigError::new(
                field,
                format!("{} holds neither mcpServers (Claude Desktop) nor servers (VS Code): no servers to run", path.display()),
            ))
        }
    };
    let base = path.parent().map(Path::to_path_buf);
    let read = resolve(map, key, env, defaults, base.as_deref()).map_err(|e| e.in_file(path))?;
    Ok(Read { warnings: read.warnings.into_iter().map(|w| format!("{}: {w}", path.display())).collect(), ..read })
}

/// Resolves a map of servers (`field` prefixes every error's field).
pub fn resolve(
    map: &Map<String, Value>,
    field: &str,
    env: EnvLookup,
    defaults: Defaults,
    base: Option<&Path>,
) -> Result<Read, ConfigError> {
    let mut servers = Vec::new();
    let mut warnings = Vec::new();
    let mut disabled = Vec::new();
    // Keys of other tools, each with the servers that have it.
    let mut ignored: Vec<(String, Vec<String>)> = Vec::new();
    let mut known: Vec<(String, Vec<String>)> = Vec::new();
    let ours = ServerEntryConfig::keys();
    let mut prefixes: HashMap<String, String> = HashMap::new();
    for (name, raw) in map {
        let at = |f: &str| if f.is_empty() { format!("{field}.{name}") } else { format!("{field}.{name}.{f}") };
        let entry: ServerEntryConfig = serde_path_to_error::deserialize(raw).map_err(|e| {
            let path = e.path().to_string();
            let said = crate::config::redact::serde_message(&e.into_inner().to_string());
            ConfigError::new(at(if path == "." { "" } else { &path }), crate::config::nearest::unknown_field(&said))
        })?;
        if entry.disabled == Some(true) {
            disabled.push(name.clone());
            continue;
        }
        let Some(prefix) = names::server_prefix(name) else {
            return Err(ConfigError::new(
                at(""),
                "a server's name needs a letter or a digit: it names the server's tools (<server>__<tool>)",
            ));
        };
        // `__` separates the server from the tool in the names hosts see: a server whose name
        // holds it (or becomes it: `a..b` is `a__b`) could take another's names (`a` with a tool
        // `b__c` against `a__b` with a tool `c`), and "another's prefix then __" is that case.
        if prefix.contains(names::SEPARATOR) {
            return Err(ConfigError::new(
                at(""),
                format!(
                    "a server's name may not contain {:?} (it is {prefix:?} in tool names), which separates the server from the tool in the names hosts see (<server>__<tool>): rename it, for example to {:?}",
                    names::SEPARATOR,
                    prefix.replace(names::SEPARATOR, "-")
                ),
            ));
        }
        if let Some(other) = prefixes.insert(prefix.clone(), name.clone()) {
            return Err(ConfigError::new(
                at(""),
                format!("the servers {other:?} and {name:?} would both name their tools {prefix}__<tool>: rename one of them"),
            ));
        }
        // Other tools' keys: `timeout` and `transportType` (Cline) are honoured; the rest
        // (approval lists, UI hints) mean nothing here.
        for k in entry.other.keys().filter(|k| !matches!(k.as_str(), "timeout" | "transportType")) {
            // Near one of ours: a slip that leaves what it meant undone (`tols` for `tools`
            // keeps the write tools shown), said on its own, naming the server.
            if let Some(meant) = crate::config::nearest::nearest(k, ours.iter().map(String::as_str)) {
                warnings.push(format!("{}: the key `{k}` means nothing to mcp-gen-ui and is ignored: did you mean `{meant}`?", at(k)));
                continue;
            }
            let list = if OTHER_CLIENTS_KEYS.contains(&k.as_str()) { &mut known } else { &mut ignored };
            match list.iter_mut().find(|(key, _)| key == k) {
                Some((_, names)) => names.push(name.clone()),
                None => list.push((k.clone(), vec![name.clone()])),
            }
        }
        servers.push(server(name, prefix, &entry, &at, env, defaults, base)?);
    }
    let listed =
        |keys: &[(String, Vec<String>)]| keys.iter().map(|(k, names)| format!("{k} ({})", names.join(", "))).collect::<Vec<_>>().join(", ");
    if !ignored.is_empty() {
        warnings.push(format!("{field}: the keys {} (of other tools) mean nothing to mcp-gen-ui and are ignored", listed(&ignored)));
    }
    let mut notes = Vec::new();
    if !known.is_empty() {
        notes.push(format!("{field}: the keys {} are other MCP clients' own, and ignored here", listed(&known)));
    }
    Ok(Read { servers, warnings, disabled, notes })
}

fn server(
    name: &str,
    prefix: String,
    e: &ServerEntryConfig,
    at: &dyn Fn(&str) -> String,
    env: EnvLookup,
    defaults: Defaults,
    base: Option<&Path>,
) -> Result<ServerSettings, ConfigError> {
    let expand = |f: &str, v: &str| expand_vars(v, env).map_err(|why| ConfigError::new(at(f), why.to_string()));
    // Cline's `transportType` stands in for `type`; its `timeout` (seconds) for ours.
    let kind = e.kind.clone().or_else(|| e.other.get("transportType").and_then(Value::as_str).map(str::to_string));
    let timeout_ms = match (e.request_timeout_ms, e.other.get("timeout").and_then(Value::as_f64)) {
        (Some(ms), _) => ms,
        (None, Some(secs)) if secs.is_finite() && secs > 0.0 => (secs * 1000.0).min(MAX_TIMEOUT_MS as f64) as u64,
        _ => defaults.request_timeout_ms,
    };
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(ConfigError::new(at("requestTimeoutMs"), format!("must be from 1 to {MAX_TIMEOUT_MS} (milliseconds, 24 h)")));
    }
    let max_bytes = e.max_message_bytes.unwrap_or(defaults.max_message_bytes);
    if max_bytes < 1024 {
        return Err(ConfigError::new(at("maxMessageBytes"), "must be at least 1024 (bytes)"));
    }
    let kind = match kind.as_deref() {
        None if e.command.is_some() => "stdio",
        None if e.url.is_some() => "http",
        None => return Err(ConfigError::new(at(""), "gives neither a command (stdio) nor a url (http, sse)")),
        Some("stdio") => "stdio",
        Some("sse") => "sse",
        Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => "http",
        Some(other) => return Err(ConfigError::new(at("type"), format!("{other:?} is not a transport: give stdio, sse or http"))),
    };
    let spec = if kind == "stdio" {
        let Some(command) = e.command.as_deref().filter(|c| !c.trim().is_empty()) else {
            return Err(ConfigError::new(at("command"), "is required for a stdio server: the program that starts it"));
        };
        let mut vars: Vec<(String, String)> = Vec::new();
        if let Some(f) = &e.env_file {
            let file = base.map(|b| b.join(f)).unwrap_or_else(|| f.clone());
            vars.extend(read_env_file(&file).map_err(|why| ConfigError::new(at("envFile"), why.to_string()))?);
        }
        for (k, v) in &e.env {
            vars.push((k.clone(), expand(&format!("env.{k}"), v)?));
        }
        for k in &e.env_passthrough {
            if let Some(v) = env(k) {
                vars.push((k.clone(), v));
            }
        }
        let args = e.args.iter().enumerate().map(|(i, a)| expand(&format!("args[{i}]"), a)).collect::<Result<Vec<_>, _>>()?;
        let cwd = match &e.cwd {
            Some(c) => Some(PathBuf::from(expand("cwd", &c.to_string_lossy())?)),
            None => None,
        };
        UpstreamSpec::Stdio { command: expand("command", command)?, args, env: vars, cwd }
    } else {
        let Some(raw) = &e.url else {
            return Err(ConfigError::new(at("url"), format!("is required for a {kind} server: its endpoint")));
        };
        let url = http_url(&expand("url", raw)?, &at("url"))?;
        let mut headers = Vec::new();
        for (k, v) in &e.headers {
            let v = expand(&format!("headers.{k}"), v)?;
            super::upstream::check_header(&at(&format!("headers.{k}")), k, &v)?;
            headers.push((k.clone(), v));
        }
        if kind == "sse" {
            UpstreamSpec::Sse { url, headers }
        } else {
            UpstreamSpec::StreamableHttp { url, headers, bearer: None }
        }
    };
    let curation = Curation {
        allow: globs(&at("tools.allow"), &e.tools.allow)?,
        deny: globs(&at("tools.deny"), &e.tools.deny)?,
        rename: e.rename.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        descriptions: e.descriptions.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        pages: globs(&at("enabledTools"), e.enabled_tools.as_deref().unwrap_or_default())?,
    };
    for (tool, to) in &curation.rename {
        if to.trim().is_empty() || to.len() > 128 {
            return Err(ConfigError::new(at(&format!("rename.{tool}")), "a new name is 1 to 128 characters"));
        }
    }
    let per_principal = per_principal(e, &spec, at, env)?;
    Ok(ServerSettings {
        per_principal,
        name: name.to_string(),
        prefix,
        spec,
        request_timeout: Duration::from_millis(timeout_ms),
        max_message_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
        max_tools: defaults.max_tools,
        max_tool_list_bytes: defaults.max_tool_list_bytes,
        curation,
        required: e.required.unwrap_or(true),
    })
}

/// `perPrincipal`, checked: `${principal:NAME}` only in such a server's `env` and `headers`,
/// token exchange only for a remote one.
fn per_principal(
    e: &ServerEntryConfig,
    spec: &UpstreamSpec,
    at: &dyn Fn(&str) -> String,
    env: EnvLookup,
) -> Result<Option<PerPrincipal>, ConfigError> {
    let (values, kind): (Vec<&String>, &str) = match spec {
        UpstreamSpec::Stdio { env, args, command, .. } => {
            if args.iter().chain(std::iter::once(command)).any(|a| a.contains(PRINCIPAL_VAR)) {
                return Err(ConfigError::new(
                    at("args"),
                    "${principal:NAME} is filled in only in env (stdio) and headers (remote): arguments show in process lists",
                ));
            }
            (env.iter().map(|(_, v)| v).collect(), "env")
        }
        UpstreamSpec::StreamableHttp { headers, .. } | UpstreamSpec::Sse { headers, .. } => {
            (headers.iter().map(|(_, v)| v).collect(), "headers")
        }
    };
    let secrets: Vec<String> = values.iter().flat_map(|v| principal_vars(v)).collect();
    if e.per_principal != Some(true) {
        if !secrets.is_empty() {
            return Err(ConfigError::new(
                at(kind),
                "uses ${principal:NAME}, which only a server with \"perPrincipal\": true has (one connection per person)",
            ));
        }
        if e.token_exchange.is_some() || e.per_principal_max.is_some() {
            return Err(ConfigError::new(
                at(if e.token_exchange.is_some() { "tokenExchange" } else { "perPrincipalMax" }),
                "applies only with \"perPrincipal\": true",
            ));
        }
        return Ok(None);
    }
    let max = e.per_principal_max.unwrap_or(16);
    if !(1..=10_000).contains(&max) {
        return Err(ConfigError::new(at("perPrincipalMax"), "must be 1 to 10000"));
    }
    let exchange = match &e.token_exchange {
        None => None,
        Some(_) if !matches!(spec, UpstreamSpec::StreamableHttp { .. }) => {
            return Err(ConfigError::new(at("tokenExchange"), "is for a remote server over Streamable HTTP (\"type\": \"http\")"))
        }
        Some(x) => {
            let expand =
                |f: &str, v: &str| expand_vars(v, env).map_err(|why| ConfigError::new(at(&format!("tokenExchange.{f}")), why.to_string()));
            let endpoint = expand("tokenEndpoint", &x.token_endpoint)?;
            let token_endpoint =
                url::Url::parse(&endpoint).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some()).ok_or_else(
                    || ConfigError::new(at("tokenExchange.tokenEndpoint"), "must be the authorization server's http(s) token endpoint"),
                )?;
            let client_secret = expand("clientSecret", &x.client_secret)?;
            if x.client_id.trim().is_empty() || client_secret.is_empty() {
                return Err(ConfigError::new(
                    at("tokenExchange"),
                    "clientId and clientSecret are required (this service's client at the authorization server)",
                ));
            }
            Some(std::sync::Arc::new(mcp_gen_ui_actors::upstream::token_exchange::ExchangeConfig {
                token_endpoint,
                client_id: x.client_id.clone(),
                client_secret,
                audience: x.audience.clone(),
                resource: x.resource.clone(),
                scopes: x.scopes.clone(),
            }))
        }
    };
    Ok(Some(PerPrincipal { max, secrets, exchange }))
}

/// Tool-name globs from a field, compiled once; a bad one is refused naming the field and its
/// position.
pub(crate) fn globs(field: &str, patterns: &[String]) -> Result<Vec<Glob>, ConfigError> {
    patterns
        .iter()
        .enumerate()
        .map(|(i, p)| Glob::new(p).map_err(|why| ConfigError::new(format!("{field}[{i}]"), format!("the glob {p:?} {why}"))))
        .collect()
}

#[cfg(test)]
mod tests;
