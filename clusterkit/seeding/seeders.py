"""Seeders: how the initial centres are chosen.

All seeders draw their random numbers from ``state.random_state`` and leave the distance
computations to the kernels ``_kernels/_kmeanspp.pyx`` and ``_kernels/_afkmc2.pyx``; they
return centres that are rows of ``X`` (C-contiguous, ``X``'s dtype) and record their distance
evaluations under ``state.cost["seeding"]``.
"""
import functools
import math

import numpy as np

from .._engine.contracts import Seeder
from .._data.sparse import csr_arrays, dense_rows, is_sparse, row_sqnorms
from .._estimator.validation import check_choice, check_int
from .._kernels import _afkmc2, _kmeanspp
from .._kernels import _sparse as _sparse_kernels
from .._engine.warn import warn

__all__ = ["RandomSeeder", "KMeansPlusPlus", "AFKMC2", "SampledSeeder", "ByDimension",
           "GivenCenters"]


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
    >>> import numpy as np
    >>> from clusterkit import FitState, RandomSeeder
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> state = FitState(n_clusters=2, n_features=2, random_state=np.random.RandomState(0))
    >>> RandomSeeder().seed(X, np.ones(4), 2, state).shape
    (2, 2)
    >>> state.cost["seeding"]
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
    high-dimensional data with little structure hardly at all.

    Cost per call with ``L`` candidates per step: at most ``(n_clusters - 1) (L + 1)
    n_samples`` sample distances (``(n_clusters - 1) n_samples`` for plain k-means++), plus
    each scored candidate's distances to the centres of nearby groups and each new centre's
    distances to the earlier ones (at most ``L n_clusters^2 / 2``); ``state.cost["seeding"]``
    counts exactly what was computed. Memory ``O(n_samples + L n_clusters)``, plus room for
    three copies of ``X`` (kept in group order) when its rows have at most 128 bytes (32
    float32 or 16 float64 features). Reads ``state.random_state`` and
    ``state.n_threads`` (the candidates are scored in parallel; the result does not depend on
    the thread count). Sets ``state.seed_labels`` to each sample's nearest centre, which
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
    >>> KMeansPlusPlus(n_local_trials=1).seed(X, np.ones(4), 2, state)
    array([[10.,  0.],
           [ 0.,  1.]])
    >>> state.seed_labels  # each sample's nearest centre
    array([1, 1, 0, 0], dtype=int32)
    >>> state.cost["seeding"]  # 4 to the first centre, 1 between centres, 2 not ruled out
    7
    """

    accepts_sparse = True

    def __init__(self, n_local_trials=None):
        self.n_local_trials = n_local_trials

    def _validate(self, X, n_clusters, composition):
        check_int(self.n_local_trials, "n_local_trials", 1, allow_none=True)

    def _n_trials(self, n_clusters):
        if self.n_local_trials is None:
            return 2 + int(math.log(n_clusters))
        return int(self.n_local_trials)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return k-means++ centres (see :meth:`Seeder.seed`); sets ``state.seed_labels``."""
        rs = state.random_state
        n_trials = self._n_trials(n_clusters)
        first = _first_index(sample_weight, rs)
        centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
        chosen = np.empty(n_clusters, dtype=np.int32)
        labels = np.empty(X.shape[0], dtype=np.int32)
        min_dist2 = np.empty(X.shape[0], dtype=X.dtype)
        uniforms = rs.uniform(size=(n_clusters - 1, n_trials))
        n_done = np.zeros(1, dtype=np.int64)  # the kernels count their centres in it
        state.progress("seeding", n_done, n_clusters, "centres")
        if is_sparse(X):
            n_chosen, n_evals = _kmeanspp_sparse(X, sample_weight, first, uniforms, centers,
                                                 chosen, state.n_threads, n_done)
            labels = None  # (nearest seeds are not tracked for sparse data)
        else:
            n_chosen, n_evals = _kmeanspp.kmeanspp(X, sample_weight, first, uniforms, centers,
                                                  chosen, labels, min_dist2, state.n_threads,
                                                  n_done)
        state.count("seeding", n_evals)
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
                centers[i] = dense_rows(X, [rows[-1]])[0]
            if not np.all(sample_weight[rows[n_chosen:]] > 0):
                # a zero-weight row became a centre: rows near it may now be labelled wrongly
                # (fallback centres with weight duplicate a centre, so they change no label)
                labels = None
        state.seed_labels = labels
        return centers

    @staticmethod
    def _fallback_rows(sample_weight, chosen):
        """Rows not chosen yet: those with positive weight, or all of them if none is left."""
        free = np.ones(len(sample_weight), dtype=bool)
        free[chosen] = False
        positive = free & (sample_weight > 0)
        return np.flatnonzero(positive if positive.any() else free)


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
    centers[0] = dense_rows(X, [first])[0]
    chosen[0] = first
    min_dist2 = np.full(n_samples, np.inf, dtype=X.dtype)
    n_evals = _sparse_kernels.d2_update_sparse(*arrays, x_sqnorms, centers[:1], min_dist2,
                                               min_dist2[None], n_threads)
    for i in range(1, centers.shape[0]):
        cumsum = np.cumsum(weight * min_dist2, dtype=np.float64)
        if not cumsum[-1] > 0:
            return i, n_evals
        candidates = _draw(cumsum, uniforms[i - 1])
        rows = dense_rows(X, candidates)
        trial_dist2 = np.empty((len(candidates), n_samples), dtype=X.dtype)
        n_evals += _sparse_kernels.d2_update_sparse(*arrays, x_sqnorms, rows, min_dist2,
                                                    trial_dist2, n_threads)
        best = int(np.argmin(trial_dist2.astype(np.float64, copy=False) @ weight))
        centers[i] = rows[best]
        chosen[i] = candidates[best]
        min_dist2 = trial_dist2[best].copy()
        n_done[0] = i + 1
    return centers.shape[0], n_evals


