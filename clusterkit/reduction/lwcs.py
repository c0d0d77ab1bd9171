"""Data reducers: replace the data by a smaller weighted set before clustering."""
from numbers import Integral

import numpy as np

from .._data.chunked import MemmapChunks
from .._data.moments import fit_weights
from .._engine.constraints import Interval
from .._engine.contracts import DataReducer
from .._engine.warn import warn
from .._kernels._lwcs import mass_cumulative
from ..seeding.seeders import _invert

__all__ = ["NoReduction", "LWCS", "default_coreset_size"]


class NoReduction(DataReducer):
    """Cluster the data as they are: returns ``X`` and ``sample_weight`` unchanged.

    Notes
    -----
    No cost, no copy.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import NoReduction
    >>> X, w = np.zeros((3, 2)), np.ones(3)
    >>> Xr, wr = NoReduction().reduce(X, w, state=None)
    >>> Xr is X and wr is w
    True
    """

    accepts_sparse = True
    reduces = False

    def reduce(self, X, sample_weight, state):
        """Return ``X`` and ``sample_weight`` themselves (see :meth:`DataReducer.reduce`)."""
        return X, sample_weight


def _coefficients(total, spread):
    """LWCS's ``a = 1/2 / sum w`` and ``b = 1/2 / sum w d2`` (``a = 1 / sum w``, ``b = 0``
    when every sample with weight sits on the mean)."""
    if spread > 0:
        return 0.5 / total, 0.5 / spread
    return 1.0 / total, 0.0


def _draw_block(X, sample_weight, mean, a, b, offsets, n_threads, return_rows):
    """LWCS's second pass on one block of rows: the rows at the given offsets of its mass.

    The block's mass ``q_n = w_n (a + b ||x_n - mean||^2)`` (``mass_cumulative``, float64),
    and for every offset ``o`` in ``[0, Q_c)`` (``Q_c``: the block's share of the mass from
    the first pass) the row ``n`` with ``cumsum[n-1] <= o < cumsum[n]``. Rows without mass
    are never drawn; an offset that rounding puts past the block's own total gives its last
    row with mass. Private helper: assumes valid input.

    Parameters
    ----------
    offsets : ndarray of shape (n_draws,), dtype=float64
        Sorted.
    return_rows : bool
        Whether to return the drawn rows themselves (from a remote worker).

    Returns
    -------
    rows : ndarray of shape (n_distinct,), dtype=intp
        The distinct drawn rows' indices in the block, increasing.
    X_drawn : ndarray of shape (n_distinct, n_features) or None
        The rows themselves, if ``return_rows``.
    counts : ndarray of shape (n_distinct,), dtype=intp
        Draws of each.
    dist2 : ndarray of shape (n_distinct,), dtype=float64
        Their squared distances to ``mean``.
    n_distance_evals : int
        Rows of the block (their distances to the mean).
    """
    n_rows = X.shape[0]
    dist2, cumsum = np.empty(n_rows), np.empty(n_rows)
    n_evals = mass_cumulative(X, fit_weights(sample_weight, n_rows, X.dtype), mean, a, b,
                              dist2, cumsum, n_threads)
    rows, counts = np.unique(_invert(cumsum, offsets), return_counts=True)
    return rows, X[rows] if return_rows else None, counts, dist2[rows], n_evals


def _reporter(state, unit):
    """Progress of a pass over the rows, reported as the reduction's (``Meter.progress``);
    the first pass of chunked data is the driver's scan, which reports its own."""
    return lambda done, total: state.meter.progress("reduction", done, total, unit)


