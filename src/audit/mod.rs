//! The audit trail's writer: one thread that takes the lines sessions and the edge hand over
//! (`mcp_gen_ui_actors::audit`) and writes them to the file (`file.rs`), standard output, and
//! OTLP logs when traces are exported. It is the only writer, so lines never interleave. Once a
//! line comes it gathers what follows for 10 ms and writes and flushes the batch, so a busy
//! trail is written in large writes and a quiet one is on disk within about that. A sink that
//! blocks (a full pipe) stalls only this thread: the queue fills and what does not fit is
//! dropped and counted, requests are not slowed.

pub mod file;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_gen_ui_actors::audit::{Audit, Entry, Feed};
use prometheus::IntCounter;

use crate::config::settings::policy::AuditSettings;
use crate::telemetry::logs::AuditLogs;
use file::AuditFile;

/// A failing sink is logged at most this often.
const WARN_EVERY: Duration = Duration::from_secs(60);
/// How often a sink that failed is tried again while nothing is written.
const PROBE_EVERY: Duration = Duration::from_secs(1);
/// How long the writer waits, once a line comes, for the lines that follow it.
const GATHER: Duration = Duration::from_millis(10);
/// The smallest `audit.queue` that gathers: 1,000 lines in 10 ms is 100,000 a second.
const GATHER_MIN_QUEUE: usize = 1_000;
/// The most lines in one write.
const BATCH: usize = 4096;

/// Settings waiting for the writer (a reload).
struct Control {
    next: Mutex<Option<AuditSettings>>,
    changed: AtomicBool,
}

/// The running trail: the handle everyone records through, and its writer.
pub struct Trail {
    audit: Audit,
    control: Arc<Control>,
    otlp: Option<Arc<AuditLogs>>,
}

impl Trail {
    /// Starts the writer (it idles while the trail is off, so a reload can turn it on).
    pub fn start(settings: &AuditSettings, lines: &prometheus::IntCounterVec, otlp: Option<AuditLogs>) -> Trail {
        let (audit, feed) = Audit::start(settings.queue, settings.required, settings.arguments, lines.with_label_values(&["dropped"]));
        audit.configure(settings.on(), settings.required, settings.arguments);
        let control = Arc::new(Control { next: Mutex::new(Some(settings.clone())), changed: AtomicBool::new(true) });
        let otlp = otlp.map(Arc::new);
        let writer = Writer {
            feed,
            control: control.clone(),
            sinks: Sinks::default(),
            written: lines.with_label_values(&["written"]),
            otlp: otlp.clone(),
            last_warn: None,
            kept: Default::default(),
        };
        std::thread::Builder::new().name("audit".into()).spawn(move || writer.run()).expect("the audit thread starts");
        if settings.on() {
            tracing::info!(component = "audit", event = "trail", file = ?settings.file, stdout = settings.stdout, required = settings.required, arguments = settings.arguments, "audit trail on");
        }
        Trail { audit, control, otlp }
    }

    pub fn handle(&self) -> Audit {
        self.audit.clone()
    }

    /// A reload: the writer opens the new sinks before the next line; the handle records (or
    /// not, required or not) as the new settings say from now on.
    pub fn reconfigure(&self, settings: &AuditSettings) {
        *self.control.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(settings.clone());
        self.control.changed.store(true, Ordering::Release);
        self.audit.configure(settings.on(), settings.required, settings.arguments);
    }

    /// At shutdown: waits (within `budget`) for the queued lines to be written.
    pub fn finish(&self, budget: Duration) {
        let deadline = Instant::now() + budget;
        while self.audit.pending() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let lost = self.audit.pending();
        if lost > 0 {
            // The sink did not take them in time (it is stuck, or far behind): said and counted.
            self.audit.count_dropped(lost as u64);
            tracing::error!(
                component = "audit",
                event = "lines_lost_at_shutdown",
                lines = lost,
                budget_ms = budget.as_millis() as u64,
                "audit lines were not written before shutdown: the sink did not take them in time"
            );
        }
        if let Some(o) = &self.otlp {
            o.flush(deadline.saturating_duration_since(Instant::now()));
        }
    }
}

#[derive(Default)]
struct Sinks {
    file: Option<AuditFile>,
    stdout: bool,
}

impl Sinks {
    fn of(s: &AuditSettings) -> Sinks {
        Sinks { file: s.file.clone().map(|p| AuditFile::new(p, s.max_file_bytes, s.keep_files)), stdout: s.stdout }
    }

    /// Every sink gets the line; the error is the last that failed.
    fn write(&mut self, line: &[u8]) -> Result<(), SinkError> {
        let mut failed = None;
        if let Some(f) = &mut self.file {
            if let Err(e) = f.write(line) {
                failed = Some(SinkError::File(e));
            }
        }
        if self.stdout {
            if let Err(e) = std::io::stdout().lock().write_all(line) {
                failed = Some(SinkError::Stdout(e));
            }
        }
        failed.map_or(Ok(()), Err)
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        let file = self.file.as_mut().map_or(Ok(()), |f| f.flush().map_err(SinkError::File));
        if self.stdout {
            let _ = std::io::stdout().lock().flush();
        }
        file
    }

