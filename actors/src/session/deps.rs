//! What every host session is given: ports, shared tables and immutable settings, nothing with
//! state of its own. Kept apart from `messages` so that the message types depend on nothing.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::messages::{QueuePort, RefinementsPort};
use crate::metrics::Metrics;
use crate::servers::catalog::ExposedTool;
use crate::servers::fleet::Fleet;
use crate::session::table::SessionTable;
use crate::store::learned_shapes::LearnedShapes;
use crate::store::ready_pages::ReadyPages;

/// What every host session needs from the rest of the service: ports, shared tables and
/// immutable settings, nothing with state of its own.
#[derive(Clone)]
pub struct SessionDeps {
    /// The upstream servers, their routers and the catalog of their tools.
    pub fleet: Arc<Fleet>,
    pub queue: QueuePort,
    pub refinements: RefinementsPort,
    /// The edge's table of HTTP sessions (the session leaves it when it stops).
    pub sessions: Option<Arc<SessionTable>>,
    pub metrics: Arc<Metrics>,
    /// A session idle this long with no stream open is closed.
    pub idle_limit: Duration,
    /// `generation.enabledTools`: only these get `_meta.ui` and a `ui://` page (None: all).
    pub enabled_tools: Option<Arc<HashSet<String>>>,
    /// Ready ui:// read results (None with the cache off: then every read makes a page).
    pub pages: Option<Arc<ReadyPages>>,
    pub limits: SessionLimits,
    /// `limits.llmCallsPerMinute`: each principal's window, shared by its sessions and its
    /// stateless calls.
    pub llm_windows: crate::rate_window::Windows,
    /// `limits.hostNotificationsPerSecond`: each principal's bucket, shared by its sessions.
    pub notification_buckets: crate::rate_window::Buckets,
    /// `refinements.scope: principal`: a person's refinements shape only their own pages.
    pub personal_scope: bool,
    /// `generation.warm`: how far warming has come (None: off).
    pub warm: Option<Arc<crate::generation::warm::WarmProgress>>,
    /// `results.shaping: artifacts`: file artifacts in results go to the page, not the model
    /// (hosts that render MCP Apps only).
    pub shape_artifacts: bool,
    /// `generation.learnResultShape`: where the shapes of results are learnt.
    pub shapes: Option<Arc<LearnedShapes>>,
    /// `ui.domain`: the sandbox domain a host requires for this server's pages, passed through.
    pub ui_domain: Option<Arc<str>>,
    /// `ui.appsSdk`: which hosts are given the Apps SDK's keys.
    pub apps_sdk: crate::mcp::ui_meta::AppsSdk,
    /// `policy`: what each principal may see and do (swapped whole on a reload).
    pub policies: Arc<crate::policy::Policies>,
    /// `audit`: where calls, reads, refinements and denials are recorded (off: nowhere).
    pub audit: crate::audit::Audit,
    /// `profiles`: the named views of the fleet (swapped whole on a reload).
    pub profiles: Arc<crate::servers::profiles::Profiles>,
    /// Where `limit` rules' calls are counted (Redis with replicas).
    pub quotas: Arc<crate::policy::quotas::Quotas>,
    /// Calls held by `approve` rules (Redis with replicas).
    pub approvals: Arc<crate::policy::approvals::Approvals>,
}

impl SessionDeps {
    /// Whether a tool hosts see gets a page, and if not, which setting left it out: the one
    /// rule, for lists, reads, the `_ui_*` tools, the warmer and export ([`page_rule`]).
    pub fn page_rule(&self, tool: &ExposedTool) -> Result<(), NoPage> {
        page_rule(tool, self.enabled_tools.as_deref())
    }

    /// [`SessionDeps::page_rule`] as a yes or no.
    pub fn gets_page(&self, tool: &ExposedTool) -> bool {
        self.page_rule(tool).is_ok()
    }
}

/// Why a tool hosts see has no page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoPage {
    /// Its server's own `enabledTools` (in the servers file) leaves it out.
    Server(Arc<str>),
    /// `generation.enabledTools` leaves it out.
    Generation,
}

impl std::fmt::Display for NoPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoPage::Server(s) => write!(f, "the enabledTools of server {s:?} in the servers file leaves it out"),
            NoPage::Generation => f.write_str("generation.enabledTools leaves it out"),
        }
    }
}

/// Whether a tool hosts see gets a page: its server's `enabledTools` (`tool.ui`) and
/// `generation.enabledTools` (`enabled`, by exposed name; None: every tool) both allow it.
pub fn page_rule(tool: &ExposedTool, enabled: Option<&HashSet<String>>) -> Result<(), NoPage> {
    if !tool.ui {
        return Err(NoPage::Server(tool.server.clone()));
    }
    if !enabled.is_none_or(|set| set.contains(&tool.name)) {
        return Err(NoPage::Generation);
    }
    Ok(())
}

/// `limits.*` that one session enforces.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Requests in flight at once.
    pub max_in_flight: usize,
    /// `_ui_refine` / `_ui_regenerate` calls per minute (0: no limit).
    pub llm_calls_per_minute: u32,
    /// `limits.toolsPerPage`: a host's `tools/list` longer than this comes in pages.
    pub tools_per_page: usize,
    /// `limits.hostNotificationsPerSecond`: notifications a person's hosts may send servers (0:
    /// no limit).
    pub notifications_per_second: u32,
    /// `limits.maxBatchMessages`: messages one request (an HTTP body, a stdio line) may carry.
    pub max_batch: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits { max_in_flight: 64, llm_calls_per_minute: 10, tools_per_page: 1000, notifications_per_second: 50, max_batch: 100 }
    }
}
