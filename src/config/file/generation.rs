//! The `generation`, `toolRefresh`, `ui` and `results` sections: how pages are made and shown.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// UI generation.
pub struct GenerationConfig {
    /// How long a host's read of a page waits for it to be written. Past it the host gets the
    /// template, marked provisional, which puts the written page in its place once it is done;
    /// the generation goes on to its end (see maxGenerationMs).
    pub timeout_ms: u64,
    /// The longest a provider may take to start its answer (time to the first token).
    pub first_token_ms: u64,
    /// The longest silence in an answer that has started.
    pub stall_ms: u64,
    /// The ceiling of one page's generation: classification, every attempt and the waits
    /// between them (not a wait for a free slot).
    pub max_generation_ms: u64,
    /// Attempts after the first when an answer fails, is rejected or is cut (the waits back
    /// off from 1 s, doubling, to 5 s).
    pub max_retries: u32,
    /// Pages written at once; more wait for a slot (their reads get the provisional page).
    pub max_concurrent_generations: usize,
    /// When set, only these tools get a UI; every tool is still proxied.
    pub enabled_tools: Option<Vec<String>>,
    /// light or dark: the theme hint given to the LLM.
    pub theme: Option<String>,
    /// A folder with system.hbs, generate.hbs and classify.hbs to use instead of the built-in
    /// prompts (changing them makes new cache keys).
    pub prompts_dir: Option<PathBuf>,
    /// Extra instructions for every generated page (a house style, a language, a brand
    /// colour). They are the operator's, so they go outside the tool-data fence, and into the
    /// cache key.
    pub style_guide: Option<String>,
    /// Record the shape (keys and JSON types, never values) of the results hosts get from each
    /// tool, give it to the next generation prompt, and remake a page made before the shape was
    /// known once, in the background. With several people, only admins' results teach it.
    pub learn_result_shape: bool,
    /// Pages made before anyone asks, once a server's tools are listed and whenever tools are
    /// added or change: "off" (the default), "all", or a list of tool-name globs (the names
    /// hosts see, `weather__*`). One at a time, only while no host read waits.
    pub warm: Warm,
    /// LLM generations warming may start per minute (0: no limit).
    pub warm_calls_per_minute: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(untagged)]
/// `generation.warm`: "off", "all", or tool-name globs.
pub enum Warm {
    Word(String),
    Globs(Vec<String>),
}

impl Default for Warm {
    fn default() -> Self {
        Warm::Word("off".into())
    }
}

impl Default for GenerationConfig {
    fn default() -> Self {
        GenerationConfig {
            timeout_ms: 15_000,
            first_token_ms: 60_000,
            stall_ms: 30_000,
            max_generation_ms: 300_000,
            max_retries: 2,
            max_concurrent_generations: 2,
            enabled_tools: None,
            theme: None,
            prompts_dir: None,
            style_guide: None,
            learn_result_shape: false,
            warm: Warm::default(),
            warm_calls_per_minute: 30,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Periodic re-listing of the upstream's tools.
pub struct ToolRefreshConfig {
    /// List the upstream's tools again every `intervalMs` (a server that announces
    /// `list_changed` is listed again when it does, whatever this says).
    pub enabled: bool,
    /// How often, in milliseconds.
    pub interval_ms: u64,
}

impl Default for ToolRefreshConfig {
    fn default() -> Self {
        ToolRefreshConfig { enabled: false, interval_ms: 300_000 }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// How the pages present themselves to hosts (MCP Apps `_meta.ui` of the `ui://` resources).
pub struct UiConfig {
    /// A sandbox domain the host requires for this server's pages (some hosts derive one and
    /// render nothing when it is wrong: set it only when the host asks for it).
    pub domain: Option<String>,
    /// Who is given the OpenAI Apps SDK's keys (`openai/outputTemplate`, `openai/widgetCSP`,
    /// ...) beside MCP Apps' `_meta.ui`: "declared" (the default: hosts that declare the MCP
    /// Apps extension), "undeclared" (also hosts that declare nothing, such as ChatGPT's older
    /// clients and MCPJam: they then get the pages and the `_ui_*` tools), or "off".
    pub apps_sdk: AppsSdkMode,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
/// `ui.appsSdk`.
pub enum AppsSdkMode {
    Off,
    #[default]
    Declared,
    Undeclared,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Shaping {
    /// Results pass through unchanged.
    #[default]
    None,
    /// `{results, meta_data, returned_file_names, returned_file_contents}` results: the model
    /// gets results, metadata and file names; the page gets the files (hosts that render MCP
    /// Apps only; others get the upstream's answer unchanged).
    Artifacts,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// What this service does with tool results (opt-in; by default they pass through untouched).
pub struct ResultsConfig {
    pub shaping: Shaping,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum RefinementScope {
    /// Every refinement shapes everyone's page (one person, or a team that agrees).
    #[default]
    Shared,
    /// A person's refinements shape only their own pages; admins' shape everyone's.
    Principal,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// Whose pages a `_ui_refine` changes.
pub struct RefinementsConfig {
    pub scope: RefinementScope,
}
