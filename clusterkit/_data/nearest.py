"""The one exact nearest-centre path: labels, squared distances and inertia of any rows.

Every exact labelling goes through here -- the end of ``fit``, ``predict``, ``transform``,
``score``, :func:`clusterkit.metrics.quantization_error` and data in row chunks -- with one
centring, one block-size policy and one BLAS policy:

* **Centring.** Distances are computed as ``||x||^2 - 2 x.c + ||c||^2``, which cancels for
  data far from the origin; rows and centres are therefore shifted by the training data's
  mean (:func:`data_mean`) first, a block of rows at a time, so that no centred copy of the
  whole data is made. Sparse (CSR) data are the exception: centring would fill in every
  zero, so their frame's mean is zero (as in scikit-learn), and a CSR row is never shifted
  (the centres move to the row's frame instead).
* **Blocks.** A pass over rows in the user's coordinates works on blocks of
  :data:`~clusterkit._data.blocks.NEAREST_BLOCK_BYTES` (whole tiles of the distance kernels,
  :func:`~clusterkit._data.blocks.row_blocks`, so a pass block by block gives the same bits as
  one pass over all rows).
* **BLAS.** The kernels call gemm from inside OpenMP ``prange``, so BLAS must run on one
  thread while they do (:func:`single_threaded_blas`).
"""
import numpy as np
from threadpoolctl import ThreadpoolController

from .._kernels import _assign
from . import blocks
from .sparse import CSR, DENSE, kernels_for

__all__ = ["all_dist2", "centred_copy", "data_mean", "dist2_blocks", "dist2_to_labels",
           "in_frame", "nearest", "single_threaded_blas"]

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
    """The centring of ``X``: its mean, computed in its own dtype; zero for sparse ``X``.

    In ``X``'s dtype the centred data round exactly as scikit-learn's ``KMeans`` centres them,
    so both start from bit-identical data (the mean's own rounding is only a translation).
    Sparse data are not centred (that would fill in their zeros; scikit-learn does not centre
    them either): their frame is the origin. Every centring of a fit comes from here
    (each kind's :meth:`~clusterkit._data.sparse.RowsKind.mean`).
    """
    return kernels_for(X).mean(X)


def in_frame(X, x_mean):
    """Rows ``X`` shifted to the frame centred on ``x_mean`` (a new array); CSR rows as they
    are (their frame is the origin, see :func:`data_mean`)."""
    return kernels_for(X).in_frame(X, x_mean)


def dist2_to_labels(X, centers, labels, n_threads):
    """Squared distance of each (centred) row to the centre its label names, and the
    evaluations (one per row)."""
    return kernels_for(X).dist2_to_labels(X, centers, labels, n_threads)


def centred_copy(X, x_mean, n_threads, order=None):
    """The data a fit runs on, centred on ``x_mean`` (:func:`data_mean`), rows in ``order``
    (``None``: as given), and their float64 sum of squares.

    Dense data are copied (centring in place would change the user's array); CSR data, whose
    mean is zero, are used as they are (rows reordered if asked, a copy then).
    """
    return kernels_for(X).centred_copy(X, x_mean, n_threads, order)


def nearest(X, x_mean, centers, n_threads, progress=None, X32=None):
    """Exact nearest centre of each row of ``X``: labels, squared distances, evaluations.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        C-contiguous rows of ``centers``' dtype, in the user's coordinates (or centred
        already, with ``x_mean=None``: then read in place); CSR rows are never shifted.
    x_mean : ndarray of shape (n_features,) or None
        The frame ``centers`` live in: rows are centred on it block by block.
    centers : ndarray of shape (n_clusters, n_features)
        Finite centres, relative to ``x_mean``.
    n_threads : int
        The caller runs this under :func:`single_threaded_blas`.
    progress : callable or None, default=None
        Called as ``progress(rows_done, n_samples)`` after each block of rows.
    X32 : ndarray of shape (n_samples, n_features), dtype=float32, or None
        ``_assign.float32_products(X)`` if made already (with ``x_mean=None``); otherwise
        float64 rows with many features get it block by block.

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
    n_evals = _PASSES[kernels_for(X)](X, x_mean, centers, labels, dist2, n_threads, progress,
                                      X32)
    return labels, dist2, n_evals


def _dense_pass(X, x_mean, centers, labels, dist2, n_threads, progress, X32):
    """:func:`nearest` on dense rows, centred block by block; returns the evaluations."""
    n_evals = 0
    # float64 rows with many features: float32 products, the same labels (FullEStep's)
    mixed = X.dtype == np.float64 and X.shape[1] >= _assign.MIXED_MIN_FEATURES
    for rows in blocks.row_blocks(X.shape[0], X.shape[1] * X.itemsize):
        block = X[rows] if x_mean is None else X[rows] - x_mean
        if X32 is not None and x_mean is None:
            x32 = X32[rows]
        else:
            x32 = _assign.float32_products(block) if mixed else None
        n_evals += _assign.assign_full(block, centers, labels[rows], dist2[rows], n_threads,
                                       x32)
        if progress is not None:
            progress(rows.stop, X.shape[0])
    return n_evals


def _csr_pass(X, x_mean, centers, labels, dist2, n_threads, progress, X32):
    """:func:`nearest` on CSR rows, in one kernel call: the rows are not shifted, the centres
    move to their frame instead; returns the evaluations."""
    return CSR.assign(X, CSR.kernel_sqnorms(X, n_threads), CSR.frame_centers(centers, x_mean),
                      labels, dist2, n_threads)


#: The nearest-centre pass of each kind of rows.
_PASSES = {DENSE: _dense_pass, CSR: _csr_pass}


def all_dist2(X, centers, n_threads):
    """The squared distances of the (centred) rows ``X`` to every centre, an ``n_samples x
    n_clusters`` array: the distances the nearest-centre kernel compares, so that the
    smallest of each row is the centre :func:`nearest` picks (also for CSR rows). For
    callers that need them all (Laplacian K-modes' kernel); ``n_samples * n_clusters``
    evaluations."""
    return kernels_for(X).all_dist2(X, centers, n_threads)


def dist2_blocks(X, x_mean, centers, n_threads):
    """Row blocks ``(rows, dist2)`` of :func:`all_dist2` for ``X`` in the user's coordinates,
    centred on ``x_mean`` block by block (no ``n_samples x n_clusters`` array is made)."""
    kind = kernels_for(X)
    centers = kind.frame_centers(centers, x_mean)
    for rows in blocks.row_blocks(X.shape[0], centers.shape[0] * X.dtype.itemsize):
        yield rows, kind.all_dist2(kind.in_frame(X[rows], x_mean), centers, n_threads)
