"""Issue 9 (hardening), the stream items: ordering and routing towards HTTP upstreams (5),
progress never after the answer (8), bounded memory (9), empty env vars in the shipped compose
file (10) and large results as plain JSON (13). Most fail on the code before the fix; the few
that are guards (today's code happens to pass them) say so in their docstring."""

import contextlib
import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import mcp.types as types
import pytest

from conftest import BIN, ROOT, UI_EXT, Proc, churn_sessions, everything_cmd, everything_http, proxy_http, proxy_rss_kb, wait_http
from test_hardening import readyz
from evil_sse_upstream import EvilSseUpstream
from fake_llm import page
from http_upstream import HttpUpstream
from mcpclient import session

BIG = str(Path(__file__).with_name("big_upstream.py"))
EVERYTHING_STDIO = ["--upstream", " ".join(everything_cmd("stdio"))]
LONG_OP = "trigger-long-running-operation"


# --- a raw Streamable HTTP host: sees every event, header and byte the proxy sends ----------


def sse_events(resp):
    """Yields the JSON messages of an SSE response as they arrive (the priming event is skipped)."""
    data = []
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line == "":
            text = "\n".join(data).strip()
            data = []
            if text:
                yield json.loads(text)
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


class RawHost:
    """One Streamable HTTP session against the proxy, spoken with http.client."""

    HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def __init__(self, base: str, capabilities: dict | None = None):
        u = urllib.parse.urlsplit(base)
        self.host, self.port = u.hostname, u.port
        caps = capabilities if capabilities is not None else {}
        status, headers, body = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "raw", "version": "1"}, "capabilities": caps}}, session=False)
        assert status == 200, (status, body)
        self.sid = headers["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def conn(self, timeout=60):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, session=True):
        return {**self.HEADERS, **({"Mcp-Session-Id": self.sid} if session else {})}

    def open(self, msg: dict, timeout=60):
        """Sends one message; returns (connection, response) with the body still unread."""
        c = self.conn(timeout)
        c.request("POST", "/mcp", json.dumps(msg).encode(), self.headers())
        return c, c.getresponse()

    def post(self, msg: dict, session=True, timeout=60):
        """Sends one message; returns (status, headers, [messages]) once the answer is complete."""
        c = self.conn(timeout)
        try:
            c.request("POST", "/mcp", json.dumps(msg).encode(), self.headers(session))
            r = c.getresponse()
            ctype = r.headers.get("content-type", "")
            if ctype.startswith("text/event-stream"):
                return r.status, r.headers, list(sse_events(r))
            body = r.read()
            return r.status, r.headers, [json.loads(body)] if body.strip() else []
        finally:
            c.close()

    def call(self, rid, name, args, token=None) -> dict:
        params = {"name": name, "arguments": args}
        if token is not None:
            params["_meta"] = {"progressToken": token}
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

    def close(self):
        c = self.conn(10)
        with contextlib.suppress(OSError):
            c.request("DELETE", "/mcp", headers={"Mcp-Session-Id": self.sid})
            c.getresponse().read()
        c.close()


class SessionStream:
    """The session's GET stream, read in a thread: every message with the time it arrived."""

    def __init__(self, host: RawHost):
        self.events: list[tuple[float, dict]] = []
        self.c = host.conn(timeout=None)
        self.c.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": host.sid})
        self.r = self.c.getresponse()
        assert self.r.status == 200, self.r.status
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()

    def read(self):
        with contextlib.suppress(Exception):  # the stream ends, or close() cut it
            for m in sse_events(self.r):
                self.events.append((time.monotonic(), m))

    def close(self):
        with contextlib.suppress(OSError):
            self.c.sock.shutdown(socket.SHUT_RDWR)
        self.c.close()
        self.t.join(timeout=5)


def is_progress(m: dict) -> bool:
    return m.get("method") == "notifications/progress"


# --- 5. order is kept towards HTTP upstreams -------------------------------------------------


def test_http_upstream_gets_initialized_before_any_request():
    """Item 5a: messages to a Streamable HTTP upstream leave in the order they were sent. Four
    proxies started together each initialize one upstream session (four samples of the
    handshake): no request (the proxy's own tools/list) reaches the upstream before that
    session's `notifications/initialized`. (Today both are concurrent POSTs; against this
    single-threaded upstream the first one spawned nearly always wins, so this is a guard more
    than a reproducer: the cancellation test below is the one that fails today.)"""
    SAMPLES = 4
    with HttpUpstream() as up, contextlib.ExitStack() as stack:
        # Started together, so that their handshakes overlap and compete for the CPU.
        procs = [Proc(f"proxy-order-{i}", [str(BIN), "--listen", "127.0.0.1:0", "--upstream-url", up.url]) for i in range(SAMPLES)]
        for p in procs:
            stack.callback(p.stop)
        for p in procs:
            wait_http(p.read_line_matching(r"listening on (http://\S+)").group(1) + "/readyz")
        by_session: dict[str, list[dict]] = {}
        for s, m in list(up.arrivals):
            if s is not None:
                by_session.setdefault(s, []).append(m)
        assert len(by_session) == SAMPLES, by_session.keys()
        early = []
        for s, msgs in by_session.items():
            first_init = next((i for i, m in enumerate(msgs) if m.get("method") == "notifications/initialized"), None)
            assert first_init is not None, f"session {s} never got notifications/initialized: {[m.get('method') for m in msgs]}"
            early += [(s[:8], m["method"]) for m in msgs[:first_init] if "method" in m and "id" in m]
        assert not early, f"requests reached the upstream before notifications/initialized (session, method): {early}"


def test_http_upstream_never_gets_a_cancellation_before_its_request():
    """Item 5a: calls cancelled by their host right after sending reach a Streamable HTTP
    upstream in order: every `notifications/cancelled` arrives after the `tools/call` it names
    (and arrives at all). Half the calls have their cancellation in the same batch (the
    tightest "right after": the proxy reads both at once), half as soon as the proxy has answered
    the call's POST headers. Rounds of 60 for 4 s, or until a violation shows. Today both go out
    as concurrent POSTs and about 1 cancellation in 100 arrives first (the upstream then ignores
    it and runs the cancelled call to the end)."""
    with HttpUpstream() as up, proxy_http(["--upstream-url", up.url], name="proxy-cancel-order") as (base, _):
        host = RawHost(base)

        def call_then_cancel(i):
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i, "reason": "test"}}
            if i % 2 == 0:
                c = host.conn()
                c.request("POST", "/mcp", json.dumps([host.call(i, "slow", {"seconds": 3}), cancel]).encode(), host.headers())
                c.getresponse().read()
            else:
                # With a progress token the answer is an SSE stream whose headers come at once.
                c, r = host.open(host.call(i, "slow", {"seconds": 3}, token=f"t{i}"))
                assert r.status == 200
                status, _, _ = host.post(cancel)
                assert status == 202
                r.close()
            c.close()

        def cancels():
            return sum(m.get("method") == "notifications/cancelled" for m in up.messages())

        sent, overtaken, deadline = 0, [], time.time() + 4
        with ThreadPoolExecutor(6) as pool:
            while time.time() < deadline and not overtaken:
                list(pool.map(call_then_cancel, range(sent + 1000, sent + 1060)))
                sent += 60
                wait = time.time() + 3
                while cancels() < sent and time.time() < wait:
                    time.sleep(0.02)
                arrivals = up.messages()
                assert cancels() == sent, f"{cancels()} of {sent} cancellations reached the upstream"
                call_at = {json.dumps(m["id"]): i for i, m in enumerate(arrivals) if m.get("method") == "tools/call"}
                overtaken = [m["params"]["requestId"] for i, m in enumerate(arrivals)
                             if m.get("method") == "notifications/cancelled" and call_at.get(json.dumps(m["params"]["requestId"]), 1 << 30) > i]
        host.close()
        assert not overtaken, f"{len(overtaken)} of {sent} cancellations reached the upstream before the request they cancel (upstream ids {overtaken})"


