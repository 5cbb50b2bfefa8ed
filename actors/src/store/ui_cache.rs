//! `UiCache`: owns the generated pages. In memory: moka, LRU, weighed in bytes. On disk
//! (`cache.type: filesystem`): one JSON file per entry, written through with an atomic rename,
//! restored at start; a corrupt or old-format file is skipped with a warning. Shared
//! (`cache.type: redis`): moka stays in front as the L1, a miss reads through to Redis, every
//! page is written through to it, and dropping a tool's pages drops them for every replica.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use moka::future::Cache;
use moka::policy::EvictionPolicy;

use crate::messages::{CachePort, ForgetLocal, Get, InvalidateTool, Put};
use crate::metrics::Metrics;
use crate::page::{now_ms, UiEntry, ENTRY_FORMAT};
use crate::process::contain;
use crate::store::redis::{self, Event, RedisStore};

#[derive(Debug, Clone)]
pub struct CacheSettings {
    pub max_entries: u64,
    pub max_entry_bytes: u64,
    pub max_total_bytes: u64,
    pub ttl: Option<Duration>,
    pub dir: Option<PathBuf>,
}

pub struct UiCache {
    mem: Cache<String, Arc<UiEntry>>,
    settings: CacheSettings,
    metrics: Arc<Metrics>,
    /// The replicas' shared store, behind the L1 (None: this process alone).
    shared: Option<RedisStore>,
}

fn file_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.json"))
}

impl UiCache {
    pub fn new(settings: CacheSettings, metrics: Arc<Metrics>) -> Self {
        // One weight bounds both totals: each entry weighs at least total/maxEntries, so no
        // more than maxEntries fit, and big pages count by their size.
        let floor = (settings.max_total_bytes / settings.max_entries.max(1)).max(1);
        let dir = settings.dir.clone();
        let mut builder = Cache::builder()
            .eviction_policy(EvictionPolicy::lru())
            .max_capacity(settings.max_total_bytes)
            .weigher(move |_k: &String, v: &Arc<UiEntry>| (v.html.len() as u64).max(floor).min(u32::MAX as u64) as u32)
            .eviction_listener(move |key: Arc<String>, _v, cause| {
                // Replaced entries keep their (rewritten) file; evicted ones lose it.
                if cause.was_evicted() {
                    if let Some(d) = &dir {
                        let _ = std::fs::remove_file(file_of(d, &key));
                    }
                }
            });
        if let Some(ttl) = settings.ttl {
            builder = builder.time_to_live(ttl);
        }
        UiCache { mem: builder.build(), settings, metrics, shared: None }
    }

    /// Shares pages with the other replicas through Redis (the L1 stays in front).
    pub fn with_shared(mut self, shared: Option<RedisStore>) -> Self {
        self.shared = shared;
        self
    }

    pub fn port(addr: &Addr<Self>) -> CachePort {
        CachePort { get: addr.clone().recipient(), put: addr.clone().recipient(), invalidate: addr.clone().recipient() }
    }

    fn update_gauges(&self) {
        self.metrics.cache_entries.set(self.mem.entry_count() as i64);
        self.metrics.cache_bytes.set(self.mem.iter().map(|(_, v)| v.html.len() as i64).sum());
    }
}

impl Actor for UiCache {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // `wait` holds the mailbox until the restore is done: no read misses a restored entry.
        let fut = restore(self.mem.clone(), self.settings.dir.clone());
        ctx.wait(fut.into_actor(self).map(|(loaded, skipped), act, _| {
            if act.settings.dir.is_some() {
                tracing::info!(component = "ui_cache", event = "restored", loaded, skipped, "UI cache restored from disk");
            }
            act.update_gauges();
        }));
    }
}

impl Supervised for UiCache {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        contain::note_restart("ui_cache", &self.metrics);
    }
}

