#!/bin/sh
# `make link-order`: records which functions the operator runs (callgrind, during the 7-dogu fresh
# install and steady state of `make bench-sandbox-real`) and writes them, hottest first, to
# tools/link-order/hot-functions.txt, which build.rs hands to the linker for release builds.
#
# The names are those of two builds: the release build (`cargo build --release`, what the image
# ships) and the bench build (`cargo bench`, what the sandbox benchmark measures). Cargo builds the
# same code with different crate hashes for the two, and a legacy-mangled name carries its crate's
# hash, so the benchmark runs both under the profiler: the release binary as its "before" operator.
set -eu
CARGO="${CARGO:-cargo}"
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "make link-order needs valgrind (apt-get install valgrind)" >&2; exit 1; }
work="$PWD/target/link-order"
rm -rf "$work"
mkdir -p "$work"

"$CARGO" build --release --locked --bin blueprint-operator
cp target/release/blueprint-operator "$work/release-binary"

cat > "$work/callgrind.sh" <<WRAP
#!/bin/sh
exec valgrind --tool=callgrind --demangle=no --callgrind-out-file=$work/callgrind.%p "\$@"
WRAP
chmod +x "$work/callgrind.sh"

SANDBOX_BENCH_SERVER=kube-apiserver SANDBOX_BENCH_DOGUS=7 SANDBOX_BENCH_WRAP="$work/callgrind.sh" \
    SANDBOX_BENCH_BEFORE="$work/release-binary" "$CARGO" bench --locked --bench sandbox

# callgrind marks a recursion level with "'N": the symbol is the same
awk -f tools/link-order/executed.awk "$work"/callgrind.* \
    | sed "s/'[0-9]*\$//" \
    | awk '{ cost[$2] += $1 } END { for (name in cost) print cost[name], name }' \
    | sort -k1,1nr -k2,2 \
    | awk '{ print $2 }' > tools/link-order/hot-functions.txt
echo "$(wc -l < tools/link-order/hot-functions.txt) functions in tools/link-order/hot-functions.txt"
tools/link-order/check.sh --record "$work/release-binary"
