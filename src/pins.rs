//! Tools pinned against a rug pull, as the service runs them (the judging is
//! `servers::pins`): where pins are kept (a file across restarts, Redis across replicas), and
//! what a change is told to (the log, the trail, `tool_changes_total`).
//!
//! Replicas agree through Redis: the first to see a tool pins it for all (`HSETNX`); one that
//! finds another pin standing adopts it and lists the server again, so a change one replica
//! holds, every replica holds; an admin's acceptance is written over the pin and announced, and
//! every replica lists the server again and lets the tool through.

use std::path::PathBuf;
use std::sync::{Arc, Weak};

use mcp_gen_ui_actors::audit::{Audit, Entry, Event};
use mcp_gen_ui_actors::messages::RefreshTools;
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::servers::fleet::Fleet;
use mcp_gen_ui_actors::servers::pins::{Pin, PinEvent, Pins, Record};
use mcp_gen_ui_actors::store::redis::{Event as Shared, RedisStore};
use mcp_gen_ui_actors::store::snapshot_file::{self, Writer};

use crate::config::settings::Settings;

/// The file pins are kept in: `policy.pinsFile`, else beside the page cache's state.
pub fn file(settings: &Settings) -> Option<PathBuf> {
    let named = settings.config.policy.pins_file.clone();
    named.or_else(|| settings.cache_dir().map(|d| snapshot_file::state_dir(d).join("tool-pins.json")))
}

/// The pins kept from the last run. A file that cannot be read as pins stops the start: going
/// on would accept every tool as new, a changed one included.
pub fn load(settings: &Settings) -> Result<Vec<Record>, String> {
    let Some(path) = file(settings) else { return Ok(Vec::new()) };
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("policy.pinsFile: cannot read {}: {e}", path.display())),
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "policy.pinsFile: {} is not a file of pinned tools ({e}); restore it, or remove it to pin every tool anew as it is now",
                path.display()
            )
        }),
    }
}

/// Sets where pins are kept and what their changes are told to (needs a Tokio runtime).
pub fn start(settings: &Settings, pins: &Arc<Pins>, audit: Audit, metrics: Arc<Metrics>, shared: Option<RedisStore>, fleet: &Arc<Fleet>) {
    if let Some(path) = file(settings) {
        let writer = Writer::<Vec<Record>>::start(path);
        pins.save_with(Arc::new(move |records| writer.save(records)));
    }
    let weak = Arc::downgrade(fleet);
    let told = Told { audit, metrics, shared: shared.clone(), fleet: weak.clone(), pins: Arc::downgrade(pins) };
    pins.observe(Arc::new(move |ev| told.event(ev)));
    if let Some(store) = shared {
        // Pins other replicas made before this one started.
        let pins = Arc::downgrade(pins);
        tokio::spawn(async move {
            let Ok(all) = store.pins().await else { return };
            for (server, tool, pin) in all {
                let (Some(p), Ok(pin)) = (pins.upgrade(), serde_json::from_value::<Pin>(pin)) else { continue };
                if p.adopt(&server, &tool, pin) {
                    relist(&weak, &server);
                }
            }
        });
    }
}

/// Another replica's admin accepted a held tool: let through here too.
pub fn accepted_elsewhere(pins: &Arc<Pins>, fleet: &Arc<Fleet>) -> mcp_gen_ui_actors::store::replica_sync::PinAccepted {
    let (pins, fleet) = (Arc::downgrade(pins), Arc::downgrade(fleet));
    Arc::new(move |server, tool, pin| {
        let (Some(p), Ok(pin)) = (pins.upgrade(), serde_json::from_value::<Pin>(pin)) else { return };
        if p.adopt(server, tool, pin) {
            relist(&fleet, server);
        }
    })
}

/// The server's tools listed again: judged against the pins as they are now, and what changed
/// announced to hosts.
fn relist(fleet: &Weak<Fleet>, server: &str) {
    if let Some(s) = fleet.upgrade().and_then(|f| f.by_name(server)) {
        s.port.refresh.do_send(RefreshTools);
    }
}

struct Told {
    audit: Audit,
    metrics: Arc<Metrics>,
    shared: Option<RedisStore>,
    fleet: Weak<Fleet>,
    pins: Weak<Pins>,
}

