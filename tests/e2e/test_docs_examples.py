"""Issue 44: every whole config file and servers file the manual shows (README.md and docs/, the
blocks marked ```json config and ```json servers) is a test case of `mcp-gen-ui check`: written
to a file as it is and checked as a run would resolve it, it must be valid. A misspelt field
must not be.

Examples name files a run reads or writes (`/etc/mcp-gen-ui/tokens`, `/var/lib/...`), which
`check` looks at as a start would: the tokens file and the principal secrets file must exist
(the secrets file 0600), the folder of the audit file must exist. So each example is checked in
a folder of its own (its working directory), where the files it names are made first: a
relative path as it is, an absolute one under `root/` there (the example's value is rewritten
to that place, and the failure message says so). Environment variables the example names
(`${env:NAME}`) and the providers' API keys are given placeholder values."""

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN, ROOT
from docs_examples import Block, all_blocks, example_blocks

BLOCKS = example_blocks()
SCHEMA_KEYS = set(json.loads((ROOT / "config.schema.json").read_text())["properties"])

# Paths in a config file that name a file the service reads (made here with this content), a
# folder it reads, or a file or folder it writes (only its folder is made).
READS = {
    ("server", "auth", "tokensFile"): ("file", "docs-example:docs-example-token-0000000001\n", 0o600),
    ("principalSecrets", "file"): ("file", "{}\n", 0o600),
    ("generation", "promptsDir"): ("prompts", None, None),
}
WRITES = [("audit", "file"), ("logging", "file"), ("cache", "dir"), ("logging", "debugDir")]
# In a server's entry (the config's `servers`, a servers file's `mcpServers` or `servers`).
ENTRY_READS = {"envFile": ("file", "# placeholder for the docs example\n", 0o600)}


def test_the_manual_has_examples_of_both_kinds():
    kinds = {b.kind for b in BLOCKS}
    assert kinds == {"config", "servers"}, f"marked examples found: {[(b.where, b.kind) for b in BLOCKS]}"


def test_every_whole_config_file_in_the_manual_is_marked():
    """A plain ```json block that is a whole config file (only config sections at its top) is
    an example nobody checks: mark it ```json config. Objects of `servers`/`mcpServers` alone
    are left alone: a host's own file (Claude Desktop, VS Code) has that shape too."""
    unmarked = []
    for b in all_blocks():
        if b.info != "json":
            continue
        try:
            doc = json.loads(b.text)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc and set(doc) <= SCHEMA_KEYS and set(doc) - {"servers", "mcpServers"}:
            unmarked.append(b.where)
    assert not unmarked, f"whole config files in plain ```json blocks (mark them ```json config): {unmarked}"


def env_for(text: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_GEN_UI_", "OTEL_"))}
    env.update(ANTHROPIC_API_KEY="docs-example-anthropic-key", OPENAI_API_KEY="docs-example-openai-key")
    for m in re.finditer(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}", text):
        env.setdefault(m.group(1), f"docs-example-{m.group(1).lower()}")
    return env


def place(tmp, value: str, what, rewrites: list) -> str:
    """Makes what the example names at `value` inside `tmp`; returns the value to use."""
    target = tmp / "root" / value.lstrip("/") if value.startswith("/") else tmp / value
    kind, content, mode = what
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "file" and not target.exists():
        target.write_text(content)
        os.chmod(target, mode)
    elif kind == "prompts" and not target.exists():
        shutil.copytree(ROOT / "prompts", target)
    if value.startswith("/"):
        rewrites.append(f"{value} -> {target}")
        return str(target)
    return value


def prepare_entries(entries, tmp, rewrites):
    for entry in (entries or {}).values():
        if not isinstance(entry, dict):
            continue
        for key, what in ENTRY_READS.items():
            if isinstance(entry.get(key), str):
                entry[key] = place(tmp, entry[key], what, rewrites)


def prepare(doc, kind: str, tmp, rewrites: list):
    """The example with every file it names made inside `tmp`."""
    if kind == "servers":
        for key in ("mcpServers", "servers"):
            if isinstance(doc.get(key), dict):
                prepare_entries(doc[key], tmp, rewrites)
        return doc
    assert "serversFile" not in doc, "a config example naming serversFile cannot be checked alone: give its servers in `servers`"
    for path, what in READS.items():
        *parents, leaf = path
        node = doc
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(leaf), str):
            node[leaf] = place(tmp, node[leaf], what, rewrites)
    for *parents, leaf in WRITES:
        node = doc
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(leaf), str):
            node[leaf] = place(tmp, node[leaf], ("written", None, None), rewrites)
    if isinstance(doc.get("servers"), dict):
        prepare_entries(doc["servers"], tmp, rewrites)
    return doc


def run_check(block, tmp):
    try:
        doc = json.loads(block.text)
    except ValueError as e:
        pytest.fail(f"{block.where}: the example is not JSON: {e}")
    rewrites = []
    doc = prepare(doc, block.kind, tmp, rewrites)
    if block.kind == "config":
        (tmp / "config.json").write_text(json.dumps(doc, indent=2))
        args = ["check", "--config", "config.json"]
    else:
        (tmp / "config.json").write_text("{}\n")
        (tmp / "servers.json").write_text(json.dumps(doc, indent=2))
        args = ["check", "--config", "config.json", "--servers-file", "servers.json"]
    p = subprocess.run([str(BIN), *args], cwd=tmp, env=env_for(block.text), capture_output=True, text=True, timeout=30)
    return p, args, rewrites


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_the_example_is_a_valid_configuration(block, tmp_path):
    p, args, rewrites = run_check(block, tmp_path)
    assert p.returncode == 0, (
        f"{block.where}: `mcp-gen-ui {' '.join(args)}` on this ```json {block.kind} example exited {p.returncode}\n"
        f"--- the example\n{block.text}--- files placed: {rewrites or 'none'}\n--- stdout\n{p.stdout}--- stderr\n{p.stderr}"
    )
    assert "the configuration is valid" in p.stdout, p.stdout
    # Clean, too (issue 54): no name in an example matches nothing, no key is a slip.
    warnings = [line for line in p.stdout.splitlines() if line.lstrip().startswith("warning:")]
    assert not warnings, f"{block.where}: the example is valid but `check` warns:\n" + "\n".join(warnings)


def test_a_misspelt_field_is_refused_naming_it(tmp_path):
    config = next(b for b in BLOCKS if b.kind == "config")
    doc = json.loads(config.text)
    top, nested = tmp_path / "top", tmp_path / "nested"
    top.mkdir()
    nested.mkdir()
    # A section name misspelt at the top, and a field misspelt inside a section.
    for where, field, change in [(top, "sever", lambda d: d.update(sever={"listen": "127.0.0.1:8080"})),
                                 (nested, "server.lisen", lambda d: d.setdefault("server", {}).update(lisen="127.0.0.1:8080"))]:
        bad = json.loads(json.dumps(doc))
        change(bad)
        block = Block(config.path, config.line, config.info, json.dumps(bad))
        p, args, _ = run_check(block, where)
        assert p.returncode != 0, f"`mcp-gen-ui {' '.join(args)}` accepted a misspelt {field!r}: {p.stdout}"
        assert field in p.stderr and "config.json" in p.stderr, f"the message names the file and {field!r}: {p.stderr}"
        assert "spelling" in p.stderr, p.stderr
