//! Fault injection for the end-to-end tests: `MCP_GEN_UI_FAULTS` (comma-separated) makes chosen
//! parts panic so that tests can show the service contains the panic and keeps serving. Only
//! debug builds read it; in release builds every check is a constant `false`.
//!
//! - `generation_panic:<tool>`: every generation of that tool panics.
//! - `ui_cache_panic_once`: the next cache lookup panics inside the `UiCache` actor.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

fn faults() -> &'static [String] {
    static FAULTS: OnceLock<Vec<String>> = OnceLock::new();
    FAULTS.get_or_init(|| {
        if !cfg!(debug_assertions) {
            return Vec::new();
        }
        std::env::var("MCP_GEN_UI_FAULTS").unwrap_or_default().split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    })
}

/// Whether the generation of `tool` should panic.
pub fn generation_panics(tool: &str) -> bool {
    cfg!(debug_assertions) && faults().iter().any(|f| f.strip_prefix("generation_panic:") == Some(tool))
}

/// True once (the first call) when `ui_cache_panic_once` is set.
pub fn take_ui_cache_panic() -> bool {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    cfg!(debug_assertions) && faults().iter().any(|f| f == "ui_cache_panic_once") && !TAKEN.swap(true, Ordering::SeqCst)
}
