"""Acceptance 4: bad input gets a clear error that names what is wrong, and nothing panics."""

import json
import os
from pathlib import Path
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import BIN, Proc, proxy_http

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def run_bin(args, timeout=10):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    "args,config,field",
    [
        ([], None, "upstream"),
        (["--upstream-url", "localhost:3000/mcp"], None, "--upstream-url"),
        (["--upstream-url", "ftp://example.com/mcp"], None, "--upstream-url"),
        (["--provider", "gpt", "--demo"], None, "--provider"),
        (["--demo", "--listen", "8080"], None, "--listen"),
        (["--demo", "--upstream", "node x.js"], None, "--demo"),
        (["--upstream-url", "http://127.0.0.1:1/mcp", "--upstream-header", "no colon"], None, "--upstream-header"),
        (["--demo", "--provider", "anthropic"], None, "llm.provider"),
        ([], {"upstream": {"comand": "node"}}, "upstream.comand"),
        ([], {"upstream": {"command": "node"}, "llm": {"provider": "gpt"}}, "llm.provider"),
        ([], {"upstream": {"command": "node"}, "generation": {"timeoutMs": "soon"}}, "generation.timeoutMs"),
        ([], {"upstream": {"transport": "sse"}}, "upstream.url"),
        ([], {"upstream": {"url": "not a url"}}, "upstream.url"),
        ([], {"upstream": {"command": "node"}, "cache": {"type": "filesystem"}}, "cache.dir"),
        ([], {"upstream": {"command": "node"}, "logging": {"level": "loud"}}, "logging.level"),
        # A folder beside a memory cache looked persistent and was not (issue 20).
        ([], {"upstream": {"command": "node"}, "cache": {"dir": "/tmp/mcp-gen-ui-never"}}, "cache.type"),
    ],
)
def test_invalid_config_exits_2_naming_the_field(args, config, field, tmp_path):
    if config is not None:
        path = tmp_path / "config.json"
        path.write_text(json.dumps(config))
        args = ["--config", str(path), *args]
    env_free = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""}
    out = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin", **env_free})
    assert out.returncode == 2, out
    assert field in out.stderr, out.stderr
    assert "panicked" not in out.stderr
    assert len(out.stderr.strip().splitlines()) <= 4, f"one clear message, not a wall: {out.stderr}"


def test_config_file_that_is_not_json(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{ upstream: ")
    out = run_bin(["--config", str(path)])
    assert out.returncode == 2 and "valid JSON" in out.stderr, out.stderr


def test_schema_flag_prints_the_schema():
    out = run_bin(["--print-config-schema"])
    schema = json.loads(out.stdout)
    assert out.returncode == 0 and "upstream" in schema["properties"]


def post(url, body: bytes, headers=None, method="POST"):
    req = urllib.request.Request(url, data=body, headers=headers or MCP_HEADERS, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def sse_json(body: bytes) -> dict:
    """The last message of a POST's answer, whether it came as plain JSON or as an SSE stream."""
    text = body.decode()
    if text.lstrip().startswith(("{", "[")):
        return json.loads(text)
    datas = [line[5:].strip() for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return json.loads(datas[-1])


@pytest.fixture(scope="module")
def demo():
    with proxy_http(["--demo"], name="proxy-bad-input") as (base, proc):
        yield base, proc


def initialize(base) -> str:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"},
        "capabilities": {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}}}).encode()
    status, headers, _ = post(base + "/mcp", body)
    assert status == 200
    return headers["mcp-session-id"]


def test_http_errors_are_json_rpc(demo):
    base, proc = demo
    status, _, body = post(base + "/mcp", b"{not json")
    assert status == 400 and json.loads(body)["error"]["code"] == -32700
    status, _, body = post(base + "/mcp", b"[]")
    assert status == 400 and json.loads(body)["error"]["code"] == -32600, "JSON-RPC 2.0: an empty batch is an invalid request"

    status, _, body = post(base + "/mcp", b'{"hello": 1}')
    assert status == 400 and json.loads(body)["error"]["code"] == -32600

    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    status, _, body = post(base + "/mcp", ping, {**MCP_HEADERS, "Mcp-Session-Id": "no-such-session"})
    assert status == 404 and "not found" in json.loads(body)["error"]["message"]

    status, _, body = post(base + "/mcp", ping)
    assert status == 400 and "Mcp-Session-Id" in json.loads(body)["error"]["message"]

    status, _, body = post(base + "/mcp", ping, {"Content-Type": "application/json", "Accept": "application/json"})
    assert status == 406

    status, _, body = post(base + "/messages?sessionId=nope", ping, {"Content-Type": "application/json"})
    assert status == 404 and json.loads(body)["error"]

    status, _, body = post(base + "/mcp", ping, {**MCP_HEADERS, "Host": "evil.example.com"})
    assert status == 403 and "--allowed-host" in json.loads(body)["error"]["message"]


def test_oversized_body_gets_413_not_invalid_json(demo):
    base, _ = demo
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (5 * 1024 * 1024) + b'"}}'
    status, _, body = post(base + "/mcp", big)
    assert status == 413
    err = json.loads(body)["error"]
    assert "limit" in err["message"] and "JSON" not in err["message"]

    # Without Content-Length (chunked), the cap still holds.
    def chunks():
        for _ in range(6):
            yield b"x" * (1024 * 1024)

    req = urllib.request.Request(base + "/mcp", data=chunks(), headers={**MCP_HEADERS, "Transfer-Encoding": "chunked"}, method="POST")
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("expected 413")
    except urllib.error.HTTPError as e:
        assert e.code == 413
    except (ConnectionResetError, BrokenPipeError, urllib.error.URLError):
        pass  # the server may close the connection after answering 413 mid-upload


def test_unknown_ui_resource_and_bad_ids(demo):
    base, proc = demo
    sid = initialize(base)
    h = {**MCP_HEADERS, "Mcp-Session-Id": sid}
    read = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "ui://no_such_tool"}}).encode()
    status, _, body = post(base + "/mcp", read, h)
    err = sse_json(body)["error"]
    assert err["code"] == -32002 and "ui://no_such_tool" in err["message"]

    bad_id = json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}).encode()
    status, _, body = post(base + "/mcp", bad_id, h)
    assert status == 400 and json.loads(body)["error"]["code"] == -32600

    unknown_method = json.dumps({"jsonrpc": "2.0", "id": 4, "method": "no/such/method"}).encode()
    status, _, body = post(base + "/mcp", unknown_method, h)
    assert sse_json(body)["error"]["code"] == -32601

    with urllib.request.urlopen(base + "/healthz") as r:
        assert r.status == 200
    assert "panicked" not in proc.log_path.read_text()


