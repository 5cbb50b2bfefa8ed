"""Peers for the replica tests and bench: a real redis-server (Debian) that can be stopped and
started again on the same port, a tiny RESP client to look inside it, several mcp-gen-ui
replicas sharing it, and the real haproxy binary running the shipped deploy/haproxy.cfg with
its addresses mapped to local ports."""

import contextlib
import json
import os
import signal
import socket
import time
import urllib.request
from pathlib import Path

from conftest import Proc, free_port, wait_port

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


class Redis:
    """redis-server on a fixed local port, without persistence."""

    def __init__(self, name: str = "redis"):
        self.port = free_port()
        self.name = name
        self.proc = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def start(self):
        self.proc = Proc(f"{self.name}-{self.port}", ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                                       "--save", "", "--appendonly", "no", "--protected-mode", "no"])
        wait_port(self.port)

    def kill(self):
        """Gone at once, as a crashed or unplugged Redis is (connections reset)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.p.pid, signal.SIGKILL)
        self.proc.p.wait()
        self.proc.log.close()

    def stop(self):
        if self.proc and self.proc.p.poll() is None:
            self.proc.stop()

    def cmd(self, *args):
        return resp(self.port, *args)


def resp(port: int, *args):
    """One Redis command over RESP2; returns the decoded reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        out = f"*{len(args)}\r\n".encode()
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            out += f"${len(b)}\r\n".encode() + b + b"\r\n"
        s.sendall(out)
        f = s.makefile("rb")
        return _read(f)


def _read(f):
    line = f.readline().rstrip(b"\r\n")
    t, rest = line[:1], line[1:]
    if t == b"+":
        return rest.decode()
    if t == b"-":
        raise RuntimeError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode(errors="replace")
    if t == b"*":
        n = int(rest)
        return None if n < 0 else [_read(f) for _ in range(n)]
    raise RuntimeError(f"unexpected reply {line!r}")


def readyz(base: str) -> dict:
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())


def wait_redis_status(base: str, status: str, timeout: float = 15.0) -> dict:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = readyz(base).get("redis", {})
        if last.get("status") == status:
            return last
        time.sleep(0.1)
    raise AssertionError(f"{base}: redis status is not {status!r} after {timeout}s: {last}")


@contextlib.contextmanager
def replicas(fake, redis: Redis, n: int, tmp_path, name: str = "replica", config=None, args=None, provider: str = "openai"):
    """`n` mcp-gen-ui processes on the demo upstream, one fake LLM, one Redis; yields
    [(base_url, Proc)]."""
    from test_generation import gen_proxy

    with contextlib.ExitStack() as stack:
        out = []
        for i in range(n):
            out.append(stack.enter_context(gen_proxy(fake, provider, config=config, args=["--redis-url", redis.url, *(args or [])],
                                                     name=f"{name}-{i + 1}", tmp_path=tmp_path)))
        for base, _ in out:
            wait_redis_status(base, "ok")
        yield out


@contextlib.contextmanager
def haproxy(backends: list[str], name: str = "haproxy"):
    """The real haproxy running deploy/haproxy.cfg, its listener and its two servers mapped to
    local ports; yields its base URL."""
    cfg = (DEPLOY / "haproxy.cfg").read_text()
    port = free_port()
    assert "bind :8080" in cfg and "mcp-gen-ui-1:8080" in cfg and "mcp-gen-ui-2:8080" in cfg
    cfg = cfg.replace("bind :8080", f"bind 127.0.0.1:{port}")
    for i, base in enumerate(backends, start=1):
        cfg = cfg.replace(f"mcp-gen-ui-{i}:8080", base.removeprefix("http://"))
    path = Path(f"/tmp/{name}-{port}.cfg")
    path.write_text(cfg)
    p = Proc(f"{name}-{port}", ["haproxy", "-db", "-f", str(path)])
    try:
        wait_port(port)
        base = f"http://127.0.0.1:{port}"
        # Both servers pass their health check before the test relies on them.
        deadline = time.time() + 15
        while time.time() < deadline:
            seen = set()
            for _ in range(8):
                with contextlib.suppress(Exception):
                    seen.add(readyz(base).get("redis", {}).get("replica"))
            if len(seen - {None}) == len(backends):
                break
            time.sleep(0.3)
        yield base
    finally:
        p.stop()
        path.unlink(missing_ok=True)
