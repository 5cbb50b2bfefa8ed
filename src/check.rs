//! `mcp-gen-ui check`: validates the configuration as a run with the same flags would, and
//! starts nothing (no server, no process, no connection, no file written). Prints what it would
//! serve; on an error names the file, the field and what to do, and exits 2, as `nginx -t` or
//! `promtool check config` do.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mcp_gen_ui_actors::generation::prompts::Prompts;
use mcp_gen_ui_actors::policy::Effect;
use mcp_gen_ui_actors::proxy::router::Hearers;
use mcp_gen_ui_actors::servers::profiles::Discovery;
use mcp_gen_ui_actors::servers::supervisor::may_ask;

use crate::config::cli::Args;
use crate::config::file::ConfigError;
use crate::config::settings::{self, EnvLookup, Settings};

/// Runs the check; the exit code says whether the configuration is valid. With `strict` (or
/// `checkStrict` in the file) a warning makes it not valid.
pub fn run(args: &Args, env: EnvLookup, strict: bool) -> ExitCode {
    let settings = match crate::unmatched::resolve(args, env) {
        Ok(s) => s,
        Err(e) => return refuse(args, &e),
    };
    if let Err(e) = beyond_parsing(&settings) {
        return refuse(args, &e);
    }
    let strict = strict || settings.config.check_strict;
    if strict && !settings.warnings.is_empty() {
        let why = if settings.config.check_strict { "checkStrict" } else { "--strict" };
        for w in &settings.warnings {
            eprintln!("mcp-gen-ui check: {why}: {w}");
        }
        eprintln!(
            "mcp-gen-ui check: {} warning(s) are errors with {why}: the configuration is not valid; nothing was started",
            settings.warnings.len()
        );
        return ExitCode::from(2);
    }
    print!("{}", summary(&settings));
    ExitCode::SUCCESS
}

/// `check --connect`, once the configuration itself is valid: the servers started, asked, stopped.
pub fn connect(args: &Args, strict: bool) -> ExitCode {
    let Ok(settings) = crate::unmatched::resolve(args, &|k| std::env::var(k).ok()) else { return ExitCode::from(2) };
    let prompts = match mcp_gen_ui_actors::generation::prompts::Prompts::load(settings.config.generation.prompts_dir.as_deref()) {
        Ok(p) => std::sync::Arc::new(p),
        Err(e) => {
            eprintln!("mcp-gen-ui check: invalid configuration: generation.promptsDir: {e}");
            return ExitCode::from(2);
        }
    };
    actix_web::rt::System::new().block_on(crate::check_connect::run(settings, prompts, strict))
}

fn refuse(args: &Args, e: &ConfigError) -> ExitCode {
    let file = e.file.as_ref().map_or_else(|| where_from(&e.field, args), |f| f.display().to_string());
    // A file's own errors already start with its path: said once.
    let message = e.message.strip_prefix(&format!("{file}: ")).unwrap_or(&e.message);
    eprintln!("mcp-gen-ui check: {file}: {}: {message}", e.field);
    eprintln!("mcp-gen-ui check: the configuration is not valid; nothing was started");
    ExitCode::from(2)
}

/// Which file (or the command line, or the environment) a field of an error came from.
fn where_from(field: &str, args: &Args) -> String {
    let shown = |p: &Option<PathBuf>, what: &str| p.as_ref().map_or_else(|| what.to_string(), |p| p.display().to_string());
    match field {
        // The file could not be used as a whole: its errors name its path.
        "--principal-secrets" => shown(&args.principal_secrets, "the command line"),
        "--config" => shown(&args.config, "the command line"),
        f if f.starts_with("--") => "the command line".into(),
        f if f.starts_with("MCP_GEN_UI_") || f.starts_with("OTEL_") => "the environment".into(),
        // A servers file's entries carry their file (`ConfigError::file`); the rest is the
        // config file's, or, without one, what the flags left at its defaults.
        _ => shown(&args.config, "the defaults"),
    }
}

