#!/usr/bin/env bash
# Crash-consistency testing of real file systems on every FTL (docs/power.md "Crash-testing a
# file system"): `learnedftl serve` on a Unix socket -> nbdfuse -> a loop device (direct I/O,
# 4 KiB sectors) -> the file system. Per FTL, file system and cache contract, CUTS times: a
# workload with fsync points runs (scripts/lib/crash_workload.py: files fsynced with their
# directory, or SQLite transactions in WAL mode on ext4), the power is cut at a random instant
# (SIGUSR1: inside the flash work that follows — host programs, GC, mapping write-back — or
# between requests), the server recovers the FTL from flash and closes the connection; the
# stack is torn down and attached again on a new connection, the file system mounted (journal
# replay) and unmounted, its checker run (e2fsck -fn, xfs_repair -n, btrfs check --readonly),
# it is mounted again and every file (row) fsynced (committed) before the cut is read back
# byte for byte. The next round's workload runs on the same file system.
#
#   scripts/crash-fs.sh [FTL ...]     (default: every implemented FTL)
#   FS="ext4 xfs btrfs sqlite"  file systems (sqlite: SQLite in WAL mode, synchronous=FULL, on ext4)
#   CONTRACTS="volatile plp"    the write buffer's contract: volatile (what no FLUSH/FUA covered
#                               may be lost) or plp (power-loss protection: nothing acknowledged)
#   FLUSH=honor                 honor, ignore or reorder: a drive breaking the FLUSH contract on
#                               purpose (the table then shows what that costs)
#   CUTS=10                     power cuts per FTL x file system x contract
#   WRITE_BUFFER=1MiB  PRESET=tiny  CAPACITY=512MiB (XFS needs 300 MB)  SEED=1
#   SETS="K=V ..."              more device or FTL keys for every server, e.g. NVMe FDP by LBA
#                               range: "logical_ratio=0.75 fdp_ruhs=2 fdp_ranges=0-50%:1"
#   RUN_MS=200-1200             the workload runs this long (uniform, seeded) after its first
#                               fsync point before each cut
#   OUT=DIR                     keep results.tsv, table.md and each server's report and log
#                               (default: temporary, the table printed)
# Prints one table: per FTL x file system x contract, the cuts, the rounds whose checker found
# damage after journal replay (SQLite: PRAGMA integrity_check) and whose mount failed (its
# fsynced files then all count as lost and a new file system is made), the fsynced files
# (committed rows) checked, summed over the rounds, and lost (each counted once), and the
# longest recovery.
# Needs root (mount, losetup), /dev/fuse and the Debian packages libnbd-bin fuse3 e2fsprogs
# xfsprogs btrfs-progs python3. Everything is torn down on exit, even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/server-bench.sh
. scripts/lib/server-bench.sh nbdfuse fusermount3 losetup python3 mkfs.ext4 e2fsck
[ "$(id -u)" = 0 ] || { echo "$script: needs root (mount, losetup)" >&2; exit 1; }
read -r -a ftls <<<"${*:-$("$bin" list | sed -n 's/^FTLs: //p' | tr -d ,)}"
read -r -a filesystems <<<"${FS:-ext4 xfs btrfs sqlite}"
read -r -a contracts <<<"${CONTRACTS:-volatile plp}"
flush=${FLUSH:-honor}
cuts=${CUTS:-10}
preset=${PRESET:-tiny}
capacity=${CAPACITY:-512MiB}
extra_sets=${SETS:-}
buffer=${WRITE_BUFFER:-1MiB}
seed=${SEED:-1}
run_ms=${RUN_MS:-200-1200}
out=${OUT:-$work/out}
mkdir -p "$out"
for fs in "${filesystems[@]}"; do
    case $fs in
        ext4 | sqlite) need=mkfs.ext4 ;;
        xfs) need=mkfs.xfs ;;
        btrfs) need=mkfs.btrfs ;;
        *) echo "$script: FS: unknown file system '$fs' (ext4, xfs, btrfs, sqlite)" >&2; exit 1 ;;
    esac
    command -v "$need" >/dev/null || { echo "$script: $need is not installed ($fs)" >&2; exit 1; }
done
for c in "${contracts[@]}"; do
    case $c in volatile | plp) ;; *) echo "$script: CONTRACTS: '$c' is volatile or plp" >&2; exit 1 ;; esac
