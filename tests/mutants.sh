#!/usr/bin/env bash
# Mutation testing of the pure decision code (not run by CI): cargo-mutants changes one thing at
# a time in the routing plan, the rules and the delivery rule of what servers send toward hosts,
# and runs the crate's unit tests against each change; a change no test notices survives.
#   tests/mutants.sh [minutes] [regex]  (default 40 minutes, every function; installs cargo-mutants
#                                        from crates.io if missing; e.g. 20 'asker|admits|About::of')
# Bounded: each mutant's build and tests time out, and the whole run stops after [minutes].
# In place (the work tree's own target, so a mutant builds in seconds): cargo-mutants puts each
# file back as it was, also when interrupted; commit or stash first all the same.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-40}
filter=${2:-}
if ! command -v cargo-mutants >/dev/null 2>&1; then
  cargo install --locked cargo-mutants
fi
files=(
  actors/src/audience.rs            # the delivery rule
  actors/src/proxy/routes.rs        # whose a server request is
  actors/src/session/plan.rs        # the routing plan
  actors/src/policy/rules.rs        # the rules
  actors/src/policy/rules/types.rs  # wrong types in conditions
)
args=()
for f in "${files[@]}"; do args+=(--file "$f"); done
[ -n "$filter" ] && args+=(--re "$filter")
timeout --signal=INT "$((minutes * 60))" cargo mutants --in-place --package mcp-gen-ui-actors "${args[@]}" \
  --timeout 120 --build-timeout 300 --output target/mutants -- --lib || true
echo "survivors (missed): target/mutants/mutants.out/missed.txt"
cat target/mutants/mutants.out/missed.txt 2>/dev/null || true
