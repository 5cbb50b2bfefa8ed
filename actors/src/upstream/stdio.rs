//! stdio upstream: a child process speaking newline-delimited JSON-RPC on stdin/stdout.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Link, LinkEvent};

/// How long a child gets to exit after its stdin closes before it is killed.
const GRACE: Duration = Duration::from_millis(1500);

pub async fn connect(command: &str, args: &[String], env: &[(String, String)], cwd: Option<&Path>) -> Result<Link, String> {
    let mut cmd = Command::new(command);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // Its own process group, so that `npx`/shell wrappers and their children die together.
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start upstream command {command:?}: {e}"))?;
    let pid = child.id();
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");

    let (to_up_tx, mut to_up_rx) = mpsc::unbounded_channel::<Value>();
    let (from_up_tx, from_up_rx) = mpsc::unbounded_channel::<LinkEvent>();
    let cancel = CancellationToken::new();

    let writer_cancel = cancel.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = writer_cancel.cancelled() => break,
                msg = to_up_rx.recv() => {
                    let Some(msg) = msg else { break };
                    let mut line = serde_json::to_vec(&msg).expect("a Value serializes");
                    line.push(b'\n');
                    if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping stdin is the polite way to ask an MCP stdio server to exit.
    });

    let reader_tx = from_up_tx.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(&line) {
                Ok(v) => {
                    let _ = reader_tx.send(LinkEvent::Message(v));
                }
                Err(_) => {
                    tracing::warn!(component = "upstream", event = "non_json_stdout", line = %truncate(&line, 200), "upstream wrote a line to stdout that is not JSON-RPC; ignored")
                }
            }
        }
    });

    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::info!(component = "upstream", event = "stderr", "{}", truncate(&line, 2000));
        }
    });

    let wait_cancel = cancel.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let _done = done_tx; // dropped (and so fired) when this task ends, however it ends
        tokio::select! {
            status = child.wait() => {
                let why = match status {
                    Ok(s) => format!("the upstream process exited ({s})"),
                    Err(e) => format!("the upstream process could not be waited on: {e}"),
                };
                // Wrappers (npx, sh) may leave grandchildren behind; they belong to the same group.
                kill_group(pid);
                let _ = from_up_tx.send(LinkEvent::Closed(why));
            }
            _ = wait_cancel.cancelled() => {
                if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                    kill_group(pid);
                    let _ = child.kill().await;
                }
                kill_group(pid);
            }
        }
    });

    tracing::info!(component = "upstream", event = "spawned", pid = pid.unwrap_or(0), command = %command, "upstream process started");
    Ok(Link::new(to_up_tx, from_up_rx, cancel, done_rx))
}

#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid {
        // SAFETY: killpg only sends a signal; a stale group id at worst yields ESRCH.
        unsafe {
            libc::killpg(pid as i32, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: Option<u32>) {}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
