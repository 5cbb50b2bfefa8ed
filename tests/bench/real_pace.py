"""Benchmark (prints figures, asserts nothing): pages from a model paced like a hosted one
(issues 29 and 43). A fake provider (fake_llm.py, the Anthropic wire format, streamed) answers
every request after 1.5 s, then at 60 tokens a second, with pages of 3,000 tokens (visible
markup first, the padding style last, as the prompt asks) and of 8,000 tokens (style first);
the release binary fronts the demo, and a servers file of five real servers. For each rich tool
a host reads its page cold, then follows it as the provisional page does (templates/
provisional.js: `_ui_page_status` with preview, waiting 2.5 s a call, called again at once
while the page is being written, the page in the answer once written), then reads it again.
The first rich tool is read alone; the others once its first read has answered (the pace is
then known to the service). The baseline, measured in the same run, is the model's own time for
that tool (its classification and its page, from the provider's side), and the moments the
fake sent the page's heading and its last character.

Printed, issue 29: the share of rich tools whose written page is served after the first read
(target 100%), the time from the first read to the written page reaching the View, over the
model's own time (target: within 1 s of it), the host's wait on the first read (target: at most
the read budget, 15 s), and LLM page generations per rich tool (target exactly 1).

Printed, issue 43 (no blank wait; markup-first pages of 3,000 tokens): the first read's wait
(target 3 s), the first tool's (the pace not yet known) apart from the later tools' (the pace
learnt); the page's first text on screen, the provisional page's preview showing the page's
<h1> with its text, after the model wrote it (target 2 s); the whole page on screen after the
model's end (target 1 s); and with a fast model (2,000 tokens a second) the share of tools whose
written page comes on the first read (target all) and that read's wait, over the model's own
time. Per tool figures are printed before the summaries.

    tests/.venv/bin/python tests/bench/real_pace.py [--tokens 3000 8000] [--markup-first 3000]
        [--no-fleet] [--no-fast] [--serial] [--no-build]

The demo's and the fleet's runs go side by side (each its own fake provider and service;
--serial runs them one after the other, about twice as long). The "on screen" figures are the
moments the page's own status call returns the preview or the written page; the browser test
(tests/node/browser/swap.test.mjs) shows the document swap after it takes a few hundred
milliseconds more.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
from benchlib import summary, use_release  # noqa: E402
import conftest  # noqa: E402
from fake_llm import FakeLLM, page  # noqa: E402
from mcpclient import session  # noqa: E402
from test_generation import gen_proxy  # noqa: E402

PACE = {"first": 1.5, "tps": 60}
FAST_PACE = {"first": 1.5, "tps": 2000}
FAST_TOKENS = 3000
READ_BUDGET_S = 15.0
STATUS_WAIT_MS = 2500  # as templates/provisional.js asks
MARKER = "BENCH-PAGE"
FIRST_READ_TARGET_S = 3.0
FIRST_TEXT_TARGET_S = 2.0
WHOLE_PAGE_TARGET_S = 1.0
DEMO_RICH = ["get_current_weather", "get_forecast", "get_weather_map"]
FLEET_RICH = ["weather__get_forecast", "weather__get_weather_map", "memory__read_graph", "memory__search_nodes",
              "filesystem__directory_tree", "filesystem__list_directory", "everything__get-structured-content", "time__convert_time"]


class TimedFake(FakeLLM):
    """The fake provider, also noting for each streamed answer its text (record["text"]) and
    when each chunk of it went out (record["sent"]: (time.monotonic() as the chunk's write
    began, characters sent so far once it was written and flushed); the moment before the
    write, as the service may read the chunk before this thread runs again). fake_llm.py is
    unchanged: its Stream's `text` is wrapped for the one answer."""

    def stream(self, h, out, answer, pace, record):
        record["text"], record["sent"] = answer["html"], []
        write = out.text

        def timed(part):
            at = time.monotonic()
            write(part)
            sent = record["sent"]
            sent.append((at, (sent[-1][1] if sent else 0) + len(part)))

        out.text = timed
        return super().stream(h, out, answer, pace, record)


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


