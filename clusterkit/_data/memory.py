"""The one memory policy of a fit: how much it may allocate, and the refusal when it would
need more.

A fit's *budget* is what it may allocate beyond the data the caller holds, its own copies of
the data included: ``Clusterer(memory_limit=...)`` bytes when given, else half the memory
available when ``fit`` starts (:func:`available_memory`; the other half is left for the rest
of the process and the system), or no limit where the available memory is not known. The
estimator sets the budget for the duration of a fit (:func:`fit_budget`); every strategy and
the data plumbing read it through :func:`budget`, which also takes off what the fit has set
aside for its other buffers (:func:`reserve`), so that a strategy that sizes its own state by
memory (the bounded E-steps' choice between Elkan's and Yinyang's bounds) sizes it by what is
left. :func:`check_memory` is the one refusal, :class:`FitMemoryError`.
"""
import contextlib
import contextvars
import sys

__all__ = ["FitMemoryError", "available_memory", "budget", "check_memory", "describe_budget",
           "fit_budget", "format_bytes", "memory_share", "reserve", "unlimited"]


class FitMemoryError(MemoryError, ValueError):
    """A fit would need more memory than its budget: raised when ``fit`` starts, before any
    large allocation.

    The budget is ``Clusterer(memory_limit=...)``, or half the memory available when ``fit``
    starts. The message says what the fit would need and what would fit instead (fewer
    clusters, a lighter composition or preset, data in row chunks, a larger
    ``memory_limit``). It is a :class:`MemoryError` and, for code written against earlier
    versions, which raised ``ValueError`` here, a :class:`ValueError`.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, FitMemoryError
    >>> X = np.zeros((1000, 4), dtype=np.float32)
    >>> try:
    ...     Clusterer(10, memory_limit=1000).fit(X)
    ... except FitMemoryError as error:
    ...     print(type(error).__mro__[1].__name__)
    MemoryError
    """


#: The share of this process' memory the work at hand may take: 1 but in a chunk's task of a
#: fit on data in row chunks, where it is the chunk's share of the rows its process holds
#: (:func:`memory_share`), so that per-chunk state sized to the memory available (bounds)
#: adds up to what the process has.
_MEMORY_SHARE = contextvars.ContextVar("memory_share", default=1.0)

#: The budget of the fit that runs (:func:`fit_budget`): bytes, or ``None`` for the default.
_FIT_BUDGET = contextvars.ContextVar("fit_budget", default=None)

#: The budget of :func:`unlimited`.
_UNLIMITED = object()

#: Bytes of the budget set aside for the fit's other buffers (:func:`reserve`).
_RESERVED = contextvars.ContextVar("reserved", default=0)


@contextlib.contextmanager
def memory_share(share):
    """Within the block, :func:`available_memory` is ``share`` (at most 1) of this process'."""
    token = _MEMORY_SHARE.set(min(1.0, float(share)))
    try:
        yield
    finally:
        _MEMORY_SHARE.reset(token)


@contextlib.contextmanager
def fit_budget(limit):
    """Within the block, :func:`budget` is ``limit`` bytes (``memory_limit``), or the default
    policy when ``limit`` is ``None``."""
    token = _FIT_BUDGET.set(limit)
    try:
        yield
    finally:
        _FIT_BUDGET.reset(token)


@contextlib.contextmanager
def reserve(n_bytes):
    """Within the block, :func:`budget` is ``n_bytes`` smaller (set aside for buffers that
    coexist with whatever is sized there)."""
    token = _RESERVED.set(_RESERVED.get() + max(0, int(n_bytes)))
    try:
        yield
    finally:
        _RESERVED.reset(token)


@contextlib.contextmanager
def unlimited():
    """Within the block, :func:`budget` is ``None`` (no limit): checks that refuse by memory
    pass, for an estimate that reports what would not fit instead of refusing it."""
    token = _FIT_BUDGET.set(_UNLIMITED)
    try:
        yield
    finally:
        _FIT_BUDGET.reset(token)


