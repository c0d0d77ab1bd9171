"""Plain-NumPy twins of the Cython kernels.

Slow, obvious implementations used by the tests (and benchmarks) as the ground truth for every
kernel in :mod:`clusterkit._kernels`. Each function mirrors one kernel: same arguments, but
returns its outputs instead of writing into preallocated arrays. Not part of the public API.
"""
import numpy as np


def sqdist(X, centers):
    """All squared distances, shape (n_samples, n_clusters), computed the direct way."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    return ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)


# --- exact assignment (_assign.pyx) ---------------------------------------------------------

def assign_full(X, centers):
    """Nearest centre and squared distance to it; returns (labels, min_dist2, n_evals)."""
    d2 = sqdist(X, centers)
    labels = d2.argmin(axis=1).astype(np.int32)
    return labels, d2[np.arange(len(X)), labels], X.shape[0] * centers.shape[0]


# --- M-steps (_mstep.pyx) --------------------------------------------------------------------


# --- seeding (_seeding.pyx) ------------------------------------------------------------------


# --- partial E-step (_partial.pyx) -----------------------------------------------------------
