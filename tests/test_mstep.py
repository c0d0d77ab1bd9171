"""The empty-cluster rule of the M-steps."""
import numpy as np
import pytest

from clusterkit._mstep import _largest


@pytest.mark.parametrize("seed", range(20))
def test_largest_equals_a_stable_full_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    score = rng.integers(0, 5, n).astype(float)  # many ties
    for k in range(n + 1):
        np.testing.assert_array_equal(_largest(score, k),
                                      np.argsort(-score, kind="stable")[:k])
