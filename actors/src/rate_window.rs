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

/// A second's allowance of `rate` things that refills as time passes, holding at most two
/// seconds' worth (a host's short burst passes; a flood is held to the rate).
#[derive(Debug, Clone, Copy)]
pub struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Takes one thing from the bucket at `now`; false when none is left. A rate of 0 means no limit.
pub fn take_one(bucket: &mut Option<Bucket>, rate: u32, now: Instant) -> bool {
    if rate == 0 {
        return true;
    }
    let most = 2.0 * f64::from(rate);
    let b = bucket.get_or_insert(Bucket { tokens: most, at: now });
    let refill = now.saturating_duration_since(b.at).as_secs_f64() * f64::from(rate);
    b.tokens = (b.tokens + refill).min(most);
    b.at = now;
    if b.tokens < 1.0 {
        return false;
    }
    b.tokens -= 1.0;
    true
}

/// The buckets of every principal. Bounded by the principals that used theirs lately: full
/// buckets (unused for two seconds) are dropped as the table grows.
pub type Buckets = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<std::sync::Arc<str>, Option<Bucket>>>>;

/// [`take_one`] from `principal`'s bucket.
pub fn take_one_for(buckets: &Buckets, principal: &std::sync::Arc<str>, rate: u32, now: Instant) -> bool {
    use crate::process::locks::Recover;
    if rate == 0 {
        return true;
    }
    let mut all = buckets.guard();
    if all.len() > 1024 {
        all.retain(|_, b| b.is_some_and(|b| now.saturating_duration_since(b.at) < Duration::from_secs(2)));
    }
    take_one(all.entry(principal.clone()).or_default(), rate, now)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bucket_lets_a_burst_through_and_holds_a_flood_to_its_rate() {
        let t0 = Instant::now();
        let mut b = None;
        let burst = (0..100).filter(|_| take_one(&mut b, 10, t0)).count();
        assert_eq!(burst, 20, "two seconds' worth at once");
        assert!(!take_one(&mut b, 10, t0 + Duration::from_millis(50)), "nothing refilled yet");
        assert!(take_one(&mut b, 10, t0 + Duration::from_millis(150)), "a tenth of a second later: one");
        let later = t0 + Duration::from_secs(10);
        assert_eq!((0..100).filter(|_| take_one(&mut b, 10, later)).count(), 20, "never more than two seconds' worth");
        assert!(take_one(&mut None, 0, t0), "0: no limit");
        let buckets = Buckets::default();
        let (a, bob): (std::sync::Arc<str>, std::sync::Arc<str>) = ("alice".into(), "bob".into());
        while take_one_for(&buckets, &bob, 10, t0) {}
        assert!(take_one_for(&buckets, &a, 10, t0), "bob's flood spends his bucket only");
    }

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
