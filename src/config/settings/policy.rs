//! The parts of the config file read again while the service runs: `policy` (the rules
//! compiled; a rule that does not compile is named with its field and the position in its
//! condition), `audit` (the trail's settings checked) and `profiles` (compiled). Read at start
//! and again on a reload ([`reread`]), where an error keeps what runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_gen_ui_actors::policy::{ApproveSpec, By, Effect, Kind, LimitSpec, Policy, RuleSpec};
use mcp_gen_ui_actors::servers::pins::{OnChange, OnNew, PinModes};
use mcp_gen_ui_actors::servers::profiles::{Discovery, Override, Profile, ProfileSpec};

use crate::config::file::{
    self as config, AuditConfig, ByConfig, Config, ConfigError, DiscoveryConfig, EffectConfig, HostTransport, KindConfig, OnNewToolConfig,
    OnToolChangeConfig, PerConfig, PerUnit, PolicyConfig, ProfileConfig, RuleConfig,
};

/// The audit trail's settings (off: neither a file nor stdout).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSettings {
    pub file: Option<PathBuf>,
    pub stdout: bool,
    pub arguments: bool,
    pub required: bool,
    pub max_file_bytes: u64,
    pub keep_files: u32,
    pub queue: usize,
}

impl AuditSettings {
    pub fn on(&self) -> bool {
        self.file.is_some() || self.stdout
    }
}

/// The default's effect (a quota is no default).
fn effect(e: EffectConfig) -> Effect {
    match e {
        EffectConfig::Allow => Effect::Allow,
        EffectConfig::Deny | EffectConfig::Limit | EffectConfig::Approve => Effect::Deny,
    }
}

/// A rule's approval, checked: `approvers` with `effect: approve`, and only with it.
fn approve(i: usize, r: &RuleConfig) -> Result<Option<ApproveSpec>, ConfigError> {
    let field = |f: &str| format!("policy.rules[{i}].{f}");
    if r.effect != Some(EffectConfig::Approve) {
        if let Some(f) = [("approvers", r.approvers.is_some()), ("expires", r.expires.is_some())].iter().find(|f| f.1) {
            return Err(ConfigError::new(field(f.0), "only a rule with \"effect\": \"approve\" holds calls: set the effect, or remove it"));
        }
        return Ok(None);
    }
    let Some(list) = r.approvers.as_ref().filter(|l| !l.is_empty()) else {
        return Err(ConfigError::new(
            field("approvers"),
            "is required with \"effect\": \"approve\": [\"caller\"], [\"admins\"], principal names or \"group:<name>\"",
        ));
    };
    let mut a = ApproveSpec { expires_secs: r.expires.unwrap_or(600), ..Default::default() };
    if !(1..=86_400).contains(&a.expires_secs) {
        return Err(ConfigError::new(field("expires"), "must be from 1 to 86400 seconds"));
    }
    for (j, who) in list.iter().enumerate() {
        match who.as_str() {
            "caller" => a.caller = true,
            "admins" => a.admins = true,
            g if g.starts_with("group:") && g.len() > 6 => a.groups.push(g[6..].to_string()),
            n if !n.trim().is_empty() && !n.contains(':') => a.names.push(n.to_string()),
            other => {
                let why = format!("{other:?} is none of \"caller\", \"admins\", a principal's name or \"group:<name>\"");
                return Err(ConfigError::new(field(&format!("approvers[{j}]")), why));
            }
        }
    }
    Ok(Some(a))
}

