"""The estimator's memory methods: the estimate of a fit's peak memory before it runs
(:meth:`MemoryMethods.estimate_memory`) and the decision when ``fit`` starts, within the budget
or refused (:func:`~clusterkit._engine.footprint.plan_memory`)."""
import numpy as np

from .._data import chunked as _chunked, memory
from .._data.sparse import kernels_for
from .._engine.footprint import estimate_memory, plan_memory
from .._kernels._openmp import effective_n_threads
from .validation import check_memory_limit, check_params

__all__ = ["MemoryMethods", "copies_input"]


class MemoryMethods:
    """:class:`~clusterkit.Clusterer`'s memory estimate and plan (a mixin: it reads the
    estimator's parameters and its ``_strategies`` and ``_chunked_data``)."""

    def estimate_memory(self, X, dtype=None):
        """The memory a fit on ``X`` would allocate at its peak, estimated before it runs.

        Bytes beyond the data the caller holds, as ``memory_limit`` counts them: the fit's
        copies of the data and every strategy's large buffers (each strategy states its own,
        :meth:`~clusterkit._engine.strategy._Strategy.buffer_bytes`), at the peak of the
        fit's phases. ``fit`` checks the same estimate against ``memory_limit`` before any
        large allocation, and prints it when ``verbose >= 1``.

        Parameters
        ----------
        X : array-like, numpy.memmap, dask array, or tuple of int
            The data, or its shape ``(n_samples, n_features)``. Nothing is read or copied:
            a memmap whose copy would exceed the budget is estimated as the fit reads it, in
            row blocks.
        dtype : numpy.dtype or None, default=None
            The data's dtype when ``X`` is a shape (float64 when ``None``); ignored
            otherwise.

        Returns
        -------
        estimate : MemoryEstimate
            The bytes at the peak (``int(estimate)``), with ``phases``, the bytes of each phase:
            ``"data"`` (the fit's copies of the rows), ``"reduction"``, ``"seeding"``,
            ``"estep"``, ``"mstep"`` (with the schedule's and refiner's state) and
            ``"labels"`` (the final labelling), and ``budget``, the fit's budget.

        Raises
        ------
        ValueError, TypeError
            As ``fit`` for parameters that do not fit the data's shape.

        Examples
        --------
        >>> from clusterkit import Clusterer
        >>> estimate = Clusterer(100, estep="elkan").estimate_memory((100_000, 32), "float32")
        >>> estimate.phases["estep"] >= 4 * 100_000 * 100  # Elkan's N x C lower bounds
        True
        """
        check_memory_limit(self)
        with memory.fit_budget(self.memory_limit):
            copies = False
            if isinstance(X, tuple):
                dtype = np.dtype(np.float64 if dtype is None else dtype)
                if dtype not in (np.float32, np.float64):
                    dtype = np.dtype(np.float64)
                # a read-only stand-in of that shape (one element, broadcast)
                X = np.broadcast_to(np.zeros((), dtype=dtype), tuple(int(n) for n in X))
            else:
                X = self._chunked_data(X, None, fitting=False) or X
                if not isinstance(X, _chunked.ChunkedData):
                    kind = kernels_for(X)
                    copies = kind.checking_copies(X)
                    X = kind.as_rows(X)
                    if X.dtype not in (np.float32, np.float64):
                        X = np.broadcast_to(np.zeros((), dtype=np.float64), X.shape)
            check_params(self, X.shape[0])
            with memory.unlimited():  # (what does not fit is estimated, not refused)
                composition = self._strategies(X, None)
            n_init = 1 if composition.seed.given else self.n_init
            return self._estimate(composition, X, copies, n_init)

    def _estimate(self, composition, X, copies, n_init, n_clusters=None):
        chunked = isinstance(X, _chunked.ChunkedData)
        return estimate_memory(
            composition, *X.shape, self.n_clusters if n_clusters is None else n_clusters,
            np.dtype(X.dtype), n_init=n_init, n_threads=effective_n_threads(self.n_threads),
            # (a spherical model's unit rows are a copy)
            copies_input=copies or (not chunked and self._is_spherical()),
            chunk_rows=max(X.chunk_rows) if chunked else None,
            compute_labels=self.compute_labels)

    def _memory_plan(self, composition, X, copies, n_init):
        """The fit's memory estimate, or :class:`FitMemoryError` when it exceeds the budget
        (:func:`~clusterkit._engine.footprint.plan_memory`)."""
        estimate = self._estimate(composition, X, copies, n_init)

        def fits(n_clusters):
            other = self._estimate(composition, X, copies, n_init, n_clusters)
            return int(other) <= other.budget
        plan_memory(estimate, self.n_clusters, fits)
        return estimate


def copies_input(X):
    """Whether validating ``X`` for a fit copies it: anything but a C-contiguous float32 or
    float64 array (or sparse matrix) is converted."""
    return kernels_for(X).checking_copies(X)
