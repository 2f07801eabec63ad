"""run/compare return what the CLI's --json writes for the same command; errors name the
option or parameter at fault."""

import json
import subprocess
import threading
import time

import pytest

import learnedftl
from conftest import REPO

# Measurements of the machine, not of the simulated device: they differ between any two runs.
WALL_CLOCK = ("wall_seconds", "sim_page_ops_per_sec")

TRACE = REPO / "crates" / "learnedftl" / "tests" / "fixtures" / "traces" / "disksim.trace"
RECORDING = TRACE.parent / "app.rec"
PHASES = TRACE.parent / "app.phases"


def without_wall_clock(report):
    for phase in report["phases"] + [report["result"]]:
        for key in WALL_CLOCK:
            assert key in phase
            del phase[key]
        # An FTL's own CPU-time counters (LearnedFTL's training and sorting time).
        counters = phase.get("ftl_counters") or {}
        for key in [k for k in counters if k.endswith("_ns") or k.endswith("_us_per_gc")]:
            del counters[key]
    return report


def cli_json(cli, *args):
    out = subprocess.run(
        [cli, *args, "--json", "-", "--quiet"], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


# (CLI arguments, the same as run() keywords)
CASES = {
    "jobs": (
        ["--ftl", "tpftl", "--preset", "tiny", "--set", "cmt_ratio=0.1",
         "--precondition", "randwrite:512k:1", "--rw", "randread", "--bs", "4k",
         "--numjobs", "4", "--number-ios", "200", "--seed", "7"],
        dict(ftl="tpftl", preset="tiny", set={"cmt_ratio": 0.1},
             precondition="randwrite:512k:1", rw="randread", bs="4k", numjobs=4,
             number_ios=200, seed=7),
    ),
    "job_file": (
        ["--ftl", "dftl", "--preset", "tiny", "--job", str(REPO / "examples" / "warmup-then-randread.fio"),
         "--verify"],
        dict(ftl="dftl", preset="tiny", job=REPO / "examples" / "warmup-then-randread.fio",
             verify=True),
    ),
    "power_cuts": (
        ["--ftl", "dftl", "--preset", "tiny", "--precondition", "randwrite:512k:1",
         "--rw", "randrw", "--bs", "16k", "--number-ios", "300", "--power-cut-every", "50",
         "--verify"],
        dict(ftl="dftl", preset="tiny", precondition="randwrite:512k:1", rw="randrw", bs="16k",
             number_ios=300, power_cut_every=50, verify=True),
    ),
    "capacity": (
        ["--ftl", "dftl", "--preset", "tiny", "--capacity", "240MiB",
         "--precondition", "write:512k:1", "--rw", "randread", "--number-ios", "100"],
        dict(ftl="dftl", preset="tiny", capacity="240MiB", precondition="write:512k:1",
             rw="randread", number_ios=100),
    ),
    "trace": (
        ["--ftl", "learnedftl", "--preset", "tiny", "--trace", str(TRACE), "--fill-unwritten",
         "--speed", "2"],
        dict(ftl="learnedftl", preset="tiny", trace=str(TRACE), fill_unwritten=True, speed=2.0),
    ),
    "closed_loop": (
        ["--ftl", "leaftl", "--preset", "tiny", "--trace", str(RECORDING), "--replay", "closed",
         "--phases", str(PHASES), "--verify"],
        dict(ftl="leaftl", preset="tiny", trace=str(RECORDING), replay="closed",
             phases=str(PHASES), verify=True),
    ),
    "fdp": (
        ["--ftl", "learnedftl", "--preset", "tiny", "--set", "logical_ratio=0.75",
         "--set", "fdp_ruhs=2", "--set", "fdp_ruh_type=persistently",
         "--precondition", "randwrite:512k:1", "--rw", "randrw", "--bs", "4k",
         "--number-ios", "2000", "--fdp", "--fdp-pli", "0,1", "--fdp-pli-select", "random",
         "--verify"],
        dict(ftl="learnedftl", preset="tiny",
             set={"logical_ratio": 0.75, "fdp_ruhs": 2, "fdp_ruh_type": "persistently"},
             precondition="randwrite:512k:1", rw="randrw", bs="4k", number_ios=2000,
             fdp=True, fdp_pli="0,1", fdp_pli_select="random", verify=True),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_run_equals_cli_json(cli, case):
    args, kwargs = CASES[case]
    expected = without_wall_clock(cli_json(cli, "run", *args))
    got = without_wall_clock(learnedftl.run(**kwargs))
    assert got["result"]["requests"]["read"] > 0
    assert got == expected
    if case == "fdp":
        # Both handles took host writes, and the checked reads found each page where its
        # handle placed it (the oracle checks that under FDP).
        handles = got["result"]["fdp"]["handles"]
        assert [h["handle"] for h in handles] == [0, 1]
        assert all(h["host_pages"] > 0 for h in handles)
        assert got["result"]["verify"]["failures"] == 0


def test_compare_equals_cli_json(cli):
    ftls = ["ideal", "sftl", "hpftl"]
    expected = cli_json(
        cli, "compare", "--ftl", ",".join(ftls), "--preset", "tiny",
        "--precondition", "write:512k:1", "--rw", "randrw", "--number-ios", "300",
        "--numjobs", "2", "--seed", "3",
    )
    got = learnedftl.compare(
        ftls, preset="tiny", precondition="write:512k:1", rw="randrw", number_ios=300,
        numjobs=2, seed=3,
    )
    assert [r["ftl"] for r in got] == ftls
    assert [without_wall_clock(r) for r in got] == [without_wall_clock(r) for r in expected]


def test_to_dataframe_has_a_row_per_report():
    reports = learnedftl.compare(
        ["ideal", "dftl"], preset="tiny", precondition="write:512k:1", rw="randread",
        number_ios=100, jobs=1,
    )
    df = learnedftl.to_dataframe(reports)
    assert list(df["ftl"]) == ["ideal", "dftl"]
    assert list(df["requests.read"]) == [100, 100]
    assert (df["iops"] > 0).all()
    assert "latency_us.read.p99" in df.columns


@pytest.mark.parametrize(
    "kwargs, named",
    [
        (dict(set={"not_a_knob": 1}), "not_a_knob"),
        (dict(ftl="dftl", set={"cmt_ratio": "lots"}), "cmt_ratio: \"lots\""),
        (dict(rw="sideways"), "rw"),
        (dict(rw="read", bs="4x"), "bs"),
        (dict(number_ios=10), "number_ios"),
        (dict(preset="huge"), "huge"),
        (dict(rw="read", numjobs="many"), "numjobs"),
        (dict(ftl="no-such-ftl", rw="read"), "no-such-ftl"),
        (dict(capacity="3XB"), 'capacity: "3XB" is not a size'),
        (dict(capacity="1TB"), 'capacity: "1TB" is in decimal units'),
        (dict(capacity=0), 'capacity: "0" is no space at all'),
        (dict(capacity="1GiB", set={"blocks_per_plane": 128}),
         'cannot be combined with blocks_per_plane=128'),
    ],
)
def test_a_bad_parameter_raises_naming_it(kwargs, named):
    kwargs = {"preset": "tiny", **kwargs}
    with pytest.raises(learnedftl.LearnedFtlError, match=named) as e:
        learnedftl.run(**kwargs)
    assert isinstance(e.value, ValueError)


def test_capacity_in_bytes_or_binary_units_sizes_the_device():
    """An int is bytes; the device's blocks per plane are rounded up to hold it."""
    by_text = learnedftl.run(preset="tiny", capacity="240MiB", rw="read", number_ios=1)
    by_bytes = learnedftl.run(preset="tiny", capacity=240 << 20, rw="read", number_ios=1)
    for r in (by_text, by_bytes):
        device = r["config"]["device"]
        assert device["capacity"] == 240 << 20
        assert device["geometry"]["blocks_per_plane"] == 128
    assert "capacity" in learnedftl.OPTIONS


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError, match="numjob"):
        learnedftl.run(preset="tiny", numjob=4)


def test_the_gil_is_released_while_simulating():
    """Another Python thread keeps running while a run simulates: had the run held the GIL,
    this thread would stall for the whole run."""
    done = threading.Event()

    def work():
        learnedftl.run("dftl", preset="tiny", precondition="randwrite:512k:2", rw="randread",
                       numjobs=4, number_ios=20000)
        done.set()

    worker = threading.Thread(target=work)
    start = last = time.perf_counter()
    worker.start()
    longest = 0.0
    while not done.is_set():
        time.sleep(0.001)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    total = time.perf_counter() - start
    assert longest < total / 2, f"stalled {longest:.3f} s of a {total:.3f} s run"
