//! Tool lifecycle, the pure parts: what changed between two tool lists, and when the next
//! periodic refresh runs (every interval; after failures 30 s, 60 s, 120 s).

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

use crate::messages::ToolsDiff;
use crate::page::tool_hash;

fn name(t: &Value) -> String {
    t.get("name").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// By name; a tool whose hash (description, schemas, annotations) differs is "changed".
pub fn diff(old: &[Value], new: &[Value]) -> ToolsDiff {
    let mut d = ToolsDiff::default();
    for t in new {
        match old.iter().find(|o| name(o) == name(t)) {
            None => d.added.push(name(t)),
            Some(o) if tool_hash(o) != tool_hash(t) => d.changed.push(name(t)),
            Some(_) => d.unchanged.push(name(t)),
        }
    }
    for o in old {
        if !new.iter().any(|t| name(t) == name(o)) {
            d.removed.push(name(o));
        }
    }
    d
}

/// The wait before the next refresh, given how many refreshes in a row have failed.
pub fn next_delay(interval: Duration, failures: u32) -> Duration {
    match failures {
        0 => interval,
        1 => Duration::from_secs(30),
        2 => Duration::from_secs(60),
        _ => Duration::from_secs(120),
    }
}

/// Runs `refresh` forever on the schedule of `next_delay`. `refresh` answers whether it worked.
pub async fn periodic<F, Fut>(interval: Duration, mut refresh: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let mut failures = 0;
    loop {
        tokio::time::sleep(next_delay(interval, failures)).await;
        if refresh().await {
            failures = 0;
        } else {
            failures += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    #[test]
    fn diff_by_name_and_hash() {
        let old = vec![json!({"name": "a", "description": "x"}), json!({"name": "b"}), json!({"name": "c"})];
        let new = vec![json!({"name": "a", "description": "y"}), json!({"name": "b"}), json!({"name": "d"})];
        let d = diff(&old, &new);
        assert_eq!(
            d,
            ToolsDiff { added: vec!["d".into()], removed: vec!["c".into()], changed: vec!["a".into()], unchanged: vec!["b".into()] }
        );
        assert!(d.is_change());
        assert!(!diff(&old, &old).is_change());
    }

    #[tokio::test(start_paused = true)]
    async fn failing_refreshes_back_off_30_60_120_then_recover() {
        let start = tokio::time::Instant::now();
        let calls: Arc<Mutex<Vec<u64>>> = Arc::default();
        let c = calls.clone();
        // Fails four times, then works.
        let task = tokio::spawn(periodic(Duration::from_secs(300), move || {
            let c = c.clone();
            async move {
                let mut v = c.lock().unwrap();
                v.push(start.elapsed().as_secs());
                v.len() > 4
            }
        }));
        tokio::time::sleep(Duration::from_secs(300 + 30 + 60 + 120 + 120 + 300 + 1)).await;
        task.abort();
        let v = calls.lock().unwrap().clone();
        let gaps: Vec<u64> = v.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(v[0], 300, "the first refresh waits a full interval");
        assert_eq!(gaps, vec![30, 60, 120, 120, 300], "backs off 30, 60, 120, 120 s, then the interval again");
    }
}
