//! What the config file may change while the service runs: who may do what (the policy), the
//! trail of who did (the audit trail), and what each kind of client sees (the profiles). Made
//! from the settings at start and read again from the config file on SIGHUP and when it
//! changes. A new version that does not check out keeps the running one, and says why (in the
//! log and in the trail).

use std::path::PathBuf;
use std::sync::Arc;

use mcp_gen_ui_actors::audit::{Audit, Entry, Event};
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::policy::{Policies, Policy};
use mcp_gen_ui_actors::servers::pins::{Pins, Record};
use mcp_gen_ui_actors::servers::profiles::Profiles;

use crate::audit::Trail;
use crate::config::settings::policy::{self, Live};
use crate::config::settings::Settings;
use crate::telemetry::Tracing;

pub struct Governance {
    pub policies: Arc<Policies>,
    pub trail: Trail,
    pub profiles: Arc<Profiles>,
    /// Each tool's accepted definition (`policy.onToolChange`, `policy.onNewTool`).
    pub pins: Arc<Pins>,
}

impl Governance {
    /// `kept`: the pins kept from the last run.
    pub fn start(settings: &Settings, metrics: &Arc<Metrics>, traces: Option<&Tracing>, kept: Vec<Record>) -> Arc<Governance> {
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
            (Some(t), Some(s)) if settings.audit.on() => t.audit_logs(s, &metrics.access.audit_lines),
            _ => None,
        };
        let trail = Trail::start(&settings.audit, &metrics.access.audit_lines, otlp);
        if settings.several_people() {
            trail.handle().share_per_person();
        }
        let profiles = Arc::new(Profiles::new(settings.profiles.clone()));
        let pins = Pins::new(settings.pins, kept);
        Arc::new(Governance { policies, trail, profiles, pins })
    }

    pub fn audit(&self) -> Audit {
        self.trail.handle()
    }

    fn apply(&self, live: Live, why: &str) {
        let said = live.policy.as_deref().map_or_else(|| "no rules (everything allowed)".to_string(), describe);
        let profiles = live.profiles.len();
        self.policies.replace(live.policy);
        self.pins.set_modes(live.pins);
        self.trail.reconfigure(&live.audit);
        self.profiles.replace(live.profiles.into_iter().map(Arc::new).collect());
        let audit = if live.audit.on() { "on" } else { "off" };
        tracing::info!(component = "policy", event = "policy_reloaded", reason = why, audit, profiles, "{why}: policy, audit and profiles read again: {said}; audit {audit}; {profiles} profiles; the rest of the config file takes a restart");
        self.audit().record(Entry::system(
            Event::ConfigReload,
            format!("policy, audit and profiles ({why}): {said}; audit {audit}; {profiles} profiles"),
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
        Ok(live) => {
            gov.apply(live, why);
            changed();
        }
        Err(e) => {
            tracing::error!(component = "policy", event = "policy_reload_failed", reason = why, field = %e.field, error = %e, "{why}: the config file's policy, audit and profiles were not reloaded (the running ones stay): {e}");
            let mut line = Entry::system(Event::ConfigReload, format!("policy, audit and profiles ({why}) not reloaded: {e}"));
            line.outcome = "error";
            gov.audit().record(line);
        }
    })
}