def test_server_request_on_a_post_stream_goes_to_the_host_that_made_the_request():
    """Item 5b: a sampling request that the upstream sends on the SSE stream of host A's
    tools/call goes to host A, even when host B started a newer call meanwhile. Today it goes
    to the session with the newest tools/call in flight: B."""
    with HttpUpstream() as up, proxy_http(["--upstream-url", up.url], name="proxy-route") as (base, _):
        asked = {"A": 0, "B": 0}

        def sampler(who):
            async def cb(context, params):
                asked[who] += 1
                return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=f"I am host {who}"), model="test")
            return cb

        async def scenario():
            async with session("mcp", base, sampling_callback=sampler("A")) as a, session("mcp", base, sampling_callback=sampler("B")) as b:
                result = {}

                async def host_a():
                    result["a"] = await a.call_tool("ask_host", {"delay": 1})

                async def host_b():
                    await anyio.sleep(0.3)  # B's call is the newer one when the upstream asks
                    await b.call_tool("slow", {"seconds": 1.5})

                async with anyio.create_task_group() as tg:
                    tg.start_soon(host_a)
                    tg.start_soon(host_b)
                return result["a"].content[0].text

        text = anyio.run(scenario)
        assert len(up.server_requests) == 1
        assert asked == {"A": 1, "B": 0} and text == "sampled: I am host A", (
            f"the sampling request sent on host A's call stream reached {asked}; A's call got {text!r}")


