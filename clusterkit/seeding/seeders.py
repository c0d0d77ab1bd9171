"""Seeders: how the initial centres are chosen. This module holds random rows, k-means++
and given centres, and the sampling helpers every seeder shares; AFK-MC² is in
:mod:`.afkmc2`, the seeders that delegate (on a sample, by dimension) in :mod:`.composite`.

All seeders draw their random numbers from ``state.random_state`` and leave the distance
computations to the kernels ``_kernels/_kmeanspp.pyx`` and ``_kernels/_afkmc2.pyx``; they
return centres that are rows of ``X`` (C-contiguous, ``X``'s dtype) and record their distance
evaluations under ``state.meter.cost["seeding"]``.
"""
import math
from numbers import Integral

import numpy as np

from .._data.sparse import CSR, DENSE, csr_arrays, dense_rows, kernels_for, row_sqnorms
from .._engine.constraints import Interval
from .._engine.contracts import Seeder, Seeding
from .._engine.warn import warn
from ..estep.pruning import principal_axes
from .._kernels import _kmeanspp, _sparse as _sparse_kernels

__all__ = ["RandomSeeder", "KMeansPlusPlus", "GivenCenters", "neighbour_entries"]


def _invert(cumsum, values):
    """Indices ``i`` with ``cumsum[i-1] <= value < cumsum[i]`` for values in [0, total).

    Rows whose mass is zero are never returned: ``side='right'`` skips them, and a value that
    rounding pushed up to the total gives the last row with positive mass instead of running
    off the end.
    """
    idx = np.searchsorted(cumsum, values, side="right")
    return np.minimum(idx, np.searchsorted(cumsum, cumsum[-1], side="left"))


def _draw(cumsum, u):
    """Rows drawn with probability proportional to their mass, from the mass's cumulative sum
    and uniforms ``u`` in [0, 1)."""
    return _invert(cumsum, u * cumsum[-1])


def _first_index(sample_weight, random_state):
    """Row drawn with probability proportional to its weight (uniformly if all are zero)."""
    cumsum = np.cumsum(sample_weight, dtype=np.float64)
    if not cumsum[-1] > 0:
        return int(random_state.randint(len(sample_weight)))
    return int(_draw(cumsum, random_state.uniform()))


def _sample_rows(sample_weight, size, random_state, proportional):
    """``size`` distinct row indices; rows with zero weight only when there are too few others.

    Without replacement, uniformly or (``proportional``) with probability proportional to the
    weight at each draw (numpy's sequential scheme).
    """
    positive = np.flatnonzero(sample_weight > 0)
    if len(positive) >= size:
        if not proportional:
            return random_state.choice(positive, size, replace=False)
        p = sample_weight[positive].astype(np.float64)
        p /= p.sum()
        if np.count_nonzero(p) >= size:
            return random_state.choice(positive, size, replace=False, p=p)
        # weights spanning more than float64's range: the same scheme, one draw at a time,
        # renormalised over the rows left (the small ones are then representable)
        chosen = np.empty(size, dtype=np.intp)
        for i in range(size):
            p = sample_weight[positive].astype(np.float64)
            j = random_state.choice(len(positive), p=p / p.sum())
            chosen[i], positive = positive[j], np.delete(positive, j)
        return chosen
    zero = np.flatnonzero(~(sample_weight > 0))
    extra = random_state.choice(zero, size - len(positive), replace=False)
    return np.concatenate([random_state.permutation(positive), extra])


class RandomSeeder(Seeder):
    """Initial centres drawn at random from the data.

    ``n_clusters`` distinct rows are drawn without replacement, each draw with probability
    proportional to the weight of the rows not drawn yet. The classic "Forgy" initialisation.

    Notes
    -----
    Cost per call: no distance evaluations; memory ``O(n_samples)`` for the draw. Rows with
    zero weight are chosen only when fewer than ``n_clusters`` rows have positive weight.
    Distinct rows can still be equal points if ``X`` has duplicates. Reads
    ``state.random_state``; keeps no state between fits.

    Examples
    --------
    >>> from clusterkit import Clusterer, RandomSeeder
    >>> X = [[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]]
    >>> Clusterer(2, seed=RandomSeeder(), random_state=0).fit(X).cost_["seeding"]
    0
    """

    accepts_sparse = True

    def seed(self, X, sample_weight, n_clusters, state):
        """Return ``n_clusters`` distinct rows of ``X`` (see :meth:`Seeder.seed`)."""
        idx = _sample_rows(sample_weight, n_clusters, state.random_state, proportional=True)
        return dense_rows(X, idx)


