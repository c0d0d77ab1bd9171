"""Assertions, marks and test data shared by the tests."""
import numpy as np
import pytest

# For tests that run a fixed number of iterations (tol=0 or a small max_iter): they end by
# max_iter on purpose, and the ConvergenceWarning saying so is expected.
fixed_iterations = pytest.mark.filterwarnings(
    "ignore:The fit did not converge:sklearn.exceptions.ConvergenceWarning")


def assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol):
    """Labels may differ only where the two centres are equally near up to ``rtol``."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    diff = np.flatnonzero(labels != labels_ref)
    if diff.size == 0:
        return
    d_a = ((X[diff] - centers[labels[diff]]) ** 2).sum(1)
    d_b = ((X[diff] - centers[labels_ref[diff]]) ** 2).sum(1)
    scale = np.maximum(np.abs(X[diff]).max(1) ** 2 + np.abs(centers).max() ** 2, 1.0)
    bad = np.abs(d_a - d_b) > rtol * scale * X.shape[1]
    assert not bad.any(), f"{bad.sum()} labels differ beyond ties, e.g. sample {diff[bad][0]}"


def assert_same_partition(labels_a, labels_b):
    """Two labelings describe the same partition (up to renaming clusters)."""
    labels_a, labels_b = np.asarray(labels_a), np.asarray(labels_b)
    pairs = set(zip(labels_a.tolist(), labels_b.tolist()))
    assert len(pairs) == len(set(labels_a.tolist())) == len(set(labels_b.tolist()))


def composition(**strategies):
    """The six strategies of a default fit, with some replaced: what ``_validate`` sees."""
    from clusterkit import (FullBatch, FullEStep, HardMStep, KMeansPlusPlus, NoReduction,
                            NoRefinement)
    from clusterkit._engine.contracts import Composition
    default = dict(seed=KMeansPlusPlus(), reduce=NoReduction(), estep=FullEStep(),
                   mstep=HardMStep(), schedule=FullBatch(), refine=NoRefinement())
    return Composition(**{**default, **strategies})


class OneChunkAtATime:
    """Array-like data that hands out at most one chunk of rows per request and refuses to
    become a NumPy array: a full materialisation (or a rechunk that merges chunks) fails."""

    def __init__(self, X, chunk_rows):
        self._X, self.chunk_rows = X, chunk_rows
        self.shape, self.dtype, self.ndim = X.shape, X.dtype, X.ndim

    def __getitem__(self, key):
        rows = key[0] if isinstance(key, tuple) else key
        start, stop, _ = rows.indices(self.shape[0])
        if stop - start > 0 and start // self.chunk_rows != (stop - 1) // self.chunk_rows:
            raise MemoryError(f"rows {start}:{stop} span more than one chunk")
        return self._X[key]

    def __array__(self, dtype=None, copy=None):
        raise MemoryError("the whole array was requested")
