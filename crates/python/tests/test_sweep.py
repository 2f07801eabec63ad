"""sweep: every point of the grid, on Ray or in-process, with the same numbers either way; a
failing point is reported without losing the others."""

import sys

import pandas as pd
import pytest

import learnedftl

BASE = dict(preset="tiny", precondition="randwrite:512k:1", rw="randread", numjobs=4,
            number_ios=100)
GRID = {"ftl": ["dftl", "tpftl"], "cmt_ratio": [0.05, 0.2], "seed": [1, 2]}
WALL_CLOCK = ["wall_seconds", "sim_page_ops_per_sec"]


def test_ray_sweep_returns_every_point_as_run_locally(ray_cluster, tmp_path):
    out = tmp_path / "sweep.csv"
    df = learnedftl.sweep(GRID, BASE, backend="ray", out=out)
    assert len(df) == 8
    assert df["error"].isna().all(), df["error"].tolist()
    assert list(df["ftl"]) == ["dftl"] * 4 + ["tpftl"] * 4
    assert list(df["cmt_ratio"]) == [0.05, 0.05, 0.2, 0.2] * 2
    assert (df["requests.read"] == 400).all()
    # A larger mapping cache hits more often.
    by = df.groupby(["ftl", "cmt_ratio"])["cmt_hit_ratio"].mean()
    assert by["tpftl", 0.2] > by["tpftl", 0.05]
    # Same seed, same numbers, whichever worker ran the point.
    local = learnedftl.sweep(GRID, BASE, backend="local")
    pd.testing.assert_frame_equal(df.drop(columns=WALL_CLOCK), local.drop(columns=WALL_CLOCK))
    written = pd.read_csv(out)
    assert len(written) == 8 and list(written["iops"]) == pytest.approx(list(df["iops"]))


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_a_failing_point_is_reported_with_its_parameters(backend, request):
    if backend == "ray":
        request.getfixturevalue("ray_cluster")
    grid = {"ftl": ["dftl", "no-such-ftl"], "cmt_ratio": [0.1, -1.0]}
    df = learnedftl.sweep(grid, {**BASE, "precondition": None}, backend=backend)
    assert len(df) == 4
    ok = df["error"].isna()
    # Only (dftl, 0.1) runs: the unknown FTL and the negative ratio fail, each named.
    assert ok.tolist() == [True, False, False, False]
    errors = df.loc[~ok].set_index(["ftl", "cmt_ratio"])["error"]
    assert "cmt_ratio" in errors["dftl", -1.0]
    assert "no-such-ftl" in errors["no-such-ftl", 0.1]
    assert df.loc[ok, "requests.read"].tolist() == [400]


def test_parquet_output(tmp_path):
    pytest.importorskip("pyarrow")
    out = tmp_path / "sweep.parquet"
    df = learnedftl.sweep({"seed": [1, 2]}, BASE, backend="local", out=out)
    assert pd.read_parquet(out)["iops"].tolist() == df["iops"].tolist()


def test_without_ray_the_error_names_the_local_backend(monkeypatch):
    # None in sys.modules makes `import ray` fail as if Ray were not installed.
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ModuleNotFoundError, match='backend="local"') as e:
        learnedftl.sweep({"seed": [1]}, BASE)
    assert "pip install ray" in str(e.value) and e.value.name == "ray"
    # The local backend needs no Ray.
    assert learnedftl.sweep({"seed": [1]}, BASE, backend="local")["error"].isna().all()


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="backend"):
        learnedftl.sweep({"seed": [1]}, BASE, backend="dask")


def test_parameters_merge_into_base_set():
    # The swept set dict and the swept parameter both land over base["set"].
    base = {**BASE, "set": {"cmt_ratio": 0.05, "read_ns": 60000}}
    df = learnedftl.sweep(
        {"ftl": ["tpftl"], "set": [{"read_ns": 80000}], "cmt_ratio": [0.2]}, base,
        backend="local",
    )
    assert df["error"].isna().all(), df["error"].tolist()
    merged = {**BASE, "set": {"cmt_ratio": 0.2, "read_ns": 80000}}
    want = learnedftl.run("tpftl", **merged)["result"]
    assert df.loc[0, "latency_us.read.mean"] == want["latency_us"]["read"]["mean"]
    assert df.loc[0, "cmt_hit_ratio"] == want["cmt_hit_ratio"]
    base_only = learnedftl.run("tpftl", **{**BASE, "set": base["set"]})["result"]
    assert base_only["latency_us"]["read"]["mean"] != want["latency_us"]["read"]["mean"]