def _sample(data, size, state):
    """``size`` LWCS draws from data in row blocks; see :meth:`LWCS.reduce_chunked`.

    Returns the drawn rows, the number of draws of each and their squared distances to the
    mean (in row order), and ``a``, ``b``.
    """
    moments = data.scan(progress=_reporter(state, "rows (pass 1 of 2)"))
    a, b = _coefficients(moments.total_weight, moments.spread)
    shares = a * moments.weight + b * moments.chunk_spread
    cumulative = np.cumsum(shares)
    # One sorted sequence of uniforms for the whole data, drawn here: a draw's position in
    # the mass does not depend on where the blocks start.
    positions = np.sort(state.random_state.uniform(size=size)) * cumulative[-1]
    owner = _invert(cumulative, positions)
    chunks, first = np.unique(owner, return_index=True)
    before = np.concatenate([[0.0], cumulative[:-1]])
    offsets = np.split(positions - before[owner], first[1:])
    mean = moments.global_mean
    remote = not data.in_process  # remote rows come back with the draws; local ones are
    # copied once, straight into the coreset
    parts = data.map_chunks(
        _draw_block, [(mean, a, b, o, data.n_threads, remote) for o in offsets], chunks,
        progress=_reporter(state, "rows (pass 2 of 2)"))
    state.meter.count("reduction", sum(part[4] for part in parts))
    counts = np.concatenate([part[2] for part in parts])
    dist2 = np.concatenate([part[3] for part in parts])
    if remote:
        X = np.concatenate([part[1] for part in parts])
    else:
        starts = data.chunk_starts
        X = data.take(np.concatenate([starts[c] + part[0] for c, part in zip(chunks, parts)]))
    return X, counts, dist2, a, b


def default_coreset_size(n_clusters):
    """The coreset size of ``LWCS(size=None)``: ``max(2**15, 32 * n_clusters)`` draws.

    The vc-GMM paper's experiments use ``2^12`` to ``2^16`` draws for up to about a thousand
    clusters (``2^15`` is its common setting); beyond, a fixed size would leave too few
    samples per cluster (``C = 4096`` would get 8), so the size grows with ``C``.

    Parameters
    ----------
    n_clusters : int

    Returns
    -------
    size : int

    Examples
    --------
    >>> default_coreset_size(500), default_coreset_size(4096)
    (32768, 131072)
    """
    return max(2 ** 15, 32 * int(n_clusters))