/// Reads every entry file of the cache folder into `mem`. Returns (loaded, skipped).
async fn restore(mem: Cache<String, Arc<UiEntry>>, dir: Option<PathBuf>) -> (usize, usize) {
    let Some(dir) = dir else { return (0, 0) };
    let files = tokio::task::spawn_blocking(move || {
        let _ = std::fs::create_dir_all(&dir);
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = entry.path();
            if p.extension().and_then(|e| e.to_str()) == Some("json") {
                out.push((p.clone(), std::fs::read(&p)));
            }
        }
        out
    })
    .await
    .unwrap_or_default();
    let (mut loaded, mut skipped) = (0, 0);
    for (path, bytes) in files {
        let parsed = bytes.map_err(|e| e.to_string()).and_then(|b| serde_json::from_slice::<UiEntry>(&b).map_err(|e| e.to_string()));
        match parsed {
            Ok(e) if e.format == ENTRY_FORMAT && e.expired(now_ms()) => {
                skipped += 1;
                let _ = std::fs::remove_file(&path);
            }
            Ok(e) if e.format == ENTRY_FORMAT => {
                mem.insert(e.key.clone(), Arc::new(e)).await;
                loaded += 1;
            }
            Ok(e) => {
                skipped += 1;
                tracing::warn!(component = "ui_cache", event = "old_format", file = %path.display(), format = e.format, "skipping a cache file of an older format");
            }
            Err(err) => {
                skipped += 1;
                tracing::warn!(component = "ui_cache", event = "corrupt_file", file = %path.display(), error = %err, "skipping a corrupt cache file");
            }
        }
    }
    (loaded, skipped)
}

impl Handler<Get> for UiCache {
    type Result = ResponseFuture<Option<Arc<UiEntry>>>;

    fn handle(&mut self, g: Get, ctx: &mut Self::Context) -> Self::Result {
        contain::contain::<Self, _, _>(
            "ui_cache",
            ctx,
            |_| {
                if crate::process::faults::take_ui_cache_panic() {
                    panic!("injected fault: ui_cache_panic_once");
                }
                let mem = self.mem.clone();
                let dir = self.settings.dir.clone();
                let (shared, metrics) = (self.shared.clone(), self.metrics.clone());
                let fut: Self::Result = Box::pin(async move {
                    let Some(hit) = mem.get(&g.key).await else {
                        // L1 miss: another replica may have made it.
                        let found = shared?.get_page(&g.key).await.ok().flatten().filter(|e| !e.expired(now_ms()))?;
                        let found = Arc::new(found);
                        mem.insert(g.key.clone(), found.clone()).await;
                        metrics.cache_entries.set(mem.entry_count() as i64);
                        return Some(found);
                    };
                    if !hit.expired(now_ms()) {
                        return Some(hit);
                    }
                    // A page served for a passing failure has had its time: make it again.
                    mem.invalidate(&g.key).await;
                    if let Some(d) = dir {
                        let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(file_of(&d, &g.key))).await;
                    }
                    None
                });
                fut
            },
            || Box::pin(async { None }),
        )
    }
}

impl Handler<Put> for UiCache {
    type Result = ResponseFuture<bool>;

    fn handle(&mut self, p: Put, _ctx: &mut Self::Context) -> Self::Result {
        if p.entry.html.len() as u64 > self.settings.max_entry_bytes {
            tracing::warn!(component = "ui_cache", event = "too_large", tool_name = %p.entry.tool_name, bytes = p.entry.html.len(), "page larger than cache.maxEntrySizeBytes: served, not cached");
            return Box::pin(async { false });
        }
        let mem = self.mem.clone();
        let dir = self.settings.dir.clone();
        let metrics = self.metrics.clone();
        let (shared, ttl) = (self.shared.clone(), self.settings.ttl);
        Box::pin(async move {
            mem.insert(p.entry.key.clone(), p.entry.clone()).await;
            if let Some(s) = shared {
                // Failing here only means the other replicas do not get this page.
                if let Some(ttl) = redis::page_ttl(&p.entry, ttl, now_ms()) {
                    let _ = s.put_page(p.entry.clone(), ttl).await;
                }
            }
            if let Some(dir) = dir {
                let entry = p.entry.clone();
                let res = tokio::task::spawn_blocking(move || write_atomic(&dir, &entry)).await;
                if let Ok(Err(e)) | Err(e) = res.map_err(|e| std::io::Error::other(e.to_string())) {
                    tracing::warn!(component = "ui_cache", event = "write_failed", error = %e, "could not persist a cache entry");
                }
            }
            mem.run_pending_tasks().await;
            metrics.cache_entries.set(mem.entry_count() as i64);
            metrics.cache_bytes.set(mem.iter().map(|(_, v)| v.html.len() as i64).sum());
            true
        })
    }
}

