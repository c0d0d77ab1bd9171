"""AFK-MC² seeding (Bachem et al. 2016): Markov chains that approximate k-means++ without
a pass over the data per centre, greedy (the best of several chains per centre) or plain.

The random numbers are drawn here from ``state.random_state``; the chains run in
``_kernels/_afkmc2.pyx``.
"""
import functools
import math
from numbers import Integral

import numpy as np

from .._engine.constraints import Interval, Options
from .._engine.contracts import Seeder
from .._engine.warn import warn
from .._kernels import _afkmc2, _kmeanspp
from .seeders import _draw, _first_index

__all__ = ["AFKMC2"]


#: Rounds of new chains for centres that repeat another (:meth:`AFKMC2._redraw_duplicates`).
_DUPLICATE_REDRAWS = 5

#: The most draws of a potential sample: its counts are int64.
_MAX_DRAWS = 2**63 - 1


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
        ``n_candidates=1``. At most ``2**63 - 1`` draws (they are counted in int64).

    Notes
    -----
    Cost per call with ``L`` chains: ``n_samples + L * chain_length * n_clusters *
    (n_clusters - 1) / 2`` distance evaluations (the proposal, then each candidate for centre
    ``i`` against the ``i`` centres before it), plus, if ``L > 1``, ``L * s`` per centre
    for the potentials on the ``s`` distinct rows of the potential sample (the chosen
    candidate's distances update the sample's ``D^2``); nothing beyond the first draw when
    ``n_clusters == 1``. Sublinear in ``n_samples`` after the proposal when the sample is.
    Memory ``O(n_samples + n_clusters * (L * chain_length + n_features) + L * s)``: all
    candidates and uniforms are drawn up front. Reads ``state.random_state`` and
    ``state.config.n_threads``; keeps no state between fits. The result does not depend on
    the thread count.

    The potential sample: ``s`` rows drawn with replacement with probability proportional to
    their weight, each distinct row weighted by how often it was drawn. Its weighted
    potential is an unbiased estimate of the data's (up to the total weight), and a weight
    of ``k`` draws like ``k`` copies of a row, so weights stay equivalent to repetition in
    distribution. The counts are drawn at once, as one multinomial sample
    (:meth:`numpy.random.RandomState.multinomial`), so a sample of any size takes
    ``O(n_samples)`` time and memory; the potentials are then computed on its distinct rows
    (at most ``min(s, n_samples)``). With ``n_candidates=1`` the random draws, centres and counts are those of
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
    >>> from clusterkit import AFKMC2, Clusterer
    >>> X = [[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]]
    >>> def seeding_cost(seeder):
    ...     return Clusterer(2, seed=seeder, random_state=0).fit(X).cost_["seeding"]
    >>> seeding_cost(AFKMC2(chain_length=5, n_candidates=1))  # 4 for the proposal, 5 candidates
    9
    >>> seeding_cost(AFKMC2(chain_length=5, n_candidates=2))  # 4 + 2 chains of 5, and their ends
    20
    """

    _parameter_constraints = {
        "chain_length": [Interval(Integral, 1), Options("auto")],
        "n_candidates": [Interval(Integral, 1), Options("auto")],
        "potential_sample": [Interval(Integral, 1, _MAX_DRAWS), Options("auto", "all")],
    }

    def __init__(self, chain_length="auto", n_candidates="auto", potential_sample="auto"):
        self.chain_length = chain_length
        self.n_candidates = n_candidates
        self.potential_sample = potential_sample

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

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """``D^2`` to the first centre and the proposal ``q`` (with its weights and
        cumulative sum, float64), and every chain's candidates and uniforms, drawn up
        front."""
        n_chains = self._n_chains(n_clusters)
        draws = (n_clusters - 1) * n_chains * self._chain_length(n_chains)
        return n_samples * (dtype.itemsize + 4 * 8) + draws * 12

    def seed(self, X, sample_weight, n_clusters, state):
        """Return AFK-MC^2 centres (see :meth:`Seeder.seed`)."""
        rs, n_threads = state.random_state, state.config.n_threads
        n_samples = X.shape[0]
        n_chains = self._n_chains(n_clusters)
        m = self._chain_length(n_chains)
        first = _first_index(sample_weight, rs)
        if n_clusters == 1:
            return np.ascontiguousarray(X[[first]])
        d2 = np.full(n_samples, np.inf, dtype=X.dtype)
        state.meter.count("seeding", _kmeanspp.d2_update(X, X[first], d2, n_threads))
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
            state.meter.count("seeding", run(begin, end))
            state.meter.progress("seeding", end, n_clusters, "centres")
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
            state.meter.count("seeding", _afkmc2.afkmc2_chain(
                X, sample_weight, q_free, int(work_chosen[0]), candidates, uniforms,
                work_centers, work_chosen, state.config.n_threads, kept, n_clusters))
            centers[repeated] = work_centers[kept:]
            chosen[repeated] = work_chosen[kept:]

    def _potential_sample(self, X, sample_weight, w, d2, n_clusters, rs):
        """Rows, weights and ``D^2`` (to the first centre, from the proposal's pass) of the
        potential sample."""
        size = self._sample_size(X.shape[0], n_clusters)
        if size is None:
            return X, sample_weight, d2.copy()
        # draws in proportion to weight, with replacement (weights act as repetitions), as
        # how often each row is drawn: a multinomial sample, O(n_samples) whatever the size
        counts = rs.multinomial(size, w / w.sum())
        rows = np.flatnonzero(counts)
        return np.ascontiguousarray(X[rows]), counts[rows].astype(X.dtype), d2[rows]
