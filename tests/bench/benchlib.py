"""Shared pieces of the issue-11 benchmarks (they print figures and assert nothing): the release
binary, minimal raw MCP clients (Streamable HTTP and stdio, so that the client costs the same on
every side it is compared on), wrk with a Lua script that speaks MCP, per-thread CPU from
/proc, and the summary table.

Everything runs on loopback. wrk comes from Debian (`apt-get install -y wrk`); `need_wrk`
installs it when missing and apt-get is there, else says how.
"""

import contextlib
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
import conftest  # noqa: E402

# What is deployed (the image's build): the dist profile, one codegen unit and thin LTO.
RELEASE = ROOT / "target" / "dist" / "mcp-gen-ui"
NODE_BIN = ROOT / "tests" / "node" / "node_modules" / ".bin"
EVERYTHING_STDIO = " ".join(conftest.everything_cmd("stdio"))
UI_CAPS = {"extensions": conftest.UI_EXT}
ECHO = {"name": "echo", "arguments": {"message": "hello"}}


def use_release(build: bool) -> Path:
    """Benchmarks measure the binary that is deployed (the dist profile; MCP_GEN_UI_BIN
    overrides); built here unless --no-build (a no-op when it is fresh, several minutes on a
    2-core machine when not)."""
    if "MCP_GEN_UI_BIN" in os.environ:
        conftest.BIN = Path(os.environ["MCP_GEN_UI_BIN"])
    else:
        if build:
            subprocess.run(["cargo", "build", "--profile", "dist", "-q", "--bin", "mcp-gen-ui"], cwd=ROOT, check=True)
        conftest.BIN = RELEASE
    if not conftest.BIN.exists():
        sys.exit(f"{conftest.BIN} does not exist: cargo build --profile dist --bin mcp-gen-ui")
    if not conftest.EVERYTHING.exists():
        sys.exit(f"{conftest.EVERYTHING} is missing: run tests/run.sh (or npm ci in tests/node)")
    return conftest.BIN


def has_flag(flag: str) -> bool:
    return flag in subprocess.run([str(conftest.BIN), "--help"], capture_output=True, text=True).stdout


def need_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk is None and shutil.which("apt-get") and os.geteuid() == 0:
        print("wrk is missing: apt-get install -y wrk", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], env=env, capture_output=True).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, check=True)
            subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], env=env, check=True, capture_output=True)
        wrk = shutil.which("wrk")
    if wrk is None:
        sys.exit("these benchmarks need wrk: apt-get install -y wrk (Debian/Ubuntu) or build https://github.com/wg/wrk")
    return wrk


# ---------------------------------------------------------------- raw MCP clients


def answer_of(body: bytes) -> dict | None:
    """The JSON-RPC answer in a body: plain JSON, or the last data event of an SSE stream."""
    text = body.decode()
    with contextlib.suppress(ValueError):
        return json.loads(text)
    found = None
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            with contextlib.suppress(ValueError):
                m = json.loads(line[5:])
                if "id" in m and ("result" in m or "error" in m):
                    found = m
    return found


class HttpMcp:
    """One Streamable HTTP session on one kept-alive connection, requests one at a time; with a
    token, every request carries `Authorization: Bearer <token>` (the session is that person's)."""

    def __init__(self, url: str, caps: dict | None = None, name: str = "bench", token: str | None = None):
        u = urlsplit(url)
        self.path = u.path
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
        self.token = token
        self.sid = None
        self.next_id = 0
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": caps or {}, "clientInfo": {"name": name, "version": "1"}})
        assert "result" in init, init
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg: dict) -> tuple[int, bytes]:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.sid:
            headers["mcp-session-id"] = self.sid
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        self.conn.request("POST", self.path, json.dumps(msg), headers)
        r = self.conn.getresponse()
        body = r.read()
        self.sid = r.getheader("mcp-session-id") or self.sid
        return r.status, body

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        status, body = self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        a = answer_of(body)
        if a is None:
            raise RuntimeError(f"{method}: HTTP {status}, no JSON-RPC answer in {body[:300]!r}")
        return a

    def close(self) -> None:
        self.conn.close()


