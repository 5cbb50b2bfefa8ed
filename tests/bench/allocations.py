"""Benchmark (prints figures and a ratio, asserts nothing): the allocations of a proxied call,
the figure docs/tests.md quotes as "mallocs per proxied call". The service (no auth, the
offline provider, server-everything over stdio behind `--upstream`) takes one Streamable HTTP
session (benchlib's HttpMcp: one kept-alive connection, one request at a time); after a warm-up,
glibc's `malloc` (and `calloc`, `realloc`, counted apart) is probed with `perf probe` on the
libc the service maps, and `perf stat -p PID` counts the calls the service process makes while
the client sends N sequential `tools/call echo`, then N `ping` on the same session.

The ping is the baseline: behind a bare `--upstream` the service forwards it to the server as
it is (`keepalive_or_level`, actors/src/session/dispatch.rs), so it is a proxied round trip
(the HTTP request, the session, the upstream's pipe both ways, the answer) without what only a
`tools/call` goes through (its plan, the per-tool metrics, the rules and the trail when there
are any). The windows are bracketed exactly (perf stat starts disabled and is enabled and
disabled through its control FIFO); the rounds alternate, the figures are their medians. The
upstream child and the client are not counted.

Needs root (or the right to add uprobes), perf and a kernel with uprobes; skips with a message
otherwise. The probes are a group of its own (`mcp_gen_ui_alloc`), created once and removed at
the end, on a failure and on SIGTERM or Ctrl-C too. The figures are for the binary run (the
dist build, or MCP_GEN_UI_BIN), whatever the checkout's HEAD, which it prints beside them.

    tests/.venv/bin/python tests/bench/allocations.py [--calls 2000] [--warmup 200] [--rounds 3] [--no-build]
"""

import argparse
import contextlib
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ECHO, EVERYTHING_STDIO, ROOT, HttpMcp, conftest, summary, use_release

GROUP = "mcp_gen_ui_alloc"
FUNCS = ("malloc", "calloc", "realloc")  # malloc required, the others when they can be probed
LIBC = re.compile(r"/libc(\.so\.6|-[0-9.]+\.so)$")


def skip(why: str) -> None:
    print(f"allocations.py: SKIPPED: {why}", flush=True)
    sys.exit(0)


def perf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["perf", *args], capture_output=True, text=True)


