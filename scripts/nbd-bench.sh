#!/usr/bin/env bash
# NBD server speed: fio's nbd engine, 4 KiB random reads and writes at iodepth 32, against
# `learnedftl serve --timing none` and `nbdkit memory`, side by side on the same machine.
# Target: learnedftl >= 80 % of nbdkit's IOPS. Each server's region is filled first with
# sequential 1 MiB writes, so reads return data, not holes.
#
#   scripts/nbd-bench.sh [FTL]      (default ideal; RUNTIME=seconds per run, default 10;
#                                     SIZE=region, default 256m; PRESET, default quick)
set -euo pipefail
cd "$(dirname "$0")/.."
ftl=${1:-ideal}
runtime=${RUNTIME:-10}
size=${SIZE:-256m}
preset=${PRESET:-quick}
# shellcheck source=scripts/lib/server-bench.sh
. scripts/lib/server-bench.sh fio nbdkit nbdinfo python3

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits (at most 30 s) until an NBD server answers on port $1.
wait_ready() {
    for _ in $(seq 300); do
        nbdinfo --size "nbd://127.0.0.1:$1/" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "nbd-bench: no NBD server on port $1" >&2
    exit 1
}

# fio IOPS of workload $2 (randread|randwrite|write) against port $1.
fio_iops() {
    local extra=(--time_based --runtime="$runtime" --bs=4k --iodepth=32)
    [ "$2" = write ] && extra=(--bs=1m --iodepth=8)
    fio --name=bench --ioengine=nbd --uri="nbd://127.0.0.1:$1/" --rw="$2" --size="$size" \
        --randseed=1 "${extra[@]}" --output-format=json --output="$work/fio.json" >/dev/null
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print(round(j["read"]["iops"] + j["write"]["iops"]))' "$work/fio.json"
}

declare -A iops
run_server() { # name, then the command
    local name=$1 port
    shift
    port=$(free_port)
    "$@" "$port" >"$work/$name.out" 2>&1 &
    pid=$!
    wait_ready "$port"
    fio_iops "$port" write >/dev/null
    for w in randread randwrite; do
        iops[$name.$w]=$(fio_iops "$port" "$w")
    done
    stop
}

# `exec`: the server replaces the background subshell, so `$!` is its PID.
nbdkit_memory() {
    exec nbdkit --foreground --ipaddr 127.0.0.1 --port "$1" memory 4G
}
learnedftl_serve() {
    exec "$bin" serve --ftl "$ftl" --preset "$preset" --timing none --listen "127.0.0.1:$1"
}

run_server nbdkit nbdkit_memory
run_server learnedftl learnedftl_serve

echo "fio nbd engine, 4 KiB, iodepth 32, ${runtime} s per run, region $size; $(nproc) cores"
printf '%-10s %14s %22s %7s\n' workload "nbdkit memory" "learnedftl $ftl" ratio
for w in randread randwrite; do
    a=${iops[nbdkit.$w]} b=${iops[learnedftl.$w]}
    printf '%-10s %14s %22s %6s%%\n' "$w" "$a" "$b" "$(( 100 * b / (a > 0 ? a : 1) ))"
done
