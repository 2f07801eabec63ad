#!/usr/bin/env bash
# The LearnedFTL paper's Filebench experiment (§IV-D, Fig. 20, Table I) on the emulated device,
# for chosen FTLs, with fio standing in for Filebench (not packaged): `learnedftl serve` on a
# Unix socket -> nbdfuse (the export as a file) -> a loop device with direct I/O -> ext4 ->
# fio's file workloads following Filebench's fileserver, webserver and varmail personalities
# (scripts/filebench/*.fio; each says how it follows Filebench's and where it cannot).
# Each personality runs in a directory of its own: its file set laid out first (Filebench's
# prealloc, not measured), then the run; then the directory is deleted and the file system
# trimmed, so that each personality starts from the same device state. The file sets are the
# paper's shares of its 32 GiB device, of the file system here (fileserver 225,000 files of
# 128 KiB, 80 % laid out: 0.67, less room for its appends and new files: 0.6; webserver 825,000
# of 16 KiB: 0.39; varmail 475,000 of 16 KiB, 80 % laid out: 0.18).
# Prints each personality's operations per second (fio's reads and writes over the run) beside
# the FTL's own metrics from `serve --json`.
# Everything (mount, loop device, FUSE mount, server) is torn down on exit, even on failure.
#
#   scripts/filebench-nbd.sh [FTL ...]        (default: ideal tpftl learnedftl)
#   PRESET=quick     device preset (tiny = 120 MiB, quick = 3.75 GiB, paper = 30 GiB)
#   TIMING=realtime  realtime (FEMU-like: replies at simulated completion) or none
#   PERSONALITIES="fileserver webserver varmail"
#   LOOPS=N          operations per fio thread, every personality (default: fileserver 60,
#                    webserver 180, varmail 100; at most the file set's files)
#   OUT=DIR          keep each FTL's report, fio's output and the table there (default:
#                    temporary)
#   RECORD=1         also record each FTL's I/O (`serve --record-format learnedftl`) to
#                    OUT/FTL.rec, with OUT/FTL.phases marking each personality's run (from its
#                    first request to its last completion) with fio's reads and writes, for
#                    `learnedftl run --trace OUT/FTL.rec --replay closed --phases OUT/FTL.phases`
# Needs root (mount, losetup, fstrim), /dev/fuse, and the Debian packages libnbd-bin fuse3
# e2fsprogs fio.
set -euo pipefail
cd "$(dirname "$0")/.."
ftls=("${@:-ideal tpftl learnedftl}")
read -r -a ftls <<<"${ftls[*]}"
preset=${PRESET:-quick}
timing=${TIMING:-realtime}
read -r -a personalities <<<"${PERSONALITIES:-fileserver webserver varmail}"
# shellcheck source=scripts/lib/server-bench.sh
. scripts/lib/server-bench.sh fio fstrim python3
# shellcheck source=scripts/lib/ext4-nbd.sh
. scripts/lib/ext4-nbd.sh
out=${OUT:-$work/out}
mkdir -p "$out"
jobs=$PWD/scripts/filebench

# Per personality: the file set's share of the file system, its file size in KiB, the threads
# that lay it out (FB_FILES files each), and the default LOOPS.
declare -A share=([fileserver]=0.6 [webserver]=0.39 [varmail]=0.18)
declare -A kib=([fileserver]=128 [webserver]=16 [varmail]=16)
declare -A layout=([fileserver]=17 [webserver]=16 [varmail]=16)
declare -A loops=([fileserver]=60 [webserver]=180 [varmail]=100)
for p in "${personalities[@]}"; do
    if [ -z "${share[$p]:-}" ]; then
        echo "filebench-nbd: no personality $p (fileserver, webserver, varmail)" >&2
        exit 1
    fi
done

# The sections of job file $1 that lay out the file set (prealloc*) when $2 is `prealloc`, the
# others when it is `run`, as fio's --section options.
sections() {
    local v=()
    [ "$2" = run ] && v=(-v)
    grep -o '^\[[^]]*\]' "$1" | tr -d '[]' | grep -v '^global$' | grep "${v[@]}" '^prealloc' |
        sed 's/^/--section=/'
}

