"""The one exact nearest-centre path: labels, squared distances and inertia of any rows.

Every exact labelling goes through here -- the end of ``fit``, ``predict``, ``transform``,
``score``, :func:`clusterkit.metrics.quantization_error` and data in row chunks -- with one
centring, one block-size policy and one BLAS policy:

* **Centring.** Distances are computed as ``||x||^2 - 2 x.c + ||c||^2``, which cancels for
  data far from the origin; rows and centres are therefore shifted by the training data's
  mean (:func:`data_mean`) first, a block of rows at a time, so that no centred copy of the
  whole data is made.
* **Blocks.** A pass over rows in the user's coordinates works on blocks of
  :data:`BLOCK_BYTES` (whole tiles of the distance kernels, so a pass block by block gives the
  same bits as one pass over all rows).
* **BLAS.** The kernels call gemm from inside OpenMP ``prange``, so BLAS must run on one
  thread while they do (:func:`single_threaded_blas`).
"""
import numpy as np
from threadpoolctl import ThreadpoolController

from ._kernels import _assign
from ._kernels._dist import TILE_ROWS

__all__ = ["BLOCK_BYTES", "all_dist2", "data_mean", "dist2_blocks", "nearest", "row_blocks",
           "single_threaded_blas"]

#: Bytes of rows (or of distances, for :func:`dist2_blocks`) handled per block.
BLOCK_BYTES = 8 << 20

_blas_controller = None


def single_threaded_blas():
    """Context limiting BLAS to one thread: the kernels call gemm from inside ``prange``.

    The controller is built once: listing the loaded libraries takes a few milliseconds, as
    long as a whole fit on a small coreset. The BLAS the kernels use, scipy's, is loaded with
    them, so it is always among the libraries listed.
    """
    global _blas_controller
    if _blas_controller is None:
        _blas_controller = ThreadpoolController()
    return _blas_controller.limit(limits=1, user_api="blas")


def data_mean(X):
    """The centring of ``X``: its mean, computed in its own dtype.

    In ``X``'s dtype the centred data round exactly as scikit-learn's ``KMeans`` centres them,
    so both start from bit-identical data (the mean's own rounding is only a translation).
    """
    return X.mean(axis=0)


def row_blocks(n_samples, row_bytes):
    """Slices of about :data:`BLOCK_BYTES` of rows, in whole tiles of the distance kernels, so
    that a pass block by block gives the same result as one pass over all rows."""
    block = max(1, BLOCK_BYTES // (row_bytes * TILE_ROWS)) * TILE_ROWS
    return [slice(start, min(start + block, n_samples)) for start in range(0, n_samples, block)]


def nearest(X, x_mean, centers, n_threads, progress=None):
    """Exact nearest centre of each row of ``X``: labels, squared distances, evaluations.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        C-contiguous rows of ``centers``' dtype, in the user's coordinates (or centred
        already, with ``x_mean=None``: then read in place).
    x_mean : ndarray of shape (n_features,) or None
        The frame ``centers`` live in: rows are centred on it block by block.
    centers : ndarray of shape (n_clusters, n_features)
        Finite centres, relative to ``x_mean``.
    n_threads : int
        The caller runs this under :func:`single_threaded_blas`.
    progress : callable or None, default=None
        Called as ``progress(rows_done, n_samples)`` after each block of rows.

    Returns
    -------
    labels : ndarray of shape (n_samples,), dtype=int32
        Ties go to the lower index.
    dist2 : ndarray of shape (n_samples,)
        Squared distance to the nearest centre, clamped at zero, in ``X``'s dtype.
    n_distance_evals : int
    """
    labels = np.empty(X.shape[0], dtype=np.int32)
    dist2 = np.empty(X.shape[0], dtype=X.dtype)
    n_evals = 0
    for rows in row_blocks(X.shape[0], X.shape[1] * X.itemsize):
        block = X[rows] if x_mean is None else X[rows] - x_mean
        n_evals += _assign.assign_full(block, centers, labels[rows], dist2[rows], n_threads)
        if progress is not None:
            progress(rows.stop, X.shape[0])
    return labels, dist2, n_evals


def all_dist2(X, centers, n_threads):
    """The squared distances of the (centred) rows ``X`` to every centre, an
    ``n_samples x n_clusters`` array: the distances the nearest-centre kernel compares, so
    that the smallest of each row is the centre :func:`nearest` picks. For callers that need
    them all (Laplacian K-modes' kernel); ``n_samples * n_clusters`` evaluations."""
    dist2 = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
    labels = np.empty(X.shape[0], dtype=np.int32)
    smallest = np.empty(X.shape[0], dtype=X.dtype)
    # a variance <= 0 leaves the squared distances in the output
    _assign.responsibilities_full(X, centers, -1.0, dist2, labels, smallest, smallest,
                                  n_threads)
    return dist2


def dist2_blocks(X, x_mean, centers, n_threads):
    """Row blocks ``(rows, dist2)`` of :func:`all_dist2` for ``X`` in the user's coordinates,
    centred on ``x_mean`` block by block (no ``n_samples x n_clusters`` array is made)."""
    for rows in row_blocks(X.shape[0], centers.shape[0] * X.itemsize):
        yield rows, all_dist2(X[rows] - x_mean, centers, n_threads)
