"""Issue 53: a plain tool result from a stdio server goes to the host as the server wrote it
(`mcp::relayed`: routed by its id, the host's id written in front of the result's own bytes),
only to the person whose call it answers, and counted and audited as a tree would be: a tool
error is a `tool_error` in the trail. as_read_upstream.py writes its answers by hand (spaces,
its own key order, escapes), so what reaches the host shows which way the answer went."""

import http.client
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import BIN, proxy_http, wait_for

UPSTREAM = Path(__file__).parent / "as_read_upstream.py"
TOKENS = {"alice": "alice-token-53-3d9f1c7e2b", "bob": "bob-token-53-8a6e4f0c5d19"}
VERSION = "2025-06-18"


class Host:
    def __init__(self, base: str, person: str):
        self.port = int(base.rsplit(":", 1)[1])
        self.person, self.sid = person, None
        status, headers, body = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                           "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": person, "version": "1"}}})
        assert status == 200, (status, body)
        self.sid = headers["Mcp-Session-Id"]
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})[0] == 202

    def post(self, msg: dict) -> tuple:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {TOKENS[self.person]}"}
        if self.sid:
            headers.update({"Mcp-Session-Id": self.sid, "MCP-Protocol-Version": VERSION})
        try:
            c.request("POST", "/mcp", json.dumps(msg), headers)
            r = c.getresponse()
            return r.status, r.headers, r.read()
        finally:
            c.close()

    def call(self, rid, tool: str, **args) -> bytes:
        status, headers, body = self.post({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": tool, "arguments": args}})
        assert status == 200 and headers.get("Content-Type", "").startswith("application/json"), (status, headers, body)
        return body


def test_a_plain_result_goes_as_written_to_the_one_who_asked_and_is_audited_as_a_tree_would_be(tmp_path):
    audit = tmp_path / "audit.jsonl"
    (tmp_path / "config.json").write_text(json.dumps({"audit": {"file": str(audit)}}))
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
    argv = ["--upstream", f"{sys.executable} {UPSTREAM}", "--config", str(tmp_path / "config.json"), *tokens]
    with proxy_http(argv, name="proxy-as-read") as (base, _proc):
        alice, bob = Host(base, "alice"), Host(base, "bob")
        # Both people use the same JSON-RPC id, in flight at once; bob's answer comes first.
        with ThreadPoolExecutor(2) as pool:
            a = pool.submit(alice.call, 7, "echo", text="CANARY-ALICE-53", ms=600)
            time.sleep(0.1)
            b = pool.submit(bob.call, 7, "echo", text="CANARY-BOB-53", ms=50)
            alice_body, bob_body = a.result(), b.result()
        for body, mine, theirs in ((alice_body, b"CANARY-ALICE-53", b"CANARY-BOB-53"), (bob_body, b"CANARY-BOB-53", b"CANARY-ALICE-53")):
            assert mine in body and theirs not in body, body
            # The result's own bytes, spaces and escapes as the server wrote them.
            assert b'"spaced" : [1, 2], "name": "\\u00e9t\\u00e9"}' in body, body
            answer = json.loads(body)
            assert answer == {"jsonrpc": "2.0", "id": 7, "result": {
                "content": [{"type": "text", "text": mine.decode()}], "spaced": [1, 2], "name": "été"}}, answer
        # A string id of the host's own comes back as it was.
        assert json.loads(alice.call("ask \"1\"", "echo", text="x"))["id"] == "ask \"1\""

        failed = json.loads(bob.call(8, "fail", text="CANARY-FAIL-53"))
        assert failed == {"jsonrpc": "2.0", "id": 8, "result": {"isError": True, "content": [{"type": "text", "text": "CANARY-FAIL-53"}]}}

        def calls():
            lines = [json.loads(x) for x in audit.read_text().splitlines() if x.strip()] if audit.exists() else []
            calls = [(x["principal"], x.get("tool"), x["outcome"]) for x in lines if x["event"] == "tool_call"]
            return calls if len(calls) >= 4 else None

        got = wait_for(calls, 10, "the four calls in the trail")
        assert sorted(got) == [("alice", "echo", "ok"), ("alice", "echo", "ok"), ("bob", "echo", "ok"), ("bob", "fail", "tool_error")], got


def test_a_host_on_stdio_gets_the_result_as_written_too():
    proc = subprocess.Popen([str(BIN), "--transport", "stdio", "--upstream", f"{sys.executable} {UPSTREAM}", "--log-level", "warn"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        def send(msg):
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            proc.stdin.flush()

        def answer_to(rid) -> bytes:
            while True:
                line = proc.stdout.readline()
                assert line, "the proxy ended"
                if json.loads(line).get("id") == rid:
                    return line

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        answer_to(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": "c-2", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "CANARY-STDIO-53"}}})
        line = answer_to("c-2")
        assert b'"spaced" : [1, 2], "name": "\\u00e9t\\u00e9"}' in line, line
        assert json.loads(line)["result"]["content"] == [{"type": "text", "text": "CANARY-STDIO-53"}]
    finally:
        proc.kill()
        proc.wait()
