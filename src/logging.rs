//! Logging setup: text or JSON, to stderr or a file (stdout belongs to the stdio transport).

use std::path::Path;

use tracing_subscriber::{fmt, EnvFilter};

use crate::config::LogFormat;

pub fn init(level: &str, format: LogFormat, file: Option<&Path>) -> std::io::Result<()> {
    let filter = EnvFilter::builder().parse_lossy(level);
    let writer: Box<dyn Fn() -> Box<dyn std::io::Write> + Send + Sync> = match file {
        Some(p) => {
            let f = std::fs::OpenOptions::new().create(true).append(true).open(p)?;
            Box::new(move || Box::new(f.try_clone().expect("log file handle clones")) as Box<dyn std::io::Write>)
        }
        None => Box::new(|| Box::new(std::io::stderr()) as Box<dyn std::io::Write>),
    };
    let builder = fmt().with_env_filter(filter).with_writer(writer);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).init(),
        LogFormat::Text => builder.with_ansi(file.is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr())).init(),
    }
    Ok(())
}
