//! Large answers (a long `tools/list` page, a big page read) are built in memory that glibc
//! keeps in its per-thread arenas once freed, resident for good: twenty walks of a list of
//! 5,000 tools held 7 MB more than before them. Once a burst of large answers has been written
//! and freed, the free pages go back to the system (`malloc_trim`): one trim per burst, a
//! moment after its last answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Answers at least this large are followed by a trim.
pub const LARGE_ANSWER: usize = 256 * 1024;
/// How long after a large answer the trim waits, so that a burst (a list walked page by page)
/// is trimmed once, after its memory is freed.
const SETTLE: Duration = Duration::from_millis(250);

static PENDING: AtomicBool = AtomicBool::new(false);

/// Call once an answer of `bytes` has been serialized.
pub fn after_answer(bytes: usize) {
    if bytes < LARGE_ANSWER || PENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async {
                tokio::time::sleep(SETTLE).await;
                PENDING.store(false, Ordering::Release);
                trim();
            });
        }
        Err(_) => {
            PENDING.store(false, Ordering::Release);
            trim();
        }
    }
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