class LWCS(DataReducer):
    """Lightweight coreset: ``size`` samples drawn by importance, with unbiasing weights.

    Bachem, Lucic & Krause (2018), Algorithm 1, as used by vc-GMM (Hirschberger, Forster &
    Lücke, Sec. 3, Alg. 1 line 1). Two passes over the data: the (weighted) mean ``mu``, then
    the distances ``d(x, mu)`` and the distribution

    ``q(x) = 1/2 w(x) / sum_x' w(x') + 1/2 w(x) d(x, mu)^2 / sum_x' w(x') d(x', mu)^2``

    from which ``size`` samples are drawn independently, with replacement; each draw of ``x``
    carries the weight ``gamma(x) = w(x) / (size q(x))``. Identical draws are merged into one
    row whose weight is the sum of theirs, so no later step repeats work. For any fixed
    centres the weighted quantization error of the coreset is an unbiased estimate of the
    (weighted) quantization error of the data, and so is the total weight of the data's.

    Parameters
    ----------
    size : int or None, default=None
        Number of draws ``N'`` (the coreset size before merging), at least ``n_clusters``.
        ``None`` grows with the number of clusters: ``max(2**15, 32 * n_clusters)``
        (:func:`default_coreset_size`; the vc-GMM paper's ``2^15`` for up to about a
        thousand clusters, 32 draws per cluster beyond). A size of at least ``n_samples``
        clusters the full data instead (with a warning when the size was given).

    Notes
    -----
    Cost per fit: ``n_samples`` distance evaluations (to the mean; counted under
    ``cost_["reduction"]``) and ``O(n_samples n_features)`` time for the two passes, plus
    ``O(n_samples + size log size)`` for the draws. Memory: ``O(rows of a block)`` for ``q``
    and a copy of the ``<= size`` drawn rows. Reads ``state.random_state`` and
    ``state.config.n_threads``; keeps no state.

    The reduced data hold the distinct drawn samples in increasing order of their row index
    in the input; their number is at most ``size`` (``history_`` and the costs of the later
    steps refer to it). After the fit, :class:`~clusterkit.Clusterer` assigns the full
    training data once (``compute_labels=True``), so ``labels_`` and ``inertia_`` refer to
    all samples.

    Input weights ``w`` (the user's ``sample_weight``) enter the mean, both terms of ``q`` and
    the coreset weights; with unit weights ``q`` is the paper's
    ``1/(2N) + d(x, mu)^2 / (2 sum d^2)`` and ``gamma = 1 / (size q)``. A weight of 2
    gives a sample the probability and weight its two copies would have together.

    One sampler for every container. The data are read in row blocks: the chunks of a dask
    array, or, for a memmap and an in-memory array alike, fixed blocks of about 32 MiB (a
    shape- and dtype-dependent number of rows). Pass 1 gives every block's weight, mean and
    sum of squared deviations (float64), hence ``mu``, ``a``, ``b`` and each block's share of
    ``q``. ``size`` sorted uniforms drawn from ``random_state`` in the fitting process mark
    positions in the cumulative distribution; each block gets the offsets of the positions
    in its share, and pass 2 finds them in the cumulative sum of its rows' ``q`` (float64).
    A draw's row thus depends on the seed and the data only, not on where the blocks start:
    an array and a memmap of the same rows and weights give bit-identical coresets, a dask
    array the same rows for any chunking (weights equal up to the rounding of the per-block
    sums), and none depends on the number of threads or workers (:meth:`reduce_chunked`).

    Deviations: if fewer than ``n_clusters`` distinct samples are drawn (when ``size`` is
    close to ``n_clusters``, or few samples carry most of the weight), the draws are kept as
    separate rows, unmerged, with a ``RuntimeWarning``, so that the seeding still sees
    ``size`` rows.

    References
    ----------
    .. [1] O. Bachem, M. Lucic and A. Krause, "Scalable k-means clustering via lightweight
       coresets", KDD 2018, Algorithm 1.
    .. [2] F. Hirschberger, D. Forster and J. Lücke, "Accelerated training of large-scale
       Gaussian mixtures by a merger of sublinear approaches" (vc-GMM), Sec. 3 and Alg. 1.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import LWCS, FitState
    >>> X = np.random.RandomState(0).normal(size=(1000, 2))
    >>> state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0))
    >>> Xc, wc = LWCS(100).reduce(X, np.ones(1000), state)
    >>> len(Xc) <= 100, state.meter.cost["reduction"]
    (True, 1000)

    On a coreset, the vc-GMM E-step with a hard M-step is coreset var-k-means; ``labels_``
    and ``inertia_`` still refer to the full data:

    >>> from clusterkit import AFKMC2, Clusterer, PartialEStep
    >>> km = Clusterer(3, seed=AFKMC2(), reduce=LWCS(100), estep=PartialEStep(G=2),
    ...                random_state=0).fit(X)
    >>> km.labels_.shape
    (1000,)
    """

    chunked = True
    _parameter_constraints = {"size": [Interval(Integral, 1), None]}

    def __init__(self, size=None):
        self.size = size

    def _size(self, n_clusters):
        return default_coreset_size(n_clusters) if self.size is None else int(self.size)

    def max_rows(self, n_samples, n_clusters):
        """At most ``size`` rows (fewer when draws coincide), or all if ``size >= n_samples``."""
        return min(n_samples, self._size(n_clusters))

    def expected_rows(self, n_samples, n_clusters):
        """The distinct rows of ``m = size`` draws with replacement, at most ``N (1 - (1 -
        1/N)^m)``: a row drawn with probability ``q`` is drawn at least once with probability
        ``1 - (1 - q)^m``, concave in ``q``, so for any sampling distribution uniform draws
        give the most distinct rows. All ``N`` rows when ``size >= N`` (no reduction)."""
        size = self._size(n_clusters)
        if size >= n_samples:
            return n_samples
        return min(size, int(np.ceil(-n_samples * np.expm1(size * np.log1p(-1 / n_samples)))))

    def _validate(self, X, n_clusters, composition):
        """Check ``n_clusters <= size``; warn if ``size >= n_samples`` (no reduction then).

        Raises
        ------
        TypeError
            If ``size`` is neither an integer nor ``None``.
        ValueError
            If ``size < 1`` or ``size < n_clusters``.
        """
        if self.size is None:
            return
        size = int(self.size)
        if size < n_clusters:
            raise ValueError(f"LWCS size={size} must be >= n_clusters={n_clusters}.")
        if size >= X.shape[0]:
            warn(f"LWCS size={size} >= n_samples={X.shape[0]}; clustering the full "
                 "data instead.", RuntimeWarning)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The draws (sorted uniforms, rows, counts and distances, float64 or intp) and the
        sampler's per-block distances and cumulative sums (float64); none when ``size >=
        n_samples`` (no reduction)."""
        size = self._size(n_clusters)
        if size >= n_samples:
            return 0
        return size * 4 * 8 + n_samples * 2 * 8

    def reduce(self, X, sample_weight, state):
        """Return the coreset and its weights (see :meth:`DataReducer.reduce`).

        ``X`` and ``sample_weight`` are returned unchanged when ``size >= n_samples``.
        Otherwise the in-memory array is read in the fixed blocks a memmap of the same shape
        and dtype is read in, by the sampler of :meth:`reduce_chunked`.
        """
        size = self._size(state.config.n_clusters)
        if size >= X.shape[0]:
            return X, sample_weight
        data = MemmapChunks(X, sample_weight, state.config.n_threads, validated=True)
        return self._coreset(data, size, state)

    def reduce_chunked(self, data, state):
        """The coreset of data held in row chunks (see :meth:`DataReducer.reduce_chunked`).

        Pass 1 (``data.scan()``, run by the driver): every chunk's weight ``W_c``, weighted
        mean ``mu_c`` and ``M2_c = sum w ||x - mu_c||^2``, combined exactly into the mean
        ``mu``, ``S = sum w ||x - mu||^2``, ``a`` and ``b``, and every chunk's share of the
        mass, ``Q_c = a W_c + b S_c`` with ``S_c = M2_c + W_c ||mu_c - mu||^2``. In this
        process, ``size`` sorted uniforms from ``state.random_state``, scaled by ``sum Q``,
        are located in the cumulative shares; each chunk gets the offsets of its own draws
        into its share. Pass 2, on each chunk with draws: the cumulative mass of its rows
        locates the drawn rows; duplicates are merged and only the drawn rows, their counts
        and distances come back. A draw's row thus depends on ``random_state`` and the data
        only (up to the rounding of the cumulative sums), never on the chunking or the
        number of workers.

        ``data.n_samples <= size`` gathers all rows with their weights instead (no more
        rows than a coreset would have). Counts the distances of pass 2 (the rows of the
        chunks that drew: all rows unless a chunk gets no draw) under ``"reduction"``; the
        first pass's sums are not counted.
        """
        size = self._size(state.config.n_clusters)
        data.scan()
        if size >= data.shape[0]:
            return data.gather()
        return self._coreset(data, size, state)

    def _coreset(self, data, size, state):
        """The LWCS sampler of every container: draws, then merged rows and their weights."""
        X, counts, dist2, a, b = _sample(data, size, state)
        if len(counts) < state.config.n_clusters:
            warn(f"LWCS drew only {len(counts)} distinct samples for "
                 f"n_clusters={state.config.n_clusters} (size={size}); keeping the {size} "
                 "draws as separate rows. Use a larger size.", RuntimeWarning)
            X, dist2 = np.repeat(X, counts, axis=0), np.repeat(dist2, counts)
            counts = np.ones(size, dtype=np.intp)
        # gamma = w / (size q) = 1 / (size (a + b d2)): finite for every drawn row
        weights = (counts / (size * (a + b * dist2))).astype(data.dtype)
        return np.ascontiguousarray(X), weights
