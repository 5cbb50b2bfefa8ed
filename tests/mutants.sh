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
  actors/src/proxy/router/to_hosts.rs  # where what names no request goes (owners, tasks)
  actors/src/proxy/tasks.rs         # whose each task is
  actors/src/session/plan.rs        # the routing plan
  actors/src/policy/rules.rs        # the rules
  actors/src/policy/rules/types.rs  # wrong types in conditions
  actors/src/proxy/shares.rs        # each person's share of a table
  actors/src/mcp/own_id.rs          # an oversized message's own id
  actors/src/mcp/relayed.rs         # results kept as read
  actors/src/session/routing.rs     # a call's answer, as read or as a tree
  actors/src/session/access.rs      # the one place a request asks the rules
  actors/src/session/delivery.rs    # what reaches a host's streams
  actors/src/proxy/router/early.rs  # a task's words before the answer that makes it
  actors/src/proxy/task_runs.rs     # a 2026 server's task run for its call
)
args=()
for f in "${files[@]}"; do args+=(--file "$f"); done
[ -n "$filter" ] && args+=(--re "$filter")
# cargo-mutants: 0 every mutant caught, 2 some missed, 3 some timed out; 1 and 4 (the tests
# fail without any mutant) mean the run itself failed, and so does anything else. `timeout`
# says 124 when the time ran out: what was found so far is still shown, and said to be partial.
set +e
timeout --signal=INT "$((minutes * 60))" cargo mutants --in-place --package mcp-gen-ui-actors "${args[@]}" \
  --timeout 120 --build-timeout 300 --output target/mutants -- --lib
status=$?
set -e
missed=target/mutants/mutants.out/missed.txt
case $status in
  0) echo "every mutant was caught" ;;
  2 | 3) echo "survivors (missed) or timeouts: $missed" ;;
  124 | 130) echo "the run stopped after $minutes minutes: what follows is partial, and a partial run is not a clean one" ;;
  *) echo "cargo mutants failed (exit $status): no figures; see target/mutants/mutants.out/debug.log" >&2; exit "$status" ;;
esac
[ -f "$missed" ] && cat "$missed"
# Survivors fail the run, as failures do: a run that found any is not a clean one. Nor is a
# run cut short, or one whose mutants timed out: what they would have shown is not known.
if [ -s "$missed" ]; then exit 2; fi
case $status in
  3) echo "mutants timed out: $(cat target/mutants/mutants.out/timeout.txt 2>/dev/null | wc -l) of them, see target/mutants/mutants.out/timeout.txt" >&2; exit 3 ;;
  124 | 130) exit "$status" ;;
esac
