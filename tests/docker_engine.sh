#!/usr/bin/env bash
# A Docker engine for the compose tests (tests/e2e/test_compose.py, the only tests of the
# shipped compose files and image): the one that answers, else dockerd started here when this
# runs as root. No engine fails the test command, naming it, in CI (CI=true) and out of it:
# the compose tests are skipped only when asked for by name, MCP_GEN_UI_SKIP=compose.
set -uo pipefail
ARTIFACTS=${1:-tests/artifacts}

skipped() { [[ ",${MCP_GEN_UI_SKIP:-}," == *,compose,* ]]; }
answers() { docker info >/dev/null 2>&1; }

if ! answers && [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null 2>&1; then
  mkdir -p "$ARTIFACTS"
  # Left running after the tests, like any service the machine has; its log stays beside the others.
  setsid dockerd >"$ARTIFACTS/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    answers && break
    sleep 1
  done
fi
if answers; then
  docker info --format 'engine {{.ServerVersion}}, storage {{.Driver}}'
  exit 0
fi
why=$(docker info 2>&1 | tail -n 1)
if skipped; then
  echo "no Docker engine answers ($why): the compose tests are skipped, as MCP_GEN_UI_SKIP=compose asks"
  exit 0
fi
{
  echo "no Docker engine answers: ${why:-docker info failed}${CI:+ (CI=$CI)}"
  echo "The compose tests (tests/e2e/test_compose.py) need one: this command starts dockerd when it runs as root"
  echo "and Debian's docker.io is installed (see $ARTIFACTS/dockerd.log). To skip those tests on purpose, set MCP_GEN_UI_SKIP=compose."
} >&2
exit 1
