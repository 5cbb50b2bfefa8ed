//! A bounded queue of finished spans (or audit lines as log records) and the thread that
//! exports them in batches.
//!
//! `on_end` runs on whatever thread ends a span (an HTTP worker, an actor's arbiter): it only
//! tries to put the span in a bounded channel, never waits, and counts the span dropped when
//! the queue is full. The export thread owns a small runtime of its own, so a slow or dead
//! collector costs the proxy path nothing but those counted drops. [`Queue`] is that queue and
//! thread for any item; [`BoundedBatch`] is the SDK's span processor over one.

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

enum Item<T> {
    One(Box<T>),
    /// Export everything queued before this, then answer.
    Flush(mpsc::Sender<()>),
}

/// How a batch of items becomes one export request's body.
pub type Encode<T> = fn(&Otlp, Vec<T>) -> Vec<u8>;

/// What a queue counts: items it could not take, and items whose export failed.
#[derive(Clone)]
pub struct Drops {
    pub full: IntCounter,
    pub failed: IntCounter,
    /// What the warning calls them (`spans`, `audit lines`) and where they are counted.
    pub what: &'static str,
    pub counted_in: &'static str,
}

/// A bounded queue and the thread that exports what it holds in batches.
pub struct Queue<T: Send + 'static> {
    tx: SyncSender<Item<T>>,
    drops: Drops,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<T: Send + 'static> Queue<T> {
    pub fn start(name: &str, exporter: Otlp, encode: Encode<T>, bounds: Bounds, drops: Drops) -> Self {
        let (tx, rx) = mpsc::sync_channel(bounds.queue);
        let d = drops.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || export_loop(rx, exporter, encode, bounds, d))
            .expect("an export thread starts");
        Queue { tx, drops, thread: Mutex::new(Some(thread)) }
    }

    /// Queues one item, never waiting (a full queue drops it, counted).
    pub fn push(&self, item: T) {
        match self.tx.try_send(Item::One(Box::new(item))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.drops.full.inc(),
            Err(TrySendError::Disconnected(_)) => self.drops.failed.inc(),
        }
    }

    /// Asks the export thread to send what is queued, waiting at most `budget`.
    pub fn flush_within(&self, budget: Duration) -> OTelSdkResult {
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

pub struct BoundedBatch {
    queue: Queue<SpanData>,
}

impl std::fmt::Debug for BoundedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BoundedBatch")
    }
}

impl BoundedBatch {
    pub fn start(exporter: Otlp, bounds: Bounds, dropped: IntCounterVec) -> Self {
        let drops = Drops {
            full: dropped.with_label_values(&["queue_full"]),
            failed: dropped.with_label_values(&["export_failed"]),
            what: "spans",
            counted_in: "mcp_gen_ui_trace_spans_dropped_total",
        };
        BoundedBatch { queue: Queue::start("trace-export", exporter, Otlp::encode, bounds, drops) }
    }
}

impl SpanProcessor for BoundedBatch {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        self.queue.push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.queue.flush_within(Duration::from_secs(5))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let flushed = self.queue.flush_within(timeout);
        // The thread ends when the sender goes (with the provider); a flushed one is idle.
        if flushed.is_ok() {
            drop(self.queue.thread.lock().ok().and_then(|mut t| t.take()));
        }
        flushed
    }
}

fn export_loop<T>(rx: Receiver<Item<T>>, exporter: Otlp, encode: Encode<T>, bounds: Bounds, drops: Drops) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        tracing::error!(
            component = "tracing",
            event = "export_unavailable",
            what = drops.what,
            "the export runtime did not start; {} are dropped",
            drops.what
        );
        for item in rx {
            if let Item::One(_) = item {
                drops.failed.inc();
            }
        }
        return;
    };
    let mut out = Exports { exporter, encode, rt, drops, last_warn: None, batch: Vec::with_capacity(bounds.batch), max: bounds.batch };
    let mut due = Instant::now() + bounds.delay;
    loop {
        match rx.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Ok(Item::One(s)) => {
                out.push(*s);
            }
            Ok(Item::Flush(done)) => {
                // Everything sent before the flush is already in the channel, in order; at most a
                // queue's worth is taken, so items that keep coming cannot hold the flush.
                let mut flushes = vec![done];
                for _ in 0..bounds.queue {
                    let Ok(item) = rx.try_recv() else { break };
                    match item {
                        Item::One(s) => out.push(*s),
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

struct Exports<T> {
    exporter: Otlp,
    encode: Encode<T>,
    rt: tokio::runtime::Runtime,
    drops: Drops,
    last_warn: Option<Instant>,
    batch: Vec<T>,
    max: usize,
}

impl<T> Exports<T> {
    fn push(&mut self, item: T) {
        self.batch.push(item);
        if self.batch.len() >= self.max {
            self.send();
        }
    }

    fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let items = std::mem::replace(&mut self.batch, Vec::with_capacity(self.max));
        let n = items.len() as u64;
        let body = (self.encode)(&self.exporter, items);
        if let Err(e) = self.rt.block_on(self.exporter.post(body)) {
            self.drops.failed.inc_by(n);
            if self.last_warn.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                self.last_warn = Some(Instant::now());
                let (what, counted) = (self.drops.what, self.drops.counted_in);
                tracing::warn!(component = "tracing", event = "export_failed", what, count = n, error = %e, "{what} were dropped: {e} (counted in {counted}; logged once a minute)");
            }
        }
    }
}
