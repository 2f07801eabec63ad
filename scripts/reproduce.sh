#!/usr/bin/env bash
# Reproduce the LearnedFTL paper's experiments (SPEC §7), and HP-FTL's Figs. 2 and 4-7, with the
# release CLI.
#
#   scripts/reproduce.sh [quick|paper] [experiment ...]
#
# Each experiment runs `learnedftl compare` (all FTLs, same seed) one run at a time and writes
# results/<preset>/<experiment>.json: {"experiment", "preset", "runs": [{"label", "command",
# "wall_seconds", "reports": [one report per FTL, as `compare --json` writes them]}]} (a run the
# CLI refused has "error" and no reports), plus the printed tables in <experiment>.log. Then
# scripts/summarise.py prints our numbers beside the paper's and writes
# results/<preset>/summary.md. See docs/reproduction.md.
#
# Experiments (default: all, in this order):
#   randread        random 512 KiB x6 preconditioning, 4 KiB random reads, 64 jobs
#   seqread         sequential x1 preconditioning, 4 KiB sequential reads, 64 jobs in own regions
#   seqread-shared  the same, all 64 jobs over the same pages (fio's default without
#                   offset_increment)
#   randwrite       4 KiB random writes, 64 jobs, after random 512 KiB x6 (also gives the
#                   LearnedFTL training + sorting share of GC time)
#   seqwrite        4 KiB sequential writes, 64 jobs in own regions, after sequential 512 KiB x6
#   tpftl-threads   TPFTL random vs sequential reads for 1..64 jobs
#   cmt-sweep       TPFTL random reads with the CMT at 1..50 % of the mappings
#   traces          WebSearch and TPC-C samples from ../shared/traces at speed 1 and 4
#   hpftl-fig2      HP-FTL paper Fig. 2: ideal / DFTL / HP-FTL IOPS against the DRAM given to the
#                   mapping table, uniform and Zipf 0.99 4 KiB writes on a fresh device
#   hpftl-secondary HP-FTL paper Figs. 4-7: secondary-table peak size and IOPS for h and m
#   fast-merges     the lecture deck: FAST's switch / partial / full merges under sequential,
#                   random and mixed writes after a sequential fill
#   mu-translation  the lecture deck: extra flash reads (and programs) per request of mu-FTL
#                   against DFTL at the same mapping DRAM, coarse and fine extents
#   dram            the deck's RAM-usage table: mapping DRAM by part of every FTL after a
#                   sequential fill and 4 KiB random writes
#
# Environment: SEED (default 1), FTLS (comma list; default: every FTL `learnedftl list` names,
# but fast and mu-ftl only in the lecture deck's experiments),
# TRACES_DIR (default ../shared/traces), SETUP:
#   default  the simulator's defaults (SPEC §3.3, §3.5): timing=backfill (gap-filling LUN
#            queues), gc=reserve (one 2-line GC reserve for every FTL), --settle auto (idle time
#            after preconditioning in which each FTL collects and writes back what it owes);
#            results/<preset>
#   femu     the setup of the paper's FEMU runs: --set timing=femu --set gc=femu (FEMU's
#            busy-until LUN rule and its 5 % / 25 % GC thresholds) --settle off (FEMU does no
#            idle work between fio runs); results/<preset>-femu
# LearnedFTL runs its default design (design=log) in every experiment; the experiments about the
# paper's mechanism add `learnedftl design=paper` rows (docs/reproduction.md, docs/device.md).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

