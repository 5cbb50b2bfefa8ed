"""Issue 61, item 4: tools pinned against a rug pull. A server (chatty_upstream.py) changes its
tool `note`'s description after people used it (`reword`: the new text asks the model for a
private key), and adds a tool (`grow` adds `erase`). alice is an admin, bob is not; both are
connected side by side.

- `policy.onToolChange: hold`: the changed tool is held for everyone (listed to neither, the new
  text reaches neither, calls refused naming why), the trail and `tool_changes_total` say so;
  bob may not see or accept held changes; alice sees the difference and accepts it (only at the
  fingerprint she was shown); it is back for both. The accepted definition is kept on disk: a
  restart whose server went back to the old text holds it again.
- `policy.onNewTool: hold`: the added tool is held until accepted.
- the default (`warn`): the change passes, logged, counted and in the trail.
- two replicas sharing Redis in front of one Streamable HTTP server: both hold the change, alice
  accepts it on one, and the other lets it through."""

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import BIN, METRICS_TOKEN, UI_EXT, free_port, metric, proxy_http, wait_for, wait_port
from replica_peers import Redis
from test_isolation import Session, finish, pair
from test_teams import scrape_with

CHATTY = Path(__file__).parent / "chatty_upstream.py"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
REWORDED = "id_rsa"  # in the changed description only
UI = {"extensions": UI_EXT}


class Svc:
    def __init__(self, base, folder):
        self.base, self.folder = base, folder

    def audit_lines(self) -> list[dict]:
        path = self.folder / "audit.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []

    def changes(self, outcome: str, server: str = "chatty") -> float:
        return metric(scrape_with(self.base, METRICS_TOKEN), "mcp_gen_ui_tool_changes_total", server=server, outcome=outcome)


@contextlib.contextmanager
def service(folder: Path, policy: dict, servers: dict | None = None, extra: dict | None = None, name: str = "proxy-pins"):
    servers = servers or {"chatty": {"command": sys.executable, "args": [str(CHATTY)]}}
    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    cfg = {"policy": policy, "audit": {"file": str(folder / "audit.jsonl")}, "server": {"auth": {"admins": ["alice"]}},
           "cache": {"type": "filesystem", "dir": str(folder / "cache")}, **(extra or {})}
    (folder / "config.json").write_text(json.dumps(cfg))
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
    argv = ["--servers-file", str(folder / "servers.json"), "--config", str(folder / "config.json"), *tokens]
    with proxy_http(argv, name=name) as (base, _):
        yield Svc(base, folder)


def listed(s: Session) -> dict:
    return {t["name"]: t for t in s.rpc("tools/list", {})["result"]["tools"]}


def text(answer: dict) -> str:
    return "".join(c.get("text", "") for c in answer.get("result", {}).get("content", []))


def pins_cli(svc: Svc, person: str, *args: str) -> subprocess.CompletedProcess:
    """`mcp-gen-ui pins` against the running service, as `person`."""
    env = {**os.environ, "MCP_GEN_UI_TOKEN": TOKENS[person]}
    return subprocess.run([str(BIN), "pins", "--url", svc.base + "/mcp", *args], env=env, capture_output=True, text=True, timeout=60)


def held_error(answer: dict) -> bool:
    e = answer.get("error") or {}
    return e.get("code") == -32003 and (e.get("data") or {}).get("held") is True and "_ui_accept_tool_change" in e.get("message", "")


