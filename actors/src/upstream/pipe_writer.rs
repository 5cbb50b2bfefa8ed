//! Writing to a stdio upstream from the senders' own threads. A JSON-RPC line is written to the
//! child's stdin by the HTTP worker that forwards it (a non-blocking write under a lock, in
//! order), so the link's one thread is not woken for every message; only what the pipe cannot
//! take at once waits in a bounded backlog, which a task on the link's thread flushes when the
//! pipe is writable again.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::process::locks::Recover;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Why a line was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum PipeError {
    /// The upstream is not reading: the backlog is at its bound.
    Full,
    /// The pipe is gone (the upstream exited or the link closed).
    Closed,
}

pub struct PipeWriter {
    inner: Mutex<Inner>,
    wake: Notify,
    /// Bytes that may wait for the pipe.
    limit: usize,
    fd: RawFd,
}

struct Inner {
    /// Open for as long as the writer lives: the descriptor is watched for readiness, and it
    /// must not be closed (and its number reused) while it is. `closed` stops the writing.
    file: File,
    closed: bool,
    /// Bytes waiting for the pipe, from `sent` on (the written front is dropped now and then,
    /// not on every write, so draining a large backlog stays linear).
    backlog: Vec<u8>,
    sent: usize,
}

impl Inner {
    fn waiting(&self) -> usize {
        self.backlog.len() - self.sent
    }
}

impl PipeWriter {
    /// Takes over the child's stdin (made non-blocking).
    pub fn new(fd: OwnedFd, limit: usize) -> std::io::Result<Arc<Self>> {
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on a descriptor this function owns.
        let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Arc::new(PipeWriter {
            inner: Mutex::new(Inner { file: File::from(fd), closed: false, backlog: Vec::new(), sent: 0 }),
            wake: Notify::new(),
            limit,
            fd: raw,
        }))
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.guard()
    }

    /// Writes `line` now if the pipe takes it, else queues what is left behind the backlog.
    pub fn send(&self, line: &[u8]) -> Result<(), PipeError> {
        let mut g = self.lock();
        let inner = &mut *g;
        if inner.closed {
            return Err(PipeError::Closed);
        }
        // Decided before a byte is written: a line is never cut short.
        if inner.waiting() + line.len() > self.limit {
            return Err(PipeError::Full);
        }
        if inner.waiting() > 0 {
            inner.backlog.extend_from_slice(line);
            return Ok(());
        }
        let mut written = 0;
        while written < line.len() {
            match inner.file.write(&line[written..]) {
                Ok(n) if n > 0 => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                _ => {
                    inner.closed = true;
                    return Err(PipeError::Closed);
                }
            }
        }
        if written < line.len() {
            inner.backlog.clear();
            inner.sent = 0;
            inner.backlog.extend_from_slice(&line[written..]);
            drop(g);
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Stops writing (the descriptor itself closes with the writer, once no one holds it).
    pub fn close(&self) {
        self.lock().closed = true;
    }

    /// Writes what waits in the backlog. True when nothing is left (or the pipe is gone).
    fn flush(&self) -> Result<bool, ()> {
        let mut g = self.lock();
        let inner = &mut *g;
        if inner.closed {
            return Ok(true);
        }
        while inner.waiting() > 0 {
            match inner.file.write(&inner.backlog[inner.sent..]) {
                Ok(n) if n > 0 => inner.sent += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if inner.sent > inner.backlog.len() / 2 {
                        let sent = inner.sent;
                        inner.backlog.drain(..sent);
                        inner.sent = 0;
                    }
                    return Ok(false);
                }
                _ => {
                    inner.closed = true;
                    return Err(());
                }
            }
        }
        inner.backlog.clear();
        inner.sent = 0;
        Ok(true)
    }
}

/// The descriptor, for readiness only (the `File` in the writer owns it).
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Flushes the backlog whenever a sender left one, as the pipe becomes writable; closes the
/// pipe when the link is cancelled. Runs on the link's thread.
pub async fn flush_loop(w: Arc<PipeWriter>, cancel: CancellationToken) {
    // SAFETY: the descriptor stays open while `ready` lives: the writer's `File` owns it and is
    // dropped only with the writer, which this task holds until after `ready` is dropped.
    let ready = match unsafe { AsyncFd::register_with_interest(Fd(w.fd), Interest::WRITABLE) } {
        Ok(r) => r,
        Err(e) => {
            // Without readiness nothing left over could ever go: end the link (it restarts).
            let e = e.into_parts().1;
            tracing::warn!(component = "upstream", event = "pipe_unwatched", error = %e, "cannot watch the upstream's stdin; restarting the link");
            w.close();
            cancel.cancel();
            return;
        }
    };
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = w.wake.notified() => {}
        }
        loop {
            match w.flush() {
                Ok(true) => break,
                // The pipe is gone (the writer is closed now, so senders hear it): the child's
                // exit ends the link.
                Err(()) => break,
                Ok(false) => {}
            }
            tokio::select! {
                _ = cancel.cancelled() => {
                    drop(ready);
                    w.close();
                    return;
                }
                r = ready.writable() => match r {
                    Ok(mut guard) => guard.clear_ready(),
                    Err(_) => {
                        w.close();
                        cancel.cancel();
                        break;
                    }
                },
            }
        }
    }
    drop(ready);
    w.close();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pipe() -> (OwnedFd, File) {
        let mut fds = [0; 2];
        // SAFETY: pipe(2) fills both descriptors, which are owned from here on.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        use std::os::fd::FromRawFd;
        unsafe { (OwnedFd::from_raw_fd(fds[1]), File::from_raw_fd(fds[0])) }
    }

    #[tokio::test]
    async fn lines_go_out_in_order_and_a_full_pipe_backs_up_then_drains() {
        let (w, mut r) = pipe();
        let writer = PipeWriter::new(w, 1 << 20).unwrap();
        let cancel = CancellationToken::new();
        tokio::spawn(flush_loop(writer.clone(), cancel.clone()));
        // More than a pipe holds (64 KB): the rest waits and is flushed as the reader reads.
        let line = vec![b'x'; 1000];
        for _ in 0..200 {
            writer.send(&line).unwrap();
        }
        writer.send(b"end\n").unwrap();
        let reader = tokio::task::spawn_blocking(move || {
            let mut all = Vec::new();
            let mut buf = [0u8; 8192];
            while !all.ends_with(b"end\n") {
                let n = r.read(&mut buf).unwrap();
                assert!(n > 0);
                all.extend_from_slice(&buf[..n]);
            }
            all.len()
        });
        assert_eq!(reader.await.unwrap(), 200 * 1000 + 4);
        cancel.cancel();
    }

    #[test]
    fn a_backlog_at_its_bound_refuses_and_a_closed_pipe_says_so() {
        let (w, _r) = pipe();
        let writer = PipeWriter::new(w, 100_000).unwrap();
        assert_eq!(writer.send(&[b'x'; 100_001]), Err(PipeError::Full), "refused whole, never cut");
        let big = vec![b'x'; 70_000]; // fills the pipe; the rest waits
        writer.send(&big).unwrap();
        writer.send(&[b'y'; 20_000]).unwrap();
        assert_eq!(writer.send(&[b'y'; 80_000]), Err(PipeError::Full));
        writer.close();
        assert_eq!(writer.send(b"z"), Err(PipeError::Closed));
    }
}
