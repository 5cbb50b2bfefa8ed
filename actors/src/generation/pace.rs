//! Whether a page being written can still reach a host's read within its budget, from the
//! pace the model shows (issue 43): a read waits while the page can come in time, and is
//! answered with the provisional page as soon as it cannot, instead of waiting out the whole
//! budget. Pure: the numbers come from `Progress` and the `Memory` of earlier pages.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::page::Phase;

/// The longest a read waits for the first token of a request (or for a slot, or another
/// replica) before it takes the provisional page: past it the page cannot be quick.
pub const FIRST_TOKEN_GRACE_MS: u64 = 2_000;
/// Tokens counted before a rate is believed (a few chunks of a stream).
const MEASURE_AFTER_MS: u64 = 100;
/// What checking a written page takes, added to any estimate.
const CHECK_MS: u64 = 300;
/// A page's length before any page was written here: about 3,000 tokens.
const PRIOR_PAGE_CHARS: u64 = 12_000;
/// Characters a token stands for, to bound the expected length by `llm.maxTokens`.
const CHARS_PER_TOKEN: u64 = 4;

/// What a read sees of the generation it waits on, in milliseconds since the generation began.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    pub phase: Phase,
    pub now_ms: u64,
    /// When the current request was sent.
    pub asked_ms: u64,
    /// When its first text came (None: not yet).
    pub first_ms: Option<u64>,
    /// When its latest text came.
    pub last_ms: Option<u64>,
    /// Characters of the current answer so far.
    pub chars: u64,
    /// The current request writes the page (false: it classifies the tool first).
    pub page: bool,
    /// How long a page is expected to be, in characters.
    pub expected: u64,
}

/// What earlier pages showed of the model's pace.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Known {
    /// Characters a second while writing.
    pub rate: Option<f64>,
    /// From a request to its first text.
    pub first_latency_ms: Option<u64>,
}

/// Milliseconds until the page is written and checked, when the pace says; None when nothing
/// can be said yet.
pub fn eta_ms(s: &Seen, known: Known) -> Option<u64> {
    let first_latency = s.first_ms.map(|f| f.saturating_sub(s.asked_ms)).or(known.first_latency_ms);
    let rate = measured_rate(s).or(known.rate)?;
    if rate <= 0.0 {
        return None;
    }
    let writing_ms = |chars: u64| (chars as f64 * 1000.0 / rate) as u64;
    Some(
        match (s.page, s.first_ms) {
            // Writing the page: what is left of it.
            (true, Some(_)) => writing_ms(s.expected.saturating_sub(s.chars)),
            // The page is asked for, no text yet: the rest of the wait for it, then all of it.
            (true, None) => first_latency?.saturating_sub(s.now_ms.saturating_sub(s.asked_ms)) + writing_ms(s.expected),
            // Still classifying: the page's own request is still to come.
            (false, _) => first_latency? + writing_ms(s.expected),
        } + CHECK_MS,
    )
}

/// Characters a second over the text so far, once it spans long enough to tell. The page's
/// text is timed to now (a stream that stalls is slow); the classification's, which ends after
/// a few words, to its last piece: a short answer sent at once says nothing of a slow model.
fn measured_rate(s: &Seen) -> Option<f64> {
    let first = s.first_ms?;
    let until = if s.page { s.now_ms } else { s.last_ms? };
    let span = until.saturating_sub(first);
    (s.chars > 0 && span >= MEASURE_AFTER_MS).then(|| s.chars as f64 * 1000.0 / span as f64)
}

