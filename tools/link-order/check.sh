#!/bin/sh
# Whether tools/link-order/hot-functions.txt still names the functions of a release binary. The list
# holds mangled names, and a mangled name carries a hash of its crate's place in the dependency graph:
# a new or updated dependency renames every function of the crates above it, and lld, told not to warn
# about names it does not find, then orders nothing of them. That happened once unnoticed (a new
# dependency of the operator crate: peak memory at 1,000 dogus 30.3 -> 34.7 MiB, docs/performance.md).
#
# tools/link-order/recorded-matches holds how many of the list's names the binary of the recording had
# (`make link-order` writes it: `check.sh --record <binary>`). Fewer than nine tenths of them in this
# binary: the list is stale, and `make link-order` records it again. Exit status 1 then, 0 otherwise.
set -eu
dir="$(dirname "$0")"
record=false
if [ "${1:-}" = --record ]; then record=true; shift; fi
binary="${1:-target/release/blueprint-operator}"
command -v nm >/dev/null || { echo "tools/link-order/check.sh needs nm (binutils)" >&2; exit 2; }
found=$(nm --defined-only "$binary" \
    | awk 'NR == FNR { hot[$1]; next } ($3 in hot) && !seen[$3]++ { n++ } END { print n + 0 }' "$dir/hot-functions.txt" -)
if $record; then
    echo "$found" > "$dir/recorded-matches"
    echo "link order: $found of the list's functions are in the recorded release binary"
    exit 0
fi
recorded=$(cat "$dir/recorded-matches")
if [ $((found * 10)) -lt $((recorded * 9)) ]; then
    echo "link order: $binary has $found of the $recorded functions of tools/link-order/hot-functions.txt the recording found: the list is stale (a dependency or the toolchain changed the functions' names), and the binary's hot code is spread out again; run make link-order (20 to 35 minutes) and commit the list" >&2
    exit 1
fi
echo "link order: $binary has $found of the $recorded recorded functions of tools/link-order/hot-functions.txt"
