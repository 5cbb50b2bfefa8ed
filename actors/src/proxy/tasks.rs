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
//!
//! Each person has a share (`limits.tasksPerPerson`, and `limits.taskWatchesPerPerson` of the
//! watches that hold a 2026 host's tasks open): a person at their cap makes room from their own
//! oldest, never from anyone else's, and the service's own cap never evicts another person's
//! task; making a task costs what the maker's own share holds, never a walk of the table.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::mcp::tasks::{created_task, drop_related_task, related_task, set_related_task, task_support, RELATED_TASK};
use crate::process::locks::Recover;
use crate::proxy::shares::{Place, Shares};

/// How long a task is remembered when its server gives it no time to live (or an unbounded
/// one): a day.
const LONGEST: Duration = Duration::from_secs(24 * 3600);
/// Tasks remembered at most, every person's together.
const MAX_TASKS: usize = 100_000;
/// When the table is full and the maker holds nothing of their own to make room with, expired
/// tasks are swept (a walk of the table) at most this often.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Each person's share of what the service keeps of tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// `limits.tasksPerPerson`: tasks kept for one person; their next makes room from their
    /// own oldest.
    pub per_person: usize,
    /// `limits.taskWatchesPerPerson`: a 2026 host's tasks held open by watches at once; the
    /// next stops their own oldest watch (its task stays, and is watched again when asked).
    pub watches_per_person: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits { per_person: 200, watches_per_person: 32 }
    }
}

/// Why a task a call made is not kept for its maker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotKept {
    /// Its id is not usable: too long, or another person's live task.
    Unusable,
    /// The service keeps as many tasks as it may, and the maker has none of their own to make
    /// room with.
    Full,
}
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
    /// Its place in its owner's share.
    place: Place,
}

/// A watch of a task made for a 2026 host: its port, its own id, whose it is, and its place in
/// that person's share of watches.
struct Watch {
    port: crate::messages::WatchPort,
    id: String,
    owner: Arc<str>,
    place: Place,
}

#[derive(Default)]
struct Maps {
    /// The watches of tasks made for 2026 hosts (see `session::task_watch`).
    watches: HashMap<String, Watch>,
    watch_shares: Shares,
    by_exposed: HashMap<String, TaskRoute>,
    /// (server, the server's id) -> the id hosts see.
    by_upstream: HashMap<(Arc<str>, String), String>,
    /// Progress sent so far for each bridged task (it only grows).
    progress: HashMap<String, u64>,
    /// Each person's tasks, oldest first.
    shares: Shares,
    /// When the table was last swept of expired tasks.
    swept: Option<Instant>,
}

impl Maps {
    /// Takes a task out of every map (its watch stopped).
    fn remove(&mut self, exposed: &str) -> Option<TaskRoute> {
        let r = self.by_exposed.remove(exposed)?;
        self.by_upstream.remove(&(r.server.clone(), r.upstream.clone()));
        self.progress.remove(exposed);
        self.shares.remove(&r.owner, r.place);
        if let Some(w) = self.watches.remove(exposed) {
            self.watch_shares.remove(&w.owner, w.place);
            w.port.stop.do_send(crate::messages::Close);
        }
        Some(r)
    }

    /// Room for one more of `owner`'s tasks: their own expired ones go, then their oldest if
    /// they are at their cap or the table is full. Err when the table is full and they have
    /// nothing to make room with.
    fn make_room(&mut self, owner: &str, limits: TaskLimits, now: Instant) -> Result<(), NotKept> {
        let gone: Vec<String> = self
            .shares
            .of(owner)
            .into_iter()
            .filter(|(_, k)| self.by_exposed.get(k).is_none_or(|r| r.expires <= now))
            .map(|(_, k)| k)
            .collect();
        for k in gone {
            self.remove(&k);
        }
        while self.shares.count(owner) >= limits.per_person.max(1) {
            let Some((_, oldest)) = self.shares.oldest(owner) else { break };
            let oldest = oldest.to_string();
            self.remove(&oldest);
        }
        if self.by_exposed.len() < MAX_TASKS {
            return Ok(());
        }
        if let Some((_, oldest)) = self.shares.oldest(owner) {
            let oldest = oldest.to_string();
            self.remove(&oldest);
            return Ok(());
        }
        if self.swept.is_none_or(|t| now.saturating_duration_since(t) >= SWEEP_EVERY) {
            self.swept = Some(now);
            let expired: Vec<String> = self.by_exposed.values().filter(|r| r.expires <= now).map(|r| r.exposed.clone()).collect();
            for k in expired {
                self.remove(&k);
            }
        }
        if self.by_exposed.len() < MAX_TASKS {
            Ok(())
        } else {
            Err(NotKept::Full)
        }
    }
}

#[derive(Default)]
pub struct Tasks {
    maps: Mutex<Maps>,
    /// Where replicas share whose each task is (Redis), when they do.
    share: OnceLock<Arc<dyn TaskShare>>,
    limits: OnceLock<TaskLimits>,
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
    /// Each person's share from now on (the configuration's; the defaults until it is set).
    pub fn set_limits(&self, limits: TaskLimits) {
        let _ = self.limits.set(limits);
    }

    fn limits(&self) -> TaskLimits {
        self.limits.get().copied().unwrap_or_default()
    }