@pytest.mark.parametrize("foreign_host", ["127.0.0.2", "127.0.0.1"], ids=["other-host", "other-port"])
def test_legacy_sse_endpoint_on_another_origin_is_refused(foreign_host):
    """Item 5c: a legacy SSE upstream whose `endpoint` event names another origin (another
    host, or only another port) is refused: nothing is POSTed there, the configured header
    never reaches it, and /readyz stays 503 saying why ("another origin"). Today the proxy
    POSTs initialize there, Authorization header included."""
    secret = "Bearer evil-origin-test-secret-42"
    with EvilSseUpstream(foreign_host) as evil:
        args = ["--upstream-url", evil.url, "--upstream-transport", "sse", "--upstream-header", f"Authorization: {secret}"]
        with proxy_http(args, name=f"proxy-evil-sse-{foreign_host}", ready=False) as (base, proc):
            deadline = time.time() + 6
            status, body = readyz(base)
            while time.time() < deadline and not evil.foreign_requests and "origin" not in json.dumps(body):
                time.sleep(0.1)
                status, body = readyz(base)
            time.sleep(1)  # a refused link restarts: give a second attempt the chance to misbehave
            status, body = readyz(base)
            log = proc.log_path.read_text()
        leaked = [r for r in evil.foreign_requests if secret in json.dumps(r["headers"])]
        sent = [(r["method"], r["path"], r["body"][:80]) for r in evil.foreign_requests]
        assert not sent, f"the proxy sent {len(sent)} request(s) to the foreign endpoint {evil.foreign_endpoint}: {sent}"
        assert not leaked, "the configured Authorization header reached another origin"
        assert evil.sse_opens >= 1, "the proxy never opened the /sse stream"
        assert status == 503, (status, body)
        assert "another origin" in json.dumps(body), f"/readyz does not say the endpoint is on another origin: {body}"
        assert secret not in log and secret not in json.dumps(body)


# --- 8. progress never follows the answer ----------------------------------------------------


def late_progress(stream: list[dict], token) -> list[dict]:
    """Progress for `token` written after the answer, in one stream's order."""
    late, answered = [], False
    for m in stream:
        if "id" in m and ("result" in m or "error" in m) and m["id"] == token:
            answered = True
        elif answered and is_progress(m) and m["params"]["progressToken"] == token:
            late.append(m)
    return late


