"""Data held in row chunks: dask arrays and NumPy memmaps, read one block of rows at a time.

A fit on such data never holds them in memory: :class:`ChunkedData` gives the reducer a
sequence of row blocks and runs a function on each (:meth:`ChunkedData.map_chunks`), on the
workers of a dask cluster (:class:`DaskChunks`) or in this process, one block after the other
(:class:`MemmapChunks`); only what the function returns reaches the caller. The first pass,
:meth:`ChunkedData.scan`, validates the data (finite values, weights) and gives every chunk's
weight, mean and sum of squared deviations, which the driver and the reducer combine exactly.

This is the only module that imports dask, and only when a dask array is used; without dask
the rest of clusterkit (memmaps included) works, and a dask path raises an ``ImportError``
naming the optional extra ``clusterkit[dask]``. Block functions are plain NumPy and run on
the workers: there they use one OpenMP thread, since dask runs the tasks in parallel.
"""
import numbers
from dataclasses import dataclass

import numpy as np

from .._estimator.validation import (check_range, check_weight_counts, check_weight_shape,
                                     count_weight_problems)
from .._kernels._lwcs import moments_weighted
from .nearest import nearest, single_threaded_blas

__all__ = ["ChunkMoments", "ChunkedData", "DaskChunks", "MemmapChunks", "chunked_data",
           "import_dask", "is_dask_array", "map_rows", "row_weights"]

#: Bytes of input rows per block of the passes over a memmap (the blocks are
#: ``max(1, MEMMAP_BLOCK_BYTES // (n_features * itemsize))`` rows, the last one shorter), so
#: that the coreset depends on the file's shape and dtype only.
MEMMAP_BLOCK_BYTES = 32 << 20

_EXTRA = "pip install 'clusterkit[dask]'"


def is_dask_array(X):
    """Whether ``X`` is a dask array, decided without importing dask."""
    return type(X).__module__.startswith("dask.") and hasattr(X, "to_delayed")


def import_dask():
    """``(dask, dask.array)``, or an ``ImportError`` that names the optional extra."""
    try:
        import dask
        import dask.array as da
    except ImportError as error:
        raise ImportError(f"Clustering dask arrays needs dask and distributed: {_EXTRA}.") \
            from error
    return dask, da


