//! When a page is tried again: between attempts of one generation, after a provider's
//! Retry-After, and after generations that failed in a row.

use std::time::Duration;

use crate::generation::llm::LlmError;

/// Backoff before retry `attempt` (0-based): 1 s doubling, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(3)).min(Duration::from_secs(5))
}

/// After `failures` failed generations of a page in a row, how long the template served for
/// the last one is kept before the page is tried again: 30 s doubling, at most `cap`.
pub fn retry_after_failures(failures: u32, cap: Duration) -> Duration {
    Duration::from_secs(30u64 << failures.min(16)).min(cap)
}

/// How long to wait before the next attempt, or None when the wait does not fit the ceiling.
/// A provider's Retry-After is honoured only as given: retrying earlier just fails again.
pub fn next_wait(err: &LlmError, attempt: u32, remaining: Duration) -> Option<Duration> {
    let wait = err.retry_after.unwrap_or_else(|| backoff(attempt));
    (wait < remaining).then_some(wait)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::llm::ErrorCode;

    #[test]
    fn backoff_doubles_to_five_seconds() {
        let b: Vec<u64> = (0..5).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(b, vec![1, 2, 4, 5, 5]);
    }

    #[test]
    fn failed_pages_are_tried_again_later_each_time() {
        let cap = Duration::from_secs(600);
        let waits: Vec<u64> = (0..7).map(|f| retry_after_failures(f, cap).as_secs()).collect();
        assert_eq!(waits, vec![30, 60, 120, 240, 480, 600, 600]);
        assert_eq!(retry_after_failures(u32::MAX, cap), cap, "never overflows");
        assert_eq!(retry_after_failures(0, Duration::from_secs(10)), Duration::from_secs(10), "the cap wins");
    }

    #[test]
    fn retry_after_is_honoured_only_when_it_fits() {
        let mut e = LlmError::new(ErrorCode::RateLimit, "slow down");
        e.retry_after = Some(Duration::from_secs(3));
        assert_eq!(next_wait(&e, 0, Duration::from_secs(10)), Some(Duration::from_secs(3)));
        assert_eq!(next_wait(&e, 0, Duration::from_secs(2)), None);
        e.retry_after = None;
        assert_eq!(next_wait(&e, 1, Duration::from_secs(10)), Some(Duration::from_secs(2)));
    }
}
