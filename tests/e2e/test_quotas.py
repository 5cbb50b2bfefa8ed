"""Issue 62, quotas: a `limit` rule counts the calls it matches per person, and a call over the
quota is answered by the service (never forwarded) with an `isError` result that says whose
quota, which rule and when to retry; the trail says `limited` and metrics count it. alice and
bob side by side: bob's quota used up leaves alice's and his other tools alone. Windows are
aligned to the clock; a test that needs a whole window waits for a fresh one first (never
longer than the window it configures), and the test of a window's end uses a 2-second one.
Two replicas sharing a real redis-server count one quota."""

import contextlib
import time

import pytest

from conftest import METRICS_TOKEN, metric, wait_for
from replica_peers import Redis
from test_isolation import Session, finish, pair
from test_pins import service, text
from test_teams import scrape_with

RULE = "three a minute"


def quota(calls=3, per="minute", **extra) -> dict:
    return {"default": "allow", "rules": [{"name": RULE, "tools": ["chatty__note"], "effect": "limit", "calls": calls, "per": per, **extra}]}


def fresh_window(seconds: int, need: float):
    """Waits for the next window when fewer than `need` seconds are left of this one."""
    left = seconds - time.time() % seconds
    if left < need:
        time.sleep(left + 0.05)


def limited(answer: dict) -> dict | None:
    """The quota an answer says is used up (None: not refused by a quota)."""
    res = answer.get("result") or {}
    return (res.get("_meta") or {}).get("mcp-gen-ui/quota") if res.get("isError") else None


def test_a_persons_quota_refuses_the_call_over_it_and_no_one_elses(tmp_path):
    with service(tmp_path, quota()) as svc, contextlib.ExitStack() as stack:
        alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
        a, b = Session(svc, alice, "A"), Session(svc, bob, "B")
        fresh_window(60, 15)
        for _ in range(3):
            assert text(b.call("chatty__note")) == "noted"
        over = b.call("chatty__note")
        q = limited(over)
        assert q and q["rule"] == RULE and q["calls"] == 3 and q["per"] == "minute" and q["whose"] == "person bob", over
        assert 0 < q["retryAfterSeconds"] <= 60
        said = over["result"]["content"][0]["text"]
        assert f'"{RULE}"' in said and "person bob" in said and f"retry in {q['retryAfterSeconds']} s" in said, said
        # alice has her own three; bob's other tools are not counted.
        for _ in range(3):
            assert text(a.call("chatty__note")) == "noted"
        assert text(b.call("chatty__whoami")) != "" and not limited(b.call("chatty__whoami"))
        assert limited(a.call("chatty__note")), "alice's fourth is over her own quota"
        # The trail and the metrics.
        lines = lambda: [x for x in svc.audit_lines() if x.get("tool") == "chatty__note" and x["event"] == "tool_call"]
        by = lambda who, outcome: len([x for x in lines() if x["principal"] == who and x["outcome"] == outcome])
        wait_for(lambda: (by("bob", "ok"), by("bob", "limited"), by("alice", "ok"), by("alice", "limited")) == (3, 1, 3, 1), 5,
                 "every call in the trail, the two over a quota as limited")
        lines = lines()
        assert all(x.get("rule") == RULE for x in lines if x["outcome"] == "limited")
        samples = scrape_with(svc.base, METRICS_TOKEN)
        assert metric(samples, "mcp_gen_ui_tool_calls_total", server="chatty", tool="chatty__note", outcome="limited") == 2
        assert metric(samples, "mcp_gen_ui_tool_calls_total", server="chatty", tool="chatty__note", outcome="ok") == 6
        assert metric(samples, "mcp_gen_ui_policy_decisions_total", rule=RULE, outcome="limited") == 2
        assert metric(samples, "mcp_gen_ui_refusals_total", reason="quota") == 2
        finish(alice, bob, grace=0)


def test_the_next_window_lets_calls_through_again(tmp_path):
    with service(tmp_path, quota(calls=1, per=2)) as svc, contextlib.ExitStack() as stack:
        _, bob = stack.enter_context(contextlib.contextmanager(pair)())
        b = Session(svc, bob, "B")
        fresh_window(2, 1.5)
        assert text(b.call("chatty__note")) == "noted"
        q = limited(b.call("chatty__note"))
        assert q and q["per"] == "2 seconds" and 1 <= q["retryAfterSeconds"] <= 2, q
        time.sleep(q["retryAfterSeconds"])
        assert text(b.call("chatty__note")) == "noted", "the window the refusal named has opened"


