//! Results this service looks at: file artifacts moved from the model's content to the page
//! (`results.shaping: artifacts`, UI hosts only) and result shapes learnt for the generation
//! prompt (`generation.learnResultShape`), with the page remade once a tool's shape is new.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::Value;

use super::HostSession;
use crate::mcp::{jsonrpc, result_shape};
use crate::messages::{Broadcast, HostEvent, Peek, ReadUi};
use crate::store::learned_shapes::LearnedShapes;

impl HostSession {
    /// A tools/call whose result this service looks at (`results.shaping`,
    /// `generation.learnResultShape`); otherwise calls are forwarded untouched.
    pub(super) fn tool_call(&mut self, ctx: &mut Context<Self>, msg: Value) {
        let name = jsonrpc::params(&msg).get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        self.forward_then(ctx, msg, move |act, ctx, mut answer| {
            if let Some(result) = answer.get("result") {
                // Only tools the upstream lists: a host may call any name, and the table must
                // not grow with made-up ones.
                let listed = || act.deps.router.status().tool(&name).is_some();
                let shapes = act.deps.shapes.clone().filter(|_| listed());
                if let (Some(shapes), Some(obj)) = (shapes, result_shape::result_object(result)) {
                    if shapes.learn(&name, &result_shape::shape_of(&obj)) {
                        act.remake_with_shape(ctx, name.clone(), shapes);
                    }
                }
                if act.deps.shape_artifacts && act.ui() {
                    if let Some(shaped) = result_shape::shape_artifacts(result) {
                        answer["result"] = shaped;
                    }
                }
            }
            act.answer(answer);
        });
    }

    /// A tool's results taught something new: its page, if one was made before, is made again
    /// with the shape, in the background, once per tool revision.
    pub(super) fn remake_with_shape(&mut self, ctx: &mut Context<Self>, name: String, shapes: Arc<LearnedShapes>) {
        let status = self.deps.router.status();
        let Some(tool) = status.tool(&name).filter(|t| self.deps.ui_enabled_for(t)).cloned() else {
            return;
        };
        let deps = self.deps.clone();
        let fut = async move {
            let hash = tokio::task::spawn_blocking({
                let tool = tool.clone();
                move || crate::page::tool_hash(&tool)
            })
            .await
            .unwrap_or_default();
            if !shapes.take_remake(&name, &hash) {
                return;
            }
            let made = deps.queue.peek.send(Peek { tool: tool.clone() }).await.ok().flatten();
            if made.is_none() {
                return; // no page yet: the first one will know the shape
            }
            deps.metrics.shape_regenerations.inc();
            tracing::info!(component = "host_session", event = "shape_remake", tool_name = %name, "remaking a page with the result shape learnt for its tool");
            let request_id = uuid::Uuid::new_v4().simple().to_string();
            let _ = deps.queue.read.send(ReadUi { tool, request_id, force: true }).await;
            deps.upstream.broadcast.do_send(Broadcast(HostEvent::UiResourcesChanged));
        };
        ctx.spawn(fut.into_actor(self));
    }
}
