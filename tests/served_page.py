"""One template page as a UI host is served it: starts the proxy (BIN, default the debug build)
with --demo and the offline provider on a free port, reads a tool's ui:// page over Streamable
HTTP as a host that renders MCP Apps, writes it to OUT and stops the proxy. Exits non-zero,
saying why, when the proxy does not start, the page cannot be read or is not the template page.
Bounded: every wait has a deadline. For tests/run.sh (the template page's Node tests then run
against the page's scripts as served: SERVED_PAGE=OUT, see templates/page/served.mjs).

    python3 tests/served_page.py OUT [BIN]
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UI_CAPS = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
START_TIMEOUT = 60.0  # the proxy starts the demo upstream before it listens
REQUEST_TIMEOUT = 30.0


def fail(why: str) -> None:
    print(f"served_page.py: {why}", file=sys.stderr)
    sys.exit(1)


def rpc(url: str, sid: str | None, message: dict) -> tuple[dict | None, str | None]:
    """(the JSON-RPC answer to `message`, or None for a notification; the session id)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    req = urllib.request.Request(url, data=json.dumps(message).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=REQUEST_TIMEOUT) as r:
            sid = r.headers.get("Mcp-Session-Id") or sid
            kind = r.headers.get("Content-Type", "")
            body = r.read().decode()
    except urllib.error.HTTPError as e:
        fail(f"{message.get('method')}: HTTP {e.code}: {e.read().decode()[:500]}")
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        fail(f"{message.get('method')}: {e}")
    if "id" not in message:
        return None, sid
    if kind.startswith("text/event-stream"):
        answers = [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:") and line[5:].strip()]
        answers = [a for a in answers if a.get("id") == message["id"]]
        if not answers:
            fail(f"{message['method']}: no answer in the event stream: {body[:500]}")
        answer = answers[0]
    else:
        answer = json.loads(body)
    if "error" in answer:
        fail(f"{message['method']}: {answer['error']}")
    return answer["result"], sid


def read_page(base: str) -> tuple[str, str]:
    """(the tool's name, its ui:// page's HTML)."""
    url = base + "/mcp"
    _, sid = rpc(url, None, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": UI_CAPS, "clientInfo": {"name": "served-page", "version": "1"}}})
    if not sid:
        fail("initialize: no Mcp-Session-Id")
    rpc(url, sid, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools, _ = rpc(url, sid, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    with_ui = {t["name"]: t["_meta"]["ui"]["resourceUri"] for t in tools["tools"]
               if isinstance(t.get("_meta", {}).get("ui"), dict) and t["_meta"]["ui"].get("resourceUri")}
    if not with_ui:
        fail(f"tools/list: no tool with a ui:// page: {[t['name'] for t in tools['tools']]}")
    # The demo's forecast tool when it is there (its schema has bounds, an enum and a default).
    name = "get_forecast" if "get_forecast" in with_ui else sorted(with_ui)[0]
    read, _ = rpc(url, sid, {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": with_ui[name]}})
    texts = [c.get("text") for c in read.get("contents", []) if isinstance(c.get("text"), str)]
    if not texts:
        fail(f"resources/read {with_ui[name]}: no text content: {json.dumps(read)[:500]}")
    return name, texts[0]


def main() -> None:
    if len(sys.argv) not in (2, 3):
        fail("usage: served_page.py OUT [BIN]")
    out = Path(sys.argv[1])
    binary = Path(sys.argv[2]) if len(sys.argv) == 3 else ROOT / "target/debug/mcp-gen-ui"
    if not os.access(binary, os.X_OK):
        fail(f"{binary}: not an executable (build it first)")
    out.parent.mkdir(parents=True, exist_ok=True)
    log_path = out.with_suffix(".log")
    log_path.write_text("")
    # Appended to by both: the proxy's stderr, and its stdout as read here.
    with tempfile.TemporaryDirectory(prefix="served-page-") as cache, open(log_path, "a") as log:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_GEN_UI_")}
        args = [str(binary), "--demo", "--listen", "127.0.0.1:0", "--provider", "offline", "--cache-dir", cache]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=env, text=True, start_new_session=True)
        found: list[str] = []

        def watch() -> None:  # the address it listens on, from its first lines
            for line in proc.stdout:
                log.write(line)
                log.flush()
                m = re.search(r"listening on (http://\S+)", line)
                if m and not found:
                    found.append(m.group(1))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            deadline = time.time() + START_TIMEOUT
            while not found and time.time() < deadline and proc.poll() is None:
                time.sleep(0.05)
            if not found:
                why = f"exited ({proc.poll()})" if proc.poll() is not None else f"did not say where it listens within {START_TIMEOUT:.0f}s"
                fail(f"the proxy {why}; see {log_path}")
            base = found[0]
            while True:  # ready: the demo upstream answered
                try:
                    with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
                        if r.status == 200:
                            break
                except (urllib.error.URLError, TimeoutError, OSError):
                    pass
                if time.time() > deadline or proc.poll() is not None:
                    fail(f"{base}/readyz not 200 within {START_TIMEOUT:.0f}s; see {log_path}")
                time.sleep(0.1)
            name, html = read_page(base)
        finally:
            # The proxy and the demo upstream it started: the process group started here.
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            watcher.join(timeout=5)
    # The template page: its tool metadata and the page script's App.
    if 'id="tool-meta"' not in html or "mcp-gen-ui-template" not in html:
        fail(f"the page of {name} is not the template page (the offline provider's): {html[:300]!r}")
    out.write_text(html)
    print(f"served_page.py: {name}'s page, {len(html)} characters, in {out}")


if __name__ == "__main__":
    main()
