"""learnedftl: the learnedftl SSD workbench from Python.

``run`` and ``compare`` call the Rust library (the GIL is released while it simulates) and
return the reports of ``learnedftl run --json`` / ``compare --json`` as dicts. ``sweep`` runs
the Cartesian product of parameters as independent tasks on Ray (or one after another in this
process) and gathers one row per point into a pandas DataFrame; ``to_dataframe`` turns reports
into rows.

Quick start::

    import learnedftl
    df = learnedftl.to_dataframe(learnedftl.compare(["dftl", "learnedftl"], preset="tiny"))
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from ._learnedftl import FTLS, OPTIONS, PRESETS, LearnedFtlError, compare, run

__all__ = [
    "FTLS",
    "OPTIONS",
    "PRESETS",
    "LearnedFtlError",
    "compare",
    "flatten",
    "run",
    "sweep",
    "to_dataframe",
]

# Keys of a sweep point that are not run() options but name the run itself.
_RUN_KEYS = ("ftl",)


def flatten(value: Mapping[str, Any], prefix: str = "") -> dict:
    """The scalars of a nested report dict, keyed by their dotted path.

    ``{"latency_us": {"read": {"p99": 80.0}}}`` becomes ``{"latency_us.read.p99": 80.0}``;
    lists (e.g. histograms) are left out, so every value fits one DataFrame cell.
    """
    out: dict = {}
    for key, v in value.items():
        name = f"{prefix}{key}"
        if isinstance(v, Mapping):
            out.update(flatten(v, name + "."))
        elif not isinstance(v, (list, tuple)):
            out[name] = v
    return out


def _row(report: Mapping[str, Any]) -> dict:
    """One row for a report: its FTL, preset and seed, then its measured phase's scalars."""
    row = {"ftl": report["ftl"], "preset": report["preset"], "seed": report["seed"]}
    row.update(flatten(report["result"]))
    return row


def to_dataframe(reports: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]]):
    """A pandas DataFrame with one row per report (of ``run`` or ``compare``).

    Columns: ``ftl``, ``preset``, ``seed`` and every scalar of the measured phase
    (``result``), nested keys joined with dots (``iops``, ``latency_us.read.p99``,
    ``dram_bytes.total``, ...; see docs/metrics.md).
    """
    import pandas as pd

    if isinstance(reports, Mapping):
        reports = [reports]
    return pd.DataFrame([_row(r) for r in reports])


def _point_options(point: Mapping[str, Any], base: Mapping[str, Any]) -> dict:
    """run() keyword arguments for one sweep point: ``base`` updated by the point, where a key
    that is not a run() option is a device or FTL parameter and goes into ``set`` (as does a
    swept ``set`` dict), over ``base["set"]``."""
    options = {k: v for k, v in base.items() if k != "set"}
    params = dict(base.get("set") or {})
    for key, value in point.items():
        if key == "set":
            params.update(value or {})
        elif key in OPTIONS or key in _RUN_KEYS:
            options[key] = value
        else:
            params[key] = value
    if params:
        options["set"] = params
    return options


def _run_point(point: dict, base: dict) -> dict:
    """A sweep row: the point's parameters, then its result's scalars, or the error that
    stopped it (a failed point must not lose the others)."""
    row = dict(point)
    try:
        report = run(**_point_options(point, base))
    except Exception as e:  # noqa: BLE001 - every failure becomes the point's error
        row["error"] = f"{type(e).__name__}: {e}"
        return row
    for key, value in _row(report).items():
        # A swept key keeps the value the point gave it.
        row.setdefault(key, value)
    row["error"] = None
    return row


def _ray_rows(points, base, address, ray_init):
    try:
        import ray
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            'sweep(backend="ray"), the default, needs Ray (pip install ray); '
            'backend="local" runs the points one after another in this process without it',
            name="ray",
        ) from e

    if not ray.is_initialized():
        ray.init(address=address, **(ray_init or {}))
    task = ray.remote(num_cpus=1)(_run_point)
    refs = [task.remote(p, base) for p in points]
    rows = []
    for point, ref in zip(points, refs):
        try:
            rows.append(ray.get(ref))
        except Exception as e:  # noqa: BLE001 - a lost worker fails its point only
            rows.append({**point, "error": f"{type(e).__name__}: {e}"})
    return rows


def sweep(
    grid: Mapping[str, Sequence[Any]],
    base: Optional[Mapping[str, Any]] = None,
    backend: str = "ray",
    address: Optional[str] = None,
    out: Union[str, os.PathLike, None] = None,
    ray_init: Optional[Mapping[str, Any]] = None,
):
    """Runs every point of the Cartesian product of ``grid`` and returns one DataFrame row each.

    ``grid`` maps a name to the values to try: ``ftl``, any ``run()`` option (``rw``, ``bs``,
    ``seed``, ...) or any device/FTL parameter (``cmt_ratio``, ...; passed through ``set``).
    ``base`` holds the options every point shares (``preset``, ``set``, ``number_ios``, ...).
    Each row has the point's values, then the measured phase's scalars (as ``to_dataframe``),
    and ``error``: ``None``, or why that point failed (the other points still run). The rows
    come in the grid's order; the same seed gives the same numbers wherever a point runs.

    ``backend="ray"`` runs each point as a Ray task of one CPU: ``ray.init(address=address,
    **ray_init)`` is called unless Ray is already initialised (``address=None`` starts a local
    cluster; ``"auto"`` or ``"ray://host:10001"`` joins one); without Ray installed it raises
    ``ModuleNotFoundError`` saying so. ``backend="local"`` runs the points one after another in
    this process and needs no Ray.

    ``out``: also write the table, as Parquet if the name ends in ``.parquet`` (needs pyarrow)
    and as CSV otherwise.
    """
    import pandas as pd

    base = dict(base or {})
    keys = list(grid)
    points = [dict(zip(keys, values)) for values in itertools.product(*grid.values())]
    if backend == "ray":
        rows = _ray_rows(points, base, address, ray_init)
    elif backend == "local":
        rows = [_run_point(p, base) for p in points]
    else:
        raise ValueError(f"backend: '{backend}' is neither 'ray' nor 'local'")
    df = pd.DataFrame(rows)
    if out is not None:
        if os.fspath(out).endswith(".parquet"):
            df.to_parquet(out, index=False)
        else:
            df.to_csv(out, index=False)
    return df
