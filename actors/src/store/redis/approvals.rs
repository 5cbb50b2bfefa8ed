//! Approvals shared by replicas: each request as JSON (`approval:<id>`, expiring a while after
//! the request does), the pending ones' ids (`approvals-pending`), a call's standing request
//! (`approval-for:<call>`, so a retry joins it), and a decided approval waiting for its call
//! (`approved:<call>`, taken once by GETDEL: single use). A decision is one script: only a
//! pending request is decided, once.

use super::{RedisStore, Unavailable};

/// KEYS: the request, the pending set, the approved key; ARGV: the decided JSON, its id, who
/// approved ("" for a decline or an expiry), the seconds an approval stands. Answers the
/// request as it stands after (the decided one, or what another decision made it).
const DECIDE: &str = r"
local cur = redis.call('GET', KEYS[1])
if not cur then return false end
if cjson.decode(cur).state.is ~= 'pending' then return cur end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
redis.call('SREM', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then redis.call('SET', KEYS[3], ARGV[3], 'EX', ARGV[4]) end
return ARGV[1]";

impl RedisStore {
    /// A new request, unless the call has one standing: answers the standing one's id.
    pub async fn approval_put(&self, id: &str, call: &str, json: String, ttl_secs: u64) -> Result<String, Unavailable> {
        let (k, pending, for_call) =
            (self.key(&format!("approval:{id}")), self.key("approvals-pending"), self.key(&format!("approval-for:{call}")));
        let id = id.to_string();
        let mut c = self.inner.conn.clone();
        self.run("approvals", async move {
            let set: bool = redis::cmd("SET")
                .arg(&for_call)
                .arg(&id)
                .arg("NX")
                .arg("EX")
                .arg(ttl_secs)
                .query_async::<Option<String>>(&mut c)
                .await?
                .is_some();
            if !set {
                let standing: Option<String> = redis::cmd("GET").arg(&for_call).query_async(&mut c).await?;
                return Ok(standing.unwrap_or(id));
            }
            redis::pipe()
                .atomic()
                .cmd("SET")
                .arg(&k)
                .arg(json)
                .arg("EX")
                .arg(ttl_secs + 3600)
                .ignore()
                .cmd("SADD")
                .arg(&pending)
                .arg(&id)
                .ignore()
                .query_async::<()>(&mut c)
                .await?;
            Ok(id)
        })
        .await
    }

    pub async fn approval_get(&self, id: &str) -> Result<Option<String>, Unavailable> {
        let k = self.key(&format!("approval:{id}"));
        let mut c = self.inner.conn.clone();
        self.run("approvals", async move { redis::cmd("GET").arg(k).query_async(&mut c).await }).await
    }

    /// Decides a pending request (see `DECIDE`); the call's standing request goes with it.
    pub async fn approval_decide(
        &self,
        id: &str,
        call: &str,
        json: String,
        approved_by: &str,
        ttl_secs: u64,
    ) -> Result<Option<String>, Unavailable> {
        let keys = [self.key(&format!("approval:{id}")), self.key("approvals-pending"), self.key(&format!("approved:{call}"))];
        let for_call = self.key(&format!("approval-for:{call}"));
        let (id, by) = (id.to_string(), approved_by.to_string());
        let mut c = self.inner.conn.clone();
        self.run("approvals", async move {
            let after: Option<String> = redis::Script::new(DECIDE)
                .key(&keys[0])
                .key(&keys[1])
                .key(&keys[2])
                .arg(&json)
                .arg(&id)
                .arg(by)
                .arg(ttl_secs.max(1))
                .invoke_async(&mut c)
                .await?;
            if after.as_deref() == Some(json.as_str()) {
                redis::cmd("DEL").arg(for_call).query_async::<()>(&mut c).await?;
            }
            Ok(after)
        })
        .await
    }

    /// Takes a call's approval (once): who approved it.
    pub async fn approval_take(&self, call: &str) -> Result<Option<String>, Unavailable> {
        let k = self.key(&format!("approved:{call}"));
        let mut c = self.inner.conn.clone();
        self.run("approvals", async move { redis::cmd("GETDEL").arg(k).query_async(&mut c).await }).await
    }

    /// Every pending request's JSON (ids whose request went are dropped from the set).
    pub async fn approvals_pending(&self) -> Result<Vec<String>, Unavailable> {
        let pending = self.key("approvals-pending");
        let prefix = self.key("approval:");
        let mut c = self.inner.conn.clone();
        self.run("approvals", async move {
            let ids: Vec<String> = redis::cmd("SMEMBERS").arg(&pending).query_async(&mut c).await?;
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = ids.iter().map(|i| format!("{prefix}{i}")).collect();
            let found: Vec<Option<String>> = redis::cmd("MGET").arg(&keys).query_async(&mut c).await?;
            let gone: Vec<&String> = ids.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(i, _)| i).collect();
            if !gone.is_empty() {
                redis::cmd("SREM").arg(&pending).arg(gone).query_async::<()>(&mut c).await?;
            }
            Ok(found.into_iter().flatten().collect())
        })
        .await
    }
}
