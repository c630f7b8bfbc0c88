#!/usr/bin/env bash
# on-own-stack.sh NAME COMMAND...: runs COMMAND from this checkout on a local
# stack of its own, in a network namespace of its own (only loopback), and
# takes that stack down after. The stack keeps its files in .local/NAME
# (GANTRY_LOCAL_DIR) and shares the built cluster binaries; its ports are the
# usual ones, in its own namespace, so it shares nothing with the stack the
# other tests use.
#
# `make test` runs the browser tests (./e2e) this way, beside the other
# packages: they hold the local cluster's GPUs and restart its API server and
# PostgreSQL, so on the shared stack they could only run after everything
# else. It runs LATER_STACK_PACKAGES this way too, after the isolated
# devcluster tests, to shorten the shared stack's lane.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
name=$1
shift

netns="gantry-$name-$$"
export GANTRY_LOCAL_DIR="$root/.local/$name"
# The cluster binaries are built once, by the `gantry-dev up` of the shared
# stack, wherever that keeps them.
export GANTRY_BIN_DIR="${GANTRY_BIN_DIR:-$root/.local/bin}"
mkdir -p "$GANTRY_LOCAL_DIR"

ip netns add "$netns" || exit 1
cleanup() {
	ip netns exec "$netns" go run ./cmd/gantry-dev down >/dev/null 2>&1 ||
		echo "on-own-stack: the $name stack did not go down; its logs are in $GANTRY_LOCAL_DIR/logs" >&2
	ip netns delete "$netns"
}
trap cleanup EXIT
ip netns exec "$netns" ip link set lo up || exit 1

ip netns exec "$netns" "$@"
