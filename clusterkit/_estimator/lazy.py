"""A fitted model on a dask array: its methods of rows (``predict``, ``transform``,
``score_samples``, ...) and ``score`` run lazily, chunk by chunk, on the workers."""
import functools

import numpy as np

from .._data.chunked import is_dask_array, map_rows, row_weights
from .._data.dask_chunks import shipped_nbytes
from .._engine.warn import warn
from .validation import check_weight_counts, count_weight_problems, rows_from

__all__ = ["EMBEDDED_DATA_WARNING_BYTES", "check_graph_data", "map_model", "per_row_chunk",
           "result_dtype", "score_model"]

#: A dask array whose task graph holds more bytes of NumPy data than this (``da.from_array``
#: of a large array or memmap) gets one warning per fit, ``predict``, ``score``, ... on a
#: ``dask.distributed`` client (:func:`check_graph_data`).
EMBEDDED_DATA_WARNING_BYTES = 64 << 20


def check_graph_data(X):
    """Warn once if the dask array ``X`` carries a large in-memory array in its task graph,
    which ``dask.distributed`` pickles and sends to the scheduler with every compute (a fit
    computes at every step): a memmap wrapped by ``da.from_array`` is sent whole, not read by
    the workers from its file. The warning says what to pass instead."""
    nbytes = shipped_nbytes(X)
    if nbytes > EMBEDDED_DATA_WARNING_BYTES:
        warn(f"X is a dask array whose task graph holds {nbytes / 2**20:.0f} MiB of "
             "in-memory data (da.from_array of a NumPy array or a memmap puts it there); "
             "dask.distributed pickles and sends it with every compute, each step of a fit "
             "included, which is slow and costs the client memory. Pass the memmap or array "
             "itself, or build the dask array so that each task reads its rows from the file "
             "(da.from_npy_stack, da.from_zarr, or da.from_delayed of a function that opens "
             "the file; see the Dask page of the documentation). Continuing with X as "
             "given.", RuntimeWarning)


def result_dtype(X):
    """The floating dtype of a model's results for the dask array ``X`` (``predict``'s rule:
    float32 stays float32, everything else is float64)."""
    return np.float32 if X.dtype == np.float32 else np.float64


def per_row_chunk(dtype, per_cluster=False):
    """Decorator of a fitted model's method of rows (``predict``, ``transform``, ...): given a
    dask array, the method runs on every row chunk, lazily (:func:`map_model`), with results
    of ``dtype`` (``None``: :func:`result_dtype`), one per row or, with ``per_cluster``, one
    per row and cluster; any other input goes to the method itself."""
    def decorate(method):
        @functools.wraps(method)
        def method_of_rows(model, X):
            if not is_dask_array(X):
                return method(model, X)
            n_columns = model.cluster_centers_.shape[0] if per_cluster else None
            return map_model(model, X, method.__name__,
                             result_dtype(X) if dtype is None else dtype, n_columns)
        return method_of_rows
    return decorate


def _model_on_chunk(X, model, method, block_info=None):
    """``model.<method>(X)`` on one chunk of a dask array (run by the workers); ``"dist2"``
    gives the squared distances to the nearest centres, as ``score`` uses. A row the method
    refuses is named by its number in the dask array (``block_info``, from dask)."""
    first_row = 0 if block_info is None else block_info[0]["array-location"][0][0]
    with rows_from(first_row):
        if method == "dist2":
            return model._labels_dist2(X)[2].astype(np.float64)
        return getattr(model, method)(X)


def map_model(model, X, method, dtype, n_columns=None):
    """``model.<method>`` on every row chunk of the dask array ``X``, as a lazy dask array
    (the chunks' tasks validate their rows as ``method`` does).

    The model goes to the workers once: a copy with the centres and the variance but without
    the per-sample attributes (``labels_`` may itself be a dask array), running its kernels
    on one OpenMP thread per task, since dask runs the tasks in parallel.
    """
    from sklearn.base import clone
    from sklearn.utils.validation import check_is_fitted
    check_is_fitted(model)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D array, got X of shape {X.shape}.")
    if X.shape[1] != model.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(model).__name__} is "
                         f"expecting {model.n_features_in_} features as input.")
    check_graph_data(X)
    copy = clone(model).set_params(n_threads=1, callback=None, verbose=0)
    for name in ("cluster_centers_", "_x_mean", "sigma2_", "n_features_in_"):
        if hasattr(model, name):
            setattr(copy, name, getattr(model, name))
    return map_rows(X, _model_on_chunk, (copy, method), dtype, n_columns)


def _checked_weights(sample_weight):
    """One chunk of ``score``'s weights, checked as ``check_sample_weight`` does (a chunk may
    be zero everywhere)."""
    counts = count_weight_problems(sample_weight, np.float64)
    counts[2] = max(counts[2], 1)
    check_weight_counts(counts, np.float64)
    return sample_weight


def score_model(model, X, sample_weight):
    """``model.score`` of a dask array, lazily: one pass over the chunks."""
    mixture = model._is_mixture()
    values = map_model(model, X, "score_samples" if mixture else "dist2", np.float64)
    weights = row_weights(sample_weight, X)
    if weights is not None:
        weights = weights.map_blocks(_checked_weights, dtype=np.float64)
    if mixture:
        return (values.mean() if weights is None else
                (values * weights).sum() / weights.sum())
    return -(values.sum() if weights is None else (values * weights).sum())
