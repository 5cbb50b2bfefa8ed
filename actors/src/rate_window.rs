//! A sliding minute of calls: `limits.llmCallsPerMinute` (one window per principal) and
//! `generation.warmCallsPerMinute`. Pure: the caller gives the time.

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

/// The windows of every principal. Bounded by the principals that called in the last minute:
/// windows left empty are dropped as the table grows.
pub type Windows = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<std::sync::Arc<str>, VecDeque<Instant>>>>;

/// [`take`] in `principal`'s window.
pub fn take_for(windows: &Windows, principal: &std::sync::Arc<str>, limit: u32, now: Instant) -> Result<(), Duration> {
    use crate::process::locks::Recover;
    let mut all = windows.guard();
    if all.len() > 1024 {
        all.retain(|_, w| w.back().is_some_and(|t| now.saturating_duration_since(*t) < MINUTE));
    }
    take(all.entry(principal.clone()).or_default(), limit, now)
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

    #[test]
    fn each_principal_has_one_window_whatever_its_sessions() {
        let windows = Windows::default();
        let (a, b): (std::sync::Arc<str>, std::sync::Arc<str>) = ("token alice".into(), "token bob".into());
        let t0 = Instant::now();
        assert!(take_for(&windows, &a, 2, t0).is_ok() && take_for(&windows, &a, 2, t0).is_ok());
        assert!(take_for(&windows, &a, 2, t0).is_err(), "alice's allowance is spent, from any session");
        assert!(take_for(&windows, &b, 2, t0).is_ok(), "bob has his own");
    }
}