@pytest.mark.parametrize("bad, field", [
    ({"calls": 0}, "calls"), ({"per": 0}, "per"), ({"per": "fortnight"}, "per"), ({"by": ["team"]}, "by"),
])
def test_a_bad_quota_stops_the_start_naming_its_field(tmp_path, bad, field):
    import json
    import subprocess

    from conftest import BIN

    rule = {**quota()["rules"][0], **bad}
    (tmp_path / "config.json").write_text(json.dumps({"policy": {"rules": [rule]}}))
    run = subprocess.run([str(BIN), "--demo", "check", "--config", str(tmp_path / "config.json")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "policy.rules[0]" in run.stderr + run.stdout, run
    assert field in run.stderr + run.stdout, run


def test_replicas_count_one_quota_through_redis(tmp_path):
    redis = Redis()
    try:
        extra = {"cache": {"type": "redis", "redisUrl": redis.url}}
        (tmp_path / "r1").mkdir()
        (tmp_path / "r2").mkdir()
        with service(tmp_path / "r1", quota(), extra=extra, name="quota-r1") as r1, \
                service(tmp_path / "r2", quota(), extra=extra, name="quota-r2") as r2, contextlib.ExitStack() as stack:
            alice, bob = stack.enter_context(contextlib.contextmanager(pair)())
            b1, b2, a2 = Session(r1, bob, "B1"), Session(r2, bob, "B2"), Session(r2, alice, "A2")
            fresh_window(60, 15)
            assert text(b1.call("chatty__note")) == "noted"
            assert text(b2.call("chatty__note")) == "noted"
            assert text(b1.call("chatty__note")) == "noted"
            assert limited(b2.call("chatty__note")), "bob's fourth, on the other replica, is over the one quota"
            assert limited(b1.call("chatty__note"))
            assert text(a2.call("chatty__note")) == "noted", "alice's count is her own"
            finish(alice, bob, grace=0)
    finally:
        redis.stop()


def test_check_prints_the_quotas_and_approvals(tmp_path):
    import json
    import subprocess

    from conftest import BIN

    rules = [*quota(by=["person", "tool"])["rules"],
             {"name": "destructive needs an admin", "effect": "approve", "approvers": ["admins", "group:ops"], "expires": 120}]
    (tmp_path / "config.json").write_text(json.dumps({"policy": {"rules": rules}}))
    run = subprocess.run([str(BIN), "--demo", "check", "--config", str(tmp_path / "config.json")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run
    assert f"quotas:    {RULE} (3 a minute, per person and tool)" in run.stdout, run.stdout
    assert "approvals: destructive needs an admin (by an admin or group ops, within 120 s)" in run.stdout, run.stdout


def test_names_no_list_has_are_counted_as_one(tmp_path):
    """A bare server is passed whatever name a host makes up: counted per tool, such names would
    each get a counter of their own (a table one person could fill); they share one."""
    import json
    import sys

    from conftest import proxy_http
    from test_pins import CHATTY

    rule = {"name": "two a minute a tool", "tools": ["*"], "effect": "limit", "calls": 2, "per": "minute", "by": ["person", "tool"]}
    (tmp_path / "config.json").write_text(json.dumps({"policy": {"rules": [rule]}}))
    with proxy_http(["--upstream", f"{sys.executable} {CHATTY}", "--config", str(tmp_path / "config.json")], name="quota-unlisted") as (base, _):
        from test_isolation import Person

        class Svc:
            pass

        svc = Svc()
        svc.base = base
        anyone = Person("alice")
        try:
            s = Session(svc, anyone, "A")
            fresh_window(60, 15)
            assert text(s.call("note")) == "noted" and text(s.call("note")) == "noted"
            assert limited(s.call("note")), "a listed tool has its own count"
            made_up = [s.call(f"made_up_{i}") for i in range(3)]
            assert not limited(made_up[0]) and not limited(made_up[1]), made_up
            assert limited(made_up[2]), "made-up names share one count"
        finally:
            anyone.stop()
