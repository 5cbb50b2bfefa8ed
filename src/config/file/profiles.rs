//! The `profiles` section: named views of the fleet, each served at `/mcp/<name>` (and with
//! `--profile NAME` on stdio). Read again on SIGHUP and when the config file changes.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum DiscoveryConfig {
    /// Every selected tool is listed.
    #[default]
    List,
    /// The pinned tools are listed, with search_tools, describe_tools and call_tool for the rest.
    Search,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
/// One profile: what one kind of client gets.
pub struct ProfileConfig {
    /// Globs over server names [default: every server].
    pub servers: Option<Vec<String>>,
    /// Globs over tool names as `/mcp` shows them (`memory__*`).
    pub tools: Vec<String>,
    /// By a tool's name as `/mcp` shows it: how this profile shows it.
    #[serde(default)]
    pub overrides: BTreeMap<String, OverrideConfig>,
    /// list (every selected tool) or search (the pinned ones and the three search tools).
    #[serde(default)]
    pub discovery: DiscoveryConfig,
    /// With `discovery: search`: globs of the tools listed as they are.
    #[serde(default)]
    pub pin: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideConfig {
    /// The name hosts of this profile call it by (its page's own calls by the old name still work).
    pub name: Option<String>,
    /// The description hosts of this profile see instead of the tool's own.
    pub description: Option<String>,
    /// Merged over the tool's own annotations (`{"readOnlyHint": true}`).
    pub annotations: Option<serde_json::Map<String, serde_json::Value>>,
}