def text_of(node) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, list) and len(node) > 2 and isinstance(node[2], list):
        return "".join(text_of(c) for c in node[2])
    return ""


def shows_heading(nodes, marker: str = MARKER) -> bool:
    """Whether a preview tree (a string, or [tag, {attrs}, [children]]) has an <h1> with the
    page's marker text."""
    for n in nodes if isinstance(nodes, list) else []:
        if isinstance(n, list) and n and isinstance(n[0], str):
            if n[0] == "h1" and marker in text_of(n):
                return True
            if len(n) > 2 and shows_heading(n[2], marker):
                return True
    return False


async def host(base: str, tool: str, go: anyio.Event | None = None, read: anyio.Event | None = None) -> dict:
    """One host: a cold read (once `go` is set; sets `read` when it has answered), the
    provisional page's follow loop as templates/provisional.js runs it, a second read."""
    async with session("mcp", base) as s:
        listed = next(t for t in (await s.list_tools()).tools if t.name == tool)
        uri = listed.meta["ui"]["resourceUri"]
        if go is not None:
            await go.wait()
        t0 = time.monotonic()
        try:
            first = (await s.read_resource(uri)).contents[0]
        finally:
            if read is not None:
                read.set()
        read_at = time.monotonic()
        provisional = bool(first.meta["mcp-gen-ui"].get("provisional"))
        written_at = read_at if not provisional else None
        heading_at = None
        calls = 0
        while provisional:
            calls += 1
            r = await s.call_tool("_ui_page_status", {"toolName": tool, "waitMs": STATUS_WAIT_MS, "html": True, "preview": True})
            now = time.monotonic()
            if r.is_error:
                break
            st = r.structured_content or {}
            if st.get("state") == "ready" and isinstance(st.get("html"), str):
                written_at = now
                break
            if st.get("state") != "writing":
                break
            if heading_at is None and shows_heading(st.get("preview")):
                heading_at = now
        again = (await s.read_resource(uri)).contents[0]
        meta = again.meta["mcp-gen-ui"]
        return {"tool": tool, "t0": t0, "wait": read_at - t0, "provisional": provisional, "written_at": written_at,
                "heading_at": heading_at, "to_screen": (written_at - t0) if written_at else None, "status_calls": calls,
                "served_written": meta["kind"] in ("generated", "repaired") and not meta.get("provisional")}


def tool_of(record: dict) -> str:
    prompt = json.dumps(record["body"])
    at = prompt.find("Tool name: ")
    return prompt[at + 11:].split("\\n", 1)[0] if at >= 0 else "?"


