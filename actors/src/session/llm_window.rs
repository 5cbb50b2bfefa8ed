//! `limits.llmCallsPerMinute`: a sliding minute of the calls that ask the LLM. Pure: the
//! caller owns the window (a session's own, or one shared) and gives the time.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

const MINUTE: Duration = Duration::from_secs(60);

/// Counts one call at `now` unless `limit` calls were made in the minute before; `Err` is how
/// long until the next one may be made. A limit of 0 means no limit.
pub fn take(window: &mut VecDeque<Instant>, limit: u32, now: Instant) -> Result<(), Duration> {
    if limit == 0 {
        return Ok(());
    }
    while window.front().is_some_and(|t| now.saturating_duration_since(*t) >= MINUTE) {
        window.pop_front();
    }
    if window.len() >= limit as usize {
        let wait = window.front().map(|t| MINUTE.saturating_sub(now.saturating_duration_since(*t))).unwrap_or(MINUTE);
        return Err(wait);
    }
    window.push_back(now);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minute_slides() {
        let mut w = VecDeque::new();
        let t0 = Instant::now();
        assert!(take(&mut w, 2, t0).is_ok());
        assert!(take(&mut w, 2, t0 + Duration::from_secs(10)).is_ok());
        let wait = take(&mut w, 2, t0 + Duration::from_secs(20)).unwrap_err();
        assert_eq!(wait, Duration::from_secs(40), "until the first call is a minute old");
        assert!(take(&mut w, 2, t0 + Duration::from_secs(60)).is_ok(), "the first call left the window");
        assert!(take(&mut w, 0, t0).is_ok(), "0: no limit");
    }
}
