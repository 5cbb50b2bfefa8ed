//! The tool registry across servers: each server's list as it last sent it, and the catalog
//! hosts see, rebuilt whenever a list changes. Shared by every thread: sessions read the
//! catalog on every request (a lock held for a clone of an `Arc`), supervisors write their
//! server's list. A changed or removed tool's ready page goes before the new catalog is in
//! place, so no read of the new list is answered with the old page.

use std::sync::{Arc, Mutex, OnceLock, RwLock};

use super::catalog::{Catalog, Curation, HeldTool, Naming, ServerTools};
use super::pins::Pins;
use crate::messages::{ToolList, ToolsDiff};
use crate::process::locks::{Recover, RecoverRw};
use crate::store::ready_pages::ReadyPages;

/// A catalog this long was built from answers large enough to give memory back after.
const LARGE_CATALOG: usize = 1000;

pub struct Registry {
    /// Every server in the order of the configuration, with its last list.
    servers: Mutex<Vec<ServerTools>>,
    current: RwLock<Arc<Catalog>>,
    pages: Option<Arc<ReadyPages>>,
    /// Each tool's accepted definition: a changed or new tool may be held out of the catalog.
    pins: OnceLock<Arc<Pins>>,
}

impl Registry {
    pub fn new(pages: Option<Arc<ReadyPages>>) -> Arc<Self> {
        Arc::new(Registry { servers: Mutex::new(Vec::new()), current: RwLock::new(Arc::default()), pages, pins: OnceLock::new() })
    }

    /// Judges every list against `pins` from now on (set once, at start).
    pub fn pin_with(&self, pins: Arc<Pins>) {
        let _ = self.pins.set(pins);
    }

    pub fn pins(&self) -> Option<&Arc<Pins>> {
        self.pins.get()
    }

    /// Every list judged again (a pin accepted or adopted, the modes reloaded).
    pub fn rejudge(&self) -> ToolsDiff {
        let servers = self.servers.guard();
        self.rebuild(&servers)
    }

    /// The tools hosts see now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.current.reading().clone()
    }

    /// Adds a server (with no tools until it is listed), or changes how a known one is shown;
    /// `position` keeps the configuration's order.
    pub fn add_server(&self, server: Arc<str>, naming: Naming, curation: Arc<Curation>, position: usize) -> ToolsDiff {
        let mut servers = self.servers.guard();
        let tools = match servers.iter().position(|s| s.server == server) {
            Some(i) => servers.remove(i).tools,
            None => Arc::default(),
        };
        let at = position.min(servers.len());
        servers.insert(at, ServerTools { server, naming, curation, tools });
        self.rebuild(&servers)
    }

    /// A server's new tool list.
    pub fn set_tools(&self, server: &str, tools: ToolList) -> ToolsDiff {
        let mut servers = self.servers.guard();
        match servers.iter_mut().find(|s| &*s.server == server) {
            Some(s) => s.tools = tools,
            None => return ToolsDiff::default(), // removed meanwhile
        }
        self.rebuild(&servers)
    }

    /// A per-principal connection's list (see `supervisor::Role`): the server's list when it
    /// has none yet (learned from the first); else kept as it is. Whether `tools` differs
    /// from the server's list, and the change made.
    pub fn learn_tools(&self, server: &str, tools: ToolList) -> (bool, ToolsDiff) {
        let mut servers = self.servers.guard();
        let Some(s) = servers.iter_mut().find(|s| &*s.server == server) else { return (false, ToolsDiff::default()) };
        if s.tools.is_empty() {
            s.tools = tools;
            return (false, self.rebuild(&servers));
        }
        (*s.tools != *tools, ToolsDiff::default())
    }

    /// A server left the configuration: its tools leave the catalog.
    pub fn remove_server(&self, server: &str) -> ToolsDiff {
        let mut servers = self.servers.guard();
        servers.retain(|s| &*s.server != server);
        self.rebuild(&servers)
    }

    fn rebuild(&self, servers: &[ServerTools]) -> ToolsDiff {
        let new = match self.pins.get() {
            None => Catalog::build(servers),
            Some(pins) => pinned_catalog(pins, servers),
        };
        if new.tools().len() >= LARGE_CATALOG {
            // The upstream's answer and the old catalog are freed by now, but glibc keeps their
            // pages: given back once the rebuilding is over.
            crate::process::memory::after_large_work();
        }
        for c in &new.collisions {
            tracing::warn!(component = "registry", event = "name_collision", detail = %c, "two tools would share a name; one was given a suffix");
        }
        let old = self.catalog();
        let diff = Catalog::diff(&old, &new);
        if let Some(p) = &self.pages {
            for name in diff.removed.iter().chain(diff.changed.iter()) {
                p.invalidate(name);
            }
        }
        *self.current.writing() = Arc::new(new);
        diff
    }
}

/// The catalog of what each server's pins let through, with what they hold.
fn pinned_catalog(pins: &Pins, servers: &[ServerTools]) -> Catalog {
    let mut held = Vec::new();
    let judged: Vec<ServerTools> = servers
        .iter()
        .map(|s| {
            let (tools, h) = pins.judge(&s.server, &s.tools);
            held.extend(h.into_iter().map(|h| (s.naming.clone(), h)));
            ServerTools { tools, ..s.clone() }
        })
        .collect();
    let mut c = Catalog::build(&judged);
    for (naming, h) in held {
        c.hold(&naming, HeldTool { server: h.server, bare: h.tool, new: h.from.is_none() });
    }
    c
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::messages::tool_list;

    #[test]
    fn lists_come_and_go_by_server_and_changed_pages_go_first() {
        let pages = ReadyPages::new();
        let r = Registry::new(Some(pages.clone()));
        r.add_server(Arc::from("a"), Naming::Prefixed(Arc::from("a")), Arc::default(), 0);
        r.add_server(Arc::from("b"), Naming::Prefixed(Arc::from("b")), Arc::default(), 1);
        let d = r.set_tools("b", tool_list(vec![json!({"name": "t"})]));
        assert_eq!(d.added, ["b__t"]);
        r.set_tools("a", tool_list(vec![json!({"name": "t"})]));
        let names: Vec<String> = r.catalog().tools().iter().map(|t| t.name.clone()).collect();
        assert_eq!(names, ["a__t", "b__t"], "in the configuration's order, whoever listed first");
        pages.store("b__t", pages.revision("b__t"), json!({}), "template", None);
        let d = r.set_tools("b", tool_list(vec![json!({"name": "t", "description": "new"})]));
        assert_eq!(d.changed, ["b__t"]);
        assert!(pages.get("b__t").is_none(), "the changed tool's ready page went with it");
        assert_eq!(r.remove_server("a").removed, ["a__t"]);
        assert!(r.set_tools("a", tool_list(vec![json!({"name": "x"})])).added.is_empty(), "a removed server lists nothing");
    }
}
