//! The `llm` section: which provider writes the pages, with which model.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    Anthropic,
    Openai,
    Ollama,
    Offline,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::Ollama => "ollama",
            Provider::Offline => "offline",
        }
    }

    pub fn key_var(self) -> Option<&'static str> {
        match self {
            Provider::Anthropic => Some("ANTHROPIC_API_KEY"),
            Provider::Openai => Some("OPENAI_API_KEY"),
            Provider::Ollama => Some("OLLAMA_API_KEY"),
            Provider::Offline => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
/// The LLM that writes UIs.
pub struct LlmConfig {
    /// anthropic, openai, ollama or offline. Unset: the provider whose API key is in the
    /// environment, else offline.
    pub provider: Option<Provider>,
    /// The model to ask. Unset: the provider's default (claude-sonnet-4-5, gpt-4.1,
    /// qwen2.5-coder:14b).
    pub model: Option<String>,
    /// Base URL of the provider's API (any OpenAI-compatible server for openai).
    pub base_url: Option<String>,
    /// Prefer the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, OLLAMA_API_KEY): a key here
    /// works but logs a warning.
    pub api_key: Option<String>,
    /// Sampling temperature, 0 to 2: low keeps pages plain and alike.
    pub temperature: f64,
    /// The most tokens one answer may have (1 to 1,000,000); a page cut at it is asked for
    /// again, more compact. Also bounds how long a page is expected to be.
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig { provider: None, model: None, base_url: None, api_key: None, temperature: 0.2, max_tokens: 16000 }
    }
}
