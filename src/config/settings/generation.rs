//! `generation` and `ui`: the budget and slots, the style guide (`--prompt`, `--prompt-file`),
//! the theme, and the sandbox domain passed to hosts.

use super::MAX_TIMEOUT_MS;
use crate::config::cli::Args;
use crate::config::file::{Config, ConfigError, Warm};
use mcp_gen_ui_actors::servers::glob::Glob;

pub(super) fn resolve(args: &Args, cfg: &mut Config) -> Result<(), ConfigError> {
    if cfg.generation.max_concurrent_generations == 0 {
        return Err(ConfigError::new("generation.maxConcurrentGenerations", "must be at least 1"));
    }
    let g = &cfg.generation;
    for (field, ms) in [
        ("generation.timeoutMs", g.timeout_ms),
        ("generation.firstTokenMs", g.first_token_ms),
        ("generation.stallMs", g.stall_ms),
        ("generation.maxGenerationMs", g.max_generation_ms),
    ] {
        if !(1..=MAX_TIMEOUT_MS).contains(&ms) {
            return Err(ConfigError::new(field, format!("must be from 1 to {MAX_TIMEOUT_MS} (milliseconds, 24 h)")));
        }
    }
    for (field, ms) in [("generation.firstTokenMs", g.first_token_ms), ("generation.stallMs", g.stall_ms)] {
        if ms > g.max_generation_ms {
            return Err(ConfigError::new(
                field,
                format!("is {ms} ms, longer than generation.maxGenerationMs ({} ms): it could never be reached", g.max_generation_ms),
            ));
        }
    }
    if let Some(text) = &args.prompt {
        cfg.generation.style_guide = Some(text.clone());
    }
    if let Some(path) = &args.prompt_file {
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError::new("--prompt-file", format!("cannot read {}: {e}", path.display())))?;
        cfg.generation.style_guide = Some(text);
    }
    if let Some(g) = &cfg.generation.style_guide {
        let field = if args.prompt.is_some() {
            "--prompt"
        } else if args.prompt_file.is_some() {
            "--prompt-file"
        } else {
            "generation.styleGuide"
        };
        if g.trim().is_empty() {
            return Err(ConfigError::new(field, "is empty: give the instructions, or leave it out"));
        }
        if g.len() > 4000 {
            return Err(ConfigError::new(
                field,
                format!("is {} characters; keep it under 4000 (it is sent with every generation)", g.len()),
            ));
        }
    }
    if let Some(d) = &cfg.ui.domain {
        let ok = !d.is_empty() && d.len() <= 253 && d.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
        if !ok {
            return Err(ConfigError::new(
                "ui.domain",
                format!("{d:?} is not a host name (letters, digits, '.', '-', an optional ':port'; no scheme or path)"),
            ));
        }
    }
    if let Some(t) = &cfg.generation.theme {
        if t != "light" && t != "dark" {
            return Err(ConfigError::new("generation.theme", format!("{t:?} is not light or dark")));
        }
    }
    warm_globs(cfg)?;
    let refresh = cfg.tool_refresh.interval_ms;
    if !(1_000..=MAX_TIMEOUT_MS).contains(&refresh) {
        return Err(ConfigError::new(
            "toolRefresh.intervalMs",
            format!("must be from 1000 to {MAX_TIMEOUT_MS} (milliseconds: a second to a day)"),
        ));
    }
    Ok(())
}

/// `generation.warm` as globs of tool names (None: off; "all" is `*`).
pub fn warm_globs(cfg: &Config) -> Result<Option<Vec<Glob>>, ConfigError> {
    match &cfg.generation.warm {
        Warm::Word(w) if w == "off" => Ok(None),
        Warm::Word(w) if w == "all" => Ok(Some(super::servers::globs("generation.warm", &["*".to_string()])?)),
        Warm::Word(w) => Err(ConfigError::new("generation.warm", format!("{w:?} is not \"off\", \"all\" or a list of tool-name globs"))),
        Warm::Globs(g) if g.is_empty() => Ok(None),
        Warm::Globs(g) => {
            if g.len() > 1000 || g.iter().any(|p| p.is_empty() || p.len() > 200) {
                return Err(ConfigError::new("generation.warm", "give at most 1000 globs, each 1 to 200 characters"));
            }
            Ok(Some(super::servers::globs("generation.warm", g)?))
        }
    }
}