fn write_atomic(dir: &Path, entry: &UiEntry) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{}.tmp-{}", entry.key, std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(entry).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, file_of(dir, &entry.key))
}

impl Handler<InvalidateTool> for UiCache {
    type Result = ResponseFuture<usize>;

    fn handle(&mut self, m: InvalidateTool, _ctx: &mut Self::Context) -> Self::Result {
        let mem = self.mem.clone();
        let dir = self.settings.dir.clone();
        let metrics = self.metrics.clone();
        let shared = self.shared.clone();
        Box::pin(async move {
            let keys: Vec<Arc<String>> = mem.iter().filter(|(_, v)| v.tool_name == m.tool_name).map(|(k, _)| k).collect();
            for k in &keys {
                mem.invalidate(k.as_str()).await;
                if let Some(d) = &dir {
                    let _ = std::fs::remove_file(file_of(d, k));
                }
            }
            mem.run_pending_tasks().await;
            metrics.cache_entries.set(mem.entry_count() as i64);
            let mut dropped = keys.len();
            if let Some(s) = shared {
                if let Ok(n) = s.delete_tool_pages(&m.tool_name).await {
                    dropped = dropped.max(n);
                    let _ = s.publish(&Event::ToolInvalidated { origin: s.replica().to_string(), tool: m.tool_name.clone() }).await;
                }
            }
            dropped
        })
    }
}

/// Another replica replaced or dropped pages in the shared store: forget our copies.
impl Handler<ForgetLocal> for UiCache {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, m: ForgetLocal, _ctx: &mut Self::Context) -> Self::Result {
        let (mem, metrics) = (self.mem.clone(), self.metrics.clone());
        Box::pin(async move {
            match m.key {
                Some(k) => mem.invalidate(&k).await,
                None => {
                    let keys: Vec<Arc<String>> = mem.iter().filter(|(_, v)| v.tool_name == m.tool_name).map(|(k, _)| k).collect();
                    for k in keys {
                        mem.invalidate(k.as_str()).await;
                    }
                }
            }
            mem.run_pending_tasks().await;
            metrics.cache_entries.set(mem.entry_count() as i64);
        })
    }
}

/// The cache folder cannot hold what the service writes: which folder, who owns it, who the
/// service runs as, what failed, and (in its message) what to do.
#[derive(Debug)]
pub struct Unwritable {
    pub dir: PathBuf,
    /// The service's effective uid.
    pub uid: u32,
    /// The folder's owner and permission bits, when it exists.
    pub owner: Option<(u32, u32)>,
    pub what: &'static str,
    pub error: std::io::Error,
}

impl std::fmt::Display for Unwritable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (dir, uid) = (self.dir.display(), self.uid);
        let owned = match self.owner {
            Some((owner, mode)) => format!(" (owned by uid {owner}, mode {:03o})", mode & 0o777),
            None => String::new(),
        };
        write!(
            f,
            "the cache folder {dir}{owned} is not writable by this service (uid {uid}): {}: {}. \
             Give that user the folder (chown -R {uid} {dir}), choose another with --cache-dir, or run without a persistent cache (no cache.dir)",
            self.what, self.error
        )
    }
}

impl std::error::Error for Unwritable {}