def test_progress_never_follows_the_answer_over_streamable_http():
    """Item 8 over Streamable HTTP: rounds of 20 parallel calls of server-everything's
    long-running operation (20 steps in 20 ms, so its last progress and its answer leave the
    upstream back to back), for 6 s or until a violation shows. On each POST stream no progress
    for the call comes after its answer, and the session's GET stream carries no progress for
    these calls at all: their POST streams were open until the answer, so progress there was
    written after it. Today progress that loses the race with the answer is re-routed to the
    session stream."""
    with proxy_http(EVERYTHING_STDIO, name="proxy-progress-http") as (base, _):
        host = RawHost(base, {"extensions": UI_EXT})
        stream = SessionStream(host)
        bad, calls, n = [], 0, 0

        def one(n):
            token = f"tok-{n}"
            c, r = host.open(host.call(token, LONG_OP, {"duration": 0.02, "steps": 20}, token=token))
            got = list(sse_events(r))
            r.close()
            c.close()
            assert any(m.get("id") == token and "result" in m for m in got), got[-3:]
            return token, got

        def on_session():
            return [(m["params"]["progressToken"], m["params"]["progress"]) for _, m in list(stream.events) if is_progress(m)]

        deadline = time.time() + 6
        with ThreadPoolExecutor(20) as pool:
            while time.time() < deadline and not bad and not on_session():
                for token, got in pool.map(one, range(n, n + 20)):
                    calls += 1
                    bad += [("POST", token, m["params"]["progress"]) for m in late_progress(got, token)]
                n += 20
        time.sleep(0.5)  # anything still on its way to the session stream
        stream.close()
        host.close()
        assert not bad, f"progress after the answer on the call's own stream: {bad}"
        late = on_session()
        assert not late, f"{len(late)} progress notification(s) reached the session stream after their call was answered (in {calls} calls): {late[:8]}"


def test_progress_never_follows_the_answer_over_stdio():
    """Item 8 over stdio (one stream for everything): 120 long-running calls sent at once, with
    progress tokens: every call is answered, and for each no progress line comes after its answer
    line. (A guard: today's stdio edge runs on one thread and keeps this order.)"""
    p = subprocess.Popen([str(BIN), "--transport", "stdio", *EVERYTHING_STDIO], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    lines: list[dict] = []
    reader = threading.Thread(target=lambda: lines.extend(json.loads(x) for x in p.stdout if x.strip()), daemon=True)
    reader.start()
    try:
        def send(m):
            p.stdin.write(json.dumps(m) + "\n")
            p.stdin.flush()

        def answered(rid) -> bool:
            return any(m.get("id") == rid and ("result" in m or "error" in m) for m in list(lines))

        def wait_for(cond, what, timeout=15):
            deadline = time.time() + timeout
            while not cond():
                assert time.time() < deadline and p.poll() is None, (
                    f"{what}: {sum(answered(t) for t in tokens)} of {len(tokens)} answered, {len(lines)} lines read; the last: {list(lines)[-2:]}")
                time.sleep(0.05)

        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "raw", "version": "1"},
                                                                           "capabilities": {"extensions": UI_EXT}}})
        tokens = [f"tok-{n}" for n in range(120)]
        wait_for(lambda: answered(0), "no answer to initialize")
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for t in tokens:
            send({"jsonrpc": "2.0", "id": t, "method": "tools/call", "params": {"name": LONG_OP, "arguments": {"duration": 0.02, "steps": 20}, "_meta": {"progressToken": t}}})
        wait_for(lambda: all(answered(t) for t in tokens),
                 "not every call was answered (a host reading as fast as it can must not lose its stream)")
        time.sleep(0.5)  # anything written late has arrived
        late = [(t, m["params"]["progress"]) for t in tokens for m in late_progress(list(lines), t)]
        assert not late, f"{len(late)} progress notification(s) written after their call's answer (token, progress): {late[:10]}"
    finally:
        p.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=10)
        if p.poll() is None:
            os.killpg(p.pid, 9)
            p.wait()
        reader.join(timeout=5)
        p.stdout.close()


