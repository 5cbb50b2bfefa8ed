"""Issue 44: `mcp-gen-ui check` validates a configuration without starting anything and says
what it would serve; a broken one exits 2 naming the file, the field and what to do."""

import json
import os
import subprocess
import sys

import pytest

from conftest import BIN


def check(*args, cwd=None, env=None):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_GEN_UI_") and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    full_env.update(env or {})
    p = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=30, cwd=cwd, env=full_env)
    return p.returncode, p.stdout, p.stderr


def test_a_valid_setup_is_summarised_and_nothing_starts(tmp_path):
    marker = tmp_path / "started"
    # A server whose command would leave a mark if check ran it.
    servers = {"mcpServers": {
        "weather": {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]},
        "github": {"command": "github-mcp-server", "args": ["stdio"], "perPrincipal": True,
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${principal:GITHUB_TOKEN}"}}}}
    (tmp_path / "servers.json").write_text(json.dumps(servers))
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"alice": {"GITHUB_TOKEN": "ghp-never-printed"}}))
    os.chmod(secrets, 0o600)
    cfg = {"server": {"listen": "127.0.0.1:18099", "auth": {"tokens": ["alice:alice-token-never-printed"], "admins": ["alice"]}},
           "policy": {"default": "deny", "rules": [{"name": "alice all", "effect": "allow", "when": "principal.name == 'alice'"}]},
           "profiles": {"small": {"tools": ["weather__*"]}},
           "audit": {"file": str(tmp_path / "audit.jsonl")}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    code, out, err = check("check", "--config", str(tmp_path / "config.json"), "--servers-file", str(tmp_path / "servers.json"),
                           "--principal-secrets", str(secrets))
    assert code == 0, err
    assert "the configuration is valid" in out
    for said in ["weather (stdio", "github (stdio: github-mcp-server, one connection per person)", "/mcp/small (list)",
                 "1 rule(s), default deny: alice all (allow)", "1 static token(s) (alice)", "admins: alice", "http on 127.0.0.1:18099",
                 str(tmp_path / "audit.jsonl")]:
        assert said in out, (said, out)
    assert "never-printed" not in out + err
    assert not marker.exists(), "check started a server"
    assert not (tmp_path / "audit.jsonl").exists(), "check wrote the audit file"


@pytest.mark.parametrize("where, content, flags, field, says", [
    ("config", {"sever": {}}, [], "sever", "fix its spelling"),
    ("config", {"policy": {"rules": [{"effect": "deny", "when": "args.city =="}]}}, ["--demo"], "policy.rules[0].when", "line 1"),
    ("config", {"profiles": {"bad name!": {"tools": ["*"]}}}, ["--demo"], "profiles", ""),
    ("config", {"server": {"auth": {"people": {"bob": {"subjects": ["u-1"]}}, "tokens": ["bob:bob-token-0000000001"]}}}, ["--demo"],
     "server.auth.people.bob", "server.auth.people.bob.tokens"),
    ("config", {"audit": {"file": "/nonexistent-folder/audit.jsonl"}}, ["--demo"], "audit.file", "does not exist"),
    ("servers", {"mcpServers": {"gh": {"command": "x", "env": {"T": "${input:token}"}}}}, [], "", "input:token"),
    ("servers", {"mcpServers": {"gh": {"type": "http", "url": "http://127.0.0.1:9/mcp", "perPrincipal": True}}}, [],
     "servers.gh.perPrincipal", "tokens"),
])
def test_errors_name_the_file_the_field_and_what_to_do(tmp_path, where, content, flags, field, says):
    path = tmp_path / f"{where}.json"
    path.write_text(json.dumps(content))
    flag = "--config" if where == "config" else "--servers-file"
    code, out, err = check(*flags, "check", flag, str(path))
    assert code == 2, (out, err)
    first = err.splitlines()[0]
    assert first.startswith(f"mcp-gen-ui check: {path}: {field}"), first
    assert says in first, first
    assert "nothing was started" in err


def test_a_secrets_file_others_can_read_is_refused(tmp_path):
    secrets = tmp_path / "secrets.json"
    secrets.write_text(json.dumps({"alice": {"T": "x"}}))
    os.chmod(secrets, 0o644)
    code, _, err = check("--demo", "check", "--principal-secrets", str(secrets))
    assert code == 2 and str(secrets) in err and "chmod 600" in err, err
