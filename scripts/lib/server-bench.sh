# shellcheck shell=bash
# Sourced by the benchmark scripts (nbd-bench.sh, nbd-lateness.sh, rocksdb-nbd.sh, mqsim-bench.sh,
# filebench-nbd.sh) from the repository's root: checks that the clients named in $@ are
# installed (saying which script needs them), builds the release binary ($bin), makes a scratch
# directory ($work), and on exit stops the server whose PID is in $pid (SIGTERM, waited for)
# and removes the scratch directory; wait_for FILE waits for a file to appear.
script=$(basename "$0" .sh)
for t in "$@"; do
    command -v "$t" >/dev/null || { echo "$script: $t is not installed" >&2; exit 1; }
done
cargo build --release -q -p learnedftl-cli
# shellcheck disable=SC2034 # used by the scripts that source this
bin=$PWD/target/release/learnedftl
work=$(mktemp -d)
pid=
# Waits (at most 60 s) for the file $1 to appear.
wait_for() {
    for _ in $(seq 600); do
        [ -e "$1" ] && return 0
        sleep 0.1
    done
    echo "$script: $1 did not appear" >&2
    exit 1
}

# Stops the server started last, if any.
stop() {
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        pid=
    fi
}
trap 'stop; rm -rf "$work"' EXIT