/// Whether a read with `budget_left_ms` of its budget, having waited `waited_ms`, should wait
/// on: the page can still come in time.
pub fn keep_waiting(s: &Seen, known: Known, waited_ms: u64, budget_left_ms: u64) -> bool {
    if budget_left_ms == 0 {
        return false;
    }
    let in_time = |eta: Option<u64>| eta.is_none_or(|e| e <= budget_left_ms);
    match s.phase {
        // Nearly there: the page is written.
        Phase::Checking => true,
        Phase::Writing => in_time(eta_ms(s, known)),
        // The request is out, nothing back yet: a while, no longer than the pace allows.
        Phase::Asking => s.now_ms.saturating_sub(s.asked_ms) < FIRST_TOKEN_GRACE_MS && in_time(eta_ms(s, known)),
        // A retry after a failed attempt (a server error, a rejected page): a new request is
        // coming; only a pace known to be too slow gives up on it.
        Phase::Retrying => {
            // What the failed attempt streamed says nothing of the next one: as a new request.
            let fresh = Seen { phase: Phase::Asking, asked_ms: s.now_ms, first_ms: None, last_ms: None, chars: 0, page: true, ..*s };
            in_time(eta_ms(&fresh, known))
        }
        // Waiting for a slot or for another replica: nothing to measure, not long.
        Phase::Queued | Phase::OtherReplica => waited_ms < FIRST_TOKEN_GRACE_MS,
    }
}

/// The pace of the pages written here, kept as moving averages (one provider and model per
/// service), read by every read that waits.
#[derive(Debug, Default)]
pub struct Memory {
    /// Characters a second, times 1000 (0: none yet).
    rate_milli: AtomicU64,
    first_latency_ms: AtomicU64,
    page_chars: AtomicU64,
}

fn blend(slot: &AtomicU64, value: u64) {
    let old = slot.load(Ordering::Relaxed);
    // A quarter of each new page: recent pages count most, one odd page does not swing it.
    let new = if old == 0 { value } else { (old * 3 + value) / 4 };
    slot.store(new.max(1), Ordering::Relaxed);
}

impl Memory {
    /// A page was written: `chars` long, its first text `first_latency_ms` after it was asked
    /// for, and the rest in `writing_ms`.
    pub fn record(&self, chars: u64, first_latency_ms: u64, writing_ms: u64) {
        if chars == 0 {
            return;
        }
        blend(&self.page_chars, chars);
        blend(&self.first_latency_ms, first_latency_ms);
        if writing_ms >= MEASURE_AFTER_MS {
            blend(&self.rate_milli, chars * 1_000_000 / writing_ms);
        }
    }

    /// The pace of a page still being written, seen by a read that stopped waiting for it: the
    /// next reads decide at once, before the page is done.
    pub fn note_pace(&self, s: &Seen) {
        let (Some(first), Some(rate)) = (s.first_ms, measured_rate(s)) else { return };
        blend(&self.rate_milli, (rate * 1000.0) as u64);
        blend(&self.first_latency_ms, first.saturating_sub(s.asked_ms));
    }

    pub fn known(&self) -> Known {
        let rate = self.rate_milli.load(Ordering::Relaxed);
        let first = self.first_latency_ms.load(Ordering::Relaxed);
        Known { rate: (rate > 0).then(|| rate as f64 / 1000.0), first_latency_ms: (first > 0).then_some(first) }
    }

