"""Issue 14 items 4-6: the operator's style guidance in every prompt and key; file artifacts
kept from the model but given to the page; result shapes learnt from hosts' calls, and with
several people only from the calls of whoever shapes the shared pages (issue 51 item 7)."""

import json
import sys
import time
from pathlib import Path

import anyio

from artifact_upstream import CSV
from conftest import metric, proxy_http, scrape, wait_for
from fake_llm import page
from mcpclient import session
from test_generation import gen_proxy, read_ui
from test_teams import call, read_page, scrape_with

ARTIFACTS = str(Path(__file__).with_name("artifact_upstream.py"))
ECHO = str(Path(__file__).with_name("echo_upstream.py"))


def inspect(base, tool="get_forecast"):
    async def go():
        async with session("mcp", base) as s:
            r = await s.call_tool("_ui_inspect", {"toolName": tool})
            return json.loads(r.content[0].text)

    return anyio.run(go)


def test_style_guidance_reaches_the_prompt_outside_the_fence_and_changes_the_key(fake, tmp_path):
    style = "House style: write every label in Portuguese; brand colour #ff6600."
    fake.default = {"html": page("STYLED")}
    with gen_proxy(fake, "openai", args=["--prompt", style], name="proxy-style", tmp_path=tmp_path) as (base, _):
        read_ui(base, "get_forecast")
        styled_key = inspect(base)["cacheKey"]
    prompt = json.dumps(fake.generations()[0]["body"])
    assert "brand colour #ff6600" in prompt, "the style reaches the generation prompt"
    assert prompt.index("brand colour") > prompt.index("MCP_TOOL_DATA_END"), "outside the untrusted-data fence"
    with gen_proxy(fake, "openai", name="proxy-unstyled", tmp_path=tmp_path) as (base, _):
        plain_key = inspect(base)["cacheKey"]
    assert styled_key != plain_key, "another style makes another page"
    style_file = tmp_path / "style.txt"
    style_file.write_text(style)
    with gen_proxy(fake, "openai", args=["--prompt-file", str(style_file)], name="proxy-style-file", tmp_path=tmp_path) as (base, _):
        assert inspect(base)["cacheKey"] == styled_key, "--prompt-file gives the same guidance as --prompt"


def test_artifacts_go_to_the_page_not_the_model_for_ui_hosts_only(tmp_path):
    cfg = tmp_path / "shaping.json"
    cfg.write_text(json.dumps({"results": {"shaping": "artifacts"}}))

    async def call(base, ui):
        async with session("mcp", base, ui=ui) as s:
            return await s.call_tool("report", {"rows": 2})

    with proxy_http(["--upstream", f"{sys.executable} {ARTIFACTS}", "--config", str(cfg)], name="proxy-artifacts") as (base, _):
        shaped = anyio.run(call, base, True)
        plain = anyio.run(call, base, False)
    text = shaped.content[0].text
    assert "report.csv" in text and '"rows": 2' in text.replace('"rows":2', '"rows": 2'), text
    assert CSV not in text, "file contents never reach the model's content"
    assert shaped.structured_content["returned_file_contents"] == [CSV], "the page gets the files"
    assert CSV in plain.content[0].text and plain.structured_content is None, "a host without MCP Apps gets the upstream's answer unchanged"


