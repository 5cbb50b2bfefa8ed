"""Benchmark (prints figures, asserts nothing): issue 11's single-connection latency figures,
measured in one run on loopback with server-everything over stdio as the upstream:

- added latency of the proxy, with one client at a time on one connection: the rmcp load client
  (`actors/examples/mcp_load.rs`, the official Rust SDK) calls echo straight to server-everything
  over stdio, through the proxy over stdio (`--transport stdio`), and through the proxy over
  Streamable HTTP (the way hosts reach it); a raw stdio JSON-RPC client (Python, no SDK) does
  the same straight and through the proxy over stdio, in interleaved batches, as a cross-check.
  The proxy's added latency is the difference of the p50s.
- a cached `ui://` read against a proxied tools/call, in the same Streamable HTTP session and
  run (wrk, 1 connection, alternating windows), with pages from the fake LLM
  (tests/e2e/fake_llm.py).

    tests/.venv/bin/python tests/bench/latency.py [--calls 2000] [--seconds 4] [--rounds 2] [--page-kb 0] [--no-build]
"""

import argparse
import os
import statistics
import subprocess
import time

from benchlib import ECHO, EVERYTHING_STDIO, ROOT, UI_CAPS, HttpMcp, StdioMcp, Wrk, conftest, http_session, pct, summary, use_release

LOAD = ROOT / "target" / "dist" / "examples" / "mcp_load"  # beside the binary when MCP_GEN_UI_BIN is set


def rmcp_load(target: str, calls: int, env: dict | None = None) -> tuple[float, float]:
    """One mcp_load run at concurrency 1: (p50 ms, p99 ms)."""
    out = subprocess.run([str(LOAD), target, str(calls), "1", "echo", '{"message": "hello"}'], capture_output=True, text=True, check=True,
                         env=dict(os.environ, **(env or {}))).stdout.split()
    return float(out[2]), float(out[3])


def rmcp_runs(a, http_url: str) -> dict:
    """Straight to the upstream over stdio, through the proxy over stdio and over HTTP; rounds
    alternate the three."""
    out = {"direct": [], "stdio": [], "http": []}
    proxy = f"stdio:{conftest.BIN} --transport stdio --log-level warn"
    for _ in range(a.rounds):
        out["direct"].append(rmcp_load("stdio:" + EVERYTHING_STDIO, a.calls))
        out["stdio"].append(rmcp_load(proxy, a.calls, env={"MCP_GEN_UI_UPSTREAM": EVERYTHING_STDIO}))
        out["http"].append(rmcp_load(http_url, a.calls))
    return out
from fake_llm import FakeLLM, page


