"""Issue 42, end to end: what a person may change (refinements with several people, shown with
who asked), what the `_ui_*` tools and search mode reveal (_ui_refresh_tools for admins, an
unknown toolName naming only what the caller sees, call_tool's rules before its schema,
subscriptions outside a profile), CEL comparisons of values of another type, and the audit trail
(a sink that blocks, a file another user made, a server's own resources, prompts and
completions, refused calls, and a `_ui_*` denial naming the tool it was about).

Each test first shows the service doing its ordinary work, then the change; each fails if the
fix it covers is taken out (the Rust check is named in each test's docstring)."""

import fcntl
import json
import os
import select
import struct
import termios
import threading
import time

import anyio
import pytest

from conftest import proxy_http, wait_for
from fake_llm import page
from test_auth import token_proxy
from test_generation import gen_proxy
from test_policy import ALICE, BOB, call, denied, init_ui, start_failure
from test_profiles import proxy as servers_proxy
from test_profiles import rpc as profile_rpc
from test_profiles import session as profile_session
from test_teams import call as sdk_call
from test_teams import prompts, read_page, sdk_session

TWO = ["--auth-token", f"alice:{ALICE}", "--auth-token", f"bob:{BOB}"]
FEEDBACK_BEGIN, FEEDBACK_END = "<<<MCP_USER_FEEDBACK_BEGIN>>>", "<<<MCP_USER_FEEDBACK_END>>>"


def inspect(base, token, tool="get_forecast") -> list:
    """The refinements `_ui_inspect` shows the caller for `tool`'s page."""
    return anyio.run(sdk_call, base, token, "_ui_inspect", {"toolName": tool})["refinements"]