def _fit_dtype(dtype, what="X"):
    """The dtype a fit works in: float32 and float64 stay, other numbers become float64."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numeric, got dtype {dtype}.")
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


@dataclass(frozen=True)
class ChunkMoments:
    """What the first pass knows about each chunk of rows (float64 throughout).

    Attributes
    ----------
    n_rows : ndarray of shape (n_chunks,), dtype=int64
    weight : ndarray of shape (n_chunks,)
        ``W_c = sum_{n in c} w_n``.
    mean : ndarray of shape (n_chunks, n_features)
        The chunk's weighted mean ``mu_c`` (zeros where ``W_c = 0``).
    m2 : ndarray of shape (n_chunks,)
        ``M2_c = sum_{n in c} w_n ||x_n - mu_c||^2``.
    low, high : ndarray of shape (n_features,)
        Smallest and largest value of every feature over all rows (``inf`` and ``-inf`` for
        data validated already, which are not searched for them).
    heaviest : float
        The largest weight the fit uses (1 without ``sample_weight``; 0 for data validated
        already, whose weights are not searched).
    row_sum : ndarray of shape (n_chunks, n_features)
        Every chunk's unweighted sum of rows, in the data's dtype (what :attr:`row_mean`
        adds up).
    """

    n_rows: np.ndarray
    weight: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    low: np.ndarray
    high: np.ndarray
    heaviest: float = 0.0
    row_sum: np.ndarray = None

    @property
    def total_weight(self):
        """``W = sum_c W_c``."""
        return float(self.weight.sum())

    @property
    def global_mean(self):
        """The weighted mean of all rows, ``mu = sum_c W_c mu_c / W``."""
        return (self.weight @ self.mean) / self.total_weight

    @property
    def row_mean(self):
        """The unweighted mean of all rows, in the data's dtype, computed as
        :func:`~clusterkit._data.nearest.data_mean` computes it for an array in memory (its sum of
        rows divided by their number; bit-identical for data in one chunk): the centring of
        a fit, the same for the same rows on every container."""
        return self.row_sum.sum(axis=0, dtype=self.row_sum.dtype) / int(self.n_rows.sum())

    @property
    def chunk_spread(self):
        """``S_c = sum_{n in c} w_n ||x_n - mu||^2 = M2_c + W_c ||mu_c - mu||^2`` (exact: the
        parallel-variance formula), of shape (n_chunks,)."""
        shift = self.mean - self.global_mean
        return self.m2 + self.weight * np.einsum("ij,ij->i", shift, shift)

    @property
    def spread(self):
        """``S = sum_n w_n ||x_n - mu||^2 = sum_c S_c``."""
        return float(self.chunk_spread.sum())


def fit_weights(sample_weight, n_rows, dtype):
    """A block's weights as the fit sees them: rounded to the data's ``dtype`` (as
    ``check_sample_weight`` rounds in-memory weights), held in float64; ones for ``None``."""
    if sample_weight is None:
        return np.ones(n_rows)
    return np.asarray(sample_weight).astype(dtype).astype(np.float64)


def _block_moments(X, sample_weight, n_threads, check):
    """Pass 1 on one block: validity counts and the block's moments.

    Returns a tuple ``(n_nonfinite, weight_counts, n_rows, W, mean, M2, low, high,
    heaviest, row_sum)``; the moments are zeros when the block has invalid entries (the caller
    raises). The sums run in float64 in the ``moments_weighted`` kernel, with the weights the
    fit uses (:func:`fit_weights`), so that a block gives the same numbers whatever holds
    it; ``low``, ``high`` and the largest weight ``heaviest`` are what the range check
    (:func:`~clusterkit._estimator.validation.check_range`) reads, found in the same pass. Without
    ``check`` (data validated already) the weights are not counted (``weight_counts`` is
    ``None``, ``heaviest`` 0).
    """
    n_rows, n_features = X.shape
    weight_counts = (None if not check
                     else np.array([0, 0, n_rows, 0, 0], dtype=np.int64) if sample_weight is None
                     else count_weight_problems(sample_weight, X.dtype))
    zeros = (0.0, np.zeros(n_features), 0.0, np.full(n_features, np.inf),
             np.full(n_features, -np.inf), 0.0, np.zeros(n_features, dtype=X.dtype))
    if n_rows == 0 or check and (weight_counts[0] or weight_counts[1]):
        return (int(np.count_nonzero(~np.isfinite(X))), weight_counts, n_rows, *zeros)
    mean, low, high = np.empty(n_features), np.empty(n_features), np.empty(n_features)
    weights = fit_weights(sample_weight, n_rows, X.dtype)
    total, m2 = moments_weighted(X, weights, mean, low, high, check, n_threads)
    # NaN or infinity in X make the sums non-finite: count them only then (finite data whose
    # sums overflow are left to the caller's range check)
    if check and not np.isfinite([total, m2, *mean, *low, *high]).all():
        n_nonfinite = int(np.count_nonzero(~np.isfinite(X)))
        if n_nonfinite:
            return (n_nonfinite, weight_counts, n_rows, *zeros)
    heaviest = float(weights.max()) if check else 0.0
    # the centring's sum in the data's dtype, as NumPy's mean of an array in memory sums
    row_sum = X.sum(axis=0)
    return (0, weight_counts, n_rows, total, mean, m2, low, high, heaviest, row_sum)


def _whole_block(X, sample_weight):
    """The block itself and its weights (ones when none were given)."""
    weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return X, weights


def _call_on_block(func, X, sample_weight, dtype, args):
    """``func(X, w, *args)`` with the block as a C-contiguous array of ``dtype`` and its
    weights as float64 (or ``None``): what every function given to ``map_chunks`` sees."""
    X = np.ascontiguousarray(X, dtype=dtype)
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
    return func(X, sample_weight, *args)


class ChunkedData:
    """Training data too large for memory, as a sequence of row blocks (chunks).

    What a chunked :class:`~clusterkit.DataReducer` receives in ``reduce_chunked``. It never
    materialises the data: functions run on one block at a time and only their results come
    back. Built by :func:`chunked_data` from a dask array (:class:`DaskChunks`) or a NumPy
    memmap (:class:`MemmapChunks`); the chunking fixes everything random draws may depend on.

    Attributes
    ----------
    shape : tuple of int
        ``(n_samples, n_features)``.
    dtype : numpy.dtype
        float32 or float64: the dtype the fit works in (integer data become float64).
    ndim : int
        2.
    chunk_rows : tuple of int
        Rows of every chunk, in order.
    n_chunks : int
    n_threads : int
        OpenMP threads for a kernel called by a block function (``1`` on dask workers).
    weighted : bool
        Whether the user gave ``sample_weight``.
    validated : bool
        Whether the values were validated already (an in-memory array read in blocks):
        :meth:`scan` then only sums.
    in_process : bool
        Class attribute: whether the blocks are read in this process (then :meth:`take`
        copies rows without another pass).
    """

    in_process = False

    ndim = 2

    def __init__(self, shape, dtype, chunk_rows, n_threads, weighted, validated=False):
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.chunk_rows = tuple(int(n) for n in chunk_rows)
        self.n_chunks = len(self.chunk_rows)
        self.n_threads = n_threads
        self.weighted = weighted
        self.validated = validated
        self._moments = None

    @property
    def chunk_starts(self):
        """The first row of every chunk, of shape (n_chunks,)."""
        return np.concatenate([[0], np.cumsum(self.chunk_rows)[:-1]]).astype(np.int64)

    def map_chunks(self, func, args=None, chunks=None, progress=None):
        """Run ``func`` on chunks of rows and return what it returned, in chunk order.

        Parameters
        ----------
        func : callable
            ``func(X_chunk, sample_weight_chunk, *chunk_args)``; ``X_chunk`` is a C-contiguous
            array of ``dtype``, ``sample_weight_chunk`` float64 or ``None`` (no weights
            given). A module-level function (it is pickled for the workers); it should
            return little: the results are gathered to this process.
        args : sequence of tuple, default=None
            One tuple of extra arguments per chunk of ``chunks`` (none by default).
        chunks : sequence of int, default=None
            Which chunks, in increasing order (all by default).
        progress : callable or None, default=None
            Called as ``progress(rows_done, rows_total)`` (rows of these chunks) when a
            chunk is done; with dask only under its local schedulers (a
            ``dask.distributed`` client runs the tasks without telling).

        Returns
        -------
        results : list
        """
        chunks = range(self.n_chunks) if chunks is None else [int(c) for c in chunks]
        args = [()] * len(chunks) if args is None else [tuple(a) for a in args]
        return self._map(func, chunks, args, progress or (lambda done, total: None))

    def scan(self, progress=None):
        """The first pass: validate every chunk and return their :class:`ChunkMoments`.

        Computed once per object (later calls return the same moments); ``progress`` as
        for :meth:`map_chunks`.

        Raises
        ------
        ValueError
            If ``X`` has NaN or infinite entries, if ``sample_weight`` is negative,
            non-finite, all zero or cannot be held by the data's dtype, or if squared
            distances between samples overflow (or all underflow) the dtype.
        """
        if self._moments is not None:
            return self._moments
        check = not self.validated
        results = self.map_chunks(_block_moments, [(self.n_threads, check)] * self.n_chunks,
                                  progress=progress)
        n_nonfinite = [r[0] for r in results]
        if any(n_nonfinite):
            bad = np.flatnonzero(n_nonfinite)
            raise ValueError(f"Input X contains NaN or infinity: {int(sum(n_nonfinite))} "
                             f"entries in {len(bad)} of its {self.n_chunks} row chunks (the "
                             f"first is chunk {bad[0]}).")
        if check:
            check_weight_counts(np.sum([r[1] for r in results], axis=0), self.dtype)
        moments = ChunkMoments(
            n_rows=np.array([r[2] for r in results], dtype=np.int64),
            weight=np.array([r[3] for r in results], dtype=np.float64),
            mean=np.array([r[4] for r in results], dtype=np.float64).reshape(
                self.n_chunks, self.shape[1]),
            m2=np.array([r[5] for r in results], dtype=np.float64),
            low=np.min([r[6] for r in results], axis=0),
            high=np.max([r[7] for r in results], axis=0),
            heaviest=max(r[8] for r in results),
            row_sum=np.array([r[9] for r in results], dtype=self.dtype).reshape(
                self.n_chunks, self.shape[1]))
        if check:  # the range policy of data in memory, on the same bounding box and weights
            check_range(moments.low, moments.high, self.dtype, self.shape[0],
                        (moments.total_weight, moments.heaviest))
        self._moments = moments
        return moments

    def gather(self):
        """All rows and their weights, in memory (for data no larger than a coreset).

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
        sample_weight : ndarray of shape (n_samples,), dtype=float64
        """
        parts = self.map_chunks(_whole_block)
        return (np.concatenate([p[0] for p in parts]),
                np.concatenate([p[1] for p in parts]))

    def take(self, rows):
        """The given rows, in memory, as a C-contiguous array of :attr:`dtype` (only for data
        read :attr:`in_process`).

        Parameters
        ----------
        rows : ndarray of shape (n_rows,), dtype=intp

        Returns
        -------
        X : ndarray of shape (n_rows, n_features)
        """
        raise NotImplementedError

    def nearest(self, x_mean, centers, progress=None):
        """Every row's nearest centre and the weighted quantization error.

        Parameters
        ----------
        x_mean : ndarray of shape (n_features,)
            The fit's centring: ``centers`` are relative to it.
        centers : ndarray of shape (n_clusters, n_features)
        progress : callable or None, default=None
            As for :meth:`map_chunks`, for the rows labelled now (none if lazy).

        Returns
        -------
        labels : array of shape (n_samples,), dtype=int32
        inertia : float or 0-d array
        n_distance_evals : int
            Evaluations done now (``0`` if the results are lazy).
        """
        raise NotImplementedError


class MemmapChunks(ChunkedData):
    """A NumPy memmap (or any array) read in blocks of :data:`MEMMAP_BLOCK_BYTES`, in this
    process, one block after the other: the operating system keeps only the pages in use."""

    in_process = True

    def __init__(self, X, sample_weight, n_threads, validated=False):
        dtype = _fit_dtype(X.dtype)
        n_samples, n_features = X.shape
        block = max(1, MEMMAP_BLOCK_BYTES // max(1, n_features * X.dtype.itemsize))
        rows = [min(block, n_samples - start) for start in range(0, n_samples, block)]
        super().__init__(X.shape, dtype, rows, n_threads, sample_weight is not None, validated)
        self._X, self._w = X, sample_weight

    def _map(self, func, chunks, args, progress):
        starts = self.chunk_starts
        results = []
        done, total = 0, sum(self.chunk_rows[c] for c in chunks)
        for c, chunk_args in zip(chunks, args):
            rows = slice(starts[c], starts[c] + self.chunk_rows[c])
            w = None if self._w is None else self._w[rows]
            results.append(_call_on_block(func, self._X[rows], w, self.dtype, chunk_args))
            done += self.chunk_rows[c]
            progress(done, total)
        return results

    def take(self, rows):
        return np.ascontiguousarray(self._X[rows], dtype=self.dtype)

    def nearest(self, x_mean, centers, progress=None):
        results = self.map_chunks(_nearest_block,
                                  [(x_mean, centers, self.n_threads)] * self.n_chunks,
                                  progress=progress)
        labels = np.concatenate([r[0] for r in results])
        return labels, sum(r[1] for r in results), sum(r[2] for r in results)


def _nearest_block(X, sample_weight, x_mean, centers, n_threads):
    """Labels, weighted quantization error and distance evaluations of one block (see
    :func:`~clusterkit._data.nearest.nearest`)."""
    labels, dist2, n_evals = nearest(X, x_mean, centers, n_threads)
    dist2 = dist2.astype(np.float64)
    return labels, float(dist2.sum() if sample_weight is None else sample_weight @ dist2), n_evals


def _nearest_rows(X, x_mean, centers):
    """Labels and squared distances of one chunk of a dask array, as one structured array
    (``"label"`` int32, ``"dist2"`` float64), so that both come from a single task."""
    X = np.ascontiguousarray(X, dtype=centers.dtype)
    with single_threaded_blas():  # as in fit: the kernel calls gemm per tile
        labels, dist2, _ = nearest(X, x_mean, centers, 1)
    out = np.empty(X.shape[0], dtype=_NEAREST)
    out["label"], out["dist2"] = labels, dist2
    return out


_NEAREST = np.dtype([("label", np.int32), ("dist2", np.float64)])


class DaskChunks(ChunkedData):
    """A row-chunked dask array: every block function is a task on the dask scheduler in use
    (a ``dask.distributed`` client if one is active); only the results come back.

    A chunking along the columns is merged into one column chunk first; ``sample_weight``
    (a dask array, or an array that is split like ``X``) gets ``X``'s row chunks.
    """

    def __init__(self, X, sample_weight):
        import_dask()
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        super().__init__(X.shape, _fit_dtype(X.dtype), X.chunks[0], 1,
                         sample_weight is not None)
        self._X = X
        self._w = row_weights(sample_weight, X)

    def _map(self, func, chunks, args, progress):
        dask, _ = import_dask()
        from dask.callbacks import Callback
        blocks = self._X.to_delayed().ravel()
        weights = ([None] * self.n_chunks if self._w is None
                   else self._w.to_delayed().ravel())
        call = dask.delayed(_call_on_block)
        tasks = [call(func, blocks[c], weights[c], self.dtype, a) for c, a in zip(chunks, args)]
        rows = {task.key: self.chunk_rows[c] for task, c in zip(tasks, chunks)}
        done, total = [0], sum(rows.values())

        def finished(key, result, graph, scheduler_state, worker_id):
            if key in rows:  # one of our chunks (not a task reading the data)
                done[0] += rows[key]
                progress(done[0], total)

        with Callback(posttask=finished):
            return list(dask.compute(*tasks))

    def nearest(self, x_mean, centers, progress=None):
        nearest = map_rows(self._X, _nearest_rows, (x_mean, centers), dtype=_NEAREST)
        dist2 = nearest["dist2"]
        inertia = (dist2 if self._w is None else dist2 * self._w).sum()
        return nearest["label"], inertia, 0


def row_weights(sample_weight, X):
    """``sample_weight`` as a float64 dask array with the row chunks of the dask array ``X``
    (``None`` stays ``None``); shapes and dtypes are checked here, values by the tasks.

    Raises
    ------
    TypeError
        If the weights are not numeric.
    ValueError
        If they are not 1-D or their length differs from ``X``'s rows.
    """
    if sample_weight is None:
        return None
    _, da = import_dask()
    n_samples = X.shape[0]
    if isinstance(sample_weight, numbers.Number):
        return da.full(n_samples, float(sample_weight), chunks=(X.chunks[0],))
    if not is_dask_array(sample_weight):
        sample_weight = np.asarray(sample_weight)
    check_weight_shape(sample_weight, n_samples)
    if is_dask_array(sample_weight):
        return sample_weight.astype(np.float64).rechunk((X.chunks[0],))
    return da.from_array(sample_weight.astype(np.float64), chunks=(X.chunks[0],))


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


def chunked_data(X, sample_weight, n_threads):
    """:class:`ChunkedData` over a dask array or a memmap ``X`` (structure checked, values
    not yet: :meth:`ChunkedData.scan` does that).

    Parameters
    ----------
    X : dask array or numpy.memmap of shape (n_samples, n_features)
    sample_weight : array-like of shape (n_samples,), dask array, number or None
    n_threads : int
        OpenMP threads of kernels run in this process (memmaps).

    Returns
    -------
    data : ChunkedData
    """
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


def map_rows(X, func, args, dtype, n_columns=None):
    """A lazy dask array: ``func(X_chunk, *args)`` on every row chunk of the dask array ``X``.

    ``args`` (centres, a fitted model) are put into the graph once, as one task each that
    every chunk's task refers to, rather than copied into every task.

    Parameters
    ----------
    X : dask array of shape (n_samples, n_features)
    func : callable
        Returns an array of ``X_chunk``'s rows: 1-D, or with ``n_columns`` columns.
    args : tuple
    dtype : dtype
        Of ``func``'s result.
    n_columns : int or None, default=None
        Columns of ``func``'s result; ``None`` for a 1-D result.

    Returns
    -------
    result : dask array of shape (n_samples,) or (n_samples, n_columns)
    """
    dask, _ = import_dask()
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    shared = [dask.delayed(arg) for arg in args]
    if n_columns is None:
        return X.map_blocks(func, *shared, dtype=dtype, drop_axis=1, meta=np.empty(0, dtype))
    return X.map_blocks(func, *shared, dtype=dtype, chunks=(X.chunks[0], (n_columns,)),
                        meta=np.empty((0, 0), dtype))
