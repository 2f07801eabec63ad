#!/usr/bin/env bash
# End-to-end simulator speed.
# 1. Every FTL in the default `learnedftl compare` (quick preset, randwrite:512k:2
#    preconditioning, 4 KiB random reads with 64 jobs): each FTL's wall time and simulated page
#    operations per wall second per phase, and the command's wall time. Targets: every FTL
#    >= 5 M page ops/s in the measured phase; the whole command <= 22 s. `compare` simulates
#    as many FTLs at once as the machine has cores (BENCH_JOBS=N sets `--jobs N`; 1 runs them
#    one after another), so each FTL's speed is its thread's while sharing the cores.
# 2. The `paper` preset: preconditioning with 6x the logical capacity of random 512 KiB writes,
#    then 4 KiB random reads with 64 jobs, on the ideal FTL (or the FTLs given as arguments):
#    wall time, page operations per wall second per phase, and the peak RSS. Targets:
#    preconditioning under 60 s; >= 20 M page ops/s; <= 16 B of simulator state per physical
#    page for the ideal FTL.
# 3. `learnedftl reproduce fdp` on the quick preset, one run at a time: every phase's wall time
#    and page operations per wall second, those of runs with FDP on marked. Target (issue 52):
#    every FDP phase >= 5 M page ops/s.
# Set BENCH_RECORD=FILE to append part 1's per-FTL speeds to FILE as tab-separated lines
# (date, commit, FTL, phase, wall seconds, M page ops/s). BENCH_PARTS="1 3" runs only those
# parts (default: all three).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p learnedftl-cli
# Cargo builds where CARGO_TARGET_DIR says; run that binary, not a stale one in target/.
bin=${CARGO_TARGET_DIR:-target}/release/learnedftl
ftls=${*:-ideal}
parts=" ${BENCH_PARTS:-1 2 3} "

if [[ $parts == *" 1 "* ]]; then

out=$(mktemp)
/usr/bin/env time -f '%e' -o "$out.time" "$bin" compare ${BENCH_JOBS:+--jobs "$BENCH_JOBS"} \
  --quiet --json "$out" >/dev/null
python3 - "$out" "$(cat "$out.time")" "${BENCH_RECORD:-}" "$(git rev-parse --short HEAD)" <<'PY'
import datetime, json, sys
path, wall, record, commit = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = json.load(open(path))
print(f"default compare: {wall:.1f} s wall (target <= 22 s)")
print(f"  {'ftl':<11} {'precondition s':>14} {'M ops/s':>8} {'measure s':>10} {'M ops/s':>8}")
lines = []
stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
for r in runs:
    ph = {p["phase"]: p for p in r["phases"]}
    pre, mea = ph["precondition"], ph["measure"]
    flag = "" if mea["sim_page_ops_per_sec"] >= 5e6 else "  < 5 M"
    print(f"  {r['ftl']:<11} {pre['wall_seconds']:14.2f} {pre['sim_page_ops_per_sec'] / 1e6:8.1f} "
          f"{mea['wall_seconds']:10.3f} {mea['sim_page_ops_per_sec'] / 1e6:8.1f}{flag}")
    for p in (pre, mea):
        lines.append(f"{stamp}\t{commit}\t{r['ftl']}\t{p['phase']}\t{p['wall_seconds']:.3f}\t"
                     f"{p['sim_page_ops_per_sec'] / 1e6:.2f}\n")
if record:
    with open(record, "a") as f:
        f.writelines(lines)
PY
rm -f "$out" "$out.time"
fi

if [[ $parts == *" 2 "* ]]; then
for ftl in $ftls; do
  out=$(mktemp)
  /usr/bin/env time -f '%e %M' -o "$out.time" "$bin" run --ftl "$ftl" --preset paper \
    --precondition randwrite:512k:6 --rw randread --bs 4k --numjobs 64 --number-ios 10000 \
    --quiet --json "$out" >/dev/null
  read -r wall rss_kib <"$out.time"
  python3 - "$out" "$ftl" "$wall" "$rss_kib" <<'PY'
import json, sys
path, ftl, wall, rss_kib = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
r = json.load(open(path))
pages = 8 * 8 * 1 * 256 * 512
print(f"{ftl}: total wall {wall:.1f} s, peak RSS {rss_kib / 1024:.0f} MiB "
      f"({rss_kib * 1024 / pages:.1f} B per physical page, whole process)")
for p in r["phases"]:
    ops = sum(v for k, v in p["flash"]["reads"].items() if k != "total") + \
          sum(v for k, v in p["flash"]["programs"].items() if k != "total")
    print(f"  {p['phase']:<13} wall {p['wall_seconds']:7.2f} s  page ops {ops:>12,}  "
          f"{p['sim_page_ops_per_sec'] / 1e6:6.1f} M page ops/s  WAF {p['waf']:.2f}")
PY
  rm -f "$out" "$out.time"
done
fi

if [[ $parts == *" 3 "* ]]; then
  out=$(mktemp -d)
  "$bin" reproduce fdp --preset quick --jobs 1 --quiet --out "$out" >/dev/null
  python3 - "$out/fdp.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
print("reproduce fdp (quick, --jobs 1): phases of runs with FDP on marked *")
print(f"  {'run':<52} {'ftl':<10} {'phase':<8} {'wall s':>7} {'M ops/s':>8}")
slowest = {}
for r in runs:
    for rep in r["reports"]:
        for p in rep["phases"]:
            fdp = "fdp" in p
            speed = p["sim_page_ops_per_sec"] / 1e6
            flag = "  < 5 M" if fdp and speed < 5 else ""
            print(f"{'*' if fdp else ' '} {r['label']:<52} {rep['ftl']:<10} {p['phase']:<8} "
                  f"{p['wall_seconds']:7.3f} {speed:8.2f}{flag}")
            if speed < slowest.get(fdp, (float("inf"),))[0]:
                slowest[fdp] = (speed, f"{r['label']}, {rep['ftl']}, {p['phase']}")
for fdp, (speed, where) in sorted(slowest.items(), reverse=True):
    print(f"slowest phase {'with' if fdp else 'without'} FDP: {speed:.2f} M page ops/s ({where})")
PY
  rm -rf "$out"
fi
