#!/usr/bin/env bash
# Realtime lateness and the host path's cost per request (docs/nbd.md "Timing"): fio's nbd
# engine reads 4 KiB at random from `learnedftl serve` over a Unix socket, at each iodepth of
# DEPTHS, REPEAT times, on a fresh server each time (the region is filled first with 1 MiB
# writes, so reads reach the flash).
#   * `--timing realtime`: the server's `lateness_us` (how late replies left their simulated
#     completion; its count includes the few fill writes), `reply_write_us` (how long the
#     socket writes that sent them took) and fio's completion latency;
#   * `--timing none`: fio's completion latency is the host path alone (fio, the socket, the
#     server's threads and the simulator's CPU time), with no simulated time waited for.
# A benchmark, not a test: the numbers depend on the machine and what else runs on it, so the
# load average is printed beside each run.
#
#   scripts/nbd-lateness.sh [FTL]   (default ideal; PRESET=quick, RUNTIME=10 seconds per run,
#                                    SIZE=64m region, DEPTHS="1 8", REPEAT=3,
#                                    TIMINGS="realtime none")
set -euo pipefail
cd "$(dirname "$0")/.."
ftl=${1:-ideal}
preset=${PRESET:-quick}
runtime=${RUNTIME:-10}
size=${SIZE:-64m}
depths=${DEPTHS:-1 8}
repeat=${REPEAT:-3}
timings=${TIMINGS:-realtime none}
# shellcheck source=scripts/lib/server-bench.sh
. scripts/lib/server-bench.sh fio python3

# fio on the server's socket: job name $1, then fio options.
fio_run() {
    local name=$1
    shift
    fio --name="$name" --ioengine=nbd --uri="nbd+unix:///?socket=$work/nbd.sock" \
        --size="$size" --output-format=json --output="$work/$name.json" "$@" >/dev/null
}

printf '%-8s %5s %4s %6s %8s | %8s %8s %8s %8s | %8s %8s | %8s %8s %8s | %7s\n' timing depth \
    run load IOPS "late p50" "p99" "p99.9" "max" "write p50" "p99" "fio p50" "p99" "sim rd" \
    replies
for timing in $timings; do
    for depth in $depths; do
        for run in $(seq "$repeat"); do
            rm -f "$work/nbd.sock"
            "$bin" serve --ftl "$ftl" --preset "$preset" --timing "$timing" \
                --socket "$work/nbd.sock" --json "$work/serve.json" >"$work/serve.log" 2>&1 &
            pid=$!
            for _ in $(seq 300); do [ -S "$work/nbd.sock" ] && break; sleep 0.1; done
            [ -S "$work/nbd.sock" ] || { cat "$work/serve.log" >&2; exit 1; }
            fio_run fill --rw=write --bs=1m --iodepth=4
            load=$(cut -d' ' -f1 /proc/loadavg)
            fio_run read --rw=randread --bs=4k --iodepth="$depth" --time_based \
                --runtime="$runtime" --randseed="$run"
            stop
            python3 - "$timing" "$depth" "$run" "$load" "$work/read.json" "$work/serve.json" <<'PY'
import json, sys
timing, depth, run, load, fio, serve = sys.argv[1:]
j = json.load(open(fio))["jobs"][0]["read"]
pct = j["clat_ns"]["percentile"]
s = json.load(open(serve))
l = s.get("lateness_us")
keys = ("p50", "p99", "p999", "max")
late = " ".join(f'{l[k]:8.1f}' if l else f'{"-":>8}' for k in keys)
w = s.get("reply_write_us")
write = " ".join(f'{w[k]:8.1f}' if w else f'{"-":>8}' for k in ("p50", "p99"))
print(f'{timing:8} {depth:>5} {run:>4} {load:>6} {j["iops"]:8.0f} | {late} | {write} | '
      f'{pct["50.000000"] / 1e3:8.1f} {pct["99.000000"] / 1e3:8.1f} '
      f'{s["result"]["latency_us"]["read"]["mean"]:8.1f} | {l["count"] if l else "-":>7}')
PY
        done
    done
done
echo "µs; late = serve's lateness_us, write = its reply_write_us, fio = fio's completion" \
    "latency, sim rd = simulated read" \
    "latency (mean); $(nproc) cores, load = 1-minute load average before each run"
