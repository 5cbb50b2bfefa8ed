"""Issue 60: whose a message is, known by construction and never guessed from timing; each
person's share of what the service holds. alice and bob (the attacker) side by side with
canaries (the people and channels of test_isolation.py) in front of:

- `shared`: a stdio server (chatty_upstream.py) both use. Its pipe cannot say whose a request
  or log line is, so it is not offered sampling, elicitation or roots, and what it says naming
  no call goes to no one (it asks anyway, as careless servers do: refused, never guessed);
- `mine`: the same server run per person (`perPrincipal`): all it says is its person's;
- `web`: the same server over Streamable HTTP: what a call says on the call's own stream is
  that call's;
- `tasks`: a stdio server with tasks (tasks_upstream.py) whose statuses name their task;
- `big`: the stdio server with an 8 KB message limit.

Each finding of the hostile review (round 6) is reproduced here: every test first checks that
what must arrive did, and each negative check waits longer than what it rules out could take."""

import json
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Proc, free_port, proxy_http, wait_for, wait_port
from test_auth import request
from test_isolation import ALL_CAPS, METRICS_TOKEN, Listen, Session, Stateless, finish, learn_mine, pair, text
from test_teams import scrape_with

HERE = Path(__file__).parent
CHATTY, TASKS = HERE / "chatty_upstream.py", HERE / "tasks_upstream.py"
TOKENS = {"alice": "alice-token-41-8f3c2e1d9a", "bob": "bob-token-41-5b7e0c4a1f6d"}
TASKS_CAPS = {"tasks": {"list": {}, "cancel": {}}, "elicitation": {}}
PER_PERSON_TASKS = 20
NOTIFICATIONS_PER_SECOND = 20


class Svc:
    def __init__(self, base, proc, folder, web_port):
        self.base, self.proc, self.folder, self.web_port = base, proc, folder, web_port

    def metric(self, name: str, **labels) -> float:
        samples = scrape_with(self.base, METRICS_TOKEN)
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    def kept_back(self, server: str, kind: str, reason: str) -> float:
        return self.metric("mcp_gen_ui_kept_back_total", server=server, kind=kind, reason=reason)

    def refused(self, server: str, method: str, reason: str) -> float:
        return self.metric("mcp_gen_ui_server_requests_refused_total", server=server, method=method, reason=reason)

    def audit_lines(self) -> list[dict]:
        path = self.folder / "audit.jsonl"
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []

    def log_lines(self) -> list[dict]:
        return [json.loads(x) for x in (self.folder / "service.log").read_text().splitlines() if x.startswith("{")]


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whose")
    web_port = free_port()
    web = Proc(f"chatty-web-{web_port}", [sys.executable, str(CHATTY), "--http", str(web_port)])
    chatty = {"command": sys.executable, "args": [str(CHATTY)]}
    servers = {
        "shared": chatty,
        "mine": {**chatty, "perPrincipal": True},
        "web": {"type": "http", "url": f"http://127.0.0.1:{web_port}/mcp", "maxMessageBytes": 65536},
        "tasks": {"command": sys.executable, "args": [str(TASKS)]},
        "big": {**chatty, "maxMessageBytes": 8192},
    }
    (folder / "servers.json").write_text(json.dumps({"mcpServers": servers}))
    config = {"logging": {"file": str(folder / "service.log"), "level": "debug"},
              "audit": {"file": str(folder / "audit.jsonl"), "required": True},
              "server": {"sseKeepaliveSecs": 1},
              "limits": {"tasksPerPerson": PER_PERSON_TASKS, "hostNotificationsPerSecond": NOTIFICATIONS_PER_SECOND,
                         "maxSessions": 40, "maxSessionsPerPrincipal": 10}}
    (folder / "config.json").write_text(json.dumps(config))
    tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
    try:
        wait_port(web_port)
        argv = ["--servers-file", str(folder / "servers.json"), "--config", str(folder / "config.json"), "--log-format", "json", *tokens]
        with proxy_http(argv, name="proxy-whose") as (base, proc):
            service = Svc(base, proc, folder, web_port)
            learn_mine(service)
            yield service
    finally:
        web.stop()


@pytest.fixture
def people(svc):
    yield from pair()


def declared(s: Session, server: str) -> dict:
    return s.call(f"{server}__capabilities")["result"]["structuredContent"]["declared"]


def hears(s: Session, marker: str) -> list:
    return s.got(lambda m: marker in json.dumps(m))


