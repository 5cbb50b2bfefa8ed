"""Shared helpers for the end-to-end tests: start real upstream servers and the proxy as
processes, and connect real MCP clients (the Python `mcp` SDK) to them."""

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_GEN_UI_BIN", ROOT / "target" / "debug" / "mcp-gen-ui"))
NODE_MODULES = ROOT / "tests" / "node" / "node_modules"
EVERYTHING = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
ARTIFACTS = ROOT / "tests" / "artifacts"
UI_EXT = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}
NODE = os.environ.get("NODE_BIN", "node")
# Every proxy the tests start takes this token on /metrics (server.auth.metricsTokens): with
# several people there, /metrics is for admins and this token only (issue 51 item 12).
METRICS_TOKEN = "scrape-token-of-the-tests-7c1e"


def skipped_by_name(suite: str) -> bool:
    """Whether the person running the tests asked to skip `suite` (MCP_GEN_UI_SKIP=compose,...).
    Tests that need something the machine lacks fail unless skipped this way."""
    return suite in {s.strip() for s in os.environ.get("MCP_GEN_UI_SKIP", "").split(",")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def open_session_stream(host: str, port: int, sid: str, until: bytes = b"\r\n\r\n", timeout: float = 30.0) -> tuple[socket.socket, bytes]:
    """A session's GET /mcp stream on a socket of its own, as a host holds it: the request sent,
    read until `until` has come (the head, by default) or the socket closed; the socket, open,
    and what was read."""
    s = socket.create_connection((host, port), timeout=timeout)
    s.sendall((f"GET /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAccept: text/event-stream\r\n"
               f"Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n").encode())
    got = b""
    while until not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    return s, got


def wait_http(url: str, timeout: float = 30.0, status: int = 200) -> None:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == status:
                    return
        except Exception as e:  # not up yet
            last = e
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout}s: {last}")


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise TimeoutError(f"port {port} not open after {timeout}s")


def wait_for(predicate, timeout: float, what: str, every: float = 0.1):
    """Polls `predicate` until it returns something truthy, and returns that; fails naming
    `what` after `timeout` seconds. Not yet: a falsy value, or an error saying the value cannot
    be had yet (a server not up, a file half written, a key not there yet), shown if the time
    runs out. A failed assertion is an answer, and a wrong one: it fails at once, so that one
    wrong answer is never hidden by a later right one."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            got = predicate()
            if got:
                return got
        except AssertionError:
            raise
        except Exception as e:
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout} s" + (f" (last error: {last!r})" if last else ""))
        time.sleep(every)


class Proc:
    """A child process whose output goes to a log file under tests/artifacts."""

    def __init__(self, name: str, args: list[str], env: dict | None = None):
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.log_path = ARTIFACTS / f"{name}.log"
        self.log = open(self.log_path, "w")
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.log, env=full_env, text=True, start_new_session=True)

    def read_line_matching(self, pattern: str, timeout: float = 30.0) -> re.Match:
        deadline = time.time() + timeout
        seen = []
        while time.time() < deadline:
            line = self.p.stdout.readline()
            if not line:
                if self.p.poll() is not None:
                    break
                continue
            seen.append(line)
            m = re.search(pattern, line)
            if m:
                return m
        raise AssertionError(f"{self.name}: no line matching {pattern!r}; got {seen!r}; log {self.log_path.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.p.pid, 15)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, 9)
                self.p.wait()
        self.log.close()


def everything_cmd(mode: str) -> list[str]:
    return [NODE, str(EVERYTHING), mode]


@contextlib.contextmanager
def everything_http(mode: str):
    """server-everything in sse or streamableHttp mode; yields its URL."""
    port = free_port()
    p = Proc(f"everything-{mode}-{port}", everything_cmd(mode), env={"PORT": str(port)})
    try:
        wait_port(port)
        path = "/sse" if mode == "sse" else "/mcp"
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        p.stop()


def upstream_args(kind: str, url: str | None = None) -> list[str]:
    if kind == "stdio":
        return ["--upstream", " ".join(everything_cmd("stdio"))]
    if kind == "sse":
        return ["--upstream-url", url, "--upstream-transport", "sse"]
    return ["--upstream-url", url]


@contextlib.contextmanager
def proxy_http(args: list[str], name: str = "proxy", env: dict | None = None, ready: bool = True):
    """The proxy on the HTTP transport at a free port; yields (base_url, Proc)."""
    p = Proc(name, [str(BIN), "--listen", "127.0.0.1:0", *args], env={"MCP_GEN_UI_METRICS_TOKEN": METRICS_TOKEN, **(env or {})})
    try:
        m = p.read_line_matching(r"listening on (http://\S+)")
        base = m.group(1)
        if ready:
            wait_http(base + "/readyz", timeout=60)
        yield base, p
    finally:
        p.stop()


@pytest.fixture
def fake():
    """A local server speaking the LLM providers' wire formats (see fake_llm.py)."""
    from fake_llm import FakeLLM

    f = FakeLLM()
    yield f
    f.stop()


def scrape(base: str) -> dict:
    """/metrics parsed as Prometheus text: {(sample name, sorted labels): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(base + "/metrics").read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def metric(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="session", autouse=True)
def _binary_exists():
    if not BIN.exists():
        pytest.exit(f"{BIN} does not exist: build it first (cargo build)", returncode=2)
    if not EVERYTHING.exists():
        pytest.exit(f"{EVERYTHING} is missing: run tests/run.sh, which installs the test peers", returncode=2)


sys.path.insert(0, str(Path(__file__).parent))


def proxy_rss_kb(pid: int) -> int:
    """Resident memory of a process (VmRSS, kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def churn_sessions(base: str, count: int, threads: int = 4) -> int:
    """Opens and closes `count` Streamable HTTP sessions (initialize + DELETE) over keep-alive
    connections, `threads` at a time; returns how many were opened and closed."""
    import http.client
    import json
    from concurrent.futures import ThreadPoolExecutor
    from urllib.parse import urlsplit

    u = urlsplit(base)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "clientInfo": {"name": "churn", "version": "1"}, "capabilities": {"extensions": UI_EXT}}}).encode()

    def worker(n):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        done = 0
        try:
            for _ in range(n):
                c.request("POST", "/mcp", init, headers)
                r = c.getresponse()
                r.read()
                sid = r.headers["mcp-session-id"]
                assert r.status == 200 and sid, r.status
                c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
                d = c.getresponse()
                d.read()
                assert d.status in (200, 204), d.status
                done += 1
        finally:
            c.close()
        return done

    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(worker, [count // threads + (i < count % threads) for i in range(threads)]))
