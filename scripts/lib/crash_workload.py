#!/usr/bin/env python3
"""The workload and the check of scripts/crash-fs.sh (docs/power.md "Crash-testing a file system").

  crash_workload.py files  DIR LOG SEED   write files into DIR until killed: each written,
                                          fsynced, its directory fsynced, and only then
                                          "path sha256" appended to LOG (fsynced there: LOG is
                                          on the host, not on the device under test)
  crash_workload.py sqlite DB  LOG SEED   insert rows into DB (journal_mode=WAL,
                                          synchronous=FULL) one transaction at a time; after
                                          each COMMIT returns, "rowid sha256" goes to LOG
  crash_workload.py check  KIND DIR|DB LOG
                                          every entry of LOG must read back byte for byte (a
                                          database must also pass PRAGMA integrity_check);
                                          prints "checked N lost M integrity ok|bad" (bad: the
                                          database failed its check) and one line per loss,
                                          drops the lost entries from LOG (each loss is
                                          counted once), exits 1 on a loss

A file in LOG is never written again, so after a power cut it must hold exactly what was
fsynced. The workload stops at the first I/O error (the cut closed the device).
"""
import hashlib
import os
import random
import sqlite3
import sys


def log_line(log, line):
    log.write(line + "\n")
    log.flush()
    os.fsync(log.fileno())


def files(directory, log_path, seed):
    rng = random.Random(seed)
    os.makedirs(directory, exist_ok=True)
    dfd = os.open(directory, os.O_RDONLY)
    os.fsync(dfd)
    with open(log_path, "a") as log:
        n = 0
        while True:
            n += 1
            # Mostly small files, some up to 1 MiB: metadata-heavy, as mail and build trees.
            size = rng.choice([512, 4096, 6000, 16384, 65536, 300000, 1 << 20])
            data = rng.randbytes(size)
            path = os.path.join(directory, f"f{n:06d}")
            try:
                with open(path, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.fsync(dfd)
            except OSError as e:
                print(f"stopped after {n - 1} files: {e}", file=sys.stderr)
                return
            log_line(log, f"{path} {hashlib.sha256(data).hexdigest()}")


def sqlite(db, log_path, seed):
    rng = random.Random(seed)
    con = sqlite3.connect(db, isolation_level=None)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=FULL")
        con.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)")
    except sqlite3.Error as e:
        print(f"stopped before any transaction: {e}", file=sys.stderr)
        return
    with open(log_path, "a") as log:
        while True:
            data = rng.randbytes(rng.choice([100, 1000, 4000, 20000]))
            try:
                con.execute("BEGIN")
                cur = con.execute("INSERT INTO t (v) VALUES (?)", (data,))
                rowid = cur.lastrowid
                con.execute("COMMIT")
            except sqlite3.Error as e:
                print(f"stopped: {e}", file=sys.stderr)
                return
            log_line(log, f"{rowid} {hashlib.sha256(data).hexdigest()}")


def entries(log_path):
    if not os.path.exists(log_path):
        return []
    with open(log_path) as log:
        return [line.split() for line in log if line.strip()]


def check(kind, target, log_path):
    want = entries(log_path)
    lost = []
    gone = set()
    integrity = "ok"
    if kind == "sqlite":
        try:
            con = sqlite3.connect(target)
            ok = con.execute("PRAGMA integrity_check").fetchone()[0]
            if ok != "ok":
                integrity = "bad"
                print(f"integrity_check: {ok}", file=sys.stderr)
            rows = dict(con.execute("SELECT id, v FROM t").fetchall()) if want else {}
        except sqlite3.Error as e:
            integrity = "bad"
            print(f"cannot read the database: {e}", file=sys.stderr)
            rows = {}
        for rowid, sha in want:
            v = rows.get(int(rowid))
            if v is None:
                lost.append(f"row {rowid}: missing")
            elif hashlib.sha256(v).hexdigest() != sha:
                lost.append(f"row {rowid}: other bytes")
            else:
                continue
            gone.add(rowid)
    else:
        for path, sha in want:
            try:
                with open(path, "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
            except OSError as e:
                lost.append(f"{path}: {e.strerror}")
                gone.add(path)
                continue
            if got != sha:
                lost.append(f"{path}: other bytes")
                gone.add(path)
    if gone:
        with open(log_path, "w") as log:
            log.writelines(f"{k} {sha}\n" for k, sha in want if k not in gone)
    print(f"checked {len(want)} lost {len(lost)} integrity {integrity}")
    for line in lost[:20]:
        print(line)
    return 1 if lost or integrity != "ok" else 0


def main(argv):
    if len(argv) == 5 and argv[1] == "files":
        files(argv[2], argv[3], int(argv[4]))
    elif len(argv) == 5 and argv[1] == "sqlite":
        sqlite(argv[2], argv[3], int(argv[4]))
    elif len(argv) == 5 and argv[1] == "check":
        return check(argv[2], argv[3], argv[4])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
