#!/usr/bin/env bash
# The lint benchmark, end to end (see benches/lint.rs for what it measures).
# Builds the criterion bench and the optimised binary, generates a ~60 MiB
# corpus into a temporary directory (removed afterwards), and prints parse-only
# vs lint throughput, the 1 vs 2 thread speedup, peak RSS and single-file
# wall time, each as a ratio against parse-only (or its target) measured in
# the same run.
#
#   benches/lint-harness.sh                       # everything (~12 min on 2 idle cores)
#   INFERA_BENCH_MB=10 benches/lint-harness.sh    # a smaller corpus
#   benches/lint-harness.sh lint-json             # only benchmarks matching a filter
#   benches/lint-harness.sh --callgrind           # instruction counts instead (valgrind)
#
# Knobs: INFERA_BENCH_MB (corpus size, default 60), INFERA_BENCH_CORPUS
# (directory of manifests to copy, default tests/fixtures), INFERA_BENCH_RUNS (single-file runs, default 100).
#
# Wall-clock figures are only comparable on an idle machine (the load average
# is printed with them). `--callgrind` counts instructions instead, which do
# not move with the load: the lint / parse-only ratio, and the share of the
# work done outside the parallel per-file loop, from which Amdahl's law gives
# the best 2-thread speedup the code allows.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" != "--callgrind" ]]; then
    # Builds the optimised binary it measures (target/release/infera) as well.
    cargo bench --locked --bench lint -- "$@"
    # Cross-check the single-file time with hyperfine when it is installed
    # (`apt-get install -y hyperfine`).
    if command -v hyperfine >/dev/null 2>&1; then
        small=tests/fixtures/infera_v1alpha1_inferadeployment.yaml
        hyperfine --warmup 5 --runs 100 -N \
            "target/release/infera lint --format json --fail-on never $small"
    fi
    exit 0
fi

command -v valgrind >/dev/null || { echo "--callgrind needs valgrind (apt-get install -y valgrind)" >&2; exit 2; }
# The bench's own executable (cargo also lists the `infera` binary it builds).
bench=$(cargo bench --locked --bench lint --no-run --message-format=json 2>/dev/null |
    grep '"kind":\["bench"\]' | grep -o '"executable":"[^"]*"' | tail -1 | cut -d'"' -f4)
[[ -x "$bench" ]] || { echo "cannot find the lint bench executable" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export INFERA_BENCH_MB="${INFERA_BENCH_MB:-2}"

# Instructions of one run: $1 = what, $2 = threads; prints "total main-thread".
count() {
    INFERA_BENCH_ONE=$1 INFERA_BENCH_THREADS=$2 valgrind --tool=callgrind \
        --separate-threads=yes --callgrind-out-file="$out/$1-$2.%p" "$bench" >/dev/null 2>&1
    local total=0 main=0 f n
    for f in "$out/$1-$2".*; do
        n=$(awk '/^(totals|summary):/ {print $2; exit}' "$f")
        [[ -n "$n" ]] || continue
        total=$((total + n))
        [[ "$f" == *-01 ]] && main=$n
    done
    echo "$total $main"
}
read -r none_total none_main < <(count none 1)
read -r generic_total _ < <(count generic-parse 1)
read -r parse_total _ < <(count parse-only 1)
read -r lint_total lint_main < <(count lint-json 1)
python3 - "$none_total" "$none_main" "$generic_total" "$parse_total" "$lint_total" "$lint_main" "$INFERA_BENCH_MB" <<'PY'
import sys
none_t, none_m, generic_t, parse_t, lint_t, lint_m, mb = map(float, sys.argv[1:])
generic, parse, lint = generic_t - none_t, parse_t - none_t, lint_t - none_t
serial = (lint_m - none_m) / lint
print(f"callgrind over a {mb:.0f} MiB corpus, 1 thread (instructions; corpus generation subtracted)")
print(f"  serde-saphyr -> Value      {generic/1e6:12.1f} M")
print(f"  parse-only                 {parse/1e6:12.1f} M")
print(f"  lint + JSON to a sink      {lint/1e6:12.1f} M")
print(f"  lint / generic parse throughput (= generic / lint instructions)  {generic/lint:.2f}   target >= 1.30")
print(f"  lint / parse-only throughput (= parse / lint instructions)  {parse/lint:.2f}   target >= 0.70")
print(f"  outside the per-file parallel loop (walk, merge, sort, JSON)  {serial*100:.1f} % of lint")
print(f"  best 2-thread speedup that allows (Amdahl)  {1/(serial + (1-serial)/2):.2f}x   target >= 1.70")
PY
