//! How far one generation has got, shared between the pipeline (which writes it as the answer
//! streams in) and whoever asks while it runs: a read deciding whether the page can still come
//! in time, the page's own status call. Counters are atomics, so the stream's reader never
//! waits on them; the page's text so far (bounded) is behind a lock held only to append or copy.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::generation::pace::{self, Seen};
use crate::page::{Phase, Writing};
use crate::process::locks::Recover;

/// The most of a page's text kept for its preview: the visible markup comes first.
pub const PARTIAL_MAX: usize = 64 * 1024;

#[derive(Debug)]
pub struct Progress {
    began: Instant,
    chars: AtomicU64,
    attempt: AtomicU32,
    phase: AtomicU8,
    /// Milliseconds since `began` the current request was sent, and its first text came (0:
    /// none yet).
    asked_ms: AtomicU64,
    first_ms: AtomicU64,
    /// When the latest text came.
    last_ms: AtomicU64,
    /// The current request writes the page (not the classification before it).
    page: AtomicBool,
    /// How long the page is expected to be, in characters.
    expected: AtomicU64,
    /// The page's text so far, at most `PARTIAL_MAX` bytes.
    partial: Mutex<String>,
}

const PHASES: [Phase; 6] = [Phase::Queued, Phase::Asking, Phase::Writing, Phase::Checking, Phase::Retrying, Phase::OtherReplica];

fn code(p: Phase) -> u8 {
    PHASES.iter().position(|x| *x == p).unwrap_or(0) as u8
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            began: Instant::now(),
            chars: AtomicU64::new(0),
            attempt: AtomicU32::new(0),
            phase: AtomicU8::new(code(Phase::Queued)),
            asked_ms: AtomicU64::new(0),
            first_ms: AtomicU64::new(0),
            last_ms: AtomicU64::new(0),
            page: AtomicBool::new(false),
            expected: AtomicU64::new(0),
            partial: Mutex::new(String::new()),
        }
    }
}

impl Progress {
    fn now_ms(&self) -> u64 {
        self.began.elapsed().as_millis() as u64 + 1
    }

    pub fn set_phase(&self, p: Phase) {
        self.phase.store(code(p), Ordering::Relaxed);
    }

    /// A new request to the provider: its answer is counted from zero. `page`: it writes the
    /// page (else it classifies the tool).
    pub fn asking(&self, attempt: u32, page: bool) {
        self.chars.store(0, Ordering::Relaxed);
        self.first_ms.store(0, Ordering::Relaxed);
        self.last_ms.store(0, Ordering::Relaxed);
        self.asked_ms.store(self.now_ms(), Ordering::Relaxed);
        self.page.store(page, Ordering::Relaxed);
        self.attempt.store(attempt, Ordering::Relaxed);
        if page {
            self.partial.guard().clear();
        }
        self.set_phase(Phase::Asking);
    }

    /// How long the page is expected to be (from earlier pages), for the estimates.
    pub fn expect(&self, chars: u64) {
        self.expected.store(chars, Ordering::Relaxed);
    }

    /// More of the answer arrived.
    pub fn received(&self, text: &str) {
        let now = self.now_ms();
        if self.chars.fetch_add(text.chars().count() as u64, Ordering::Relaxed) == 0 {
            self.first_ms.store(now, Ordering::Relaxed);
            self.set_phase(Phase::Writing);
        }
        self.last_ms.store(now, Ordering::Relaxed);
        if self.page.load(Ordering::Relaxed) {
            let mut partial = self.partial.guard();
            let room = PARTIAL_MAX.saturating_sub(partial.len());
            if room > 0 {
                let mut cut = room.min(text.len());
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                partial.push_str(&text[..cut]);
            }
        }
    }

    /// The page's text so far, while it is being written (None: no page text yet).
    pub fn partial(&self) -> Option<String> {
        if !self.page.load(Ordering::Relaxed) || self.phase() != Phase::Writing {
            return None;
        }
        let p = self.partial.guard();
        (!p.is_empty()).then(|| p.clone())
    }

    fn phase(&self) -> Phase {
        PHASES[usize::from(self.phase.load(Ordering::Relaxed)).min(PHASES.len() - 1)]
    }

    /// What a read sees now, for the pace's estimates.
    pub fn seen(&self) -> Seen {
        let first = self.first_ms.load(Ordering::Relaxed);
        let last = self.last_ms.load(Ordering::Relaxed);
        Seen {
            phase: self.phase(),
            now_ms: self.now_ms(),
            asked_ms: self.asked_ms.load(Ordering::Relaxed),
            first_ms: (first > 0).then_some(first),
            last_ms: (last > 0).then_some(last),
            chars: self.chars.load(Ordering::Relaxed),
            page: self.page.load(Ordering::Relaxed),
            expected: self.expected.load(Ordering::Relaxed),
        }
    }

    /// The page's request ended with `chars` of text: its first-text latency and writing time.
    pub fn page_timing(&self) -> Option<(u64, u64)> {
        let s = self.seen();
        let first = s.first_ms.filter(|_| s.page)?;
        Some((first.saturating_sub(s.asked_ms), s.now_ms.saturating_sub(first)))
    }

    pub fn snapshot(&self, known: pace::Known) -> Writing {
        let seen = self.seen();
        Writing {
            phase: seen.phase,
            chars: seen.chars,
            attempt: self.attempt.load(Ordering::Relaxed).max(1),
            elapsed_ms: self.began.elapsed().as_millis() as u64,
            eta_ms: if seen.expected > 0 { pace::eta_ms(&seen, known) } else { None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_attempt_from_zero() {
        let p = Progress::default();
        assert_eq!(p.snapshot(Default::default()).phase, Phase::Queued);
        p.asking(1, true);
        let s = p.snapshot(Default::default());
        assert_eq!((s.phase, s.chars), (Phase::Asking, 0));
        p.received("0123456789");
        p.received("abcde");
        let s = p.snapshot(Default::default());
        assert_eq!((s.phase, s.chars, s.attempt), (Phase::Writing, 15, 1));
        assert_eq!(p.partial().as_deref(), Some("0123456789abcde"));
        p.asking(2, true);
        let s = p.snapshot(Default::default());
        assert_eq!((s.chars, s.attempt), (0, 2));
        assert_eq!(p.partial(), None, "a new attempt starts its text again");
    }

    #[test]
    fn only_the_page_is_kept_and_no_more_than_the_bound() {
        let p = Progress::default();
        p.asking(1, false);
        p.received("rich");
        assert_eq!(p.partial(), None, "the classification is not the page");
        p.asking(2, true);
        p.received(&"é".repeat(PARTIAL_MAX));
        let kept = p.partial().unwrap();
        assert!(kept.len() <= PARTIAL_MAX && kept.len() > PARTIAL_MAX - 2, "{}", kept.len());
        assert!(p.seen().first_ms.is_some());
    }
}
