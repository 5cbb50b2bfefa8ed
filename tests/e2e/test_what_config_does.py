"""Issue 54: what a configuration says is what it does. A rule, profile or server glob that
matches no server or no tool, and a key that means nothing, are warned about by `check` and the
start (errors with `check --strict` / `checkStrict`); the README's read-only example is
read-only; `/readyz` counts the tools hosts are shown; the UI capability a host must declare is
in the book as the service asks for it."""

import json
import re
import subprocess
import urllib.request

from conftest import BIN, NODE, NODE_MODULES, ROOT, UI_EXT, proxy_http, wait_for
from docs_examples import example_blocks
from test_check import check

FILESYSTEM = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
WRITING = {"write_file": {"path": "new.txt", "content": "x"},
           "edit_file": {"path": "a.txt", "edits": [{"oldText": "alpha", "newText": "omega"}]},
           "create_directory": {"path": "made"},
           "move_file": {"source": "a.txt", "destination": "b.txt"}}


def rpc(base, method, params=None, sid=None, rid=2):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if sid:
        headers["Mcp-Session-Id"] = sid
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
    req = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read().decode()
        sid = r.headers.get("mcp-session-id") or sid
    data = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    return json.loads(data[-1] if data else text), sid


def open_session(base, ui=False):
    caps = {"extensions": UI_EXT} if ui else {}
    _, sid = rpc(base, "initialize", {"protocolVersion": "2025-06-18", "capabilities": caps, "clientInfo": {"name": "t", "version": "1"}}, rid=1)
    return sid


def readme_files_entry(root):
    """The README's servers example, its `files` server run from the npm peers over `root`."""
    block = next(b for b in example_blocks() if b.path.name == "README.md" and "server-filesystem" in b.text)
    doc = json.loads(block.text)
    files = doc["mcpServers"]["files"]
    files["command"], files["args"] = NODE, [str(FILESYSTEM), str(root)]
    return files


def test_the_readmes_read_only_example_is_read_only(tmp_path):
    """Issue 54 item 3: it denied write_file and edit_file, and left create_directory and
    move_file callable."""
    root = tmp_path / "shared"
    root.mkdir()
    (root / "a.txt").write_text("alpha")
    files = readme_files_entry(root)
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"files": files}}))
    # checkStrict: a name of the allow list that matches no tool of this version stops the start.
    (tmp_path / "config.json").write_text(json.dumps({"checkStrict": True}))
    before = sorted(p.name for p in root.iterdir())
    with proxy_http(["--servers-file", str(tmp_path / "servers.json"), "--config", str(tmp_path / "config.json")], name="proxy-readonly") as (base, _):
        sid = open_session(base)
        listed = {t["name"] for t in rpc(base, "tools/list", sid=sid)[0]["result"]["tools"]}
        assert "files__read_text_file" in listed and not listed & {f"files__{w}" for w in WRITING}, listed
        for tool, args in WRITING.items():
            answer, _ = rpc(base, "tools/call", {"name": f"files__{tool}", "arguments": {**args, "path": str(root / args.get("path", ""))}
                                                 if "path" in args else {"source": str(root / "a.txt"), "destination": str(root / "b.txt")}}, sid=sid)
            assert "error" in answer or answer.get("result", {}).get("isError"), (tool, answer)
            assert "files__" + tool in json.dumps(answer), (tool, answer)
    assert sorted(p.name for p in root.iterdir()) == before and (root / "a.txt").read_text() == "alpha", "nothing was written"


