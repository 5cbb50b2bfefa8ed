#!/usr/bin/env bash
# The one test command: installs what the tests need (npm peers into tests/node, Python venvs in
# tests/.venv and tests/.venv-tasks26), builds, and runs every test: Rust units, then the end-to-end
# suite with real MCP servers, real MCP clients and the official conformance suite.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

step() { printf '\n=== %s\n' "$*"; }

step "system packages (Debian: chromium for browser tests, promtool and docker-compose for deploy/, redis-server and haproxy for replicas, docker.io and debootstrap for the compose stacks)"
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v strip >/dev/null 2>&1 || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

step "Docker engine (tests/e2e/test_compose.py runs the deploy/ compose stacks: a missing engine fails the run unless MCP_GEN_UI_SKIP=compose)"
tests/docker_engine.sh tests/artifacts || exit 1

step "npm peers (tests/node)"
(cd tests/node && npm ci --no-audit --no-fund --loglevel=error)

step "Python venv (tests/.venv)"
if [ ! -x tests/.venv/bin/python ]; then
  python3 -m venv tests/.venv
fi
tests/.venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt

step "Python venv for the 2026 tasks upstream (tests/.venv-tasks26: fastmcp-tasks, whose pins clash with tests/requirements.txt)"
if [ ! -x tests/.venv-tasks26/bin/python ]; then
  python3 -m venv tests/.venv-tasks26
fi
tests/.venv-tasks26/bin/pip install --quiet --disable-pip-version-check -r tests/tasks26-requirements.txt

step "build"
cargo build --locked --workspace --all-targets

step "format and lint"
cargo fmt --all -- --check
cargo clippy --locked --workspace --all-targets -- -D warnings

step "unused dependencies"
python3 tests/check_unused_deps.py

step "lint the test code"
tests/.venv/bin/python -m pyflakes tests/e2e tests/bench tests/containers

step "docs book (MkDocs, strict: broken links fail)"
tests/.venv/bin/mkdocs build --strict -f mkdocs.yml -d tests/artifacts/docs-site

step "unit tests"
cargo test --locked --workspace

step "end-to-end tests"
export MCP_GEN_UI_BIN="$ROOT/target/debug/mcp-gen-ui"
tests/.venv/bin/python -m pytest tests/e2e -q -p no:cacheprovider "$@"

step "template page parts (Node's test runner: the schema model, the validation, the result helpers, the View runtime, the assembly), and the provisional page's own check of its preview"
node --test templates/page/*.test.mjs templates/provisional.test.mjs

step "template page as served (the same Node tests, and the View runtime's, against the minified scripts of a template page the debug build serves over HTTP: tests/served_page.py saves it)"
timeout 120 python3 tests/served_page.py tests/artifacts/served-page.html "$MCP_GEN_UI_BIN"
SERVED_PAGE=tests/artifacts/served-page.html timeout 300 node --test templates/page/*.test.mjs

step "browser tests (headless Chromium, official AppBridge)"
(cd tests/node && node --test browser/)
