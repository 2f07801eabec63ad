#!/usr/bin/env python3
"""How much a Python call adds to a run, and how much faster a sweep runs on 2 Ray workers.

1. Overhead: the median wall time of `learnedftl.run()` on a small run, minus the wall time the
   library measured for its phases (the `wall_seconds` of each, timed in Rust). This counts the
   experiment's set-up (device and FTL construction, which a run from Rust does too) as
   overhead, so it is an upper bound. The binding's own work is then timed apart: turning the
   keyword arguments into options (a call refused at its first check, before any simulation)
   and decoding the report's JSON into Python objects.
2. Sweep speed-up: the same 8 points run one after another in this process, then as Ray tasks
   on a local cluster of 2 CPUs (started before timing; its start-up is printed apart).

    python scripts/python-bench.py
"""

import json
import statistics
import time

import learnedftl

SMALL = dict(ftl="dftl", preset="tiny", rw="randread", number_ios=2000, settle="off")
CALLS = 50
GRID = {"ftl": ["dftl", "tpftl", "learnedftl", "hpftl"], "seed": [1, 2]}
POINT = dict(preset="tiny", precondition="randwrite:512k:2", rw="randread", numjobs=16,
             number_ios=20000)


def median_ms(f, n=CALLS):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def refused():
    try:
        learnedftl.run(**dict(SMALL, rw="sideways"))
    except learnedftl.LearnedFtlError:
        pass


def overhead():
    report = learnedftl.run(**SMALL)  # warm-up: first-touch page faults, module import
    extra, total = [], []
    for _ in range(CALLS):
        t = time.perf_counter()
        r = learnedftl.run(**SMALL)
        wall = time.perf_counter() - t
        total.append(wall)
        extra.append(wall - sum(p["wall_seconds"] for p in r["phases"]))
    print(f"run(): median {statistics.median(total) * 1e3:.3f} ms per call, of which "
          f"{statistics.median(extra) * 1e3:.3f} ms outside the simulated phases "
          f"(median of {CALLS})")
    text = json.dumps(report)
    options, decode = median_ms(refused), median_ms(lambda: json.loads(text))
    print(f"the binding's own work: options {options:.3f} ms + decoding the {len(text)} B report "
          f"{decode:.3f} ms = {options + decode:.3f} ms")


def speedup():
    t = time.perf_counter()
    seq = learnedftl.sweep(GRID, POINT, backend="local")
    sequential = time.perf_counter() - t
    import ray

    t = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - t
    # One task per worker first, so that the timed sweep does not pay for starting workers.
    learnedftl.sweep({"seed": [1, 2]}, dict(SMALL, number_ios=10), backend="ray")
    t = time.perf_counter()
    par = learnedftl.sweep(GRID, POINT, backend="ray")
    parallel = time.perf_counter() - t
    ray.shutdown()
    assert seq["error"].isna().all() and par["error"].isna().all()
    assert (seq["iops"] == par["iops"]).all(), "the same points gave different numbers"
    print(f"sweep of {len(seq)} points: sequential {sequential:.2f} s, "
          f"Ray on 2 CPUs {parallel:.2f} s: {sequential / parallel:.2f}x "
          f"(Ray start-up {startup:.1f} s, not counted)")


if __name__ == "__main__":
    overhead()
    speedup()