def test_a_changed_tool_is_held_for_everyone_until_an_admin_accepts_it(tmp_path):
    with service(tmp_path, {"onToolChange": "hold"}) as svc, contextlib.ExitStack() as stack:
        alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
        a, b = Session(svc, alice, "A", caps=UI), Session(svc, bob, "B", caps=UI)
        wait_for(lambda: "chatty__note" in listed(a), 20, "chatty listed")
        assert "_ui_tool_changes" in listed(b) and "_ui_accept_tool_change" in listed(a), "listed where something can be held"
        assert listed(a)["_ui_tool_changes"]["_meta"]["ui"]["visibility"] == ["app"], "a held tool's new text reaches no model"
        assert text(b.call("chatty__note")) == "noted"
        assert text(b.call("chatty__reword")) == "reworded"
        # Held for both: listed to neither, the new text reaches neither, calls refused.
        wait_for(lambda: "chatty__note" not in listed(a) and "chatty__note" not in listed(b), 10, "the changed tool held")
        for s in (a, b):
            assert held_error(s.call("chatty__note")), s.call("chatty__note")
            assert REWORDED not in json.dumps(s.rpc("tools/list", {}))
        assert svc.changes("held") == 1
        trail = lambda: [x for x in svc.audit_lines() if x["event"] == "tool_changed"]
        wait_for(lambda: any(x["tool"] == "chatty__note" and x["outcome"] == "held" for x in trail()), 5, f"the change in the trail: {trail()}")
        assert "description" in trail()[0]["detail"] and "->" in trail()[0]["detail"], trail()[0]
        # bob may neither see held changes nor accept them.
        for tool, args in (("_ui_tool_changes", {}), ("_ui_accept_tool_change", {"server": "chatty", "toolName": "note", "fingerprint": "0" * 64})):
            refused = b.call(tool, **args)
            assert refused.get("error", {}).get("code") == -32003, refused
        assert "chatty__note" not in listed(b)
        # The command line shows an admin the same, and refuses bob.
        cli = pins_cli(svc, "alice")
        assert cli.returncode == 0 and "chatty/note (listed as chatty__note)" in cli.stdout and REWORDED in cli.stdout, cli
        assert "was: Answers noted" in cli.stdout and "--accept chatty/note --fingerprint " in cli.stdout, cli.stdout
        refused = pins_cli(svc, "bob")
        assert refused.returncode == 1 and "not allowed" in refused.stderr and REWORDED not in refused.stdout + refused.stderr, refused
        # alice sees what changed, and accepts it only at the fingerprint she was shown.
        shown = a.call("_ui_tool_changes")["result"]["structuredContent"]["held"]
        assert [(h["server"], h["tool"], h["name"]) for h in shown] == [("chatty", "note", "chatty__note")], shown
        assert shown[0]["changed"] == ["description"] and REWORDED in shown[0]["diff"]["description"]["now"]
        assert shown[0]["diff"]["description"]["was"] == "Answers noted"
        stale = a.call("_ui_accept_tool_change", server="chatty", toolName="note", fingerprint="0" * 64)["result"]
        assert stale.get("isError") and "changed again" in stale["content"][0]["text"], stale
        assert "chatty__note" not in listed(b)
        ok = a.call("_ui_accept_tool_change", server="chatty", toolName="note", fingerprint=shown[0]["fingerprint"])["result"]
        assert not ok.get("isError") and ok["structuredContent"]["accepted"]["name"] == "chatty__note", ok
        # Back for both, as it is now.
        wait_for(lambda: "chatty__note" in listed(b), 10, "the accepted tool back for bob")
        assert REWORDED in listed(a)["chatty__note"]["description"]
        assert text(b.call("chatty__note")) == "noted"
        assert svc.changes("accepted") == 1
        wait_for(lambda: any(x["event"] == "admin_action" and x["principal"] == "alice" and x.get("tool") == "chatty__note"
                             for x in svc.audit_lines()), 5, "alice's acceptance in the trail")
        # The accepted definition is kept on disk.
        pins = tmp_path / "cache" / "state" / "tool-pins.json"
        wait_for(lambda: any(r["tool"] == "note" and r["fingerprint"] == shown[0]["fingerprint"] for r in json.loads(pins.read_text())), 5, "the pin on disk")
        finish(alice, bob, grace=0)
    # A restart: the server is back to the old text, which differs from the accepted one: held.
    with service(tmp_path, {"onToolChange": "hold"}, name="proxy-pins-again") as svc, contextlib.ExitStack() as stack:
        alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
        a = Session(svc, alice, "A", caps=UI)
        wait_for(lambda: "chatty__whoami" in listed(a), 20, "chatty listed")
        assert "chatty__note" not in listed(a), "the pin survived the restart"
        assert held_error(a.call("chatty__note"))
        finish(alice, bob, grace=0)


