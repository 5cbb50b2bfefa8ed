//! Results this service looks at: file artifacts moved from the model's content to the page
//! (`results.shaping: artifacts`, UI hosts only) and result shapes learnt for the generation
//! prompt (`generation.learnResultShape`), with the page remade once a tool's shape is new.
//! A shape is learnt only from the results of whoever shapes the shared pages (an admin, or
//! everyone when the edge cannot tell people apart): a learnt shape goes into the prompt of the
//! page everyone is served, and a caller chooses the keys of an echoing tool's result.

use std::sync::Arc;

use actix::prelude::*;
use serde_json::Value;

use super::HostSession;
use crate::mcp::result_shape;
use crate::messages::{HostEvent, Peek, ReadUi, ReadWait};
use crate::store::learned_shapes::LearnedShapes;

impl HostSession {
    /// Whether this service looks at tool results at all (`results.shaping`,
    /// `generation.learnResultShape`); otherwise they pass untouched.
    pub(super) fn shapes_results(&self) -> bool {
        self.deps.shape_artifacts || self.deps.shapes.is_some()
    }

    /// Whether this session's results may teach a tool's shape: only the results of whoever
    /// shapes the shared pages (not a person whose refinements are their own), since the shape
    /// goes into the prompt of the page everyone is served.
    fn teaches_shapes(&self) -> bool {
        self.own().is_none()
    }

    /// The answer to a call of the tool hosts know as `name`, shaped: its result's shape
    /// learnt, its file artifacts moved to the page (UI hosts).
    pub(super) fn shaped(&mut self, ctx: &mut Context<Self>, name: &str, mut answer: Value) -> Value {
        if let Some(result) = answer.get("result") {
            // Only tools the catalog lists: a host may call any name, and the table must not
            // grow with made-up ones.
            let listed = || self.deps.fleet.catalog().tool(name).is_some();
            let shapes = self.deps.shapes.clone().filter(|_| self.teaches_shapes() && listed());
            if let (Some(shapes), Some(obj)) = (shapes, result_shape::result_object(result)) {
                if shapes.learn(name, &result_shape::shape_of(&obj)) {
                    self.remake_with_shape(ctx, name.to_string(), shapes);
                }
            }
            if self.deps.shape_artifacts && self.ui() {
                if let Some(shaped) = result_shape::shape_artifacts(result) {
                    answer["result"] = shaped;
                }
            }
        }
        answer
    }

    /// A tool's results taught something new: its page, if one was made before, is made again
    /// with the shape, in the background, once per tool revision.
    pub(super) fn remake_with_shape(&mut self, ctx: &mut Context<Self>, name: String, shapes: Arc<LearnedShapes>) {
        let catalog = self.deps.fleet.catalog();
        let Some(tool) = catalog.tool(&name).filter(|t| self.deps.gets_page(t)).map(|t| (*t.def).clone()) else {
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
            let made = deps.queue.peek.send(Peek { tool: tool.clone(), personal: None }).await.ok().flatten();
            if made.is_none() {
                return; // no page yet: the first one will know the shape
            }
            deps.metrics.shape_regenerations.inc();
            tracing::info!(component = "host_session", event = "shape_remake", tool_name = %name, "remaking a page with the result shape learnt for its tool");
            let request_id = uuid::Uuid::new_v4().simple().to_string();
            let remake =
                ReadUi { tool, request_id, force: true, personal: None, trace: crate::trace::TraceCx::none(), wait: ReadWait::Whole };
            let _ = deps.queue.read.send(remake).await;
            deps.fleet.broadcast(HostEvent::UiResourcesChanged);
        };
        ctx.spawn(fut.into_actor(self));
    }
}
