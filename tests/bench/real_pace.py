"""Benchmark (prints figures, asserts nothing): pages from a model paced like a hosted one
(issue 29). A fake provider (fake_llm.py, the Anthropic wire format, streamed) answers every
request after 1.5 s, then at 60 tokens a second, with pages of 3,000 and of 8,000 tokens; the
release binary fronts the demo, and a servers file of five real servers. For each rich tool a
host reads its page cold, then follows it as the provisional page does (`_ui_page_status`,
waiting 2.5 s a call, the page in the answer once written), then reads it again. The baseline,
measured in the same run, is the model's own time for that tool (its classification and its
page, from the provider's side).

Printed: the share of rich tools whose written page is served after the first read (target
100%), the time from the first read to the written page reaching the View, over the model's
own time (target: within 1 s of it), the host's wait on the first read (target: at most the read
budget, 15 s), and LLM page generations per rich tool (target exactly 1).

    tests/.venv/bin/python tests/bench/real_pace.py [--tokens 3000 8000] [--no-build]

The "on screen" figure is the moment the page's own status call returns the written page; the
browser test (tests/node/browser/swap.test.mjs) shows the document swap after it takes
a few hundred milliseconds more.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from benchlib import summary, use_release  # noqa: E402
import conftest  # noqa: E402
from fake_llm import FakeLLM, page  # noqa: E402
from mcpclient import session  # noqa: E402
from test_generation import gen_proxy  # noqa: E402

PACE = {"first": 1.5, "tps": 60}
READ_BUDGET_S = 15.0
STATUS_WAIT_MS = 2500  # as templates/provisional.js asks
DEMO_RICH = ["get_current_weather", "get_forecast", "get_weather_map"]
FLEET_RICH = ["weather__get_forecast", "weather__get_weather_map", "memory__read_graph", "memory__search_nodes",
              "filesystem__directory_tree", "filesystem__list_directory", "everything__get-structured-content", "time__convert_time"]


def five_servers(folder: Path) -> Path:
    (folder / "files").mkdir(parents=True, exist_ok=True)
    (folder / "files" / "notes.txt").write_text("hello\n")
    f = folder / "servers.json"
    f.write_text(json.dumps({"mcpServers": {
        "weather": {"command": str(conftest.BIN), "args": ["demo-upstream"]},
        "everything": {"command": conftest.NODE, "args": [str(conftest.EVERYTHING), "stdio"]},
        "memory": {"command": conftest.NODE, "args": [str(conftest.NODE_MODULES / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js")],
                   "env": {"MEMORY_FILE_PATH": str(folder / "memory.jsonl")}},
        "filesystem": {"command": conftest.NODE, "args": [str(conftest.NODE_MODULES / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"),
                       str(folder / "files")]},
        "time": {"command": str(conftest.ROOT / "tests" / ".venv" / "bin" / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
    }}))
    return f


async def host(base: str, tool: str) -> dict:
    """One host: a cold read, the provisional page's follow loop, a second read."""
    async with session("mcp", base) as s:
        listed = next(t for t in (await s.list_tools()).tools if t.name == tool)
        uri = listed.meta["ui"]["resourceUri"]
        t0 = time.monotonic()
        first = (await s.read_resource(uri)).contents[0]
        wait = time.monotonic() - t0
        provisional = bool(first.meta["mcp-gen-ui"].get("provisional"))
        written_at = t0 + wait if not provisional else None
        calls = 0
        while provisional:
            calls += 1
            r = await s.call_tool("_ui_page_status", {"toolName": tool, "waitMs": STATUS_WAIT_MS, "html": True})
            st = r.structured_content or {}
            if st.get("state") == "ready" and st.get("html"):
                written_at = time.monotonic()
                break
            if st.get("state") != "writing":
                break
        again = (await s.read_resource(uri)).contents[0]
        meta = again.meta["mcp-gen-ui"]
        return {"tool": tool, "wait": wait, "to_screen": (written_at - t0) if written_at else None, "status_calls": calls,
                "served_written": meta["kind"] in ("generated", "repaired") and not meta.get("provisional")}


def tool_of(record: dict) -> str:
    prompt = json.dumps(record["body"])
    at = prompt.find("Tool name: ")
    return prompt[at + 11:].split("\\n", 1)[0] if at >= 0 else "?"


def scenario(label: str, args: list[str], rich: list[str], tokens: int, folder: Path) -> list[tuple]:
    fake = FakeLLM()
    fake.pace = PACE
    fake.classification = {t: "rich" for t in rich}
    fake.classification_default = "minimal"
    fake.default = {"html": page("BENCH-PAGE", tokens=tokens)}
    cfg = {"generation": {"maxConcurrentGenerations": len(rich), "timeoutMs": int(READ_BUDGET_S * 1000)}}
    try:
        with gen_proxy(fake, "anthropic", upstream=args, config=cfg, name=f"bench-pace-{label}-{tokens}", tmp_path=folder) as (base, _):
            async def all_hosts():
                out = []

                async def one(t):
                    out.append(await host(base, t))

                async with anyio.create_task_group() as tg:
                    for t in rich:
                        tg.start_soon(one, t)
                return out

            print(f"{label}, pages of {tokens} tokens: {len(rich)} rich tools ...", flush=True)
            hosts = anyio.run(all_hosts)
    finally:
        fake.stop()
    model = {}
    for r in fake.requests:
        model.setdefault(tool_of(r), 0.0)
        model[tool_of(r)] += (r["end"] or r["start"]) - r["start"]
    gens = {t: sum(1 for r in fake.generations() if tool_of(r) == t) for t in rich}
    served = sum(1 for h in hosts if h["served_written"])
    over = [h["to_screen"] - model.get(h["tool"], 0.0) for h in hosts if h["to_screen"] is not None]
    ratio = [h["to_screen"] / model[h["tool"]] for h in hosts if h["to_screen"] is not None and model.get(h["tool"])]
    worst_wait = max(h["wait"] for h in hosts)
    mean_model = sum(model.get(t, 0) for t in rich) / len(rich)
    return [
        (f"{label} {tokens} tok: written page served after the first read", f"{served}/{len(rich)} ({100 * served / len(rich):.0f}%)",
         "100%", served == len(rich)),
        (f"{label} {tokens} tok: the model's own time a tool (mean)", f"{mean_model:.1f} s", "-", None),
        (f"{label} {tokens} tok: first read to page in the View, over the model's time (worst)",
         f"+{max(over):.2f} s ({max(ratio):.3f}x)" if over else "never", "<= +1 s", bool(over) and max(over) <= 1.0),
        (f"{label} {tokens} tok: host's wait on the first read (worst)", f"{worst_wait:.2f} s", f"<= {READ_BUDGET_S:.0f} s",
         worst_wait <= READ_BUDGET_S + 0.5),
        (f"{label} {tokens} tok: LLM page generations per rich tool", ", ".join(sorted({str(n) for n in gens.values()})), "exactly 1",
         all(n == 1 for n in gens.values())),
        (f"{label} {tokens} tok: status calls a page made while it waited (max)", str(max(h["status_calls"] for h in hosts)), "-", None),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[3000, 8000])
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-pace-"))
    rows = []
    fleet = five_servers(folder)
    for tokens in a.tokens:
        rows += scenario("demo", ["--demo"], DEMO_RICH, tokens, folder)
        rows += scenario("5 servers", ["--servers-file", str(fleet)], FLEET_RICH, tokens, folder)
    summary("pages at a hosted model's pace (first token 1.5 s, 60 tokens/s)", rows)


if __name__ == "__main__":
    main()