preset=${1:-quick}
[[ $# -gt 0 ]] && shift
all_experiments=(randread seqread seqread-shared randwrite seqwrite tpftl-threads cmt-sweep traces
  hpftl-fig2 hpftl-secondary fast-merges mu-translation dram)
experiments=("$@")
[[ ${#experiments[@]} -eq 0 ]] && experiments=("${all_experiments[@]}")

# Per preset: the slice each of 64 jobs owns (logical space / 64), and request counts per job.
# `quick` is sized so that the whole suite takes a few minutes on one core; `paper` takes hours.
case $preset in
  quick)
    slice_mib=60
    rr_drain=1000 rr_ios=5000  # random reads: drain phase, measured phase
    sr_drain=1000 sr_ios=5000  # sequential reads
    rw_ios=300 sw_ios=2000     # random / sequential writes
    th_ios=2000                # TPFTL motivation: reads per job per thread count
    hp_ios=11468               # HP-FTL experiments: 1.4 x logical / 64 at logical_ratio=0.5
    hp_ms="2 3 4 5"            # HP-FTL m sweep below p = 6 (the paper's m values)
    deck_dram=240k             # mu-FTL and DFTL: DFTL's default 3 % + GTD (237.9 KiB)
    deck_ios=2400              # 4 KiB writes per job (x64: 2.6x FAST's log pool, 5x DFTL's CMT)
    ;;
  paper)
    slice_mib=480
    rr_drain=4000 rr_ios=10000
    sr_drain=4000 sr_ios=10000
    rw_ios=300 sw_ios=2000
    th_ios=8000
    hp_ios=91750
    hp_ms="6 7 8"              # p - 3 .. p - 1, the paper's range relative to p (p = 9)
    deck_dram=1900k            # DFTL's default 3 % + GTD
    deck_ios=20000
    ;;
  -h | --help | help) usage ;;
  *)
    echo "unknown preset '$preset' (quick or paper)" >&2
    usage
    ;;
esac
for e in "${experiments[@]}"; do
  [[ " ${all_experiments[*]} " == *" $e "* ]] || {
    echo "unknown experiment '$e'" >&2
    usage
  }
done

seed=${SEED:-1}
traces_dir=${TRACES_DIR:-../shared/traces}
setup=${SETUP:-default}
case $setup in
  default) out=results/$preset setup_args=() ;;
  femu) out=results/$preset-femu setup_args=(--set timing=femu --set gc=femu --settle off) ;;
  *)
    echo "unknown SETUP '$setup' (default or femu)" >&2
    usage
    ;;
esac
[[ -z ${TIMING:-} ]] || {
  echo "TIMING is gone: SETUP=default (timing=backfill) or SETUP=femu (timing=femu)" >&2
  exit 2
}
jobs=$out/jobs
mkdir -p "$jobs"

cargo build --release -q -p learnedftl-cli
bin=target/release/learnedftl
all_ftls=$("$bin" list | sed -n 's/^FTLs: //p' | tr -d ' ')
# The lecture deck's FTLs (FAST, mu-FTL) have experiments of their own (fast-merges,
# mu-translation, dram); the LearnedFTL paper's experiments leave them out unless FTLS names them.
ftls=${FTLS:-$(echo ",$all_ftls," | sed 's/,fast,/,/; s/,mu-ftl,/,/; s/^,//; s/,$//')}
has_ftl() { [[ ",$ftls," == *",$1,"* ]]; }
deck_ftls=${FTLS:-$all_ftls}
deck_has() { [[ ",$deck_ftls," == *",$1,"* ]]; }
echo "preset $preset, seed $seed, setup $setup (${setup_args[*]:-simulator defaults}), FTLs $ftls"

# ---- job files (written per preset, kept beside the results) --------------------------------
drain_bytes() { echo $(($1 * 4))k; }
cat >"$jobs/randread.fio" <<EOF
; 4 KiB random reads, 64 jobs. The drain phase empties the dirty cache entries the precondition
; leaves (DFTL writes each back alone); the measured phase follows.
[global]
rw=randread
bs=4k
numjobs=64

[drain]
number_ios=$rr_drain

[measure]
stonewall
number_ios=$rr_ios
EOF

# Sequential reads: every job owns a slice of the logical space (offset_increment); the measured
# phase continues each job's stream where the drain phase stopped.
cat >"$jobs/seqread.fio" <<EOF
; 4 KiB sequential reads, 64 jobs, each in its own ${slice_mib} MiB slice (offset_increment).
[global]
rw=read
bs=4k
numjobs=64
offset_increment=${slice_mib}m

