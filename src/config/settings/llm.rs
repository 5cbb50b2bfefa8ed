//! `llm`: the provider (named, or chosen by the API key in the environment), its model and
//! base URL, and the key itself (environment first, then the config file).

use super::{http_url, EnvLookup, Secret};
use crate::config::cli::{Args, ProviderArg};
use crate::config::file::{Config, ConfigError, Provider};

/// The provider, why it was chosen (for the start-up log), and its key.
pub(super) struct Llm {
    pub provider: Provider,
    pub reason: String,
    pub api_key: Option<Secret>,
}

pub(super) fn resolve(args: &Args, env: EnvLookup, cfg: &mut Config, warnings: &mut Vec<String>) -> Result<Llm, ConfigError> {
    if let Some(p) = args.provider {
        cfg.llm.provider = Some(match p {
            ProviderArg::Anthropic => Provider::Anthropic,
            ProviderArg::Openai => Provider::Openai,
            ProviderArg::Ollama => Provider::Ollama,
            ProviderArg::Offline => Provider::Offline,
        });
    }
    if let Some(m) = &args.model {
        cfg.llm.model = Some(m.clone());
    }
    if let Some(u) = &args.llm_base_url {
        cfg.llm.base_url = Some(u.clone());
    }
    if let Some(u) = &cfg.llm.base_url {
        let field = if args.llm_base_url.is_some() { "--llm-base-url" } else { "llm.baseUrl" };
        http_url(u, field)?;
    }
    if cfg.llm.api_key.is_some() {
        warnings.push("llm.apiKey is set in the config file: prefer the provider's environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY, OLLAMA_API_KEY) so the key stays out of files".into());
    }
    let has_key = |p: Provider| p.key_var().and_then(env).is_some_and(|k| !k.is_empty()) || cfg.llm.api_key.is_some();
    let (provider, provider_reason) = match cfg.llm.provider {
        Some(p) => {
            if matches!(p, Provider::Anthropic | Provider::Openai) && !has_key(p) && cfg.llm.base_url.is_none() {
                let var = p.key_var().expect("keyed provider");
                return Err(ConfigError::new(
                    "llm.provider",
                    format!("{} needs an API key: set {var} (or choose --provider offline)", p.name()),
                ));
            }
            (p, "chosen by flag, environment or config".to_string())
        }
        None => {
            let keyed =
                [Provider::Anthropic, Provider::Openai].into_iter().find(|p| p.key_var().and_then(env).is_some_and(|k| !k.is_empty()));
            match keyed {
                Some(p) => (p, format!("{} is set in the environment", p.key_var().expect("keyed"))),
                None => (Provider::Offline, "no provider named and no API key in the environment".into()),
            }
        }
    };
    let api_key = provider.key_var().and_then(env).filter(|k| !k.is_empty()).or_else(|| cfg.llm.api_key.clone()).map(Secret);
    let t = cfg.llm.temperature;
    if !(t.is_finite() && (0.0..=2.0).contains(&t)) {
        return Err(ConfigError::new("llm.temperature", format!("{t} is out of range: from 0 to 2 (every provider's range)")));
    }
    if !(1..=1_000_000).contains(&cfg.llm.max_tokens) {
        return Err(ConfigError::new("llm.maxTokens", "must be from 1 to 1000000"));
    }
    Ok(Llm { provider, reason: provider_reason, api_key })
}
