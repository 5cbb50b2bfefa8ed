//! Quotas counted across replicas: one key per quota's counter and window
//! (`quota:<key>:<window>`), counted by a script that adds a call only while there is room, and
//! expires with its window.

use super::{RedisStore, Unavailable};

/// KEYS[1]: the counter; ARGV: the quota's calls, the seconds the key lives. 1: counted.
const TAKE: &str = r"
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return 0 end
redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1";

impl RedisStore {
    /// Counts one call in `window` unless `calls` were counted there already: whether it was.
    pub async fn take_quota(&self, key: &str, window: u64, calls: u32, per_secs: u64) -> Result<bool, Unavailable> {
        let k = self.key(&format!("quota:{key}:{window}"));
        let mut c = self.inner.conn.clone();
        let took: i64 = self
            .run("quota", async move { redis::Script::new(TAKE).key(k).arg(calls).arg(per_secs + 1).invoke_async(&mut c).await })
            .await?;
        Ok(took == 1)
    }
}