#: Rounds of new chains for centres that repeat another (:meth:`AFKMC2._redraw_duplicates`).
_DUPLICATE_REDRAWS = 5


class AFKMC2(Seeder):
    """Assumption-free K-MC^2: k-means++ seeding approximated by Markov chains, greedy by
    default.

    The first centre ``c_1`` is drawn proportionally to the weights. The proposal
    ``q(x) = 1/2 w(x) d(x, c_1)^2 / sum_x' w(x') d(x', c_1)^2 + 1/2 w(x) / sum_x' w(x')`` is
    computed once. Each further centre is the end of a Metropolis-Hastings chain of
    ``chain_length`` candidates drawn i.i.d. from ``q`` whose stationary distribution is the
    k-means++ distribution ``w(x) D(x)^2`` (Bachem et al., 2016, Algorithm 1, with weights).
    In the greedy variant each step runs ``n_candidates`` independent chains and keeps the
    final state that lowers the potential ``sum_x w(x) D(x)^2`` most, as scikit-learn's
    greedy k-means++ does with its candidates; the potential is estimated on a fixed sample
    of the data whose ``D^2`` is kept up to date.

    Parameters
    ----------
    chain_length : int or "auto", default="auto"
        Candidates per chain ``m`` (the first is accepted unconditionally, so a chain makes
        ``m - 1`` Metropolis-Hastings steps). ``"auto"`` means ``200 // L``: 200 for plain
        AFK-MC^2 (the reference code's default), and the same number of candidates per
        centre, split among the chains, when greedy.
    n_candidates : int or "auto", default="auto"
        Chains per centre ``L``. ``"auto"`` means ``2 + int(log(n_clusters))`` (scikit-learn's
        greedy rule); ``1`` is the paper's plain AFK-MC^2.
    potential_sample : int, "auto" or "all", default="auto"
        Rows on which the greedy variant estimates the potential: ``"all"`` rows with their
        weights, or a sample of that many draws. ``"auto"`` means all rows up to
        ``max(8 * n_clusters, 4096)`` of them, a sample of that size above. Unused when
        ``n_candidates=1``.

    Notes
    -----
    Cost per call with ``L`` chains: ``n_samples + L * chain_length * n_clusters *
    (n_clusters - 1) / 2`` distance evaluations (the proposal, then each candidate for centre
    ``i`` against the ``i`` centres before it), plus, if ``L > 1``, ``L * s`` per centre
    for the potentials on ``s`` sample rows (the chosen candidate's distances update the
    sample's ``D^2``); nothing beyond the first draw when ``n_clusters == 1``. Sublinear in
    ``n_samples`` after the proposal when the sample is. Memory ``O(n_samples + n_clusters *
    (L * chain_length + n_features) + L * s)``: all candidates and uniforms are drawn up
    front. Reads ``state.random_state`` and ``state.n_threads``; keeps no state between
    fits. The result does not depend on the thread count.

    The potential sample: ``s`` rows drawn with replacement with probability proportional to
    their weight, each distinct row weighted by how often it was drawn. Its weighted
    potential is an unbiased estimate of the data's (up to the total weight), and a weight
    of ``k`` draws like ``k`` copies of a row, so weights stay equivalent to repetition in
    distribution. With ``n_candidates=1`` the random draws, centres and counts are those of
    plain AFK-MC^2.

    Deviations: if ``d(x, c_1) = 0`` for every row with positive weight the proposal is the
    weight distribution alone. A chain whose candidates all coincide with existing centres
    would return a duplicate centre (with short chains and many centres, a few per seeding);
    such centres are redrawn after the others by new plain chains from the proposal without
    the rows already chosen (up to five rounds, counted in the cost). Only duplicates that
    remain (fewer distinct points with positive weight than clusters) are kept, with a
    ``RuntimeWarning``.
    The greedy variant is not in the paper; the documentation's page on the defaults has
    the measurements behind the default.

    References
    ----------
    O. Bachem, M. Lucic, S. H. Hassani and A. Krause, "Fast and provably good seedings for
    k-means", Advances in Neural Information Processing Systems 29 (NIPS), 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import AFKMC2, FitState
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> state = FitState(n_clusters=2, n_features=2, random_state=np.random.RandomState(0))
    >>> AFKMC2(chain_length=5, n_candidates=1).seed(X, np.ones(4), 2, state).shape
    (2, 2)
    >>> state.cost["seeding"]  # 4 for the proposal, 5 candidates against 1 centre
    9
    >>> state = FitState(n_clusters=2, n_features=2, random_state=np.random.RandomState(0))
    >>> AFKMC2(chain_length=5, n_candidates=2).seed(X, np.ones(4), 2, state).shape
    (2, 2)
    >>> state.cost["seeding"]  # 4 + 2 chains of 5, their ends against the centre and some rows
    20
    """

    def __init__(self, chain_length="auto", n_candidates="auto", potential_sample="auto"):
        self.chain_length = chain_length
        self.n_candidates = n_candidates
        self.potential_sample = potential_sample

    def _validate(self, X, n_clusters, composition):
        if isinstance(self.chain_length, str):
            check_choice(self.chain_length, "chain_length", ("auto",))
        else:
            check_int(self.chain_length, "chain_length", 1)
        if isinstance(self.n_candidates, str):
            check_choice(self.n_candidates, "n_candidates", ("auto",))
        else:
            check_int(self.n_candidates, "n_candidates", 1)
        if isinstance(self.potential_sample, str):
            check_choice(self.potential_sample, "potential_sample", ("auto", "all"))
        else:
            check_int(self.potential_sample, "potential_sample", 1)

    def _n_chains(self, n_clusters):
        if self.n_candidates == "auto":
            return 2 + int(math.log(n_clusters))
        return int(self.n_candidates)

    def _chain_length(self, n_chains):
        if self.chain_length == "auto":
            return max(1, 200 // n_chains)
        return int(self.chain_length)

    def _sample_size(self, n_samples, n_clusters):
        """Draws of the potential sample, or ``None`` for all rows."""
        if self.potential_sample == "all":
            return None
        if self.potential_sample == "auto":
            size = max(8 * n_clusters, 4096)
            return None if n_samples <= size else size
        return int(self.potential_sample)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return AFK-MC^2 centres (see :meth:`Seeder.seed`)."""
        rs, n_threads = state.random_state, state.n_threads
        n_samples = X.shape[0]
        n_chains = self._n_chains(n_clusters)
        m = self._chain_length(n_chains)
        first = _first_index(sample_weight, rs)
        if n_clusters == 1:
            return np.ascontiguousarray(X[[first]])
        d2 = np.full(n_samples, np.inf, dtype=X.dtype)
        state.count("seeding", _kmeanspp.d2_update(X, X[first], d2, n_threads))
        w = sample_weight.astype(np.float64)
        if not w.sum() > 0:
            w = np.ones(n_samples)
        wd2 = w * d2
        q = 0.5 * w / w.sum()
        if wd2.sum() > 0:
            q += 0.5 * wd2 / wd2.sum()
        else:
            q *= 2
        # each step's chains side by side: with one chain, the draws of plain AFK-MC^2
        size = (n_clusters - 1, n_chains * m)
        candidates = _draw(np.cumsum(q), rs.uniform(size=size)).astype(np.int32)
        uniforms = rs.uniform(size=size)
        centers = np.empty((n_clusters, X.shape[1]), dtype=X.dtype)
        chosen = np.empty(n_clusters, dtype=np.int32)
        if n_chains == 1:
            run = functools.partial(_afkmc2.afkmc2_chain, X, sample_weight, q, first,
                                    candidates, uniforms, centers, chosen, n_threads)
        else:
            X_pot, w_pot, pot_dist2 = self._potential_sample(X, sample_weight, w, d2,
                                                             n_clusters, rs)
            pot_labels = np.zeros(len(X_pot), dtype=np.int32)  # all nearest to the first
            run = functools.partial(_afkmc2.afkmc2_greedy, X, sample_weight, q, first,
                                    candidates, uniforms, n_chains, X_pot, w_pot, pot_dist2,
                                    pot_labels, centers, chosen, n_threads)
        # the chains in about 20 slices of equal work (centre i costs i), each a whole number
        # of the kernel's 32-centre blocks, with progress reported after each
        bounds = sorted({1 + 32 * int(n_clusters * math.sqrt(k / 20) // 32)
                         for k in range(1, 20)} | {1, n_clusters})
        for begin, end in zip(bounds[:-1], bounds[1:]):
            state.count("seeding", run(begin, end))
            state.progress("seeding", end, n_clusters, "centres")
        self._redraw_duplicates(X, sample_weight, q, centers, chosen, m, state)
        n_duplicates = n_clusters - len(np.unique(centers, axis=0))
        if n_duplicates:
            warn(
                f"AFKMC2 chose {n_duplicates} duplicate centre(s) for n_clusters={n_clusters}: "
                "there are fewer distinct points with positive weight, or the chains of "
                f"chain_length={m} found no new point; the duplicates are kept.",
                RuntimeWarning,
            )
        return centers

    def _redraw_duplicates(self, X, sample_weight, q, centers, chosen, m, state):
        """Replace centres that repeat an earlier one by new chains of ``m`` candidates, in
        up to :data:`_DUPLICATE_REDRAWS` rounds (in place in ``centers`` and ``chosen``).

        A chain returns a chosen point only when all its candidates are chosen points (their
        target ``D^2`` is zero, so any other candidate replaces them); with short chains and
        many centres that happens a few times per seeding. A repeated centre adds nothing
        to the chains after it (it lowers no ``D^2``), so it can be redrawn last: plain
        AFK-MC^2 steps against all the other centres, from the proposal without the rows
        chosen so far (renormalised, and so what the acceptance ratios use). Nothing is
        drawn when there is no duplicate.
        """
        n_clusters = len(centers)
        for _ in range(_DUPLICATE_REDRAWS):
            _, first_seen = np.unique(centers, axis=0, return_index=True)
            if len(first_seen) == n_clusters:
                return
            q_free = q.copy()
            q_free[chosen] = 0.0
            if not q_free.sum() > 0:
                return  # every row with positive weight is a centre already
            repeated = np.setdiff1d(np.arange(n_clusters), first_seen)
            order = np.concatenate([np.sort(first_seen), repeated])
            kept = len(first_seen)
            work_centers = np.ascontiguousarray(centers[order])
            work_chosen = np.ascontiguousarray(chosen[order])
            candidates = np.zeros((n_clusters - 1, m), dtype=np.int32)
            uniforms = np.zeros((n_clusters - 1, m))
            candidates[kept - 1:] = _draw(np.cumsum(q_free),
                                          state.random_state.uniform(size=(len(repeated), m)))
            uniforms[kept - 1:] = state.random_state.uniform(size=(len(repeated), m))
            state.count("seeding", _afkmc2.afkmc2_chain(
                X, sample_weight, q_free, int(work_chosen[0]), candidates, uniforms,
                work_centers, work_chosen, state.n_threads, kept, n_clusters))
            centers[repeated] = work_centers[kept:]
            chosen[repeated] = work_chosen[kept:]

    def _potential_sample(self, X, sample_weight, w, d2, n_clusters, rs):
        """Rows, weights and ``D^2`` (to the first centre, from the proposal's pass) of the
        potential sample."""
        size = self._sample_size(X.shape[0], n_clusters)
        if size is None:
            return X, sample_weight, d2.copy()
        # draws in proportion to weight, with replacement: weights act as repetitions
        rows, counts = np.unique(_draw(np.cumsum(w), rs.uniform(size=size)),
                                 return_counts=True)
        return np.ascontiguousarray(X[rows]), counts.astype(X.dtype), d2[rows]


class SampledSeeder(Seeder):
    """Run another seeder on a random subsample of the data.

    A uniform sample of ``size`` rows (without replacement, among rows with positive weight)
    keeps its rows' weights, rescaled so that the sample's total weight equals the data's; the
    inner seeder runs on that sample and its centres are returned. Greedy k-means++ on a
    sample of ``20 * n_clusters`` rows is a cheap, strong seeding when there are many clusters.

    Parameters
    ----------
    seeder : Seeder or None, default=None
        The seeder run on the sample; ``None`` means ``KMeansPlusPlus()`` (greedy).
    size : int or None, default=None
        Rows in the sample; ``None`` means ``min(n_samples, max(20 * n_clusters, 10_000))``.
        A size of at least ``n_samples`` runs the inner seeder on all the data.

    Notes
    -----
    Cost per call: whatever the inner seeder counts on ``size`` rows, e.g.
    ``(n_clusters - 1) * (L + 1) * size`` distance evaluations for greedy k-means++ with
    ``L`` candidates per step. Memory: a copy of the sample, ``O(size * n_features)``.
    Reads ``state.random_state`` (the sample is drawn first, then the inner seeder draws from
    the same stream); keeps no state between fits.

    Why uniform sampling with the original weights: weighted sums over the sample, rescaled
    by the total weight, are unbiased estimates of the sums over the data (k-means++ is
    invariant to scaling all weights, so the rescaling only keeps totals meaningful). Sampling
    proportionally to weight *and* keeping the weights would count every weight twice, and
    sampling without replacement proportionally to weight with unit weights is biased for
    heavy rows (each can appear at most once). With unit weights all choices coincide. Rows
    with zero weight are sampled only when fewer than ``n_clusters`` rows have positive weight.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import FitState, KMeansPlusPlus, SampledSeeder
    >>> X = np.arange(40.0).reshape(20, 2)
    >>> state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0))
    >>> seeder = SampledSeeder(KMeansPlusPlus(n_local_trials=1), size=10)
    >>> seeder.seed(X, np.ones(20), 3, state).shape
    (3, 2)
    >>> state.cost["seeding"]  # all on the 10 sampled rows
    22
    """

    def __init__(self, seeder=None, size=None):
        self.seeder = seeder
        self.size = size

    def _inner(self):
        return KMeansPlusPlus() if self.seeder is None else self.seeder

    def _validate(self, X, n_clusters, composition):
        if not isinstance(self._inner(), Seeder):
            raise TypeError(f"seeder={self.seeder!r} must be a Seeder or None.")
        check_int(self.size, "size", 1, allow_none=True)
        if self.size is not None and self.size < n_clusters:
            raise ValueError(f"size={self.size} must be >= n_clusters={n_clusters}.")
        self._inner()._validate(X, n_clusters, composition)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return the inner seeder's centres on a subsample (see :meth:`Seeder.seed`)."""
        n_samples = X.shape[0]
        size = self.size if self.size is not None else max(20 * n_clusters, 10_000)
        size = min(int(size), n_samples)
        inner = self._inner()
        if size >= n_samples:
            return inner.seed(X, sample_weight, n_clusters, state)
        positive = int(np.count_nonzero(sample_weight > 0))
        if positive <= size:
            # every row with positive weight, plus zero-weight rows only if unavoidable
            size = max(positive, n_clusters)
        idx = np.sort(_sample_rows(sample_weight, size, state.random_state, proportional=False))
        X_sample = np.ascontiguousarray(X[idx])
        w_sample = sample_weight[idx]
        total_sample = w_sample.sum(dtype=np.float64)
        if total_sample > 0:
            scale = sample_weight.sum(dtype=np.float64) / total_sample
            w_sample = (w_sample * scale).astype(X.dtype)
        centers = inner.seed(X_sample, w_sample, n_clusters, state)
        state.seed_labels = None  # the inner seeder's labels are the sample's
        return centers


