"""`learnedftl.reproduce`: the CLI's suite from Python, here and on a local Ray cluster."""

import json
import subprocess

import pytest

import learnedftl

from conftest import REPO

# The files every suite reads, named from the checkout (tests run elsewhere).
FILES = {"traces": str(REPO.parent / "shared" / "traces"), "recordings": str(REPO / "recordings")}
# Fields that measure this machine, not the simulated device: wall times, the simulator's
# speed, LearnedFTL's host time spent training and sorting (docs/metrics.md), and whether a
# result came from the cache.
WALL_CLOCK = {
    "wall_seconds",
    "sim_page_ops_per_sec",
    "train_ns",
    "sort_ns",
    "train_us_per_gc",
    "sort_us_per_gc",
    "cached",
}


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in WALL_CLOCK}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _experiments(out):
    """Every experiment JSON in `out`, without its wall-clock fields."""
    files = sorted(out.glob("*.json"))
    assert files, f"no experiment JSON in {out}"
    return {f.name: _strip(json.loads(f.read_text())) for f in files}


def test_reproduce_writes_what_the_cli_writes(cli, tmp_path):
    names = ["fast-merges", "mu-translation", "leaftl-mapping"]
    s = learnedftl.reproduce(names, preset="tiny", out=tmp_path / "py", **FILES)
    assert s["runs"] > 0 and (s["cached"], s["failures"]) == (0, [])
    subprocess.run(
        [cli, "reproduce", *names, "--preset", "tiny", "--out", tmp_path / "cli", "--quiet",
         "--traces", FILES["traces"], "--recordings", FILES["recordings"]],
        check=True,
    )
    assert _experiments(tmp_path / "py") == _experiments(tmp_path / "cli")
    for f in ("report.html", "report.md", "jobs"):
        assert (tmp_path / "py" / f).exists(), f
    again = learnedftl.reproduce(names, preset="tiny", out=tmp_path / "py", **FILES)
    assert (again["cached"], again["simulated"]) == (s["runs"], 0), "a re-run reads the cache"


def test_the_tiny_suite_on_ray_equals_the_local_run(ray_cluster, tmp_path):
    local = learnedftl.reproduce(preset="tiny", out=tmp_path / "local", **FILES)
    groups = learnedftl._learnedftl.reproduce_plan(preset="tiny", out=tmp_path / "ray", **FILES)
    assert sum(len(g["keys"]) for g in groups) == local["simulated"]
    assert all(g["memory_bytes"] > 0 for g in groups)
    on_ray = learnedftl.reproduce(preset="tiny", out=tmp_path / "ray", backend="ray", **FILES)
    # Ray simulated every group; the report was then rendered from the cache, but for the runs
    # an FTL refuses (HP-FTL without room for its secondary table): errors are not cached, so
    # they are refused again here (before simulating anything).
    refused = sum(
        "error" in r for e in _experiments(tmp_path / "local").values() for r in e["runs"]
    )
    assert on_ray["ray_tasks"] == len(groups) > 1
    assert (on_ray["simulated"], on_ray["cached"]) == (refused, local["runs"] - refused)
    assert on_ray["failures"] == local["failures"] == []
    assert on_ray["checks_failed"] == local["checks_failed"]
    assert _experiments(tmp_path / "ray") == _experiments(tmp_path / "local")
    # Nothing is left to hand out but the refusals.
    again = learnedftl.reproduce(preset="tiny", out=tmp_path / "ray", backend="ray", **FILES)
    assert again["ray_tasks"] <= refused


def test_a_group_planned_by_another_build_is_refused(tmp_path):
    options = dict(experiments=["dram"], preset="tiny", out=tmp_path, **FILES)
    group = learnedftl._learnedftl.reproduce_plan(**options)[0]
    with pytest.raises(learnedftl.LearnedFtlError, match=group["group"]):
        learnedftl._learnedftl.reproduce_group(group["group"], ["0" * 32], **options)


def test_bad_options_are_named(tmp_path):
    with pytest.raises(learnedftl.LearnedFtlError, match="unknown experiment \"nope\""):
        learnedftl.reproduce(["nope"], preset="tiny", out=tmp_path)
    with pytest.raises(learnedftl.LearnedFtlError, match="unknown option \"bogus\""):
        learnedftl.reproduce(preset="tiny", out=tmp_path, bogus=1)
    with pytest.raises(learnedftl.LearnedFtlError, match="setup"):
        learnedftl.reproduce(preset="tiny", out=tmp_path, setup="fast")
    with pytest.raises(ValueError, match="backend"):
        learnedftl.reproduce(preset="tiny", out=tmp_path, backend="slurm")


def test_a_group_no_node_has_room_for_runs_as_one_task_per_run(tmp_path):
    names = ["randread", "randwrite"]
    opts = dict(preset="tiny", experiments=names, **FILES)
    local = learnedftl.reproduce(names, preset="tiny", out=tmp_path / "local", **FILES)
    assert local["shared_starts"] and local["starts"] < local["simulated"]
    split = dict(opts, out=str(tmp_path / "split"))
    groups = learnedftl._learnedftl.reproduce_plan(**split)
    assert all(g["memory_bytes"] == 2 * g["state_bytes"] > 0 for g in groups)
    # No node holds a state and its copy: every run is a task asking for one state.
    largest = max(g["state_bytes"] for g in groups)
    tasks = learnedftl._ray_tasks(groups, largest)
    assert len(tasks) == sum(len(g["keys"]) for g in groups) == local["simulated"]
    assert all(len(t["keys"]) == len(t["units"]) == 1 for t in tasks)
    assert all(t["memory_bytes"] == t["state_bytes"] <= largest for t in tasks)
    assert learnedftl._ray_tasks(groups, 2 * largest) == groups
    # Run here as Ray would run them, each from its own preparation: the same results.
    for t in tasks:
        learnedftl._learnedftl.reproduce_store(learnedftl._reproduce_group(t, split), **split)
    again = learnedftl.reproduce(names, preset="tiny", out=tmp_path / "split", **FILES)
    assert (again["simulated"], again["cached"]) == (0, local["runs"])
    assert _experiments(tmp_path / "split") == _experiments(tmp_path / "local")
