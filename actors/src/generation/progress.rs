//! How far one generation has got, shared between the pipeline (which writes it as the answer
//! streams in) and whoever asks while it runs: a read that could not wait, the page's own
//! status call. Atomics only: the stream's reader never waits on a lock to count characters.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::Instant;

use crate::page::{Phase, Writing};

#[derive(Debug)]
pub struct Progress {
    began: Instant,
    chars: AtomicU64,
    attempt: AtomicU32,
    phase: AtomicU8,
}

const PHASES: [Phase; 6] = [Phase::Queued, Phase::Asking, Phase::Writing, Phase::Checking, Phase::Retrying, Phase::OtherReplica];

fn code(p: Phase) -> u8 {
    PHASES.iter().position(|x| *x == p).unwrap_or(0) as u8
}

impl Default for Progress {
    fn default() -> Self {
        Progress { began: Instant::now(), chars: AtomicU64::new(0), attempt: AtomicU32::new(0), phase: AtomicU8::new(code(Phase::Queued)) }
    }
}

impl Progress {
    pub fn set_phase(&self, p: Phase) {
        self.phase.store(code(p), Ordering::Relaxed);
    }

    /// A new request to the provider: its answer is counted from zero.
    pub fn asking(&self, attempt: u32) {
        self.chars.store(0, Ordering::Relaxed);
        self.attempt.store(attempt, Ordering::Relaxed);
        self.set_phase(Phase::Asking);
    }

    /// `n` more characters of the answer arrived.
    pub fn received(&self, n: usize) {
        if self.chars.fetch_add(n as u64, Ordering::Relaxed) == 0 {
            self.set_phase(Phase::Writing);
        }
    }

    pub fn snapshot(&self) -> Writing {
        Writing {
            phase: PHASES[usize::from(self.phase.load(Ordering::Relaxed)).min(PHASES.len() - 1)],
            chars: self.chars.load(Ordering::Relaxed),
            attempt: self.attempt.load(Ordering::Relaxed).max(1),
            elapsed_ms: self.began.elapsed().as_millis() as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_attempt_from_zero() {
        let p = Progress::default();
        assert_eq!(p.snapshot().phase, Phase::Queued);
        p.asking(1);
        assert_eq!((p.snapshot().phase, p.snapshot().chars), (Phase::Asking, 0));
        p.received(10);
        p.received(5);
        assert_eq!((p.snapshot().phase, p.snapshot().chars, p.snapshot().attempt), (Phase::Writing, 15, 1));
        p.asking(2);
        assert_eq!((p.snapshot().chars, p.snapshot().attempt), (0, 2));
    }
}