def trail(path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# --- 1. refinements: only admins shape shared pages with several people ----------------------


def test_with_two_people_a_refinement_shapes_only_its_authors_page(fake, tmp_path):
    """wiring.rs start_actors (personal_scope with AuthSettings::several_people), refine.rs
    (Append.by), inspect.rs (`by` shown), generate.hbs (the feedback fence)."""
    fake.script = [{"html": page(m, "get_forecast")} for m in ("SHARED-PAGE", "BOB-PAGE")]
    with gen_proxy(fake, "openai", args=TWO, name="proxy-42-refine-people", tmp_path=tmp_path) as (base, _):
        assert "SHARED-PAGE" in anyio.run(read_page, base, ALICE), "alice's page is made"
        assert len(fake.generations()) == 1

        done = anyio.run(sdk_call, base, BOB, "_ui_refine", {"toolName": "get_forecast", "feedback": "make the heading say BOB-WISH"})
        assert done["scope"] == "yours", f"with two people and no admins bob's refinement is his own: {done}"
        prompt = prompts(fake)[-1]
        start, end, wish = prompt.rfind(FEEDBACK_BEGIN), prompt.rfind(FEEDBACK_END), prompt.find("BOB-WISH")
        assert 0 <= start < wish < end, "his feedback reaches the prompt fenced as untrusted data"
        assert "BOB-PAGE" in anyio.run(read_page, base, BOB), "bob reads his refined page"

        assert "SHARED-PAGE" in anyio.run(read_page, base, ALICE), "alice's page is not changed by bob"
        assert len(fake.generations()) == 2, "no page was made for alice from bob's wish"
        assert inspect(base, ALICE) == [], "alice is shown no refinement of bob's"
        mine = inspect(base, BOB)
        assert [(r["feedback"], r["scope"], r.get("by")) for r in mine] == [("make the heading say BOB-WISH", "yours", "bob")], mine


def test_an_admins_refinement_is_everyones_and_names_who_asked(fake, tmp_path):
    """refine.rs (an admin's Append is the tool's shared history, by the admin), inspect.rs
    (`by`), store/refinements.rs (Refinement.by)."""
    fake.script = [{"html": page(m, "get_forecast")} for m in ("SHARED-PAGE", "ALICE-SHARED-PAGE")]
    cfg = {"server": {"auth": {"admins": ["alice"]}}}
    with gen_proxy(fake, "openai", config=cfg, args=TWO, name="proxy-42-refine-admin", tmp_path=tmp_path) as (base, _):
        assert "SHARED-PAGE" in anyio.run(read_page, base, BOB)
        done = anyio.run(sdk_call, base, ALICE, "_ui_refine", {"toolName": "get_forecast", "feedback": "add an ALICE-NOTE"})
        assert done["scope"] == "shared", done
        assert "ALICE-SHARED-PAGE" in anyio.run(read_page, base, BOB), "the admin's refinement reaches bob's page"
        for token in (ALICE, BOB):
            shown = inspect(base, token)
            assert [(r["feedback"], r["scope"], r.get("by")) for r in shown] == [("add an ALICE-NOTE", "shared", "alice")], shown


async def tool_result(base, token, name, args):
    """A `_ui_*` call's whole result, errors included."""
    s, stack = await sdk_session(base, token)
    async with stack:
        return await s.call_tool(name, args)


def test_with_two_people_only_an_admin_regenerates_the_shared_page(fake, tmp_path):
    """ui_tools/commands/regenerate.rs run (issue 51 item 10: a person who is not an admin
    remakes only a page of their own, clearing their refinements remakes nothing, and the
    shared page is an admin's to remake)."""
    canary = "BOB-CANARY-51-regen"
    markers = ("SHARED-PAGE", "BOB-PAGE", "BOB-REMADE", "ALICE-REMADE")
    fake.script = [{"html": page(m, "get_forecast")} for m in markers]
    cfg = {"server": {"auth": {"admins": ["alice"]}}}
    regenerate = {"toolName": "get_forecast"}
    with gen_proxy(fake, "openai", config=cfg, args=TWO, name="proxy-51-regenerate", tmp_path=tmp_path) as (base, _):
        assert "SHARED-PAGE" in anyio.run(read_page, base, ALICE), "the page everyone shares is made"

        # Bob never refined it: the page he gets is everyone's, and he may not remake it.
        refused = anyio.run(tool_result, base, BOB, "_ui_regenerate", regenerate)
        text = refused.content[0].text
        assert refused.is_error and "server.auth.admins" in text and "_ui_refine" in text, text
        assert len(fake.generations()) == 1, "nothing was made"
        assert "SHARED-PAGE" in anyio.run(read_page, base, ALICE)

        # A page of his own (his refinement carries his canary): his regenerate remakes it, alone.
        anyio.run(sdk_call, base, BOB, "_ui_refine", {"toolName": "get_forecast", "feedback": f"title it {canary}"})
        assert "BOB-PAGE" in anyio.run(read_page, base, BOB)
        again = anyio.run(sdk_call, base, BOB, "_ui_regenerate", regenerate)
        assert again["scope"] == "yours", again
        assert "BOB-REMADE" in anyio.run(read_page, base, BOB)
        assert "SHARED-PAGE" in anyio.run(read_page, base, ALICE), "bob's remake is not alice's page"

        # Clearing his refinements gives him the shared page back as it is: nothing is remade.
        cleared = anyio.run(sdk_call, base, BOB, "_ui_regenerate", {**regenerate, "clearRefinements": True})
        assert cleared["refinementsCleared"] == 1 and cleared["scope"] == "shared", cleared
        assert len(fake.generations()) == 3
        assert "SHARED-PAGE" in anyio.run(read_page, base, BOB) and "SHARED-PAGE" in anyio.run(read_page, base, ALICE)

        # Alice is an admin: she remakes the page everyone shares.
        assert anyio.run(sdk_call, base, ALICE, "_ui_regenerate", regenerate)["scope"] == "shared"
        assert "ALICE-REMADE" in anyio.run(read_page, base, BOB) and "ALICE-REMADE" in anyio.run(read_page, base, ALICE)
    made = prompts(fake)
    assert len(made) == 4, len(made)
    assert canary in made[1] and canary in made[2], "bob's own pages were made from his refinement"
    assert canary not in made[0] and canary not in made[3], "the pages alice is served never saw bob's words"


# --- 2. _ui_refresh_tools is for admins ------------------------------------------------------


def test_refresh_tools_is_for_admins(tmp_path):
    """ui_tools/calls.rs HostSession::denied_ui_call (UiCall::RefreshTools unless who.admin)."""
    cfg = {"server": {"auth": {"admins": ["alice"]}}}
    with token_proxy(tmp_path, TWO, config=cfg, name="proxy-42-refresh") as (base, _proc, _log):
        a, b = init_ui(base, ALICE), init_ui(base, BOB)
        ok = call(base, ALICE, a, "_ui_refresh_tools")
        assert "result" in ok and not ok["result"].get("isError"), ok
        assert "get_forecast" in ok["result"]["content"][0]["text"], "the admin gets the tools listed again"
        refused = call(base, BOB, b, "_ui_refresh_tools")
        assert refused.get("error", {}).get("code") == -32003, refused
        assert "get_forecast" not in json.dumps(refused), "nothing of the tools is told to a non-admin"
        assert "result" in call(base, BOB, b, "get_forecast", city="Oslo"), "bob may still call his tools"
    anonymous = tmp_path / "anonymous"
    anonymous.mkdir()
    with token_proxy(anonymous, ["--no-auth"], name="proxy-42-refresh-anonymous") as (base, _proc, _log):
        sid = init_ui(base, None)
        ok = call(base, None, sid, "_ui_refresh_tools")
        assert "result" in ok and "get_forecast" in ok["result"]["content"][0]["text"], f"without auth everyone is an admin: {ok}"


# --- 3. an unknown toolName names only what the caller may see -------------------------------


def valid_names(answer) -> list[str]:
    result = answer["result"]
    text = result["content"][0]["text"]
    assert result.get("isError") and "valid tool names: " in text, answer
    return [n.strip() for n in text.split("valid tool names: ", 1)[1].split(",")]


def test_an_unknown_tool_name_lists_only_the_tools_the_caller_may_see(tmp_path):
    """ui_tools/mod.rs parse (`shown`), ui_tools/calls.rs ui_tool_call (sees_tool || sees_page)."""
    rules = {"default": "allow", "rules": [{"name": "units are alice's", "tools": ["set_units"], "effect": "deny",
                                            "when": "principal.name == 'bob'"}]}
    with token_proxy(tmp_path, TWO, config={"policy": rules}, name="proxy-42-unknown-name") as (base, _proc, _log):
        a, b = init_ui(base, ALICE), init_ui(base, BOB)
        alices = valid_names(call(base, ALICE, a, "_ui_inspect", toolName="no_such_tool"))
        assert {"get_forecast", "get_current_weather", "set_units"} <= set(alices), alices
        bobs = valid_names(call(base, BOB, b, "_ui_inspect", toolName="no_such_tool"))
        assert "get_forecast" in bobs, bobs
        assert "set_units" not in bobs, f"a tool the rules hide from bob is named to him: {bobs}"
        for tool in ("_ui_regenerate", "_ui_page_status"):
            answer = call(base, BOB, b, tool, toolName="no_such_tool")
            assert "set_units" not in valid_names(answer), (tool, answer)


# --- 4. search mode: the rules before the schema ---------------------------------------------


def test_call_tool_is_decided_by_the_rules_before_the_schema(tmp_path):
    """session/plan.rs plan (gate first, then discovery::check_direct_call for call_tool);
    discovery.rs unwrap_call_tool no longer checks the arguments."""
    rules = {"default": "allow", "rules": [{"name": "no units", "tools": ["weather__set_units"], "effect": "deny"}]}
    with servers_proxy(tmp_path, "proxy-42-call-tool", config={"policy": rules}) as (base, _proc, _log):
        sid = profile_session(base, "/mcp/all")

        def call_tool(name, arguments):
            return profile_rpc(base, "/mcp/all", sid, "tools/call", {"name": "call_tool", "arguments": {"name": name, "arguments": arguments}})

        ok = call_tool("weather__get_forecast", {"city": "Oslo", "days": 2})
        assert "result" in ok and not ok["result"].get("isError"), ok
        bad = call_tool("weather__get_forecast", {"days": 99})
        msg = bad.get("error", {}).get("message", "")
        assert bad["error"]["code"] == -32602 and "/days" in msg and "city" in msg, f"allowed: the schema names the problem: {bad}"

        refused = call_tool("weather__set_units", {"units": "kelvin", "extra": 1})
        assert refused.get("error", {}).get("code") == -32003 and refused["error"]["message"].startswith("not allowed"), refused
        told = json.dumps(refused["error"])
        for leak in ('"units"', "/units", "metric", "imperial", "enum", "required property", "schema", "kelvin", "extra"):
            assert leak not in told, f"the denial tells {leak!r} of the denied tool's schema: {told}"
        assert call_tool("weather__set_units", {})["error"]["code"] == -32003, "missing arguments too: the rules first"


# --- 5. CEL: another type makes a deny rule deny ---------------------------------------------


def test_a_deny_rule_denies_values_of_another_type(tmp_path):
    """policy/rules.rs with rules/types.rs (a comparison of different types fails the
    condition: a deny rule denies)."""
    rules = {"default": "allow", "rules": [{"name": "no secret city", "tools": ["*"], "effect": "deny",
                                            "when": "has(args.city) && args.city == 'Secret'"}]}
    with token_proxy(tmp_path, TWO, config={"policy": rules}, name="proxy-42-cel-types") as (base, _proc, _log):
        sid = init_ui(base, BOB)
        assert "result" in call(base, BOB, sid, "get_current_weather", city="Oslo"), "an ordinary city is allowed"
        assert denied(call(base, BOB, sid, "get_current_weather", city="Secret"))
        for city in (["Secret"], None, 5):
            answer = call(base, BOB, sid, "get_current_weather", city=city)
            assert denied(answer), f"city={city!r} went through the deny rule: {answer}"
        assert "result" in call(base, BOB, sid, "get_current_weather", city="Oslo"), "and Oslo still is"


# --- 6. audit.required with a sink that blocks -----------------------------------------------


AUDIT_REFUSAL = "audit trail cannot be written"
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)  # Linux


