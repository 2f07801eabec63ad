"""Type stubs of the native module (crates/python/src/lib.rs)."""

from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Union

from typing_extensions import TypedDict, Unpack

FTLS: tuple[str, ...]
"""The implemented FTLs (``learnedftl list``)."""
PRESETS: tuple[str, ...]
"""The device presets: paper, quick, tiny."""
OPTIONS: tuple[str, ...]
"""The keyword options of ``run`` and ``compare`` (the CLI's flags, ``_`` for ``-``)."""
REPRODUCE_OPTIONS: tuple[str, ...]
"""The keyword options of ``reproduce`` and its steps (``learnedftl reproduce``'s flags)."""

class LearnedFtlError(ValueError):
    """A bad option or parameter, or a failed run; the message names what is at fault."""

Size = Union[str, int]
"""A size in fio syntax (``"4k"``, ``"1g"``) or bytes."""

class Options(TypedDict, total=False):
    """The keyword options of ``run`` and ``compare``: the CLI's flags (``--number-ios`` is
    ``number_ios``; ``set`` is ``--set`` as a dict, e.g. ``{"cmt_ratio": 0.05}``). A missing
    option, or ``None``, takes the CLI's default (``preset="quick"``, ``seed=1``,
    ``settle="auto"``, ``speed=1.0``, ``address_policy="refuse"``, ``blkparse_action="Q"``,
    ``replay="open"``)."""

    preset: str
    capacity: Optional[Size]
    """The preset scaled to this logical capacity by its blocks per plane, rounded up:
    ``"1TiB"``, ``"32GiB"``, ``"3.75GiB"`` (binary units; decimal ``"1TB"`` is refused as
    ambiguous) or bytes (docs/device.md "Capacity")."""
    set: Optional[Mapping[str, Any]]
    precondition: Optional[str]
    job: Union[str, PathLike[str], None]
    trace: Union[str, PathLike[str], None]
    format: Optional[str]
    skip_bad_lines: bool
    blkparse_action: str
    speed: float
    address_policy: str
    max_requests: Optional[int]
    device_filter: Optional[int]
    placement_by: Optional[str]
    """Placement IDs for trace writes without one: ``"lba:N"`` or ``"size:4k,64k"``
    (docs/fdp.md)."""
    fill_unwritten: bool
    replay: str
    phases: Union[str, PathLike[str], None]
    rw: Optional[str]
    bs: Optional[Size]
    numjobs: Optional[int]
    iodepth: Optional[int]
    io_size: Optional[Size]
    number_ios: Optional[int]
    runtime: Optional[str]
    offset: Optional[Size]
    size: Optional[Size]
    rwmixread: Optional[int]
    random_distribution: Optional[str]
    norandommap: bool
    fdp: bool
    """Tag the job's writes with NVMe FDP placement IDs (fio's ``fdp=1``; docs/fdp.md)."""
    fdp_pli: Optional[str]
    fdp_pli_select: Optional[str]
    settle: str
    seed: int
    verify: bool
    power_cut_every: Optional[int]

def run(ftl: str = "ideal", **options: Unpack[Options]) -> dict[str, Any]:
    """Runs a workload on one FTL and returns the report of ``learnedftl run --json``.

    The options are the CLI's flags (``--number-ios`` is ``number_ios``; ``set`` is ``--set``
    as a dict, e.g. ``{"cmt_ratio": 0.05}``). One workload: ``rw`` with the job options, a
    fio ``job`` file, or a ``trace``; none runs the built-in default (4 KiB random reads, 64
    jobs, after ``randwrite:512k:2`` preconditioning). ``None`` means the default. The GIL is
    released while simulating. Raises ``LearnedFtlError`` naming a bad option or parameter.
    """

def compare(
    ftls: Optional[Sequence[str]] = None,
    jobs: Optional[int] = None,
    **options: Unpack[Options],
) -> list[dict[str, Any]]:
    """Runs the same workload on each of ``ftls`` (default: every implemented FTL), ``jobs``
    at a time on threads (default: the machine's cores), and returns the reports of
    ``learnedftl compare --json``, in the order of ``ftls``. Options as ``run``."""

class ReproduceOptions(TypedDict, total=False):
    """The keyword options of ``reproduce`` and its steps: ``learnedftl reproduce``'s flags,
    with ``experiments`` the names to run (default all). A missing option, or ``None``, takes
    the CLI's default (``preset="quick"``, ``setup="default"``, ``seed=1``, ``out`` =
    ``results/PRESET``, ``traces="../shared/traces"``, ``recordings="recordings"``)."""

    experiments: Sequence[str]
    preset: str
    capacity: Optional[Size]
    setup: str
    out: Union[str, PathLike[str], None]
    seed: int
    traces: Union[str, PathLike[str], None]
    recordings: Union[str, PathLike[str], None]
    paper_design: bool
    fresh: bool

def reproduce(jobs: Optional[int] = None, **options: Unpack[ReproduceOptions]) -> dict[str, Any]:
    """Runs the suite as ``learnedftl reproduce`` (``jobs`` at a time) and writes its files to
    ``out``; returns a summary (``out``, ``runs``, ``cached``, ``simulated``, ``shared``,
    ``starts``, ``shared_starts``, ``failures``, ``checks_failed``, ``checks_known``,
    ``seconds``)."""

def reproduce_plan(**options: Unpack[ReproduceOptions]) -> list[dict[str, Any]]:
    """The groups of runs the suite's cache lacks: ``{group, keys, units, memory_bytes,
    state_bytes}`` (``memory_bytes``: the prepared state and a copy, or the state alone for one
    run; ``state_bytes``: one state, what one run of the group prepared on its own needs)."""

def reproduce_group(
    group: str, keys: Sequence[str], **options: Unpack[ReproduceOptions]
) -> list[tuple[str, str]]:
    """Simulates the runs ``keys`` (all or some) of one group of ``reproduce_plan`` (same
    build) from one preparation and returns ``(key, entry)`` for each run that succeeded."""

def reproduce_store(
    entries: Sequence[tuple[str, str]], **options: Unpack[ReproduceOptions]
) -> int:
    """Stores ``reproduce_group``'s entries in the suite's cache; returns how many."""