/// A rule's quota, checked: `calls` and `per` with `effect: limit`, and only with it.
fn limit(i: usize, r: &RuleConfig) -> Result<Option<LimitSpec>, ConfigError> {
    let field = |f: &str| format!("policy.rules[{i}].{f}");
    if r.effect != Some(EffectConfig::Limit) {
        if let Some(f) = [("calls", r.calls.is_some()), ("per", r.per.is_some()), ("by", r.by.is_some())].iter().find(|f| f.1) {
            return Err(ConfigError::new(field(f.0), "only a rule with \"effect\": \"limit\" counts calls: set the effect, or remove it"));
        }
        return Ok(None);
    }
    let calls = match r.calls {
        Some(n) if n >= 1 => n,
        Some(_) => return Err(ConfigError::new(field("calls"), "must be 1 or more (to refuse every call, use \"effect\": \"deny\")")),
        None => return Err(ConfigError::new(field("calls"), "is required with \"effect\": \"limit\": how many calls each window allows")),
    };
    let (per_secs, per_label) = match r.per {
        Some(PerConfig::Unit(PerUnit::Second)) => (1, "second".to_string()),
        Some(PerConfig::Unit(PerUnit::Minute)) => (60, "minute".to_string()),
        Some(PerConfig::Unit(PerUnit::Hour)) => (3600, "hour".to_string()),
        Some(PerConfig::Unit(PerUnit::Day)) => (86_400, "day".to_string()),
        Some(PerConfig::Seconds(n)) if (1..=31 * 86_400).contains(&n) => (n, format!("{n} seconds")),
        Some(PerConfig::Seconds(_)) => {
            return Err(ConfigError::new(field("per"), "a number of seconds must be from 1 to 2678400 (31 days)"))
        }
        None => {
            return Err(ConfigError::new(
                field("per"),
                "is required with \"effect\": \"limit\": \"minute\", \"hour\", \"day\" or a number of seconds",
            ))
        }
    };
    let by = r.by.clone().unwrap_or_else(|| vec![ByConfig::Person]);
    let by = by
        .into_iter()
        .map(|b| match b {
            ByConfig::Person => By::Person,
            ByConfig::Tool => By::Tool,
            ByConfig::Server => By::Server,
        })
        .collect();
    Ok(Some(LimitSpec { calls, per_secs, per_label, by }))
}

fn kind(k: KindConfig) -> Kind {
    match k {
        KindConfig::Tools => Kind::Tools,
        KindConfig::Pages => Kind::Pages,
        KindConfig::Refinements => Kind::Refinements,
        KindConfig::Resources => Kind::Resources,
        KindConfig::Prompts => Kind::Prompts,
    }
}

pub fn pin_modes(cfg: &PolicyConfig) -> PinModes {
    PinModes {
        on_change: match cfg.on_tool_change {
            OnToolChangeConfig::Warn => OnChange::Warn,
            OnToolChangeConfig::Hold => OnChange::Hold,
        },
        on_new: match cfg.on_new_tool {
            OnNewToolConfig::Allow => OnNew::Allow,
            OnNewToolConfig::Hold => OnNew::Hold,
        },
    }
}

/// The rules compiled; None: no rules and the default allows (nothing to decide).
pub fn policy(cfg: &PolicyConfig) -> Result<Option<Arc<Policy>>, ConfigError> {
    const MAX_RULES: usize = 10_000;
    if cfg.rules.is_empty() && cfg.default == EffectConfig::Allow {
        return Ok(None);
    }
    if cfg.rules.len() > MAX_RULES {
        return Err(ConfigError::new("policy.rules", format!("has {} rules; at most {MAX_RULES} are accepted", cfg.rules.len())));
    }
    if cfg.default == EffectConfig::Limit {
        return Err(ConfigError::new("policy.default", "is allow or deny; a quota is a rule (\"effect\": \"limit\")"));
    }
    let specs: Vec<RuleSpec> = cfg
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            Ok(RuleSpec {
                name: r.name.clone(),
                tools: r.tools.clone(),
                prompts: r.prompts.clone(),
                resources: r.resources.clone(),
                servers: r.servers.clone(),
                kinds: r.kinds.as_ref().map(|k| k.iter().copied().map(kind).collect()),
                effect: r.effect.map(effect),
                when: r.when.clone(),
                limit: limit(i, r)?,
                approve: approve(i, r)?,
            })
        })
        .collect::<Result<_, ConfigError>>()?;
    Policy::compile(effect(cfg.default), &specs).map(|p| Some(Arc::new(p))).map_err(|e| {
        let meant = (e.field == "when")
            .then(|| cfg.rules.get(e.index).and_then(|r| r.when.as_deref()).and_then(super::cel_hints::hint))
            .flatten()
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        ConfigError::new(format!("policy.rules[{}].{}", e.index, e.field), format!("{} (rule {:?}){meant}", e.message, e.name))
    })
}

