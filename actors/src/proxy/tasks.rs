//! Whose each task is (MCP tasks: a long tool call a host polls later). A server hands out a
//! task id in the answer to a task-augmented `tools/call`; the service keeps, under the id hosts
//! see, which server made it under which id, and the person whose call made it. Every
//! `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/list` of a host is answered from
//! here: another person's task is exactly an unknown one, and `notifications/tasks/status` and
//! the requests a server raises inside a task go to the task's owner only. Shared by every
//! router and session (locks held for a map operation).
//!
//! The id hosts see is the server's own with one server behind `--upstream` (transparent), and
//! `<prefix>:<id>` with several (two servers may hand out the same id). It is made from the
//! server's id alone, so a status notification that overtakes the answer that made the task
//! can be named the hosts' way already.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::mcp::tasks::{created_task, related_task, set_related_task, task_support, RELATED_TASK};
use crate::process::locks::Recover;

/// How long a task is remembered when its server gives it no time to live (or an unbounded
/// one): a day.
const LONGEST: Duration = Duration::from_secs(24 * 3600);
/// Tasks remembered at most; past it the oldest are forgotten first.
const MAX_TASKS: usize = 100_000;
/// Task ids longer than this are not taken (a server's id is a few dozen characters).
const MAX_ID: usize = 256;

/// A call the service runs as a task for a host that does not speak tasks: the host's call
/// waits for the task's result, and the task's status reaches it as progress.
#[derive(Debug, Clone, PartialEq)]
pub struct Bridge {
    /// The host's own request id (the progress relates to it).
    pub host_request: Value,
    /// The host's progress token, if it sent one.
    pub progress_token: Option<Value>,
}

/// One task, as the service routes it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRoute {
    /// The id hosts know it by.
    pub exposed: String,
    /// The server (as configured) that made it, and its id there.
    pub server: Arc<str>,
    pub upstream: String,
    /// The person whose call made it (`Who::key`).
    pub owner: Arc<str>,
    /// The session that made it (status goes there while it is connected).
    pub session: String,
    /// The tool it is a call of, as hosts name it (rules and the trail treat it like the call).
    pub tool: String,
    pub bridge: Option<Bridge>,
    expires: Instant,
}

#[derive(Default)]
struct Maps {
    /// The watches of tasks made for 2026 hosts (see `session::task_watch`).
    watches: HashMap<String, crate::messages::WatchPort>,
    by_exposed: HashMap<String, TaskRoute>,
    /// (server, the server's id) -> the id hosts see.
    by_upstream: HashMap<(Arc<str>, String), String>,
    /// Progress sent so far for each bridged task (it only grows).
    progress: HashMap<String, u64>,
}

#[derive(Default)]
pub struct Tasks {
    maps: Mutex<Maps>,
    /// Where replicas share whose each task is (Redis), when they do.
    share: OnceLock<Arc<dyn TaskShare>>,
}

/// A task's route as replicas share it: a task made through one replica can be used through
/// another (whose own connection reaches the same server). What the service runs for a host
/// (a bridge) stays with the replica that runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedRoute {
    pub exposed: String,
    pub server: String,
    pub upstream: String,
    pub owner: String,
    pub tool: String,
    /// How long it lives from when it was written (ms).
    pub ttl_ms: u64,
}

/// Where replicas share task routes (implemented over Redis in `store::redis`). Never on the
/// critical path of a call: a write is fire-and-forget, a read bounded; a failure is "not
/// shared".
pub trait TaskShare: Send + Sync {
    fn put(&self, route: SharedRoute);
    fn get(&self, exposed: String) -> Pin<Box<dyn Future<Output = Option<SharedRoute>> + Send>>;
}

/// The id hosts see for a server's task id (`prefix`: the server's, with several servers).
pub fn exposed_id(prefix: Option<&str>, upstream: &str) -> String {
    match prefix {
        Some(p) => format!("{p}:{upstream}"),
        None => upstream.to_string(),
    }
}

/// What a new task is, as its maker's answer and call say.
pub struct NewTask<'a> {
    pub prefix: Option<&'a str>,
    pub server: Arc<str>,
    pub upstream: &'a str,
    pub owner: Arc<str>,
    pub session: &'a str,
    pub tool: &'a str,
    /// The time to live the server gave it (ms; None: unbounded).
    pub ttl_ms: Option<u64>,
    pub bridge: Option<Bridge>,
}