def in_pipe(fd) -> int:
    """Bytes waiting in a pipe (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, struct.pack("i", 0)))[0]


def test_required_refuses_while_a_write_to_the_trail_blocks_and_admits_once_it_returns(tmp_path):
    """actors/audit.rs Audit::admit (Inner::stalled, STALLED_AFTER 2 s) with src/audit/mod.rs
    Writer::write (Feed::writing around every write)."""
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo, 0o600)
    # The service opens the file O_WRONLY without O_NONBLOCK (src/audit/file.rs AuditFile::open),
    # which blocks until the FIFO has a reader: this end is that reader, read by nobody until later.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    drained, stop = bytearray(), threading.Event()

    def drain():
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    drained.extend(os.read(fd, 1 << 16))
                except BlockingIOError:
                    pass

    drainer = threading.Thread(target=drain, daemon=True)
    long_note = "n" * 16_000
    cfg = {"audit": {"file": str(fifo), "required": True, "arguments": True}}
    try:
        with token_proxy(tmp_path, TWO, config=cfg, name="proxy-42-audit-fifo") as (base, _proc, _log):
            sid = init_ui(base, ALICE)
            first = call(base, ALICE, sid, "get_current_weather", city="Oslo", note=long_note)
            assert "result" in first, f"the trail takes the first lines: {first}"
            # Long lines until the pipe is full (nobody reads it): the writer's next write blocks.
            capacity = fcntl.fcntl(fd, F_GETPIPE_SZ)
            longs = 1

            def pipe_full():
                nonlocal longs
                if in_pipe(fd) >= capacity - 4096:
                    return True
                answer = call(base, ALICE, sid, "get_current_weather", city="Oslo", note=long_note)
                assert "result" in answer, answer
                longs += 1
                return False

            wait_for(pipe_full, 10, "the FIFO's buffer filled by the trail", every=0)
            # Then small calls at a walk, far fewer than audit.queue holds: only a stuck write
            # can get them refused, not a full queue.
            smalls, refusal, started = 0, None, time.monotonic()
            while time.monotonic() - started < 12:
                answer = call(base, ALICE, sid, "get_current_weather", city="Oslo", note="SMALL")
                if AUDIT_REFUSAL in answer.get("error", {}).get("message", ""):
                    refusal = answer
                    break
                assert "result" in answer, answer
                smalls += 1
                time.sleep(0.05)
            took = time.monotonic() - started
            assert refusal, f"{smalls} calls admitted in {took:.1f} s while the trail's write blocks (the pipe is full)"
            assert "audit.required" in refusal["error"]["message"] and refusal["error"]["code"] == -32004, refusal
            assert took < 8, f"refused only after {took:.1f} s"
            again = call(base, ALICE, sid, "get_current_weather", city="Oslo", note="SMALL")
            assert AUDIT_REFUSAL in again.get("error", {}).get("message", ""), f"refused while the write blocks: {again}"

            drainer.start()  # someone reads the FIFO: the stuck write returns

            def admitted_again():
                answer = call(base, ALICE, sid, "get_current_weather", city="Oslo", note="AFTER-DRAIN")
                if AUDIT_REFUSAL in answer.get("error", {}).get("message", ""):
                    return None
                assert "result" in answer, answer
                return answer

            wait_for(admitted_again, 10, "calls admitted again once the FIFO is read", every=0.2)

            def written():
                complete = bytes(drained).rsplit(b"\n", 1)[0].decode()
                lines = [json.loads(x) for x in complete.splitlines() if x.strip()]
                notes = [x.get("args", {}).get("note") for x in lines if x["event"] == "tool_call"]
                return notes if "AFTER-DRAIN" in notes else None

            notes = wait_for(written, 10, "the readmitted call's line through the FIFO")
            assert (notes.count(long_note), notes.count("SMALL")) == (longs, smalls), \
                "every admitted call's line was kept and written, in order, the refused ones not"
            assert notes.index("AFTER-DRAIN") > max(i for i, n in enumerate(notes) if n in (long_note, "SMALL"))
    finally:
        stop.set()
        if drainer.is_alive():
            drainer.join(5)
        os.close(fd)


# --- 7. an audit file another user made ------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_an_audit_file_that_belongs_to_another_user_stops_the_start(tmp_path):
    """src/config/settings/policy.rs audit (audit::file::foreign_owner), src/audit/file.rs
    AuditFile::open (FileError::NotOurs)."""
    audit = tmp_path / "audit.jsonl"
    audit.write_text("")
    cfg = tmp_path / "own.json"
    cfg.write_text(json.dumps({"audit": {"file": str(audit)}}))
    with proxy_http(["--demo", "--config", str(cfg)], name="proxy-42-audit-own") as (base, _proc):
        assert base.startswith("http://"), "a file of the service's own user is taken"
    before = audit.read_text()
    os.chown(audit, 65534, 65534)
    err = start_failure(tmp_path, {"audit": {"file": str(audit)}})
    assert "audit.file" in err and "uid 65534" in err, err
    assert audit.read_text() == before, "nothing was written to it"


# --- 8. what the trail records ----------------------------------------------------------------


def test_the_trail_records_a_servers_resources_prompts_completions_refusals_and_what_a_ui_call_was_about(tmp_path):
    """session/recording.rs HostSession::audit_start (Plan::Forward of resources/read,
    prompts/get, completion/complete; Plan::Refuse of tools/call; Plan::UiTool naming the
    target tool and its server, the call as detail)."""
    audit = tmp_path / "audit.jsonl"
    rules = {"default": "allow", "rules": [{"name": "no forecast page", "tools": ["weather__get_forecast"], "kinds": ["pages"], "effect": "deny"}]}
    with servers_proxy(tmp_path, "proxy-42-trail", config={"policy": rules, "audit": {"file": str(audit)}}) as (base, _proc, _log):
        sid = profile_session(base, "/mcp")

        def ask(method, params):
            return profile_rpc(base, "/mcp", sid, method, params)

        ok = ask("tools/call", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}})
        assert "result" in ok, ok
        uri = "demo://everything+resource/dynamic/text/1"
        assert "Resource 1" in ask("resources/read", {"uri": uri})["result"]["contents"][0]["text"]
        assert ask("prompts/get", {"name": "everything__simple-prompt"})["result"]["messages"]
        done = ask("completion/complete", {"ref": {"type": "ref/prompt", "name": "everything__completable-prompt"},
                                           "argument": {"name": "department", "value": "E"}})
        assert done["result"]["completion"]["values"], done
        unknown = ask("tools/call", {"name": "nope__nothing", "arguments": {}})
        assert unknown["error"]["code"] == -32602, unknown
        allowed_status = ask("tools/call", {"name": "_ui_page_status", "arguments": {"toolName": "weather__get_current_weather"}})
        assert "result" in allowed_status, allowed_status
        refused = ask("tools/call", {"name": "_ui_page_status", "arguments": {"toolName": "weather__get_forecast"}})
        assert refused["error"]["code"] == -32003, refused

        def complete():
            lines = trail(audit)
            return lines if any(x["event"] == "denied" for x in lines) and any(x.get("outcome") == "refused" for x in lines) else None

        lines = wait_for(complete, 10, "the calls' lines in the audit trail")
        calls = [x for x in lines if x["event"] == "tool_call" and x.get("tool") == "weather__get_current_weather"]
        assert [(x["server"], x["outcome"]) for x in calls if "detail" not in x] == [("weather", "ok")], calls

        def one(event, name):
            got = [x for x in lines if x["event"] == event]
            assert [(x.get("tool"), x.get("server")) for x in got] == [(name, "everything")], (event, got)
            return got[0]

        one("resource_read", uri)
        one("prompt_get", "everything__simple-prompt")
        one("completion", "everything__completable-prompt")
        refusals = [x for x in lines if x.get("outcome") == "refused"]
        assert [(x["event"], x.get("tool")) for x in refusals] == [("tool_call", "nope__nothing")], refusals

        status = [x for x in lines if x.get("detail") == "_ui_page_status"]
        assert [(x["event"], x.get("tool"), x.get("server"), x["outcome"]) for x in status] == [
            ("tool_call", "weather__get_current_weather", "weather", "ok"),
            ("denied", "weather__get_forecast", "weather", "denied"),
        ], status
        assert status[1]["rule"] == "no forecast page" and status[1]["kind"] == "pages", status[1]


# --- 9. subscriptions outside the session's profile ------------------------------------------


def test_subscribing_outside_the_sessions_profile_finds_nothing(tmp_path):
    """session/plan.rs subscription (a page of a tool outside the profile, or a resource of a
    server outside its `servers`: resource_not_found)."""
    page_outside, resource = "ui://weather/get_forecast", "demo://everything+resource/dynamic/text/1"
    with servers_proxy(tmp_path, "proxy-42-subscribe") as (base, _proc, _log):
        def subscribe(path, sid, uri):
            return profile_rpc(base, path, sid, "resources/subscribe", {"uri": uri})

        def not_found(answer):
            err = answer.get("error", {})
            return err.get("code") == -32002 and "not found" in err.get("message", "")

        everything = profile_session(base, "/mcp")
        for uri in (page_outside, resource):
            assert subscribe("/mcp", everything, uri).get("result") == {}, f"{uri} can be subscribed to where it is served"

        # "small" selects memory__* and time__*: a weather page is not its to watch.
        small = profile_session(base, "/mcp/small")
        inside = subscribe("/mcp/small", small, "ui://memory/read_graph")
        assert inside.get("result") == {}, f"a page of the profile can be subscribed to: {inside}"
        outside = subscribe("/mcp/small", small, page_outside)
        assert not_found(outside), f"a page outside the profile was subscribed to: {outside}"
        # "readonly" serves the files server only: everything's resource is not its to watch.
        readonly = profile_session(base, "/mcp/readonly")
        outside = subscribe("/mcp/readonly", readonly, resource)
        assert not_found(outside), f"a resource of a server outside the profile was subscribed to: {outside}"
