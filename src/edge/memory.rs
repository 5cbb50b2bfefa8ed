//! Large answers (a long `tools/list` page, a big page read) are built in memory that glibc
//! keeps in its per-thread arenas once freed, resident for good: twenty walks of a list of
//! 5,000 tools held 7 MB more than before them. After such an answer has been written, the
//! free pages go back to the system (`malloc_trim`), at most once a second.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Answers at least this large are followed by a trim.
pub const LARGE_ANSWER: usize = 512 * 1024;

static LAST_TRIM_MS: AtomicU64 = AtomicU64::new(0);

/// Call once an answer of `bytes` has been serialized and its message dropped.
pub fn after_answer(bytes: usize) {
    if bytes < LARGE_ANSWER {
        return;
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let last = LAST_TRIM_MS.load(Ordering::Relaxed);
    if now.saturating_sub(last) < 1000 || LAST_TRIM_MS.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_err() {
        return;
    }
    trim();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only returns free memory to the system; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