class KMeansPlusPlus(Seeder):
    """k-means++ seeding (D^2 sampling), greedy by default.

    The first centre is a row drawn with probability proportional to its weight; each further
    centre is drawn with probability proportional to ``w_n D(x_n)^2``, where ``D(x_n)`` is the
    distance to the nearest centre chosen so far (Arthur & Vassilvitskii, 2007, Sec. 2.2).
    In the greedy variant, ``n_local_trials`` candidates are drawn per step and the one that
    leaves the lowest weighted potential ``sum_n w_n D(x_n)^2`` is kept, as in scikit-learn.

    Parameters
    ----------
    n_local_trials : int or None, default=None
        Candidates per step. ``None`` means ``2 + int(log(n_clusters))`` (scikit-learn's greedy
        rule); ``1`` is plain k-means++.

    Notes
    -----
    The samples are kept grouped by nearest centre, and the triangle inequality rules out
    most distances: a sample ``x`` nearest to ``c_j`` cannot come closer to a new point ``c``
    unless ``d(c, c_j) < 2 D(x)``, so a candidate is only compared with the leading members
    of the few groups near it (Raff, 2021). The result is that of unpruned greedy k-means++
    with the same random draws (up to distances that tie within rounding); only the work
    shrinks. On well-separated clusters it shrinks by orders of magnitude, on
    high-dimensional data with little structure hardly at all. There, what remains is
    cheaper: a distance is only needed where it is below the sample's ``D^2``, so its sum
    stops once it reaches it, and rows of 64 features or more are seeded in a copy turned
    to their principal axes (the same distances up to rounding), where the first axes
    carry most of a distance (:func:`greedy_dense`).

    Cost per call with ``L`` candidates per step: at most ``(n_clusters - 1) (L + 1)
    n_samples`` sample distances (``(n_clusters - 1) n_samples`` for plain k-means++), plus
    each scored candidate's distances to the centres of nearby groups and each new centre's
    distances to the earlier ones (at most ``L n_clusters^2 / 2``); ``state.meter.cost["seeding"]``
    counts exactly what was computed, a distance whose sum stopped early as one. Memory
    ``O(n_samples + L n_clusters)`` (and from 64 features a copy of the rows) and the groups'
    neighbour lists, at most as many bytes as ``X`` has (at least 16 MiB; beyond, a list is
    rebuilt when a candidate needs it: the same result, more distances,
    :func:`neighbour_entries`), plus room for three copies of ``X`` (kept in group order) when its rows have at most 128 bytes (32
    float32 or 16 float64 features). Reads ``state.random_state`` and
    ``state.config.n_threads`` (the candidates are scored in parallel; the result does not
    depend on the thread count). Its :meth:`seeding` also gives each sample's nearest centre, which
    :class:`~clusterkit.PartialEStep` can start from (``None`` in the rare fallback below when
    it had to take rows of zero weight); keeps no state between fits.

    Deviations: if every remaining ``w_n D(x_n)^2`` is zero (fewer distinct points with
    positive weight than clusters), the remaining centres are drawn uniformly among the rows
    not chosen yet (rows with positive weight first) and a ``RuntimeWarning`` is emitted once.
    scikit-learn's greedy variant instead draws candidates from an all-zero distribution.

    References
    ----------
    D. Arthur and S. Vassilvitskii, "k-means++: the advantages of careful seeding", Proc. 18th
    ACM-SIAM Symposium on Discrete Algorithms (SODA), 2007.

    E. Raff, "Exact acceleration of k-means++ and k-means||", Proc. 30th International Joint
    Conference on Artificial Intelligence (IJCAI), 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import FitState, KMeansPlusPlus
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> state = FitState(n_clusters=2, n_features=2, random_state=np.random.RandomState(0))
    >>> seeding = KMeansPlusPlus(n_local_trials=1).seeding(X, np.ones(4), 2, state)
    >>> seeding.centers
    array([[10.,  0.],
           [ 0.,  1.]])
    >>> seeding.labels  # each sample's nearest centre
    array([1, 1, 0, 0], dtype=int32)
    >>> state.meter.cost["seeding"]  # 4 to the first centre, 1 between centres, 2 not ruled out
    7
    """

    accepts_sparse = True
    _parameter_constraints = {"n_local_trials": [Interval(Integral, 1), None]}

    def __init__(self, n_local_trials=None):
        self.n_local_trials = n_local_trials

    def _n_trials(self, n_clusters):
        if self.n_local_trials is None:
            return 2 + int(math.log(n_clusters))
        return int(self.n_local_trials)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return k-means++ centres (see :meth:`Seeder.seed`)."""
        return KMeansPlusPlus.seeding(self, X, sample_weight, n_clusters, state).centers

    def seeding(self, X, sample_weight, n_clusters, state):
        """k-means++ centres and each sample's nearest one (see :meth:`Seeder.seeding`)."""
        rs = state.random_state
        n_trials = self._n_trials(n_clusters)
        first = _first_index(sample_weight, rs)
        n_done = np.zeros(1, dtype=np.int64)  # the kernels count their centres in it
        state.meter.progress("seeding", n_done, n_clusters, "centres")
        kind = kernels_for(X)
        centers, chosen, labels, _, n_chosen = _GREEDY[kind](
            X, sample_weight, first, n_clusters, n_trials, rs, state, n_done)
        if n_chosen < n_clusters:
            # every remaining w D^2 is zero: no distances are needed any more
            warn(
                f"KMeansPlusPlus found only {n_chosen} distinct points with positive weight "
                f"for n_clusters={n_clusters}; the remaining {n_clusters - n_chosen} centres "
                "are drawn uniformly among the rows not chosen yet and may duplicate "
                "existing centres.", RuntimeWarning,
            )
            rows = list(chosen[:n_chosen])
            free = self._fallback_rows(sample_weight, rows)
            for i in range(n_chosen, n_clusters):
                if len(free) == 0:
                    free = self._fallback_rows(sample_weight, rows)
                j = rs.randint(len(free))
                rows.append(int(free[j]))
                free = np.delete(free, j)
                centers[i] = kind.dense_rows(X, [rows[-1]])[0]
            if not np.all(sample_weight[rows[n_chosen:]] > 0):
                # a zero-weight row became a centre: rows near it may now be labelled wrongly
                # (fallback centres with weight duplicate a centre, so they change no label)
                labels = None
        return Seeding(centers, labels)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The kernel's groups (see the Notes): per sample a label, ``D^2``, the members'
        index, ``D^2`` and weight with room for twice the samples and a buffer to compact
        them, short rows three times, from :data:`ROTATE_MIN_FEATURES` features on the
        rows in their principal frame, and the neighbour lists (:func:`neighbour_entries`)."""
        itemsize, n_trials = dtype.itemsize, self._n_trials(n_clusters)
        per_sample = 4 + itemsize + 2 * (4 + 3 * itemsize) + 4 + 2 * itemsize
        if n_features * itemsize <= _INLINE_MAX_ROW_BYTES:
            per_sample += 3 * n_features * itemsize
        if n_features >= ROTATE_MIN_FEATURES:  # (the rows in their principal frame)
            per_sample += n_features * itemsize
        # (the lists of all pairs of groups, with room to grow, unless the cap is lower)
        lists = min(neighbour_entries(n_samples, n_features, itemsize),
                    n_clusters * (n_clusters - 1) + 8 * n_clusters)
        return n_samples * per_sample + 12 * lists + n_clusters * n_trials * (8 + 3 * 8 + itemsize)

    @staticmethod
    def _fallback_rows(sample_weight, chosen):
        """Rows not chosen yet: those with positive weight, or all of them if none is left."""
        free = np.ones(len(sample_weight), dtype=bool)
        free[chosen] = False
        positive = free & (sample_weight > 0)
        return np.flatnonzero(positive if positive.any() else free)


#: The widest rows (bytes) the k-means++ kernel keeps in group order (``_kmeanspp_groups.pxd``).
_INLINE_MAX_ROW_BYTES = 128

#: The least memory the k-means++ kernel's neighbour lists may take, whatever the data.
NEIGHBOUR_MIN_BYTES = 16 << 20


def neighbour_entries(n_samples, n_features, itemsize):
    """The most entries (12 bytes each) the k-means++ kernel's neighbour lists may hold
    together: as many bytes as the rows take, at least :data:`NEIGHBOUR_MIN_BYTES`. Beyond,
    the kernel rebuilds a candidate's list from the centre distances when it needs it (the
    same result, more distances), so the seeding's memory stays ``O(n_samples n_features +
    L n_clusters)`` instead of growing as ``n_clusters^2``."""
    return max(n_samples * n_features * itemsize, NEIGHBOUR_MIN_BYTES) // 12


def greedy_dense(X, sample_weight, first, n_clusters, n_trials, random_state, state, n_done):
    """Greedy k-means++ on dense ``X`` from row ``first``, with ``n_trials`` candidates per
    step drawn from ``random_state`` (``(n_clusters - 1) n_trials`` uniforms in one call, so
    that a stream in the same state gives the same first centres for any ``n_clusters``);
    the distance evaluations are counted under
    ``state.meter.cost["seeding"]`` and the centres chosen so far written in ``n_done[0]``.

    Rows of :data:`ROTATE_MIN_FEATURES` features or more are seeded in a copy turned to
    their principal axes (:func:`principal_frame`): the same distances up to rounding, and
    the kernel's sums, which stop once a row cannot come closer, stop after the first axes.

    Returns ``(centers, chosen, labels, min_dist2, n_chosen)``: the centres (rows
    ``chosen`` of ``X``), each sample's nearest centre and squared distance to it, and the
    number of centres chosen (fewer than ``n_clusters`` if every ``w D^2`` became zero; only
    the first ``n_chosen`` centres are set). Assumes valid input.
    """
    rows = principal_frame(X) if X.shape[1] >= ROTATE_MIN_FEATURES else X
    centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    chosen = np.empty(n_clusters, dtype=np.int32)
    labels = np.empty(X.shape[0], dtype=np.int32)
    min_dist2 = np.empty(X.shape[0], dtype=X.dtype)
    uniforms = random_state.uniform(size=(n_clusters - 1, n_trials))
    n_chosen, n_evals = _kmeanspp.kmeanspp(rows, sample_weight, first, uniforms, centers,
                                          chosen, labels, min_dist2, state.config.n_threads, n_done,
                                          neighbour_entries(*X.shape, X.itemsize))
    state.meter.count("seeding", n_evals)
    if rows is not X:  # (the centres are the chosen rows as given)
        centers[:n_chosen] = X[chosen[:n_chosen]]
    return centers, chosen, labels, min_dist2, n_chosen


#: Greedy k-means++ seeds rows with this many features or more in their principal axes'
#: frame (:func:`greedy_dense`); below, the kernel's sums are too short to stop early.
ROTATE_MIN_FEATURES = 64


def principal_frame(X):
    """A copy of the dense rows ``X`` in the frame of their principal axes (leading axes
    first, :func:`~clusterkit.estep.pruning.principal_axes`): an orthogonal map, so every
    distance is the same up to rounding, while most of a distance between distant rows lies
    in its first coordinates. Costs a sample's covariance, ``D^3`` and ``N D^2`` flops."""
    axes = principal_axes(X, X.shape[1]).astype(X.dtype)
    return np.ascontiguousarray(X @ axes)