impl Told {
    fn event(&self, ev: &PinEvent) {
        match ev {
            PinEvent::Pinned { server, tool, pin } => self.first(server, tool, pin),
            PinEvent::Changed { server, tool, from, to, held } => {
                let outcome = if *held { "held" } else { "passed" };
                let parts = from.changed_parts(to).join(", ");
                tracing::warn!(component = "pins", event = "tool_changed", server = %server, tool = %tool, outcome, changed = %parts, from = %from.fingerprint, to = %to.fingerprint,
                    "the tool {tool:?} of server {server} changed since it was accepted ({parts}); {}", if *held { "held until an admin accepts it (_ui_tool_changes)" } else { "passed (policy.onToolChange: warn)" });
                self.trail(server, tool, outcome, format!("changed {parts}: fingerprint {} -> {}", from.fingerprint, to.fingerprint));
                if !*held {
                    self.share(server, tool, to);
                }
            }
            PinEvent::NewHeld { server, tool, pin } => {
                tracing::warn!(component = "pins", event = "tool_new_held", server = %server, tool = %tool, "the new tool {tool:?} of server {server} is held until an admin accepts it (policy.onNewTool: hold)");
                self.trail(server, tool, "new_held", format!("new tool: fingerprint {}", pin.fingerprint));
            }
            PinEvent::Accepted { server, tool, from, to, by } => {
                tracing::info!(component = "pins", event = "tool_change_accepted", server = %server, tool = %tool, by = %by, "{by} accepted the tool {tool:?} of server {server} as it is now");
                let was = from.as_ref().map_or("new".to_string(), |f| f.fingerprint.clone());
                let mut line =
                    Entry::system(Event::AdminAction, format!("accepted the tool change: fingerprint {was} -> {}", to.fingerprint));
                line.principal = Arc::from(by.as_str());
                line.server = Some(server.clone());
                self.audit.record(line.tool(&self.shown(server, tool)));
                self.metrics.tool_changes.with_label_values(&[server, "accepted"]).inc();
                if let Some(store) = self.shared.clone() {
                    let (server, tool, pin) = (server.to_string(), tool.clone(), serde_json::to_value(to).unwrap_or_default());
                    tokio::spawn(async move {
                        if store.pin_set(&server, &tool, &pin).await.is_ok() {
                            let origin = store.replica().to_string();
                            let _ = store.publish(&Shared::PinAccepted { origin, server, tool, pin }).await;
                        }
                    });
                }
            }
        }
    }

    /// A tool first seen: pinned for every replica, unless one pinned it first (then theirs
    /// stands here too, and the server is judged again against it).
    fn first(&self, server: &str, tool: &str, pin: &Pin) {
        let Some(store) = self.shared.clone() else { return };
        let (server, tool, json) = (server.to_string(), tool.to_string(), serde_json::to_value(pin).unwrap_or_default());
        let (pins, fleet) = (self.pins.clone(), self.fleet.clone());
        tokio::spawn(async move {
            let Ok(Some(stands)) = store.pin_first(&server, &tool, &json).await else { return };
            let (Some(p), Ok(stands)) = (pins.upgrade(), serde_json::from_value::<Pin>(stands)) else { return };
            if p.adopt(&server, &tool, stands) {
                relist(&fleet, &server);
            }
        });
    }

    /// A change passed: the new definition is every replica's pin.
    fn share(&self, server: &str, tool: &str, pin: &Pin) {
        let Some(store) = self.shared.clone() else { return };
        let (server, tool, json) = (server.to_string(), tool.to_string(), serde_json::to_value(pin).unwrap_or_default());
        tokio::spawn(async move {
            let _ = store.pin_set(&server, &tool, &json).await;
        });
    }

    fn trail(&self, server: &Arc<str>, tool: &str, outcome: &'static str, detail: String) {
        let mut line = Entry::system(Event::ToolChanged, detail);
        line.server = Some(server.clone());
        line.outcome = outcome;
        self.audit.record(line.tool(&self.shown(server, tool)));
        self.metrics.tool_changes.with_label_values(&[server, outcome]).inc();
    }

    /// The tool as hosts name it.
    fn shown(&self, server: &str, tool: &str) -> String {
        self.fleet.upgrade().and_then(|f| f.by_name(server)).map_or(tool.to_string(), |s| s.naming.name_out(tool))
    }
}
