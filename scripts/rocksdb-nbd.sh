#!/usr/bin/env bash
# The LearnedFTL paper's RocksDB experiment (§IV-D) on the emulated device, for chosen FTLs:
# `learnedftl serve` on a Unix socket -> nbdfuse (the export as a file) -> a loop device with
# direct I/O -> ext4 -> db_bench: fillseq, then overwrite, of keys whose values fill FILL of
# the file system (the LSM tree holds up to twice that while overwrite's compactions run, so
# the default 0.4 takes the file system to ~80 % full), then readrandom (READS Gets) and readseq
# (one pass over the whole DB). Reads use direct I/O so they reach the device. Compactions are
# let finish (db_bench's waitforcompaction) after the writes and before each read benchmark:
# reopening the DB starts the compactions the writes left, and a read benchmark running beside
# them measures compaction, not Gets. RocksDB's LOG (every compaction, cancelled ones included)
# is kept beside the results.
# Prints each benchmark's ops/s beside the FTL's own metrics from `serve --json`.
# Everything (mount, loop device, FUSE mount, server) is torn down on exit, even on failure.
#
#   scripts/rocksdb-nbd.sh [FTL ...]          (default: ideal tpftl learnedftl)
#   PRESET=quick   device preset (tiny = 120 MiB, quick = 3.75 GiB, paper = 30 GiB)
#   TIMING=realtime  realtime (FEMU-like: replies at simulated completion) or none
#   FILL=0.4       share of the file system filled with keys (16 B) and values
#   VALUE=1000     value size in bytes
#   READS=20000    Gets of readrandom
#   OUT=DIR        keep each FTL's report, db_bench output, RocksDB LOG and table there
#                  (default: temporary)
#   RECORD=1       also record each FTL's I/O (`serve --record-format learnedftl`) to
#                  OUT/FTL.rec, with OUT/FTL.phases marking the phases (write: the run of
#                  fillseq + overwrite; readrandom and readseq: the benchmark itself) and
#                  their operations, for
#                  `learnedftl run --trace OUT/FTL.rec --replay closed --phases OUT/FTL.phases`
# Needs root (mount, losetup), /dev/fuse, and the Debian packages libnbd-bin fuse3
# e2fsprogs rocksdb-tools.
set -euo pipefail
cd "$(dirname "$0")/.."
ftls=("${@:-ideal tpftl learnedftl}")
read -r -a ftls <<<"${ftls[*]}"
preset=${PRESET:-quick}
timing=${TIMING:-realtime}
fill=${FILL:-0.4}
value=${VALUE:-1000}
reads=${READS:-20000}
# shellcheck source=scripts/lib/server-bench.sh
. scripts/lib/server-bench.sh db_bench python3
# shellcheck source=scripts/lib/ext4-nbd.sh
. scripts/lib/ext4-nbd.sh
out=${OUT:-$work/out}
mkdir -p "$out"

# Operations of benchmarks $1 (a regular expression) in db_bench output file $2, summed.
count() {
    awk -v b="$1" '$1 ~ "^(" b ")$" && $2 == ":" { for (i = 2; i <= NF; i++) if ($i ~ /^operations;?$/) n += $(i - 1) } END { print n + 0 }' "$2"
}

# Seconds db_bench reports for the last run of benchmark $1 in output file $2, in ns.
took_ns() {
    awk -v b="$1" '$1 == b && $2 == ":" { for (i = 2; i <= NF; i++) if ($i == "seconds") s = $(i - 1) } END { printf "%.0f\n", s * 1e9 }' "$2"
}

# Runs the command after $3 with its output appended to file $1; when recording, marks phase $2
# in OUT/FTL.phases with the operations of benchmarks $3 (a regular expression): the whole run
# when $3 names several, else the benchmark's own seconds (db_bench's figure) up to the end of
# the run: a run's last benchmark ends it, and its opening and waitforcompaction stay out.
bench() {
    local file=$1 phase=$2 which=$3 a b
    shift 3
    a=$(date +%s%N)
    "$@" >>"$file" 2>&1
    b=$(date +%s%N)
    if [ "${RECORD:-0}" = 1 ]; then
        [[ $which == *"|"* ]] || a=$((b - $(took_ns "$which" "$file")))
        echo "$phase,$a,$b,$(count "$which" "$file")" >>"$out/$ftl.phases"
    fi
}

# ops/s of benchmark $1 in db_bench output file $2.
ops() {
    awk -v b="$1" '$1 == b && $2 == ":" { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^ops\/sec;?$/) print $i }' "$2"
}

