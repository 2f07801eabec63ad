#!/usr/bin/env bash
# Issue 11's trade-off: write-phase WAF and IOPS against the model hit ratio afterwards, for
# TPFTL (reference), the paper design's line-collection ablation and the default design's merge
# budgets. Quick preset, seed 1, default settings (the shared GC reserve, gap-filling timing).
#   scripts/learnedftl-frontier.sh [OUT_DIR]     (default results/frontier; ~4 minutes)
# Writes one JSON per variant, then frontier.md (table) and frontier.svg (plot) via
# scripts/frontier.py.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/frontier}
mkdir -p "$out"
cargo build --release -q -p learnedftl-cli
bin=target/release/learnedftl
common=(--preset quick --seed 1 --precondition randwrite:512k:2
        --job examples/randwrite-1x-then-randread.fio --quiet)
run() { # name ftl key=value...
    local name=$1 ftl=$2
    shift 2
    local sets=()
    for kv in "$@"; do sets+=(--set "$kv"); done
    echo "$name" >&2
    "$bin" run --ftl "$ftl" "${common[@]}" "${sets[@]}" --json "$out/$name.json" >/dev/null
}
run tpftl tpftl
run paper-line-any learnedftl design=paper group_gc=line lender=any
for b in 0 2 4 8 12 16 32 inf; do
    run "log-budget-$b" learnedftl "merge_budget=$b"
done
python3 scripts/frontier.py "$out"