class ByDimension(Seeder):
    """One seeder for data with few features, another for data with many.

    Greedy k-means++ prunes most of its distances by the triangle inequality when the data
    have few features, so there it is cheap, and on such data its seeds matter most; as the
    features grow the pruning fails and each of its ``C`` steps reads all the data, while
    AFK-MC² costs ``m C^2 / 2`` distances whatever the data. This seeder runs ``low`` when
    ``X`` has at most ``max_features`` columns and ``high`` otherwise; the presets nest it
    to get greedy seeds where they are affordable (see :mod:`clusterkit.presets`).

    Parameters
    ----------
    low : Seeder or None, default=None
        Seeder for at most ``max_features`` features; ``None`` means ``KMeansPlusPlus()``.
    high : Seeder or None, default=None
        Seeder for more features; ``None`` means ``AFKMC2(chain_length=2, n_candidates=1)``
        (plain AFK-MC²).
    max_features : int, default=16
        The largest number of features ``low`` is used for.

    Notes
    -----
    Cost, memory and state are those of the seeder that runs (``state.seed_labels`` too).
    The documentation's page on the defaults has the measurements behind the presets' split
    at 16 and 64 features.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import ByDimension, FitState
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> state = FitState(n_clusters=2, n_features=2, random_state=np.random.RandomState(0))
    >>> ByDimension().seed(X, np.ones(4), 2, state).shape  # 2 features: k-means++
    (2, 2)
    >>> state.seed_labels
    array([1, 1, 0, 0], dtype=int32)
    """

    def __init__(self, low=None, high=None, max_features=16):
        self.low = low
        self.high = high
        self.max_features = max_features

    def _chosen(self, n_features):
        if n_features <= self.max_features:
            return KMeansPlusPlus() if self.low is None else self.low
        return AFKMC2(chain_length=2, n_candidates=1) if self.high is None else self.high

    def _validate(self, X, n_clusters, composition):
        check_int(self.max_features, "max_features", 1)
        for name in ("low", "high"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Seeder):
                raise TypeError(f"{name}={value!r} must be a Seeder or None.")
        self._chosen(X.shape[1])._validate(X, n_clusters, composition)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return the chosen seeder's centres (see :meth:`Seeder.seed`)."""
        return self._chosen(X.shape[1]).seed(X, sample_weight, n_clusters, state)


class GivenCenters(Seeder):
    """The initial centres the user gave (``Clusterer(seed=array)``), in the user's
    coordinates until :meth:`in_frame` moves them into the fit's."""

    accepts_sparse = True
    given = True

    def __init__(self, centers):
        self.centers = centers

    def in_frame(self, x_mean):
        return self if x_mean is None else GivenCenters(self.centers - x_mean)

    def seed(self, X, sample_weight, n_clusters, state):
        return self.centers
