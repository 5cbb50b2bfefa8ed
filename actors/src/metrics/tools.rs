//! Calls by tool: what operators ask first ("which tool fails, which is slow"). Bounded: the
//! first [`MAX_TOOL_SERIES`] tools (of the catalog: a name a host made up never gets one) have
//! series of their own, every later one shares `tool="other"`.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec};

use super::families::Families;

/// Tools with series of their own; the rest are `other`.
pub const MAX_TOOL_SERIES: usize = 500;
/// How a tool call ended (label values of `tool_calls_total`).
pub const TOOL_OUTCOMES: [&str; 5] = ["ok", "tool_error", "error", "denied", "limited"];

/// One tool's series, resolved once and cloned into each call in flight.
#[derive(Clone)]
pub struct ToolSeries {
    outcomes: [IntCounter; 5],
    duration: Histogram,
}

impl ToolSeries {
    /// A call of the tool ended `outcome` (one of [`TOOL_OUTCOMES`]) after `seconds`.
    pub fn ended(&self, outcome: &str, seconds: f64) {
        let i = TOOL_OUTCOMES.iter().position(|o| *o == outcome).unwrap_or(2);
        self.outcomes[i].inc();
        self.duration.observe(seconds);
    }
}

pub struct ToolMetrics {
    calls: IntCounterVec,
    duration: HistogramVec,
    known: RwLock<Known>,
}

/// By server, then tool; a tool past the bound maps to its server's `other` series.
#[derive(Default)]
struct Known {
    by_server: HashMap<Arc<str>, HashMap<Arc<str>, ToolSeries>>,
    own: usize,
}

impl ToolMetrics {
    pub(super) fn new(r: &Families) -> ToolMetrics {
        let buckets = vec![0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];
        ToolMetrics {
            calls: r.counters(
                "tool_calls_total",
                "Tool calls by server, tool (the first 500 of the catalog's; later ones as other) and how they ended: ok, tool_error (isError), error (a JSON-RPC error), denied (by the rules), limited (by a quota)",
                &["server", "tool", "outcome"],
            ),
            duration: r.histograms(
                "tool_call_duration_seconds",
                "Tool calls' time from the host's request to its answer, by server and tool (bounded as tool_calls_total)",
                &["server", "tool"],
                buckets,
            ),
            known: RwLock::new(Known::default()),
        }
    }

    /// The series of `server`'s tool `tool` (as hosts name it, and in the catalog: names are
    /// bounded by it): its own while there is room, else the server's `other`.
    pub fn of(&self, server: &str, tool: &str) -> ToolSeries {
        if let Some(s) = self.known.read().unwrap_or_else(|e| e.into_inner()).by_server.get(server).and_then(|t| t.get(tool)) {
            return s.clone();
        }
        // Poisoned: the map is whole at every point (see process::locks), and metrics sit below it.
        let mut known = self.known.write().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = known.by_server.get(server).and_then(|t| t.get(tool)) {
            return s.clone(); // made meanwhile
        }
        let own = known.own < MAX_TOOL_SERIES;
        let series = if own { self.series(server, tool) } else { self.series(server, "other") };
        known.own += usize::from(own);
        let tools = known.by_server.entry(Arc::from(server)).or_default();
        tools.entry(Arc::from(tool)).or_insert(series).clone()
    }

    fn series(&self, server: &str, tool: &str) -> ToolSeries {
        ToolSeries {
            outcomes: TOOL_OUTCOMES.map(|o| self.calls.with_label_values(&[server, tool, o])),
            duration: self.duration.with_label_values(&[server, tool]),
        }
    }
}