/// What a start would find wrong after the settings resolve, checked without writing: the
/// prompts folder, the cache folder and the log file's folder (the audit file is checked by
/// the settings themselves, at start and on reload alike).
fn beyond_parsing(s: &Settings) -> Result<(), ConfigError> {
    if let Some(dir) = s.config.generation.prompts_dir.as_deref() {
        Prompts::load(Some(dir)).map_err(|e| ConfigError::new("generation.promptsDir", e.to_string()))?;
    }
    if let Some(dir) = s.cache_dir() {
        writable_folder(dir).map_err(|why| ConfigError::new("cache.dir", format!("{}: {why}", dir.display())))?;
    }
    if let Some(file) = &s.log_file {
        file_to_write(file).map_err(|why| ConfigError::new("logging.file", format!("{}: {why}", file.display())))?;
    }
    Ok(())
}

/// A folder the service can write in, or will be able to create.
fn writable_folder(dir: &Path) -> Result<(), String> {
    let mut at = Some(dir);
    while let Some(d) = at {
        match std::fs::metadata(d) {
            Ok(m) if !m.is_dir() => return Err(format!("{} is not a folder", d.display())),
            Ok(_) if !may_write(d) => {
                return Err(format!("this user cannot write in {}: give the folder to the service's user, or choose another", d.display()))
            }
            Ok(_) => return Ok(()),
            Err(_) => at = d.parent(),
        }
    }
    Ok(())
}

fn may_write(p: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(p.as_os_str().as_bytes()) else { return false };
    // SAFETY: a valid NUL-terminated path; access() only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// A file the service appends to: it exists, or its folder does.
fn file_to_write(file: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(file).is_ok() {
        return Ok(());
    }
    match file.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(format!("its folder {} does not exist: create it first", dir.display())),
        _ => Ok(()),
    }
}

/// What a run with these settings would serve, in a few lines (no secret, no argument).
pub fn summary(s: &Settings) -> String {
    let mut out = String::new();
    let config = s.config_file.as_ref().map_or("no config file (defaults)".to_string(), |p| p.display().to_string());
    let _ = writeln!(out, "mcp-gen-ui check: {config}: the configuration is valid");
    let transport = match s.host_transport {
        crate::config::file::HostTransport::Stdio => "stdio".to_string(),
        _ => format!("http on {}", s.listen),
    };
    let _ = writeln!(out, "  hosts:     {transport}");
    let _ = writeln!(out, "  servers:   {}", s.upstreams.servers.len());
    for srv in &s.upstreams.servers {
        let per = srv.per_principal.as_ref().map_or("", |_| ", one connection per person");
        let _ = writeln!(out, "    {} ({}{per})", srv.name, srv.spec.describe());
        let hearers = Hearers::of(None, s.several_people());
        if srv.per_principal.is_none() && !may_ask(&srv.spec, &hearers) {
            let _ = writeln!(out, "      not offered sampling, elicitation or roots: several people share it over {}, which cannot say whose a request is (mark it perPrincipal to let it ask its callers)", srv.spec.transport());
        }
    }
    if !s.upstreams.disabled.is_empty() {
        let _ = writeln!(out, "    disabled (not started): {}", s.upstreams.disabled.join(", "));
    }
    if let Some(f) = &s.upstreams.file {
        let _ = writeln!(out, "    from {} (read again when it changes)", f.display());
    }
    if !s.profiles.is_empty() {
        let names: Vec<String> = s
            .profiles
            .iter()
            .map(|p| {
                let how = if p.discovery == Discovery::Search { "search" } else { "list" };
                format!("/mcp/{} ({how})", p.name)
            })
            .collect();
        let _ = writeln!(out, "  profiles:  {}", names.join(", "));
    }
    match &s.policy {
        Some(p) => {
            let default = if p.default_effect() == Effect::Deny { "deny" } else { "allow" };
            let rules: Vec<String> =
                p.rules().iter().map(|r| format!("{} ({})", r.name, if r.effect == Effect::Deny { "deny" } else { "allow" })).collect();
            let _ = writeln!(out, "  rules:     {} rule(s), default {default}: {}", rules.len(), rules.join(", "));
            let quotas: Vec<String> = p
                .quotas()
                .map(|(name, l)| {
                    let by: Vec<&str> = l.by.iter().map(|b| b.as_str()).collect();
                    let by = if by.is_empty() { "everyone together".to_string() } else { format!("per {}", by.join(" and ")) };
                    format!("{name} ({} a {}, {by})", l.calls, l.per_label)
                })
                .collect();
            if !quotas.is_empty() {
                let _ = writeln!(out, "  quotas:    {}", quotas.join(", "));
            }
            let approvals: Vec<String> = p
                .approval_rules()
                .map(|(name, a)| {
                    let who = mcp_gen_ui_actors::policy::approval::Approvers::from(a).describe();
                    format!("{name} (by {who}, within {} s)", a.expires_secs)
                })
                .collect();
            if !approvals.is_empty() {
                let _ = writeln!(out, "  approvals: {}", approvals.join(", "));
            }
        }
        None => {
            let _ = writeln!(out, "  rules:     none (everyone who signs in may use every tool)");
        }
    }
    let _ = writeln!(out, "  auth:      {}", auth_line(&s.auth));
    let _ = writeln!(out, "  pages:     provider {} ({})", s.provider.name(), s.provider_reason);
    if s.audit.on() {
        let to = s.audit.file.as_ref().map_or("stdout".to_string(), |f| f.display().to_string());
        let _ = writeln!(out, "  audit:     {to}{}", if s.audit.required { " (required: calls wait for their line)" } else { "" });
    }
    for w in &s.warnings {
        let _ = writeln!(out, "  warning:   {w}");
    }
    for n in &s.upstreams.notes {
        let _ = writeln!(out, "  note:      {n}");
    }
    let _ = writeln!(out, "  not checked: {}", crate::unmatched::LEFT_TO_THE_START);
    out
}

