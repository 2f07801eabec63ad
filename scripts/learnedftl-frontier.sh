#!/usr/bin/env bash
# Issues 11, 29 and 53's trade-off: write-phase WAF and IOPS, and the idle work before the reads,
# against the model hit ratio afterwards, for TPFTL (reference), the paper design's
# line-collection ablation, the log design's merge budgets without idle merges (issue 11's
# curve), its idle-merge budgets (issue 29's; `idle-8` is the default) and both budgets together
# (issue 53's `both-M-I`: merge_budget=M idle_merge_budget=I). Quick preset, seed 1, default
# settings (the shared GC reserve, gap-filling timing, the settle phase before the reads, in
# which idle merges run).
#   scripts/learnedftl-frontier.sh [OUT_DIR]     (default results/frontier; ~1 minute)
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
for b in 0 2 4 6 8 12 16 32 inf; do
    run "log-budget-$b" learnedftl "merge_budget=$b" idle_merge_budget=0
done
for i in 0.5 1 2 3 4 6 8 inf; do
    run "idle-$i" learnedftl "idle_merge_budget=$i"
done
for mi in 2-0.5 2-1 4-0.5; do
    run "both-$mi" learnedftl "merge_budget=${mi%-*}" "idle_merge_budget=${mi#*-}"
done
python3 scripts/frontier.py "$out"