pub fn audit(cfg: &AuditConfig, transport: HostTransport) -> Result<AuditSettings, ConfigError> {
    if cfg.stdout && transport == HostTransport::Stdio {
        return Err(ConfigError::new(
            "audit.stdout",
            "standard output is the MCP protocol with server.transport stdio: give audit.file instead",
        ));
    }
    if let Some(f) = &cfg.file {
        if f.as_os_str().is_empty() || f.is_dir() {
            return Err(ConfigError::new("audit.file", format!("{} is not a file path: give the file the lines go to", f.display())));
        }
        let parent = f.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(ConfigError::new("audit.file", format!("the folder {} does not exist: create it first", parent.display())));
        }
        let found = std::fs::symlink_metadata(f).ok();
        // The writer opens with O_NOFOLLOW, so a link would lose every line at run time: refused
        // here, at start and on reload as `check` does, rather than found out at the first call.
        if found.as_ref().is_some_and(|m| m.file_type().is_symlink()) {
            return Err(ConfigError::new(
                "audit.file",
                format!("{} is a symbolic link; the audit trail is never written through one: give the real path", f.display()),
            ));
        }
        // One made beforehand by someone else (in a shared folder, say) is theirs to read and rewrite.
        if let Some(owner) = found.as_ref().and_then(crate::audit::file::foreign_owner) {
            return Err(ConfigError::new(
                "audit.file",
                format!("{} belongs to another user (uid {owner}), who could read or rewrite the trail: remove it, or give a path in a folder only this service's user writes", f.display()),
            ));
        }
    }
    if cfg.max_file_bytes < 4096 {
        return Err(ConfigError::new("audit.maxFileBytes", "must be at least 4096"));
    }
    if cfg.keep_files > 1000 {
        return Err(ConfigError::new("audit.keepFiles", "must be at most 1000"));
    }
    if !(1..=1_000_000).contains(&cfg.queue) {
        return Err(ConfigError::new("audit.queue", "must be 1 to 1000000"));
    }
    Ok(AuditSettings {
        file: cfg.file.clone(),
        stdout: cfg.stdout,
        arguments: cfg.arguments,
        required: cfg.required,
        max_file_bytes: cfg.max_file_bytes,
        keep_files: cfg.keep_files,
        queue: cfg.queue,
    })
}

/// The profiles, compiled; an error names `profiles.<name>.<field>`.
pub fn profiles(list: &std::collections::BTreeMap<String, ProfileConfig>) -> Result<Vec<Profile>, ConfigError> {
    const MAX_PROFILES: usize = 1000;
    if list.len() > MAX_PROFILES {
        return Err(ConfigError::new("profiles", format!("has {} profiles; at most {MAX_PROFILES} are accepted", list.len())));
    }
    list.iter()
        .map(|(name, p)| {
            let spec = ProfileSpec {
                name: name.clone(),
                servers: p.servers.clone(),
                tools: p.tools.clone(),
                overrides: p
                    .overrides
                    .iter()
                    .map(|(k, o)| {
                        (
                            k.clone(),
                            Override { name: o.name.clone(), description: o.description.clone(), annotations: o.annotations.clone() },
                        )
                    })
                    .collect(),
                discovery: match p.discovery {
                    DiscoveryConfig::List => Discovery::List,
                    DiscoveryConfig::Search => Discovery::Search,
                },
                pin: p.pin.clone(),
            };
            Profile::compile(&spec).map_err(|e| ConfigError::new(format!("profiles.{}.{}", e.profile, e.field), e.message))
        })
        .collect()
}

/// What the config file changes while the service runs, checked.
pub struct Live {
    pub policy: Option<Arc<Policy>>,
    /// `policy.onToolChange` and `policy.onNewTool`.
    pub pins: PinModes,
    pub audit: AuditSettings,
    pub profiles: Vec<Profile>,
}

/// The sections of a config read again on a reload, checked.
pub fn resolve(cfg: &Config) -> Result<Live, ConfigError> {
    Ok(Live {
        policy: policy(&cfg.policy)?,
        pins: pin_modes(&cfg.policy),
        audit: audit(&cfg.audit, cfg.server.transport)?,
        profiles: profiles(&cfg.profiles)?,
    })
}

