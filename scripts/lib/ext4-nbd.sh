# shellcheck shell=bash
# Sourced by the scripts that run an application on ext4 over the emulated device
# (rocksdb-nbd.sh, filebench-nbd.sh) from the repository's root, after server-bench.sh (which
# checks the clients, builds $bin and makes $work): `learnedftl serve` on a Unix socket ->
# nbdfuse (the export as a file) -> a loop device with direct I/O and 4 KiB sectors -> ext4.
# Needs root (mount, losetup), /dev/fuse and the Debian packages libnbd-bin fuse3 e2fsprogs.
# Reads $out (where reports go), $preset and $timing; with RECORD=1 the server also records
# its I/O (`--record-format learnedftl`). Everything is torn down on exit, even on failure, and
# $work removed.
# shellcheck disable=SC2154 # $script, $work, $bin: server-bench.sh's; $preset, $timing: the caller's
for t in nbdfuse fusermount3 losetup mkfs.ext4; do
    command -v "$t" >/dev/null || { echo "$script: $t is not installed" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "$script: needs root (mount, losetup)" >&2; exit 1; }

fuse='' loopdev='' mounted=''
# Unmounts the file system, detaches the loop device, stops nbdfuse and the server (SIGTERM:
# it writes its report); what is not set up is skipped, so it may run twice.
teardown() {
    set +e
    [ -n "$mounted" ] && { umount "$work/fs" || umount -l "$work/fs"; }
    [ -n "$loopdev" ] && losetup -d "$loopdev"
    [ -n "$fuse" ] && { fusermount3 -u "$work/nbd" 2>/dev/null; wait "$fuse" 2>/dev/null; }
    stop
    fuse='' loopdev='' mounted=''
    set -e
}
# --one-file-system: never into a mount that teardown could not remove.
trap 'teardown; rm -rf --one-file-system "$work"' EXIT

# Serves FTL $1 (its report to $out/$1.json, its output to $out/$1.serve.log; with RECORD=1 its
# recording to $out/$1.rec) and mounts a fresh ext4 on it at $work/fs.
mount_ext4() {
    local ftl=$1 sock=$work/nbd.sock record=()
    if [ "${RECORD:-0}" = 1 ]; then
        record=(--record "$out/$ftl.rec" --record-format learnedftl)
    fi
    rm -f "$sock"
    "$bin" serve --ftl "$ftl" --preset "$preset" --timing "$timing" --socket "$sock" \
        --json "$out/$ftl.json" "${record[@]}" >"$out/$ftl.serve.log" 2>&1 &
    # shellcheck disable=SC2034 # server-bench.sh's stop() ends it
    pid=$!
    wait_for "$sock"
    mkdir -p "$work/nbd" "$work/fs"
    # Background processes write to files, never to our stdout (a reader of it would wait for
    # them).
    nbdfuse "$work/nbd" --unix "$sock" >"$out/$ftl.nbdfuse.log" 2>&1 &
    fuse=$!
    wait_for "$work/nbd/nbd"
    loopdev=$(losetup --direct-io=on --sector-size 4096 -f --show "$work/nbd/nbd")
    mkfs.ext4 -q -F -b 4096 "$loopdev"
    mount "$loopdev" "$work/fs"
    mounted=1
}
