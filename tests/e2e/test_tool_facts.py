"""Issue 61, item 1: rules over what a tool is. alice and bob (the people and channels of
test_isolation.py) in front of the real server-filesystem (npm), whose tools say of themselves
whether they only read (`annotations.readOnlyHint`), and a stdio server (chatty_upstream.py)
that adds a tool that says nothing of itself while the service runs, as a server's next version
might. bob is made read-only by what the tools say, not by their names: every write tool is
refused him, every read tool allowed, and the tool added later is refused him without a change
to the rules. alice may do everything; the trail records bob's refusals."""

import json
import sys
from pathlib import Path

import pytest

from conftest import METRICS_TOKEN, NODE, NODE_MODULES, proxy_http, wait_for
from test_isolation import Session, finish, pair, text
from test_teams import scrape_with

FILESYSTEM = NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
CHATTY = Path(__file__).parent / "chatty_upstream.py"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
READ_ONLY = {"default": "allow", "rules": [
    {"name": "bob only reads", "kinds": ["tools"], "effect": "deny", "when": "principal.name == 'bob' && !annotations.readOnlyHint"},
]}
WRITES = {"fs__write_file", "fs__edit_file", "fs__create_directory", "fs__move_file"}


class Svc:
    def __init__(self, base, folder, files):
        self.base, self.folder, self.files = base, folder, files

    def audit_lines(self) -> list[dict]:
        path = self.folder / "audit.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tool-facts")
    files = folder / "files"
    files.mkdir()
    (files / "notes.txt").write_text("the team's notes\n")
    servers = {"fs": {"command": NODE, "args": [str(FILESYSTEM), str(files)]},
               "chatty": {"command": sys.executable, "args": [str(CHATTY)]}}
    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    (folder / "config.json").write_text(json.dumps({"policy": READ_ONLY, "audit": {"file": str(folder / "audit.jsonl")}}))
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
    argv = ["--servers-file", str(folder / "servers.json"), "--config", str(folder / "config.json"), *tokens]
    with proxy_http(argv, name="proxy-tool-facts") as (base, _):
        yield Svc(base, folder, files)


@pytest.fixture
def people(svc):
    yield from pair()


def listed(s: Session) -> dict:
    return {t["name"]: t for t in s.rpc("tools/list", {})["result"]["tools"]}


def test_a_read_only_person_by_what_tools_say_of_themselves(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    theirs, his = wait_for(lambda: (lambda x: x if "fs__read_text_file" in x else None)(listed(a)), 20, "fs listed"), listed(b)
    fs = {n for n in theirs if n.startswith("fs__")}
    reads = {n for n in fs if theirs[n].get("annotations", {}).get("readOnlyHint") is True}
    assert WRITES <= fs and len(reads) >= 8, sorted(fs)
    assert {n for n in his if n.startswith("fs__")} == reads, "bob is shown exactly the tools that say they only read"
    # bob writes nothing, whatever the tool; alice writes.
    for tool, args in (("fs__write_file", {"path": str(svc.files / "bob.txt"), "content": bob.tag}),
                       ("fs__create_directory", {"path": str(svc.files / "bobdir")})):
        refused = b.call(tool, **args)
        assert refused.get("error", {}).get("code") == -32003, refused
    assert not (svc.files / "bob.txt").exists() and not (svc.files / "bobdir").exists()
    assert "error" not in a.call("fs__write_file", path=str(svc.files / "alice.txt"), content=f"{alice.tag} plan")
    assert (svc.files / "alice.txt").read_text() == f"{alice.tag} plan"
    # bob reads.
    assert "the team's notes" in text(b.call("fs__read_text_file", path=str(svc.files / "notes.txt")))
    # Metrics by tool (issue 61, item 5): each tool's calls by how they ended, a denial as one.
    samples = scrape_with(svc.base, METRICS_TOKEN)
    calls = lambda tool, outcome: samples.get(("mcp_gen_ui_tool_calls_total", (("outcome", outcome), ("server", "fs"), ("tool", tool))), 0)
    assert calls("fs__write_file", "denied") >= 1 and calls("fs__create_directory", "denied") >= 1
    assert calls("fs__write_file", "ok") >= 1 and calls("fs__read_text_file", "ok") >= 1
    timed = samples.get(("mcp_gen_ui_tool_call_duration_seconds_count", (("server", "fs"), ("tool", "fs__read_text_file"))), 0)
    assert timed >= 1, "the read's time is in the tool's histogram"
    assert samples.get(("mcp_gen_ui_requests_total", (("method", "tools/call"), ("outcome", "denied"))), 0) >= 2
    # The trail: bob's refusals, by tool.
    denied = lambda: {x["tool"] for x in svc.audit_lines() if x["event"] == "denied" and x["principal"] == "bob"}
    wait_for(lambda: {"fs__write_file", "fs__create_directory"} <= denied(), 5, f"bob's refusals in the trail: {denied()}")
    finish(alice, bob, grace=0)


def test_a_tool_the_server_adds_later_is_refused_to_a_read_only_person_without_a_rule_change(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    assert "chatty__erase" not in listed(a)
    assert "chatty__grow" in listed(b), "a tool that says it only reads"
    assert text(b.call("chatty__grow")) == "grown"
    wait_for(lambda: "chatty__erase" in listed(a), 10, "the new tool listed to alice")
    assert "chatty__erase" not in listed(b), "a tool that says nothing of itself may write: not shown to bob"
    refused = b.call("chatty__erase")
    assert refused.get("error", {}).get("code") == -32003, refused
    assert text(a.call("chatty__erase")) == "erased"
    finish(alice, bob, grace=0)
