"""Benchmark (prints figures and ratios, asserts nothing): issue 53, the proxy path against the
Rust gateway a Rust user would pick instead, `mcp-proxy` 0.6.0 (crates.io, tower-mcp), in one
run: both wrap the same upstream (server-everything over stdio), both serve Streamable HTTP on
loopback, wrk drives `tools/call echo` into one session of each, the rounds alternate.

For each: CPU per proxied call (utime+stime of the proxy process from /proc/PID/stat around the
load, the upstream child not counted), calls/s at c8, p50 and p99 at c1 and at c8, RSS idle and
after the load. mcp-gen-ui runs in its default configuration: the rules, the audit trail,
metrics and the isolation checks as they are by default (no feature turned off).

`mcp-proxy` is installed into tests/.peers/mcp-proxy with `cargo install --locked` when missing
(bench only, never CI: about 13 minutes on two cores).

    tests/.venv/bin/python tests/bench/rust_peer.py [--seconds 5] [--rounds 3] [--no-build]
"""

import argparse
import os
import subprocess
import time
from pathlib import Path

from benchlib import EVERYTHING_STDIO, ROOT, TICK_US, Wrk, conftest, http_session, process_cpu, rss_kb, settled_rss_kb, summary, use_release

PEER_VERSION = "0.6.0"
PEER_ROOT = ROOT / "tests" / ".peers" / "mcp-proxy"
PEER = PEER_ROOT / "bin" / "mcp-proxy"
ECHO = {"name": "echo", "arguments": {"message": "hello"}}


def need_peer() -> Path:
    if not PEER.exists():
        print(f"installing mcp-proxy {PEER_VERSION} into {PEER_ROOT} (cargo install --locked; minutes)...", flush=True)
        subprocess.run(["cargo", "install", "mcp-proxy", "--version", PEER_VERSION, "--locked", "--root", str(PEER_ROOT)], check=True)
    return PEER


def peer_config(folder: Path, port: int) -> Path:
    node, script = EVERYTHING_STDIO.split(" ", 1)
    args = ", ".join(f'"{a}"' for a in script.split(" "))
    cfg = folder / "mcp-proxy.toml"
    cfg.write_text(f"""[proxy]
name = "bench"
separator = "__"

[proxy.listen]
host = "127.0.0.1"
port = {port}

[[backends]]
name = "everything"
transport = "stdio"
command = "{node}"
args = [{args}]

[observability]
log_level = "warn"
""")
    return cfg


class Ours:
    name = "mcp-gen-ui"

    def __enter__(self):
        self.ctx = conftest.proxy_http(["--upstream", EVERYTHING_STDIO, "--log-level", "warn"], name="bench-rust-peer-ours")
        base, proc = self.ctx.__enter__()
        self.url, self.pid, self.params = base + "/mcp", proc.p.pid, ECHO
        return self

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)


class Peer:
    name = f"mcp-proxy {PEER_VERSION}"

    def __init__(self, folder: Path):
        self.folder = folder

    def __enter__(self):
        port = conftest.free_port()
        self.proc = conftest.Proc("bench-rust-peer-mcp-proxy", [str(need_peer()), "--config", str(peer_config(self.folder, port))])
        conftest.wait_port(port, 60)
        self.url, self.pid, self.params = f"http://127.0.0.1:{port}/", self.proc.p.pid, {**ECHO, "name": "everything__echo"}
        time.sleep(1.0)  # its backend connects after the port opens
        return self

    def __exit__(self, *exc):
        self.proc.stop()


def measure(w: Wrk, p, a) -> dict:
    sid = http_session(p.url)
    idle = settled_rss_kb(p.pid)
    w.run(p.url, sid, 8, 1, params=p.params)  # warm-up
    before = process_cpu(p.pid)
    c8 = w.run(p.url, sid, 8, a.seconds, params=p.params)
    after = process_cpu(p.pid)
    c1 = w.run(p.url, sid, 1, a.seconds, params=p.params)
    return {"cpu_us": (after - before) * TICK_US / max(c8["requests"], 1), "rps": c8["rps"], "c8_p50": c8["p50_ms"], "c8_p99": c8["p99_ms"],
            "c1_p50": c1["p50_ms"], "c1_p99": c1["p99_ms"], "errors": c8["socket_errors"] + c8["bad"] + c1["socket_errors"] + c1["bad"],
            "rss_idle_kb": idle, "rss_load_kb": rss_kb(p.pid)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true", help="use the dist binary as it is")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    need_peer()
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"rust-peer-{os.getpid()}"
    folder.mkdir(parents=True, exist_ok=True)
    w = Wrk()
    runs: dict[str, list[dict]] = {"ours": [], "peer": []}
    try:
        for r in range(a.rounds):
            order = [("ours", Ours()), ("peer", Peer(folder))] if r % 2 == 0 else [("peer", Peer(folder)), ("ours", Ours())]
            for key, p in order:
                with p:
                    got = measure(w, p, a)
                runs[key].append(got)
                print(f"round {r + 1} {p.name:>16}: {got['cpu_us']:6.1f} us CPU/call  {got['rps']:7.0f} calls/s at c8  "
                      f"p50 c1 {got['c1_p50']:.3f} ms  p99 c8 {got['c8_p99']:.2f} ms  RSS {got['rss_idle_kb'] / 1024:.1f} -> "
                      f"{got['rss_load_kb'] / 1024:.1f} MB  errors {got['errors']}", flush=True)
    finally:
        w.close()

    def med(key, field):
        xs = sorted(x[field] for x in runs[key])
        return xs[len(xs) // 2]

    cpu = med("ours", "cpu_us") / med("peer", "cpu_us")
    rps = med("ours", "rps") / med("peer", "rps")
    p50 = med("ours", "c1_p50") / med("peer", "c1_p50")
    print(f"\n{binary} vs {PEER}, {a.rounds} alternating rounds of {a.seconds:g} s, medians:")
    summary("issue 53: the proxy path against mcp-proxy 0.6.0 (ours vs its, ratio)", [
        ("CPU per proxied call", f"{med('ours', 'cpu_us'):.1f} vs {med('peer', 'cpu_us'):.1f} us ({cpu:.2f}x)", "<= 0.50x", cpu <= 0.5),
        ("calls/s at c8", f"{med('ours', 'rps'):.0f} vs {med('peer', 'rps'):.0f} ({rps:.2f}x)", ">= 1.30x", rps >= 1.3),
        ("p50 at c1", f"{med('ours', 'c1_p50'):.3f} vs {med('peer', 'c1_p50'):.3f} ms ({p50:.2f}x)", "<= 1.00x", p50 <= 1.0),
        ("p99 at c8", f"{med('ours', 'c8_p99'):.2f} vs {med('peer', 'c8_p99'):.2f} ms", "", None),
        ("RSS idle / after load", f"{med('ours', 'rss_idle_kb') / 1024:.1f}/{med('ours', 'rss_load_kb') / 1024:.1f} vs "
         f"{med('peer', 'rss_idle_kb') / 1024:.1f}/{med('peer', 'rss_load_kb') / 1024:.1f} MB", "", None),
    ])

if __name__ == "__main__":
    main()