def test_stdio_edge_answers_parse_errors_and_keeps_going():
    lines = "\n".join([
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]) + "\n"
    p = subprocess.Popen([str(BIN), "--demo", "--transport", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdin.write(lines)
    p.stdin.flush()
    answers = [json.loads(p.stdout.readline()) for _ in range(3)]
    p.stdin.close()
    p.wait(timeout=10)
    assert answers[0]["error"]["code"] == -32700
    by_id = {a.get("id"): a for a in answers}
    assert by_id[2]["result"]["tools"], "the session survives a bad line"
    assert "_meta" not in by_id[2]["result"]["tools"][0] or "ui" not in by_id[2]["result"]["tools"][0]["_meta"], "a host without the UI extension gets pass-through"
    assert p.returncode == 0


def test_a_cache_folder_the_service_cannot_write_stops_it_at_start(tmp_path):
    """The shipped image once ran on a root-owned volume: every page was lost while /readyz was
    green. Now the start fails, naming the folder, its owner, the user and the fix. The case is
    reached as it happens: the folder exists, root made it (as the engine makes a volume), and
    the service runs as uid 65534 (nobody), as the container's uid 10001 met its volume, with
    every folder above searchable (a private base folder would fail earlier, at the path)."""
    import shutil
    import tempfile

    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.fail("needs root and setpriv to run the service as another user (tests/run.sh runs as root)")
    base = Path(tempfile.mkdtemp(prefix="mcp-gen-ui-volume-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        volume = base / "cache"
        volume.mkdir(mode=0o755)
        assert volume.stat().st_uid == 0
        nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
        out = subprocess.run([*nobody, str(BIN), "--demo", "--listen", "127.0.0.1:0", "--cache-dir", str(volume)],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 2, out
        err = out.stderr
        assert str(volume) in err and "owned by uid 0" in err and "(uid 65534)" in err, err
        assert "cannot create a file in it" in err and f"chown -R 65534 {volume}" in err, err
        assert "listening" not in out.stdout
        assert not (volume / "state").exists(), "nothing was made in it"
        # With the page cache off, refinements and what was learnt still go to that folder.
        off = subprocess.run([*nobody, str(BIN), "--demo", "--no-cache", "--listen", "127.0.0.1:0", "--cache-dir", str(volume)],
                             capture_output=True, text=True, timeout=20)
        assert off.returncode == 2 and "owned by uid 0" in off.stderr, off
        # Given to that user, the same folder works.
        os.chown(volume, 65534, 65534)
        owned = Proc("proxy-volume-owned", [*nobody, str(BIN), "--demo", "--listen", "127.0.0.1:0", "--cache-dir", str(volume)])
        try:
            owned.read_line_matching(r"listening on", timeout=20)
        finally:
            owned.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)