#!/usr/bin/env bash
# The README's test command: `cargo test --workspace --no-fail-fast` (arguments are passed on,
# e.g. `-- NAME`): every test binary runs even when one fails, and every failing test is listed
# at the end; then the tests that skipped, and why. A test skips when a client program it drives
# is not installed (tests/common in crates/cli); the harness hides what a passing test prints,
# so a skipped test would otherwise read as a pass. Exits with cargo's status.
set -uo pipefail
cd "$(dirname "$0")/.."

target=${CARGO_TARGET_DIR:-target}
mkdir -p "$target" || exit 1
# A file of this run's own, named absolutely (tests run in their crate's directory): entries of
# earlier or concurrent runs never show.
skipped=$(mktemp "$(cd "$target" && pwd)/skipped-tests.XXXXXX") || exit 1
log=$(mktemp "$(cd "$target" && pwd)/test-log.XXXXXX") || exit 1
trap 'rm -f "$skipped" "$log"' EXIT

LEARNEDFTL_SKIPPED_TESTS="$skipped" cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# Every failing test of every binary (each binary lists only its own, scattered in the output).
failed=$(awk '/^ *(Running|Doc-tests) / { bin = $2 }
    /^test .* \.\.\. FAILED$/ { sub(/^test /, ""); sub(/ \.\.\. FAILED$/, ""); print bin ": " $0 }' "$log")
if [ -n "$failed" ]; then
    echo "Failed tests ($(wc -l <<<"$failed")):"
    sed 's/^/  /' <<<"$failed"
fi

n=$(wc -l <"$skipped")
case $n in
0) echo "No test skipped." ;;
1) echo "1 test skipped (it passed without running; CI installs what it needs: .ci/run):" ;;
*) echo "$n tests skipped (they passed without running; CI installs what they need: .ci/run):" ;;
esac
sort "$skipped" | sed 's/^/  /'
exit "$status"
