//! Large answers (a long `tools/list` page, a big page read), a large upstream list made into
//! the catalog, and a burst of sessions are built in memory that glibc keeps in its per-thread
//! arenas once freed, resident for good: twenty walks of a list of 5,000 tools held 7 MB more
//! than before them, and 5,000 tools from one upstream answer 16 MB until a host listed them.
//! Once a burst of such work is over (none for `SETTLE`), the free pages go back to the system
//! (`malloc_trim`), on the blocking pool, never more than once a second.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Answers at least this large are followed by a trim.
pub const LARGE_ANSWER: usize = 256 * 1024;
/// Quiet time after the last large answer before the trim.
const SETTLE: Duration = Duration::from_millis(250);
/// The least time between two trims (each walks every arena under its lock).
const SPACING: Duration = Duration::from_secs(1);

struct State {
    pending: AtomicBool,
    /// Milliseconds since `epoch` of the last large answer and of the last trim (0: none).
    last_large: AtomicU64,
    last_trim: AtomicU64,
    epoch: Instant,
    trims: AtomicU64,
}

fn state() -> &'static State {
    static STATE: std::sync::OnceLock<State> = std::sync::OnceLock::new();
    STATE.get_or_init(|| State {
        pending: AtomicBool::new(false),
        last_large: AtomicU64::new(0),
        last_trim: AtomicU64::new(0),
        epoch: Instant::now(),
        trims: AtomicU64::new(0),
    })
}

impl State {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }
}

/// Call once large work is done and its memory freed (a big catalog built, a burst of
/// sessions ended): a trim follows when the burst is over.
pub fn after_large_work() {
    after_answer(LARGE_ANSWER);
}

/// Call once an answer of `bytes` has been serialized.
pub fn after_answer(bytes: usize) {
    if bytes < LARGE_ANSWER {
        return;
    }
    let s = state();
    s.last_large.store(s.now(), Ordering::Release);
    if s.pending.swap(true, Ordering::AcqRel) {
        return; // a trim is already waiting for the burst to end
    }
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => drop(rt.spawn(trim_when_quiet())),
        Err(_) => s.pending.store(false, Ordering::Release),
    }
}

async fn trim_when_quiet() {
    /// Whatever ends the wait (a trim, or the runtime dropping the task), a later large answer
    /// can start another.
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            state().pending.store(false, Ordering::Release);
        }
    }
    let _clear = Clear;
    let s = state();
    loop {
        tokio::time::sleep(SETTLE).await;
        let now = s.now();
        let quiet = now.saturating_sub(s.last_large.load(Ordering::Acquire)) >= SETTLE.as_millis() as u64;
        let last = s.last_trim.load(Ordering::Acquire);
        let spaced = last == 0 || now.saturating_sub(last) >= SPACING.as_millis() as u64;
        if quiet && spaced {
            break;
        }
    }
    s.last_trim.store(s.now(), Ordering::Release);
    s.trims.fetch_add(1, Ordering::Relaxed);
    let _ = tokio::task::spawn_blocking(trim).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_burst_is_trimmed_once_after_it_ends_and_small_answers_never() {
        let before = state().trims.load(Ordering::Relaxed);
        for _ in 0..20 {
            after_answer(LARGE_ANSWER - 1);
        }
        tokio::time::sleep(SETTLE * 2).await;
        assert_eq!(state().trims.load(Ordering::Relaxed), before, "small answers never trim");
        for _ in 0..10 {
            after_answer(LARGE_ANSWER);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(state().trims.load(Ordering::Relaxed), before, "not while the burst goes on");
        tokio::time::sleep(SETTLE * 3).await;
        assert_eq!(state().trims.load(Ordering::Relaxed), before + 1, "once after it");
        assert!(!state().pending.load(Ordering::Acquire), "ready for the next burst");
    }
}