/// Whether the cache folder can hold what the service writes (pages, and `state/` for
/// refinements and classifications): made if missing, then a file created and removed in each.
/// The error names the folder, its owner, the user and what to do, for a start that must not go
/// on as if pages persisted (an existing volume owned by another user is the case that bites).
pub fn check_writable(dir: &std::path::Path) -> Result<(), Unwritable> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    for d in [dir.to_path_buf(), dir.join("state")] {
        let fail = |what: &'static str, error: std::io::Error| {
            let owner = std::fs::metadata(&d).ok().map(|m| (m.uid(), m.mode()));
            Unwritable { dir: d.clone(), uid, owner, what, error }
        };
        std::fs::create_dir_all(&d).map_err(|e| fail("cannot create it", e))?;
        let probe = d.join(format!(".write-check-{}", std::process::id()));
        std::fs::write(&probe, b"ok").map_err(|e| fail("cannot create a file in it", e))?;
        let _ = std::fs::remove_file(&probe);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        // Outside any private folder, so that another user can reach it.
        let d = std::env::temp_dir().join(format!("mcp-gen-ui-writable-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_writable_folder_passes_and_gets_its_state_folder() {
        let d = scratch("ok");
        check_writable(&d.join("cache")).unwrap();
        assert!(d.join("cache/state").is_dir());
        assert!(std::fs::read_dir(d.join("cache")).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with(".write-check")));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn the_refusal_names_the_folder_its_owner_the_user_and_the_fix() {
        let e = Unwritable {
            dir: PathBuf::from("/var/lib/mcp-gen-ui/cache"),
            uid: 10001,
            owner: Some((0, 0o40755)),
            what: "cannot create a file in it",
            error: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        let m = e.to_string();
        for part in [
            "/var/lib/mcp-gen-ui/cache",
            "owned by uid 0, mode 755",
            "(uid 10001)",
            "chown -R 10001 /var/lib/mcp-gen-ui/cache",
            "--cache-dir",
        ] {
            assert!(m.contains(part), "{part} in {m}");
        }
    }

    /// Run by the test below as another user: the check on `MCP_GEN_UI_PROBE_DIR`.
    #[test]
    fn probe_helper_as_another_user() {
        let Some(dir) = std::env::var_os("MCP_GEN_UI_PROBE_DIR") else { return };
        match check_writable(std::path::Path::new(&dir)) {
            Ok(()) => println!("PROBE-RESULT writable"),
            Err(e) => println!("PROBE-RESULT {e}"),
        }
    }

    #[test]
    fn an_existing_folder_another_user_owns_is_refused_naming_its_owner() {
        let d = scratch("theirs");
        let folder = d.join("cache");
        std::fs::create_dir_all(&folder).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            // Not root: a folder of ours without write permission is the same case.
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
            let e = check_writable(&folder).unwrap_err();
            assert_eq!(e.what, "cannot create a file in it");
            assert!(e.to_string().contains("mode 555"), "{e}");
            std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
            return std::fs::remove_dir_all(d).unwrap();
        }
        // Root writes anywhere: the check runs in this test binary again, as uid 65534, on a
        // folder root made (as a container's volume is made by the engine).
        use std::os::unix::process::CommandExt;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "store::ui_cache::tests::probe_helper_as_another_user", "--nocapture", "--test-threads=1"])
            .env("MCP_GEN_UI_PROBE_DIR", &folder)
            .uid(65534)
            .gid(65534)
            .output()
            .expect("the test binary runs as uid 65534 (every folder above it must be searchable by others)");
        let said = String::from_utf8_lossy(&out.stdout);
        let at = said.find("PROBE-RESULT").unwrap_or_else(|| panic!("no probe result: {said}"));
        let line = said[at..].lines().next().unwrap_or_default();
        assert!(line.contains("owned by uid 0") && line.contains("(uid 65534)") && line.contains("cannot create a file in it"), "{line}");
        assert!(!folder.join("state").exists(), "nothing was made in a folder that is not ours");
        std::fs::remove_dir_all(d).unwrap();
    }
}