def stdio_overhead(a) -> dict:
    env = dict(os.environ)
    direct = StdioMcp(conftest.everything_cmd("stdio"), conftest.ARTIFACTS / "bench-direct-stdio.log", env=env)
    proxied = StdioMcp([str(conftest.BIN), "--transport", "stdio", "--upstream", EVERYTHING_STDIO, "--log-level", "warn"],
                       conftest.ARTIFACTS / "bench-proxy-stdio.log", caps=UI_CAPS, env=env)
    try:
        direct.timed_calls(200, ECHO)  # warm-up (JIT, connections)
        proxied.timed_calls(200, ECHO)
        d, p = [], []
        batch = 250
        for _ in range(max(1, a.calls // batch)):
            d += direct.timed_calls(batch, ECHO)
            p += proxied.timed_calls(batch, ECHO)
    finally:
        direct.close()
        proxied.close()
    return {"direct": d, "proxied": p}


def http_floor(w: Wrk, base: str, seconds: float) -> float:
    """p50 (ms) of GET /healthz on the same proxy, 1 connection: what any HTTP round trip costs
    here (actix, loopback, wrk), with no MCP work at all."""
    out = subprocess.run([w.bin, "-t", "1", "-c", "1", "-d", f"{seconds:g}s", "--latency", base + "/healthz"],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] == ["50%"]:
            v = parts[1]
            return float(v[:-2]) / 1000 if v.endswith("us") else float(v[:-2]) if v.endswith("ms") else float(v[:-1]) * 1000
    raise RuntimeError(f"wrk printed no 50% line:\n{out}")


def http_latency(w: Wrk, a, rmcp: bool) -> dict:
    fake = FakeLLM()
    html = page("BENCH", tool="echo")
    if a.page_kb:
        rows = "".join(f"<tr><td>row {i}</td><td>{i * 7 % 1000}</td><td>{i * 0.37:.2f}</td></tr>" for i in range(a.page_kb * 1024 // 48))
        html = html.replace('<pre id="out"></pre>', f'<pre id="out"></pre><table><tbody>{rows}</tbody></table>')
    fake.default = {"html": html}
    args = ["--upstream", EVERYTHING_STDIO, "--provider", "openai", "--llm-base-url", fake.base("openai"), "--log-level", "warn"]
    try:
        with conftest.proxy_http(args, name="bench-latency-http", env={"OPENAI_API_KEY": "x"}) as (base, _):
            url = base + "/mcp"
            c = HttpMcp(url, UI_CAPS)
            first = c.request("resources/read", {"uri": "ui://echo"})
            text = first["result"]["contents"][0]["text"]
            meta = first["result"]["contents"][0].get("_meta", {}).get("mcp-gen-ui", {})
            # Python client, one request at a time, reads and calls interleaved: a cross-check.
            py_call, py_read = [], []
            for _ in range(300):
                t = time.perf_counter()
                assert "result" in c.request("tools/call", ECHO)
                py_call.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                assert "result" in c.request("resources/read", {"uri": "ui://echo"})
                py_read.append((time.perf_counter() - t) * 1000)
            c.close()
            rm = rmcp_runs(a, url) if rmcp else None
            calls, reads = [], []
            w.run(url, c.sid, 1, 1)
            # A host that takes server requests (sampling, roots) gets its answers on SSE streams.
            sse_sid = http_session(url, dict(UI_CAPS, sampling={}, roots={}))
            sse, floor = [], []
            for _ in range(a.rounds):
                floor.append(http_floor(w, base, a.seconds))
                calls.append(w.run(url, c.sid, 1, a.seconds))
                reads.append(w.run(url, c.sid, 1, a.seconds, method="resources/read", params={"uri": "ui://echo"}))
                sse.append(w.run(url, sse_sid, 1, a.seconds))
    finally:
        fake.stop()
    return {"calls": calls, "reads": reads, "size": len(text), "meta": meta, "py_call": py_call, "py_read": py_read, "rmcp": rm, "sse": sse,
            "floor": statistics.median(floor)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000, help="timed calls per side (raw client) and per rmcp run")
    ap.add_argument("--seconds", type=float, default=4, help="length of each wrk window")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--page-kb", type=int, default=0, help="pad the generated page with a table of about this many KB")
    ap.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    a = ap.parse_args()
    global LOAD
    binary = use_release(not a.no_build)
    if "MCP_GEN_UI_BIN" in os.environ:
        LOAD = binary.parent / "examples" / "mcp_load"
    elif not a.no_build:
        subprocess.run(["cargo", "build", "--profile", "dist", "-q", "-p", "mcp-gen-ui-actors", "--example", "mcp_load"], cwd=ROOT, check=True)
    rmcp = LOAD.exists()
    if not rmcp:
        print(f"note: {LOAD} is missing (cargo build --profile dist -p mcp-gen-ui-actors --example mcp_load): the rmcp client rows are skipped")
    w = Wrk()
    print(f"{binary}; {os.cpu_count()} CPUs; tools/call echo on server-everything (stdio); 1 connection", flush=True)
    try:
        st = stdio_overhead(a)
        h = http_latency(w, a, rmcp)
    finally:
        w.close()
    d50, p50 = statistics.median(st["direct"]), statistics.median(st["proxied"])
    rows = []
    if h["rmcp"]:
        rm = {k: (statistics.median(v[0] for v in rs), statistics.median(v[1] for v in rs)) for k, rs in h["rmcp"].items()}
        print()
        print(f"tools/call echo, rmcp load client (mcp_load), concurrency 1, {a.calls} calls per run, {a.rounds} runs per target, alternating")
        print(f"{'':40} {'p50 ms':>8} {'p99 ms':>8}   (per run)")
        for k, name in (("direct", "server-everything direct (stdio)"), ("stdio", "through the proxy, stdio"), ("http", "through the proxy, Streamable HTTP")):
            runs = "  ".join(f"{p:.3f}/{q:.3f}" for p, q in h["rmcp"][k])
            print(f"{name:40} {rm[k][0]:8.3f} {rm[k][1]:8.3f}   {runs}")
        rows += [
            ("rmcp client: tools/call p50 direct to the upstream, stdio", f"{rm['direct'][0]:.3f} ms", "-", None),
            ("rmcp client: added by the proxy, p50, host on Streamable HTTP", f"{rm['http'][0] - rm['direct'][0]:.3f} ms", "<= 0.15 ms",
             rm["http"][0] - rm["direct"][0] <= 0.15),
            ("rmcp client: added by the proxy, p50, host on stdio", f"{rm['stdio'][0] - rm['direct'][0]:.3f} ms", "<= 0.15 ms",
             rm["stdio"][0] - rm["direct"][0] <= 0.15),
        ]
    print()
    print(f"tools/call, sequential, raw stdio JSON-RPC client (Python), {len(st['direct'])} calls per side in interleaved batches")
    print(f"{'':40} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for name, v in (("server-everything direct (stdio)", st["direct"]), ("through the proxy (stdio both sides)", st["proxied"])):
        print(f"{name:40} {pct(v, 50):8.3f} {pct(v, 90):8.3f} {pct(v, 99):8.3f}")
    print()
    print(f"Streamable HTTP, one session, wrk 1 connection, {a.rounds} x {a.seconds:g} s windows per kind, alternating")
    print(f"ui://echo page: {h['size'] / 1024:.1f} KB (kind {h['meta'].get('kind')}, fallback {h['meta'].get('fallbackReason')})")
    print(f"{'':40} {'calls/s':>8} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8}")
    for name, rs in (("proxied tools/call", h["calls"]), ("cached ui:// read", h["reads"]),
                     ("tools/call, host takes sampling+roots (SSE)", h["sse"])):
        for r in rs:
            print(f"{name:40} {r['rps']:8.0f} {r['p50_ms']:8.3f} {r['p90_ms']:8.3f} {r['p99_ms']:8.3f}")
    print(f"{'(Python client, interleaved) tools/call':40} {'':8} {pct(h['py_call'], 50):8.3f} {pct(h['py_call'], 90):8.3f} {pct(h['py_call'], 99):8.3f}")
    print(f"{'(Python client, interleaved) ui:// read':40} {'':8} {pct(h['py_read'], 50):8.3f} {pct(h['py_read'], 90):8.3f} {pct(h['py_read'], 99):8.3f}")
    call50 = statistics.mean(r["p50_ms"] for r in h["calls"])
    read50 = statistics.mean(r["p50_ms"] for r in h["reads"])
    added = p50 - d50
    summary("latency.py (issue 11: added latency, cached reads)", rows + [
        ("raw client: tools/call p50 direct to the upstream, stdio", f"{d50:.3f} ms", "-", None),
        ("raw client: added by the proxy, p50, host on stdio", f"{added:.3f} ms", "<= 0.15 ms", added <= 0.15),
        ("wrk: tools/call p50 through the proxy, Streamable HTTP", f"{call50:.3f} ms", "-", None),
        *([("rmcp minus wrk on the proxy's HTTP: the rmcp client's own cost", f"{rm['http'][0] - call50:.3f} ms", "-", None)] if h["rmcp"] else []),
        ("wrk: same, host declares sampling+roots (answers on SSE)", f"{statistics.mean(r['p50_ms'] for r in h['sse']):.3f} ms", "-", None),
        (f"cached ui:// read p50 ({h['size'] / 1024:.0f} KB page), Streamable HTTP (wrk)", f"{read50:.3f} ms", "-", None),
        ("cached read p50 / proxied tools/call p50, same session", f"{read50 / call50:.2f}x", "<= 0.4x", read50 / call50 <= 0.4),
        # The floor says what no read can beat: an HTTP round trip that does nothing.
        ("HTTP floor: GET /healthz p50, same proxy (wrk)", f"{h['floor']:.3f} ms", "-", None),
        ("cached read p50 above the floor / proxied call p50 above the floor", f"{(read50 - h['floor']) / max(call50 - h['floor'], 1e-6):.2f}x", "-", None),
    ])


if __name__ == "__main__":
    main()