run_ftl() {
    local ftl=$1
    rm -f "$out/$ftl.phases"
    mount_ext4 "$ftl"
    local fs_bytes num
    fs_bytes=$(df -B1 --output=avail "$work/fs" | tail -1)
    num=$(python3 -c "print(int($fs_bytes * $fill / ($value + 16)))")
    # Memtables (and so the WAL), SST files and level 1 scaled to the file system, so that
    # RocksDB keeps its headroom: it cancels a compaction when the free space is smaller than
    # the compaction's input ("not enough room" in its LOG). A level-0 compaction reads every
    # level-0 file and all of level 1 (4 memtables' worth, more when it lags). Level 0 grows
    # past its trigger of 4 files when flushes outrun compactions (inputs of 29 memtables on
    # tiny with RocksDB's stop trigger of 36 files), so writes stop at 12 files: the largest
    # inputs measured then were 20-23 memtables, and the WAL holds ~2 more. 22 of them must
    # fit in what the LSM tree's peak (twice FILL while overwrite compacts) leaves free, with
    # 10 % of the file system to spare (which covers the rest). At most RocksDB's default of
    # 64 MiB.
    local wb
    wb=$(python3 -c "print(min(64 << 20, int($fs_bytes * (0.9 - 2 * $fill) / 22)))")
    if [ "$wb" -lt $((256 << 10)) ]; then
        echo "rocksdb-nbd: FILL=$fill leaves RocksDB no room to compact (at most ~0.44)" >&2
        exit 1
    fi
    local db=(db_bench --db="$work/fs/db" --num="$num" --value_size="$value" --key_size=16
        --write_buffer_size="$wb" --target_file_size_base="$wb"
        --max_bytes_for_level_base=$((4 * wb))
        --level0_slowdown_writes_trigger=8 --level0_stop_writes_trigger=12
        --compression_type=none --use_direct_reads=true
        --use_direct_io_for_flush_and_compaction=true --threads=1 --seed=1)
    rm -f "$out/$ftl.write.txt" "$out/$ftl.read.txt"
    bench "$out/$ftl.write.txt" write "fillseq|overwrite" \
        "${db[@]}" --benchmarks=fillseq,overwrite,waitforcompaction
    # readseq in a run of its own: --reads would cap it too; by default it reads every key once.
    bench "$out/$ftl.read.txt" readrandom readrandom \
        "${db[@]}" --benchmarks=waitforcompaction,readrandom --use_existing_db=1 --reads="$reads"
    bench "$out/$ftl.read.txt" readseq readseq \
        "${db[@]}" --benchmarks=waitforcompaction,readseq --use_existing_db=1
    # Each run of db_bench starts a LOG and keeps the previous one as LOG.old.<time>.
    local log
    for log in "$work/fs/db"/LOG*; do
        cp "$log" "$out/$ftl.rocksdb.${log##*/}"
    done
    sync
    teardown
    local cancelled
    cancelled=$(cat "$out/$ftl".rocksdb.LOG* | grep -c "not enough room" || true)
    [ "$cancelled" = 0 ] ||
        echo "rocksdb-nbd: $ftl: RocksDB cancelled $cancelled compactions for want of space" \
            "($out/$ftl.rocksdb.LOG*)" >&2
    local f row
    row=$(printf '%-11s' "$ftl")
    for f in fillseq overwrite; do row+=$(printf ' %12s' "$(ops "$f" "$out/$ftl.write.txt")"); done
    for f in readrandom readseq; do row+=$(printf ' %12s' "$(ops "$f" "$out/$ftl.read.txt")"); done
    row+=$(python3 - "$out/$ftl.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["result"]
print(f' {m["waf"]:6.2f} {m["gc"]["events"]:6d} {m["cmt_hit_ratio"]:6.3f} {m["model_hit_ratio"]:6.3f}'
      f' {m["latency_us"]["read"]["mean"]:8.1f} {m["latency_us"]["write"]["mean"]:8.1f}')
PY
)
    echo "$row" >>"$out/table.txt"
    echo "$row"
}

{
    echo "db_bench on ext4 over nbdfuse + loop (direct I/O), compactions settled before reads;" \
        "preset $preset, timing $timing," \
        "values $value B, keys and values = $fill of the file system; ops/s, then the FTL's metrics"
    printf '%-11s %12s %12s %12s %12s %6s %6s %6s %6s %8s %8s\n' ftl fillseq overwrite \
        readrandom readseq WAF GC cmt model "rd µs" "wr µs"
} | tee "$out/table.txt"
# In this shell, not a pipeline's subshell: the EXIT trap tears down what run_ftl started.
for ftl in "${ftls[@]}"; do
    run_ftl "$ftl"
done
