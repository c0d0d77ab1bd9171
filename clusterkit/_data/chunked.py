"""Data held in row chunks: dask arrays and NumPy memmaps, read one block of rows at a time.

A fit on such data never holds them in memory: :class:`ChunkedData` gives the reducer (or
the driver's steps on all the rows, :mod:`clusterkit._engine.mapreduce`) a sequence of row
blocks and runs a function on each (:meth:`ChunkedData.map_chunks`), on the
workers of a dask cluster (:class:`~clusterkit._data.dask_chunks.DaskChunks`) or in this
process, one block after the other (:class:`MemmapChunks`); only what the function returns
reaches the caller. The first pass, :meth:`ChunkedData.scan`, validates the data (finite values, weights) and gives every chunk's
weight, mean and sum of squared deviations, which the driver and the reducer combine exactly.

This module and :mod:`clusterkit._data.dask_chunks` (``DaskChunks``) are the only ones
that import dask, and only when a dask array is used; without dask the rest of clusterkit
(memmaps included) works, and a dask path raises an ``ImportError`` naming the optional
extra ``clusterkit[dask]``. Block functions are plain NumPy and run on
the workers: there they use one OpenMP thread, since dask runs the tasks in parallel.
"""
import copy
import numbers

import numpy as np

from . import blocks
from .checks import (check_block_rows, check_range, check_weight_counts, check_weight_shape,
                     unit_rows)
from .memory import budget
from .moments import ChunkMoments, _block_moments, fit_weights, weighted_sum
from .nearest import centred_copy, nearest

__all__ = ["ChunkedData", "MemmapChunks", "exceeds_budget", "import_dask",
           "is_dask_array", "map_rows", "row_weights", "sum_of_rows"]

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


def _whole_block(X, sample_weight):
    """The block itself and its weights (ones when none were given)."""
    weights = np.ones(X.shape[0]) if sample_weight is None else sample_weight
    return X, weights


#: What a block function gets as its chunk's state when no state is kept.
_NO_STATE = object()


def _call_on_block(func, X, sample_weight, dtype, args, frame=None, n_threads=1,
                   state=_NO_STATE, unit=False):
    """``func(X, w, *args)`` with the block as a C-contiguous array of ``dtype`` and its
    weights as float64 (or ``None``): what every function given to ``map_chunks`` sees.

    In a fit's ``frame`` (:meth:`ChunkedData.in_frame`, the fit's mean) the block is centred
    on it, as the fit's centred copy of data in memory is (the same kernel, value for value),
    and the weights are those of the fit, in ``dtype`` (ones without ``sample_weight``). With
    a ``state`` the call is ``func(X, w, state, *args)``. With ``unit`` (a spherical model's
    data, :attr:`ChunkedData.unit_rows`) every row is first scaled to unit norm.
    """
    X = np.ascontiguousarray(X, dtype=dtype)
    if unit:
        X = unit_rows(X, "X's row chunk")
    if frame is not None:
        X = centred_copy(X, frame, n_threads)[0]
        sample_weight = fit_weights(sample_weight, X.shape[0], dtype).astype(dtype)
    elif sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
    if state is _NO_STATE:
        return func(X, sample_weight, *args)
    return func(X, sample_weight, state, *args)


def _pick_rows(X, sample_weight, rows):
    """The ``rows`` of a block and their weights (``None`` if none were given)."""
    return X[rows], None if sample_weight is None else sample_weight[rows]