def mapped_libc(pid: int) -> str:
    """The libc the process maps (its path as /proc/PID/maps gives it)."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and LIBC.search(parts[5]):
            return parts[5]
    skip(f"process {pid} maps no glibc libc.so (a static or musl build?): nothing to probe")


def remove_probes() -> None:
    if f"{GROUP}:" in perf("probe", "-l").stdout:
        perf("probe", "-q", "-d", f"{GROUP}:*")


class Probes:
    """`perf probe -x LIBC` on the allocator's entry points, in a group of this script's own."""

    def __init__(self, libc: str):
        self.events: list[str] = []
        remove_probes()  # a group left by a run that was killed is this script's too
        for f in FUNCS:
            r = perf("probe", "-q", "-x", libc, "-a", f"{GROUP}:{f}={f}")
            if r.returncode == 0:
                self.events.append(f"{GROUP}:{f}")
            elif f == "malloc":
                remove_probes()
                skip(f"perf probe on malloc in {libc} failed (root, uprobes and tracefs are needed):\n  {r.stderr.strip()}")
            else:
                print(f"  ({f} not probed: {r.stderr.strip()})", flush=True)


class Window:
    """`perf stat` attached to a process, started disabled, counting only between enable() and
    disable() (sent on its control FIFO, each waited for until perf acknowledges it)."""

    def __init__(self, pid: int, events: list[str], folder: Path):
        self.ctl, self.ack, self.out = folder / "ctl", folder / "ack", folder / "stat.csv"
        for fifo in (self.ctl, self.ack):
            if not fifo.exists():
                os.mkfifo(fifo)
        self.out.unlink(missing_ok=True)
        self.events = events
        self.p = subprocess.Popen(["perf", "stat", "-x", ",", "-e", ",".join(events), "-p", str(pid), "-D", "-1",
                                   "--control", f"fifo:{self.ctl},{self.ack}", "-o", str(self.out)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # O_RDWR: neither open waits for perf's end of the FIFO
        self.ctl_fd = os.open(self.ctl, os.O_RDWR)
        self.ack_fd = os.open(self.ack, os.O_RDWR)

    def command(self, cmd: str) -> None:
        os.write(self.ctl_fd, cmd.encode() + b"\n")
        got = b""
        deadline = time.monotonic() + 10
        while b"ack" not in got:
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"perf stat did not acknowledge {cmd!r}: {self.stop_err()}")
            if select.select([self.ack_fd], [], [], 0.1)[0]:
                got += os.read(self.ack_fd, 64)

    def enable(self) -> None:
        self.command("enable")

    def disable(self) -> dict[str, int]:
        self.command("disable")
        self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(timeout=10)
        finally:
            self.close()
        counts = {}
        for line in self.out.read_text().splitlines():
            f = line.split(",")
            if len(f) >= 3 and f[2] in self.events:
                counts[f[2].split(":")[1]] = int(f[0]) if f[0].isdigit() else 0  # "<not counted>": no thread ran
        if "malloc" not in counts:
            raise RuntimeError(f"perf stat gave no malloc count: {self.out.read_text()!r}")
        return counts

    def stop_err(self) -> str:
        if self.p.poll() is None:
            self.p.kill()
        return (self.p.communicate()[1] or "").strip()

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        for fd in (self.ctl_fd, self.ack_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.ctl_fd = self.ack_fd = -1


def count(pid: int, probes: Probes, folder: Path, work) -> dict[str, int]:
    w = Window(pid, probes.events, folder)
    try:
        w.enable()
        work()
        return w.disable()
    finally:
        w.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000, help="tools/call (and as many pings) a window")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true", help="use the dist binary as it is")
    a = ap.parse_args()
    if shutil.which("perf") is None:
        skip("perf is not installed (Debian: apt-get install linux-perf)")
    if not Path("/sys/bus/event_source/devices/uprobe").exists():
        skip("this kernel has no uprobes (/sys/bus/event_source/devices/uprobe is missing)")
    binary = use_release(not a.no_build)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or "?"
    # SIGTERM unwinds like Ctrl-C, so that the finally blocks stop the service and remove the probes
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    folder = Path(tempfile.mkdtemp(prefix="bench-allocations-"))
    args = ["--upstream", EVERYTHING_STDIO, "--provider", "offline", "--log-level", "warn"]
    probes, probing = None, False
    runs: dict[str, list[dict[str, int]]] = {"call": [], "ping": []}
    try:
        with conftest.proxy_http(args, name="bench-allocations") as (base, proc):
            pid = proc.p.pid
            c = HttpMcp(base + "/mcp")

            def calls():
                for _ in range(a.calls):
                    r = c.request("tools/call", ECHO)
                    assert "result" in r and not r["result"].get("isError"), r

            def pings():
                for _ in range(a.calls):
                    r = c.request("ping")
                    assert "result" in r, r

            for _ in range(a.warmup):
                for method, params in (("tools/call", ECHO), ("ping", None)):
                    r = c.request(method, params)
                    assert "result" in r, r
            libc = mapped_libc(pid)
            probing = True
            probes = Probes(libc)
            print(f"{binary} (pid {pid}), probed {', '.join(probes.events)} in {libc}; {a.calls} requests a window, {a.rounds} rounds", flush=True)
            idle = count(pid, probes, folder, lambda: time.sleep(1.0))
            for r in range(a.rounds):
                order = [("call", calls), ("ping", pings)] if r % 2 == 0 else [("ping", pings), ("call", calls)]
                for key, work in order:
                    got = count(pid, probes, folder, work)
                    runs[key].append(got)
                    per = ", ".join(f"{f} {n / a.calls:6.2f}" for f, n in got.items())
                    print(f"round {r + 1} {'tools/call' if key == 'call' else 'ping':>10}: {per} a request", flush=True)
            c.close()
    finally:
        if probing:
            remove_probes()
        shutil.rmtree(folder, ignore_errors=True)

    def med(key: str, f: str) -> float:
        return statistics.median(x.get(f, 0) for x in runs[key]) / a.calls

    call, ping = med("call", "malloc"), med("ping", "malloc")
    print(f"\nThe figures are for {binary} (the repository's HEAD is {head}: the binary's own commit is whatever it was built from).")
    print(f"Idle, 1 s before the windows: {idle['malloc']} mallocs.")
    rows = [("mallocs per tools/call echo (median)", f"{call:.1f}", "-", None),
            ("mallocs per ping, same session (median)", f"{ping:.1f}", "-", None),
            ("tools/call / ping", f"{call / ping:.2f}x" if ping else "-", "-", None),
            ("tools/call - ping (what a call adds)", f"{call - ping:.1f}", "-", None)]
    for f in FUNCS[1:]:
        if f"{GROUP}:{f}" in probes.events:
            rows.append((f"{f} per tools/call / per ping", f"{med('call', f):.1f} / {med('ping', f):.1f}", "-", None))
    summary(f"allocations.py: allocator calls of the service process, {binary.name} with HEAD at {head}", rows)


if __name__ == "__main__":
    main()
