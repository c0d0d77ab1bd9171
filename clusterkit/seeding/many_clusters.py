"""Seeders for many clusters that avoid greedy k-means++'s ``C`` passes over all the rows:
two-level k-means++ (:class:`HierarchicalKMeansPlusPlus`) and k-means|| (:class:`KMeansParallel`).
"""
import math
from numbers import Integral, Real

import numpy as np

from .._data.nearest import all_dist2, nearest, single_threaded_blas
from .._data.sparse import kernels_for
from .._engine.constraints import InstanceOf, Interval
from .._engine.contracts import Seeder, Seeding
from .seeders import KMeansPlusPlus, _first_index, _InnerSeeder, greedy_dense

__all__ = ["HierarchicalKMeansPlusPlus", "KMeansParallel", "MANY_CLUSTERS",
           "PARALLEL_ROWS_PER_CLUSTER"]

#: From this many clusters on the default seeding is k-means|| (:class:`KMeansParallel`
#: inside :class:`~clusterkit.ByClusters`) where the data have
#: :data:`PARALLEL_ROWS_PER_CLUSTER` rows per cluster; a full batch then seeds on that many
#: (:meth:`FullBatch.seeding_rows <clusterkit.FullBatch.seeding_rows>`).
MANY_CLUSTERS = 1000

#: The fewest rows per cluster k-means|| seeds on by default: its candidates' weights stand
#: for the rows behind them, and with fewer its fits ended 0.7-1.8 % above greedy k-means++'s
#: (8 rows per centre, 384 features) and 1.0 % above at index size (10 per centre, 768).
PARALLEL_ROWS_PER_CLUSTER = 32


def cell_budgets(cost, caps, n_clusters):
    """Centres per cell proportional to the cells' ``cost``, at least one per cell and at
    most its ``caps``, summing to ``n_clusters`` (``len(cost) <= n_clusters <=
    caps.sum()``): each quota rounded down and clipped, then the missing (or excess) units
    given to (taken from) the cells whose quota exceeds their count most (least), ties to the
    lower index (largest remainders).

    Examples
    --------
    >>> import numpy as np
    >>> cell_budgets(np.array([3.0, 1.0, 0.0]), np.array([10, 10, 1]), 6)
    array([4, 1, 1])
    """
    cost = np.asarray(cost, dtype=np.float64)
    high = np.asarray(caps, dtype=np.int64)
    low = np.ones_like(high)
    quota = n_clusters * cost / cost.sum() if cost.sum() > 0 else np.zeros_like(cost)
    budget = np.clip(np.floor(quota).astype(np.int64), low, high)
    while budget.sum() != n_clusters:
        missing = int(n_clusters - budget.sum())
        cells = np.flatnonzero(budget < high if missing > 0 else budget > low)
        gap = (quota - budget)[cells]
        order = np.argsort(-gap if missing > 0 else gap, kind="stable")
        budget[cells[order[:abs(missing)]]] += 1 if missing > 0 else -1
    return budget


def gain_budgets(potentials, n_clusters):
    """Centres per cell that lower the total potential most: ``potentials[j][k]`` is cell
    ``j``'s potential with its first ``k + 1`` centres; every cell keeps its first centre and
    the other ``n_clusters - len(potentials)`` go, one by one, where the next centre gains
    most (each cell's gains made non-increasing first, so that the choice is a prefix of
    each cell's centres; ties to the lower cell, then the earlier centre). Assumes
    ``len(potentials) <= n_clusters <= sum of their lengths``.

    Examples
    --------
    >>> gain_budgets([[10.0, 2.0, 1.0], [4.0, 1.0], [5.0]], 5)
    array([2, 2, 1])
    """
    gains = [np.minimum.accumulate(-np.diff(np.asarray(p, dtype=np.float64)))
             for p in potentials]
    cell = np.concatenate([np.full(len(g), j) for j, g in enumerate(gains)])
    flat = np.concatenate(gains)
    # (lexsort's last key is the primary one; the cell and position keep ties in order)
    order = np.lexsort((np.concatenate([np.arange(len(g)) for g in gains]), cell, -flat))
    taken = order[:n_clusters - len(potentials)]
    return 1 + np.bincount(cell[taken], minlength=len(potentials))


