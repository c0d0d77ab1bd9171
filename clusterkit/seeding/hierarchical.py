"""Seeders for many clusters that avoid greedy k-means++'s ``C`` passes over all the rows:
two-level k-means++ (:class:`HierarchicalKMeansPlusPlus`) and k-means|| (:class:`KMeansParallel`).
"""
import math
from numbers import Integral, Real

import numpy as np

from .._data.nearest import nearest, single_threaded_blas
from .._engine.constraints import InstanceOf, Interval
from .._engine.contracts import Seeder, Seeding
from .seeders import KMeansPlusPlus, _first_index, greedy_dense

__all__ = ["HierarchicalKMeansPlusPlus", "KMeansParallel"]


def _n_trials(n_local_trials, n_clusters):
    """Candidates per greedy step: scikit-learn's ``2 + ln C`` unless given."""
    return 2 + int(math.log(n_clusters)) if n_local_trials is None else int(n_local_trials)


def _distinct_rows(X):
    """Number of distinct rows of ``X`` (``-0.0`` and ``0.0`` count as equal)."""
    rows = np.ascontiguousarray(X + 0.0)  # (+0.0 turns -0.0 into 0.0: equal bytes)
    return len(np.unique(rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()))


def _largest_remainder(quota, low, high, total):
    """Integers ``low <= b <= high`` summing to ``total`` (``low.sum() <= total <=
    high.sum()``), as close to the real ``quota`` as the bounds allow: each quota rounded
    down, clipped, then the missing (or excess) units given to (taken from) the cells whose
    quota exceeds their count most (least), ties to the lower index."""
    budget = np.clip(np.floor(quota).astype(np.int64), low, high)
    while budget.sum() != total:
        missing = int(total - budget.sum())
        room = budget < high if missing > 0 else budget > low
        cells = np.flatnonzero(room)
        gap = (quota - budget)[cells]
        # stable sort on the gap: the largest remainders first (smallest when taking)
        order = np.argsort(-gap if missing > 0 else gap, kind="stable")
        take = cells[order[:abs(missing)]]
        budget[take] += 1 if missing > 0 else -1
    return budget


def cell_budgets(cost, caps, n_clusters):
    """Centres per cell: proportional to the cell's ``cost``, at least one per cell and at
    most its ``caps`` (its distinct rows), summing to ``n_clusters`` (``len(cost) <=
    n_clusters <= caps.sum()``), by largest remainders.

    Examples
    --------
    >>> import numpy as np
    >>> cell_budgets(np.array([3.0, 1.0, 0.0]), np.array([10, 10, 1]), 6)
    array([4, 1, 1])
    """
    cost = np.asarray(cost, dtype=np.float64)
    caps = np.asarray(caps, dtype=np.int64)
    total = cost.sum()
    quota = (n_clusters * cost / total if total > 0 else np.zeros_like(cost))
    return _largest_remainder(quota, np.ones_like(caps), caps, n_clusters)