def slipped_setup(tmp_path, strict=False):
    """The issue's setup: a rule about server `file` (it is `files`), a deny of `edit_files` (the
    tool is `edit_file`), `tols` for `tools`."""
    root = tmp_path / "shared"
    root.mkdir(exist_ok=True)
    servers = {"mcpServers": {"files": {"command": NODE, "args": [str(FILESYSTEM), str(root)],
                                        "tools": {"deny": ["edit_files", "write_file", "move_file"]}, "tols": {"deny": ["create_directory"]}}}}
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    cfg = {"serversFile": str(tmp_path / "servers.json"), **({"checkStrict": True} if strict else {}),
           "policy": {"rules": [{"name": "no files for bob", "servers": ["file"], "effect": "deny", "when": "principal.name == 'bob'"}]}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return tmp_path / "config.json"


STATIC = ['policy.rules[0].servers[0]: "file" matches no server (the servers are files): the deny rule denies nothing by it; did you mean "files"?',
          "mcpServers.files.tols: the key `tols` means nothing to mcp-gen-ui and is ignored: did you mean `tools`?"]
LISTED = 'files.tools.deny[0]: "edit_files" matches no tool of files (14 listed): it hides nothing; did you mean "edit_file"?'


def test_names_that_match_nothing_are_warned_about_by_check_and_the_start(tmp_path):
    """Issue 54 item 1, and /readyz counting the tools hosts are shown (item 5)."""
    config = slipped_setup(tmp_path)
    code, out, err = check("check", "--config", str(config))
    assert code == 0, err
    for said in STATIC:
        assert said in out, (said, out)
    assert "not checked: the tool names of tools.allow, tools.deny" in out, out
    code, out, err = check("check", "--strict", "--config", str(config))
    assert code == 2 and all(s in err for s in STATIC) and "are errors with --strict" in err, err
    with proxy_http(["--config", str(config), "--log-format", "json"], name="proxy-unmatched",
                    env={"MCP_GEN_UI_LOG_LEVEL": "info"}) as (base, proc):
        ready = json.loads(urllib.request.urlopen(base + "/readyz").read())
        assert ready["servers"][0]["tools"] == 12 and ready["servers"][0]["toolsHidden"] == 2 and ready["tools"] == 12, ready

        def warned():
            return [x["message"] for x in map(json.loads, proc.log_path.read_text().splitlines()) if x["level"] == "warn"]

        wait_for(lambda: any(LISTED in w for w in warned()), 10, "the warning once the server listed its tools")
        for said in STATIC:
            assert any(said in w for w in warned()), (said, warned())


def test_check_strict_in_the_file_stops_a_start_whose_deny_matches_no_tool(tmp_path):
    config = slipped_setup(tmp_path, strict=True)
    p = subprocess.run([str(BIN), "--listen", "127.0.0.1:0", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "checkStrict" in p.stderr and STATIC[0] in p.stderr, p.stderr
    # The static findings fixed, the tool-level one stops it once the server has listed.
    cfg = json.loads(config.read_text())
    cfg["policy"]["rules"][0]["servers"] = ["files"]
    config.write_text(json.dumps(cfg))
    servers = json.loads((tmp_path / "servers.json").read_text())
    del servers["mcpServers"]["files"]["tols"]
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    p = subprocess.run([str(BIN), "--listen", "127.0.0.1:0", "--config", str(config)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and f"checkStrict: {tmp_path / 'servers.json'}: {LISTED}" in p.stderr, p.stderr
    assert "listening on" not in p.stdout, "it never served"


def test_the_ui_capability_the_service_asks_for_is_the_one_in_the_book():
    """Issue 54 item 5: a host without the extension reading a page is told the capability;
    docs/hosts.md shows the same JSON."""
    with proxy_http(["--demo"], name="proxy-ui-capability") as (base, _):
        sid = open_session(base)
        answer, _ = rpc(base, "resources/read", {"uri": "ui://get_forecast"}, sid=sid)
    message = answer["error"]["message"]
    asked = re.search(r'capabilities\.extensions\["([^"]+)"\] = (\{.*?\]\})', message)
    assert asked, message
    wanted = {"capabilities": {"extensions": {asked.group(1): json.loads(asked.group(2))}}}
    hosts = (ROOT / "docs" / "hosts.md").read_text()
    shown = [json.loads(b) for b in re.findall(r"```json\n(\{\"capabilities\".*?)\n```", hosts, re.S)]
    assert wanted in shown, (wanted, shown)


def test_the_banner_names_each_server_of_a_fleet(tmp_path):
    """Issue 54 item 5: a servers file's servers each by name, never the first one's program
    alone; the log names each server as it starts."""
    servers = {"mcpServers": {"weather": {"command": str(BIN), "args": ["demo-upstream"]}, "files": {"command": NODE, "args": [str(FILESYSTEM), str(tmp_path)]}}}
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    with proxy_http(["--servers-file", str(tmp_path / "servers.json")], name="proxy-banner") as (base, proc):
        line = proc.read_line_matching(r"^  upstream\s+(.*)$").group(1)
        assert line == f"2 servers: weather (stdio: {BIN.name}), files (stdio: node)", line
        wait_for(lambda: "starting the server files (stdio: node)" in proc.log_path.read_text(), 10, "the log line naming the server")