fn auth_line(a: &settings::AuthSettings) -> String {
    if a.disabled {
        return "off (server.auth.disabled)".into();
    }
    let mut parts = Vec::new();
    let labels: Vec<&str> = a.tokens.iter().chain(&a.file_tokens).filter(|t| t.named).map(|t| t.label.as_str()).collect();
    let unnamed = a.tokens.iter().chain(&a.file_tokens).filter(|t| !t.named).count();
    if !labels.is_empty() || unnamed > 0 {
        parts.push(format!(
            "{} static token(s){}",
            labels.len() + unnamed,
            if labels.is_empty() { String::new() } else { format!(" ({})", labels.join(", ")) }
        ));
    }
    if let Some(f) = &a.tokens_file {
        parts.push(format!("tokens file {}", f.display()));
    }
    if let Some(o) = &a.oauth {
        parts.push(format!("OAuth from {}", o.issuer));
    }
    let people: Vec<&str> = a.people.names().collect();
    if !people.is_empty() {
        parts.push(format!("people: {}", people.join(", ")));
    }
    if !a.admins.is_empty() {
        parts.push(format!("admins: {}", a.admins.join(", ")));
    }
    if parts.is_empty() {
        return "none configured: a loopback listener needs no token, any other gets one generated at start".into();
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn errors_say_which_file_the_field_is_in() {
        let args = Args::parse_from(["mcp-gen-ui", "--config", "/etc/m/config.json", "--servers-file", "/etc/m/servers.json"]);
        assert_eq!(where_from("server.auth.tokens[0]", &args), "/etc/m/config.json");
        assert_eq!(where_from("--servers-file", &args), "the command line", "the flag that named a file that cannot be read");
        assert_eq!(where_from("--auth-token", &args), "the command line");
        assert_eq!(where_from("servers.b.perPrincipal", &args), "/etc/m/config.json", "the config's own servers section");
        assert_eq!(where_from("MCP_GEN_UI_AUTH_TOKEN", &args), "the environment");
    }

    #[test]
    fn the_summary_names_what_would_be_served_and_no_secret() {
        let args = Args::parse_from(["mcp-gen-ui", "--demo", "--auth-token", "alice:a-long-secret-token-1"]);
        let s = settings::resolve(&args, &no_env).unwrap();
        let text = summary(&s);
        assert!(text.contains("the configuration is valid") && text.contains("1 static token(s) (alice)"), "{text}");
        assert!(text.contains("servers:   1"), "{text}");
        assert!(!text.contains("a-long-secret-token-1"), "{text}");
    }

    #[test]
    fn files_to_write_are_checked_without_writing() {
        let dir = std::env::temp_dir().join(format!("mcp-gen-ui-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(file_to_write(&dir.join("mcp-gen-ui.log")).is_ok());
        assert!(!dir.join("mcp-gen-ui.log").exists(), "nothing is created");
        let e = file_to_write(&dir.join("missing/mcp-gen-ui.log")).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        assert!(writable_folder(&dir.join("not/yet/made")).is_ok());
        std::fs::write(dir.join("plain"), "x").unwrap();
        assert!(writable_folder(&dir.join("plain")).unwrap_err().contains("not a folder"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