def test_result_shapes_are_learnt_without_values_and_remake_a_page_once(fake, tmp_path):
    fake.default = {"html": page("SHAPED")}

    async def go(base):
        async with session("mcp", base) as s:
            await s.read_resource("ui://get_forecast")
            await s.call_tool("get_forecast", {"city": "Zanzibarville", "days": 2})
            deadline = time.time() + 15
            while len(fake.generations()) < 2 and time.time() < deadline:
                await anyio.sleep(0.1)
            await s.call_tool("get_forecast", {"city": "Quitoville", "days": 3})
            await anyio.sleep(1.5)

    config = {"generation": {"learnResultShape": True}}
    with gen_proxy(fake, "openai", config=config, name="proxy-shapes", tmp_path=tmp_path) as (base, _):
        anyio.run(go, base)
        regenerations = metric(scrape(base), "mcp_gen_ui_shape_regenerations_total")
    gens = fake.generations()
    assert len(gens) == 2, f"the page made before the shape was known is remade once, and only once: {len(gens)} generations"
    first, second = json.dumps(gens[0]["body"]), json.dumps(gens[1]["body"])
    assert "Shape of the results" not in first, "the first page was made before any result was seen"
    assert "Shape of the results" in second and "precipitationChance" in second, "the learnt shape reaches the next prompt"
    assert "Zanzibarville" not in second and "Quitoville" not in second, "keys and types only, never values"
    assert regenerations == 1


# --- issue 51 item 7: with several people, shapes come from the shared pages' shapers only --------

ALICE, BOB = "alice-token-51-shapes-4c1e9a", "bob-token-51-shapes-7d2f0b"
# Key names bob chooses (the echo tool answers with what it is given).
BOB_CANARY = "bobCanary51q7"


def test_with_two_people_only_an_admins_results_shape_the_page_everyone_is_served(fake, tmp_path):
    """session/results.rs HostSession::teaches_shapes (a learnt shape goes into the shared
    page's prompt, so only an admin's results, or everyone's with one person, teach one)."""
    fake.script = [{"html": page(m, "echo")} for m in ("FIRST-PAGE", "ALICE-SHAPED-PAGE")]
    config = {"generation": {"learnResultShape": True}, "server": {"auth": {"admins": ["alice"]}}}
    args = ["--auth-token", f"alice:{ALICE}", "--auth-token", f"bob:{BOB}", "--cache-dir", str(tmp_path / "cache")]
    upstream = ["--upstream", f"{sys.executable} {ECHO}"]
    with gen_proxy(fake, "openai", upstream=upstream, config=config, args=args, name="proxy-51-shapes", tmp_path=tmp_path) as (base, _):
        # Bob's result, its keys his choice, before any page: alice's page is then made.
        anyio.run(call, base, BOB, "echo", {"fields": {BOB_CANARY: "x", "count": 1}})
        assert "FIRST-PAGE" in anyio.run(read_page, base, ALICE, "echo")
        assert BOB_CANARY not in json.dumps([r["body"] for r in fake.requests]), "bob's keys reached the prompt of alice's page"
        # Alice is an admin: her result teaches the shape, and the shared page is made again with it.
        anyio.run(call, base, ALICE, "echo", {"fields": {"aliceField": 1}})
        wait_for(lambda: len(fake.generations()) >= 2, 15, "the page remade with the shape of alice's result")
        # Bob again, after the remake: still nothing of his reaches the page or its prompt.
        anyio.run(call, base, BOB, "echo", {"fields": {BOB_CANARY + "Again": [1]}})
        time.sleep(1.0)
        served = anyio.run(read_page, base, ALICE, "echo")
        regenerations = metric(scrape_with(base, ALICE), "mcp_gen_ui_shape_regenerations_total")
        state = tmp_path / "cache" / "state" / "result_shapes.json"
        kept = wait_for(lambda: "aliceField" in state.read_text() and state.read_text(), 10, "the learnt shape kept")
    gens = fake.generations()
    assert len(gens) == 2 and regenerations == 1, f"{len(gens)} pages made, {regenerations} remade for a shape"
    assert "aliceField" in json.dumps(gens[1]["body"]), "the admin's result shape reaches the shared page's prompt"
    assert "ALICE-SHAPED-PAGE" in served
    every_prompt = json.dumps([r["body"] for r in fake.requests])
    assert BOB_CANARY not in every_prompt, "bob's keys reached the prompt of the page alice is served"
    assert BOB_CANARY not in served, "nor the page"
    assert BOB_CANARY not in kept, "nor the shapes kept for the next start"