def _greedy_csr(X, sample_weight, first, n_clusters, n_trials, random_state, state, n_done):
    """:func:`greedy_dense` on CSR ``X``, with its signature and results but no labels or
    distances (``None``: nearest seeds are not tracked for sparse data)."""
    centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
    chosen = np.empty(n_clusters, dtype=np.int32)
    uniforms = random_state.uniform(size=(n_clusters - 1, n_trials))
    n_chosen, n_evals = _kmeanspp_sparse(X, sample_weight, first, uniforms, centers, chosen,
                                         state.config.n_threads, n_done)
    state.meter.count("seeding", n_evals)
    return centers, chosen, None, None, n_chosen


def _kmeanspp_sparse(X, sample_weight, first, uniforms, centers, chosen, n_threads, n_done):
    """Greedy k-means++ on CSR ``X``, drawing by the dense kernel's rule from the same uniforms
    (row ``first``, then candidates by the inverse cumulative sum of ``w D^2`` in row
    order: the same rows up to rounding), without its pruning. Each step scores its
    candidates with one kernel call that forms their ``D^2`` updates; the candidate with
    the lowest potential wins (the first on ties). Writes ``centers``, ``chosen`` and the
    count of centres chosen so far in ``n_done[0]``; returns the number of centres chosen
    (fewer if every ``w D^2`` became zero) and the distance evaluations."""
    n_samples = X.shape[0]
    arrays = csr_arrays(X)
    x_sqnorms = row_sqnorms(X, n_threads)
    weight = sample_weight.astype(np.float64)
    centers[0] = CSR.dense_rows(X, [first])[0]
    chosen[0] = first
    min_dist2 = np.full(n_samples, np.inf, dtype=X.dtype)
    n_evals = _sparse_kernels.d2_update_sparse(*arrays, x_sqnorms, centers[:1], min_dist2,
                                               min_dist2[None], n_threads)
    for i in range(1, centers.shape[0]):
        cumsum = np.cumsum(weight * min_dist2, dtype=np.float64)
        if not cumsum[-1] > 0:
            return i, n_evals
        candidates = _draw(cumsum, uniforms[i - 1])
        rows = CSR.dense_rows(X, candidates)
        trial_dist2 = np.empty((len(candidates), n_samples), dtype=X.dtype)
        n_evals += _sparse_kernels.d2_update_sparse(*arrays, x_sqnorms, rows, min_dist2,
                                                    trial_dist2, n_threads)
        best = int(np.argmin(trial_dist2.astype(np.float64, copy=False) @ weight))
        centers[i] = rows[best]
        chosen[i] = candidates[best]
        min_dist2 = trial_dist2[best].copy()
        n_done[0] = i + 1
    return centers.shape[0], n_evals