def scenario(label: str, args: list[str], rich: list[str], tokens: int, folder: Path, pace: dict, markup_first: bool) -> dict:
    """One service and its hosts; what the hosts saw and what the fake provider recorded."""
    fake = TimedFake()
    fake.pace = pace
    fake.classification = {t: "rich" for t in rich}
    fake.classification_default = "minimal"
    fake.default = {"html": page(MARKER, tokens=tokens, markup_first=markup_first)}
    cfg = {"generation": {"maxConcurrentGenerations": len(rich), "timeoutMs": int(READ_BUDGET_S * 1000)}}
    name = f"bench-pace-{label.replace(' ', '-')}-{tokens}-{pace['tps']}tps"
    began = time.monotonic()
    try:
        with gen_proxy(fake, "anthropic", upstream=args, config=cfg, name=name, tmp_path=folder) as (base, _):
            async def all_hosts():
                out = []
                first_read = anyio.Event()

                async def one(t, go, read):
                    out.append(await host(base, t, go, read))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(one, rich[0], None, first_read)
                    for t in rich[1:]:
                        tg.start_soon(one, t, first_read, None)
                return out

            print(f"{label}, pages of {tokens} tokens{' (markup first)' if markup_first else ''} at {pace['tps']} tokens/s: "
                  f"{len(rich)} rich tools ...", flush=True)
            hosts = anyio.run(all_hosts)
    finally:
        fake.stop()
    by_tool = {h["tool"]: h for h in hosts}
    hosts = [by_tool[t] for t in rich if t in by_tool]
    model = {}
    for r in fake.requests:
        model.setdefault(tool_of(r), 0.0)
        model[tool_of(r)] += (r["end"] or r["start"]) - r["start"]
    gens = {t: [g for g in fake.generations() if tool_of(g) == t] for t in rich}
    for h in hosts:
        h["first"] = h["tool"] == rich[0]
        h["model"] = model.get(h["tool"], 0.0)
        h["generations"] = len(gens[h["tool"]])
        h["heading_written"] = h["heading_paced"] = h["model_end"] = None
        for g in gens[h["tool"]]:
            end = g.get("text", "").find("</h1>")
            at = next((t for t, n in g.get("sent", []) if end >= 0 and n >= end + 5), None)
            if at is not None and (h["heading_written"] is None or at < h["heading_written"]):
                h["heading_written"] = at
                h["heading_paced"] = g["start"] + pace["first"] + (end + 5) / 4 / pace["tps"]
            if g["completed"] and g["end"] and (h["model_end"] is None or g["end"] > h["model_end"]):
                h["model_end"] = g["end"]
        # The heading is on screen from the preview, or else with the written page itself.
        h["heading_on_screen"] = h["heading_at"] or h["written_at"]
        h["first_text"] = (h["heading_on_screen"] - h["heading_written"]) if h["heading_on_screen"] and h["heading_written"] else None
        h["after_end"] = (h["written_at"] - h["model_end"]) if h["written_at"] and h["model_end"] else None
        # Where the time from the first read to the page in the View went beyond the model's own.
        h["over_model"] = (h["to_screen"] - h["model"]) if h["to_screen"] is not None else None
        h["gaps"] = (h["over_model"] - h["after_end"]) if h["over_model"] is not None and h["after_end"] is not None else None
    return {"label": label, "tokens": tokens, "pace": pace, "markup_first": markup_first, "rich": rich, "hosts": hosts,
            "seconds": time.monotonic() - began}


def issue29_rows(run: dict) -> list[tuple]:
    label, tokens, rich, hosts = run["label"], run["tokens"], run["rich"], run["hosts"]
    gens = {h["tool"]: h["generations"] for h in hosts}
    served = sum(1 for h in hosts if h["served_written"])
    over = [h["to_screen"] - h["model"] for h in hosts if h["to_screen"] is not None]
    ratio = [h["to_screen"] / h["model"] for h in hosts if h["to_screen"] is not None and h["model"]]
    worst_wait = max(h["wait"] for h in hosts)
    mean_model = sum(h["model"] for h in hosts) / len(rich)
    return [
        (f"{label} {tokens} tok: written page served after the first read", f"{served}/{len(rich)} ({100 * served / len(rich):.0f}%)",
         "100%", served == len(rich)),
        (f"{label} {tokens} tok: the model's own time a tool (mean)", f"{mean_model:.1f} s", "-", None),
        (f"{label} {tokens} tok: first read to page in the View, over the model's time (worst)",
         f"+{max(over):.2f} s ({max(ratio):.3f}x)" if over else "never", "<= +1 s", bool(over) and max(over) <= 1.0),
        (f"{label} {tokens} tok: host's wait on the first read (worst)", f"{worst_wait:.2f} s", f"<= {READ_BUDGET_S:.0f} s",
         worst_wait <= READ_BUDGET_S + 0.5),
        (f"{label} {tokens} tok: LLM page generations per rich tool", ", ".join(sorted({str(n) for n in gens.values()})), "exactly 1",
         len(gens) == len(rich) and all(n == 1 for n in gens.values())),
        (f"{label} {tokens} tok: status calls a page made while it waited (max)", str(max(h["status_calls"] for h in hosts)), "-", None),
    ]


def worst_median(values: list[float], unit: str = " s") -> str:
    if not values:
        return "none"
    return f"worst {max(values):.2f}{unit}, median {statistics.median(values):.2f}{unit}"