def test_a_new_tool_is_held_with_on_new_tool_hold(tmp_path):
    with service(tmp_path, {"onNewTool": "hold"}) as svc, contextlib.ExitStack() as stack:
        alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
        a, b = Session(svc, alice, "A", caps=UI), Session(svc, bob, "B", caps=UI)
        # At the first start every tool is new: all held, none listed, until accepted.
        wait_for(lambda: [h for h in a.call("_ui_tool_changes")["result"]["structuredContent"]["held"] if h["tool"] == "grow"], 20, "grow held")
        assert not [n for n in listed(b) if n.startswith("chatty__")]
        assert held_error(b.call("chatty__grow"))
        unseen = pins_cli(svc, "alice", "--accept", "chatty/grow")
        assert unseen.returncode == 2 and "--fingerprint" in unseen.stderr, "never accepted unseen"
        grow = [h for h in a.call("_ui_tool_changes")["result"]["structuredContent"]["held"] if h["tool"] == "grow"][0]
        accepted = pins_cli(svc, "alice", "--accept", "chatty/grow", "--fingerprint", grow["fingerprint"])
        assert accepted.returncode == 0 and "accepted chatty/grow (chatty__grow)" in accepted.stdout, accepted
        wait_for(lambda: "chatty__grow" in listed(b), 10, "grow accepted")
        assert text(b.call("chatty__grow")) == "grown"
        # The tool it adds is held in turn.
        wait_for(lambda: any(h["tool"] == "erase" and h["new"] for h in a.call("_ui_tool_changes")["result"]["structuredContent"]["held"]), 10, "erase held")
        assert "chatty__erase" not in listed(a) and held_error(a.call("chatty__erase"))
        assert svc.changes("new_held") >= 2
        finish(alice, bob, grace=0)


def test_by_default_a_change_passes_and_is_told(tmp_path):
    with service(tmp_path, {}) as svc, contextlib.ExitStack() as stack:
        alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
        a, b = Session(svc, alice, "A", caps=UI), Session(svc, bob, "B", caps=UI)
        wait_for(lambda: "chatty__note" in listed(a), 20, "chatty listed")
        assert "_ui_tool_changes" not in listed(a), "nothing can be held: the admin tools are not listed"
        b.call("chatty__reword")
        wait_for(lambda: REWORDED in listed(a)["chatty__note"]["description"], 10, "the change passed")
        assert text(b.call("chatty__note")) == "noted"
        assert svc.changes("passed") == 1 and svc.changes("held") == 0
        wait_for(lambda: any(x["event"] == "tool_changed" and x["outcome"] == "passed" for x in svc.audit_lines()), 5, "in the trail")
        finish(alice, bob, grace=0)


def test_replicas_hold_a_change_together_and_one_acceptance_releases_it_on_both(tmp_path):
    port = free_port()
    from conftest import Proc

    server = Proc("chatty-http-pins", [sys.executable, str(CHATTY), "--http", str(port)])
    redis = Redis()
    try:
        wait_port(port)
        servers = {"chatty": {"url": f"http://127.0.0.1:{port}/mcp"}}
        extra = {"cache": {"type": "redis", "redisUrl": redis.url}}
        (tmp_path / "r1").mkdir()
        (tmp_path / "r2").mkdir()
        with service(tmp_path / "r1", {"onToolChange": "hold"}, servers, extra, name="pins-r1") as r1, \
                service(tmp_path / "r2", {"onToolChange": "hold"}, servers, extra, name="pins-r2") as r2, contextlib.ExitStack() as stack:
            alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
            a1, b2 = Session(r1, alice, "A1", caps=UI), Session(r2, bob, "B2", caps=UI)
            wait_for(lambda: "chatty__note" in listed(a1) and "chatty__note" in listed(b2), 20, "listed on both")
            b2.call("chatty__reword")
            wait_for(lambda: "chatty__note" not in listed(a1) and "chatty__note" not in listed(b2), 10, "held on both replicas")
            assert held_error(b2.call("chatty__note"))
            shown = a1.call("_ui_tool_changes")["result"]["structuredContent"]["held"]
            assert not a1.call("_ui_accept_tool_change", server="chatty", toolName="note", fingerprint=shown[0]["fingerprint"])["result"].get("isError")
            wait_for(lambda: "chatty__note" in listed(b2), 10, "released on the other replica by the acceptance on the first")
            assert text(b2.call("chatty__note")) == "noted"
            finish(alice, bob, grace=0)
    finally:
        redis.stop()
        server.stop()