impl Tasks {
    /// Remembers a task a call made; returns the id hosts see. A task id too long to be one is
    /// not taken (None).
    pub fn created(&self, t: NewTask) -> Option<String> {
        if t.upstream.is_empty() || t.upstream.len() > MAX_ID {
            return None;
        }
        let exposed = exposed_id(t.prefix, t.upstream);
        let ttl = t.ttl_ms.map(Duration::from_millis).unwrap_or(LONGEST).min(LONGEST);
        let now = Instant::now();
        let route = TaskRoute {
            exposed: exposed.clone(),
            server: t.server.clone(),
            upstream: t.upstream.to_string(),
            owner: t.owner,
            session: t.session.to_string(),
            tool: t.tool.to_string(),
            bridge: t.bridge,
            expires: now + ttl,
        };
        let mut m = self.maps.guard();
        if m.by_exposed.len() >= MAX_TASKS {
            m.by_exposed.retain(|_, r| r.expires > now);
            if m.by_exposed.len() >= MAX_TASKS {
                if let Some(oldest) = m.by_exposed.values().min_by_key(|r| r.expires).map(|r| r.exposed.clone()) {
                    m.by_exposed.remove(&oldest);
                }
            }
            let live: std::collections::HashSet<String> = m.by_exposed.keys().cloned().collect();
            m.by_upstream.retain(|_, e| live.contains(e));
            m.progress.retain(|e, _| live.contains(e));
        }
        // Whoever made it first owns it: a server that hands out an id twice gives no one
        // another person's task.
        if let Some(known) = m.by_exposed.get(&exposed) {
            if known.owner != route.owner && known.expires > now {
                return None;
            }
        }
        m.by_upstream.insert((t.server, t.upstream.to_string()), exposed.clone());
        let shared = (route.bridge.is_none()).then(|| SharedRoute {
            exposed: exposed.clone(),
            server: route.server.to_string(),
            upstream: route.upstream.clone(),
            owner: route.owner.to_string(),
            tool: route.tool.clone(),
            ttl_ms: ttl.as_millis() as u64,
        });
        m.by_exposed.insert(exposed.clone(), route);
        drop(m);
        if let (Some(share), Some(shared)) = (self.share.get(), shared) {
            share.put(shared);
        }
        Some(exposed)
    }

    /// Replicas share task routes through `share` from now on.
    pub fn set_share(&self, share: Arc<dyn TaskShare>) {
        let _ = self.share.set(share);
    }

    /// When `exposed` is not known here but replicas share routes: the read of its route
    /// from them (take it in with [`Tasks::adopt`]).
    pub fn fetch(&self, exposed: &str) -> Option<Pin<Box<dyn Future<Output = Option<SharedRoute>> + Send>>> {
        if exposed.is_empty() || exposed.len() > 2 * MAX_ID || self.maps.guard().by_exposed.contains_key(exposed) {
            return None;
        }
        Some(self.share.get()?.get(exposed.to_string()))
    }

    /// A route another replica wrote, taken in (never over one known here).
    pub fn adopt(&self, shared: SharedRoute) {
        let now = Instant::now();
        let mut m = self.maps.guard();
        if m.by_exposed.contains_key(&shared.exposed) || m.by_exposed.len() >= MAX_TASKS {
            return;
        }
        let server: Arc<str> = Arc::from(shared.server.as_str());
        m.by_upstream.insert((server.clone(), shared.upstream.clone()), shared.exposed.clone());
        let route = TaskRoute {
            exposed: shared.exposed.clone(),
            server,
            upstream: shared.upstream,
            owner: Arc::from(shared.owner.as_str()),
            session: String::new(),
            tool: shared.tool,
            bridge: None,
            expires: now + Duration::from_millis(shared.ttl_ms).min(LONGEST),
        };
        m.by_exposed.insert(shared.exposed, route);
    }

    /// The task `exposed` if it is `owner`'s (and not expired): anyone else gets None, exactly
    /// as for an id nobody made.
    pub fn owned(&self, exposed: &str, owner: &str) -> Option<TaskRoute> {
        let m = self.maps.guard();
        m.by_exposed.get(exposed).filter(|r| &*r.owner == owner && r.expires > Instant::now()).cloned()
    }

