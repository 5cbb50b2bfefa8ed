//! Refinement histories (`refinements:<tool>`, a list of JSON items) and classifications
//! (`classifications`, a hash: tool hash -> rich|minimal) in Redis.

use std::collections::HashMap;

use super::{RedisStore, Unavailable};
use crate::messages::HistoryKey;
use crate::messages::Refinement;
use crate::page::UiType;

/// Deletes every personal history a tool's index names, then the index; answers how many.
const CLEAR_PERSONAL: &str = r"
local keys = redis.call('SMEMBERS', KEYS[1])
for _, k in ipairs(keys) do redis.call('DEL', k) end
redis.call('DEL', KEYS[1])
return #keys";

impl RedisStore {
    /// The set of a tool's personal history keys: removing the tool removes them without a
    /// scan of the keyspace.
    fn personal_index(&self, tool: &str) -> String {
        self.key(&format!("refinements-personal:{tool}"))
    }

    /// Appends one refinement; answers the tool's whole history, oldest first. A personal
    /// history's key goes into its tool's index in the same transaction.
    pub async fn push_refinement(&self, history: &HistoryKey, r: &Refinement) -> Result<Vec<Refinement>, Unavailable> {
        let k = self.key(&format!("refinements:{}", history.stored()));
        let index = history.owner.as_ref().map(|_| self.personal_index(&history.tool));
        let json = serde_json::to_string(r).unwrap_or_default();
        let mut c = self.inner.conn.clone();
        let (items,): (Vec<String>,) = self
            .run("refinements", async move {
                let mut p = redis::pipe();
                p.atomic().cmd("RPUSH").arg(&k).arg(json).ignore();
                if let Some(index) = index {
                    p.cmd("SADD").arg(index).arg(&k).ignore();
                }
                p.cmd("LRANGE").arg(&k).arg(0).arg(-1).query_async(&mut c).await
            })
            .await?;
        Ok(parse_history(&history.tool, items))
    }

    /// Forgets every person's own history of a tool that is gone; answers how many there were.
    pub async fn clear_personal_refinements(&self, tool: &str) -> Result<usize, Unavailable> {
        let index = self.personal_index(tool);
        let mut c = self.inner.conn.clone();
        self.run("refinements", async move { redis::Script::new(CLEAR_PERSONAL).key(index).invoke_async(&mut c).await }).await
    }

    pub async fn refinements(&self, history: &HistoryKey) -> Result<Vec<Refinement>, Unavailable> {
        let k = self.key(&format!("refinements:{}", history.stored()));
        let mut c = self.inner.conn.clone();
        let items: Vec<String> =
            self.run("refinements", async move { redis::cmd("LRANGE").arg(k).arg(0).arg(-1).query_async(&mut c).await }).await?;
        Ok(parse_history(&history.tool, items))
    }

    /// Forgets a history (a tool's shared one, or one person's); answers how many refinements it
    /// had. A personal one leaves its tool's index too.
    pub async fn clear_refinements(&self, history: &HistoryKey) -> Result<usize, Unavailable> {
        let k = self.key(&format!("refinements:{}", history.stored()));
        let index = history.owner.as_ref().map(|_| self.personal_index(&history.tool));
        let mut c = self.inner.conn.clone();
        let (n,): (usize,) = self
            .run("refinements", async move {
                let mut p = redis::pipe();
                p.atomic().cmd("LLEN").arg(&k).cmd("DEL").arg(&k).ignore();
                if let Some(index) = index {
                    p.cmd("SREM").arg(index).arg(&k).ignore();
                }
                p.query_async(&mut c).await
            })
            .await?;
        Ok(n)
    }

    pub async fn classification(&self, tool_hash: &str) -> Result<Option<UiType>, Unavailable> {
        let (k, f) = (self.key("classifications"), tool_hash.to_string());
        let mut c = self.inner.conn.clone();
        let v: Option<String> =
            self.run("classifications", async move { redis::cmd("HGET").arg(k).arg(f).query_async(&mut c).await }).await?;
        Ok(v.and_then(|s| parse_ui_type(&s)))
    }

    pub async fn classifications(&self) -> Result<HashMap<String, UiType>, Unavailable> {
        let k = self.key("classifications");
        let mut c = self.inner.conn.clone();
        let all: HashMap<String, String> =
            self.run("classifications", async move { redis::cmd("HGETALL").arg(k).query_async(&mut c).await }).await?;
        Ok(all.into_iter().filter_map(|(h, v)| parse_ui_type(&v).map(|t| (h, t))).collect())
    }

    pub async fn remember_classification(&self, tool_hash: &str, t: UiType) -> Result<(), Unavailable> {
        let (k, f) = (self.key("classifications"), tool_hash.to_string());
        let v = match t {
            UiType::Rich => "rich",
            UiType::Minimal => "minimal",
        };
        let mut c = self.inner.conn.clone();
        self.run("classifications", async move { redis::cmd("HSET").arg(k).arg(f).arg(v).query_async::<()>(&mut c).await }).await
    }

    pub async fn forget_classification(&self, tool_hash: &str) -> Result<(), Unavailable> {
        let (k, f) = (self.key("classifications"), tool_hash.to_string());
        let mut c = self.inner.conn.clone();
        self.run("classifications", async move { redis::cmd("HDEL").arg(k).arg(f).query_async::<()>(&mut c).await }).await
    }
}

fn parse_ui_type(s: &str) -> Option<UiType> {
    match s {
        "rich" => Some(UiType::Rich),
        "minimal" => Some(UiType::Minimal),
        _ => None,
    }
}

fn parse_history(tool: &str, items: Vec<String>) -> Vec<Refinement> {
    items
        .into_iter()
        .filter_map(|s| match serde_json::from_str(&s) {
            Ok(r) => Some(r),
            Err(_) => {
                tracing::warn!(component = "redis", event = "corrupt_refinement", tool_name = %tool, "skipping a refinement in Redis that does not parse");
                None
            }
        })
        .collect()
}
