"""Issue 24, hardening round two: what a hostile peer found, each reproduced with the kind of
input the review used. A hostile upstream (`hostile_upstream.py`: thousands of tools, huge
ones, paged forever, names with newlines or named like our `_ui_*` tools), raw sockets that
send a body a byte a second, forged Host / Forwarded / X-Forwarded-* headers, a symlink in the
debug folder, and configuration values that used to pass. Items 7 and 12 (a hostile View, a
framing site) are in tests/node/browser/preview_hostile.test.mjs, item 10 (JWT `crit`) and the
OAuth half of item 5 in test_auth.py."""

import contextlib
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
import urllib.request
from pathlib import Path

import anyio
import pytest
from mcp.types import PaginatedRequestParams

from conftest import BIN, Proc, free_port, metric, proxy_http, scrape, wait_http
from mcpclient import session
from replica_peers import readyz
from test_generation import gen_proxy
from test_hardening import write_config

HOSTILE = str(Path(__file__).with_name("hostile_upstream.py"))
EVIL = "evil\nINFO mcp_gen_ui: forged line admin=true\n"


def hostile(*extra: str) -> list[str]:
    return ["--upstream", shlex.join([sys.executable, HOSTILE, *extra])]


def get(url: str, headers: dict | None = None, timeout: float = 10):
    """(status, headers, body) without raising on 4xx/5xx."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def wait_for(pred, timeout: float = 20.0, what: str = "condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


# --- 1. an upstream's tool list is bounded; a host's long list comes in pages -----------------


@pytest.mark.parametrize(
    "extra,config,field,most_pages",
    [
        # 300 tools of 100 kB, one a page: 30 MB where 4 MB are allowed. The service must stop
        # asking once past 4 MB: at most 42 pages of 100 kB (4,194,304 bytes), never all 300.
        (["--tools", "300", "--page", "1", "--pad", "100000"], {"upstream": {"maxToolListBytes": 4 << 20}}, "upstream.maxToolListBytes", 42),
        # 600 tools, 50 a page, where 500 are allowed: it stops in the 11th page.
        (["--tools", "600", "--page", "50"], {"upstream": {"maxTools": 500}}, "upstream.maxTools", 11),
    ],
    ids=["bytes", "count"],
)
def test_an_upstream_tool_list_beyond_the_bounds_is_refused_with_the_setting_named(extra, config, field, most_pages, tmp_path):
    served = tmp_path / "served.txt"
    args = [*hostile(*extra, "--served", str(served)), "--config", write_config(tmp_path, config)]
    with proxy_http(args, name=f"proxy-bound-{field}", ready=False) as (base, proc):
        body = wait_for(lambda: (lambda r: r if field in json.dumps(r) else None)(readyz(base)), what=f"/readyz naming {field}")
        assert body["status"] == "not ready", body
        assert get(base + "/readyz")[0] == 503
        # It stopped reading at the bound: the pages it asked for, counted by the upstream (a
        # restart asks again from the first page, so the most pages of any one attempt).
        pages = max(listing_attempts(served), default=0)
        assert 0 < pages <= most_pages, f"the service read {pages} pages of the list; the bound allows {most_pages}"


def listing_attempts(served) -> list[int]:
    """The pages the service asked for in each listing (each starts from the first page, whose
    cursor the upstream writes as None)."""
    counts = []
    for line in served.read_text().splitlines():
        if line == "None":
            counts.append(1)
        elif counts:
            counts[-1] += 1
    return counts


def test_an_upstream_whose_paging_never_ends_is_stopped_at_the_page_limit(tmp_path):
    served = tmp_path / "served.txt"
    with proxy_http(hostile("--tools", "0", "--endless", "--served", str(served)), name="proxy-endless", ready=False) as (base, _):
        body = wait_for(lambda: (lambda r: r if "did not end" in json.dumps(r) else None)(readyz(base)), what="/readyz naming the endless paging")
        assert body["status"] == "not ready" and "1000 pages" in json.dumps(body), body
        assert listing_attempts(served)[0] == 1000, "it asked for exactly 1000 pages, then stopped"


def test_a_long_tool_list_reaches_hosts_in_pages(tmp_path):
    cfg = write_config(tmp_path, {"limits": {"toolsPerPage": 400}})
    with proxy_http([*hostile("--tools", "1000", "--page", "100"), "--config", cfg], name="proxy-paged") as (base, _):
        assert readyz(base)["tools"] == 1000

        async def go():
            async with session("mcp", base) as s:
                pages, names, cursor = [], [], None
                while True:
                    res = await s.list_tools(params=PaginatedRequestParams(cursor=cursor)) if cursor else await s.list_tools()
                    pages.append(len(res.tools))
                    names += [t.name for t in res.tools]
                    cursor = res.next_cursor
                    if not cursor:
                        break
                # A cursor that is not one of ours is a clear error, not a crash or a guess.
                from mcp.shared.exceptions import MCPError

                with pytest.raises(MCPError) as bad:
                    await s.list_tools(params=PaginatedRequestParams(cursor="tools-99999999"))
                assert "cursor" in str(bad.value) and bad.value.error.code == -32602
                with pytest.raises(MCPError) as bad:
                    await s.list_tools(params=PaginatedRequestParams(cursor="../../etc/passwd"))
                assert "cursor" in str(bad.value)
                return pages, names

        pages, names = anyio.run(go)
        ours = len([n for n in names if n.startswith("_ui_")])
        assert pages == [400, 400, 200 + ours], pages
        assert len(names) == len(set(names)), "no tool twice across pages"
        assert sum(n.startswith("tool_") for n in names) == 1000
        assert "_ui_refine" in names and "_ui_list" in names, "our own tools are on the last page"


# --- 3. control characters in text logs ------------------------------------------------------


def test_newlines_in_upstream_tool_names_and_host_methods_cannot_forge_log_lines(tmp_path):
    log = tmp_path / "text.log"
    cfg = write_config(tmp_path, {"logging": {"file": str(log)}})
    args = [*hostile("--evil"), "--log-format", "text", "--log-level", "debug", "--config", cfg]
    with proxy_http(args, name="proxy-forged-log") as (base, _):

        async def go():
            async with session("mcp", base) as s:
                names = [t.name for t in (await s.list_tools()).tools]
                assert EVIL in names, "the hostile name reaches hosts as it is (hosts decide)"
                res = await s.call_tool(EVIL, {"text": "x"})
                assert "called evil" in res.content[0].text

        anyio.run(go)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

        def post(msg: dict) -> urllib.request.Request:
            req = urllib.request.Request(base + "/mcp", data=json.dumps(msg).encode(), method="POST", headers=headers)
            with urllib.request.urlopen(req, timeout=10) as r:
                r.read()
                return r

        init = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "clientInfo": {"name": "raw", "version": "1"}, "capabilities": {}}})
        headers["Mcp-Session-Id"] = init.headers["Mcp-Session-Id"]
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        post({"jsonrpc": "2.0", "id": 7, "method": "tools/list\nINFO mcp_gen_ui: forged method line", "params": {}})
        time.sleep(0.5)
    text = log.read_text()
    assert "forged line admin=true" in text, "the hostile name was logged (else this test proves nothing)"
    assert "forged method line" in text, "the hostile method was logged"
    for line in text.splitlines():
        assert not line.lstrip().startswith("INFO mcp_gen_ui: forged"), f"a forged line: {line!r}"
    assert "\\n" in text, "newlines are written escaped"


# --- 9. an upstream tool named like ours -----------------------------------------------------


def test_an_upstream_tool_named_like_our_ui_tools_is_renamed_never_listed_twice():
    with proxy_http(hostile("--evil"), name="proxy-ui-names") as (base, _):

        async def go():
            async with session("mcp", base) as s:
                names = [t.name for t in (await s.list_tools()).tools]
                assert names.count("_ui_refine") == 1 and names.count("_ui_list") == 1, names
                assert "upstream_ui_refine" in names and "upstream_ui_list" in names, names
                theirs = await s.call_tool("upstream_ui_refine", {"text": "hello"})
                assert theirs.content[0].text == 'called _ui_refine {"text": "hello"}', theirs
                ours = await s.call_tool("_ui_list", {})
                assert not ours.is_error and "called" not in ours.content[0].text, "_ui_list is still ours"
            async with session("mcp", base, ui=False) as s:
                names = [t.name for t in (await s.list_tools()).tools]
                assert "_ui_refine" not in names and "upstream_ui_refine" in names, "a host without UI sees the renamed one only"

        anyio.run(go)


# --- 2. slow bodies and one client's share -----------------------------------------------------


def slow_post(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              b"Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{")
    return s


def status_of(s: socket.socket, timeout: float) -> int | None:
    s.settimeout(timeout)
    try:
        head = s.recv(64)
    except (socket.timeout, ConnectionResetError):
        return None
    m = re.match(rb"HTTP/1\.1 (\d{3})", head)
    return int(m.group(1)) if m else None


def test_slow_bodies_are_cut_and_one_client_cannot_take_every_descriptor(tmp_path):
    """260 requests that declare 100 kB and send a byte a second, against a service that may
    open 256 files: beyond the client's share they get 429 at once, the rest 408 when the body
    timeout ends, and /healthz answers throughout."""
    cfg = write_config(tmp_path, {"server": {"bodyTimeoutSecs": 3, "maxConnectionsPerClient": 40}})
    port = free_port()
    cmd = f"ulimit -n 256 && exec {shlex.quote(str(BIN))} --demo --listen 127.0.0.1:{port} --config {shlex.quote(cfg)}"
    proc = Proc("proxy-slow-bodies", ["bash", "-c", cmd])
    socks: list[socket.socket] = []
    stop = threading.Event()
    try:
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/readyz", timeout=60)
        for _ in range(260):
            socks.append(slow_post(port))

        def trickle():
            while not stop.is_set():
                for s in socks:
                    with contextlib.suppress(OSError):
                        s.send(b" ")
                stop.wait(1.0)

        threading.Thread(target=trickle, daemon=True).start()
        for _ in range(5):
            assert get(base + "/healthz", timeout=5)[0] == 200, "health checks keep working"
            time.sleep(0.3)
        statuses = [status_of(s, 20) for s in socks]
        stop.set()
        counts = {code: statuses.count(code) for code in set(statuses)}
        assert set(statuses) <= {408, 429}, f"every slow request got an answer: {counts}"
        assert counts.get(408, 0) >= 1 and counts.get(429, 0) >= 1, counts
        assert counts.get(408, 0) <= 40, f"at most the client's share was held: {counts}"
        assert get(base + "/healthz", timeout=5)[0] == 200
        samples = scrape(base)
        assert metric(samples, "mcp_gen_ui_refusals_total", reason="body_timeout") >= 1
        assert metric(samples, "mcp_gen_ui_refusals_total", reason="connections_per_client") >= 1
    finally:
        stop.set()
        for s in socks:
            s.close()
        proc.stop()


# --- 4. DNS rebinding reaches nothing ----------------------------------------------------------


def test_a_dns_rebinding_page_cannot_read_metrics_readyz_or_the_preview(tmp_path):
    with proxy_http(["--demo"], name="proxy-rebinding") as (base, _):
        port = base.rsplit(":", 1)[1]
        for path in ["/metrics", "/readyz", "/preview", "/preview/sandbox"]:
            code, _, body = get(base + path, headers={"Host": f"rebind.evil.example:{port}"})
            assert code == 403 and "--allowed-host" in body, (path, code, body[:200])
            assert "get_current_weather" not in body
            code, _, body = get(base + path, headers={"Origin": "http://rebind.evil.example"})
            assert code == 403 and "--allowed-origin" in body, (path, code)
            # What Prometheus and orchestrators send: the address, or localhost.
            assert get(base + path, headers={"Host": f"127.0.0.1:{port}"})[0] == 200, path
            assert get(base + path, headers={"Host": f"localhost:{port}"})[0] == 200, path
        assert get(base + "/healthz", headers={"Host": "rebind.evil.example"})[0] == 200, "liveness says nothing and stays open"


# --- 5 and 8. forwarded headers and the preview's sandbox origin ------------------------------


FORGED_HOST = "x.evil</script><script>alert(document.domain)</script>"


def test_no_other_site_may_frame_the_preview_sandbox():
    """The sandbox runs pages on the service's own origin: a site that names itself in ?host=
    must not become a frame ancestor (it could run script there and call /mcp)."""
    with proxy_http(["--demo", "--allowed-host", "mcp.example.com"], name="proxy-sandbox-parent") as (base, _):
        for parent in ["https://evil.example", "http://203.0.113.7:8080", "https://mcp.example.com.evil.example"]:
            code, headers, _ = get(f"{base}/preview/sandbox?host={parent}")
            assert code == 200
            ancestors = headers["Content-Security-Policy"].split("frame-ancestors", 1)[1]
            assert parent not in ancestors.split(), (parent, ancestors)
        _, headers, _ = get(f"{base}/preview/sandbox?host=https://mcp.example.com")
        assert "https://mcp.example.com" in headers["Content-Security-Policy"].split("frame-ancestors", 1)[1].split()
        page = get(base + "/preview/sandbox")[2]
        assert 'setAttribute("sandbox", "allow-scripts allow-forms")' in page, "the View's sandbox is pinned, not the parent's to choose"


def test_forwarded_headers_from_an_untrusted_peer_never_reach_the_preview():
    with proxy_http(["--demo"], name="proxy-preview-forged") as (base, _):
        for forged in [{"X-Forwarded-Host": FORGED_HOST}, {"Forwarded": "host=evil.example;proto=https"},
                       {"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}]:
            code, headers, body = get(base + "/preview", headers=forged)
            assert code == 200, (forged, code)
            assert "evil" not in body and "evil" not in headers["Content-Security-Policy"], forged
            assert re.search(r"frame-src http://localhost:\d+", headers["Content-Security-Policy"]), headers["Content-Security-Policy"]
            assert "X-Forwarded-Host" in headers["Vary"]


def test_a_trusted_proxy_is_believed_only_with_a_host_and_the_sandbox_gets_its_own_origin(tmp_path):
    sandbox_port = free_port()
    cfg = write_config(tmp_path, {"server": {"trustedProxies": ["127.0.0.0/8"], "sandboxListen": f"127.0.0.1:{sandbox_port}"}})
    with proxy_http(["--demo", "--allowed-host", "mcp.example.com", "--config", cfg], name="proxy-preview-trusted") as (base, _):
        code, _, body = get(base + "/preview", headers={"X-Forwarded-Host": FORGED_HOST})
        assert code == 400 and "<script>" not in body, (code, body)
        code, headers, body = get(base + "/preview", headers={"X-Forwarded-Host": "mcp.example.com", "X-Forwarded-Proto": "https"})
        assert code == 200, body
        sandbox = f"https://mcp.example.com:{sandbox_port}"
        assert f"frame-src {sandbox}" in headers["Content-Security-Policy"], headers["Content-Security-Policy"]
        assert json.dumps(f"{sandbox}/preview/sandbox") in body
        # The sandbox listener serves the sandbox, framable only by the preview that named it.
        code, headers, _ = get(f"http://127.0.0.1:{sandbox_port}/preview/sandbox?host=https://mcp.example.com")
        ancestors = headers["Content-Security-Policy"].split("frame-ancestors", 1)[1]
        assert code == 200 and "https://mcp.example.com" in ancestors.split(), headers["Content-Security-Policy"]
        assert get(f"http://127.0.0.1:{sandbox_port}/mcp")[0] == 404, "the sandbox origin serves the sandbox only"


def test_on_a_non_loopback_name_without_a_sandbox_origin_the_preview_refuses_clearly():
    with proxy_http(["--demo", "--allowed-host", "mcp.example.com"], name="proxy-preview-shared-origin") as (base, _):
        port = base.rsplit(":", 1)[1]
        code, headers, body = get(base + "/preview", headers={"Host": f"mcp.example.com:{port}"})
        assert code == 503, (code, body[:300])
        assert "server.sandboxListen" in body and "origin of its own" in body, body
        assert headers["Content-Type"].startswith("text/plain")
        assert get(base + "/preview")[0] == 200, "on loopback the other loopback name is the sandbox's origin"


# --- 6. debug files --------------------------------------------------------------------------


def regenerate(base: str, tool: str = "get_current_weather") -> None:
    async def go():
        async with session("mcp", base) as s:
            res = await s.call_tool("_ui_regenerate", {"toolName": tool})
            assert not res.is_error, res.content[0].text

    anyio.run(go)


def read_page(base: str, tool: str = "get_current_weather") -> None:
    async def go():
        async with session("mcp", base) as s:
            await s.read_resource(f"ui://{tool}")

    anyio.run(go)


def test_debug_files_never_follow_a_symlink_and_are_named_by_the_service(fake, tmp_path):
    debug = tmp_path / "debug"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    log = tmp_path / "gen.log"
    cfg = {"logging": {"debugDir": str(debug), "file": str(log)}}
    with gen_proxy(fake, config=cfg, args=["--debug"], name="proxy-debug-files", tmp_path=tmp_path) as (base, _):
        read_page(base)
        assert oct(debug.stat().st_mode & 0o777) == "0o700", "the folder is private"
        first = sorted(p.name for p in debug.iterdir())
        stems = {re.match(r"(get_current_weather-[0-9a-f]+-)1\.", n).group(1) for n in first if n.endswith(".prompt.txt")}
        assert len(stems) == 1, first
        stem = stems.pop()
        # Someone plants symlinks where the next files will be written.
        for n in range(2, 12):
            for suffix in ["prompt.txt", "answer-1.txt", "html"]:
                (debug / f"{stem}{n}.{suffix}").symlink_to(victim)
        regenerate(base)
        assert victim.read_text() == "precious", "the file a symlink points to is untouched"
        # The write that met the planted link is the one refused (not merely some refusal).
        wait_for(lambda: f"{stem}2.prompt.txt" in log.read_text() and "could not write a debug file" in log.read_text(), what="the refusal logged")
    for p in debug.iterdir():
        assert re.fullmatch(r"get_current_weather-[0-9a-f]+-\d+\.(prompt\.txt|answer-\d+\.txt|html)", p.name), p.name


def test_a_debug_folder_open_to_others_is_refused(fake, tmp_path):
    debug = tmp_path / "shared-debug"
    debug.mkdir(mode=0o777)
    os.chmod(debug, 0o777)
    log = tmp_path / "gen.log"
    cfg = {"logging": {"debugDir": str(debug), "file": str(log)}}
    with gen_proxy(fake, config=cfg, args=["--debug"], name="proxy-debug-open", tmp_path=tmp_path) as (base, _):
        read_page(base)
    assert list(debug.iterdir()) == [], "nothing written to a folder others can write"
    assert "open to other users" in log.read_text()


# --- 11. configuration values that used to pass ------------------------------------------------


@pytest.mark.parametrize(
    "args,config,field",
    [
        ([], {"toolRefresh": {"intervalMs": 0}}, "toolRefresh.intervalMs"),
        ([], {"llm": {"temperature": -5}}, "llm.temperature"),
        ([], {"llm": {"temperature": 1e308}}, "llm.temperature"),
        ([], {"server": {"sessionIdleTimeoutSecs": 0}}, "server.sessionIdleTimeoutSecs"),
        ([], {"server": {"bodyTimeoutSecs": 0}}, "server.bodyTimeoutSecs"),
        ([], {"server": {"maxConnectionsPerClient": 0}}, "server.maxConnectionsPerClient"),
        ([], {"server": {"trustedProxies": ["everyone"]}}, "server.trustedProxies[0]"),
        ([], {"server": {"sandboxOrigin": "https://sandbox.example.com"}}, "server.sandboxOrigin"),
        ([], {"limits": {"toolsPerPage": 0}}, "limits.toolsPerPage"),
        ([], {"upstream": {"maxTools": 0}}, "upstream.maxTools"),
        (["--upstream-header", "X-A: one\r\nX-Injected: two"], None, "--upstream-header"),
    ],
)
def test_values_that_used_to_pass_are_refused_naming_the_field(args, config, field, tmp_path):
    base_args = ["--upstream-url", "http://127.0.0.1:1/mcp"] if args else ["--demo"]
    if config is not None:
        base_args += ["--config", write_config(tmp_path, config)]
    out = subprocess.run([str(BIN), *base_args, *args], capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 2, out
    assert field in out.stderr, out.stderr
    assert "panicked" not in out.stderr


def test_wildcard_allow_lists_start_with_a_loud_warning(tmp_path):
    with proxy_http(["--demo", "--allowed-host", "*", "--allowed-origin", "*"], name="proxy-wildcards") as (_, proc):
        time.sleep(0.3)
    text = proc.log_path.read_text()
    assert re.search(r"WARN.*allowedHosts.*\"\*\".*DNS rebinding", text), text[-2000:]
    assert re.search(r"WARN.*allowedOrigins.*\"\*\"", text), text[-2000:]

