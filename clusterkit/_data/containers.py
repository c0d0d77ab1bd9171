"""Which :class:`~clusterkit._data.chunked.ChunkedData` an input becomes:
:func:`chunked_data` checks the structure of a dask array or a memmap and its weights (not
their values: the first pass does that) and wraps it as
:class:`~clusterkit._data.dask_chunks.DaskChunks` or
:class:`~clusterkit._data.chunked.MemmapChunks`."""
import numbers

import numpy as np

from .chunked import MemmapChunks, _fit_dtype, is_dask_array
from .dask_chunks import DaskChunks

__all__ = ["chunked_data"]


def _check_structure(X):
    """Shape checks that need no data: 2-D, known and non-zero sizes."""
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array, got X of shape {X.shape}.")
    if any(isinstance(n, float) and np.isnan(n) for n in X.shape):
        raise ValueError("X has unknown chunk sizes; call X.compute_chunk_sizes() first.")
    if X.shape[0] < 1:
        raise ValueError(f"X has {X.shape[0]} samples; at least 1 is required.")
    if X.shape[1] < 1:
        raise ValueError(f"X has {X.shape[1]} features; at least 1 is required.")


def chunked_data(X, sample_weight, n_threads, unit_rows=False):
    """:class:`~clusterkit._data.chunked.ChunkedData` over a dask array or a memmap ``X``
    (structure checked, values not yet: its ``scan`` does that).

    Parameters
    ----------
    X : dask array or numpy.memmap of shape (n_samples, n_features)
    sample_weight : array-like of shape (n_samples,), dask array, number or None
    n_threads : int
        OpenMP threads of kernels run in this process (memmaps).
    unit_rows : bool, default=False
        Scale every row to unit norm (``ChunkedData.unit_rows``).

    Returns
    -------
    data : ChunkedData
    """
    data = _chunked_data(X, sample_weight, n_threads)
    data.unit_rows = unit_rows
    return data


def _chunked_data(X, sample_weight, n_threads):
    _check_structure(X)
    _fit_dtype(X.dtype)
    if is_dask_array(X):
        return DaskChunks(X, sample_weight)
    if is_dask_array(sample_weight):
        raise TypeError("sample_weight is a dask array, but X is not; pass both as dask "
                        "arrays or neither.")
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(X.shape[0], float(sample_weight))
    if sample_weight is not None:
        if not isinstance(sample_weight, np.ndarray):
            sample_weight = np.asarray(sample_weight)
        if sample_weight.dtype.kind not in "biuf":
            raise TypeError(f"sample_weight must be numeric, got dtype {sample_weight.dtype}.")
        if sample_weight.ndim != 1:
            raise ValueError(f"sample_weight must be 1-D, got shape {sample_weight.shape}.")
        if sample_weight.shape[0] != X.shape[0]:
            raise ValueError(f"sample_weight has {sample_weight.shape[0]} entries, but X has "
                             f"{X.shape[0]} samples.")
    return MemmapChunks(X, sample_weight, n_threads)
