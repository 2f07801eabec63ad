#!/usr/bin/env bash
# End-to-end simulator speed on the `paper` preset: preconditioning with 6x the logical capacity
# of random 512 KiB writes, then 4 KiB random reads with 64 jobs, on the ideal FTL (or the FTLs
# given as arguments). Prints wall time, simulated page operations per wall second per phase,
# and the peak RSS. Targets: preconditioning under 60 s; >= 20 M page ops/s; <= 16 B of
# simulator state per physical page for the ideal FTL.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p learnedftl-cli
bin=target/release/learnedftl
ftls=${*:-ideal}
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
