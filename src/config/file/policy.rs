//! The `policy` and `audit` sections: who may see and call what, and the trail of who did.
//! Both are read again on SIGHUP and when the config file changes.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum EffectConfig {
    #[default]
    Allow,
    Deny,
    /// A quota: the calls the rule matches are counted (`calls` a `per`, by `by`), never decided.
    Limit,
    /// The calls the rule matches wait for an approval by one of `approvers`.
    Approve,
}

/// A quota's window: `second`, `minute`, `hour`, `day`, or a number of seconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(untagged)]
pub enum PerConfig {
    Unit(PerUnit),
    Seconds(u64),
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PerUnit {
    Second,
    Minute,
    Hour,
    Day,
}

/// What a quota is counted per.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ByConfig {
    Person,
    Tool,
    Server,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum KindConfig {
    /// Seeing a tool in tools/list and calling it.
    Tools,
    /// A tool's ui:// page: listed, read, inspected (`_ui_inspect`, `_ui_page_status`).
    Pages,
    /// Changing a tool's page (`_ui_refine`, `_ui_regenerate`).
    Refinements,
    /// A server's own resources and resource templates.
    Resources,
    /// A server's prompts: listed and got.
    Prompts,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Rules over who may see and call what. Without rules everything is allowed.
pub struct PolicyConfig {
    /// What happens when no rule decides: allow (the default) or deny.
    pub default: EffectConfig,
    /// Tried in order; the first whose names match and whose `when` holds decides.
    pub rules: Vec<RuleConfig>,
    /// What a tool whose definition (title, description, schemas, annotations) changed since
    /// it was first accepted does: `warn` (passes; logged, counted, in the trail) or `hold`
    /// (listed nowhere, calls refused, until an admin accepts it with `_ui_accept_tool_change`
    /// or `mcp-gen-ui pins accept`).
    pub on_tool_change: OnToolChangeConfig,
    /// What a tool never seen before does: `allow` (pinned as it is) or `hold` (as a change).
    pub on_new_tool: OnNewToolConfig,
    /// Where accepted tool definitions are kept across restarts (default: `tool-pins.json` in
    /// the cache folder's state folder with `cache.type: filesystem`; with `redis`, the shared
    /// store keeps them too; otherwise in memory only).
    pub pins_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnToolChangeConfig {
    #[default]
    Warn,
    Hold,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnNewToolConfig {
    #[default]
    Allow,
    Hold,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
/// One rule. Without `tools`, `prompts` and `resources` it matches every name of its kinds;
/// with some of them, only those kinds (tools, their pages and their refinements by `tools`).
pub struct RuleConfig {
    /// What metrics and the audit trail call it (default: `rule <index>`).
    pub name: Option<String>,
    /// Globs (`*`, `?`) over tool names as hosts see them (`weather__get_forecast`).
    pub tools: Option<Vec<String>>,
    /// Globs over prompt names as hosts see them.
    pub prompts: Option<Vec<String>>,
    /// Globs over resource URIs as hosts see them.
    pub resources: Option<Vec<String>>,
    /// Globs over server names.
    pub servers: Option<Vec<String>>,
    /// Which kinds of request it is about (default: those its names name).
    pub kinds: Option<Vec<KindConfig>>,
    /// allow, deny, limit (a quota: `calls` a `per`, counted by `by`), or approve (held until one
    /// of `approvers` approves the exact call).
    pub effect: Option<EffectConfig>,
    /// `limit`: the calls allowed in each window.
    pub calls: Option<u32>,
    /// `limit`: the window (`minute`, `hour`, `day`, `second`, or seconds), aligned to the clock.
    pub per: Option<PerConfig>,
    /// `limit`: what the calls are counted per (default `["person"]`; `[]`: everyone together).
    pub by: Option<Vec<ByConfig>>,
    /// `approve`: who approves: `caller` (the person confirms their own call), `admins`,
    /// principal names, and JWT groups as `group:<name>`.
    pub approvers: Option<Vec<String>>,
    /// `approve`: seconds a held call waits for a decision (default 600, at most 86400).
    pub expires: Option<u64>,
    /// A CEL condition over `principal` (name, claims, admin), `server`, `tool`, `name`,
    /// `kind`, `transport`, `args` (a call's arguments), and what the tool says of itself:
    /// `annotations` (`readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`,
    /// with the MCP defaults false, true, false, true where the server is silent) and `title`.
    /// One that cannot be evaluated never grants: an allow does not apply, a deny does; test a
    /// key that may be absent with `has(args.city)`.
    pub when: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The audit trail: one JSON line per tool call, page read, refinement, regeneration, denial,
/// admin action, session opened or closed, and configuration reload. Off unless `file` or
/// `stdout` is given.
pub struct AuditConfig {
    /// A file the lines are appended to (created 0600, never through a symlink), rotated by
    /// size.
    pub file: Option<PathBuf>,
    /// Lines to standard output too (not with `server.transport: stdio`, whose stdout is the
    /// protocol).
    pub stdout: bool,
    /// Record a call's arguments whole (up to 64 KiB); by default only their SHA-256.
    pub arguments: bool,
    /// Refuse calls while the trail cannot be written (a line could be lost); by default
    /// lines that cannot be written are dropped and counted.
    pub required: bool,
    /// The file is rotated past this size: `audit.jsonl` becomes `audit.jsonl.1`, and so on.
    pub max_file_bytes: u64,
    /// Rotated files kept (`.1` to `.N`); older ones are removed.
    pub keep_files: u32,
    /// Lines waiting for the writer; more are dropped (or, with `required`, calls refused).
    pub queue: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            file: None,
            stdout: false,
            arguments: false,
            required: false,
            max_file_bytes: 100 * 1024 * 1024,
            keep_files: 5,
            queue: 10_000,
        }
    }
}
