"""Issue 54 item 2: the metrics reference (docs/reference/metrics.md, generated from the
registry the service builds) is what a running service's /metrics has, in each main
configuration: offline, with a provider, with traces, and several people with several servers
and rules. Every family /metrics shows is on the page with its type and labels; every family the
page says is there at start is there, counters at zero, and one it says appears only with a
feature is absent without it. The Grafana dashboard and the book name only families (and
labels) of the page."""

import json
import re
import urllib.request
from pathlib import Path

from conftest import BIN, METRICS_TOKEN, ROOT, proxy_http

REFERENCE = ROOT / "docs" / "reference" / "metrics.md"
SEVERAL = " (several servers)"


def reference() -> dict:
    """{name: {"type", "labels": [(label, several servers only)], "appears", "feature"}} from the page."""
    rows = {}
    for line in REFERENCE.read_text().splitlines():
        m = re.match(r"^\| `(mcp_gen_ui_\w+)` \| (\w+) \| (.*?) \| (.*?) \| .* \|$", line)
        if not m:
            continue
        name, kind, labels, appears = m.groups()
        parsed = [] if labels == "none" else [(re.match(r"`(\w+)`", x).group(1), x.endswith(SEVERAL)) for x in labels.split(", ")]
        start = re.match(r"at start(?: with `(\w+)`)?", appears)
        rows[name] = {"type": kind, "labels": parsed, "start": bool(start), "feature": start.group(1) if start else None}
    assert len(rows) > 30, f"the table of {REFERENCE} was not read: {len(rows)} rows"
    return rows


def scrape_text(text: str) -> dict:
    """{family: {"type", "samples": [(labels, value)]}} from Prometheus text."""
    families, samples = {}, []
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            families[name] = {"type": kind, "samples": []}
        elif line and not line.startswith("#"):
            m = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
            samples.append((m.group(1), dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or "")), float(m.group(3))))
    for sample, labels, value in samples:
        family = max((f for f in families if sample == f or sample.startswith(f + "_")), key=len)
        families[family]["samples"].append((labels, value))
    return families


