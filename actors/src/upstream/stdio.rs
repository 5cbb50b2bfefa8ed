//! stdio upstream: a child process speaking newline-delimited JSON-RPC on stdin/stdout.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::unix::pipe;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::error::ConnectError;
use super::framing::{Frame, LineFramer};
use super::pipe_writer::{flush_loop, PipeWriter};
use crate::mcp::relayed::Relayed;
use crate::process::homes;
use crate::process::locks::Recover;

use super::{FastPath, Link, LinkEvent, LinkLimits, LinkTx, LINK_QUEUE};

/// What may wait for a stdio upstream that is slow to read its input (beyond what its pipe
/// holds): then sending is refused with "not reading".
const PIPE_BACKLOG: usize = 16 * 1024 * 1024;

/// How long a child gets to exit after its stdin closes before it is killed.
const GRACE: Duration = Duration::from_millis(1500);

pub async fn connect(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: Option<&Path>,
    limits: LinkLimits,
    fast: Option<FastPath>,
) -> Result<Link, ConnectError> {
    let mut cmd = Command::new(command);
    // The child gets a safe base, not our environment: API keys and our own settings stay here.
    cmd.args(args)
        .env_clear()
        .envs(base_env(std::env::vars_os()))
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
    let mut child = cmd.spawn().map_err(|e| ConnectError::Spawn {
        command: command.to_string(),
        reason: e.to_string(),
        missing: e.kind() == std::io::ErrorKind::NotFound,
    })?;
    let pid = child.id();
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");

    let (from_up_tx, from_up_rx) = mpsc::channel::<LinkEvent>(LINK_QUEUE);
    let cancel = CancellationToken::new();

    // Senders write the child's stdin themselves; this task only flushes what did not fit.
    let local = |e: std::io::Error| ConnectError::Local { what: "the upstream's stdin", reason: e.to_string() };
    let fd = stdin.into_owned_fd().map_err(local)?;
    let pipe = PipeWriter::new(fd, PIPE_BACKLOG).map_err(local)?;
    tokio::spawn(flush_loop(pipe.clone(), cancel.clone()));

    let out = stdout.into_owned_fd().map_err(local)?;
    let reader = Reader { framer: LineFramer::new(limits.max_message_bytes), tx: from_up_tx.clone(), limits, fast };
    tokio::spawn(read_here_then_home(out, reader));
    tokio::spawn(drain_stderr(stderr));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(watch_child(child, pid, cancel.clone(), from_up_tx, done_tx));

    tracing::info!(component = "upstream", event = "spawned", pid = pid.unwrap_or(0), command = %command, "upstream process started");
    Ok(Link::new(LinkTx::Pipe(pipe), from_up_rx, cancel, done_rx))
}

/// The child's stdout, framed into messages for the actor (bytes, not lines: one bad byte or an
/// endless line must not stop or swell the reader); the link closes when it ends.
struct Reader {
    framer: LineFramer,
    tx: mpsc::Sender<LinkEvent>,
    limits: LinkLimits,
    fast: Option<FastPath>,
}

/// What one read came to.
enum Step {
    More,
    /// Nobody listens any more.
    Gone,
    Ended(String),
}

impl Reader {
    async fn step(&mut self, read: std::io::Result<usize>, buf: &[u8]) -> Step {
        let frames = match read {
            Ok(0) => {
                let last = self.framer.finish();
                deliver(&self.tx, last, self.limits, self.fast.as_ref()).await;
                return Step::Ended("the upstream closed its stdout".to_string());
            }
            Ok(n) => self.framer.feed(&buf[..n]),
            Err(e) => return Step::Ended(format!("cannot read the upstream's stdout: {e}")),
        };
        match deliver(&self.tx, frames, self.limits, self.fast.as_ref()).await {
            true => Step::More,
            false => Step::Gone,
        }
    }

    /// A child that exits closes stdout too: give the exit status a moment to be the reason
    /// given (it says more), then close the link either way.
    async fn close(self, why: String) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = self.tx.send(LinkEvent::Closed(why)).await;
    }
}

const READ_BUF: usize = 64 * 1024;

