"""Data reducers: replace the data by a smaller weighted set before clustering."""
import warnings

import numpy as np

from ._base import DataReducer
from ._kernels._kmeanspp import d2_update
from ._seeding import _draw
from ._validation import check_int

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

    def reduce(self, X, sample_weight, state):
        """Return ``X`` and ``sample_weight`` themselves (see :meth:`DataReducer.reduce`)."""
        return X, sample_weight


def _sensitivity(X, sample_weight, n_threads):
    """The LWCS sampling distribution (two passes over the data).

    Bachem, Lucic & Krause (2018), Alg. 1, with input weights ``w``: the weighted mean ``mu``,
    then ``d2_n = ||x_n - mu||^2`` and

    ``q_n = w_n (a + b d2_n)`` with ``a = 1/2 / sum w`` and ``b = 1/2 / sum_m w_m d2_m``,

    so that the coreset weight of one draw of sample ``n`` out of ``size`` is
    ``w_n / (size q_n) = 1 / (size (a + b d2_n))``. If every sample with positive weight sits
    on the mean, ``b = 0`` and ``q`` is the weight distribution. Private helper: assumes valid
    input (weights non-negative, not all zero).

    Returns
    -------
    q : ndarray of shape (n_samples,), dtype=float64
        Sampling probabilities (they sum to one up to rounding; zero where ``w_n = 0``).
    d2 : ndarray of shape (n_samples,), dtype=float64
        Squared distances to the mean.
    a, b : float
        The two coefficients above.
    n_distance_evals : int
        ``n_samples`` (the distances to the mean).
    """
    total = float(sample_weight.sum(dtype=np.float64))
    # Pass 1. Any mean keeps the estimate unbiased (the weights are w / (size q) for whatever
    # q > 0), so a gemv in the data's dtype is enough; a float64 copy of X would cost more
    # than both passes.
    mu = ((sample_weight @ X).astype(np.float64) / total).astype(X.dtype)
    # Pass 2: the distances to the mean (direct loop, exact zero on the mean).
    d2 = np.full(X.shape[0], np.inf, dtype=X.dtype)
    n_evals = d2_update(X, mu, d2, n_threads)
    d2 = d2.astype(np.float64)
    spread = float(np.dot(sample_weight.astype(np.float64, copy=False), d2))
    a, b = _coefficients(total, spread)
    q = d2 * b
    q += a
    q *= sample_weight
    return q, d2, a, b, n_evals


def _coefficients(total, spread):
    """LWCS's ``a = 1/2 / sum w`` and ``b = 1/2 / sum w d2`` (``a = 1 / sum w``, ``b = 0``
    when every sample with weight sits on the mean)."""
    if spread > 0:
        return 0.5 / total, 0.5 / spread
    return 1.0 / total, 0.0