class HierarchicalKMeansPlusPlus(Seeder):
    """Two-level greedy k-means++: coarse cells first, then k-means++ inside each cell.

    Greedy k-means++ chooses about ``sqrt(n_clusters)`` coarse centres on all the rows, which
    cut the data into cells (each row in the cell of its nearest coarse centre). Weighted
    greedy k-means++ then runs inside each cell, from its coarse centre, and the cells' centres
    are shared out by what they gain: every cell keeps its coarse centre, and each further
    centre goes to the cell whose next centre lowers the potential ``sum w D^2`` most, as flat
    greedy k-means++ spends its centres where they gain most. A cell first runs twice its
    share of the centres proportional to its cost (the weighted squared distances to its
    coarse centre; largest-remainder rounding, at least one per cell, at most its distinct
    rows), and again with twice as many if the gains would take all it has.

    Parameters
    ----------
    n_cells : int or None, default=None
        Coarse centres (cells); ``None`` means ``round(sqrt(n_clusters))``. With
        ``n_cells=1`` or ``n_cells >= n_clusters`` this is flat greedy k-means++.
    n_local_trials : int or None, default=None
        Candidates per greedy step, on both levels; ``None`` means ``2 + int(log(n_clusters))``,
        as :class:`~clusterkit.KMeansPlusPlus` uses for ``n_clusters`` centres.
    oversampling : float, default=1.0
        Above 1, the cells' centres are ``round(oversampling * n_clusters)`` candidates (at
        most the distinct rows): each is weighted by the total weight of the rows nearest to
        it, and weighted greedy k-means++ chooses ``n_clusters`` of them, as k-means|| ends.
        This repairs what the cells' borders cost (below), for at most ``(L + 1) oversampling
        C^2`` more distance evaluations, on the candidates only.

    Notes
    -----
    Cost model, with ``N`` rows, ``C = n_clusters``, ``K = n_cells`` and ``L`` candidates per
    step: the coarse level takes ``K`` greedy steps over all rows, at most ``(L + 1) N K``
    distance evaluations; cell ``c`` with ``N_c`` rows and ``C_c`` centres run takes at most
    ``(L + 1) N_c C_c``, plus ``N_c C_c`` for its potentials (one matrix product). With
    ``K = sqrt(C)`` and cells of similar cost, that is about ``(L + 1) N sqrt(C)`` for each
    level (twice that for the cells, which run twice their share): a few greedy passes per
    ``sqrt(C)`` centres instead of one per centre, about ``C^1.5`` steps' work instead of
    flat greedy k-means++'s ``C^2``. Both levels run the pruned kernel of
    :class:`~clusterkit.KMeansPlusPlus`, which skips more of these distances on clustered,
    low-dimensional data; ``state.meter.cost["seeding"]`` counts exactly what was computed.
    Memory: one cell's rows and their distances to its centres at a time, besides ``O(N)``
    and the cells' centres. Cells are seeded one after another (the kernel is parallel
    inside); the result does not depend on ``state.config.n_threads``.

    Reads ``state.random_state`` (the coarse draws, one seed per cell for the cell's own
    stream, then the candidates' draws) and ``state.config.n_threads``; reports the coarse centres,
    then the cells, as progress; keeps no state between fits. Rows with zero weight are never
    chosen.

    Deviations: the cells share their centres by gain, not in proportion to their cost (on
    well-separated blobs a cell's cost grows with the spread of its blobs, not with their
    number, and proportional budgets missed several blobs). A centre in one cell never
    competes for the rows of another: a blob that a cell border cuts can take a centre in
    each cell, one too many, and the fit's error ends higher than from flat seeds; the
    defaults page has the measurements, ``oversampling`` the repair. With fewer distinct rows
    of positive weight than ``n_clusters`` (or than ``n_cells``), it runs flat
    :class:`~clusterkit.KMeansPlusPlus`, which warns and draws the rest.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import FitState, HierarchicalKMeansPlusPlus
    >>> rng = np.random.RandomState(0)
    >>> X = np.repeat(np.arange(9.0)[:, None] * 100, 20, axis=0) + rng.normal(size=(180, 1))
    >>> state = FitState(n_clusters=9, n_features=1, random_state=np.random.RandomState(0))
    >>> centers = HierarchicalKMeansPlusPlus().seed(X, np.ones(180), 9, state)
    >>> np.unique(np.round(centers[:, 0] / 100)).size  # one centre per blob
    9
    """

    _parameter_constraints = {"n_cells": [Interval(Integral, 1), None],
                              "n_local_trials": [Interval(Integral, 1), None],
                              "oversampling": [Interval(Real, 1, None, closed="left",
                                                        finite=True)]}

    def __init__(self, n_cells=None, n_local_trials=None, oversampling=1.0):
        self.n_cells = n_cells
        self.n_local_trials = n_local_trials
        self.oversampling = oversampling

    def _n_cells(self, n_clusters):
        if self.n_cells is None:
            return max(1, int(round(math.sqrt(n_clusters))))
        return int(self.n_cells)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Greedy k-means++'s buffers on all rows (the coarse level and every cell's run
        take at most those), a copy of one cell's rows and weights (at most all rows), a
        cell's potentials after each of its centres (about ``2 N C / n_cells^2`` float64
        entries, ``oversampling`` times more with more candidates) and, with
        ``oversampling > 1``, every row's nearest candidate."""
        n_cells = max(1, min(self._n_cells(n_clusters), n_clusters))
        n_wanted = max(n_clusters, int(round(float(self.oversampling) * n_clusters)))
        potentials = 2 * n_samples * n_wanted // n_cells ** 2 * 8
        nearest_rows = n_samples * (4 + dtype.itemsize) if n_wanted > n_clusters else 0
        return (KMeansPlusPlus(self.n_local_trials).buffer_bytes(
                    n_samples, n_features, n_clusters, dtype, composition)
                + n_samples * (n_features + 1) * dtype.itemsize + potentials + nearest_rows)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return two-level k-means++ centres (see :meth:`Seeder.seed`)."""
        return HierarchicalKMeansPlusPlus.seeding(self, X, sample_weight, n_clusters,
                                                  state).centers

    def seeding(self, X, sample_weight, n_clusters, state):
        """Two-level k-means++ centres, without labels (see :meth:`Seeder.seeding`)."""
        flat = KMeansPlusPlus(self.n_local_trials)
        n_cells = self._n_cells(n_clusters)
        positive = sample_weight > 0
        if n_cells <= 1 or n_cells >= n_clusters or np.count_nonzero(positive) < n_clusters:
            return flat.seeding(X, sample_weight, n_clusters, state)
        if not positive.all():  # (rows of zero weight are never chosen: leave them out)
            X, sample_weight = X[positive], sample_weight[positive]
        n_trials = flat._n_trials(n_clusters)
        rs = state.random_state
        # the coarse level: greedy k-means++ on every row
        n_done = np.zeros(1, dtype=np.int64)
        state.meter.progress("seeding", n_done, n_cells, "coarse centres")
        coarse, chosen, labels, dist2, n_chosen = greedy_dense(
            X, sample_weight, _first_index(sample_weight, rs), n_cells, n_trials, rs, state,
            n_done)
        if n_chosen < n_cells:  # fewer distinct rows than cells, so than centres
            return flat.seeding(X, sample_weight, n_clusters, state)
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_cells + 1))
        cells = [order[bounds[j]:bounds[j + 1]] for j in range(n_cells)]
        n_wanted = max(n_clusters, int(round(float(self.oversampling) * n_clusters)))
        runs = self._cells(X, sample_weight, dist2, chosen, cells, n_clusters, n_wanted,
                           n_trials, state)
        if runs is None:
            return flat.seeding(X, sample_weight, n_clusters, state)
        centers, potentials = runs
        n_wanted = min(n_wanted, sum(len(c) for c in centers))
        budget = gain_budgets(potentials, n_wanted)
        centers = np.concatenate([c[:b] for c, b in zip(centers, budget)])
        if n_wanted > n_clusters:
            # the cells' centres as weighted candidates, as k-means|| ends
            with single_threaded_blas():
                labels, _, n_evals = nearest(X, None, centers, state.config.n_threads)
            state.meter.count("seeding", n_evals)
            weight = np.bincount(labels, weights=sample_weight, minlength=n_wanted)
            centers = flat.seed(centers, weight.astype(X.dtype), n_clusters, state)
        return Seeding(np.ascontiguousarray(centers), None)

    @staticmethod
    def _cells(X, sample_weight, dist2, chosen, cells, n_clusters, n_wanted, n_trials, state):
        """Each cell's greedy k-means++ centres and its potential after each of them, with
        enough centres for :func:`gain_budgets` to choose ``n_wanted`` (``None`` if the cells
        hold fewer distinct rows than ``n_clusters``).

        A cell first gets twice its cost-proportional share (:func:`cell_budgets`); one that
        the gains would take whole and that may hold more distinct rows runs again with
        twice as many. Each cell draws from its own stream, seeded from
        ``state.random_state``, so a rerun repeats its first centres.
        """
        n_cells = len(cells)
        streams = state.random_state.randint(np.iinfo(np.int32).max, size=n_cells)
        cost = np.array([np.dot(sample_weight[rows].astype(np.float64), dist2[rows])
                         for rows in cells])
        rows_in = np.array([len(rows) for rows in cells])
        share = cell_budgets(cost, rows_in, min(n_wanted, int(rows_in.sum())))
        trial = np.where(cost > 0, np.minimum(rows_in, 2 * share), 1)
        done = np.zeros(n_cells, dtype=np.int64)  # centres run so far per cell
        capped = cost == 0  # (a cell of cost zero holds copies of its coarse centre only)
        centers = [X[chosen[j]][None] for j in range(n_cells)]
        potentials = [cost[j:j + 1] for j in range(n_cells)]
        n_done = np.zeros(1, dtype=np.int64)
        while True:
            for j in np.flatnonzero(trial > done):
                state.meter.progress("seeding", j, n_cells, "cells")
                centers[j], potentials[j], n_chosen = HierarchicalKMeansPlusPlus._cell(
                    X, sample_weight, cells[j], chosen[j], int(trial[j]), n_trials,
                    np.random.RandomState(streams[j]), state, n_done)
                done[j] = n_chosen
                capped[j] |= n_chosen < trial[j] or n_chosen == len(cells[j])
            n_available = int(done.sum())
            if capped.all() and n_available < n_clusters:
                return None
            budget = gain_budgets(potentials, min(n_wanted, n_available))
            grow = (budget == done) & ~capped
            if not grow.any():
                return centers, potentials
            trial[grow] = np.minimum(rows_in[grow], 2 * done[grow])

    @staticmethod
    def _cell(X, sample_weight, rows, first_row, n_centres, n_trials, random_state, state,
              n_done):
        """Greedy k-means++ in one cell (``rows``, sorted) from its coarse centre's row:
        the centres, the cell's potential after each, and how many were chosen (fewer if
        the cell has fewer distinct rows)."""
        X_cell = np.ascontiguousarray(X[rows])
        w_cell = np.ascontiguousarray(sample_weight[rows])
        first = int(np.searchsorted(rows, first_row))
        if first == len(rows) or rows[first] != first_row:
            # (the coarse centre's row went to an earlier centre at distance zero within
            # rounding: start from a drawn row instead)
            first = _first_index(w_cell, random_state)
        centers, _, _, _, n_chosen = greedy_dense(X_cell, w_cell, first, n_centres, n_trials,
                                                  random_state, state, n_done)
        centers = centers[:n_chosen]
        # the potential after each prefix of the centres: one product per cell
        with single_threaded_blas():
            dist2 = all_dist2(X_cell, centers, state.config.n_threads)
        state.meter.count("seeding", dist2.size)
        np.minimum.accumulate(dist2, axis=1, out=dist2)
        return centers, np.maximum(dist2, 0).T @ w_cell.astype(np.float64), n_chosen


class KMeansParallel(_InnerSeeder):
    """k-means|| seeding (Bahmani et al., 2012): a few oversampling rounds, then another
    seeder on the weighted candidates.

    The first candidate is a row drawn with probability proportional to its weight. In each of
    ``n_rounds`` rounds, every row joins the candidates independently with probability
    ``min(1, l w_n D(x_n)^2 / phi)``, where ``D`` is the distance to the nearest candidate so
    far, ``phi = sum_n w_n D(x_n)^2`` and ``l = oversampling * n_clusters``. Each candidate is
    then weighted by the total weight of the rows nearest to it, and ``seeder`` chooses the
    ``n_clusters`` centres among the weighted candidates.

    Parameters
    ----------
    seeder : Seeder or None, default=None
        The seeder run on the weighted candidates; ``None`` means ``KMeansPlusPlus()``
        (greedy). :class:`HierarchicalKMeansPlusPlus` makes this step cheap for many clusters.
    n_rounds : int, default=5
        Oversampling rounds (the paper's ``r``; it finds 5 enough).
    oversampling : float, default=2.0
        Expected candidates per round, per cluster (the paper's ``l / k``). On a seeding
        sample of a few rows per centre, the paper's 2 makes nearly every row a candidate;
        0.5 is the trade measured on the defaults page.

    Notes
    -----
    Cost model, with ``N`` rows, ``C = n_clusters`` and ``r`` rounds: each round is one pass
    over the rows against that round's new candidates (about ``l = oversampling * C`` of
    them), computed as one matrix product per block of rows (the nearest-centre kernel of
    the E-steps, at gemm speed): about ``N (1 + r l)`` distance evaluations in ``r + 1``
    passes, then the inner seeder on about ``1 + r l`` weighted candidates (for greedy
    k-means++, ``(L + 1) (1 + r l) C`` more at most: half the work of greedy k-means++ on
    ``20 C`` rows with the defaults). ``state.meter.cost["seeding"]`` counts both. Memory
    ``O(N)`` plus the candidates' rows. Reads ``state.random_state`` (the first row, one
    uniform per row and round, then the inner seeder's draws) and ``state.config.n_threads``;
    reports the rounds done as progress; keeps no state between fits.

    CSR rows are taken if the inner seeder takes them (:class:`KMeansPlusPlus` does): the
    rounds' distances then come from the sparse kernel, the candidates stay sparse rows.

    Deviations from the paper: no Lloyd steps on the candidates (the fit runs its own
    iterations from the seeds); a row that is already a candidate is never drawn again (its
    ``D`` is zero). If the rounds find fewer candidates than ``n_clusters``, the inner seeder
    runs on all the rows instead. Rows with zero weight are never candidates, unless the
    inner seeder's fallback draws them (fewer distinct rows than clusters).

    References
    ----------
    B. Bahmani, B. Moseley, A. Vattani, R. Kumar and S. Vassilvitskii, "Scalable k-means++",
    Proc. VLDB Endowment 5(7), 2012.

    Examples
    --------
    Eight blobs along the diagonal, seeded by three rounds of candidates:

    >>> import numpy as np
    >>> from clusterkit import Clusterer, KMeansParallel
    >>> rng = np.random.RandomState(0)
    >>> X = rng.normal(size=(3000, 2)) + 10 * rng.randint(0, 8, size=(3000, 1))
    >>> km = Clusterer(8, seed=KMeansParallel(n_rounds=3), random_state=0).fit(X)
    >>> np.round(np.sort(km.cluster_centers_[:, 0]) / 10).astype(int)  # one per blob
    array([0, 1, 2, 3, 4, 5, 6, 7])
    """

    accepts_sparse = True  # if its inner seeder does (see _validate)
    _parameter_constraints = {"seeder": [InstanceOf(Seeder), None],
                              "n_rounds": [Interval(Integral, 1)],
                              "oversampling": [Interval(Real, 0, closed="neither", finite=True)]}

    def __init__(self, seeder=None, n_rounds=5, oversampling=2.0):
        self.seeder = seeder
        self.n_rounds = n_rounds
        self.oversampling = oversampling

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Per row its nearest candidate and distance, its mass, uniform and weight
        (float64), a new round's nearest candidate and distance; the candidates' rows, at
        most ``n_rounds oversampling C`` of them (all rows at most), and the inner seeder's
        buffers on them."""
        n_candidates = min(n_samples, 1 + int(self.n_rounds * float(self.oversampling)
                                              * n_clusters))
        per_row = 2 * (8 + dtype.itemsize) + 3 * 8 + 1
        return (n_samples * per_row + n_candidates * (n_features + 1) * dtype.itemsize
                + self._inner().buffer_bytes(n_candidates, n_features, n_clusters, dtype,
                                             composition))

    def seed(self, X, sample_weight, n_clusters, state):
        """Return k-means|| centres (see :meth:`Seeder.seed`)."""
        return KMeansParallel.seeding(self, X, sample_weight, n_clusters, state).centers

    def seeding(self, X, sample_weight, n_clusters, state):
        """The inner seeder's centres among the k-means|| candidates, without labels (see
        :meth:`Seeder.seeding`)."""
        rs = state.random_state
        kind = kernels_for(X)
        n_samples = X.shape[0]
        weight = sample_weight.astype(np.float64)
        rate = float(self.oversampling) * n_clusters
        candidates = [np.array([_first_index(sample_weight, rs)])]
        state.meter.progress("seeding", 0, int(self.n_rounds), "rounds")
        with single_threaded_blas():
            labels, dist2, n_evals = nearest(X, None, kind.dense_rows(X, candidates[0]),
                                             state.config.n_threads)
            dist2[candidates[0]] = 0
            n_found = 1
            for r in range(int(self.n_rounds)):
                mass = weight * dist2
                phi = mass.sum()
                u = rs.uniform(size=n_samples)
                if not phi > 0:
                    break
                new = np.flatnonzero(u * phi < rate * mass)
                if len(new):
                    new_labels, new_dist2, evals = nearest(X, None, kind.dense_rows(X, new),
                                                           state.config.n_threads)
                    n_evals += evals
                    new_dist2[new] = 0  # (the products may leave a rounding residue)
                    closer = new_dist2 < dist2
                    labels[closer] = new_labels[closer] + n_found
                    dist2[closer] = new_dist2[closer]
                    candidates.append(new)
                    n_found += len(new)
                state.meter.progress("seeding", r + 1, int(self.n_rounds), "rounds")
        state.meter.count("seeding", n_evals)
        inner = self._inner()
        if n_found < n_clusters:
            return Seeding(inner.seed(X, sample_weight, n_clusters, state), None)
        rows = np.concatenate(candidates)
        cand_weight = np.bincount(labels, weights=weight, minlength=n_found)
        X_rows = kind.take(X, rows)
        centers = inner.seed(X_rows, cand_weight.astype(X.dtype), n_clusters, state)
        return Seeding(centers, None)