def test_refine_progress_never_follows_the_answer(fake):
    """Item 8 for the proxy's own long call: `_ui_refine` while the LLM takes 2.5 s ticks
    progress each second. Two refines at once, each twice in a row: every progress comes before
    the answer on the call's stream, and none reaches the session stream. (A guard: today the
    race needs a tick and the answer within microseconds, which this does not provoke.)"""
    fake.default = {"html": page("REFINED"), "delay": 2.5}
    args = ["--demo", "--provider", "anthropic", "--llm-base-url", fake.base("anthropic")]
    with proxy_http(args, name="proxy-progress-refine", env={"ANTHROPIC_API_KEY": "sk-test"}) as (base, _):
        host = RawHost(base, {"extensions": UI_EXT})
        stream = SessionStream(host)

        def refine(tool, n):
            token = f"refine-{tool}-{n}"
            _, _, got = host.post(host.call(token, "_ui_refine", {"toolName": tool, "feedback": f"make it blue {n}"}, token=token))
            return token, got

        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda a: refine(*a), [(t, n) for n in range(2) for t in ("get_current_weather", "get_forecast")]))
        time.sleep(0.5)
        stream.close()
        host.close()
        for token, got in results:
            answer = [m for m in got if m.get("id") == token]
            assert answer and "result" in answer[0] and not answer[0]["result"].get("isError"), got
            ticks = [m["params"]["progress"] for m in got if is_progress(m)]
            assert ticks and max(ticks) >= 1, f"{token}: no progress ticks while the LLM worked: {got}"
            assert not late_progress(got, token), f"{token}: progress after the answer: {got}"
        late = [(m["params"]["progressToken"], m["params"]["progress"]) for _, m in stream.events if is_progress(m)]
        assert not late, f"refine progress reached the session stream after the answer: {late}"


# --- 13. large results reach every client ------------------------------------------------------

BIG_ARGS = ["--upstream", f"{sys.executable} {BIG}"]
FIVE_MB = 5 * 1024 * 1024


def test_five_megabyte_result_reaches_the_python_sdk_over_streamable_http():
    """Item 13: a host that declared no sampling, elicitation or roots and sends no progress
    token gets its POST answered as plain JSON, so a 5 MB tool result reaches the Python `mcp`
    SDK client whole. Today the answer is an SSE event, which the SDK refuses over 1 MB
    ("Server-sent event exceeded the 1048576 byte limit")."""
    with proxy_http(BIG_ARGS, name="proxy-big") as (base, _):
        async def scenario():
            async with session("mcp", base) as s:
                with anyio.fail_after(30):
                    return await s.call_tool("big", {"bytes": FIVE_MB})

        try:
            res = anyio.run(scenario)
        except BaseException as e:  # the SDK's error arrives wrapped in exception groups
            raise AssertionError(f"the 5 MB result did not reach the SDK client: {e!r}") from e
        assert not res.is_error, res.content[0].text[:300]
        assert res.content[0].text == "B" * FIVE_MB


def test_json_answer_without_progress_token_sse_with_one():
    """Item 13 on the wire: the same host (no sampling, elicitation, roots) gets
    `Content-Type: application/json` for a call without a progress token, and still an SSE
    stream for a call with one (progress must be able to travel before the answer)."""
    with proxy_http(BIG_ARGS, name="proxy-big-wire") as (base, _):
        host = RawHost(base, {"extensions": UI_EXT})
        status, headers, msgs = host.post(host.call(1, "big", {"bytes": 1000}))
        assert status == 200 and headers["content-type"].startswith("application/json"), (
            f"a call with nothing to stream before its answer got {headers['content-type']}")
        assert msgs[0]["result"]["content"][0]["text"] == "B" * 1000
        status, headers, msgs = host.post(host.call(2, "big", {"bytes": 1000}, token="t2"))
        assert status == 200 and headers["content-type"].startswith("text/event-stream"), headers["content-type"]
        assert msgs[-1]["id"] == 2 and msgs[-1]["result"]["content"][0]["text"] == "B" * 1000
        # A host that can be asked things (sampling) keeps SSE answers.
        asker = RawHost(base, {"sampling": {}})
        status, headers, _ = asker.post(asker.call(3, "big", {"bytes": 10}))
        assert headers["content-type"].startswith("text/event-stream"), headers["content-type"]
        host.close()
        asker.close()