    fn probe(&mut self) -> Result<(), SinkError> {
        self.file.as_mut().map_or(Ok(()), |f| f.probe().map_err(SinkError::File))
    }
}

/// Which sink refused a line.
#[derive(Debug, thiserror::Error)]
enum SinkError {
    #[error(transparent)]
    File(file::FileError),
    #[error("cannot write to standard output: {0}")]
    Stdout(std::io::Error),
}

struct Writer {
    feed: Feed,
    control: Arc<Control>,
    sinks: Sinks,
    written: IntCounter,
    otlp: Option<Arc<AuditLogs>>,
    last_warn: Option<Instant>,
    /// `audit.required`: lines not written yet, tried again (in order, before any newer line)
    /// until the sink takes them.
    kept: std::collections::VecDeque<String>,
}

impl Writer {
    fn run(mut self) {
        let mut healthy = true;
        loop {
            self.take_settings();
            match self.feed.rx.recv_timeout(PROBE_EVERY) {
                Ok(entry) => {
                    // Lines come in bursts: gathering for a moment makes one wake of this
                    // thread and one write for many lines, not one of each (the thread's CPU
                    // is taken from the calls'). Not when a whole batch already waits (the
                    // writer is behind), nor with a small queue, which would fill meanwhile.
                    let behind = self.feed.pending() > BATCH;
                    if self.feed.capacity() >= GATHER_MIN_QUEUE && !behind {
                        std::thread::sleep(GATHER);
                    }
                    let mut batch = vec![*entry];
                    // What else waits goes in the same write and flush.
                    batch.extend(self.feed.rx.try_iter().take(BATCH - 1).map(|e| *e));
                    healthy = self.write(batch);
                }
                Err(RecvTimeoutError::Timeout) if !healthy => {
                    healthy = match self.kept.is_empty() {
                        true => {
                            self.feed.writing(true);
                            let ok = self.sinks.probe().is_ok();
                            self.feed.writing(false);
                            ok
                        }
                        false => self.write(Vec::new()),
                    };
                    self.feed.set_healthy(healthy);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn take_settings(&mut self) {
        if self.control.changed.swap(false, Ordering::AcqRel) {
            if let Some(s) = self.control.next.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = self.sinks.flush();
                self.sinks = Sinks::of(&s);
            }
        }
    }

    /// Writes a batch (after the lines kept from a failure); whether every line landed.
    fn write(&mut self, batch: Vec<Entry>) -> bool {
        self.feed.writing(true);
        let ok = self.write_batch(batch);
        self.feed.writing(false);
        ok
    }

    fn write_batch(&mut self, batch: Vec<Entry>) -> bool {
        let mut lines: Vec<String> = self.kept.drain(..).collect();
        for entry in &batch {
            let line = entry.to_line();
            if let Some(o) = &self.otlp {
                o.push(entry, &line);
            }
            lines.push(line);
        }
        let mut failure = None;
        let mut buffered = Vec::new();
        let mut failed = Vec::new();
        for line in lines {
            // Once a line fails the rest wait behind it, so the file keeps their order.
            if failure.is_some() {
                failed.push(line);
                continue;
            }
            match self.sinks.write(line.as_bytes()) {
                Ok(()) => buffered.push(line),
                Err(e) => {
                    failure = Some(e);
                    failed.push(line);
                }
            }
        }
        let written = match self.sinks.flush() {
            Ok(()) => buffered.len(),
            Err(e) => {
                // What was buffered did not reach the sink: it failed with the rest.
                failure = Some(e);
                failed.splice(0..0, buffered);
                0
            }
        };
        let dropped = self.keep_or_drop(failed);
        self.written.inc_by(written as u64);
        self.feed.dropped(dropped as u64);
        // Flushed (or kept, or dropped): no longer what a shutdown waits for.
        self.feed.done(&batch);
        let ok = failure.is_none();
        self.feed.set_healthy(ok);
        if let Some(e) = failure {
            if self.last_warn.is_none_or(|t| t.elapsed() >= WARN_EVERY) {
                self.last_warn = Some(Instant::now());
                tracing::error!(component = "audit", event = "write_failed", dropped, error = %e, "audit lines could not be written: {e} (counted in mcp_gen_ui_audit_lines_total{{outcome=\"dropped\"}}; logged once a minute)");
            }
        }
        ok
    }

    /// Lines that failed: kept for another try with `audit.required` (up to the queue's size),
    /// else dropped. How many were dropped.
    fn keep_or_drop(&mut self, failed: Vec<String>) -> usize {
        if !self.feed.required() {
            return failed.len();
        }
        let room = self.feed.capacity().saturating_sub(self.kept.len());
        let dropped = failed.len().saturating_sub(room);
        self.kept.extend(failed.into_iter().take(room));
        dropped
    }
}
