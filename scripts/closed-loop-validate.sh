#!/usr/bin/env bash
# Validates closed-loop replay (docs/traces.md "Closed-loop replay") against live runs: for each
# FTL, `learnedftl serve --timing realtime` on PRESET records fio's nbd engine running four
# phases (a sequential fill, then 4 KiB random reads at depth 1 and 8, then 4 KiB random writes
# at depth 1, RUNTIME seconds each) with `--record-format learnedftl`, each phase marked on the
# wall clock. Then every recording is replayed closed-loop on every FTL, and the table compares
# each phase's operations per second as replayed on FTL B from FTL A's recording with B's own
# live run: the model is right where they agree (the same FTL agrees exactly by construction).
# A benchmark, not a test: on a busy machine live runs are host-bound and the comparison says
# little (docs/nbd.md "Timing").
#
#   scripts/closed-loop-validate.sh [FTL ...]     (default: ideal tpftl learnedftl)
#   PRESET=tiny RUNTIME=3 OUT=DIR
#   REPLAY_ONLY=1   replay the recordings already in OUT (a directory of an earlier run)
#                   instead of recording anew
# Needs fio (Debian package fio).
set -euo pipefail
cd "$(dirname "$0")/.."
ftls=("${@:-ideal tpftl learnedftl}")
read -r -a ftls <<<"${ftls[*]}"
preset=${PRESET:-tiny}
runtime=${RUNTIME:-3}
command -v fio >/dev/null || { echo "closed-loop-validate: fio is not installed" >&2; exit 1; }
cargo build --release -q -p learnedftl-cli
bin=$PWD/target/release/learnedftl
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
server=
trap '[ -n "$server" ] && kill -TERM "$server" 2>/dev/null; wait' EXIT

# Runs fio phase $2 (fio options after it) against port $1, appending its mark to $out/$ftl.phases.
phase() {
    local port=$1 name=$2
    shift 2
    local a b n
    a=$(date +%s%N)
    fio --name="$name" --ioengine=nbd --uri="nbd://127.0.0.1:$port/" --output-format=json "$@" |
        sed -n '/^{/,$p' >"$out/$ftl.$name.json"
    b=$(date +%s%N)
    n=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1]))['jobs']; \
print(sum(x['read']['total_ios'] + x['write']['total_ios'] for x in j))" "$out/$ftl.$name.json")
    echo "$name,$a,$b,$n" >>"$out/$ftl.phases"
}

for ftl in "${ftls[@]}"; do
    [ -n "${REPLAY_ONLY:-}" ] && break
    rm -f "$out/$ftl.phases"
    "$bin" serve --ftl "$ftl" --preset "$preset" --timing realtime --listen 127.0.0.1:0 \
        --record "$out/$ftl.rec" --record-format learnedftl >"$out/$ftl.serve.txt" 2>&1 &
    server=$!
    for _ in $(seq 100); do
        grep -q "listening on" "$out/$ftl.serve.txt" 2>/dev/null && break
        sleep 0.1
    done
    port=$(sed -n 's/^listening on .*://p' "$out/$ftl.serve.txt" | head -1)
    phase "$port" fill --rw=write --bs=128k --size=64m --iodepth=4
    phase "$port" rr1 --rw=randread --bs=4k --size=64m --iodepth=1 --runtime="$runtime" --time_based
    phase "$port" rr8 --rw=randread --bs=4k --size=64m --iodepth=8 --runtime="$runtime" --time_based
    phase "$port" rw1 --rw=randwrite --bs=4k --size=64m --iodepth=1 --runtime="$runtime" --time_based
    kill -TERM "$server"
    wait "$server" || true
    server=
done

list=$(IFS=,; echo "${ftls[*]}")
for ftl in "${ftls[@]}"; do
    "$bin" compare --ftl "$list" --preset "$preset" --trace "$out/$ftl.rec" --replay closed \
        --phases "$out/$ftl.phases" --quiet --json "$out/replay-of-$ftl.json" >/dev/null
done
python3 - "$out" "${ftls[@]}" <<'EOF'
import json, sys
out, ftls = sys.argv[1], sys.argv[2:]
live = {}
for a in ftls:
    for r in json.load(open(f"{out}/replay-of-{a}.json")):
        if r["ftl"] == a:
            for p in r["trace"]["closed_loop"]["phases"]:
                live[(a, p["name"])] = p["recorded_ops_per_sec"]
print(f"{'recorded on':<12} {'replayed on':<12} {'phase':<6} {'live ops/s':>11} {'replay ops/s':>13} {'replay/live':>11}")
for a in ftls:
    for r in json.load(open(f"{out}/replay-of-{a}.json")):
        b = r["ftl"]
        for p in r["trace"]["closed_loop"]["phases"]:
            l, s = live[(b, p["name"])], p["simulated_ops_per_sec"]
            print(f"{a:<12} {b:<12} {p['name']:<6} {l:>11.0f} {s:>13.0f} {s / l:>11.2f}")
print(f"(recordings, phases and reports in {out})")
EOF