def scrape(base: str, token: str | None = None) -> dict:
    req = urllib.request.Request(base + "/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return scrape_text(r.read().decode())


def holds(base: str, features: set, several: bool, token: str | None = None):
    ref, got = reference(), scrape(base, token)
    wrong = []
    for name, fam in got.items():
        if name not in ref:
            wrong.append(f"{name}: on /metrics, not in the reference")
            continue
        want = {label for label, only_several in ref[name]["labels"] if several or not only_several}
        if fam["type"] != ref[name]["type"]:
            wrong.append(f"{name}: a {fam['type']} on /metrics, a {ref[name]['type']} in the reference")
        for labels, _ in fam["samples"]:
            if set(labels) - {"le"} != want:
                wrong.append(f"{name}: labels {sorted(set(labels) - {'le'})} on /metrics, {sorted(want)} in the reference")
                break
    for name, row in ref.items():
        if not row["start"]:
            continue
        if row["feature"] and row["feature"] not in features:
            if name in got and got[name]["samples"]:
                wrong.append(f"{name}: the reference says it appears with `{row['feature']}`, which is off, but it is on /metrics")
            continue
        if name not in got or not got[name]["samples"]:
            wrong.append(f"{name}: the reference says it is there at start, /metrics has no series of it")
        elif row["type"] == "counter" and any(v != 0 for _, v in got[name]["samples"]):
            wrong.append(f"{name}: a counter the reference says is there at start is not at zero: {got[name]['samples']}")
    assert not wrong, "the metrics reference and /metrics differ:\n" + "\n".join(wrong)


def test_offline(tmp_path):
    with proxy_http(["--demo"], name="proxy-metrics-ref-offline") as (base, _):
        holds(base, set(), several=False)


def test_with_a_provider(fake, tmp_path):
    from test_generation import gen_proxy

    with gen_proxy(fake, "openai", name="proxy-metrics-ref-provider", tmp_path=tmp_path) as (base, _):
        holds(base, {"provider"}, several=False)


def test_with_traces(tmp_path):
    from otlp_receiver import OtlpReceiver

    receiver = OtlpReceiver()
    try:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        with proxy_http(["--demo"], name="proxy-metrics-ref-traces", env=env) as (base, _):
            holds(base, {"tracing"}, several=False)
    finally:
        receiver.stop()


def test_several_people_servers_and_rules(tmp_path):
    servers = {"mcpServers": {name: {"command": str(BIN), "args": ["demo-upstream"]} for name in ("weather", "forecast")}}
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    cfg = {"server": {"auth": {"tokens": ["alice:alice-token-3c9e1f7a", "bob:bob-token-8d2b6e4c"], "admins": ["alice"]}},
           "policy": {"rules": [{"name": "bob reads", "tools": ["*__set_*"], "effect": "deny", "when": "principal.name == 'bob'"}]},
           "audit": {"file": str(tmp_path / "audit.jsonl")}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with proxy_http(["--servers-file", str(tmp_path / "servers.json"), "--config", str(tmp_path / "config.json")],
                    name="proxy-metrics-ref-team") as (base, _):
        holds(base, {"rules"}, several=True, token=METRICS_TOKEN)


def test_a_family_the_reference_lacks_fails_the_comparison():
    """The comparison itself: a family /metrics has and the page does not is named."""
    text = "# HELP mcp_gen_ui_new_total x\n# TYPE mcp_gen_ui_new_total counter\nmcp_gen_ui_new_total 0\n"
    got = scrape_text(text)
    assert got == {"mcp_gen_ui_new_total": {"type": "counter", "samples": [({}, 0.0)]}}
    assert "mcp_gen_ui_new_total" not in reference()


def families_named(text: str) -> set:
    """The families a text names (`mcp_gen_ui_x_bucket` is the family `mcp_gen_ui_x`)."""
    ref = reference()
    out = set()
    for name in re.findall(r"mcp_gen_ui_[a-z_]+[a-z]", text):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        out.add(base if base in ref else name)
    return out


def test_the_dashboard_queries_only_families_and_labels_of_the_reference():
    ref = reference()
    dash = json.loads((ROOT / "deploy" / "grafana" / "dashboards" / "mcp-gen-ui.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10
    wrong = []
    for expr in exprs:
        names = families_named(expr)
        unknown = [n for n in names if n not in ref]
        if unknown:
            wrong.append(f"{expr}: no such family {unknown}")
            continue
        labels = {label for n in names for label, _ in ref[n]["labels"]} | {"le"}
        used = set(re.findall(r"\bby \(([^)]*)\)", expr)) | set(re.findall(r"[{,]\s*(\w+)\s*=~?", expr))
        used = {u.strip() for group in used for u in group.split(",") if u.strip()}
        if used - labels:
            wrong.append(f"{expr}: labels {sorted(used - labels)} are not labels of {sorted(names)}")
    assert not wrong, "\n".join(wrong)


def test_the_book_names_only_families_of_the_reference():
    ref = reference()
    wrong = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for name in families_named(page.read_text()):
            if name not in ref:
                wrong.append(f"{page.relative_to(ROOT)}: {name}")
    assert not wrong, "the book names metrics the service has not: " + ", ".join(wrong)


def test_the_printed_reference_is_the_shipped_page():
    import subprocess

    out = subprocess.run([str(BIN), "--print-metrics-reference"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout == REFERENCE.read_text(), "regenerate: mcp-gen-ui --print-metrics-reference > docs/reference/metrics.md"


def test_the_books_scrape_configs_are_valid_prometheus_configs(tmp_path):
    """The scrape configurations of operations.md's 'Scraping metrics', each checked by promtool
    (its token file placed where the example names it, under tmp_path)."""
    import subprocess

    text = (ROOT / "docs" / "operations.md").read_text()
    section = text.split("### Scraping metrics", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    assert len(blocks) == 2, blocks
    for i, block in enumerate(blocks):
        for path in re.findall(r"credentials_file: (\S+)", block):
            placed = tmp_path / Path(path).name
            placed.write_text("scrape-token\n")
            block = block.replace(path, str(placed))
        config = tmp_path / f"prometheus-{i}.yml"
        config.write_text(block)
        out = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True, text=True)
        assert out.returncode == 0, (block, out.stdout + out.stderr)
