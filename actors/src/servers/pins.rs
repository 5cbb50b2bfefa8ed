//! Tools pinned against a rug pull: each tool's definition (title, description, input and
//! output schema, annotations) as first accepted, and what a server's list does to it. A tool
//! whose definition changed passes with a warning (`policy.onToolChange: warn`, the default) or
//! is held (`hold`: listed nowhere, calls refused) until an admin accepts the change; a tool
//! never seen follows `policy.onNewTool` (`allow`, or `hold`). Pure state and judgement here;
//! where pins are kept (a file, Redis) and what a change is told to (the trail, metrics) are
//! the `observe` and `save` hooks the wiring sets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::messages::ToolList;
use crate::page::tool_hash;
use crate::process::locks::{Recover, RecoverRw};

/// What a changed tool does (`policy.onToolChange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnChange {
    /// It passes, logged, counted and in the trail; the new definition is pinned.
    #[default]
    Warn,
    /// It is held until an admin accepts the change.
    Hold,
}

/// What a tool never seen does (`policy.onNewTool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnNew {
    /// Pinned as it is.
    #[default]
    Allow,
    /// Held until an admin accepts it.
    Hold,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PinModes {
    pub on_change: OnChange,
    pub on_new: OnNew,
}

impl PinModes {
    /// Whether anything can be held (the admin tools are listed only then).
    pub fn holds(&self) -> bool {
        self.on_change == OnChange::Hold || self.on_new == OnNew::Hold
    }
}

/// The parts of a tool's definition that hosts and models read.
const PINNED: [&str; 5] = ["title", "description", "inputSchema", "outputSchema", "annotations"];

/// A tool's definition as pinned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pin {
    pub fingerprint: String,
    /// The pinned parts (to show what changed).
    pub def: Value,
}

impl Pin {
    pub fn of(tool: &Value) -> Pin {
        let mut def = Map::new();
        for k in PINNED {
            if let Some(v) = tool.get(k) {
                def.insert(k.into(), v.clone());
            }
        }
        let def = Value::Object(def);
        Pin { fingerprint: tool_hash(&def), def }
    }

    /// The pinned parts that differ between `self` and `to`, by name.
    pub fn changed_parts(&self, to: &Pin) -> Vec<&'static str> {
        PINNED.into_iter().filter(|k| self.def.get(k) != to.def.get(k)).collect()
    }
}

/// One pinned tool as kept on disk and in Redis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub server: String,
    pub tool: String,
    #[serde(flatten)]
    pub pin: Pin,
}

/// A tool held: `from` what was accepted (None: a new tool), `to` what the server lists now.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub server: Arc<str>,
    pub tool: String,
    pub from: Option<Pin>,
    pub to: Pin,
    pub since: SystemTime,
}

impl Held {
    /// What an admin is shown: the tool, both fingerprints and every changed part, old and new.
    pub fn describe(&self) -> Value {
        let parts: Vec<&str> = match &self.from {
            Some(f) => f.changed_parts(&self.to),
            None => PINNED.into_iter().filter(|k| self.to.def.get(k).is_some()).collect(),
        };
        let diff: Map<String, Value> = parts
            .iter()
            .map(|k| {
                let was = self.from.as_ref().and_then(|f| f.def.get(*k)).cloned().unwrap_or(Value::Null);
                (k.to_string(), json!({"was": was, "now": self.to.def.get(*k).cloned().unwrap_or(Value::Null)}))
            })
            .collect();
        json!({
            "server": &*self.server, "tool": self.tool, "new": self.from.is_none(),
            "acceptedFingerprint": self.from.as_ref().map(|f| f.fingerprint.clone()),
            "fingerprint": self.to.fingerprint, "changed": parts, "diff": diff,
            "since": humantime::format_rfc3339_seconds(self.since).to_string(),
        })
    }
}

/// What judging a list or accepting a change did.
#[derive(Debug, Clone, PartialEq)]
pub enum PinEvent {
    /// A tool first seen, pinned as it is.
    Pinned { server: Arc<str>, tool: String, pin: Pin },
    /// A tool's definition differs from its pin: passed (and pinned anew) or held.
    Changed { server: Arc<str>, tool: String, from: Pin, to: Pin, held: bool },
    /// A tool first seen, held (`onNewTool: hold`).
    NewHeld { server: Arc<str>, tool: String, pin: Pin },
    /// An admin accepted a held tool.
    Accepted { server: Arc<str>, tool: String, from: Option<Pin>, to: Pin, by: String },
}