done
case $flush in honor | ignore | reorder) ;; *) echo "$script: FLUSH: '$flush' is honor, ignore or reorder" >&2; exit 1 ;; esac
[[ $run_ms =~ ^([0-9]+)-([0-9]+)$ ]] || { echo "$script: RUN_MS: '$run_ms' is not MIN-MAX (ms)" >&2; exit 1; }
run_min=${BASH_REMATCH[1]} run_span=$((BASH_REMATCH[2] - BASH_REMATCH[1] + 1))
RANDOM=$seed

fuse='' loopdev='' mounted='' load=''
# Takes the block stack down (file system, loop device, nbdfuse); what is not up is skipped.
detach() {
    set +e
    [ -n "$load" ] && { kill "$load" 2>/dev/null; wait "$load" 2>/dev/null; }
    [ -n "$mounted" ] && { umount "$work/fs" 2>/dev/null || umount -l "$work/fs"; }
    [ -n "$loopdev" ] && losetup -d "$loopdev"
    [ -n "$fuse" ] && { fusermount3 -u "$work/nbd" 2>/dev/null; wait "$fuse" 2>/dev/null; }
    load='' fuse='' loopdev='' mounted=''
    set -e
}
trap 'detach; stop; rm -rf --one-file-system "$work"' EXIT

# A new connection to the server: nbdfuse, then the loop device ($loopdev).
attach() {
    mkdir -p "$work/nbd" "$work/fs"
    # Through sh, which reaps nbdfuse quietly when a cut ends its connection.
    sh -c 'nbdfuse "$@"; exit 0' sh "$work/nbd" --unix "$work/nbd.sock" >>"$log.nbdfuse" 2>&1 &
    fuse=$!
    wait_for "$work/nbd/nbd"
    loopdev=$(losetup --direct-io=on --sector-size 4096 -f --show "$work/nbd/nbd")
}

mkfs_fs() {
    case $1 in
        ext4 | sqlite) mkfs.ext4 -q -F -b 4096 "$loopdev" ;;
        xfs) mkfs.xfs -q -f "$loopdev" ;;
        btrfs) mkfs.btrfs -q -f "$loopdev" >/dev/null ;;
    esac
}

# The file system's checker, read-only, on the unmounted device: exit 0 when it finds nothing.
fsck_fs() {
    case $1 in
        ext4 | sqlite) e2fsck -fn "$loopdev" ;;
        xfs) xfs_repair -n "$loopdev" ;;
        # --force: it would refuse to run when another mount (a concurrent run's nbdfuse
        # whose connection a cut closed) cannot be read; this device is not mounted.
        btrfs) btrfs check --readonly --force "$loopdev" ;;
    esac
}

mount_fs() {
    mount "$loopdev" "$work/fs" && mounted=1
}

# Round $1's mount failed, beyond journal replay (a drive breaking the FLUSH contract can do
# this): counted, every fsynced file counted lost, and a new file system made for the next.
fresh_fs() {
    mount_failed=$((mount_failed + 1))
    touch "$work/fsynced.log"
    lost=$((lost + $(wc -l <"$work/fsynced.log")))
    echo "round $1: mount after the cut failed; a new file system follows" >>"$log.fsck"
    : >"$work/fsynced.log"
    mkfs_fs "$fs"
    mount_fs
}

# Waits (at most 30 s) for power cut number $1 in the server's log.
wait_cut() {
    for _ in $(seq 300); do
        grep -q "^power cut $1 " "$log" && return 0
        sleep 0.1
    done
    echo "$script: power cut $1 never came (see $log)" >&2
    exit 1
}

