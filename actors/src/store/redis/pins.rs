//! Pinned tools shared by replicas (`tool-pins`, a hash: `<server>\0<tool>` -> the pin as
//! JSON): the first replica to see a tool pins it for all; an accepted change is written over
//! it and announced, so every replica lets the tool through. Pins are opaque JSON here.

use serde_json::Value;

use super::{RedisStore, Unavailable};

impl RedisStore {
    fn pins_key(&self) -> String {
        self.key("tool-pins")
    }

    /// Pins a tool unless a replica pinned it first; answers the pin that stands when it is
    /// another (this replica then holds or warns as for a change).
    pub async fn pin_first(&self, server: &str, tool: &str, pin: &Value) -> Result<Option<Value>, Unavailable> {
        let (k, field, json) = (self.pins_key(), field(server, tool), pin.to_string());
        let mut c = self.inner.conn.clone();
        let (_, stands): (bool, Option<String>) = self
            .run("pins", async move {
                redis::pipe().atomic().cmd("HSETNX").arg(&k).arg(&field).arg(json).cmd("HGET").arg(&k).arg(&field).query_async(&mut c).await
            })
            .await?;
        Ok(stands.and_then(|s| serde_json::from_str::<Value>(&s).ok()).filter(|p| p != pin))
    }

    /// Writes a tool's pin over what was there (a change passed with `warn`, or accepted).
    pub async fn pin_set(&self, server: &str, tool: &str, pin: &Value) -> Result<(), Unavailable> {
        let (k, field, json) = (self.pins_key(), field(server, tool), pin.to_string());
        let mut c = self.inner.conn.clone();
        self.run("pins", async move { redis::cmd("HSET").arg(k).arg(field).arg(json).query_async::<()>(&mut c).await }).await
    }

    /// Every pin as (server, tool, pin): a replica starting.
    pub async fn pins(&self) -> Result<Vec<(String, String, Value)>, Unavailable> {
        let k = self.pins_key();
        let mut c = self.inner.conn.clone();
        let all: Vec<(String, String)> = self.run("pins", async move { redis::cmd("HGETALL").arg(k).query_async(&mut c).await }).await?;
        Ok(all
            .into_iter()
            .filter_map(|(f, v)| {
                let (server, tool) = f.split_once('\0')?;
                Some((server.to_string(), tool.to_string(), serde_json::from_str(&v).ok()?))
            })
            .collect())
    }
}

fn field(server: &str, tool: &str) -> String {
    format!("{server}\0{tool}")
}
