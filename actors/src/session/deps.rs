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
}

impl SessionDeps {
    /// Whether the tool named `name` gets a UI (`generation.enabledTools`).
    pub fn ui_enabled(&self, name: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|set| set.contains(name))
    }

    /// Whether a tool hosts see gets a page (see [`gets_page`]).
    pub fn ui_enabled_for(&self, tool: &ExposedTool) -> bool {
        gets_page(tool, self.enabled_tools.as_deref())
    }
}

/// Whether a tool hosts see gets a page: its server's `enabledTools` and
/// `generation.enabledTools` (`enabled`, by exposed name; None: every tool) both allow it. The
/// one rule, for sessions and for the warmer.
pub fn gets_page(tool: &ExposedTool, enabled: Option<&HashSet<String>>) -> bool {
    tool.ui && enabled.is_none_or(|set| set.contains(&tool.name))
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
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits { max_in_flight: 64, llm_calls_per_minute: 10, tools_per_page: 1000 }
    }
}
