//! Refinement histories (`refinements:<tool>`, a list of JSON items) and classifications
//! (`classifications`, a hash: tool hash -> rich|minimal) in Redis.

use std::collections::HashMap;

use super::{RedisStore, Unavailable};
use crate::messages::Refinement;
use crate::page::UiType;

impl RedisStore {
    /// Appends one refinement; answers the tool's whole history, oldest first.
    pub async fn push_refinement(&self, tool: &str, r: &Refinement) -> Result<Vec<Refinement>, Unavailable> {
        let k = self.key(&format!("refinements:{tool}"));
        let json = serde_json::to_string(r).unwrap_or_default();
        let mut c = self.inner.conn.clone();
        let (items,): (Vec<String>,) = self
            .run("refinements", async move {
                redis::pipe()
                    .atomic()
                    .cmd("RPUSH")
                    .arg(&k)
                    .arg(json)
                    .ignore()
                    .cmd("LRANGE")
                    .arg(&k)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut c)
                    .await
            })
            .await?;
        Ok(parse_history(tool, items))
    }

    pub async fn refinements(&self, tool: &str) -> Result<Vec<Refinement>, Unavailable> {
        let k = self.key(&format!("refinements:{tool}"));
        let mut c = self.inner.conn.clone();
        let items: Vec<String> =
            self.run("refinements", async move { redis::cmd("LRANGE").arg(k).arg(0).arg(-1).query_async(&mut c).await }).await?;
        Ok(parse_history(tool, items))
    }

    /// Forgets a tool's history; answers how many refinements it had.
    pub async fn clear_refinements(&self, tool: &str) -> Result<usize, Unavailable> {
        let k = self.key(&format!("refinements:{tool}"));
        let mut c = self.inner.conn.clone();
        let (n,): (usize,) =
            self.run("refinements", async move {
                redis::pipe().atomic().cmd("LLEN").arg(&k).cmd("DEL").arg(&k).ignore().query_async(&mut c).await
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
