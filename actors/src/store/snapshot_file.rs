//! Small state files kept beside the page cache (refinement histories, classifications): read
//! once at start, rewritten whole (atomic rename) whenever the state changes. Writes run on the
//! blocking pool, latest snapshot wins, so an actor hands over a value and never waits on disk.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::watch;

/// Reads `path` as JSON; a missing file is `None` quietly, a corrupt one `None` with a warning.
pub async fn load<T: DeserializeOwned + Send + 'static>(path: PathBuf) -> Option<T> {
    let shown = path.display().to_string();
    let bytes = match tokio::task::spawn_blocking(move || std::fs::read(&path)).await {
        Ok(Ok(b)) => b,
        _ => return None,
    };
    match serde_json::from_slice(&bytes) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::warn!(component = "snapshot_file", event = "corrupt_file", file = %shown, error = %e, "skipping a corrupt state file");
            None
        }
    }
}

/// Writes every snapshot it is given to one file, in order, skipping ones superseded meanwhile.
pub struct Writer<T> {
    tx: watch::Sender<Option<T>>,
}

impl<T: Serialize + Clone + Send + Sync + 'static> Writer<T> {
    /// Starts the writer task (needs a Tokio runtime).
    pub fn start(path: PathBuf) -> Self {
        let (tx, mut rx) = watch::channel::<Option<T>>(None);
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                let Some(snapshot) = rx.borrow_and_update().clone() else { continue };
                let path = path.clone();
                let res = tokio::task::spawn_blocking(move || write_atomic(&path, &snapshot)).await;
                if !matches!(res, Ok(Ok(()))) {
                    tracing::warn!(component = "snapshot_file", event = "write_failed", "could not persist a state file");
                }
            }
        });
        Writer { tx }
    }

    pub fn save(&self, snapshot: T) {
        let _ = self.tx.send(Some(snapshot));
    }
}

fn write_atomic<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(value).map_err(std::io::Error::other)?)?;
    std::fs::rename(&tmp, path)
}

/// Where the state files of a cache folder live (a subfolder: the cache reads `*.json` entries
/// at its top level).
pub fn state_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("state")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn saves_the_latest_and_loads_it_back() {
        let dir = std::env::temp_dir().join(format!("mcp-gen-ui-snap-{}", std::process::id()));
        let path = dir.join("x.json");
        let w = Writer::<Vec<u32>>::start(path.clone());
        w.save(vec![1]);
        w.save(vec![1, 2]);
        for _ in 0..100 {
            if load::<Vec<u32>>(path.clone()).await == Some(vec![1, 2]) {
                let _ = std::fs::remove_dir_all(&dir);
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the latest snapshot was not written");
    }

    #[tokio::test]
    async fn a_corrupt_or_missing_file_is_none() {
        let dir = std::env::temp_dir().join(format!("mcp-gen-ui-snap-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("bad.json"), b"{not json").unwrap();
        assert_eq!(load::<Vec<u32>>(dir.join("bad.json")).await, None);
        assert_eq!(load::<Vec<u32>>(dir.join("missing.json")).await, None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
