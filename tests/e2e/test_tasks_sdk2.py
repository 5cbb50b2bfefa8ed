"""Issue 63: the official TypeScript SDK v2 client (`@modelcontextprotocol/client` 2.4, 2026-07-28
mode, as a host uses it: tests/node/sdk2-client.mjs) calls server-everything's task-only tool
through the service over Streamable HTTP, without the tasks extension (the service runs the call
as a task: each status as progress, a clarification as an input round, the POST aborted cancels
the task) and with it (through `@modelcontextprotocol/ext-tasks` 0.2: a task polled to its
outcome, a clarification answered by tasks/update, tasks/cancel). Two people: alice's and bob's
tokens, canaries in each topic, and neither's run hears the other's."""

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import NODE, ROOT, everything_http, proxy_http, wait_for

CLIENT = ROOT / "tests" / "node" / "sdk2-client.mjs"
TOKENS = {"alice": "alice-token-63-1c9e7a2b5d", "bob": "bob-token-63-8e2f4a6c0b"}
STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."]


@pytest.fixture(scope="module")
def svc():
    with everything_http("streamableHttp") as url:
        argv = ["--upstream-url", url, "--log-format", "json"]
        argv += [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
        with proxy_http(argv, name="proxy-tasks-sdk2") as (base, proc):
            yield type("Svc", (), {"base": base, "proc": proc})()


def run(svc, who: str, variant: str, *flags: str) -> list[dict]:
    out = subprocess.run([NODE, str(CLIENT), svc.base + "/mcp", variant, "--token", TOKENS[who], *flags],
                         capture_output=True, text=True, timeout=120)
    events = [json.loads(x) for x in out.stdout.splitlines() if x.startswith("{")]
    assert out.returncode == 0, f"sdk2-client {variant} failed: {out.stdout[-3000:]} {out.stderr[-2000:]}"
    return events


def of(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["event"] == kind]


def no_errors(events: list[dict]):
    """The client saw nothing it could not take (a progress under a token it does not know is one)."""
    assert not of(events, "client_onerror") and not of(events, "error"), [e for e in events if "error" in e["event"]]


def test_without_the_extension_the_call_is_run_as_a_task_for_each_person(svc):
    def alice():
        return run(svc, "alice", "plain", "--topic", "alice-canary-63a tide pools")

    def bob():
        return run(svc, "bob", "plain", "--topic", "bob-canary-63b coral")

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.submit(alice), pool.submit(bob)
        got = {"alice": a.result(), "bob": b.result()}
    for who, events in got.items():
        no_errors(events)
        connected = of(events, "connected")[0]
        assert connected["era"] == "modern" and connected["protocolVersion"] == "2026-07-28", connected
        listed = of(events, "tool_listed")[0]
        assert listed["found"] and not listed.get("execution"), f"a plain tool to a host without the extension: {listed}"
        said = [p.get("message") for p in of(events, "progress")]
        assert list(dict.fromkeys(s for s in said if s in STAGES)) == STAGES, f"{who}: every status, in order: {said}"
        result = of(events, "result")[0]
        mine, theirs = ("alice-canary-63a", "bob-canary-63b") if who == "alice" else ("bob-canary-63b", "alice-canary-63a")
        assert mine in result["text"] and not result["isError"], result
        assert theirs not in json.dumps(events), f"{who} heard the other's call"


def test_without_the_extension_a_clarification_is_an_input_round_and_its_progress_keeps_coming(svc):
    """The SDK answers the input_required result and retries with a new request and a new
    progress token: what the task says after goes out under the retry's token (under the first
    one the SDK drops it as unknown, and the host sees no status after a clarification)."""
    events = run(svc, "alice", "plain", "--ambiguous", "--topic", "alice-canary-63c jaguar")
    no_errors(events)
    assert of(events, "elicitation"), "the clarification was asked"
    asked = next(i for i, e in enumerate(events) if e["event"] == "elicitation")
    after = [e.get("message") for e in events[asked:] if e["event"] == "progress"]
    assert "Generating report..." in after, f"statuses after the clarification: {after}; all: {of(events, 'progress')}"
    result = of(events, "result")[0]
    assert "alice-canary-63c jaguar meaning" in result["text"], result


def test_without_the_extension_aborting_the_call_cancels_its_task(svc):
    events = run(svc, "bob", "cancel", "--topic", "bob-canary-63d abandon")
    assert of(events, "aborting") and of(events, "call_rejected"), events

    def cancelled():
        lines = [json.loads(x) for x in svc.proc.log_path.read_text().splitlines() if x.startswith("{")]
        return [x for x in lines if x.get("event") == "bridged_task_cancelled" and x.get("status") == "cancelled"]
    wait_for(cancelled, 15, "the task the call ran as cancelled on server-everything")


def test_with_the_extension_ext_tasks_polls_the_task_to_its_result(svc):
    events = run(svc, "alice", "tasks", "--topic", "alice-canary-63e reefs")
    no_errors(events)
    assert of(events, "execution")[0]["kind"] == "task", events
    statuses = [e.get("statusMessage") for e in of(events, "task_event") if e.get("status") == "working"]
    assert any(s in STAGES for s in statuses), f"the task's statuses, polled: {statuses}"
    assert of(events, "outcome")[0]["status"] == "completed", of(events, "task_failed") or events[-5:]
    assert "alice-canary-63e reefs" in of(events, "result")[0]["text"]


def test_with_the_extension_a_clarification_is_answered_by_tasks_update(svc):
    events = run(svc, "bob", "tasks", "--ambiguous", "--topic", "bob-canary-63f python")
    no_errors(events)
    assert of(events, "input_request"), "ext-tasks was asked (input_required)"
    assert of(events, "outcome")[0]["status"] == "completed", of(events, "task_failed") or events[-5:]
    assert "bob-canary-63f python meaning" in of(events, "result")[0]["text"]


def test_with_the_extension_tasks_cancel_cancels_it(svc):
    events = run(svc, "alice", "tasks-cancel", "--topic", "alice-canary-63g stop")
    assert of(events, "cancel_acked"), events
    assert of(events, "outcome")[0]["status"] == "cancelled", events[-5:]