class ChunkedData:
    """Training data too large for memory, as a sequence of row blocks (chunks).

    What a chunked :class:`~clusterkit.DataReducer` receives in ``reduce_chunked``. It never
    materialises the data: functions run on one block at a time and only their results come
    back. Built by :func:`~clusterkit._data.containers.chunked_data` from a dask array
    (:class:`~clusterkit._data.dask_chunks.DaskChunks`) or a NumPy memmap
    (:class:`MemmapChunks`); the chunking fixes everything random draws may depend on.

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
    #: Whether every block is scaled to unit rows before any function sees it (the data of a
    #: spherical model, :attr:`MStep.spherical <clusterkit.MStep.spherical>`; set by
    #: :func:`chunked_data`).
    unit_rows = False

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
        self._frame = None

    @property
    def n_processes(self):
        """The processes the chunks' tasks run in (and keep their state in): one here."""
        return 1

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

    def in_frame(self, x_mean):
        """This data as a fit's iterations read them: every block centred on ``x_mean`` (the
        fit's mean, in :attr:`dtype`) and weighted by the fit's weights in :attr:`dtype` (ones
        without ``sample_weight``), as the fit's centred copy of data in memory is. A new
        object; the first pass's results are shared."""
        framed = copy.copy(self)
        framed._frame = np.ascontiguousarray(x_mean, dtype=self.dtype)
        return framed

    def map_chunks_with_state(self, func, args, states, progress=None, combine=None,
                              finish=None, result_bytes=None):
        """Run ``func`` on every chunk with the state it keeps for that chunk between calls.

        ``func(X_chunk, sample_weight_chunk, state, *args)`` returns ``(result, state)``: the
        results come back to this process, in chunk order, or combined where they are (with
        ``combine``); each new state stays where its chunk ran (on the worker, as a future
        of a ``dask.distributed`` cluster; here for a memmap or another dask scheduler) and
        goes to the next call on the same chunk.
        Where states are computed again after a loss (:attr:`recomputes_states`), ``func``
        must not change the state it is given.

        The list ``states`` is handed over: its entries are let go (set to ``None``); on a
        cluster as the chunks' new states arrive, so that a chunk's old and new states are
        held together only while its call runs.

        Parameters
        ----------
        func : callable
            A module-level function (it is pickled for the workers).
        args : tuple
            The same extra arguments for every chunk (put into a dask graph once).
        states : list
            One state per chunk (``None`` for a first call), as the last call returned.
        progress : callable or None, default=None
            As for :meth:`map_chunks`.
        combine, finish : callable or None, default=None
            ``combine(first, second)``, the results of two neighbouring chunks (or groups of
            them) as one: the results are then combined in :func:`tree_reduce`'s tree where
            they are (tasks on a cluster's workers), and only the root, after
            ``finish(root)`` if given, comes back. Module-level functions or their partials.
        result_bytes : int or None, default=None
            About how many bytes one chunk's result has: results that are small in all
            come back and are combined here, in the same tree (a dask cluster: one round
            trip instead of a task per level of the tree); ``None``: combined where the
            chunks ran.

        Returns
        -------
        results : list, or the combined result
        states : list
        """
        return self._map_state(func, tuple(args), states,
                               progress or (lambda done, total: None), combine, finish,
                               result_bytes)

    @property
    def recomputes_states(self):
        """Whether a chunk's state (:meth:`map_chunks_with_state`) may be computed again from
        the calls that made it, reading their inputs again (after the loss of a
        ``dask.distributed`` worker that held it): a call must then leave the state it is
        given unchanged. ``False`` here (the states are objects in this process)."""
        return False

    def per_row(self, func, states, dtype, total):
        """``func(state)`` of every chunk's state (:meth:`map_chunks_with_state`), one value
        per row, as one array, with ``total``, as this data's results are returned: NumPy
        (and a float) here; a lazy dask array (and a 0-d one) for a dask array, each chunk's
        part computed where its state is."""
        return np.concatenate([func(state) for state in states]), float(total)

    def rows(self, rows):
        """The given rows (increasing) and their weights, in memory, read chunk by chunk
        (in the fit's frame if the data have one).

        Returns
        -------
        X : ndarray of shape (n_rows, n_features)
        sample_weight : ndarray of shape (n_rows,)
        """
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.chunk_starts
        chunk_of = np.searchsorted(starts, rows, side="right") - 1
        chunks = np.unique(chunk_of)
        raw = copy.copy(self)  # the rows as read; only they are put in the frame, here
        raw._frame, raw.unit_rows = None, False
        parts = raw.map_chunks(_pick_rows, [(rows[chunk_of == c] - starts[c],) for c in chunks],
                               chunks)
        X = (np.concatenate([p[0] for p in parts]) if parts
             else np.empty((0, self.shape[1]), self.dtype))
        if self.unit_rows:
            X = unit_rows(X)
        weights = np.concatenate([np.ones(len(p[0])) if p[1] is None else p[1] for p in parts]
                                 + [np.empty(0)])
        if self._frame is None:
            return X, weights
        # (row by row, the values _call_on_block gives the whole chunk in the frame)
        return (centred_copy(X, self._frame, self.n_threads)[0],
                fit_weights(weights, len(weights), self.dtype).astype(self.dtype))

    def sample(self, size, random_state):
        """A uniform sample of ``size`` rows (all rows if ``size >= n_samples``) in the fit's
        frame, and their weights rescaled so that they add up to the data's total weight.

        Drawn as :class:`~clusterkit.SampledSeeder` draws from data in memory (``size``
        distinct rows, without replacement, by ``random_state``'s ``choice`` over the rows
        with positive weight), so that on data whose weights are all positive the sample is
        the same rows, the same weights, whatever holds the data; rows with zero weight are
        drawn like the others (they cannot be told apart without another pass). Only the
        sample reaches this process.

        Returns
        -------
        X : ndarray of shape (size, n_features)
        sample_weight : ndarray of shape (size,), dtype=dtype
        """
        n_samples = self.shape[0]
        if size >= n_samples:
            rows = np.arange(n_samples)
        else:
            rows = np.sort(random_state.choice(n_samples, size, replace=False))
        X, weights = self.rows(rows)
        total = weights.sum(dtype=np.float64)
        if total > 0:
            weights = (weights * (self.scan().total_weight / total)).astype(self.dtype)
        return X, weights

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
        raw = copy.copy(self)  # (unit rows: the blocks as read, scaled by _block_moments)
        raw.unit_rows = False
        results = raw.map_chunks(_block_moments, [(self.n_threads, check, self.unit_rows)]
                                 * self.n_chunks, progress=progress)
        check_block_rows([r[10] for r in results], self.chunk_starts)
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

    def _map_state(self, func, args, states, progress, combine, finish, result_bytes):
        # (in this process a state updated in place is not held twice)
        pairs = self._map(_with_state, range(self.n_chunks),
                          [(func, state, args) for state in states], progress)
        states[:] = [None] * len(states)
        results = [p[0] for p in pairs]
        if combine is not None:
            results = tree_reduce(results, combine)
            results = results if finish is None else finish(results)
        return results, [p[1] for p in pairs]

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
    """A NumPy memmap (or any array) read in blocks of
    :data:`~clusterkit._data.blocks.MEMMAP_BLOCK_BYTES`, in this process, one block after the
    other: the operating system keeps only the pages in use."""

    in_process = True

    def __init__(self, X, sample_weight, n_threads, validated=False):
        dtype = _fit_dtype(X.dtype)
        n_samples, n_features = X.shape
        block = blocks.rows_for_bytes(n_features * X.dtype.itemsize,
                                      blocks.MEMMAP_BLOCK_BYTES)
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
            results.append(_call_on_block(func, self._X[rows], w, self.dtype, chunk_args,
                                          self._frame, self.n_threads, unit=self.unit_rows))
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
    return labels, weighted_sum(dist2, sample_weight), n_evals