    /// Remembers a task a call made; returns the id hosts see. A task id too long to be one, or
    /// another person's live task, is not taken; nor one the table has no room for.
    pub fn created(&self, t: NewTask) -> Result<String, NotKept> {
        if t.upstream.is_empty() || t.upstream.len() > MAX_ID {
            return Err(NotKept::Unusable);
        }
        let exposed = exposed_id(t.prefix, t.upstream);
        let ttl = t.ttl_ms.map(Duration::from_millis).unwrap_or(LONGEST).min(LONGEST);
        let now = Instant::now();
        let limits = self.limits();
        let mut m = self.maps.guard();
        // Whoever made it first owns it: a server that hands out an id twice gives no one
        // another person's task.
        if let Some(known) = m.by_exposed.get(&exposed) {
            if known.owner != t.owner && known.expires > now {
                return Err(NotKept::Unusable);
            }
            m.remove(&exposed);
        }
        m.make_room(&t.owner, limits, now)?;
        let place = m.shares.add(&t.owner, exposed.clone());
        let route = TaskRoute {
            exposed: exposed.clone(),
            server: t.server.clone(),
            upstream: t.upstream.to_string(),
            owner: t.owner,
            session: t.session.to_string(),
            tool: t.tool.to_string(),
            bridge: t.bridge,
            expires: now + ttl,
            place,
        };
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
        Ok(exposed)
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

    /// A route another replica wrote, taken in (never over one known here), within its
    /// owner's share here as any task of theirs.
    pub fn adopt(&self, shared: SharedRoute) {
        let now = Instant::now();
        let limits = self.limits();
        let mut m = self.maps.guard();
        if m.by_exposed.contains_key(&shared.exposed) || m.make_room(&shared.owner, limits, now).is_err() {
            return;
        }
        let server: Arc<str> = Arc::from(shared.server.as_str());
        m.by_upstream.insert((server.clone(), shared.upstream.clone()), shared.exposed.clone());
        let owner: Arc<str> = Arc::from(shared.owner.as_str());
        let place = m.shares.add(&owner, shared.exposed.clone());
        let route = TaskRoute {
            exposed: shared.exposed.clone(),
            server,
            upstream: shared.upstream,
            owner,
            session: String::new(),
            tool: shared.tool,
            bridge: None,
            expires: now + Duration::from_millis(shared.ttl_ms).min(LONGEST),
            place,
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

    /// Every live task of `owner` made on `server` that is theirs to list, by the server's
    /// id: not the ones the service runs for their plain calls (bridged: their host never saw a
    /// task). Read from their own share, not the whole table.
    pub fn owned_on(&self, server: &str, owner: &str) -> HashMap<String, TaskRoute> {
        let m = self.maps.guard();
        let now = Instant::now();
        m.shares
            .of(owner)
            .iter()
            .filter_map(|(_, k)| m.by_exposed.get(k))
            .filter(|r| &*r.server == server && r.expires > now && r.bridge.is_none())
            .map(|r| (r.upstream.clone(), r.clone()))
            .collect()
    }

    /// How many tasks `owner` holds now (expired ones included until they are made room for).
    pub fn count_of(&self, owner: &str) -> usize {
        self.maps.guard().shares.count(owner)
    }

    /// How many watches of `owner`'s tasks are open now.
    pub fn watches_of(&self, owner: &str) -> usize {
        self.maps.guard().watch_shares.count(owner)
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
        self.maps.guard().remove(exposed);
    }

    /// The watch of a task made for a 2026 host (`id`: the watch's own session id): from now
    /// on the task's session (what its server asks inside it goes there while no one waits on
    /// the task). An owner at their share of watches has their oldest stopped first. False (the
    /// caller stops the watch) when the task is not known.
    pub fn set_watch(&self, exposed: &str, port: crate::messages::WatchPort, id: &str) -> bool {
        let limits = self.limits();
        let mut m = self.maps.guard();
        let Some(owner) = m.by_exposed.get(exposed).map(|r| r.owner.clone()) else { return false };
        if let Some(old) = m.watches.remove(exposed) {
            m.watch_shares.remove(&old.owner, old.place);
            old.port.stop.do_send(crate::messages::Close);
        }
        while m.watch_shares.count(&owner) >= limits.watches_per_person.max(1) {
            let Some((place, oldest)) = m.watch_shares.oldest(&owner) else { break };
            let oldest = oldest.to_string();
            m.watch_shares.remove(&owner, place);
            if let Some(w) = m.watches.remove(&oldest) {
                w.port.stop.do_send(crate::messages::Close);
            }
        }
        let place = m.watch_shares.add(&owner, exposed.to_string());
        m.watches.insert(exposed.to_string(), Watch { port, id: id.to_string(), owner, place });
        if let Some(r) = m.by_exposed.get_mut(exposed) {
            r.session = id.to_string();
        }
        true
    }

    pub fn watch(&self, exposed: &str) -> Option<crate::messages::WatchPort> {
        self.maps.guard().watches.get(exposed).map(|w| w.port.clone())
    }

    /// The watch `id` ended (its task expired, or it was stopped to make room): it is no
    /// longer reached. A newer watch of the same task stays.
    pub fn watch_ended(&self, exposed: &str, id: &str) {
        let mut m = self.maps.guard();
        if m.watches.get(exposed).is_some_and(|w| w.id == id) {
            if let Some(w) = m.watches.remove(exposed) {
                m.watch_shares.remove(&w.owner, w.place);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.maps.guard().by_exposed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