[drain]
size=${slice_mib}m
number_ios=$sr_drain

[measure]
stonewall
offset=$(drain_bytes "$sr_drain")
size=$((slice_mib * 1024 - sr_drain * 4))k
number_ios=$sr_ios
EOF

cat >"$jobs/seqread-shared.fio" <<EOF
; 4 KiB sequential reads, 64 jobs all from the same offset (fio's default without
; offset_increment): the clones read the same pages at nearly the same time.
[global]
rw=read
bs=4k
numjobs=64

[drain]
number_ios=$sr_drain

[measure]
stonewall
offset=$(drain_bytes "$sr_drain")
number_ios=$sr_ios
EOF

cat >"$jobs/seqwrite.fio" <<EOF
; 4 KiB sequential writes, 64 jobs, each in its own ${slice_mib} MiB slice.
[global]
rw=write
bs=4k
numjobs=64
offset_increment=${slice_mib}m
size=${slice_mib}m

[measure]
number_ios=$sw_ios
EOF

# TPFTL motivation: one phase per thread count. Sequential phases read fresh pages of each slice
# (a later phase must not hit what an earlier one loaded).
thread_counts=(1 2 4 8 16 32 64)
{
  printf '; TPFTL random reads for 1..64 jobs, %s reads per job per phase\n' "$th_ios"
  printf '[global]\nrw=randread\nbs=4k\nnumber_ios=%s\n\n[drain]\nnumjobs=64\nnumber_ios=%s\n' \
    "$th_ios" "$rr_drain"
  for n in "${thread_counts[@]}"; do
    printf '\n[jobs-%s]\nstonewall\nnumjobs=%s\n' "$n" "$n"
  done
} >"$jobs/tpftl-threads-rand.fio"
{
  printf '; TPFTL sequential reads for 1..64 jobs, each job in its own slice, %s reads per job\n' \
    "$th_ios"
  printf '[global]\nrw=read\nbs=4k\noffset_increment=%sm\nnumber_ios=%s\n\n' "$slice_mib" "$th_ios"
  printf '[drain]\nnumjobs=64\nsize=%sm\nnumber_ios=%s\n' "$slice_mib" "$sr_drain"
  start=$sr_drain
  for n in "${thread_counts[@]}"; do
    printf '\n[jobs-%s]\nstonewall\nnumjobs=%s\noffset=%sk\nsize=%sk\n' \
      "$n" "$n" $((start * 4)) $((th_ios * 4))
    start=$((start + th_ios))
  done
} >"$jobs/tpftl-threads-seq.fio"
if ((sr_drain + ${#thread_counts[@]} * th_ios > slice_mib * 256)); then
  echo "internal: the TPFTL sequential phases do not fit a slice" >&2
  exit 1
fi

# The deck's FAST comparison, mixed writes: one sequential 512 KiB stream beside 16 random 4 KiB
# writers, in one phase.
cat >"$jobs/fast-mixed.fio" <<EOF
; one sequential 512 KiB writer and 16 random 4 KiB writers at once
[seq]
rw=write
bs=512k
number_ios=$((deck_ios / 4))

[rand]
rw=randwrite
bs=4k
numjobs=16
number_ios=$((deck_ios * 4))
EOF

# ---- running -------------------------------------------------------------------------------
runs_dir=
nruns=0
begin() { # begin EXPERIMENT: start collecting runs
  exp=$1
  runs_dir=$(mktemp -d)
  nruns=0
  : >"$out/$exp.log"
  echo "== $exp"
}
run() { # run [--may-refuse] LABEL compare-args...: one `compare`, its JSON kept for the
  # experiment. With --may-refuse, a run the CLI refuses (e.g. a DRAM budget below HP-FTL's
  # primary table) is kept with its error message instead of stopping the experiment.
  local may_refuse=
  [[ $1 == --may-refuse ]] && {
    may_refuse=1
    shift
  }
  local label=$1
  shift
  local cmd=(compare --preset "$preset" --seed "$seed" ${setup_args[@]+"${setup_args[@]}"} "$@")
  local base t0 status=0
  base=$runs_dir/$(printf %03d $nruns)
  nruns=$((nruns + 1))
  echo "  $label: learnedftl ${cmd[*]}"
  t0=$(date +%s%N)
  {
    echo "## $label"
    echo "\$ learnedftl ${cmd[*]}"
    "$bin" "${cmd[@]}" --quiet --json "$base.json" 2>"$base.err" || status=$?
    cat "$base.err"
    echo
  } >>"$out/$exp.log" 2>&1
  local ms=$((($(date +%s%N) - t0) / 1000000))
  local err=
  if ((status)); then
    [[ -n $may_refuse ]] || {
      echo "  failed; see $out/$exp.log" >&2
      return 1
    }
    err=$(grep -m1 '^error' "$base.err" || tail -n1 "$base.err")
    rm -f "$base.json"
  fi
  printf '%s\n%s\n%s\n%s\n' "$label" "learnedftl ${cmd[*]}" "$ms" "$err" >"$base.meta"
  if [[ -n $err ]]; then echo "    refused: $err"; else echo "    $((ms / 1000)) s"; fi
}
finish() { # write results/<preset>/<experiment>.json
  python3 scripts/summarise.py collect "$exp" "$preset" "$runs_dir" "$out/$exp.json"
  rm -rf "$runs_dir"
}

# hp_experiment NAME POINTS: per HP-FTL workload, the ideal FTL, then `POINTS LABEL`, which runs
# its points with the workload's arguments in "${wl[@]}".
hp_experiment() {
  has_ftl hpftl || {
    echo "== $1: skipped (no hpftl in FTLS)"
    return
  }
  begin "$1"
  local w
  for w in "${hp_workloads[@]}"; do
    wl=("${hp_fresh[@]}" --random-distribution "${w#*:}")
    run "${w%%:*} ideal" --ftl ideal "${wl[@]}"
    "$2" "${w%%:*}"
  done
  finish
}
hp_fig2_points() { # Fig. 2: DFTL and HP-FTL against the DRAM ratio
  local w=$1 r
  for r in "${hp_ratios[@]}"; do
    run "$w dftl ratio=$r" --ftl dftl --set "cmt_ratio=$r" "${wl[@]}"
    # Below the primary table's share of the budget HP-FTL refuses the configuration.
    run --may-refuse "$w hpftl ratio=$r" --ftl hpftl "${hp_paper[@]}" --set "dram_ratio=$r" "${wl[@]}"
  done
  # Four requests in flight per job, at 40 %: how much of each gap is LUN collisions.
  run "$w ideal iodepth=4" --ftl ideal "${wl[@]}" --iodepth 4
  run "$w dftl iodepth=4" --ftl dftl --set cmt_ratio=0.4 "${wl[@]}" --iodepth 4
  run "$w hpftl iodepth=4" --ftl hpftl "${hp_paper[@]}" --set dram_ratio=0.4 "${wl[@]}" --iodepth 4
}
hp_secondary_points() { # Figs. 4-7: the secondary table for h and m
  local w=$1 h m
  # The paper's table is "large enough to avoid overflowing": one slot per logical page.
  for h in 2 3 4 5; do # at the default m = p
    run "$w hpftl h=$h" --ftl hpftl "${hp_paper[@]}" --set secondary_ratio=1 --set "h=$h" "${wl[@]}"
  done
  for m in $hp_ms; do
    run "$w hpftl h=3 m=$m" --ftl hpftl "${hp_paper[@]}" --set secondary_ratio=1 --set h=3 --set "m=$m" "${wl[@]}"
  done
}

rand_pre=(--precondition randwrite:512k:6)
seq_pre=(--precondition write:512k:1)
# HP-FTL's experiments (docs/ftls/hpftl.md "Paper experiments"): a fresh device with twice the
# physical pages of the logical space, 64 jobs x 4 KiB writes of 1.4x the logical space in all
# (0.7 of the physical pages: no FTL reaches its GC threshold; the writes touch 75 % of the LPNs,
# more than DFTL caches at 70 % of the table).
hp_fresh=(--set logical_ratio=0.5 --rw randwrite --bs 4k --numjobs 64 --number-ios "$hp_ios")
# HP-FTL's own experiments measure the paper's design (its secondary table under §II-D's GC).
hp_paper=(--set design=paper)
hp_workloads=(uniform:random zipf0.99:zipf:0.99)
hp_ratios=(0.1 0.2 0.3 0.4 0.5 0.7 1.0)
t_start=$(date +%s)
for e in "${experiments[@]}"; do
  case $e in
    randread)
      begin randread
      run "randread" --ftl "$ftls" "${rand_pre[@]}" --job "$jobs/randread.fio"
      # The paper's LearnedFTL (whole-group GC and training): its model hits are the experiment.
      has_ftl learnedftl && run "learnedftl design=paper" --ftl learnedftl --set design=paper \
        "${rand_pre[@]}" --job "$jobs/randread.fio"
      finish
      ;;
    seqread)
      begin seqread
      run "seqread" --ftl "$ftls" "${seq_pre[@]}" --job "$jobs/seqread.fio"
      finish
      ;;
    seqread-shared)
      begin seqread-shared
      run "seqread-shared" --ftl "$ftls" "${seq_pre[@]}" --job "$jobs/seqread-shared.fio"
      finish
      ;;
    randwrite)
      begin randwrite
      run "randwrite" --ftl "$ftls" "${rand_pre[@]}" \
        --rw randwrite --bs 4k --numjobs 64 --number-ios "$rw_ios"
      # The paper's LearnedFTL (collapses: a group collection per write or two, bounded here by
      # the 300 writes per job; docs/ftls/learnedftl.md), and its line-level GC with any group
      # lending room, the only paper-design setting that sustains small writes.
      if has_ftl learnedftl; then
        run "learnedftl design=paper" --ftl learnedftl --set design=paper "${rand_pre[@]}" \
          --rw randwrite --bs 4k --numjobs 64 --number-ios "$rw_ios"
        run "learnedftl design=paper group_gc=line lender=any" --ftl learnedftl \
          --set design=paper --set group_gc=line --set lender=any "${rand_pre[@]}" \
          --rw randwrite --bs 4k --numjobs 64 --number-ios "$rw_ios"
      fi
      finish
      ;;
    seqwrite)
      begin seqwrite
      run "seqwrite" --ftl "$ftls" --precondition write:512k:6 --job "$jobs/seqwrite.fio"
      if has_ftl learnedftl; then
        run "learnedftl design=paper" --ftl learnedftl --set design=paper \
          --precondition write:512k:6 --job "$jobs/seqwrite.fio"
        run "learnedftl design=paper group_gc=line lender=any" --ftl learnedftl \
          --set design=paper --set group_gc=line --set lender=any --precondition write:512k:6 \
          --job "$jobs/seqwrite.fio"
      fi
      finish
      ;;
    tpftl-threads)
      has_ftl tpftl || { echo "== tpftl-threads: skipped (no tpftl in FTLS)"; continue; }
      begin tpftl-threads
      run "random" --ftl tpftl "${rand_pre[@]}" --job "$jobs/tpftl-threads-rand.fio"
      run "sequential" --ftl tpftl "${seq_pre[@]}" --job "$jobs/tpftl-threads-seq.fio"
      # TPFTL's +-3 counter switches selective prefetch off under 64 streams for good (see
      # docs/ftls/tpftl.md); the paper's FEMU TPFTL evidently kept prefetching.
      run "sequential, prefetch_threshold=0" --ftl tpftl --set prefetch_threshold=0 \
        "${seq_pre[@]}" --job "$jobs/tpftl-threads-seq.fio"
      finish
      ;;
    cmt-sweep)
      has_ftl tpftl || { echo "== cmt-sweep: skipped (no tpftl in FTLS)"; continue; }
      begin cmt-sweep
      for r in 0.01 0.03 0.05 0.10 0.25 0.50; do
        run "cmt_ratio=$r" --ftl tpftl --set "cmt_ratio=$r" "${rand_pre[@]}" \
          --job "$jobs/randread.fio"
      done
      finish
      ;;
    traces)
      if [[ ! -d $traces_dir ]]; then
        echo "== traces: skipped ($traces_dir is absent)"
        continue
      fi
      begin traces
      for t in websearch-small tpcc-small; do
        if [[ ! -f $traces_dir/$t.disksim ]]; then
          echo "  $t: skipped ($traces_dir/$t.disksim is absent)"
          continue
        fi
        for s in 1 4; do
          run "$t speed=$s" --ftl "$ftls" --precondition randwrite:512k:2 \
            --trace "$traces_dir/$t.disksim" --address-policy wrap --speed "$s"
          # The paper's LearnedFTL, whose tail latencies Fig. 21 reports.
          has_ftl learnedftl && run "$t speed=$s learnedftl design=paper" --ftl learnedftl \
            --set design=paper --precondition randwrite:512k:2 \
            --trace "$traces_dir/$t.disksim" --address-policy wrap --speed "$s"
        done
      done
      finish
      ;;
    fast-merges)
      deck_has fast || { echo "== fast-merges: skipped (no fast in FTLS)"; continue; }
      begin fast-merges
      # After a sequential fill (switch merges only): whole-block sequential writes, small
      # random writes, both at once; the random case again with the deck's 3 % log buffer.
      run "sequential" --ftl fast "${seq_pre[@]}" --rw write --bs 512k --number-ios "$deck_ios"
      run "random" --ftl fast "${seq_pre[@]}" --rw randwrite --bs 4k --numjobs 64 \
        --number-ios "$deck_ios"
      run "mixed" --ftl fast "${seq_pre[@]}" --job "$jobs/fast-mixed.fio"
      run "random, log_blocks=8 (3 %)" --ftl fast --set log_blocks=8 "${seq_pre[@]}" \
        --rw randwrite --bs 4k --numjobs 64 --number-ios "$deck_ios"
      finish
      ;;
    mu-translation)
      deck_has mu-ftl || { echo "== mu-translation: skipped (no mu-ftl in FTLS)"; continue; }
      begin mu-translation
      # The same total mapping DRAM for both. Fine extents (4 KiB random fill) and coarse ones
      # (512 KiB random fill), then 4 KiB random reads; then 4 KiB random writes.
      deck=(--ftl dftl,mu-ftl --set "mapping_dram_bytes=$deck_dram")
      run "randread after randwrite:4k:1" "${deck[@]}" --precondition randwrite:4k:1 \
        --rw randread --bs 4k --numjobs 64 --number-ios "$rr_ios"
      run "randread after randwrite:512k:1" "${deck[@]}" --precondition randwrite:512k:1 \
        --rw randread --bs 4k --numjobs 64 --number-ios "$rr_ios"
      run "randwrite after write:512k:1" "${deck[@]}" "${seq_pre[@]}" \
        --rw randwrite --bs 4k --numjobs 64 --number-ios "$deck_ios"
      finish
      ;;
    dram)
      begin dram
      run "dram" --ftl "$deck_ftls" "${seq_pre[@]}" --rw randwrite --bs 4k --numjobs 64 \
        --number-ios "$rw_ios"
      finish
      ;;
    hpftl-fig2) hp_experiment hpftl-fig2 hp_fig2_points ;;
    hpftl-secondary) hp_experiment hpftl-secondary hp_secondary_points ;;
  esac
done
echo "all experiments: $(($(date +%s) - t_start)) s"

python3 scripts/summarise.py "$out"
