//! Generation leases (`lease:<cache key>`, the replica making that page): claimed with
//! `SET NX PX`, renewed and released only by their holder (compare in Lua).

use super::{RedisStore, Unavailable};

impl RedisStore {
    /// `SET lease:<key> <replica> NX PX <ttl>`: true when this replica now holds the key.
    pub async fn try_lease(&self, key: &str) -> Result<bool, Unavailable> {
        let k = self.key(&format!("lease:{key}"));
        let (me, ms) = (self.inner.replica.clone(), self.inner.settings.lease_ttl.as_millis() as u64);
        let mut c = self.inner.conn.clone();
        let set: Option<String> = self
            .run("lease", async move { redis::cmd("SET").arg(k).arg(me).arg("NX").arg("PX").arg(ms).query_async(&mut c).await })
            .await?;
        Ok(set.is_some())
    }

    /// Extends our lease; false when it is no longer ours (it expired and another took it).
    pub async fn renew_lease(&self, key: &str) -> Result<bool, Unavailable> {
        static RENEW: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
            redis::Script::new(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end",
            )
        });
        let k = self.key(&format!("lease:{key}"));
        let (me, ms) = (self.inner.replica.clone(), self.inner.settings.lease_ttl.as_millis() as u64);
        let mut c = self.inner.conn.clone();
        let n: i64 = self.run("lease", async move { RENEW.key(k).arg(me).arg(ms).invoke_async(&mut c).await }).await?;
        Ok(n == 1)
    }

    /// Deletes the lease if it is still ours (never another replica's).
    pub async fn release_lease(&self, key: &str) -> Result<bool, Unavailable> {
        static RELEASE: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
            redis::Script::new("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end")
        });
        let k = self.key(&format!("lease:{key}"));
        let me = self.inner.replica.clone();
        let mut c = self.inner.conn.clone();
        let n: i64 = self.run("lease", async move { RELEASE.key(k).arg(me).invoke_async(&mut c).await }).await?;
        Ok(n == 1)
    }
}
