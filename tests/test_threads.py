"""Threads: the limits clusterkit respects and the OpenMP waiting it sets up."""
import os
import subprocess
import sys

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from clusterkit import effective_n_threads, openmp_enabled, presets

needs_openmp = pytest.mark.skipif(not openmp_enabled(), reason="built without OpenMP")


def _python(code, **env):
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    environment.update(env)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=environment, timeout=300, check=True)
    return result.stdout.strip()


@needs_openmp
def test_threadpoolctl_limits_the_kernels():
    with threadpool_limits(limits=1, user_api="openmp"):
        assert effective_n_threads() == 1
        assert effective_n_threads(-1) == 1


@needs_openmp
def test_omp_num_threads_is_respected():
    assert _python("import clusterkit; print(clusterkit.effective_n_threads())",
                   OMP_NUM_THREADS="1") == "1"


def test_spin_count_is_set_only_while_the_runtime_loads():
    code = "import os, clusterkit; print(os.environ.get('GOMP_SPINCOUNT'))"
    assert _python(code) == "None"  # the environment is left as it was
    assert _python(code, GOMP_SPINCOUNT="123") == "123"  # a user's setting wins


def test_results_do_not_depend_on_the_thread_limit():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(3000, 3)) + rng.randint(8, size=(3000, 1)) * 6
    free = presets.lloyd(8, random_state=0).fit(X)
    with threadpool_limits(limits=1):
        limited = presets.lloyd(8, random_state=0).fit(X)
    np.testing.assert_array_equal(free.cluster_centers_, limited.cluster_centers_)
    np.testing.assert_array_equal(free.labels_, limited.labels_)
