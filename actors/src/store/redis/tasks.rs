//! Task routes shared by replicas (`task:<id hosts see>`, JSON, expiring with the task): a task
//! made through one replica is found by another (`proxy::tasks::TaskShare`).

use std::future::Future;
use std::pin::Pin;

use super::{RedisStore, Unavailable};
use crate::proxy::tasks::{SharedRoute, TaskShare};

/// A route longer than this is not a route this service wrote: not taken.
const MAX_ROUTE_BYTES: usize = 4096;

impl RedisStore {
    /// Writes a route unless the id is another person's live task there (two replicas' servers
    /// may hand out the same id): whoever made it first keeps it, as within one replica.
    /// Whether it was written.
    async fn put_task(&self, route: &SharedRoute) -> Result<bool, Unavailable> {
        static PUT: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
            redis::Script::new(
                "local cur = redis.call('GET', KEYS[1]) \
                 if cur then \
                   local ok, r = pcall(cjson.decode, cur) \
                   if ok and type(r) == 'table' and r.owner ~= ARGV[2] then return 0 end \
                 end \
                 redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3]) return 1",
            )
        });
        let k = self.key(&format!("task:{}", route.exposed));
        let v = serde_json::to_string(route).unwrap_or_default();
        let (owner, ms) = (route.owner.clone(), route.ttl_ms.max(1));
        let mut c = self.inner.conn.clone();
        let written: i64 = self.run("tasks", async move { PUT.key(k).arg(v).arg(owner).arg(ms).invoke_async(&mut c).await }).await?;
        Ok(written == 1)
    }

    async fn get_task(&self, exposed: &str) -> Result<Option<SharedRoute>, Unavailable> {
        let k = self.key(&format!("task:{exposed}"));
        let mut c = self.inner.conn.clone();
        let v: Option<String> = self.run("tasks", async move { redis::cmd("GET").arg(k).query_async(&mut c).await }).await?;
        Ok(v.filter(|v| v.len() <= MAX_ROUTE_BYTES)
            .and_then(|v| serde_json::from_str::<SharedRoute>(&v).ok())
            .filter(|r| r.exposed == exposed))
    }
}

impl TaskShare for RedisStore {
    fn put(&self, route: SharedRoute) {
        let store = self.clone();
        // Off the call's path: a write that fails leaves the task this replica's alone.
        tokio::spawn(async move {
            match store.put_task(&route).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(
                        component = "redis",
                        event = "task_not_shared",
                        "a task's id is another person's task on another replica: it stays this replica's alone"
                    )
                }
                Err(why) => {
                    tracing::debug!(component = "redis", event = "task_not_shared", error = %why, "a task's route was not written for the other replicas")
                }
            }
        });
    }

    fn get(&self, exposed: String) -> Pin<Box<dyn Future<Output = Option<SharedRoute>> + Send>> {
        let store = self.clone();
        Box::pin(async move { store.get_task(&exposed).await.ok().flatten() })
    }
}