def issue43_rows(run: dict) -> list[tuple]:
    """The slow model, markup-first pages."""
    label, hosts = run["label"], run["hosts"]
    first = [h for h in hosts if h["first"]]
    later = [h for h in hosts if not h["first"]]
    waits = [h["wait"] for h in hosts]
    texts = [h["first_text"] for h in hosts if h["first_text"] is not None]
    from_preview = sum(1 for h in hosts if h["heading_at"] is not None)
    ends = [h["after_end"] for h in hosts if h["after_end"] is not None]
    p = f"{label} {run['tokens']} tok, {run['pace']['tps']} tok/s:"
    rows = [
        (f"{p} first read's wait, all {len(hosts)} tools", worst_median(waits), f"<= {FIRST_READ_TARGET_S:.0f} s",
         max(waits) <= FIRST_READ_TARGET_S),
    ]
    for h in first:
        rows.append((f"{p} first read's wait, first tool (pace not yet known)", f"{h['wait']:.2f} s ({h['tool']})",
                     f"<= {FIRST_READ_TARGET_S:.0f} s", h["wait"] <= FIRST_READ_TARGET_S))
    if later:
        lw = [h["wait"] for h in later]
        rows.append((f"{p} first read's wait, later tools (pace learnt)", worst_median(lw), f"<= {FIRST_READ_TARGET_S:.0f} s",
                     max(lw) <= FIRST_READ_TARGET_S))
    rows += [
        (f"{p} first text on screen after the model wrote it", worst_median(texts) + f" ({from_preview}/{len(hosts)} from the preview)"
         if texts else "never", f"<= {FIRST_TEXT_TARGET_S:.0f} s", len(texts) == len(hosts) and max(texts) <= FIRST_TEXT_TARGET_S),
        (f"{p} whole page on screen after the model's end", worst_median(ends) if ends else "never",
         f"<= {WHOLE_PAGE_TARGET_S:.0f} s", len(ends) == len(hosts) and max(ends) <= WHOLE_PAGE_TARGET_S),
        (f"{p} LLM page generations per tool", ", ".join(sorted({str(h["generations"]) for h in hosts})), "exactly 1",
         all(h["generations"] == 1 for h in hosts)),
    ]
    return rows


def fast_rows(run: dict) -> list[tuple]:
    label, hosts = run["label"], run["hosts"]
    p = f"{label} {run['tokens']} tok, {run['pace']['tps']} tok/s:"
    on_first = sum(1 for h in hosts if not h["provisional"])
    first = [h for h in hosts if h["first"]]
    later = [h for h in hosts if not h["first"]]
    over = [h["wait"] - h["model"] for h in hosts]
    rows = [(f"{p} written page on the first read", f"{on_first}/{len(hosts)} ({100 * on_first / len(hosts):.0f}%)", "all",
             on_first == len(hosts))]
    for h in first:
        rows.append((f"{p} first read's wait, first tool (pace not yet known)", f"{h['wait']:.2f} s (the model's own time {h['model']:.2f} s)",
                     "-", None))
    if later:
        rows.append((f"{p} first read's wait, later tools (pace learnt)", worst_median([h["wait"] for h in later])
                     + f" (the model's own time, median {statistics.median(h['model'] for h in later):.2f} s)", "-", None))
    rows += [
        (f"{p} first read's wait over the model's own time", worst_median(over).replace("worst ", "worst +").replace("median ", "median +"),
         "-", None),
        (f"{p} LLM page generations per tool", ", ".join(sorted({str(h["generations"]) for h in hosts})), "exactly 1",
         all(h["generations"] == 1 for h in hosts)),
    ]
    return rows


def secs(v) -> str:
    return "-" if v is None else f"{v:.2f} s"


