#!/usr/bin/env bash
# Issue 30's finding: the demand-paged FTLs at 30 GiB (the paper's device), 1 TiB and 4 TiB with
# the same DRAM ratios. Each run: the paper geometry sized by --capacity, a sequential fill of the
# logical space, then 64 jobs x 2,000 random 4 KiB reads and 64 jobs x 2,000 random 4 KiB writes
# (examples/capacity-scaling.fio). No --verify: the oracle would take 4 B per logical page more.
#   scripts/capacity-scaling.sh [OUT_DIR] [FTL...]   (default results/capacity; ~25 minutes,
#                                                     up to 16 GiB of memory per 4 TiB run)
# Writes one JSON and one /usr/bin/time report per FTL and size, then capacity.md (table) and
# capacity.svg (plot) via scripts/capacity-scaling.py.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/capacity}
shift || true
ftls=("$@")
[ ${#ftls[@]} -gt 0 ] || ftls=(dftl tpftl leaftl learnedftl)
mkdir -p "$out"
cargo build --release -q -p learnedftl-cli
bin=target/release/learnedftl
for cap in 30GiB 1TiB 3.75TiB; do
    for ftl in "${ftls[@]}"; do
        echo "$ftl $cap" >&2
        /usr/bin/time -v -o "$out/$ftl-$cap.time" "$bin" run --ftl "$ftl" --preset paper \
            --capacity "$cap" --precondition write:512k:1 --job examples/capacity-scaling.fio \
            --quiet --json "$out/$ftl-$cap.json" >/dev/null
    done
done
python3 scripts/capacity-scaling.py "$out"
