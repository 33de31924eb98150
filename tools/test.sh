#!/usr/bin/env bash
# `make test`'s run: every test of the workspace, in two test processes side by side. The node's
# scenarios (tests/node: `node::` in the integration tests) take turns on one node, a minute or more
# each; in one process with the rest they would hold every test thread waiting for their turn, and all
# other tests would wait behind them. So they run in a process of their own beside the rest. Both write
# to this output; the run fails if either does. Then the benchmarks' smoke runs and the doc tests.
set -uo pipefail
CARGO=${CARGO:-cargo}
"$CARGO" test --workspace --all-targets --locked --no-run || exit 1
"$CARGO" test --locked -p blueprint-operator --test main -- node:: &
node=$!
"$CARGO" test --workspace --tests --locked --no-fail-fast -- --skip node::
others=$?
wait "$node"
nodes=$?
"$CARGO" test --workspace --bench '*' --locked --no-fail-fast
benches=$?
"$CARGO" test --workspace --doc --locked
docs=$?
verdict() { [ "$1" -eq 0 ] && echo passed || echo FAILED; }
echo "make test: the node's scenarios $(verdict $nodes); the other tests $(verdict $others);" \
  "the benchmarks' smoke runs $(verdict $benches); the doc tests $(verdict $docs)"
[ "$nodes" -eq 0 ] && [ "$others" -eq 0 ] && [ "$benches" -eq 0 ] && [ "$docs" -eq 0 ]
