"""learnedftl: the learnedftl SSD workbench from Python.

``run`` and ``compare`` call the Rust library (the GIL is released while it simulates) and
return the reports of ``learnedftl run --json`` / ``compare --json`` as dicts. ``sweep`` runs
the Cartesian product of parameters as independent tasks on Ray (or one after another in this
process) and gathers one row per point into a pandas DataFrame; ``to_dataframe`` turns reports
into rows. ``reproduce`` runs the papers' experiments as ``learnedftl reproduce`` does, here or
with each group of runs that share a prepared state as one Ray task.

Quick start::

    import learnedftl
    df = learnedftl.to_dataframe(learnedftl.compare(["dftl", "learnedftl"], preset="tiny"))
"""

from __future__ import annotations

import itertools
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _learnedftl
from ._learnedftl import (
    FTLS,
    OPTIONS,
    PRESETS,
    REPRODUCE_OPTIONS,
    LearnedFtlError,
    compare,
    run,
)

__all__ = [
    "FTLS",
    "OPTIONS",
    "PRESETS",
    "REPRODUCE_OPTIONS",
    "LearnedFtlError",
    "compare",
    "flatten",
    "reproduce",
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


def _ray(what: str, address, ray_init):
    """Ray, initialised (``ray.init(address=address, **ray_init)`` unless it already is)."""
    try:
        import ray
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            f'{what}(backend="ray") needs Ray (pip install ray); backend="local" runs in '
            "this process without it",
            name="ray",
        ) from e
    if not ray.is_initialized():
        ray.init(address=address, **(ray_init or {}))
    return ray


def _ray_rows(points, base, address, ray_init):
    ray = _ray("sweep", address, ray_init)
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


def _reproduce_group(group: dict, options: dict) -> list:
    """A Ray task: simulates one group of ``reproduce_plan`` and returns its cache entries."""
    return _learnedftl.reproduce_group(group["group"], group["keys"], **options)


def _ray_tasks(groups: Sequence[dict], largest: int) -> list:
    """The Ray tasks for ``groups``: one per group, but a group whose prepared state and its
    copy (``memory_bytes``) fit on no node (``largest`` bytes) becomes one task per run, each
    preparing its own start and asking for one state (``state_bytes``): the same results, the
    preparation repeated."""
    tasks = []
    for g in groups:
        if g["memory_bytes"] <= largest or len(g["keys"]) == 1:
            tasks.append(g)
            continue
        tasks += [
            dict(g, keys=[k], units=[u], memory_bytes=g["state_bytes"])
            for k, u in zip(g["keys"], g["units"])
        ]
    return tasks


def reproduce(
    experiments: Sequence[str] = (),
    *,
    backend: str = "local",
    jobs: Optional[int] = None,
    address: Optional[str] = None,
    ray_init: Optional[Mapping[str, Any]] = None,
    **options: Any,
) -> dict:
    """Runs the papers' experiments (``experiments``, default all) as ``learnedftl reproduce``
    does and writes the same files to ``out`` (default ``results/PRESET``): one JSON per
    experiment, report.md with its plots, report.html, and the result cache in ``out/cache``.

    ``options`` are the CLI's flags with ``_`` for ``-`` (``REPRODUCE_OPTIONS``): ``preset``,
    ``capacity``, ``setup``, ``out``, ``seed``, ``traces``, ``recordings``, ``paper_design``,
    ``fresh``. Returns a summary: ``out``, ``runs``, ``cached``, ``simulated``, ``shared``,
    ``starts`` (preparations), ``shared_starts`` (false when a prepared state and its copy do
    not fit in memory here, so each run prepared its own), ``failures`` (runs that failed
    unexpectedly), ``checks_failed``, ``checks_known``, ``seconds``, and with Ray
    ``ray_tasks``.

    ``backend="local"`` simulates here, ``jobs`` runs at a time (default: the cores).
    ``backend="ray"`` hands each group of runs that start from one prepared state to Ray as one
    task of one CPU, asking for the memory the group needs (its prepared state and one copy),
    so Ray places it where that fits (where no node has that much, each of its runs is a task
    of its own that prepares its own start); ``ray.init(address=address, **ray_init)`` is
    called unless Ray is already initialised (``address=None`` starts a local cluster). The
    results land in ``out/cache`` and the report is then rendered here from the cache, exactly
    as a local re-run renders it: the same files, every JSON equal but its wall-clock fields.
    Every machine must have the same build of this package and the traces and recordings at
    the same paths (a task of another build fails, naming its group).
    """
    options = dict(options, experiments=list(experiments))
    # Tasks run in other directories: paths must not depend on this one.
    for key in ("out", "traces", "recordings"):
        if options.get(key) is not None:
            options[key] = os.path.abspath(options[key])
    options.setdefault("traces", os.path.abspath("../shared/traces"))
    options.setdefault("recordings", os.path.abspath("recordings"))
    if backend == "ray":
        ray = _ray("reproduce", address, ray_init)
        nodes = [n["Resources"].get("memory", 0) for n in ray.nodes() if n["Alive"]]
        tasks = _ray_tasks(_learnedftl.reproduce_plan(**options), int(max(nodes, default=0)))
        # One task per group (or run), asking for the memory its prepared states take.
        refs = [
            ray.remote(num_cpus=1, memory=max(t["memory_bytes"], 1))(_reproduce_group).remote(
                t, options
            )
            for t in tasks
        ]
        for entries in ray.get(refs):
            _learnedftl.reproduce_store(entries, **options)
        summary = _learnedftl.reproduce(jobs=jobs, **options)
        summary["ray_tasks"] = len(tasks)
        return summary
    if backend != "local":
        raise ValueError(f"backend: '{backend}' is neither 'ray' nor 'local'")
    return _learnedftl.reproduce(jobs=jobs, **options)