def per_tool(run: dict) -> None:
    print(f"\n{run['label']}, pages of {run['tokens']} tokens{' (markup first)' if run['markup_first'] else ''} at "
          f"{run['pace']['tps']} tokens/s, per tool ({run['seconds']:.0f} s):")
    print(f"  {'tool':38} {'first read':>10} {'answer':>11} {'heading on screen':>17} {'whole page':>10} "
          f"{'model':>7} {'in View':>8} {'of it,':>8} {'gens':>4} {'calls':>5}")
    print(f"  {'':38} {'wait':>10} {'':>11} {'after written':>17} {'after end':>10} {'time':>7} "
          f"{'- model':>8} {'gaps':>8}")
    for h in run["hosts"]:
        name = h["tool"] + (" (first)" if h["first"] else "")
        answer = "provisional" if h["provisional"] else "written"
        print(f"  {name:38} {secs(h['wait']):>10} {answer:>11} {secs(h['first_text']):>17} {secs(h['after_end']):>10} "
              f"{h['model']:6.1f}s {secs(h['over_model']):>8} {secs(h['gaps']):>8} {h['generations']:>4} {h['status_calls']:>5}")


def side_by_side(jobs: list, serial: bool) -> list[dict]:
    if serial or len(jobs) == 1:
        return [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        return [f.result() for f in futures]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[3000, 8000])
    ap.add_argument("--markup-first", type=int, nargs="*", default=[3000],
                    help="page sizes (of --tokens) whose pages put the visible markup first; the issue-43 figures are for these")
    ap.add_argument("--no-fleet", action="store_true", help="the demo only, not the five servers")
    ap.add_argument("--no-fast", action="store_true", help="leave out the fast model (2,000 tokens a second)")
    ap.add_argument("--serial", action="store_true", help="the demo's and the fleet's runs one after the other, not side by side")
    ap.add_argument("--no-build", action="store_true")
    a = ap.parse_args()
    use_release(not a.no_build)
    began = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="mcp-bench-pace-"))
    fleet = five_servers(folder)
    setups = [("demo", ["--demo"], DEMO_RICH)] + ([] if a.no_fleet else [("5 servers", ["--servers-file", str(fleet)], FLEET_RICH)])

    def job(setup, tokens, pace, markup_first):
        label, args, rich = setup
        return lambda: scenario(label, args, rich, tokens, folder, pace, markup_first)

    slow, fast = [], []
    for tokens in a.tokens:
        slow += side_by_side([job(x, tokens, PACE, tokens in a.markup_first) for x in setups], a.serial)
    if not a.no_fast:
        fast = side_by_side([job(x, FAST_TOKENS, FAST_PACE, True) for x in setups], a.serial)
    print("\nPer tool. in View - model: the first read to the written page in the View, less the model's own time for the tool "
          "(its requests' durations); of it, gaps: the part that is not after the page's end (before and between the tool's requests).")
    for run in slow + fast:
        per_tool(run)

    rows29 = [row for run in slow for row in issue29_rows(run)]
    rows43 = [row for run in slow if run["markup_first"] for row in issue43_rows(run)]
    rows43 += [row for run in fast for row in fast_rows(run)]
    heads = [h for run in slow if run["markup_first"] for h in run["hosts"] if h["heading_written"] and h["heading_paced"]]
    print()
    print("Notes: the moment the model wrote the heading is the fake's own record of when it sent the chunk that completed "
          "\"</h1>\" (the bench's FakeLLM subclass notes every chunk's send time; fake_llm.py is unchanged), not computed from the pace"
          + (f"; the pace's estimate (start + 1.5 s + offset/4/tps) differs from it by worst {max(abs(h['heading_written'] - h['heading_paced']) for h in heads):.3f} s"
             if heads else "") + ".")
    print("The heading is on screen when a status call's preview (preview: true, waitMs 2500, called again at once while writing, as "
          "provisional.js does) first shows the <h1> with its text, or else with the written page; the whole page when the status call "
          "returns \"ready\" with the page, against the fake's recorded end of the page's request.")
    print(f"The demo's and the fleet's runs went {'one after the other' if a.serial else 'side by side'}; "
          f"the whole bench took {time.monotonic() - began:.0f} s.")
    summary("pages at a hosted model's pace (first token 1.5 s, 60 tokens/s)", rows29)
    if rows43:
        summary("no blank wait (issue 43): markup-first pages, at 60 tokens/s and at 2,000 tokens/s (first token 1.5 s)", rows43)


if __name__ == "__main__":
    main()