def sum_of_rows(X, sample_weight, func, args, n_threads, progress=None):
    """``func(X, sample_weight, *args, n_threads)``, a tuple of sums over rows, of all the rows:
    one call on rows in memory, or each row chunk's call where the chunk is (``X``
    :class:`ChunkedData`, whose chunks hold their weights: ``sample_weight`` is ``None``, and
    each call gets the chunks' ``n_threads``), the chunks' sums added in chunk order whoever
    ran them. ``progress`` as for :meth:`ChunkedData.map_chunks`."""
    if not isinstance(X, ChunkedData):
        return func(X, sample_weight, *args, n_threads)
    parts = X.map_chunks(func, [(*args, X.n_threads)] * X.n_chunks, progress=progress)
    sums = [np.copy(value) for value in parts[0]]
    for part in parts[1:]:
        for k, value in enumerate(part):
            sums[k] += value
    return tuple(sums)


def tree_reduce(items, combine):
    """``items`` (in order) combined into one: neighbours first, ``combine(items[0],
    items[1])``, ``combine(items[2], items[3])``, ..., an odd last item carried up as it is,
    then the same on those, until one is left. The order of the additions depends on the
    number of items alone (whoever computes them), and a tree of ``n`` items is ``log2 n``
    deep. ``combine`` may return futures (a tree of tasks)."""
    items = list(items)
    while len(items) > 1:
        items = [combine(*items[i:i + 2]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def _with_state(X, sample_weight, func, state, args):
    """``func(X, w, state, *args)``: a block function with its chunk's state, as a plain
    block function whose extra arguments are the function, the state and ``args``."""
    return func(X, sample_weight, state, *args)


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


def exceeds_budget(X):
    """Whether a fit's centred copy of the array ``X`` (in the fit's dtype) would take more
    than the fit's memory budget (:func:`~clusterkit._data.memory.budget`: ``memory_limit``,
    or half the memory available; ``False`` where that is not known): such a memmap is read
    in row chunks, as a dask array is."""
    left = budget()
    return left is not None and X.shape[0] * X.shape[1] * _fit_dtype(X.dtype).itemsize > left


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
