//! Logging: text or JSON lines, to stderr, stdout (not with the stdio transport) or a file.
//!
//! The JSON form is one structured entry per line: `timestamp`, `level`, `component`,
//! `event`, `requestId`, `duration_ms`, `tool_name`, `cache_key`, `error`, `message`, plus any
//! other field. Fields of the spans an event is in (the request span carries `requestId`) are
//! merged in, so one request id can be followed from the edge to the LLM call with `grep`.
//!
//! Values come from the network (tool names, methods, errors an upstream wrote): in the text
//! form every control character in them is escaped (`\n`, `\u{1b}`), so no value can start a
//! line of its own or drive a terminal; the JSON form is escaped by JSON itself.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, EnvFilter, Layer};

use crate::config::file::LogFormat;

type Sink = Arc<Mutex<Box<dyn Write + Send>>>;

pub fn init(level: &str, format: LogFormat, file: Option<&Path>, stdout: bool) -> std::io::Result<()> {
    let filter = EnvFilter::builder().parse_lossy(level);
    let sink: Sink = Arc::new(Mutex::new(match file {
        Some(p) => Box::new(std::fs::OpenOptions::new().create(true).append(true).open(p)?),
        None if stdout => Box::new(std::io::stdout()),
        None => Box::new(std::io::stderr()),
    }));
    match format {
        LogFormat::Json => tracing_subscriber::registry().with(filter).with(JsonLayer { sink }).init(),
        LogFormat::Text => {
            let writer = move || SinkWriter(sink.clone());
            fmt()
                .with_env_filter(filter)
                .fmt_fields(EscapedFields)
                .with_writer(writer)
                .with_ansi(file.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .init()
        }
    }
    Ok(())
}

/// The text form's fields, each value with its control characters escaped.
struct EscapedFields;

impl<'w> fmt::FormatFields<'w> for EscapedFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(&self, writer: fmt::format::Writer<'w>, fields: R) -> std::fmt::Result {
        let mut v = EscapingVisitor { writer, first: true, result: Ok(()) };
        fields.record(&mut v);
        v.result
    }
}

struct EscapingVisitor<'w> {
    writer: fmt::format::Writer<'w>,
    first: bool,
    result: std::fmt::Result,
}

impl EscapingVisitor<'_> {
    fn write(&mut self, field: &Field, value: std::fmt::Arguments<'_>) {
        use std::fmt::Write as _;
        if self.result.is_err() {
            return;
        }
        let sep = if self.first { "" } else { " " };
        self.first = false;
        self.result = if field.name() == "message" {
            write!(self.writer, "{sep}").and_then(|_| Escape(&mut self.writer).write_fmt(value))
        } else {
            write!(self.writer, "{sep}{}=", field.name()).and_then(|_| Escape(&mut self.writer).write_fmt(value))
        };
    }
}

impl Visit for EscapingVisitor<'_> {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.write(f, format_args!("{v:?}"));
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.write(f, format_args!("{v}"));
    }
}

/// Writes through, with every control character written as its escape.
struct Escape<'a, W>(&'a mut W);

impl<W: std::fmt::Write> std::fmt::Write for Escape<'_, W> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for c in s.chars() {
            if c.is_control() {
                write!(self.0, "{}", c.escape_default())?;
            } else {
                self.0.write_char(c)?;
            }
        }
        Ok(())
    }
}

struct SinkWriter(Sink);

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("log sink poisoned"))?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().map_err(|_| std::io::Error::other("log sink poisoned"))?.flush()
    }
}

/// Collects fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0.insert(f.name().to_string(), Value::String(format!("{v:?}")));
    }
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name().to_string(), Value::String(v.to_string()));
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name().to_string(), v.into());
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name().to_string(), v.into());
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name().to_string(), v.into());
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.insert(f.name().to_string(), v.into());
    }
}

/// Span fields, kept in the span's extensions until it closes.
struct SpanFields(Map<String, Value>);

struct JsonLayer {
    sink: Sink,
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for JsonLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut map = Map::new();
        attrs.record(&mut Fields(&mut map));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(map));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(f) = span.extensions_mut().get_mut::<SpanFields>() {
                values.record(&mut Fields(&mut f.0));
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut out = Map::new();
        out.insert("timestamp".into(), Value::String(humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()));
        out.insert("level".into(), Value::String(event.metadata().level().to_string().to_lowercase()));
        out.insert("target".into(), Value::String(event.metadata().target().to_string()));
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(f) = span.extensions().get::<SpanFields>() {
                    out.extend(f.0.clone());
                }
            }
        }
        event.record(&mut Fields(&mut out));
        // The seed's name for the request id; internal fields use snake case.
        if let Some(rid) = out.remove("request_id") {
            out.entry("requestId").or_insert(rid);
        }
        let mut line = serde_json::to_vec(&Value::Object(out)).unwrap_or_default();
        line.push(b'\n');
        if let Ok(mut w) = self.sink.lock() {
            let _ = w.write_all(&line);
            let _ = w.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::Escape;

    #[test]
    fn control_characters_never_reach_a_line_raw() {
        let mut out = String::new();
        write!(Escape(&mut out), "evil\nINFO mcp_gen_ui: forged admin=true\r\u{1b}[31m").unwrap();
        assert_eq!(out, "evil\\nINFO mcp_gen_ui: forged admin=true\\r\\u{1b}[31m");
        assert!(!out.contains('\n') && !out.contains('\u{1b}'));
    }
}