    /// How long the next page is expected to be: recent pages' length, else about 3,000
    /// tokens; never more than `max_tokens` allow.
    pub fn expected_chars(&self, max_tokens: u32) -> u64 {
        let recent = self.page_chars.load(Ordering::Relaxed);
        let guess = if recent > 0 { recent } else { PRIOR_PAGE_CHARS };
        guess.min(u64::from(max_tokens) * CHARS_PER_TOKEN).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page request of a model at `tps` tokens a second, asked at 1.6 s, first text at 3.1 s.
    fn writing_at(now_ms: u64, tps: u64) -> Seen {
        let chars = (now_ms.saturating_sub(3_100)) * tps * 4 / 1000;
        Seen {
            phase: Phase::Writing,
            now_ms,
            asked_ms: 1_600,
            first_ms: Some(3_100),
            last_ms: Some(now_ms),
            chars,
            page: true,
            expected: 12_000,
        }
    }

    #[test]
    fn a_slow_model_is_given_up_on_soon_after_its_first_text_and_a_fast_one_waited_for() {
        // 60 tokens a second: 12,000 characters take 50 s, the budget has 11 s left.
        let slow = writing_at(3_400, 60);
        assert!(!keep_waiting(&slow, Known::default(), 3_400, 11_600));
        // 2,000 tokens a second: the rest takes about a second and a half.
        let fast = writing_at(3_400, 2_000);
        assert!(keep_waiting(&fast, Known::default(), 3_400, 11_600));
        let eta = eta_ms(&fast, Known::default()).unwrap();
        assert!((1_000..2_500).contains(&eta), "{eta}");
        // Too early to measure: wait a moment.
        assert!(keep_waiting(&writing_at(3_150, 60), Known::default(), 3_150, 11_850));
    }

    #[test]
    fn the_classification_shows_the_pace_before_the_page_is_asked_for() {
        // Its word and reason at 60 tokens a second, first text at 1.5 s: measured at 1.7 s.
        let classifying = Seen {
            phase: Phase::Writing,
            now_ms: 1_700,
            asked_ms: 0,
            first_ms: Some(1_500),
            last_ms: Some(1_700),
            chars: 48,
            page: false,
            expected: 12_000,
        };
        assert!(!keep_waiting(&classifying, Known::default(), 1_700, 13_300));
        // A fast model's answer came in one go: nothing measured, whatever the clock says now.
        let at_once = Seen { now_ms: 1_800, last_ms: Some(1_510), chars: 60, ..classifying };
        assert!(keep_waiting(&at_once, Known::default(), 1_800, 13_200));
    }

    #[test]
    fn no_first_text_within_the_grace_gives_up_and_a_known_pace_decides_sooner() {
        let asking = Seen {
            phase: Phase::Asking,
            now_ms: 1_000,
            asked_ms: 0,
            first_ms: None,
            last_ms: None,
            chars: 0,
            page: true,
            expected: 12_000,
        };
        assert!(keep_waiting(&asking, Known::default(), 1_000, 14_000), "nothing known yet: wait for the first text");
        let late = Seen { now_ms: 2_100, ..asking };
        assert!(!keep_waiting(&late, Known::default(), 2_100, 12_900));
        let slow = Known { rate: Some(240.0), first_latency_ms: Some(1_500) };
        assert!(!keep_waiting(&asking, slow, 1_000, 14_000), "a model known to be slow is not waited for");
        let fast = Known { rate: Some(8_000.0), first_latency_ms: Some(1_500) };
        assert!(keep_waiting(&asking, fast, 1_000, 14_000));
        let queued = Seen { phase: Phase::Queued, ..asking };
        assert!(keep_waiting(&queued, fast, 1_900, 13_000) && !keep_waiting(&queued, fast, 2_000, 13_000));
        let retrying = Seen { phase: Phase::Retrying, now_ms: 4_000, ..asking };
        assert!(keep_waiting(&retrying, Known::default(), 4_000, 11_000), "a retry after a server error is waited for");
        assert!(!keep_waiting(&retrying, slow, 4_000, 11_000), "unless the model is known to be too slow");
        let after_text = Seen { first_ms: Some(500), chars: 300, ..retrying };
        assert!(keep_waiting(&after_text, Known::default(), 4_000, 11_000), "the failed attempt's text is no pace");
        assert!(keep_waiting(&Seen { phase: Phase::Checking, ..asking }, slow, 9_000, 1));
        assert!(!keep_waiting(&Seen { phase: Phase::Checking, ..asking }, slow, 9_000, 0), "the budget is the upper bound");
    }

    #[test]
    fn memory_follows_recent_pages_within_the_token_limit() {
        let m = Memory::default();
        assert_eq!(m.known(), Known::default());
        assert_eq!(m.expected_chars(8_192), 12_000);
        assert_eq!(m.expected_chars(1_000), 4_000, "bounded by llm.maxTokens");
        m.record(8_000, 1_500, 2_000);
        assert_eq!(m.expected_chars(8_192), 8_000);
        assert_eq!(m.known().rate, Some(4_000.0));
        m.record(16_000, 1_500, 4_000);
        assert_eq!(m.expected_chars(8_192), 10_000, "a quarter of the newest");
        let fresh = Memory::default();
        fresh.note_pace(&writing_at(4_100, 60));
        assert_eq!(fresh.known().rate, Some(240.0), "a page still being written teaches the pace");
        assert_eq!(fresh.known().first_latency_ms, Some(1_500));
    }
}