# Runs personality $2 on FTL $1's mounted file system and notes in OUT/FTL.runs its name, when
# fio started, about when its I/O began, when it ended (wall-clock ns) and fio's reads and
# writes.
personality() {
    local ftl=$1 p=$2 dir=$work/fs/$2 fs_bytes files n a0 a b pre run res
    fs_bytes=$(df -B1 --output=avail "$work/fs" | tail -1)
    files=$(python3 -c "print(int($fs_bytes * ${share[$p]} / (${kib[$p]} << 10) / ${layout[$p]}))")
    n=${LOOPS:-${loops[$p]}}
    if [ "$n" -gt $((files * layout[$p])) ]; then
        echo "filebench-nbd: LOOPS=$n is more than $p's $((files * layout[$p])) files" >&2
        exit 1
    fi
    mkdir -p "$dir/fileset" "$dir/new"
    export FB_DIR=$dir FB_FILES=$files FB_LOOPS=$n
    mapfile -t pre < <(sections "$jobs/$p.fio" prealloc)
    mapfile -t run < <(sections "$jobs/$p.fio" run)
    # fio keeps each job's files in a shared-memory pool (16 MiB by default, "smalloc: OOM"
    # beyond), a few hundred bytes per file per job that opens the set: on `quick` 60 readers
    # each open webserver's ~88,000 files. Half a KiB per file for each of up to 66 jobs;
    # pages never touched cost no memory.
    local alloc=$((files * layout[$p] * 33))
    [ "$alloc" -ge 16384 ] || alloc=16384
    timeout 600 fio --alloc-size="$alloc" "${pre[@]}" "$jobs/$p.fio" \
        --output="$out/$ftl.$p.prealloc.txt"
    sync
    a0=$(date +%s%N)
    timeout 600 fio --alloc-size="$alloc" "${run[@]}" "$jobs/$p.fio" --output-format=json \
        --output="$out/$ftl.$p.json"
    b=$(date +%s%N)
    # fio's reads and writes, and about when its I/O began: its exit less its longest job's
    # runtime (which misses a few tens of ms of it).
    res=$(python3 - "$out/$ftl.$p.json" "$b" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
# fio writes notes (`opendir added N files`) before its JSON.
r = json.loads(text[text.index("{"):])
errors = sorted({j["jobname"] for j in r["jobs"] if j["error"]})
if errors:
    sys.exit(f"filebench-nbd: fio jobs failed: {', '.join(errors)}")
ops = sum(j[d]["total_ios"] for j in r["jobs"] for d in ("read", "write"))
print(ops, int(sys.argv[2]) - max(j["job_runtime"] for j in r["jobs"]) * 1_000_000)
PY
)
    read -r n a <<<"$res"
    echo "$p $a0 $a $b $n" >>"$out/$ftl.runs"
    rm -rf "$dir"
    fstrim "$work/fs"
    sync
}

run_ftl() {
    local ftl=$1 p
    rm -f "$out/$ftl.runs" "$out/$ftl.phases"
    mount_ext4 "$ftl"
    for p in "${personalities[@]}"; do
        personality "$ftl" "$p"
    done
    teardown
    # Each personality's ops/s; when recording, its phase in OUT/FTL.phases from the first
    # request of its run to the last completion of its requests: fio's setup (opening the file
    # sets, 0.4-0.8 s) issues next to no request, so the run begins after the last pause of
    # 100 ms or more before fio's own estimate.
    python3 - "$out" "$ftl" "${RECORD:-0}" <<'PY' | tee -a "$out/table.txt"
import json, sys
out, ftl, record = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
runs = [line.split() for line in open(f"{out}/{ftl}.runs")]
if record:
    start, reqs = None, []
    for line in open(f"{out}/{ftl}.rec"):
        if line.startswith("# start_unix_ns="):
            start = int(line.split("=")[1])
        elif line[:1].isdigit():
            issue, done = line.split(",", 2)[:2]
            reqs.append((start + int(issue), start + int(done)))
    phases = open(f"{out}/{ftl}.phases", "w")
row = f"{ftl:<11}"
for name, a0, a, b, ops in runs:
    a0, a, b, ops = int(a0), int(a), int(b), int(ops)
    if record:
        issued = [a0] + sorted(i for i, _ in reqs if a0 <= i <= b)
        pauses = [j for j in range(1, len(issued)) if issued[j] - issued[j - 1] >= 100_000_000
                  and issued[j - 1] < a]
        if not pauses:
            sys.exit(f"filebench-nbd: {ftl}: {name}: no pause before its I/O began")
        a = issued[pauses[-1]]
        b = max(d for i, d in reqs if a <= i <= b)
        print(f"{name},{a},{b},{ops}", file=phases)
    row += f" {ops / ((b - a) / 1e9):10.0f}"
m = json.load(open(f"{out}/{ftl}.json"))["result"]
print(f'{row} {m["waf"]:6.2f} {m["gc"]["events"]:6d} {m["cmt_hit_ratio"]:6.3f}'
      f' {m["model_hit_ratio"]:6.3f} {m["latency_us"]["read"]["mean"]:8.1f}'
      f' {m["latency_us"]["write"]["mean"]:8.1f}')
PY
}

{
    echo "fio's Filebench personalities on ext4 over nbdfuse + loop (direct I/O);" \
        "preset $preset, timing $timing; ops/s, then the FTL's metrics over the session"
    printf '%-11s' ftl
    printf ' %10s' "${personalities[@]}"
    printf ' %6s %6s %6s %6s %8s %8s\n' WAF GC cmt model "rd µs" "wr µs"
} | tee "$out/table.txt"
# In this shell, not a pipeline's subshell: the EXIT trap tears down what run_ftl started.
for ftl in "${ftls[@]}"; do
    run_ftl "$ftl"
done
