//! Who may do what, and the trail of who did: the policy in force and the audit trail, made
//! from the settings at start and read again from the config file on SIGHUP and when it
//! changes. A new version that does not check out keeps the running one, and says why (in the
//! log and in the trail).

use std::path::PathBuf;
use std::sync::Arc;

use mcp_gen_ui_actors::audit::{Audit, Entry, Event};
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::policy::{Policies, Policy};

use crate::audit::Trail;
use crate::config::settings::policy::{self, AuditSettings};
use crate::config::settings::Settings;
use crate::telemetry::Tracing;

pub struct Governance {
    pub policies: Arc<Policies>,
    pub trail: Trail,
}

impl Governance {
    pub fn start(settings: &Settings, metrics: &Arc<Metrics>, traces: Option<&Tracing>) -> Arc<Governance> {
        let policies = Arc::new(Policies::new(settings.policy.clone(), metrics.clone()));
        if let Some(p) = &settings.policy {
            tracing::info!(
                component = "policy",
                event = "policy",
                rules = p.rules().len(),
                default = p.default_effect().as_str(),
                "policy: {}",
                describe(p)
            );
        }
        let otlp = match (traces, &settings.tracing) {
            (Some(t), Some(s)) if settings.audit.on() => t.audit_logs(s, &metrics.audit_lines),
            _ => None,
        };
        let trail = Trail::start(&settings.audit, &metrics.audit_lines, otlp);
        Arc::new(Governance { policies, trail })
    }

    pub fn audit(&self) -> Audit {
        self.trail.handle()
    }

    fn apply(&self, policy: Option<Arc<Policy>>, audit: &AuditSettings, why: &str) {
        let said = policy.as_deref().map_or_else(|| "no rules (everything allowed)".to_string(), describe);
        self.policies.replace(policy);
        self.trail.reconfigure(audit);
        tracing::info!(
            component = "policy",
            event = "policy_reloaded",
            reason = why,
            audit = audit.on(),
            "{why}: policy and audit read again: {said}; the rest of the config file takes a restart"
        );
        self.audit().record(Entry::system(
            Event::ConfigReload,
            format!("policy and audit ({why}): {said}; audit {}", if audit.on() { "on" } else { "off" }),
        ));
    }
}

fn describe(p: &Policy) -> String {
    format!("{} rules, default {}", p.rules().len(), p.default_effect().as_str())
}

/// Reads the config file's `policy` and `audit` again on SIGHUP and when it changes;
/// `changed` tells connected hosts their lists may have changed.
pub fn watch(file: PathBuf, gov: Arc<Governance>, changed: impl Fn() + 'static) -> std::io::Result<()> {
    let path = file.clone();
    crate::reload::watch(file, move |why| match policy::reread(&path) {
        Ok((policy, audit)) => {
            gov.apply(policy, &audit, why);
            changed();
        }
        Err(e) => {
            tracing::error!(component = "policy", event = "policy_reload_failed", reason = why, field = %e.field, error = %e, "{why}: the config file's policy and audit were not reloaded (the running ones stay): {e}");
            let mut line = Entry::system(Event::ConfigReload, format!("policy and audit ({why}) not reloaded: {e}"));
            line.outcome = "error";
            gov.audit().record(line);
        }
    })
}