class StdioMcp:
    """An MCP session over a child's stdin/stdout (newline-delimited JSON-RPC)."""

    def __init__(self, argv: list[str], log: Path, caps: dict | None = None, env: dict | None = None):
        self.log = open(log, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env, start_new_session=True)
        self.next_id = 0
        init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": caps or {}, "clientInfo": {"name": "bench", "version": "1"}})
        assert "result" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: dict) -> None:
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def request(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the server closed its output (see {self.log.name})")
            m = json.loads(line)
            if m.get("id") == self.next_id and ("result" in m or "error" in m):
                return m

    def timed_calls(self, n: int, params: dict) -> list[float]:
        """n sequential tools/call, each timed from write to answer, in ms."""
        out = []
        for _ in range(n):
            t = time.perf_counter()
            a = self.request("tools/call", params)
            out.append((time.perf_counter() - t) * 1000)
            assert "result" in a, a
        return out

    def close(self) -> None:
        self.p.stdin.close()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.p.pid, 9)
            self.p.wait()
        self.log.close()


# ---------------------------------------------------------------- wrk

LUA = r"""
-- POSTs one JSON-RPC request per call into an existing MCP session (MCP_SESSION_ID), with ids
-- unique across threads, as the person of MCP_TOKEN when it is set (Authorization: Bearer);
-- counts answers that are not a JSON-RPC result.
local sid = os.getenv("MCP_SESSION_ID")
local token = os.getenv("MCP_TOKEN")
local method = os.getenv("MCP_METHOD")
local params = os.getenv("MCP_PARAMS")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
if sid and sid ~= "" then wrk.headers["Mcp-Session-Id"] = sid end
if token and token ~= "" then wrk.headers["Authorization"] = "Bearer " .. token end
local threads = {}
local count = 0
function setup(thread)
  count = count + 1
  thread:set("tid", count)
  table.insert(threads, thread)
end
function init(args)
  n = 0
  bad = 0
  first_bad = ""
end
function request()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"jsonrpc":"2.0","id":"w' .. tid .. '-' .. n .. '","method":"' .. method .. '","params":' .. params .. '}')
end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result"', 1, true) then
    bad = bad + 1
    if first_bad == "" then first_bad = status .. " " .. string.sub(body, 1, 200) end
  end
end
function done(summary, latency, requests)
  local b, fb = 0, ""
  for _, t in ipairs(threads) do
    b = b + t:get("bad")
    if fb == "" then fb = t:get("first_bad") end
  end
  local e = summary.errors
  io.write(string.format('RESULT {"requests": %d, "duration_us": %d, "socket_errors": %d, "bad": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, b + e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
  if fb ~= "" then io.write("FIRST_BAD " .. fb:gsub("\n", " ") .. "\n") end
end
"""