#: Greedy k-means++ on each kind of rows.
_GREEDY = {DENSE: greedy_dense, CSR: _greedy_csr}


class _InnerSeeder(Seeder):
    """A seeder that runs another one, ``seeder`` (``None``: :class:`KMeansPlusPlus`), on
    the rows it chooses; it takes sparse rows if that one does."""

    #: The seeders the error names for sparse rows the inner seeder refuses.
    _sparse_seeders = "KMeansPlusPlus"

    def _inner(self):
        return KMeansPlusPlus() if self.seeder is None else self.seeder

    def _validate(self, X, n_clusters, composition):
        inner = self._inner()
        if kernels_for(X).refuses(inner):
            raise TypeError(f"{type(self).__name__}'s seeder {type(inner).__name__} cannot "
                            f"take sparse X; use {self._sparse_seeders}, or pass X.toarray().")
        inner._validate(X, n_clusters, composition)


class GivenCenters(Seeder):
    """The initial centres the user gave (``Clusterer(seed=array)``), in the user's
    coordinates until :meth:`in_frame` moves them into the fit's."""

    accepts_sparse = True
    given = True
    reads_chunks = True  # (no row is read)

    def __init__(self, centers):
        self.centers = centers

    def in_frame(self, x_mean):
        return self if x_mean is None else GivenCenters(self.centers - x_mean)

    def seed(self, X, sample_weight, n_clusters, state):
        return self.centers
