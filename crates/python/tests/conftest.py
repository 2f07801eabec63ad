"""Shared fixtures: the CLI binary to compare with, and a local Ray cluster of 2 workers."""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def cli():
    """The `learnedftl` binary: $LEARNEDFTL_CLI, else built from this checkout (a no-op when
    `cargo test --workspace` has built it already)."""
    path = os.environ.get("LEARNEDFTL_CLI")
    if path:
        return path
    subprocess.run(
        ["cargo", "build", "--quiet", "-p", "learnedftl-cli"], cwd=REPO, check=True
    )
    return str(REPO / "target" / "debug" / "learnedftl")


@pytest.fixture(scope="session")
def ray_cluster():
    """A local Ray cluster with 2 CPUs, so sweeps run 2 points at a time."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
