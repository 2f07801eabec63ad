#!/usr/bin/env bash
# The long conformance soak (docs/check.md "Soak"): `learnedftl check` with power cuts on every
# FTL and several seeds, one run at a time per lane, each run's JSON kept, then a summary.
#
#   scripts/check-soak.sh [OPS] [SEED ...]       # default: 10^8 operations, seeds 7 and 8
#   SOAK_DIR=dir SOAK_LANES=2 SOAK_FTLS="dftl leaftl" SOAK_THROUGH=nbd scripts/check-soak.sh
#
# The release binary is copied into SOAK_DIR before the first run, so rebuilding the tree while
# a soak runs changes nothing it measures (a resumed soak keeps it; delete it to soak a new build).
# Runs already done (their JSON exists in SOAK_DIR) are skipped, so an interrupted soak goes on
# where it stopped. Exit status 1 if any run failed or did not finish.
set -euo pipefail
cd "$(dirname "$0")/.."

ops=${1:-100000000}
shift || true
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(7 8)
dir=${SOAK_DIR:-target/soak}
lanes=${SOAK_LANES:-1}
through=${SOAK_THROUGH:-engine}
mkdir -p "$dir"

cargo build --release -q -p learnedftl-cli
bin=$dir/learnedftl
[ -x "$bin" ] || cp target/release/learnedftl "$bin"
ftls=${SOAK_FTLS:-$("$bin" list | sed -n 's/^FTLs: //p' | tr -d ',')}

# Every (seed, FTL) run, spread round-robin over the lanes.
runs=()
for seed in "${seeds[@]}"; do
    for ftl in $ftls; do
        runs+=("$seed $ftl")
    done
done

lane() {
    local i=$1
    for ((k = i; k < ${#runs[@]}; k += lanes)); do
        read -r seed ftl <<<"${runs[$k]}"
        local out="$dir/$ftl-$through-seed$seed.json"
        [ -s "$out" ] && continue
        nice -n 10 "$bin" check --ftl "$ftl" --seed "$seed" --ops "$ops" --power-cuts \
            --through "$through" --jobs 1 --quiet --failures "$dir/failures" \
            --json "$out.part" >"$dir/$ftl-$through-seed$seed.txt" 2>&1 || true
        [ -s "$out.part" ] && mv "$out.part" "$out"
    done
}
for ((i = 0; i < lanes; i++)); do
    lane "$i" &
done
wait

python3 - "$dir" "$through" "$ops" "${#runs[@]}" "${seeds[@]}" <<'EOF'
import json, sys, glob, os
d, through, ops, expected, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
bad, found = 0, 0
print(f"{'ftl':<11} {'seed':>4} {'ops':>11} {'reads':>10} {'GB':>7} {'cuts':>7} {'fail':>4} {'k ops/s':>8}")
for f in sorted(glob.glob(os.path.join(d, f"*-{through}-seed*.json"))):
    for r in json.load(open(f)):
        if str(r["seed"]) not in seeds:
            continue
        found += 1
        done = r["ops"] >= ops
        bad += bool(r["failures"]) or not done
        print(f"{r['ftl']:<11} {r['seed']:>4} {r['ops']:>11} {r['reads_checked']:>10} "
              f"{r['bytes_checked'] / 1e9:>7.1f} {r['power_cuts']:>7} {len(r['failures']):>4} "
              f"{r['ops_per_sec'] / 1e3:>8.0f}")
        for x in r["failures"]:
            print("  FAILED:", x.get("what"), "| replay:", x.get("replay"))
if found < expected:
    print(f"{expected - found} of {expected} runs have no report (see the .txt beside them in {d})")
sys.exit(1 if bad or found < expected else 0)
EOF
