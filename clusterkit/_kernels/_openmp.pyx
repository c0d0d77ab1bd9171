"""OpenMP availability and the number of threads kernels run with."""
import numbers
import os

from libc.limits cimport INT_MAX

from ._openmp cimport CK_OPENMP_ENABLED, omp_get_max_threads


def openmp_enabled():
    """Return ``True`` if the kernels were compiled with OpenMP support."""
    return bool(CK_OPENMP_ENABLED)


def _cpu_count():
    try:
        from joblib import cpu_count  # respects cgroup CPU quotas
        return cpu_count()
    except ImportError:  # joblib comes with scikit-learn; be defensive anyway
        return os.cpu_count() or 1


#: Most threads per CPU of the affinity mask that a positive ``n_threads`` gets.
OVERSUBSCRIBE = 4


def _machine_cpus():
    """CPUs this process may run on (its affinity mask), whatever the quota."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def effective_n_threads(n_threads=None):
    """Resolve a user's ``n_threads`` to the number of OpenMP threads kernels use.

    Parameters
    ----------
    n_threads : int or None, default=None
        ``None`` uses every available core (``OMP_NUM_THREADS`` and CPU quotas are respected);
        a negative value ``-k`` means all cores but ``k - 1``; a positive value is used as
        is, up to ``OVERSUBSCRIBE`` (4) threads per CPU the process may run on.

    Returns
    -------
    n_threads : int
        At least 1; always 1 when compiled without OpenMP.

    Raises
    ------
    TypeError
        If ``n_threads`` is neither ``None`` nor an integer.
    ValueError
        If ``n_threads`` is 0 or too large for a C ``int``.

    Notes
    -----
    A positive value above ``OVERSUBSCRIBE`` times the CPUs of the process's affinity mask
    (``os.sched_getaffinity``) is capped to that silently: each thread owns scratch memory
    and an OpenMP thread, so ``n_threads=10**5`` would exhaust memory or the OpenMP
    runtime and crash the process, and results do not depend on the thread count anyway.
    A few threads per CPU stay allowed so that a small machine can still run (and test)
    several threads.
    """
    if n_threads is not None:
        if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral):
            raise TypeError(f"n_threads must be an integer or None, got {n_threads!r}.")
        if n_threads == 0:
            raise ValueError("n_threads=0 must be a positive number or negative (all cores "
                             "but some) or None.")
        if abs(n_threads) > INT_MAX:
            raise ValueError(f"n_threads={n_threads} is out of range.")
    if not CK_OPENMP_ENABLED:
        return 1
    available = max(1, min(omp_get_max_threads(), _cpu_count()))
    if n_threads is None:
        return available
    if n_threads < 0:
        return max(1, available + 1 + n_threads)
    return max(1, min(int(n_threads), OVERSUBSCRIBE * _machine_cpus()))