/// The config file read again for a reload: its `policy`, `audit` and `profiles` only (the
/// rest takes a restart).
pub fn reread(file: &Path) -> Result<Live, ConfigError> {
    resolve(&config::load(file)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_that_does_not_compile_is_named_with_its_position() {
        let c = config::parse(
            r#"{"policy": {"rules": [{"tools": ["*"], "effect": "allow"}, {"name": "x", "tools": ["*"], "effect": "deny", "when": "args.city == "}]}}"#,
        )
        .unwrap();
        let e = resolve(&c).err().unwrap();
        assert_eq!(e.field, "policy.rules[1].when");
        assert!(e.message.starts_with("line 1, column 14:") && e.message.contains("rule \"x\""), "{e}");
    }

    #[test]
    fn no_rules_and_allow_is_nothing_to_decide() {
        assert!(resolve(&Config::default()).ok().unwrap().policy.is_none());
        let c = config::parse(r#"{"policy": {"default": "deny"}}"#).unwrap();
        assert!(resolve(&c).ok().unwrap().policy.is_some(), "deny everything is a policy");
    }

    #[test]
    fn audit_settings_are_checked() {
        let c = config::parse(r#"{"server": {"transport": "stdio"}, "audit": {"stdout": true}}"#).unwrap();
        let field = |c: &Config| resolve(c).err().unwrap().field;
        assert_eq!(field(&c), "audit.stdout");
        let c = config::parse(r#"{"audit": {"file": "/nonexistent-folder/audit.jsonl"}}"#).unwrap();
        assert_eq!(field(&c), "audit.file");
        let c = config::parse(r#"{"audit": {"file": "/tmp"}}"#).unwrap();
        assert_eq!(field(&c), "audit.file");
        let c = config::parse(r#"{"audit": {"stdout": true, "maxFileBytes": 10}}"#).unwrap();
        assert_eq!(field(&c), "audit.maxFileBytes");
        assert!(!resolve(&Config::default()).ok().unwrap().audit.on());
        let dir = std::env::temp_dir().join(format!("audit-link-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(dir.join("real.jsonl"), dir.join("audit.jsonl")).unwrap();
        let c = config::parse(&format!(r#"{{"audit": {{"file": {:?}}}}}"#, dir.join("audit.jsonl").display().to_string())).unwrap();
        let e = resolve(&c).err().expect("a link is refused at start as check refuses it");
        assert!(e.field == "audit.file" && e.message.contains("symbolic link"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_audit_file_another_user_made_is_refused() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return; // only root can give a file to another user; CI runs as root
        }
        let dir = std::env::temp_dir().join(format!("audit-owner-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("audit.jsonl");
        let text = format!(r#"{{"audit": {{"file": {:?}}}}}"#, file.display().to_string());
        std::fs::write(&file, "").unwrap();
        assert!(resolve(&config::parse(&text).unwrap()).is_ok(), "our own file is taken");
        std::os::unix::fs::chown(&file, Some(65534), Some(65534)).unwrap();
        let e = resolve(&config::parse(&text).unwrap()).err().expect("another user's file is refused");
        assert!(e.field == "audit.file" && e.message.contains("uid 65534"), "{e}");
        let mut f = crate::audit::file::AuditFile::new(file.clone(), 1 << 20, 1);
        assert!(matches!(f.write(b"x\n"), Err(crate::audit::file::FileError::NotOurs(_, 65534))), "nor written at run time");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn profile_errors_name_the_profile_and_field() {
        let c = config::parse(r#"{"profiles": {"small": {"tools": ["memory__*", ""]}}}"#).unwrap();
        assert_eq!(resolve(&c).err().unwrap().field, "profiles.small.tools[1]");
        let c = config::parse(r#"{"profiles": {"Small": {"tools": ["*"]}}}"#).unwrap();
        assert_eq!(resolve(&c).err().unwrap().field, "profiles.Small.(name)");
        let c = config::parse(r#"{"profiles": {"all": {"tools": ["*"], "discovery": "search", "pin": ["weather__*"]}}}"#).unwrap();
        assert_eq!(resolve(&c).ok().unwrap().profiles.len(), 1);
    }
}