class HierarchicalKMeansPlusPlus(Seeder):
    """Two-level greedy k-means++: coarse cells first, then k-means++ inside each cell.

    Greedy k-means++ chooses about ``sqrt(n_clusters)`` coarse centres on all the rows, which
    cuts the data into cells (each row in the cell of its nearest coarse centre). Each cell gets
    a budget of centres proportional to its cost ``sum w D^2`` (the weighted squared distances
    to its coarse centre; largest-remainder rounding, at least one centre per cell, at most the
    cell's distinct rows), and weighted greedy k-means++ chooses that many inside the cell,
    starting from the coarse centre. k-means++ spends its centres where the cost is; the budget
    does the same between cells, and the centres inside each cell see only the cell's rows.

    Parameters
    ----------
    n_cells : int or None, default=None
        Coarse centres (cells); ``None`` means ``round(sqrt(n_clusters))``. With
        ``n_cells=1`` or ``n_cells >= n_clusters`` this is flat greedy k-means++.
    n_local_trials : int or None, default=None
        Candidates per greedy step, on both levels; ``None`` means ``2 + int(log(n_clusters))``,
        as :class:`~clusterkit.KMeansPlusPlus` uses for ``n_clusters`` centres.
    oversampling : float, default=1.0
        Above 1, the cells choose ``round(oversampling * n_clusters)`` centres (at most the
        distinct rows), which become candidates: each is weighted by the total weight of the
        rows nearest to it, and weighted greedy k-means++ chooses ``n_clusters`` of them (as
        k-means|| ends). This repairs what the cells' borders cost, for ``(L + 1)
        oversampling C^2`` more distance evaluations at most, on candidates only.

    Notes
    -----
    Cost model, with ``N`` rows, ``C = n_clusters``, ``K = n_cells`` and ``L`` candidates: the
    coarse level takes ``K`` greedy steps over all rows, at most ``(L + 1) N K`` distance
    evaluations; cell ``c`` with ``N_c`` rows and ``C_c`` centres takes at most ``(L + 1) N_c
    C_c``. When the cells' rows follow their centres, the total is about ``2 (L + 1) N
    sqrt(C)`` distances instead of flat greedy k-means++'s ``(L + 1) N C``: ``2 sqrt(C)``
    greedy passes over the data instead of ``C``, i.e. about ``C^1.5`` steps' work instead of
    ``C^2``. Both levels run the pruned kernel of :class:`~clusterkit.KMeansPlusPlus`, which
    skips more of these distances on clustered, low-dimensional data;
    ``state.cost["seeding"]`` counts exactly what was computed. Memory: a copy of one cell's
    rows at a time, ``O(N)`` besides. Cells are seeded one after another (the kernel is
    parallel inside); the result does not depend on ``state.n_threads``.

    Reads ``state.random_state`` (the coarse draws, then each cell's in cell order) and
    ``state.n_threads``; reports the coarse centres, then the centres of the cells done, as
    progress; keeps no state between fits. Rows with zero weight are never chosen.

    Deviation from flat k-means++: a centre in one cell never competes for the rows of
    another, so rows near a cell's border are served by its own centres only; the defaults
    page measures what this costs in the error of the whole fit. With fewer distinct rows of
    positive weight than ``n_clusters`` (or than ``n_cells``), it runs flat
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
                              "oversampling": [Interval(Real, 1, None, closed="left")]}

    def __init__(self, n_cells=None, n_local_trials=None, oversampling=1.0):
        self.n_cells = n_cells
        self.n_local_trials = n_local_trials
        self.oversampling = oversampling

    def _n_cells(self, n_clusters):
        if self.n_cells is None:
            return max(1, int(round(math.sqrt(n_clusters))))
        return int(self.n_cells)

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
        n_trials = _n_trials(self.n_local_trials, n_clusters)
        rs = state.random_state
        # the coarse level: greedy k-means++ on every row
        n_done = np.zeros(1, dtype=np.int64)
        state.progress("seeding", n_done, n_cells, "coarse centres")
        coarse, chosen, labels, dist2, n_chosen = greedy_dense(
            X, sample_weight, _first_index(sample_weight, rs), n_cells, n_trials, state, n_done)
        if n_chosen < n_cells:  # fewer distinct rows than cells, so than centres
            return flat.seeding(X, sample_weight, n_clusters, state)
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_cells + 1))
        cells = [order[bounds[j]:bounds[j + 1]] for j in range(n_cells)]
        n_wanted = max(n_clusters, int(round(float(self.oversampling) * n_clusters)))
        budget = self._budgets(X, sample_weight, dist2, cells, n_clusters, n_wanted)
        if budget is None:
            return flat.seeding(X, sample_weight, n_clusters, state)
        n_chosen_cells = int(budget.sum())
        # the fine level: greedy k-means++ in each cell, from its coarse centre
        centers = np.empty((n_chosen_cells, X.shape[1]), dtype=X.dtype)
        start = 0
        cell_done = np.zeros(1, dtype=np.int64)
        for j, rows in enumerate(cells):
            state.progress("seeding", start, n_chosen_cells, "centres")
            if budget[j] == 1:
                centers[start] = coarse[j]
            else:
                cell_w = np.ascontiguousarray(sample_weight[rows])
                first = int(np.searchsorted(rows, chosen[j]))  # (rows are sorted)
                if first == len(rows) or rows[first] != chosen[j]:
                    # (the coarse centre's row went to an earlier centre at distance zero
                    # within rounding: start from a drawn row instead)
                    first = _first_index(cell_w, rs)
                cell, _, _, _, n_chosen = greedy_dense(
                    np.ascontiguousarray(X[rows]), cell_w, first, int(budget[j]), n_trials,
                    state, cell_done)
                if n_chosen < budget[j]:
                    # distinct rows closer than float rounding can resolve: the flat seeding
                    # handles it (and warns if it has to)
                    return flat.seeding(X, sample_weight, n_clusters, state)
                centers[start:start + budget[j]] = cell
            start += budget[j]
        if n_chosen_cells > n_clusters:
            # the cells' centres as weighted candidates, as k-means|| ends
            with single_threaded_blas():
                labels, _, n_evals = nearest(X, None, centers, state.n_threads)
            state.count("seeding", n_evals)
            weight = np.bincount(labels, weights=sample_weight, minlength=n_chosen_cells)
            centers = flat.seed(centers, weight.astype(X.dtype), n_clusters, state)
        return Seeding(centers, None)

    @staticmethod
    def _budgets(X, sample_weight, dist2, cells, n_clusters, n_wanted):
        """Centres per cell (see :func:`cell_budgets`) summing to ``n_wanted``, or to fewer
        (at least ``n_clusters``) if the cells' distinct rows are fewer, capped by each cell's
        distinct rows; ``None`` if all cells together have fewer than ``n_clusters``.

        Rows at different distances from their coarse centre are different rows, so a cell
        whose budget is at most its number of distinct distances needs no count of its
        distinct rows; the others are counted (once) and the budgets redone.
        """
        cost = np.array([np.dot(sample_weight[rows].astype(np.float64), dist2[rows])
                         for rows in cells])
        caps = np.array([len(rows) if c > 0 else 1 for rows, c in zip(cells, cost)])
        counted = cost == 0  # (a cell of cost zero holds copies of its centre only)
        while True:
            if caps.sum() < n_clusters:
                return None
            budget = cell_budgets(cost, caps, min(n_wanted, int(caps.sum())))
            changed = False
            for j in np.flatnonzero(~counted & (budget > 1)):
                if budget[j] <= len(np.unique(dist2[cells[j]])):
                    continue
                counted[j] = True
                caps[j] = _distinct_rows(X[cells[j]])
                changed |= bool(caps[j] < budget[j])
            if not changed:
                return budget


class KMeansParallel(Seeder):
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
        Expected candidates per round, per cluster (the paper's ``l / k``).

    Notes
    -----
    Cost model, with ``N`` rows, ``C = n_clusters`` and ``r`` rounds: each round is one pass
    over the rows against that round's new candidates (about ``l = oversampling * C`` of
    them), computed as one matrix product per block of rows (the nearest-centre kernel of
    the E-steps, at gemm speed): about ``N (1 + r l)`` distance evaluations in ``r + 1``
    passes, then the inner seeder on about ``1 + r l`` weighted candidates (for greedy
    k-means++, ``(L + 1) (1 + r l) C`` more at most: half the work of greedy k-means++ on
    ``20 C`` rows with the defaults). ``state.cost["seeding"]`` counts both. Memory
    ``O(N)`` plus the candidates' rows. Reads ``state.random_state`` (the first row, one
    uniform per row and round, then the inner seeder's draws) and ``state.n_threads``;
    reports the rounds done as progress; keeps no state between fits.

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
    >>> import numpy as np
    >>> from clusterkit import FitState, KMeansParallel
    >>> rng = np.random.RandomState(0)
    >>> X = np.repeat(np.arange(9.0)[:, None] * 100, 20, axis=0) + rng.normal(size=(180, 1))
    >>> state = FitState(n_clusters=9, n_features=1, random_state=np.random.RandomState(0))
    >>> centers = KMeansParallel().seed(X, np.ones(180), 9, state)
    >>> np.unique(np.round(centers[:, 0] / 100)).size  # one centre per blob
    9
    """

    _parameter_constraints = {"seeder": [InstanceOf(Seeder), None],
                              "n_rounds": [Interval(Integral, 1)],
                              "oversampling": [Interval(Real, 0, closed="neither")]}

    def __init__(self, seeder=None, n_rounds=5, oversampling=2.0):
        self.seeder = seeder
        self.n_rounds = n_rounds
        self.oversampling = oversampling

    def _inner(self):
        return KMeansPlusPlus() if self.seeder is None else self.seeder

    def _validate(self, X, n_clusters, composition):
        self._inner()._validate(X, n_clusters, composition)

    def seed(self, X, sample_weight, n_clusters, state):
        """Return k-means|| centres (see :meth:`Seeder.seed`)."""
        return KMeansParallel.seeding(self, X, sample_weight, n_clusters, state).centers

    def seeding(self, X, sample_weight, n_clusters, state):
        """The inner seeder's centres among the k-means|| candidates, without labels (see
        :meth:`Seeder.seeding`)."""
        rs = state.random_state
        n_samples = X.shape[0]
        weight = sample_weight.astype(np.float64)
        rate = float(self.oversampling) * n_clusters
        candidates = [np.array([_first_index(sample_weight, rs)])]
        state.progress("seeding", 0, int(self.n_rounds), "rounds")
        with single_threaded_blas():
            labels, dist2, n_evals = nearest(X, None, X[candidates[0]], state.n_threads)
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
                    new_labels, new_dist2, evals = nearest(X, None, np.ascontiguousarray(X[new]),
                                                           state.n_threads)
                    n_evals += evals
                    new_dist2[new] = 0  # (the products may leave a rounding residue)
                    closer = new_dist2 < dist2
                    labels[closer] = new_labels[closer] + n_found
                    dist2[closer] = new_dist2[closer]
                    candidates.append(new)
                    n_found += len(new)
                state.progress("seeding", r + 1, int(self.n_rounds), "rounds")
        state.count("seeding", n_evals)
        inner = self._inner()
        if n_found < n_clusters:
            return Seeding(inner.seed(X, sample_weight, n_clusters, state), None)
        rows = np.concatenate(candidates)
        cand_weight = np.bincount(labels, weights=weight, minlength=n_found)
        centers = inner.seed(np.ascontiguousarray(X[rows]), cand_weight.astype(X.dtype),
                             n_clusters, state)
        return Seeding(centers, None)