def pinging(s: Session, stop: threading.Event, every: float = 0.2) -> threading.Thread:
    """bob's ping every `every` seconds until `stop`: a request of his always in flight or just ended."""
    def run():
        while not stop.is_set():
            s.rpc("ping", {}, timeout=10)
            stop.wait(every)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def batch(s: Session, msgs: list, timeout: float = 60) -> list:
    """POSTs a JSON-RPC batch on `s`; the answers (an SSE stream or a JSON array)."""
    status, headers, body = request(s.base + "/mcp", "POST", msgs, headers=s.headers(), timeout=timeout)
    assert status in (200, 202), (status, body[:300])
    s.hear("batch", body)
    if (headers.get("content-type") or "").startswith("text/event-stream"):
        out = []
        for line in body.splitlines():
            if line.startswith("data:") and line[5:].strip():
                got = json.loads(line[5:])
                out.extend(got if isinstance(got, list) else [got])
        return [m for m in out if "method" not in m]
    got = json.loads(body) if body.strip() else []
    return got if isinstance(got, list) else [got]


# --- findings 2 and 3: what names no call on a shared pipe is no one's -------------------------------------


def test_a_shared_stdio_server_is_not_invited_to_ask_and_what_names_no_call_reaches_no_one(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A", caps=ALL_CAPS, level="debug")
    b = Session(svc, bob, "B", caps=ALL_CAPS, level="debug")
    # Offered only where whose a request is can be known.
    assert declared(a, "shared") == {}, "a pipe several people share is not invited to ask"
    assert {"sampling", "elicitation", "roots"} <= set(declared(a, "web")), "a call's own stream says whose"
    assert {"sampling", "elicitation", "roots"} <= set(declared(a, "mine")), "a person's own process is theirs"
    before = {m: svc.refused("shared", m, "owner_unknown") for m in ("sampling/createMessage", "elicitation/create")}
    kept = svc.kept_back("shared", "log", "owner_unknown")
    # alice alone calls: the server asks anyway; it is refused (she is not asked, nor is bob).
    for tool, method in (("shared__ask", "sampling/createMessage"), ("shared__confirm", "elicitation/create")):
        got = text(a.call(tool, text=f"{alice.tag} my diary via {tool}"))
        assert got.startswith("refused: ") and "shared by several people" in got, got
        wait_for(lambda: svc.refused("shared", method, "owner_unknown") >= before[method] + 1, 5, f"{method} refused: owner_unknown")
    # Its log lines, during her call and after it: to no one, counted.
    assert text(a.call("shared__log", text=f"{alice.tag} during the call")) == "logged"
    assert text(a.call("shared__log", text=f"{alice.tag} after the call", after_ms=300)) == "logged"
    wait_for(lambda: svc.kept_back("shared", "log", "owner_unknown") >= kept + 2, 5, "both lines kept back")
    # The same lines of her own process reach her (what must arrive does).
    assert text(a.call("mine__log", text=f"{alice.tag} mine after", after_ms=300)) == "logged"
    a.wait(lambda m: f"{alice.tag} mine after" in json.dumps(m), "her own process's line")
    time.sleep(0.5)
    assert not a.asked and not bob.asked, (a.asked, bob.asked)
    assert not a.logs(f"{alice.tag} during") and not a.logs(f"{alice.tag} after the call"), a.logs()
    assert not b.logs(), f"bob heard {b.logs()}"
    # The service's own log says what it kept back, never what the line held.
    wait_for(lambda: [x for x in svc.log_lines() if x.get("event") == "kept_back" and x.get("server") == "shared"], 5, "kept back, logged")
    assert alice.tag.lower() not in (svc.folder / "service.log").read_text().lower()
    finish(alice, bob)


# --- finding 2: bob pinging or holding a task silences no one --------------------------------------------


def test_bob_pinging_and_holding_a_task_leave_alice_every_request_and_line_of_her_calls(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A", caps=ALL_CAPS, level="info")
    b = Session(svc, bob, "B", caps=ALL_CAPS, level="debug")
    b_tasks = Session(svc, bob, "B-tasks", caps=TASKS_CAPS)
    held = b_tasks.rpc("tools/call", {"name": "tasks__research", "arguments": {"topic": f"{bob.tag} long", "seconds": 30, "every_ms": 2000},
                                      "task": {"ttl": 60000}})
    task = held["result"]["task"]["taskId"]
    stop = threading.Event()
    with ThreadPoolExecutor(2) as pool:
        waiting = pool.submit(b_tasks.rpc, "tasks/result", {"taskId": task}, 60)  # his task held open the whole time
        ping = pinging(b, stop)
        try:
            for n in range(5):
                for server in ("web", "mine"):
                    question = f"{alice.tag} {server} question {n}"
                    assert text(a.call(f"{server}__ask", text=question)) == f"sampled: {alice.tag} answers [{question}]"
                    assert text(a.call(f"{server}__log", text=f"{alice.tag} {server} line {n}")) == "logged"
        finally:
            stop.set()
            ping.join(10)
        for n in range(5):
            for server in ("web", "mine"):
                a.wait(lambda m: m.get("method") == "notifications/message" and f"{alice.tag} {server} line {n}" in json.dumps(m),
                       f"{server}'s line {n}")
        assert len([r for _, r in a.asked if r["method"] == "sampling/createMessage"]) == 10, "every one of her server's requests"
        b_tasks.rpc("tasks/cancel", {"taskId": task})
        try:
            waiting.result(30)
        except AssertionError:
            pass
    assert not bob.asked and not hears(b, alice.tag), (bob.asked, hears(b, alice.tag))
    finish(alice, bob)


def test_what_a_shared_pipe_asks_inside_a_task_goes_to_its_owner_while_bob_calls_across_it(svc, people):
    """The tasks server is a stdio pipe both share (not offered asking), yet what it asks inside
    alice's task names the task: hers, though bob's call is in flight from before the task
    until after the ask, and his is the only call in flight when it comes."""
    alice, bob = people
    a = Session(svc, alice, "A", caps=TASKS_CAPS)
    b = Session(svc, bob, "B", caps={**TASKS_CAPS, **ALL_CAPS})
    with ThreadPoolExecutor(2) as pool:
        his = pool.submit(b.call, "tasks__hold", ms=6000)
        time.sleep(0.3)
        task = start_task(a, f"{alice.tag} jaguar", 0.5, 100, ambiguous=True)
        got = a.rpc("tasks/result", {"taskId": task}, timeout=30)
        assert not his.done(), "bob's call spans the ask"
        assert text(his.result(30)) == "held"
    asked = [r for _, r in a.asked if r["method"] == "elicitation/create"]
    assert len(asked) == 1 and asked[0]["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task, a.asked
    assert f'"by": "{alice.tag}"' in text(got), f"her answer shaped her report: {got}"
    assert not bob.asked and not hears(b, alice.tag), (bob.asked, hears(b, alice.tag))
    finish(alice, bob)


# --- finding 1: a task flood ----------------------------------------------------------------------------------


def start_task(s: Session, topic: str, seconds: float, every_ms: int = 500, ambiguous: bool = False) -> str:
    args = {"topic": topic, "seconds": seconds, "every_ms": every_ms, "ambiguous": ambiguous}
    got = s.rpc("tools/call", {"name": "tasks__research", "arguments": args,
                               "task": {"ttl": 60000}})
    assert "task" in got.get("result", {}), got
    return got["result"]["task"]["taskId"]


def statuses(s: Session, marker: str) -> list:
    return s.got(lambda m: m.get("method") == "notifications/tasks/status" and marker in json.dumps(m))


def test_bobs_task_flood_leaves_alices_tasks_hers_and_an_unknown_tasks_status_goes_to_no_one(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A", caps=TASKS_CAPS)
    long_one = start_task(a, f"{alice.tag} long", seconds=25, every_ms=300)
    short_one = start_task(a, f"{alice.tag} short", seconds=25, every_ms=1000)
    a.wait(lambda m: m.get("method") == "notifications/tasks/status" and f"{alice.tag} long" in json.dumps(m), "her first status")
    floods = [Session(svc, bob, f"B{i}", caps=TASKS_CAPS) for i in range(4)]

    def flood(s: Session, rounds: int = 10) -> int:
        made = 0
        for r in range(rounds):
            msgs = [{"jsonrpc": "2.0", "id": f"{s.label}-{r}-{i}", "method": "tools/call",
                     "params": {"name": "tasks__research", "arguments": {"topic": f"{bob.tag} flood", "seconds": 0.3, "every_ms": 100},
                                "task": {"ttl": 60000}}} for i in range(10)]
            made += sum(1 for m in batch(s, msgs) if "task" in m.get("result", {}))
        return made

    seen_before = len(statuses(a, f"{alice.tag} long"))
    with ThreadPoolExecutor(4) as pool:
        made = sum(pool.map(flood, floods))
    assert made == 400, f"bob's 400 tasks were each made: {made}"
    # His share holds his newest; every one of alice's is still hers.
    assert len(floods[0].rpc("tasks/list", {})["result"]["tasks"]) <= PER_PERSON_TASKS
    for task in (long_one, short_one):
        got = a.rpc("tasks/get", {"taskId": task})
        assert got["result"]["taskId"] == task and got["result"]["status"] == "working", f"alice's task after bob's flood: {got}"
    wait_for(lambda: len(statuses(a, f"{alice.tag} long")) > seen_before + 2, 10, "her statuses go on coming to her")
    assert not hears(floods[0], alice.tag) and not any(hears(f, alice.tag) for f in floods), "bob never hears her tasks"
    # Her own flood makes room from her own oldest: its statuses then name a task the service no
    # longer knows, and go to no one, while bob has a call in flight and listens for everything.
    b = Session(svc, bob, "B-listening", caps=ALL_CAPS, level="debug")
    before = svc.kept_back("tasks", "notification", "unknown_task")
    with ThreadPoolExecutor(1) as pool:
        holding = pool.submit(b.call, "tasks__hold", ms=4000)
        for n in range(PER_PERSON_TASKS):
            start_task(a, f"{alice.tag} mine {n}", seconds=0.2)
        assert "error" in a.rpc("tasks/get", {"taskId": long_one}), "her oldest made room for her newest"
        wait_for(lambda: svc.kept_back("tasks", "notification", "unknown_task") >= before + 3, 10, "its statuses kept back")
        assert text(holding.result(30)) == "held"
    gone = len(statuses(a, f"{alice.tag} long"))
    time.sleep(1.0)  # three more of its statuses (every 0.3 s) would have come by now
    assert len(statuses(a, f"{alice.tag} long")) == gone, "an unknown task's status is not hers either"
    assert not hears(b, alice.tag), f"bob heard her: {hears(b, alice.tag)}"
    finish(alice, bob)


# --- finding 4: an oversized answer fails only the call it answers ---------------------------------------


def test_an_oversized_answer_fails_only_the_call_it_answers(svc, people):
    alice, bob = people
    a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
    with ThreadPoolExecutor(1) as pool:
        hers = pool.submit(a.call, "big__hold", ms=3000)
        ids = wait_for(lambda: b.call("big__inflight")["result"]["structuredContent"]["ids"], 5, "her call in flight on the server")
        # bob's arguments carry her upstream id first; the server writes its own id last.
        his = b.call("big__echo_big", id=ids[0], note=f"{bob.tag} trick", pad=20_000)
        assert "error" in his and "limit" in his["error"]["message"], f"bob's own call fails: {his}"
        assert text(hers.result(30)) == "held", "alice's call is untouched"
    # A line naming no request whose data holds her id, on a Streamable HTTP server's GET stream.
    big_web = Session(svc, alice, "A-web")
    with ThreadPoolExecutor(1) as pool:
        hers = pool.submit(big_web.call, "web__hold", ms=3000)
        ids = wait_for(lambda: b.call("web__inflight")["result"]["structuredContent"]["ids"], 5, "her call in flight on web")
        bad = svc.metric("mcp_gen_ui_upstream_bad_frames_total", server="web")
        assert text(b.call("web__shout_big", id=ids[0], pad=200_000, after_ms=200)) == "will shout"
        wait_for(lambda: svc.metric("mcp_gen_ui_upstream_bad_frames_total", server="web") > bad, 10, "the oversized line counted")
        assert text(hers.result(30)) == "held", "alice's call is untouched by a line that answers nothing"
    finish(alice, bob)


# --- finding 5: a notification flood ---------------------------------------------------------------------


def test_a_notification_flood_neither_drops_alices_trail_lines_nor_refuses_her_calls(svc, people):
    alice, bob = people
    a = Session(svc, alice, "A")
    floods = [Session(svc, bob, f"B{i}") for i in range(4)]
    stop = threading.Event()
    sent = [0] * 4
    refused_before = svc.metric("mcp_gen_ui_refusals_total", reason="host_notifications")

    def flood(i: int):
        s = floods[i]
        msgs = [{"jsonrpc": "2.0", "method": "notifications/x-flood/said", "params": {"n": n, "by": bob.tag}} for n in range(100)]
        while not stop.is_set():
            status, _, _ = request(s.base + "/mcp", "POST", msgs, headers=s.headers(), timeout=10)
            assert status == 202, status
            sent[i] += len(msgs)

    threads = [threading.Thread(target=flood, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        answers = [a.call("mine__whoami", rid=f"alice-{uuid.uuid4().hex[:6]}-{n}") for n in range(10)]
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert all("result" in x for x in answers), f"every call of hers answered: {answers}"
    flooded = sum(sent)
    assert flooded > 2000, f"bob flooded: {flooded}"
    wait_for(lambda: svc.metric("mcp_gen_ui_refusals_total", reason="host_notifications") > refused_before, 5, "his excess refused, counted")

    def lines():
        out = svc.audit_lines()
        mine = [x for x in out if x["principal"] == "alice" and x["event"] == "tool_call" and x.get("tool") == "mine__whoami"]
        his = [x for x in out if x["principal"] == "bob" and x["event"] == "notification"]
        return mine, his
    wait_for(lambda: len(lines()[0]) >= 10, 10, "every call of hers in the trail")
    assert len(lines()[1]) < flooded / 10, f"his flood passed the rate: {len(lines()[1])} of {flooded} forwarded"
    finish(alice, bob)


def test_a_batch_over_the_bound_is_refused_whole(svc, people):
    alice, bob = people
    b = Session(svc, bob, "B")
    msgs = [{"jsonrpc": "2.0", "method": "notifications/x-flood/said", "params": {"n": n}} for n in range(101)]
    status, _, body = request(b.base + "/mcp", "POST", msgs, headers=b.headers(), timeout=10)
    assert status == 400 and "limits.maxBatchMessages" in body, (status, body[:300])
    finish(alice, bob)


# --- finding 6: 2026 stateless calls and listens have a share ------------------------------------------


def test_bobs_idle_listens_never_refuse_alices_2026_call(svc, people):
    alice, bob = people
    listens = []
    try:
        for i in range(10):  # his share of the stateless places (limits.maxSessionsPerPrincipal)
            listens.append(Listen(svc, bob, f"L{i}", {"toolsListChanged": True}))
            listens[-1].ack()
        with pytest.raises(AssertionError, match="503"):
            Listen(svc, bob, "L-over", {"toolsListChanged": True})
        s = Stateless(svc, alice, "S-A")
        assert text(s.call("mine__log", text=f"{alice.tag} stateless")) == "logged", "alice's 2026 call has her own place"
        assert svc.metric("mcp_gen_ui_refusals_total", reason="max_sessions_per_principal") >= 1
    finally:
        for listen in listens:
            listen.stop()
    finish(alice, bob)


# --- finding 7: task routes in Redis ------------------------------------------------------------------------------


def test_a_task_route_in_redis_stays_its_makers(tmp_path, people):
    """Two replicas, each with its own stdio server that hands out the same first task id: bob's
    task made through one never takes alice's route, written through the other."""
    import contextlib

    from replica_peers import Redis, wait_redis_status
    alice, bob = people
    redis = Redis()
    try:
        tokens = [a for p, t in TOKENS.items() for a in ("--auth-token", f"{p}:{t}")]
        with contextlib.ExitStack() as stack:
            reps = []
            for i in (1, 2):
                argv = ["--upstream", f"{sys.executable} {TASKS}", "--redis-url", redis.url, "--log-format", "json", *tokens]
                base, proc = stack.enter_context(proxy_http(argv, name=f"proxy-whose-rep{i}"))
                wait_redis_status(base, "ok")
                reps.append(type("Rep", (), {"base": base, "proc": proc})())
            mine = Session(reps[0], alice, "A-rep1", caps=TASKS_CAPS)
            hers = mine.rpc("tools/call", {"name": "research", "arguments": {"topic": f"{alice.tag} replicated", "seconds": 5},
                                           "task": {"ttl": 60000}})["result"]["task"]["taskId"]
            key = wait_for(lambda: [k for k in redis.cmd("KEYS", "*") if str(k).endswith(f"task:{hers}")], 5, "her route shared")[0]
            his = Session(reps[1], bob, "B-rep2", caps=TASKS_CAPS).rpc(
                "tools/call", {"name": "research", "arguments": {"topic": f"{bob.tag} same id", "seconds": 5}, "task": {"ttl": 60000}})
            assert his["result"]["task"]["taskId"] == hers, "the second replica's server handed out the same id"

            def warned():
                lines = [json.loads(x) for x in reps[1].proc.log_path.read_text().splitlines() if x.startswith("{")]
                return [x for x in lines if x.get("event") == "task_not_shared"]
            wait_for(warned, 5, "bob's route not shared, said")
            route = json.loads(redis.cmd("GET", key))
            assert route["owner"].endswith("alice") and alice.tag not in json.dumps(route), route
            finish(alice, bob)
    finally:
        redis.stop()