    /// The task a server's id names, whoever owns it.
    pub fn of_upstream(&self, server: &str, upstream: &str) -> Option<TaskRoute> {
        let m = self.maps.guard();
        let exposed = m.by_upstream.get(&(Arc::from(server), upstream.to_string()))?;
        m.by_exposed.get(exposed).filter(|r| r.expires > Instant::now()).cloned()
    }

    /// Every live task of `owner` made on `server`, by the server's id.
    pub fn owned_on(&self, server: &str, owner: &str) -> HashMap<String, TaskRoute> {
        let m = self.maps.guard();
        let now = Instant::now();
        m.by_exposed
            .values()
            .filter(|r| &*r.server == server && &*r.owner == owner && r.expires > now)
            .map(|r| (r.upstream.clone(), r.clone()))
            .collect()
    }

    /// The next progress count of a bridged task (1, 2, ...).
    pub fn next_progress(&self, exposed: &str) -> u64 {
        let mut m = self.maps.guard();
        let n = m.progress.entry(exposed.to_string()).or_insert(0);
        *n += 1;
        *n
    }

    /// A task is over for the service (its result taken by a bridge): forgotten.
    pub fn forget(&self, exposed: &str) {
        let mut m = self.maps.guard();
        if let Some(r) = m.by_exposed.remove(exposed) {
            m.by_upstream.remove(&(r.server, r.upstream));
        }
        m.progress.remove(exposed);
        if let Some(w) = m.watches.remove(exposed) {
            w.stop.do_send(crate::messages::Close);
        }
    }

    /// The watch of a task made for a 2026 host: from now on the task's session (what its
    /// server asks inside it goes there while no one waits on the task).
    pub fn set_watch(&self, exposed: &str, port: crate::messages::WatchPort, session: &str) {
        let mut m = self.maps.guard();
        m.watches.insert(exposed.to_string(), port);
        if let Some(r) = m.by_exposed.get_mut(exposed) {
            r.session = session.to_string();
        }
    }

    pub fn watch(&self, exposed: &str) -> Option<crate::messages::WatchPort> {
        self.maps.guard().watches.get(exposed).cloned()
    }

    /// A watch ended (its task expired): it is no longer reached.
    pub fn watch_ended(&self, exposed: &str) {
        self.maps.guard().watches.remove(exposed);
    }

    pub fn len(&self) -> usize {
        self.maps.guard().by_exposed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn new<'a>(owner: &str, upstream: &'a str, prefix: Option<&'a str>) -> NewTask<'a> {
        NewTask {
            prefix,
            server: Arc::from("s"),
            upstream,
            owner: Arc::from(owner),
            session: "S",
            tool: "research",
            ttl_ms: Some(60_000),
            bridge: None,
        }
    }

    #[test]
    fn a_task_is_its_makers_and_anyone_elses_is_no_task_at_all() {
        let t = Tasks::default();
        let id = t.created(new("alice", "t-1", None)).unwrap();
        assert_eq!(id, "t-1", "one server: the server's own id");
        assert!(t.owned("t-1", "alice").is_some());
        assert_eq!(t.owned("t-1", "bob"), None, "bob's view of alice's task is an unknown id's");
        assert_eq!(t.owned("t-2", "bob"), None);
        assert_eq!(t.of_upstream("s", "t-1").unwrap().owner.as_ref(), "alice");
        assert!(t.owned_on("s", "bob").is_empty() && t.owned_on("s", "alice").contains_key("t-1"));
    }

    #[test]
    fn with_several_servers_ids_are_named_by_server_and_never_taken_over() {
        let t = Tasks::default();
        assert_eq!(t.created(new("alice", "7", Some("a"))).unwrap(), "a:7");
        assert_eq!(t.created(new("bob", "7", Some("b"))).unwrap(), "b:7", "the same id on another server is another task");
        assert_eq!(t.created(new("bob", "7", Some("a"))), None, "a server that hands out alice's id again gives bob nothing");
        assert!(t.owned("a:7", "alice").is_some());
        assert!(t.created(new("alice", &"x".repeat(300), None)).is_none(), "an id too long is not taken");
    }
}
