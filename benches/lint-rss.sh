#!/usr/bin/env bash
# Peak RSS of `infera lint -j1` over a small and a twice as large corpus of
# the real InferaDeployment manifests in tests/fixtures, for every output
# format: memory must not grow with the corpus (target: 24 MiB within
# 1.15x of 12 MiB; figures in docs/benchmarks.md).
#
#   benches/lint-rss.sh                 # 12 vs 24 MiB, target/release/infera
#   INFERA=path/to/infera SMALL_MB=6 benches/lint-rss.sh
#
# Peak RSS is GNU time's "Maximum resident set size" (`/usr/bin/time -f %M`,
# the kernel's ru_maxrss of exactly that process). The corpora are copies of
# the fixture files in copy-N/ directories, in a temporary directory removed
# at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${INFERA:-target/release/infera}
small=${SMALL_MB:-12}
[[ -x "$bin" ]] || cargo build --release --locked --bin infera
[[ -x /usr/bin/time ]] || { echo "needs GNU time (apt-get install -y time)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t sources < <(grep -l "kind: InferaDeployment" tests/fixtures/*.yaml)
per_copy=$(cat "${sources[@]}" | wc -c)

# corpus DIR MIB: copies of the sources until DIR holds at least MIB MiB.
corpus() {
    local dir=$1 target=$(($2 * 1024 * 1024)) bytes=0 n=0
    while ((bytes < target)); do
        mkdir -p "$dir/copy-$n"
        cp "${sources[@]}" "$dir/copy-$n/"
        bytes=$((bytes + per_copy))
        n=$((n + 1))
    done
}

# peak FORMAT DIR: peak RSS in KiB of one run.
peak() {
    /usr/bin/time -f %M -o "$work/rss" "$bin" lint --format "$1" -j1 --fail-on never "$2" \
        >/dev/null 2>/dev/null || true
    tail -n1 "$work/rss"
}

corpus "$work/small" "$small"
corpus "$work/large" $((2 * small))
printf '%-8s %14s %14s %8s\n' format "${small} MiB (KiB)" "$((2 * small)) MiB (KiB)" ratio
for format in human json sarif github; do
    a=$(peak "$format" "$work/small")
    b=$(peak "$format" "$work/large")
    ratio=$(python3 -c "print(f'{$b / $a:.3f}')")
    verdict=$(python3 -c "print('ok' if $b / $a <= 1.15 else 'MISSED')")
    printf '%-8s %14s %14s %8s  %s\n' "$format" "$a" "$b" "$ratio" "$verdict"
done
