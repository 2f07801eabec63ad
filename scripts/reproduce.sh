#!/usr/bin/env bash
# Thin wrapper kept for old habits: the experiments live in the binary now
# (`learnedftl reproduce`, docs/reproduction.md).
#
#   scripts/reproduce.sh [quick|paper|tiny] [experiment ...] [--paper-design]
#
# is `learnedftl reproduce --preset PRESET [experiment ...]` with the release build (any further
# `reproduce` option, e.g. --paper-design, passed on), writing
# results/<preset>/ (results/<preset>-femu/ with SETUP=femu): report.html, report.md, plots/,
# one JSON per experiment, jobs/, cache/. Environment: SEED (default 1), SETUP (default or
# femu), TRACES_DIR (default ../shared/traces), JOBS (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-quick}
[[ $# -gt 0 ]] && shift
[[ -z ${FTLS:-} ]] || {
  echo "FTLS is gone: every experiment runs the FTLs it is about (learnedftl reproduce --list)" >&2
  exit 2
}
args=(--preset "$preset" --seed "${SEED:-1}" --setup "${SETUP:-default}"
  --traces "${TRACES_DIR:-../shared/traces}")
[[ -z ${JOBS:-} ]] || args+=(--jobs "$JOBS")
cargo build --release -q -p learnedftl-cli
exec target/release/learnedftl reproduce "${args[@]}" "$@"
