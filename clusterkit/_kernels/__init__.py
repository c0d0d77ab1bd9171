"""The Cython kernels.

Importing this package loads the OpenMP runtime (GNU libgomp) the kernels share. libgomp reads
its settings from the environment once, when it is loaded; unless the user set
``GOMP_SPINCOUNT`` or ``OMP_WAIT_POLICY``, the runtime is loaded with ``GOMP_SPINCOUNT=2000``:
threads that finish a parallel loop spin a few microseconds for the next one, then sleep,
instead of libgomp's default of a few hundred thousand spins. On an idle machine fits take
the same time; when other processes share the cores, busy-waiting threads no longer steal
the time slices the others need (two identical fits running together: up to 290 times slower
with the default, at most 2.5 times with this setting; benchmarks/bench_load.py). The
variable is set only while the runtime loads: other libraries, and child processes, see the
environment unchanged.
"""
import os

_SPIN_VARIABLE = "GOMP_SPINCOUNT"
_set_spin = _SPIN_VARIABLE not in os.environ and "OMP_WAIT_POLICY" not in os.environ
if _set_spin:
    os.environ[_SPIN_VARIABLE] = "2000"
try:
    from . import _openmp  # noqa: F401  (loads libgomp, which reads the variable now)
finally:
    if _set_spin:
        del os.environ[_SPIN_VARIABLE]
