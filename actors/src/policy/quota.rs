//! Quotas (`effect: limit` rules): how a call is counted against one, and the counting itself
//! in this process (the shared count is `store::redis::quota`). Windows are fixed and aligned
//! to the clock (`per: minute` is each minute from :00), so every replica counts the same
//! window and a refusal can say when the next one opens.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus::IntCounter;
use sha2::{Digest, Sha256};

use super::rules::{Applies, By, Subject};
use crate::process::locks::Recover;

/// Counters kept at most (people × quotas × tools); past it, those of past windows go first.
const MAX_COUNTERS: usize = 100_000;

/// One quota a call counts against.
#[derive(Debug, Clone)]
pub struct Quota {
    pub rule: std::sync::Arc<str>,
    pub calls: u32,
    pub per_secs: u64,
    pub per_label: String,
    /// What it is counted per, said for people (`person alice, tool fs__write_file`).
    pub whose: String,
    /// The counter's key: the rule and what it is counted per, hashed (names come from hosts).
    pub key: String,
    /// `policy_decisions_total{rule, outcome="limited"}`.
    pub limited: Option<IntCounter>,
}

impl Quota {
    pub fn of(a: Applies<'_>, s: &Subject, limited: Option<IntCounter>) -> Quota {
        let mut parts = vec![format!("rule {}", a.rule)];
        let mut whose = Vec::new();
        for by in &a.limit.by {
            let v: &str = match by {
                By::Person => &s.who.key,
                By::Tool => s.name,
                By::Server => s.server,
            };
            parts.push(format!("{} {v}", by.as_str()));
            whose.push(format!("{} {}", by.as_str(), if *by == By::Person { &s.who.name } else { v }));
        }
        let key = hex::encode(&Sha256::digest(parts.join("\0").as_bytes())[..16]);
        let whose = if whose.is_empty() { "everyone together".to_string() } else { whose.join(", ") };
        Quota {
            rule: a.rule.clone(),
            calls: a.limit.calls,
            per_secs: a.limit.per_secs.max(1),
            per_label: a.limit.per_label.clone(),
            whose,
            key,
            limited,
        }
    }

    /// The window `now` (seconds since the epoch) is in, and the seconds until the next.
    pub fn window(&self, now: u64) -> (u64, u64) {
        let w = now / self.per_secs;
        (w, (w + 1) * self.per_secs - now)
    }

    /// What the caller is told when it is used up.
    pub fn refusal(&self, retry_in: u64) -> String {
        format!(
            "the quota {:?} allows {} call(s) a {} ({}), and they are used; retry in {retry_in} s",
            &*self.rule, self.calls, self.per_label, self.whose
        )
    }
}

/// How a take ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    Ok,
    /// Used up: the seconds until the window after.
    Used {
        retry_in: u64,
    },
}

/// The counts of this process: (key) -> (window, calls in it, when it ends in seconds).
#[derive(Default)]
pub struct Counters {
    counts: Mutex<HashMap<String, (u64, u32, u64)>>,
}

impl Counters {
    /// Counts one call unless the quota is used in this window.
    pub fn take(&self, q: &Quota, now: u64) -> Taken {
        let (w, retry_in) = q.window(now);
        let mut counts = self.counts.guard();
        if counts.len() >= MAX_COUNTERS && !counts.contains_key(&q.key) {
            // Windows of different quotas are of different lengths: what has ended goes.
            counts.retain(|_, (_, _, end)| *end > now);
        }
        let c = counts.entry(q.key.clone()).or_insert((w, 0, now + retry_in));
        if c.0 != w {
            *c = (w, 0, now + retry_in);
        }
        if c.1 >= q.calls {
            return Taken::Used { retry_in };
        }
        c.1 += 1;
        Taken::Ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(calls: u32, per: u64) -> Quota {
        Quota {
            rule: "r".into(),
            calls,
            per_secs: per,
            per_label: "minute".into(),
            whose: "person bob".into(),
            key: "k".into(),
            limited: None,
        }
    }

    #[test]
    fn counts_within_a_clock_aligned_window_and_says_when_the_next_opens() {
        let c = Counters::default();
        let q = quota(2, 60);
        assert_eq!(c.take(&q, 120), Taken::Ok);
        assert_eq!(c.take(&q, 150), Taken::Ok);
        assert_eq!(c.take(&q, 170), Taken::Used { retry_in: 10 }, "the third in the window from 120 to 180");
        assert_eq!(c.take(&q, 180), Taken::Ok, "a new window");
        let other = Quota { key: "other".into(), ..quota(2, 60) };
        assert_eq!(c.take(&other, 181), Taken::Ok, "another key counts apart");
        assert!(q.refusal(10).contains("retry in 10 s") && q.refusal(10).contains("person bob"));
    }

    #[test]
    fn a_full_table_forgets_past_windows_first() {
        let c = Counters::default();
        for i in 0..MAX_COUNTERS {
            c.take(&Quota { key: format!("k{i}"), ..quota(1, 60) }, 0);
        }
        let q = Quota { key: "k0".into(), ..quota(1, 60) };
        assert_eq!(c.take(&q, 30), Taken::Used { retry_in: 30 });
        // A day's counter, and a per-second quota filling the table: the day's stays.
        let day = Quota { key: "day".into(), ..quota(1, 86_400) };
        c.counts.guard().remove("k1");
        assert_eq!(c.take(&day, 61), Taken::Ok);
        assert_eq!(c.take(&Quota { key: "sec".into(), ..quota(1, 1) }, 62), Taken::Ok);
        assert!(c.counts.guard().len() <= 3, "the past windows' counters went");
        assert_eq!(c.take(&day, 63), Taken::Used { retry_in: 86_400 - 63 }, "a day's count survives a short quota's cleanup");
    }
}