def budget():
    """Bytes the work at hand may still allocate, or ``None`` for no limit: the fit's
    ``memory_limit``, else half the memory available (``None`` where that is not known),
    less what :func:`reserve` set aside (at least 0), times the share of
    :func:`memory_share` (a chunk's task gets its share of what is left)."""
    limit = _FIT_BUDGET.get()
    if limit is _UNLIMITED:
        return None
    if limit is None:
        available = _process_available()
        if available is None:
            return None
        limit = available // 2
    return max(0, int((limit - _RESERVED.get()) * _MEMORY_SHARE.get()))


def available_memory():
    """Bytes of memory this process may still use for the work at hand, or ``None`` where
    that is not known: what the system can still give it (``MemAvailable`` of
    ``/proc/meminfo``), in a dask worker with a memory limit at most that limit less the
    worker's resident memory, times the share of :func:`memory_share`."""
    available = _process_available()
    return None if available is None else int(available * _MEMORY_SHARE.get())


def _process_available():
    """:func:`available_memory` before the share."""
    available = _system_available()
    worker_left = _dask_worker_memory_left()
    if worker_left is not None:
        available = worker_left if available is None else min(available, worker_left)
    return available


def _system_available():
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _dask_worker_memory_left():
    """What the dask worker this code runs in may still hold before it starts spilling its
    results to disk (its memory limit times its first threshold, ``target`` or ``spill``,
    less its resident memory), or ``None`` (not in a worker, or no limit)."""
    if sys.modules.get("distributed") is None:  # (a worker has imported it)
        return None
    from distributed import get_worker
    try:
        memory = get_worker().memory_manager
    except (ValueError, AttributeError):  # not in a worker's task
        return None
    if not memory.memory_limit:
        return None
    thresholds = [f for f in (memory.memory_target_fraction, memory.memory_spill_fraction,
                              memory.memory_pause_fraction) if f]
    import psutil
    return max(0, int(memory.memory_limit * min(thresholds, default=1.0))
               - psutil.Process().memory_info().rss)


def format_bytes(n_bytes):
    """``n_bytes`` for a message: ``"1.50 GiB"``, ``"12.0 MiB"``, ``"512 KiB"``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20)):
        if n_bytes >= size:
            return f"{n_bytes / size:.3g} {unit}" if n_bytes < 100 * size else \
                f"{n_bytes / size:.0f} {unit}"
    return f"{n_bytes / 1024:.0f} KiB"


def describe_budget():
    """The budget as a message names it: ``memory_limit=...`` or the default policy."""
    limit = _FIT_BUDGET.get()
    if limit is _UNLIMITED:
        return "no limit"
    if limit is not None:
        return f"memory_limit={limit} ({format_bytes(limit)})"
    left = budget()
    return ("the default budget, half the memory available"
            + ("" if left is None else f" ({format_bytes(left + _RESERVED.get())})"))


def check_memory(need, what, instead):
    """:class:`FitMemoryError` when ``fit`` starts, before any work, if ``what`` needs more
    than the budget (:func:`budget`): the allocation would otherwise fail, or the kernel end
    the process, only after the seeding.

    Parameters
    ----------
    need : int
        Bytes ``what`` allocates.
    what : str
        E.g. ``"ElkanEStep's bounds for 10000000 samples and n_clusters=4096"``.
    instead : str
        What to use instead, one sentence.

    Raises
    ------
    FitMemoryError
    """
    left = budget()
    if left is not None and need > left:
        reserved = _RESERVED.get()
        raise FitMemoryError(
            f"{what} need {format_bytes(need)}, but the fit's budget, {describe_budget()}, "
            + (f"leaves {format_bytes(left)} for them after {format_bytes(reserved)} of the "
               "fit's other buffers. " if reserved else "is smaller. ") + instead)
