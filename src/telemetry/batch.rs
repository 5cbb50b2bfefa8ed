//! A bounded queue of finished spans and the thread that exports them in batches.
//!
//! `on_end` runs on whatever thread ends a span (an HTTP worker, an actor's arbiter): it only
//! tries to put the span in a bounded channel, never waits, and counts the span dropped when
//! the queue is full. The export thread owns a small runtime of its own, so a slow or dead
//! collector costs the proxy path nothing but those counted drops.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
use prometheus::{IntCounter, IntCounterVec};

use super::otlp::Otlp;
use crate::config::settings::traces::TraceSettings;

/// Label values of `mcp_gen_ui_trace_spans_dropped_total`.
pub const DROP_REASONS: [&str; 2] = ["queue_full", "export_failed"];

/// How often a failing export is logged at most: a collector down for a day is one line a
/// minute, not one per batch.
const WARN_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub queue: usize,
    pub batch: usize,
    pub delay: Duration,
}

impl Bounds {
    pub fn of(s: &TraceSettings) -> Self {
        Bounds { queue: s.max_queue_size, batch: s.max_export_batch_size, delay: s.schedule_delay }
    }
}

enum Item {
    Span(Box<SpanData>),
    /// Export everything queued before this, then answer.
    Flush(mpsc::Sender<()>),
}

pub struct BoundedBatch {
    tx: SyncSender<Item>,
    /// `queue_full` and `export_failed`, resolved once (a drop must cost no label lookup).
    full: IntCounter,
    gone: IntCounter,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for BoundedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoundedBatch")
    }
}

impl BoundedBatch {
    pub fn start(exporter: Otlp, bounds: Bounds, dropped: IntCounterVec) -> Self {
        let (tx, rx) = mpsc::sync_channel(bounds.queue);
        let counter = dropped.clone();
        let thread = std::thread::Builder::new()
            .name("trace-export".into())
            .spawn(move || export_loop(rx, exporter, bounds, counter))
            .expect("the trace export thread starts");
        let (full, gone) = (dropped.with_label_values(&["queue_full"]), dropped.with_label_values(&["export_failed"]));
        BoundedBatch { tx, full, gone, thread: Mutex::new(Some(thread)) }
    }

    /// Asks the export thread to send what is queued, waiting at most `budget`.
    fn flush_within(&self, budget: Duration) -> OTelSdkResult {
        let deadline = Instant::now() + budget;
        let (done_tx, done_rx) = mpsc::channel();
        let mut item = Item::Flush(done_tx);
        loop {
            match self.tx.try_send(item) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < deadline => {
                    item = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return Err(OTelSdkError::Timeout(budget)),
            }
        }
        done_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).map_err(|_| OTelSdkError::Timeout(budget))
    }
}

impl SpanProcessor for BoundedBatch {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        match self.tx.try_send(Item::Span(Box::new(span))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.full.inc(),
            Err(TrySendError::Disconnected(_)) => self.gone.inc(),
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.flush_within(Duration::from_secs(5))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let flushed = self.flush_within(timeout);
        // The thread ends when the sender goes (with the provider); a flushed one is idle.
        if flushed.is_ok() {
            drop(self.thread.lock().ok().and_then(|mut t| t.take()));
        }
        flushed
    }
}

fn export_loop(rx: Receiver<Item>, exporter: Otlp, bounds: Bounds, dropped: IntCounterVec) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        tracing::error!(component = "tracing", event = "export_unavailable", "the trace export runtime did not start; spans are dropped");
        for item in rx {
            if let Item::Span(_) = item {
                dropped.with_label_values(&["export_failed"]).inc();
            }
        }
        return;
    };
    let mut out = Exports { exporter, rt, dropped, last_warn: None, batch: Vec::with_capacity(bounds.batch), max: bounds.batch };
    let mut due = Instant::now() + bounds.delay;
    loop {
        match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Ok(Item::Span(s)) => {
                out.push(*s);
            }
            Ok(Item::Flush(done)) => {
                // Everything sent before the flush is already in the channel, in order; at most a
                // queue's worth is taken, so spans that keep coming cannot hold the flush.
                let mut flushes = vec![done];
                for _ in 0..bounds.queue {
                    let Ok(item) = rx.try_recv() else { break };
                    match item {
                        Item::Span(s) => out.push(*s),
                        Item::Flush(other) => flushes.push(other),
                    }
                }
                out.send();
                for f in flushes {
                    let _ = f.send(()); // answered once what came before them has gone
                }
                due = Instant::now() + bounds.delay;
            }
            Err(RecvTimeoutError::Timeout) => {
                out.send();
                due = Instant::now() + bounds.delay;
            }
            Err(RecvTimeoutError::Disconnected) => {
                out.send();
                return;
            }
        }
    }
}

struct Exports {
    exporter: Otlp,
    rt: tokio::runtime::Runtime,
    dropped: IntCounterVec,
    last_warn: Option<Instant>,
    batch: Vec<SpanData>,
    max: usize,
}

impl Exports {
    fn push(&mut self, span: SpanData) {
        self.batch.push(span);
        if self.batch.len() >= self.max {
            self.send();
        }
    }

    fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let spans = std::mem::replace(&mut self.batch, Vec::with_capacity(self.max));
        let n = spans.len() as u64;
        if let Err(e) = self.rt.block_on(self.exporter.export(spans)) {
            self.dropped.with_label_values(&["export_failed"]).inc_by(n);
            if self.last_warn.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                self.last_warn = Some(Instant::now());
                tracing::warn!(component = "tracing", event = "export_failed", spans = n, error = %e, "spans were dropped: {e} (counted in mcp_gen_ui_trace_spans_dropped_total; logged once a minute)");
            }
        }
    }
}