/// Why an accept was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AcceptError {
    #[error("the tool {tool:?} of server {server:?} is not held; `_ui_tool_changes` lists the held ones")]
    NotHeld { server: String, tool: String },
    #[error("the tool {tool:?} of server {server:?} changed again (now {now}); look at it again and accept that fingerprint")]
    Moved { server: String, tool: String, now: String },
}

type Key = (Arc<str>, String);
type Observe = Arc<dyn Fn(&PinEvent) + Send + Sync>;
type Save = Arc<dyn Fn(Vec<Record>) + Send + Sync>;

/// A server's list as last judged, kept so that an unchanged list is not hashed again.
struct Judged {
    list: ToolList,
    generation: u64,
    kept: ToolList,
    held: Vec<Held>,
}

#[derive(Default)]
struct State {
    accepted: HashMap<Key, Pin>,
    held: HashMap<Key, Held>,
    judged: HashMap<Arc<str>, Judged>,
    /// Moves on every accept, adoption and change of modes: judged lists are judged again.
    generation: u64,
}

#[derive(Default)]
pub struct Pins {
    modes: RwLock<PinModes>,
    state: Mutex<State>,
    observe: RwLock<Option<Observe>>,
    save: RwLock<Option<Save>>,
}

impl Pins {
    /// Pins as kept (a file, Redis).
    pub fn new(modes: PinModes, kept: Vec<Record>) -> Arc<Pins> {
        let pins = Pins { modes: RwLock::new(modes), ..Default::default() };
        {
            let mut st = pins.state.guard();
            for r in kept {
                st.accepted.insert((Arc::from(r.server), r.tool), r.pin);
            }
        }
        Arc::new(pins)
    }

    pub fn modes(&self) -> PinModes {
        *self.modes.reading()
    }

    /// New modes (a reload): every list is judged again at its next rebuild.
    pub fn set_modes(&self, modes: PinModes) {
        *self.modes.writing() = modes;
        self.state.guard().generation += 1;
    }

    /// Where events go (the trail, metrics, Redis).
    pub fn observe(&self, f: Observe) {
        *self.observe.writing() = Some(f);
    }

    /// Where the pins are kept, given every pin whenever one changes.
    pub fn save_with(&self, f: Save) {
        *self.save.writing() = Some(f);
    }

    /// A server's list judged: the tools that pass, in order, and the ones held.
    pub fn judge(&self, server: &Arc<str>, list: &ToolList) -> (ToolList, Vec<Held>) {
        let modes = self.modes();
        let mut events = Vec::new();
        let (kept, held) = {
            let mut st = self.state.guard();
            if let Some(j) = st.judged.get(server).filter(|j| Arc::ptr_eq(&j.list, list) && j.generation == st.generation) {
                return (j.kept.clone(), j.held.clone());
            }
            let mut kept = Vec::with_capacity(list.len());
            let mut held = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for t in list.iter() {
                let Some(name) = t.get("name").and_then(Value::as_str) else { continue };
                if !seen.insert(name) {
                    continue;
                }
                match judge_one(&mut st, modes, server, name, Pin::of(t), &mut events) {
                    Some(h) => held.push(h),
                    None => kept.push(t.clone()),
                }
            }
            // A held tool the server no longer lists is no longer held.
            st.held.retain(|(s, t), _| s != server || seen.contains(t.as_str()));
            let kept = if kept.len() == list.len() { list.clone() } else { Arc::new(kept) };
            let generation = st.generation;
            st.judged.insert(server.clone(), Judged { list: list.clone(), generation, kept: kept.clone(), held: held.clone() });
            (kept, held)
        };
        self.told(&events);
        (kept, held)
    }

    /// Every tool held now, oldest first.
    pub fn held(&self) -> Vec<Held> {
        let mut all: Vec<Held> = self.state.guard().held.values().cloned().collect();
        all.sort_by(|a, b| a.since.cmp(&b.since).then_with(|| (&a.server, &a.tool).cmp(&(&b.server, &b.tool))));
        all
    }