/// Reads on this thread until a home (an HTTP worker, `process::homes`) exists, then moves
/// there with what it has framed so far: answers are routed where sessions are.
async fn read_here_then_home(fd: OwnedFd, mut r: Reader) {
    let mut pipe = match pipe::Receiver::from_owned_fd(fd) {
        Ok(p) => p,
        Err(e) => return r.close(format!("cannot read the upstream's stdout: {e}")).await,
    };
    let mut buf = vec![0u8; READ_BUF];
    let first_home = homes::first();
    tokio::pin!(first_home);
    let home = loop {
        // Reading is cancel-safe: a read the move interrupts has taken nothing.
        let read = tokio::select! {
            biased;
            read = pipe.read(&mut buf) => read,
            home = &mut first_home => break home,
        };
        match r.step(read, &buf).await {
            Step::More => {}
            Step::Gone => return,
            Step::Ended(why) => return r.close(why).await,
        }
    };
    let fd = match pipe.into_nonblocking_fd() {
        Ok(fd) => fd,
        Err(e) => return r.close(format!("cannot move the upstream's stdout: {e}")).await,
    };
    // A home that has stopped (the edge shutting down) takes nothing: the reader stays.
    let slot = Arc::new(Mutex::new(Some((fd, r))));
    let theirs = slot.clone();
    let moved = home.spawn(async move {
        let taken = theirs.guard().take();
        if let Some((fd, r)) = taken {
            read_at_home(fd, r).await;
        }
    });
    let left = if moved { None } else { slot.guard().take() };
    if let Some((fd, r)) = left {
        read_at_home(fd, r).await;
    }
}

/// Reads until the end, where it is.
async fn read_at_home(fd: OwnedFd, mut r: Reader) {
    let mut pipe = match pipe::Receiver::from_owned_fd(fd) {
        Ok(p) => p,
        Err(e) => return r.close(format!("cannot read the upstream's stdout: {e}")).await,
    };
    let mut buf = vec![0u8; READ_BUF];
    loop {
        let read = pipe.read(&mut buf).await;
        match r.step(read, &buf).await {
            Step::More => {}
            Step::Gone => return,
            Step::Ended(why) => return r.close(why).await,
        }
    }
}

/// The child's stderr, always drained (a full stderr pipe would block the child) into the log;
/// any bytes, lines cut short.
async fn drain_stderr(stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader).take(64 * 1024).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::info!(component = "upstream", event = "stderr", "{}", truncate(text, 2000));
                }
            }
        }
    }
}

/// Waits for the child: its exit closes the link (its process group killed: wrappers such as
/// npx or sh may leave grandchildren); the link's end gives it `GRACE` to exit, then kills it.
/// `done` fires when this ends, however it ends.
async fn watch_child(
    mut child: tokio::process::Child,
    pid: Option<u32>,
    cancel: CancellationToken,
    tx: mpsc::Sender<LinkEvent>,
    done: tokio::sync::oneshot::Sender<()>,
) {
    let _done = done;
    tokio::select! {
        status = child.wait() => {
            let why = match status {
                Ok(s) => format!("the upstream process exited ({s})"),
                Err(e) => format!("the upstream process could not be waited on: {e}"),
            };
            kill_group(pid);
            let _ = tx.send(LinkEvent::Closed(why)).await;
        }
        _ = cancel.cancelled() => {
            if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
                kill_group(pid);
                let _ = child.kill().await;
            }
            kill_group(pid);
        }
    }
}

/// Hands frames to the actor (waiting while it is behind). False when nobody listens any more.
async fn deliver(tx: &mpsc::Sender<LinkEvent>, frames: Vec<Frame>, limits: LinkLimits, fast: Option<&FastPath>) -> bool {
    for f in frames {
        let ev = match f {
            Frame::Message(m) => match fast {
                Some(take) => match take(Relayed::Tree(m)) {
                    Some(rest) => LinkEvent::Passed(rest),
                    None => continue,
                },
                None => LinkEvent::Message(m),
            },
            Frame::Raw(r) => match fast {
                Some(take) => match take(Relayed::Raw(r)) {
                    Some(rest) => LinkEvent::Passed(rest),
                    None => continue,
                },
                None => LinkEvent::Message(r.into_value()),
            },
            Frame::Bad(why) => LinkEvent::Bad(why.to_string()),
            Frame::Oversized { id, bytes } => {
                tracing::warn!(
                    component = "upstream",
                    event = "oversized",
                    bytes,
                    limit = limits.max_message_bytes,
                    "upstream message over upstream.maxMessageBytes dropped"
                );
                LinkEvent::Oversized { id, bytes }
            }
        };
        if tx.send(ev).await.is_err() {
            return false;
        }
    }
    true
}

/// Variables a program needs to run like it would from a shell (find binaries, a home, a
/// locale, a time zone, a temp folder) and nothing else.
const BASE_ENV: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "TMPDIR"];

fn base_env(vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vars.filter(|(k, _)| k.to_str().is_some_and(|k| BASE_ENV.contains(&k) || k.starts_with("LC_"))).collect()
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

pub(crate) fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_safe_base_passes() {
        let vars = ["PATH", "HOME", "LC_ALL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MCP_GEN_UI_LISTEN", "LANGUAGE_X", "TZ"]
            .iter()
            .map(|k| (std::ffi::OsString::from(k), std::ffi::OsString::from("v")));
        let kept: Vec<String> = base_env(vars).into_iter().map(|(k, _)| k.into_string().unwrap()).collect();
        assert_eq!(kept, ["PATH", "HOME", "LC_ALL", "TZ"]);
    }
}