printf 'ftl\tfs\tcontract\tflush\tcuts\tfsck_failed\tmount_failed\tchecked\tlost\trecovery_ms_max\n' >"$out/results.tsv"
for ftl in "${ftls[@]}"; do
    for fs in "${filesystems[@]}"; do
        for contract in "${contracts[@]}"; do
            name=$ftl-$fs-$contract-$flush log=$out/$name.log
            sets=(--set "write_buffer=$buffer" --set "flush=$flush")
            [ "$contract" = plp ] && sets+=(--set power_loss_protection=on)
            for kv in $extra_sets; do sets+=(--set "$kv"); done
            rm -f "$work/nbd.sock" "$log" "$log.nbdfuse" "$work/fsynced.log"
            "$bin" serve --ftl "$ftl" --preset "$preset" --capacity "$capacity" --timing none \
                --socket "$work/nbd.sock" --json "$out/$name.json" --seed "$seed" "${sets[@]}" \
                >"$log.out" 2>"$log" &
            pid=$!
            # Listening once it says so (the socket file appears a moment before).
            for _ in $(seq 600); do
                grep -q '^listening on' "$log.out" 2>/dev/null && break
                kill -0 "$pid" 2>/dev/null || { echo "$script: the server stopped (see $log)" >&2; exit 1; }
                sleep 0.1
            done
            attach
            mkfs_fs "$fs"
            mount_fs
            fsck_failed=0 mount_failed=0 checked=0 lost=0
            for n in $(seq "$cuts"); do
                # Keep the file system under ~60 % full: drop old rounds' files (and their
                # log entries) while nothing runs.
                if [ "$fs" != sqlite ] && [ "$(df --output=pcent "$work/fs" | tail -1 | tr -dc 0-9)" -gt 60 ]; then
                    rm -rf "$work/fs"/round-*
                    sync -f "$work/fs"
                    : >"$work/fsynced.log"
                fi
                case $fs in
                    sqlite) python3 scripts/lib/crash_workload.py sqlite "$work/fs/db" "$work/fsynced.log" "$RANDOM" >>"$log.load" 2>&1 & ;;
                    *) python3 scripts/lib/crash_workload.py files "$work/fs/round-$n" "$work/fsynced.log" "$RANDOM" >>"$log.load" 2>&1 & ;;
                esac
                load=$!
                # The cut comes RUN_MS after the workload's first fsync point (at most 5 s
                # after it started): a round that cut before any would check nothing.
                touch "$work/fsynced.log"
                before=$(wc -l <"$work/fsynced.log")
                for _ in $(seq 50); do
                    [ "$(wc -l <"$work/fsynced.log")" -gt "$before" ] && break
                    kill -0 "$load" 2>/dev/null || break
                    sleep 0.1
                done
                sleep "$(awk -v ms=$((run_min + RANDOM % run_span)) 'BEGIN { print ms / 1000 }')"
                kill -USR1 "$pid"
                wait_cut "$n"
                # The cut closed the connection: the old stack sees I/O errors; a new one
                # reconnects to the recovered device.
                detach
                attach
                if ! mount_fs; then
                    fresh_fs "$n"
                    continue
                fi
                umount "$work/fs" && mounted=''
                if ! fsck_fs "$fs" >>"$log.fsck" 2>&1; then
                    fsck_failed=$((fsck_failed + 1))
                    echo "round $n: the checker found damage (above)" >>"$log.fsck"
                fi
                if ! mount_fs; then
                    fresh_fs "$n"
                    continue
                fi
                target=$work/fs
                [ "$fs" = sqlite ] && target=$work/fs/db
                result=$(python3 scripts/lib/crash_workload.py check "$([ "$fs" = sqlite ] && echo sqlite || echo files)" "$target" "$work/fsynced.log" 2>>"$log.fsck" || true)
                read -r _ c _ l _ integrity <<<"$(head -1 <<<"$result")"
                checked=$((checked + c)) lost=$((lost + l))
                [ "$integrity" = ok ] || fsck_failed=$((fsck_failed + 1))
                [ "$l" = 0 ] || { echo "round $n:"; echo "$result"; } >>"$log.lost"
            done
            detach
            stop
            rec=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])).get("live_power_cuts") or [{}]; print(round(max(x.get("recovery_wall_ms", 0) for x in c), 1))' "$out/$name.json")
            done_cuts=$(grep -c '^power cut ' "$log" || true)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$ftl" "$fs" "$contract" "$flush" "$done_cuts" \
                "$fsck_failed" "$mount_failed" "$checked" "$lost" "$rec" >>"$out/results.tsv"
            tail -1 "$out/results.tsv"
        done
    done
done
python3 - "$out/results.tsv" >"$out/table.md" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
head = ["FTL", "file system", "contract", "FLUSH", "cuts", "checker failed", "mount failed",
        "fsynced checks", "fsynced lost", "recovery ms (max)"]
keys = ["ftl", "fs", "contract", "flush", "cuts", "fsck_failed", "mount_failed", "checked", "lost",
        "recovery_ms_max"]
print("| " + " | ".join(head) + " |")
print("|" + "|".join("---" for _ in head) + "|")
for r in rows:
    print("| " + " | ".join(r[k] for k in keys) + " |")
EOF
cat "$out/table.md"