def _draw_chunk(X, sample_weight, mean, a, b, n_draws, seed, expected, n_threads):
    """LWCS's second pass on one chunk of rows: ``n_draws`` draws inside the chunk.

    ``q_n = w_n (a + b d2_n)`` with ``d2_n = ||x_n - mean||^2`` (as :func:`_sensitivity`
    computes it, in the data's dtype); the draws are independent, with replacement, with
    probability ``q_n / Q'_c`` (``Q'_c = sum_{n in c} q_n``), from a generator seeded with
    ``seed`` only. A row drawn this way is expected ``expected q_n / Q'_c`` times
    (``expected = size Q_c / sum Q``, the chunk's share of the draws in the client's
    multinomial split), so one draw weighs ``w_n Q'_c / (expected q_n) =
    Q'_c / (expected (a + b d2_n))``: unbiased for the sampling actually done, even where
    ``Q'_c`` and the first pass's ``Q_c`` differ by rounding (in exact arithmetic the weight
    is the in-memory ``1 / (size (a + b d2_n))``). Private helper: assumes valid input.

    Returns
    -------
    X_drawn : ndarray of shape (n_distinct, n_features)
        The distinct drawn rows, in increasing row order.
    counts : ndarray of shape (n_distinct,), dtype=intp
        Draws of each.
    unit_weight : ndarray of shape (n_distinct,), dtype=float64
        The weight of one draw of each.
    n_distance_evals : int
        Rows of the chunk (their distances to the mean).
    """
    d2 = np.full(X.shape[0], np.inf, dtype=X.dtype)
    n_evals = d2_update(X, mean, d2, n_threads)
    coef = d2.astype(np.float64)
    coef *= b
    coef += a
    cumsum = np.cumsum(coef if sample_weight is None else coef * sample_weight)
    uniforms = np.sort(np.random.default_rng(seed).random(n_draws))
    rows, counts = np.unique(_draw(cumsum, uniforms), return_counts=True)
    return X[rows], counts, cumsum[-1] / (expected * coef[rows]), n_evals


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
    >>> from clusterkit.presets import default_coreset_size
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
    ``O(n_samples + size log n_samples)`` for the draws. Memory: ``O(n_samples)`` for ``q``
    and a copy of the ``<= size`` drawn rows. Reads ``state.random_state`` and
    ``state.n_threads``; keeps no state.

    The reduced data hold the distinct drawn samples in increasing order of their row index
    in the input; their number is at most ``size`` (``history_`` and the costs of the later
    steps refer to it). After the fit, :class:`~clusterkit.Clusterer` assigns the full
    training data once (``compute_labels=True``), so ``labels_`` and ``inertia_`` refer to
    all samples.

    Input weights ``w`` (the user's ``sample_weight``) enter the mean, both terms of ``q`` and
    the coreset weights; with unit weights ``q`` is the paper's
    ``1/(2N) + d(x, mu)^2 / (2 sum d^2)`` and ``gamma = 1 / (size q)``. A weight of 2
    gives a sample the probability and weight its two copies would have together.

    On data in row chunks (a dask array, a memmap: :attr:`chunked` is ``True``),
    :meth:`reduce_chunked` draws from the same ``q`` in two passes that are sums over the
    chunks, splitting the draws over the chunks by their shares of ``q``; only the coreset
    reaches the fitting process, and it depends on ``random_state`` and the chunking, not on
    the number of workers (a different coreset than :meth:`reduce` draws from the same seed).

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
    >>> len(Xc) <= 100, state.cost["reduction"]
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

    def __init__(self, size=None):
        self.size = size

    def _size(self, n_clusters):
        return default_coreset_size(n_clusters) if self.size is None else int(self.size)

    def max_rows(self, n_samples, n_clusters):
        """At most ``size`` rows (fewer when draws coincide), or all if ``size >= n_samples``."""
        return min(n_samples, self._size(n_clusters))

    def _validate(self, X, n_clusters, composition):
        """Check ``n_clusters <= size``; warn if ``size >= n_samples`` (no reduction then).

        Raises
        ------
        TypeError
            If ``size`` is not an integer.
        ValueError
            If ``size < 1`` or ``size < n_clusters``.
        """
        if self.size is None:
            return
        size = check_int(self.size, "size", minimum=1)
        if size < n_clusters:
            raise ValueError(f"LWCS size={size} must be >= n_clusters={n_clusters}.")
        if size >= X.shape[0]:
            warnings.warn(f"LWCS size={size} >= n_samples={X.shape[0]}; clustering the full "
                          "data instead.", RuntimeWarning, stacklevel=2)

    def reduce(self, X, sample_weight, state):
        """Return the coreset and its weights (see :meth:`DataReducer.reduce`).

        ``X`` and ``sample_weight`` are returned unchanged when ``size >= n_samples``.
        """
        n_samples = X.shape[0]
        size = self._size(state.n_clusters)
        if size >= n_samples:
            return X, sample_weight
        q, d2, a, b, n_evals = _sensitivity(X, sample_weight, state.n_threads)
        state.count("reduction", n_evals)
        cumsum = np.cumsum(q)
        # inverse-CDF draws (never a row with q = 0); sorted targets make the lookups
        # cache-friendly
        idx = _draw(cumsum, np.sort(state.random_state.uniform(size=size)))
        rows, counts = np.unique(idx, return_counts=True)
        if len(rows) < state.n_clusters:
            warnings.warn(f"LWCS drew only {len(rows)} distinct samples for "
                          f"n_clusters={state.n_clusters} (size={size}); keeping the {size} "
                          "draws as separate rows. Use a larger size.", RuntimeWarning,
                          stacklevel=2)
            rows, counts = np.sort(idx), np.ones(size, dtype=np.intp)
        # gamma = w / (size q) = 1 / (size (a + b d2)): finite for every drawn row
        weights = (counts / (size * (a + b * d2[rows]))).astype(X.dtype)
        return np.ascontiguousarray(X[rows]), weights

    def reduce_chunked(self, data, state):
        """The coreset of data held in row chunks (see :meth:`DataReducer.reduce_chunked`).

        The same distribution ``q`` as :meth:`reduce`, in two passes that are sums over
        chunks. Pass 1 (``data.scan()``, run by the driver): every chunk's weight ``W_c``,
        weighted mean ``mu_c`` and ``M2_c = sum w ||x - mu_c||^2``, combined exactly into the
        mean ``mu``, ``S = sum w ||x - mu||^2``, ``a`` and ``b``, and every chunk's share of
        ``q``, ``Q_c = a W_c + b S_c`` with ``S_c = M2_c + W_c ||mu_c - mu||^2``. In this
        process, ``size`` draws are split over the chunks by one multinomial draw with
        probabilities ``Q_c / sum Q`` from ``state.random_state``, which also gives the
        entropy of a :class:`numpy.random.SeedSequence` spawning one generator per chunk.
        Pass 2, on each chunk with draws: the distances to ``mu``, then that many draws
        inside the chunk with its generator; duplicates are merged and only the drawn rows
        and their weights come back. The coreset therefore depends on ``random_state`` and
        the chunking only, never on the number of workers or the order they finish in.

        ``data.n_samples <= size`` gathers all rows with their weights instead (no more
        rows than a coreset would have). Counts the distances of pass 2 (the rows of the
        chunks that drew) under ``"reduction"``, as :meth:`reduce` counts its ``n_samples``;
        the first pass's sums are not counted, as :meth:`reduce`'s mean is not.
        """
        n_samples = data.shape[0]
        size = self._size(state.n_clusters)
        moments = data.scan()
        if size >= n_samples:
            return data.gather()
        a, b = _coefficients(moments.total_weight, moments.spread)
        shares = a * moments.weight + b * moments.chunk_spread
        shares /= shares.sum()
        draws = state.random_state.multinomial(size, shares)
        entropy = [int(e) for e in state.random_state.randint(
            np.iinfo(np.int64).max, size=4, dtype=np.int64)]
        seeds = np.random.SeedSequence(entropy).spawn(data.n_chunks)
        mean = moments.global_mean.astype(data.dtype)
        chunks = np.flatnonzero(draws)
        parts = data.map_chunks(
            _draw_chunk, [(mean, a, b, int(draws[c]), seeds[c], size * float(shares[c]),
                           data.n_threads) for c in chunks], chunks)
        state.count("reduction", sum(part[3] for part in parts))
        X = np.concatenate([part[0] for part in parts])
        counts = np.concatenate([part[1] for part in parts])
        unit_weight = np.concatenate([part[2] for part in parts])
        if len(counts) < state.n_clusters:
            warnings.warn(f"LWCS drew only {len(counts)} distinct samples for "
                          f"n_clusters={state.n_clusters} (size={size}); keeping the {size} "
                          "draws as separate rows. Use a larger size.", RuntimeWarning,
                          stacklevel=2)
            return (np.repeat(X, counts, axis=0),
                    np.repeat(unit_weight, counts).astype(data.dtype))
        return X, (counts * unit_weight).astype(data.dtype)