# --- 9. bounded memory -------------------------------------------------------------------------


def test_ten_thousand_sessions_leave_rss_flat():
    """Item 9: opening and closing 10,000 Streamable HTTP sessions leaves the proxy's resident
    memory within 10 MB of where it was after a warm-up of 500 (allocator and caches settled).
    (A guard: today's code already frees closed sessions; the unread-stream test below is the
    part of item 9 that fails today.)"""
    with proxy_http(["--demo", "--log-level", "warn"], name="proxy-rss") as (base, proc):
        pid = proc.p.pid
        churn_sessions(base, 500)
        time.sleep(1)
        before = proxy_rss_kb(pid)
        started = time.time()
        assert churn_sessions(base, 10_000) == 10_000
        took = time.time() - started
        time.sleep(2)  # closed sessions finish stopping
        after = proxy_rss_kb(pid)
        growth_mb = (after - before) / 1024
        print(f"RSS {before / 1024:.1f} MB -> {after / 1024:.1f} MB after 10,000 sessions in {took:.1f} s")
        assert growth_mb < 10, f"RSS grew by {growth_mb:.1f} MB ({before} kB -> {after} kB) over 10,000 opened and closed sessions"


def test_a_host_that_never_reads_its_stream_does_not_grow_the_proxy():
    """Item 9: a host opens its GET stream and never reads it while the upstream pushes 40,000
    log notifications (about 33 MB). The stream's buffer is bounded (1024 messages), so the
    proxy's RSS grows by far less than that, and the unread stream is closed. Today the buffer
    is unbounded: every notification waits in memory for a reader that never comes."""
    with proxy_http([*BIG_ARGS, "--log-level", "warn"], name="proxy-unread") as (base, proc):
        pid = proc.p.pid
        host = RawHost(base, {"extensions": UI_EXT})
        # The GET stream, on a raw socket: read its headers, then never read again.
        u = urllib.parse.urlsplit(base)
        sock = socket.create_connection((u.hostname, u.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: {u.netloc}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {host.sid}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        assert head.startswith(b"HTTP/1.1 200"), head
        time.sleep(0.5)
        before = proxy_rss_kb(pid)
        peak = before
        status, _, msgs = host.post(host.call(1, "flood", {"count": 40_000, "size": 800, "batch": 500, "pause": 0.01}), timeout=120)
        assert msgs and msgs[-1].get("result", {}).get("content", [{}])[0].get("text") == "flooded 40000", msgs[-1:]
        for _ in range(10):  # the last notifications settle
            time.sleep(0.2)
            peak = max(peak, proxy_rss_kb(pid))
        growth_mb = (peak - before) / 1024
        assert growth_mb < 25, f"RSS grew by {growth_mb:.0f} MB ({before} kB -> {peak} kB) while a host did not read its stream"
        # The unread stream was closed: reading it now reaches its end.
        sock.settimeout(10)
        tail, ended = b"", False
        with contextlib.suppress(socket.timeout):
            while True:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    ended = True
                    break
                tail = (tail + chunk)[-16:]
                if tail.endswith(b"0\r\n\r\n"):
                    ended = True
                    break
        sock.close()
        host.close()
        assert ended, "the stream of a host that did not read it is still open"


# --- 10. empty means unset: the shipped compose stack starts ----------------------------------


def compose_config(compose_file: Path, env_file: Path) -> dict:
    """`docker-compose config`, resolved with only `env_file` (and no variables from our own
    environment), as a dict. Compose v2 prints JSON itself; v1 prints YAML only, which the
    Python that runs docker-compose v1 can read (PyYAML is one of its dependencies)."""
    exe = next((c for c in (["docker-compose"], ["docker", "compose"]) if shutil_which(c[0])), None)
    if exe is None:
        from conftest import skipped_by_name

        if skipped_by_name("compose"):
            pytest.skip("docker-compose is not installed; skipped as MCP_GEN_UI_SKIP=compose asks")
        pytest.fail("docker-compose is not installed (tests/run.sh installs Debian's docker-compose); to skip on purpose, set MCP_GEN_UI_SKIP=compose")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    base = [*exe, "-f", str(compose_file), "--env-file", str(env_file), "config"]
    out = subprocess.run([*base, "--format", "json"], capture_output=True, text=True, env=env, timeout=60)
    if out.returncode == 0 and out.stdout.lstrip().startswith("{"):
        return json.loads(out.stdout)
    # v1 does not know --format (it prints its usage, sometimes with status 0).
    out = subprocess.run(base, capture_output=True, text=True, env=env, timeout=60, check=True)
    interpreter = Path(shutil_which(exe[0])).read_text(errors="replace").splitlines()[0].removeprefix("#!").split()
    conv = subprocess.run([*interpreter, "-c", "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"],
                          input=out.stdout, capture_output=True, text=True, check=True, timeout=30)
    return json.loads(conv.stdout)


def shutil_which(name):
    import shutil

    return shutil.which(name)


def test_the_compose_service_starts_with_an_empty_env_file(tmp_path):
    """Item 10: `deploy/docker-compose.yml` resolved with an empty `.env` sets every
    MCP_GEN_UI_* variable it names to "" (and the API keys). The binary, run with exactly that
    service's command and environment (its volume and home mapped to a temporary folder, the
    `everything` service replaced by a local server-everything, the listen addresses by free
    loopback ports), becomes ready. Today it exits 2: "a value is required for '--provider'"."""
    empty = tmp_path / "empty.env"
    empty.write_text("")
    cfg = compose_config(ROOT / "deploy" / "docker-compose.yml", empty)
    svc = cfg["services"]["mcp-gen-ui"]
    command = svc["command"] if isinstance(svc["command"], list) else shlex.split(svc["command"])
    environment = {k: "" if v is None else str(v) for k, v in (svc.get("environment") or {}).items()}
    assert environment.get("MCP_GEN_UI_PROVIDER") == "", f"the compose file no longer sets MCP_GEN_UI_PROVIDER to '' with an empty .env: {environment}"
    targets = [v["target"] if isinstance(v, dict) else v.split(":")[1] for v in svc.get("volumes") or []]
    home = tmp_path / "home"
    home.mkdir()

    def local(arg: str, everything: str) -> str:
        for i, t in enumerate(targets):
            if arg == t or arg.startswith(t + "/"):
                return str(tmp_path / f"volume-{i}") + arg[len(t):]
        return re.sub(r"^http://everything:\d+", everything, arg)

    with everything_http("streamableHttp") as up_url:
        everything = up_url.removesuffix("/mcp")
        args = [local(a, everything) for a in command]
        # Every listen address (--listen, --metrics-listen, ...) becomes a free loopback port.
        args = ["127.0.0.1:0" if (prev or "").endswith("listen") else a for prev, a in zip([None, *args], args)]
        assert f"{everything}/mcp" in args, args
        # The container's own environment is the image's PATH and HOME plus the service's.
        env = {"PATH": os.environ["PATH"], "HOME": str(home), **environment}
        log = open(tmp_path / "proxy.log", "w")
        p = subprocess.Popen([str(BIN), *args], stdout=subprocess.PIPE, stderr=log, env=env, cwd=home, text=True)
        try:
            line = p.stdout.readline()
            while line and "listening on" not in line:
                line = p.stdout.readline()
            if not line:
                p.wait(timeout=5)
                log.flush()
                raise AssertionError(f"the compose service's command exited {p.returncode}: {(tmp_path / 'proxy.log').read_text()[-600:]}")
            url = re.search(r"listening on (http://\S+)", line).group(1)
            wait_http(url + "/readyz", timeout=30)
        finally:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=15)
            p.stdout.close()
            log.close()