class Wrk:
    """wrk driving tools/call (or any request) into one MCP session: `run` waits for it; `start`
    and `finish` let several wrk processes load the service at the same time."""

    def __init__(self):
        self.bin = need_wrk()
        self.dir = tempfile.TemporaryDirectory(prefix="mcp-bench-")
        self.script = Path(self.dir.name) / "mcp.lua"
        self.script.write_text(LUA)

    def run(self, url: str, sid: str | None, connections: int, seconds: float, method: str = "tools/call", params: dict = ECHO,
            token: str | None = None) -> dict:
        return self.finish(self.start(url, sid, connections, seconds, method, params, token))

    def start(self, url: str, sid: str | None, connections: int, seconds: float, method: str = "tools/call", params: dict = ECHO,
              token: str | None = None) -> subprocess.Popen:
        """wrk started, not waited for: hand the Popen to `finish`."""
        threads = max(1, min(connections, os.cpu_count() or 1))
        env = dict(os.environ, MCP_SESSION_ID=sid or "", MCP_METHOD=method, MCP_PARAMS=json.dumps(params), MCP_TOKEN=token or "")
        argv = [self.bin, "-t", str(threads), "-c", str(connections), "-d", f"{seconds:g}s", "--timeout", "10s", "-s", str(self.script), url]
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def finish(self, p: subprocess.Popen) -> dict:
        """Waits for a wrk from `start` and parses its RESULT line (as `run` returns it)."""
        out, err = p.communicate()
        if p.returncode != 0:
            raise subprocess.CalledProcessError(p.returncode, p.args, out, err)
        res = None
        for line in out.splitlines():
            if line.startswith("RESULT "):
                res = json.loads(line[7:])
            elif line.startswith("FIRST_BAD "):
                print(f"  (wrk: {line[10:]})", flush=True)
        if res is None:
            raise RuntimeError(f"wrk printed no RESULT line:\n{out}")
        res["rps"] = res["requests"] / (res["duration_us"] / 1e6)
        for k in ("p50", "p90", "p99", "max"):
            res[k + "_ms"] = res[k + "_us"] / 1000
        return res

    def close(self) -> None:
        self.dir.cleanup()


def http_session(url: str, caps: dict | None = None, token: str | None = None) -> str:
    """Opens a session (initialize + initialized), as the person of `token` when given, and
    returns its id; the connection closes, the session stays."""
    c = HttpMcp(url, caps, token=token)
    c.close()
    return c.sid


# ---------------------------------------------------------------- /proc


def threads_cpu(pid: int) -> dict[int, tuple[str, int]]:
    """{tid: (comm, utime+stime in clock ticks)} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            f = stat[stat.rindex(")") + 2:].split()
            out[int(tid)] = (comm, int(f[11]) + int(f[12]))  # fields 14 and 15: utime, stime
    return out


def process_cpu(pid: int) -> int:
    """utime+stime of the whole process (threads that exited included), clock ticks."""
    f = Path(f"/proc/{pid}/stat").read_text()
    f = f[f.rindex(")") + 2:].split()
    return int(f[11]) + int(f[12])


def children_cpu(pid: int) -> int:
    """utime+stime of pid's live child processes (the stdio upstream), clock ticks."""
    total = 0
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, ValueError):
                f = Path(f"/proc/{d}/stat").read_text()
                f = f[f.rindex(")") + 2:].split()
                if int(f[1]) == pid:
                    total += int(f[11]) + int(f[12])
    return total


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def settled_rss_kb(pid: int, least: float = 1.0, most: float = 15.0, window: float = 1.0, slack_kb: int = 256) -> int:
    """RSS once it has settled: sampled every 0.1 s for at least `least` seconds, until the
    samples of the last `window` seconds are within `slack_kb` of each other (or `most` seconds
    have passed); the last sample. What a service holds, not what a moment of work was using
    (it trims a burst of large answers 250 ms after the last)."""
    start = time.monotonic()
    samples: list[tuple[float, int]] = []
    while True:
        now = time.monotonic()
        samples.append((now, rss_kb(pid)))
        recent = [kb for t, kb in samples if t >= now - window]
        if now - start >= max(least, window) and max(recent) - min(recent) <= slack_kb:
            return samples[-1][1]
        if now - start >= most:
            print(f"  (RSS of {pid} still moving after {most:.0f} s: {min(recent)}..{max(recent)} kB in the last {window:g} s)", flush=True)
            return samples[-1][1]
        time.sleep(0.1)


TICK_US = 1e6 / os.sysconf("SC_CLK_TCK")


