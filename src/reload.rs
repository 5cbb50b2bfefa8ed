//! Files read again while the service runs (the servers file, the config file's `policy` and
//! `audit`): on SIGHUP, and when the file changes (checked every second, acted on once it has
//! been still for half a second, since editors write in steps).

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Calls `reload` with why (`SIGHUP`, `the file changed`) each time `file` should be read
/// again, for as long as the service runs. The SIGHUP handler is installed before this returns.
pub fn watch(file: PathBuf, mut reload: impl FnMut(&'static str) + 'static) -> std::io::Result<()> {
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    actix_web::rt::spawn(async move {
        let mut seen = stamp(&file);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            let why = tokio::select! {
                _ = hup.recv() => "SIGHUP",
                _ = tick.tick() => {
                    let now = stamp(&file);
                    if now == seen {
                        continue;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    if stamp(&file) != now {
                        continue;
                    }
                    "the file changed"
                }
            };
            seen = stamp(&file);
            reload(why);
        }
    });
    Ok(())
}

/// When the file last changed, and how long it is (None: it cannot be read now).
fn stamp(file: &PathBuf) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(file).ok()?;
    Some((m.modified().ok()?, m.len()))
}