    /// An admin accepts a held tool (at the fingerprint they were shown, when given).
    pub fn accept(&self, server: &str, tool: &str, fingerprint: Option<&str>, by: &str) -> Result<PinEvent, AcceptError> {
        let ev = {
            let mut st = self.state.guard();
            let key: Key = (Arc::from(server), tool.to_string());
            let Some(h) = st.held.get(&key) else {
                return Err(AcceptError::NotHeld { server: server.into(), tool: tool.into() });
            };
            if fingerprint.is_some_and(|f| f != h.to.fingerprint) {
                let now = h.to.fingerprint.clone();
                return Err(AcceptError::Moved { server: server.into(), tool: tool.into(), now });
            }
            let h = st.held.remove(&key).expect("found above");
            st.accepted.insert(key, h.to.clone());
            st.generation += 1;
            PinEvent::Accepted { server: h.server, tool: h.tool, from: h.from, to: h.to, by: by.to_string() }
        };
        self.told(std::slice::from_ref(&ev));
        Ok(ev)
    }

    /// A pin kept elsewhere (another replica's acceptance, the shared store's pin): taken as
    /// the accepted one here. Whether it differs from what was accepted here (then the lists
    /// are judged again).
    pub fn adopt(&self, server: &str, tool: &str, pin: Pin) -> bool {
        let mut st = self.state.guard();
        let key: Key = (Arc::from(server), tool.to_string());
        if st.accepted.get(&key) == Some(&pin) {
            return false;
        }
        if st.held.get(&key).is_some_and(|h| h.to.fingerprint == pin.fingerprint) {
            st.held.remove(&key);
        }
        st.accepted.insert(key, pin);
        st.generation += 1;
        drop(st);
        self.saved();
        true
    }

    /// Every pin, in a stable order.
    pub fn records(&self) -> Vec<Record> {
        let st = self.state.guard();
        let mut all: Vec<Record> =
            st.accepted.iter().map(|((s, t), p)| Record { server: s.to_string(), tool: t.clone(), pin: p.clone() }).collect();
        all.sort_by(|a, b| (&a.server, &a.tool).cmp(&(&b.server, &b.tool)));
        all
    }

    fn told(&self, events: &[PinEvent]) {
        if events.is_empty() {
            return;
        }
        if let Some(f) = self.observe.reading().clone() {
            events.iter().for_each(|e| f(e));
        }
        if events.iter().any(|e| !matches!(e, PinEvent::NewHeld { .. } | PinEvent::Changed { held: true, .. })) {
            self.saved();
        }
    }

    fn saved(&self) {
        if let Some(f) = self.save.reading().clone() {
            f(self.records());
        }
    }
}

/// One tool against its pin: Some(held) when it is held.
fn judge_one(st: &mut State, modes: PinModes, server: &Arc<str>, name: &str, now: Pin, events: &mut Vec<PinEvent>) -> Option<Held> {
    let key: Key = (server.clone(), name.to_string());
    let already = st.held.get(&key).filter(|h| h.to.fingerprint == now.fingerprint).cloned();
    let hold = |from: Option<Pin>| Held { server: server.clone(), tool: name.to_string(), from, to: now.clone(), since: SystemTime::now() };
    match st.accepted.get(&key).cloned() {
        Some(p) if p.fingerprint == now.fingerprint => {
            st.held.remove(&key); // the server went back to what was accepted
            None
        }
        None if modes.on_new == OnNew::Allow => {
            st.held.remove(&key);
            st.accepted.insert(key, now.clone());
            events.push(PinEvent::Pinned { server: server.clone(), tool: name.to_string(), pin: now });
            None
        }
        Some(p) if modes.on_change == OnChange::Warn => {
            st.held.remove(&key);
            st.accepted.insert(key, now.clone());
            events.push(PinEvent::Changed { server: server.clone(), tool: name.to_string(), from: p, to: now, held: false });
            None
        }
        _ if already.is_some() => already,
        from => {
            let h = hold(from.clone());
            events.push(match from {
                Some(p) => PinEvent::Changed { server: server.clone(), tool: name.to_string(), from: p, to: now.clone(), held: true },
                None => PinEvent::NewHeld { server: server.clone(), tool: name.to_string(), pin: now.clone() },
            });
            st.held.insert(key, h.clone());
            Some(h)
        }
    }
}

#[cfg(test)]
mod tests;