def thread_kinds(pid: int, threads: dict[int, tuple[str, int]], workers: int) -> dict[int, str]:
    """What each thread is for, from its name (15 characters of it) and creation order: actix
    names every arbiter `actix-rt|system:0|arbiter:K`, HTTP workers included, so when there are
    workers + 1 of them the first one created (lowest tid) is the upstream link's arbiter, which
    main starts before the HTTP server."""
    kinds = {}
    arbiters = sorted(t for t, (comm, _) in threads.items() if comm.startswith("actix-rt|system") and t != pid)
    for tid, (comm, _) in threads.items():
        if tid == pid:
            kinds[tid] = "main thread (System arbiter)"
        elif comm.startswith("actix-server wo"):
            kinds[tid] = WORKER
        elif comm.startswith("actix-server ac"):
            kinds[tid] = "HTTP accept loop"
        elif tid in arbiters:
            if len(arbiters) == workers + 1:
                kinds[tid] = "upstream arbiter (first created)" if tid == arbiters[0] else WORKER
            else:
                kinds[tid] = "arbiter (upstream link or HTTP worker)"
        elif comm.startswith(("tokio-runtime", "tokio-rt-worker")):
            kinds[tid] = POOL
        else:
            kinds[tid] = comm
    return kinds


WORKER = "HTTP worker (arbiter)"
POOL = "blocking pool (spawn_blocking)"
GONE = "threads that ended in the window"


def cpu_table(pid: int, before: dict, after: dict, proc_before: int, proc_after: int, calls: int, workers: int) -> list[tuple]:
    """Per-thread CPU over a window: rows (tid, comm, kind, CPU us, CPU us per call)."""
    kinds = thread_kinds(pid, after, workers)
    rows = []
    for tid, (comm, ticks) in sorted(after.items()):
        d = (ticks - before.get(tid, (comm, 0))[1]) * TICK_US
        rows.append((tid, comm, kinds[tid], d, d / max(calls, 1)))
    gone = (proc_after - proc_before) * TICK_US - sum(r[3] for r in rows)
    if gone > 0:
        rows.append((0, "(exited)", GONE, gone, gone / max(calls, 1)))
    return rows


def busiest_single(rows: list[tuple]) -> tuple:
    """The row of the busiest thread that is not one of a pool (workers, blocking pool): the
    threads a call may have to pass through whichever worker takes it."""
    return max((r for r in rows if r[2] not in (WORKER, POOL, GONE)), key=lambda r: r[4])


def print_cpu_table(rows: list[tuple], calls: int, seconds: float, workers: int) -> None:
    print(f"CPU per thread over {seconds:.1f} s, {calls} calls ({calls / seconds:.0f} calls/s)")
    print(f"{'tid':>8} {'thread (15-char comm)':22} {'kind':40} {'CPU ms':>8} {'us/call':>8}")
    for tid, comm, kind, us, per in rows:
        print(f"{tid:8} {comm:22} {kind:40} {us / 1000:8.1f} {per:8.2f}")
    w = [r for r in rows if r[2] == WORKER]
    if w and workers:
        total = sum(r[3] for r in w)
        print(f"HTTP workers together: {total / max(calls, 1):.2f} us/call (each call runs on one of {workers}; they scale with cores)")


# ---------------------------------------------------------------- reporting


def summary(title: str, rows: list[tuple[str, str, str, bool | None]]) -> None:
    """rows: (figure, value, target, met) with met None for figures without a target."""
    print()
    print(f"SUMMARY {title}")
    w = max(len(r[0]) for r in rows)
    wv = max(len(r[1]) for r in rows)
    wt = max(len(r[2]) for r in rows)
    print(f"| {'figure':{w}} | {'value':{wv}} | {'target':{wt}} | met     |")
    print(f"|{'-' * (w + 2)}|{'-' * (wv + 2)}|{'-' * (wt + 2)}|---------|")
    for fig, val, target, met in rows:
        m = "-" if met is None else ("met" if met else "NOT met")
        print(f"| {fig:{w}} | {val:{wv}} | {target:{wt}} | {m:7} |")


def pct(values: list[float], p: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round((len(v) - 1) * p / 100)))]
