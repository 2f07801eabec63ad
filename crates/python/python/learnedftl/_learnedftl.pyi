"""Type stubs of the native module (crates/python/src/lib.rs)."""

from os import PathLike
from typing import Any, Mapping, Optional, Sequence, Union

FTLS: tuple[str, ...]
"""The implemented FTLs (``learnedftl list``)."""
PRESETS: tuple[str, ...]
"""The device presets: paper, quick, tiny."""
OPTIONS: tuple[str, ...]
"""The keyword options of ``run`` and ``compare`` (the CLI's flags, ``_`` for ``-``)."""

class LearnedFtlError(ValueError):
    """A bad option or parameter, or a failed run; the message names what is at fault."""

Size = Union[str, int]
"""A size in fio syntax (``"4k"``, ``"1g"``) or bytes."""

def run(
    ftl: str = "ideal",
    *,
    preset: str = "quick",
    set: Optional[Mapping[str, Any]] = None,
    precondition: Optional[str] = None,
    job: Union[str, PathLike[str], None] = None,
    trace: Union[str, PathLike[str], None] = None,
    format: Optional[str] = None,
    skip_bad_lines: bool = False,
    blkparse_action: str = "Q",
    speed: float = 1.0,
    address_policy: str = "refuse",
    max_requests: Optional[int] = None,
    device_filter: Optional[int] = None,
    fill_unwritten: bool = False,
    rw: Optional[str] = None,
    bs: Optional[Size] = None,
    numjobs: Optional[int] = None,
    iodepth: Optional[int] = None,
    io_size: Optional[Size] = None,
    number_ios: Optional[int] = None,
    runtime: Optional[str] = None,
    offset: Optional[Size] = None,
    size: Optional[Size] = None,
    rwmixread: Optional[int] = None,
    random_distribution: Optional[str] = None,
    norandommap: bool = False,
    settle: str = "auto",
    seed: int = 1,
    verify: bool = False,
) -> dict[str, Any]:
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
    *,
    preset: str = "quick",
    set: Optional[Mapping[str, Any]] = None,
    precondition: Optional[str] = None,
    job: Union[str, PathLike[str], None] = None,
    trace: Union[str, PathLike[str], None] = None,
    format: Optional[str] = None,
    skip_bad_lines: bool = False,
    blkparse_action: str = "Q",
    speed: float = 1.0,
    address_policy: str = "refuse",
    max_requests: Optional[int] = None,
    device_filter: Optional[int] = None,
    fill_unwritten: bool = False,
    rw: Optional[str] = None,
    bs: Optional[Size] = None,
    numjobs: Optional[int] = None,
    iodepth: Optional[int] = None,
    io_size: Optional[Size] = None,
    number_ios: Optional[int] = None,
    runtime: Optional[str] = None,
    offset: Optional[Size] = None,
    size: Optional[Size] = None,
    rwmixread: Optional[int] = None,
    random_distribution: Optional[str] = None,
    norandommap: bool = False,
    settle: str = "auto",
    seed: int = 1,
    verify: bool = False,
) -> list[dict[str, Any]]:
    """Runs the same workload on each of ``ftls`` (default: every implemented FTL), ``jobs``
    at a time on threads (default: the machine's cores), and returns the reports of
    ``learnedftl compare --json``, in the order of ``ftls``. Options as ``run``."""
