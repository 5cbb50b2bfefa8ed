"""Benchmark (prints figures, asserts nothing): issue 31's cost of rules and of the audit trail,
in one run on loopback (wrk, tools/call echo into one Streamable HTTP session, server-everything
over stdio behind the proxy), rounds interleaved so drift hits every mode alike, medians
compared with the no-rules baseline of the same run:

- no rules (the baseline);
- 50 rules whose conditions read only the principal (decided once per principal and tool,
  then a cache lookup per call);
- the same 50 with a first rule whose condition reads the arguments (evaluated on every call);
- no rules, the audit trail on (a line per call to a file), the file on disk where the bench
  runs, and in memory (/dev/shm, where there is one): the difference is the disk's writeback,
  which runs in the kernel's threads on the same cores, not in the service;
- issue 42's: the 50 rules and the complete trail together (audit.required), against neither.

    tests/.venv/bin/python tests/bench/policy.py [--seconds 5] [--connections 8] [--rounds 3] [--no-build]
"""

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from benchlib import EVERYTHING_STDIO, TICK_US, UI_CAPS, Wrk, conftest, http_session, summary, threads_cpu, use_release


def fifty_rules(reads_args: bool) -> dict:
    rules = [{"name": f"team {i}", "tools": [f"team{i}_*"], "effect": "allow", "when": f"principal.name == 'team{i}'"} for i in range(48)]
    rules.append({"name": "nobody", "tools": ["*"], "effect": "deny", "when": "principal.name == 'mallory'"})
    rules.append({"name": "the rest", "effect": "allow"})
    if reads_args:
        rules.insert(0, {"name": "no secrets", "tools": ["*"], "effect": "deny", "when": "has(args.message) && args.message == 'secret'"})
        rules.pop(-3)  # still 50
    return {"default": "deny", "rules": rules}


def run(w: Wrk, a, name: str, config: dict, tmp: Path) -> dict:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(config))
    args = ["--upstream", EVERYTHING_STDIO, "--log-level", "warn", "--config", str(path)]
    with conftest.proxy_http(args, name=f"bench-policy-{name}") as (base, proc):
        url = base + "/mcp"
        sid = http_session(url, UI_CAPS)
        w.run(url, sid, a.connections, 1)  # warm-up
        before = threads_cpu(proc.p.pid)
        r = w.run(url, sid, a.connections, a.seconds)
        after = threads_cpu(proc.p.pid)
        used = {tid: (comm, ticks - before.get(tid, (comm, 0))[1]) for tid, (comm, ticks) in after.items()}
        total = sum(t for _, t in used.values())
        # The service's CPU per call: steadier than calls/s on shared cores, where the load
        # generator and the upstream take turns with it.
        r["cpu_us"] = total * TICK_US / max(r["requests"], 1)
        # The trail's writer thread's share of the service's CPU in the window.
        r["audit_share"] = sum(t for comm, t in used.values() if comm == "audit") / total if total else 0.0
        samples = conftest.scrape(base)
        r["decisions"] = sum(v for (n, _), v in samples.items() if n == "mcp_gen_ui_policy_decisions_total")
        r["lines"] = sum(v for (n, lab), v in samples.items() if n == "mcp_gen_ui_audit_lines_total" and dict(lab).get("outcome") == "written")
        r["dropped"] = sum(v for (n, lab), v in samples.items() if n == "mcp_gen_ui_audit_lines_total" and dict(lab).get("outcome") == "dropped")
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-build", action="store_true", help="use the release binary as it is")
    a = ap.parse_args()
    binary = use_release(not a.no_build)
    tmp = Path(tempfile.mkdtemp(prefix="bench-policy-"))
    modes = {
        "no rules": {},
        "50 rules": {"policy": fifty_rules(False)},
        "50 rules, args": {"policy": fifty_rules(True)},
        "audit on": {"audit": {"file": str(tmp / "audit.jsonl")}},
        # Issue 42: the rules and the complete trail together (every call's line, required).
        "rules + trail": {"policy": fifty_rules(False), "audit": {"file": str(tmp / "audit-both.jsonl"), "required": True}},
    }
    shm = Path("/dev/shm")
    mem = Path(tempfile.mkdtemp(prefix="bench-policy-", dir=shm)) if shm.is_dir() else None
    if mem:
        modes["audit in memory"] = {"audit": {"file": str(mem / "audit.jsonl")}}
    w = Wrk()
    print(f"{binary}; {os.cpu_count()} CPUs; wrk, {a.connections} connections, {a.seconds:g} s windows, {a.rounds} rounds, interleaved", flush=True)
    runs = {k: [] for k in modes}
    try:
        for _ in range(a.rounds):
            for k, cfg in modes.items():
                runs[k].append(run(w, a, k.replace(" ", "-").replace(",", ""), cfg, tmp))
    finally:
        w.close()
        # The trails are tens of MB a run.
        for d in (tmp, mem):
            if d:
                shutil.rmtree(d, ignore_errors=True)
    print()
    print(f"{'':16} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU us':>7} {'decided':>9} {'lines':>9} {'dropped':>8}")
    median, cpu = {}, {}
    for k, rs in runs.items():
        for r in rs:
            print(f"{k:16} {r['rps']:9.0f} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['cpu_us']:7.1f} {r['decisions']:9.0f} {r['lines']:9.0f} {r['dropped']:8.0f}")
        median[k] = statistics.median(r["rps"] for r in rs)
        cpu[k] = statistics.median(r["cpu_us"] for r in rs)
    base = median["no rules"]
    rows = [
        ("no rules, calls/s (median)", f"{base:.0f}", "-", None),
        ("50 rules / no rules", f"{median['50 rules'] / base:.2f}x", ">= 0.95x", median["50 rules"] / base >= 0.95),
        ("50 rules, one reading args / no rules", f"{median['50 rules, args'] / base:.2f}x", "-", None),
        ("audit trail on / off", f"{median['audit on'] / base:.2f}x", "-", None),
        ("50 rules and the trail (required) / neither", f"{median['rules + trail'] / base:.2f}x", ">= 0.90x", median["rules + trail"] / base >= 0.90),
    ]
    if mem:
        rows.append(("audit trail on, its file in memory / off", f"{median['audit in memory'] / base:.2f}x", "-", None))
    rows += [(f"service CPU per call, {k} / no rules", f"{cpu[k] / cpu['no rules']:.2f}x", "-", None) for k in modes if k != "no rules"]
    share = statistics.median(r["audit_share"] for r in runs["audit on"])
    rows.append(("audit trail on: its writer thread's share of the service's CPU", f"{share * 100:.1f}%", "-", None))
    summary("policy.py (issue 31: tools/call throughput with rules and the audit trail, against none, same run)", rows)


if __name__ == "__main__":
    main()
