#!/usr/bin/env bash
# Issue 29's no-regression workloads (quick, seed 1, defaults): random reads after the paper's
# randwrite:512k:6; skewed randrw (zipf 0.99 / pareto 0.9, 30 % / 70 % reads) after
# randwrite:512k:2; skewed (hot/cold) 4 KiB random writes after a sequential fill.
#   scripts/learnedftl-workloads.sh OUT_DIR NAME FTL [key=value...]   (one variant, ~3 minutes)
#   BIN=path/to/learnedftl picks another build (default target/release/learnedftl).
# Writes OUT_DIR/NAME-<workload>.json per workload; scripts/learnedftl-workloads.py OUT_DIR tabulates them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1 name=$2 ftl=$3
shift 3
mkdir -p "$out"
bin=${BIN:-target/release/learnedftl}
sets=()
for kv in "$@"; do sets+=(--set "$kv"); done
one() { # workload args...
    local w=$1
    shift
    "$bin" run --ftl "$ftl" --preset quick --seed 1 --quiet "${sets[@]}" "$@" \
        --json "$out/$name-$w.json" >/dev/null
}
one reads-after-6x --precondition randwrite:512k:6 --rw randread --numjobs 64 --number-ios 2000
for d in zipf:0.99 pareto:0.9; do
    for r in 30 70; do
        one "randrw-${d%%:*}-$r" --precondition randwrite:512k:2 --rw randrw --rwmixread "$r" \
            --random-distribution "$d" --numjobs 64 --number-ios 2000
    done
done
for d in zipf:0.99 pareto:0.9; do
    one "hotcold-${d%%:*}" --precondition write:512k:1 --rw randwrite --random-distribution "$d" \
        --numjobs 64 --number-ios 4000
done
