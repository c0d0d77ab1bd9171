"""The bounded assignment's solver (:func:`balanced_assignment`): for given centres, the
assignment of least (weighted) squared distance under bounds on every cluster's size.

It is a transport problem: each row ships its weight to clusters at ``d(x, c)^2`` per unit,
and cluster ``c`` must receive between ``size_min`` and ``size_max``. It is solved on a
sparse graph, each row linked to its few nearest centres, by successive shortest paths over
the clusters (``_kernels/_balanced.pyx``); the prices the paths leave (one per centre) and
the graph start the next solve. A row's candidates are renewed (and widened) where the graph
blocks the bounds, and every row is checked against all centres with the prices and a bound,
so the result is optimal over the full problem. :class:`~clusterkit.BalancedEStep` runs it
as an E-step.
"""
import math

import numpy as np

from .._data.memory import check_memory
from .._data.nearest import all_dist2, single_threaded_blas
from .._kernels import _assign, _balanced, _topk
from .split_rows import round_splits

__all__ = ["BalancedResult", "Candidates", "N_CANDIDATES", "balanced_assignment",
           "size_bounds"]

#: Candidate centres per row at the first solve (widened where needed).
N_CANDIDATES = 8


class BalancedResult:
    """What :func:`balanced_assignment` found.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,), dtype=int32
    dist2 : ndarray of shape (n_samples,)
        Squared distance of each row to its label's centre, in ``X``'s dtype.
    prices : ndarray of shape (n_clusters + 1,), dtype=float64
        The optimal prices (one per centre, then the sink's): each row's label minimises
        ``dist2 - price`` among all centres. The next solve's warm start.
    n_distance_evals : int
    n_paths : int
        Augmenting paths the solver moved rows along.
    n_widened : int
        Rows whose candidate centres were renewed or widened (over all renewals).
    split_rows : int
        Rows the fractional optimum splits between clusters (weighted bounds only; the
        labels then round them, see :class:`BalancedEStep`).
    candidates : Candidates
        The candidate graph, for the next solve on the same rows.
    """

    def __init__(self, labels, dist2, prices, n_distance_evals, n_paths, n_widened,
                 split_rows, candidates=None):
        self.labels, self.dist2, self.prices = labels, dist2, prices
        self.n_distance_evals, self.n_paths = n_distance_evals, n_paths
        self.n_widened, self.split_rows = n_widened, split_rows
        self.candidates = candidates


def size_bounds(size_min, size_max, n_clusters, sample_weight):
    """The bounds as the solver takes them, or the ``ValueError`` that says why none hold.

    Rows of equal positive weight ``w`` are counted: a bound in weight is a bound of
    ``ceil(size_min / w)`` to ``floor(size_max / w)`` rows (``w = 1``: bounds in rows),
    which the labels meet exactly. Unequal weights keep the bounds in weight.

    Parameters
    ----------
    size_min, size_max : float or None
        ``None``: no lower (upper) bound.
    n_clusters : int
    sample_weight : ndarray of shape (n_samples,)

    Returns
    -------
    lower, upper : float
        In rows (``unit`` is then the rows' weight) or in weight (``unit`` ``None``).
    unit : float or None
    """
    positive = sample_weight[sample_weight > 0]
    if positive.size == 0:
        raise ValueError("BalancedEStep needs some positive sample_weight.")
    equal = positive.min() == positive.max()
    unit = float(positive[0]) if equal else None
    total = positive.size if equal else float(positive.sum(dtype=np.float64))
    what = "the number of rows" if equal and unit == 1.0 else "the total sample weight"
    if size_min is not None and size_max is not None and size_min > size_max:
        raise ValueError(f"size_min={size_min} must be <= size_max={size_max}.")
    lower = 0.0 if size_min is None else float(size_min)
    upper = math.inf if size_max is None else float(size_max)
    if equal:  # whole rows of weight `unit` (a relative margin for the division's rounding)
        lower = float(math.ceil(lower / unit * (1 - 1e-12)))
        upper = float(math.floor(upper / unit * (1 + 1e-12))) if upper < math.inf else upper
    if lower > upper:  # (equal weights: no whole number of rows between the bounds)
        raise ValueError(
            f"size_min={size_min} and size_max={size_max} hold no whole number of rows of "
            f"weight {unit}: at least {lower:g} and at most {upper:g} rows.")
    # weights: sums round, so a bound that meets the total to rounding holds (at it)
    slack = 0.0 if equal else 1e-9 * total
    if n_clusters * lower > total + slack:
        raise ValueError(
            f"size_min={size_min} cannot hold: n_clusters={n_clusters} clusters of at least "
            f"{_amount(lower, unit)} need more than {what}, {_amount(total, unit)}.")
    if n_clusters * upper < total - slack:
        raise ValueError(
            f"size_max={size_max} cannot hold: n_clusters={n_clusters} clusters of at most "
            f"{_amount(upper, unit)} take less than {what}, {_amount(total, unit)}.")
    if not equal:
        lower, upper = min(lower, total / n_clusters), max(upper, total / n_clusters)
    return lower, min(upper, float(total)), unit


def _amount(rows, unit):
    """An amount in rows of weight ``unit`` (or in weight if ``None``), for messages."""
    if unit is None:
        return f"{rows:g}"
    return f"{rows:g} rows" if unit == 1.0 else f"{rows:g} rows of weight {unit:g}"


def _direct_dist2(X, centers, winners, n_threads):
    """The squared distances of each row of ``X`` to its ``winners``' centres, computed
    directly (not from products) by the labels' distance kernel, one column at a time;
    float64 (for the solver's sums), of values in ``X``'s dtype."""
    out = np.empty(winners.shape, dtype=np.float64)
    column = np.empty(X.shape[0], dtype=X.dtype)
    for j in range(winners.shape[1]):
        _assign.dist2_to_labels(X, centers, np.ascontiguousarray(winners[:, j]), column,
                                n_threads)
        out[:, j] = column
    return out


def _candidates(X, centers, prices, n_candidates, n_threads):
    """Each row's ``n_candidates`` centres of least ``dist2 - price`` (ascending), and the
    evaluations.

    The prices enter the existing nearest-centres kernel as one more coordinate: centre
    ``c`` gets ``sqrt(P - p_c)`` (``P`` the largest price) and every row 0 there, so the
    kernel's ``dist2 + P - p_c`` ranks the centres by ``dist2 - p_c``."""
    p = prices[:-1]
    if p.max() > p.min():
        top = p.max()
        lift = np.sqrt(np.maximum(top - p, 0.0)).astype(X.dtype)
        X = np.hstack([X, np.zeros((X.shape[0], 1), dtype=X.dtype)])
        centers_lifted = np.ascontiguousarray(np.hstack([centers, lift[:, None]]))
    else:
        X, centers_lifted = np.ascontiguousarray(X), centers
    winners = np.empty((X.shape[0], n_candidates), dtype=np.int32)
    win_dist2 = np.empty((X.shape[0], n_candidates), dtype=X.dtype)
    with single_threaded_blas():  # (the kernel calls gemm inside its parallel loop)
        n_evals = _topk.assign_topk(X, centers_lifted, winners, win_dist2, n_threads)
    return winners, n_evals


#: Relative rounding of the nearest-centres kernel's ranking (gemm products), by dtype:
#: a bound read from the ranked candidates is lowered by it, times the row's scale.
_RANK_ROUNDING = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}


class Candidates:
    """A solve's candidate graph, kept for the next solve (:attr:`BalancedResult.candidates`).

    Attributes
    ----------
    winners : ndarray of shape (n_samples, k), dtype=int32
        Each row's candidate centres.
    bound : ndarray of shape (n_samples,), dtype=float64
        A lower bound on ``dist2 - price`` of every other centre of the row, at ``prices``
        and ``centers``.
    prices : ndarray of shape (n_clusters + 1,)
    centers : ndarray of shape (n_clusters, n_features)
    """

    def __init__(self, winners, bound, prices, centers):
        self.winners, self.bound, self.prices, self.centers = winners, bound, prices, centers


class _Block:
    """Candidates of some rows: ``winners`` (ascending at the prices ``p0`` they were
    ranked at, or kept from the last solve), their direct ``dist2`` at the current centres,
    and ``bound``: every other centre's ``dist2 - p0`` is at least ``bound`` at the centres
    of the ranking, which have since moved by at most ``shift``."""

    def __init__(self, rows, winners, dist2, p0, bound, shift=0.0, margin=None):
        self.rows, self.winners, self.dist2, self.p0 = rows, winners, dist2, p0
        self.bound, self.shift, self.margin = bound, shift, margin

    def bound_at(self, k, prices):
        """Each row's lower bound on ``dist2 - price`` at ``prices`` and the current
        centres of every centre but its first ``k`` candidates (the triangle inequality
        for the centres' moves: ``d >= d0 - 2 shift sqrt(d0)``)."""
        if k == self.winners.shape[1]:
            bound = self.bound
        else:  # (a ranking: the k-th candidate's value, less the ranking's rounding)
            last = self.winners[:, k - 1]
            bound = self.dist2[:, k - 1] - self.p0[last] - self.margin
        moved = float(np.max(prices[:-1] - self.p0[:-1]))
        if self.shift > 0:  # (a row with every centre a candidate keeps +inf)
            finite = np.isfinite(bound)
            reach = np.sqrt(np.maximum(np.where(finite, bound, 0.0) + self.p0[:-1].max(),
                                       0.0))
            return np.where(finite, bound - moved - 2.0 * self.shift * reach, np.inf)
        return bound - moved


class _Graph:
    """The candidate graph: per row its centres of least ``dist2 - price`` at the prices
    of the time (or the last solve's, checked by bounds), renewed and widened row by row."""

    def __init__(self, X, centers, n_threads):
        self.X, self.centers, self.n_threads = X, centers, n_threads
        self.n_clusters = centers.shape[0]
        self.width = np.zeros(X.shape[0], dtype=np.intp)
        self.renewed = np.zeros(X.shape[0], dtype=np.intp)
        self.blocks = []
        self.n_evals = self.n_widened = 0

    @classmethod
    def ranked(cls, X, centers, prices, n_candidates, n_threads):
        """Every row's ``n_candidates`` centres of least ``dist2 - price`` at ``prices``."""
        graph = cls(X, centers, n_threads)
        graph._rank(np.arange(X.shape[0]), min(n_candidates, graph.n_clusters), prices)
        return graph

    @classmethod
    def kept(cls, X, centers, candidates, n_threads):
        """The last solve's candidates, their distances at the new centres (``N k``
        evaluations) and their bound loosened by how far each centre moved."""
        graph = cls(X, centers, n_threads)
        dist2 = _direct_dist2(X, centers, candidates.winners, n_threads)
        graph.n_evals += dist2.size
        move = centers.astype(np.float64) - candidates.centers
        shift = float(np.sqrt(np.einsum("ij,ij->i", move, move).max()))
        graph.width[:] = candidates.winners.shape[1]
        graph.blocks.append(_Block(np.arange(X.shape[0]), candidates.winners, dist2,
                                   candidates.prices, candidates.bound, shift))
        return graph

    def _rank(self, rows, k, prices):
        # a graph that blocks the bounds again and again widens every row (up to all
        # centres): refuse before allocating more than the fit's memory holds (per
        # candidate: its ranking, its float64 distance and the solve's CSR copy; per row,
        # the rows lifted by the prices' coordinate)
        itemsize = self.X.dtype.itemsize
        per_row = k * (4 + itemsize + 8 + 12) + (self.X.shape[1] + 1) * itemsize
        check_memory(rows.size * per_row,
                     f"BalancedEStep's candidate graph ({k} centres for each of {rows.size} "
                     "rows, widened because the bounds blocked the nearer candidates)",
                     "Loosen the size bounds, use fewer clusters or fewer rows, or raise "
                     "memory_limit.")
        X = self.X if rows.size == self.X.shape[0] else np.ascontiguousarray(self.X[rows])
        winners, n_evals = _candidates(X, self.centers, prices, k, self.n_threads)
        dist2 = _direct_dist2(X, self.centers, winners, self.n_threads)
        self.n_evals += n_evals + dist2.size
        self.width[rows] = k
        # the kernel ranks by products rounded at the scale of the rows, centres and lift
        scale = (np.einsum("ij,ij->i", X, X, dtype=np.float64)
                 + float(np.einsum("ij,ij->i", self.centers, self.centers,
                                   dtype=np.float64).max())
                 + float(prices[:-1].max() - prices[:-1].min()))
        margin = _RANK_ROUNDING[X.dtype] * scale
        last = winners[:, -1]
        bound = (dist2[:, -1] - prices[last] - margin if k < self.n_clusters
                 else np.full(rows.size, np.inf))
        self.blocks.append(_Block(rows, winners, dist2, prices.copy(), bound, 0.0, margin))
        if len(self.blocks) > 1:  # free the blocks whose every row has newer candidates
            latest = self._latest()
            alive = np.zeros(len(self.blocks), dtype=bool)
            alive[latest[latest >= 0]] = True
            self.blocks = [block for block, keep in zip(self.blocks, alive) if keep]

    def widen(self, rows, prices):
        """New candidates for ``rows``, ranked at ``prices``: as many as before the first
        two times a row gets new ones (the prices moved: other centres are near now),
        then four times as many (all centres at most). ``False`` if all of them had all
        centres already."""
        rows = rows[self.width[rows] < self.n_clusters]
        if rows.size == 0:
            return False
        self.n_widened += rows.size
        grow = self.renewed[rows] >= 2
        self.renewed[rows] += 1
        new_width = np.where(grow, np.minimum(4 * self.width[rows], self.n_clusters),
                             self.width[rows])
        for k in np.unique(new_width):
            self._rank(rows[new_width == k], int(k), prices)
        return True

    def imbalance(self, mass, lower, upper, prices):
        """How far the rows at their best first candidates at ``prices`` are from the
        bounds: the mass above ``upper`` and below ``lower``, over all clusters."""
        block = self.blocks[0]
        value = block.dist2 - prices[block.winners]
        best = block.winners[np.arange(block.rows.size), np.argmin(value, axis=1)]
        size = np.bincount(best, mass[block.rows], minlength=self.n_clusters)
        return float(np.maximum(size - upper, 0).sum() + np.maximum(lower - size, 0).sum())

    def _latest(self):
        latest = np.full(self.width.shape[0], -1)
        for number, block in enumerate(self.blocks):
            latest[block.rows] = number  # (later blocks are wider or newer)
        return latest

    def csr(self, keep):
        """The graph of the rows ``keep`` (a boolean mask) as CSR arrays, each row with its
        latest candidates."""
        n_rows = self.width.shape[0]
        if len(self.blocks) == 1 and keep.all():  # (the usual step: the arrays as they are)
            block = self.blocks[0]
            k = block.winners.shape[1]
            return (np.arange(0, n_rows * k + 1, k, dtype=np.int64),
                    block.winners.reshape(-1), block.dist2.reshape(-1))
        latest = self._latest()
        width = np.where(keep, self.width, 0)
        ptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(width, out=ptr[1:])
        idx = np.empty(ptr[-1], dtype=np.int32)
        d2 = np.empty(ptr[-1], dtype=np.float64)
        for number, block in enumerate(self.blocks):
            mine = (latest[block.rows] == number) & keep[block.rows]
            if not mine.any():
                continue
            flat = (ptr[block.rows[mine]][:, None]
                    + np.arange(block.winners.shape[1])[None, :]).ravel()
            idx[flat] = block.winners[mine].ravel()
            d2[flat] = block.dist2[mine].ravel()
        return ptr, idx, d2

    def uncertified(self, rows, labels, label_d2, prices):
        """Of ``rows`` (with their labels), those that might prefer a centre beyond their
        candidates at ``prices``: their label's ``dist2 - price`` is above the bound on
        every other centre's."""
        latest = self._latest()
        where = np.full(self.width.shape[0], -1)
        where[rows] = np.arange(rows.size)
        doubtful = []
        for number, block in enumerate(self.blocks):
            k = block.winners.shape[1]
            if k == self.n_clusters:
                continue  # all centres are candidates
            mine = (latest[block.rows] == number) & (where[block.rows] >= 0)
            if not mine.any():
                continue
            at = where[block.rows[mine]]
            bound = block.bound_at(k, prices)[mine]
            bad = bound < label_d2[at] - prices[labels[at]]
            doubtful.append(block.rows[mine][bad])
        return np.concatenate(doubtful) if doubtful else np.empty(0, dtype=np.intp)

    def kept_candidates(self, k, prices):
        """The :class:`Candidates` the next solve starts from: each row's first ``k``
        candidates of its latest block, bounded at ``prices`` and the current centres."""
        n_rows = self.width.shape[0]
        winners = np.empty((n_rows, k), dtype=np.int32)
        bound = np.empty(n_rows)
        latest = self._latest()
        for number, block in enumerate(self.blocks):
            mine = latest[block.rows] == number
            if not mine.any():
                continue
            winners[block.rows[mine]] = block.winners[mine, :k]
            bound[block.rows[mine]] = block.bound_at(k, prices)[mine]
        return Candidates(winners, bound, prices.copy(),
                          self.centers.astype(np.float64, copy=True))


def balanced_assignment(X, sample_weight, centers, size_min=None, size_max=None,
                        prices=None, n_threads=1, n_candidates=N_CANDIDATES,
                        candidates=None):
    """The assignment of least weighted squared distance with every cluster's size bounded.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        C-contiguous float32 or float64 rows.
    sample_weight : ndarray of shape (n_samples,)
        Non-negative weights of ``X``'s dtype; the bounds are in weight (in rows for equal
        weights; see :func:`size_bounds` and :class:`BalancedEStep` for what unequal
        weights guarantee). Rows of zero weight count in no bound: each goes to a centre of
        least ``dist2 - price``.
    centers : ndarray of shape (n_clusters, n_features)
    size_min, size_max : float or None, default=None
    prices : ndarray of shape (n_clusters + 1,) or None, default=None
        A previous solve's :attr:`BalancedResult.prices` (any values are valid): a warm
        start. ``None``: zeros.
    n_threads : int, default=1
    n_candidates : int, default=N_CANDIDATES
        Candidate centres per row at the start.
    candidates : Candidates or None, default=None
        A previous solve's :attr:`BalancedResult.candidates` (of the same rows), with its
        ``prices``: the rows keep them while their bound certifies them (``N k``
        evaluations instead of ``N C``). ``None``: every row's are ranked afresh.

    Returns
    -------
    result : BalancedResult

    Raises
    ------
    ValueError
        If the bounds cannot hold (see :func:`size_bounds`).
    """
    n_samples, n_clusters = X.shape[0], centers.shape[0]
    w = np.asarray(sample_weight, dtype=np.float64)
    lower, upper, unit = size_bounds(size_min, size_max, n_clusters, w)
    n_evals = n_paths = 0
    keep = w > 0
    mass = np.ones(n_samples) if unit is not None else w
    coarse = n_samples >= 4 * _COARSE_ROWS_PER_CLUSTER * n_clusters
    graph = None
    if prices is not None:
        prices = np.array(prices, dtype=np.float64)
        if candidates is not None and candidates.winners.shape[0] == n_samples:
            graph = _Graph.kept(X, centers, candidates, n_threads)
        else:
            graph = _Graph.ranked(X, centers, prices, n_candidates, n_threads)
        # a start far from balance (the centres moved much since the prices were found)
        # is mended on samples first, as a cold start is
        if coarse and graph.imbalance(mass * keep, lower, upper, prices) > _FAR * math.sqrt(
                n_samples * n_clusters):
            n_evals = graph.n_evals
            graph = None
    if graph is None:
        if coarse:
            prices, evals, n_paths = _coarse_prices(X, w, centers, lower, upper, unit,
                                                    n_threads, n_candidates, prices)
            n_evals += evals
        elif prices is None:
            prices = np.zeros(n_clusters + 1)
        graph = _Graph.ranked(X, centers, prices, n_candidates, n_threads)
    graph.n_evals += n_evals
    # integral masses and bounds solve exactly; weights, to a relative tolerance
    tol = 0.0 if unit is not None else 1e-12 * float(w.sum())
    lower_c = np.full(n_clusters, lower)
    upper_c = np.full(n_clusters, upper)
    while True:
        ptr, idx, d2 = graph.csr(keep)
        held = np.flatnonzero(keep)
        labels = np.empty(held.size, dtype=np.int32)
        label_d2 = np.empty(held.size)
        status, splits, paths, _, _ = _balanced.transport(
            np.ascontiguousarray(ptr[np.r_[held, n_samples]]), idx, d2,
            np.ascontiguousarray(mass[held]), lower_c, upper_c, prices, labels, label_d2,
            tol)
        n_paths += paths
        if status == 2:
            raise MemoryError("BalancedEStep's solver ran out of memory.")
        if status == 1:  # the candidates block the bounds: renew every row's
            if not graph.widen(held, prices):
                raise ValueError("The size bounds cannot be met (no feasible assignment).")
            continue
        # optimal on the candidates; over all centres too, unless a row might prefer a
        # centre beyond its candidates at these prices
        doubtful = graph.uncertified(held, labels, label_d2, prices)
        if doubtful.size == 0 or not graph.widen(doubtful, prices):
            break
    out_labels = np.empty(n_samples, dtype=np.int32)
    out_d2 = np.empty(n_samples, dtype=np.float64)
    out_labels[held], out_d2[held] = labels, label_d2
    split_rows = 0
    if splits[0].size:
        split_rows = np.unique(splits[0]).size
        rows, clusters = round_splits(held[splits[0]], *splits[1:], w)
        out_labels[rows] = clusters
        out_d2[rows] = _distances_of(graph, rows, clusters)
    free = np.flatnonzero(~keep)
    if free.size:  # weightless rows: a centre of least dist2 - price among all
        with single_threaded_blas():
            d2_free = all_dist2(np.ascontiguousarray(X[free]), centers, n_threads)
        graph.n_evals += d2_free.size
        out_labels[free] = np.argmin(d2_free - prices[:-1], axis=1)
        out_d2[free] = d2_free[np.arange(free.size), out_labels[free]]
    kept = graph.kept_candidates(min(n_candidates, n_clusters), prices)
    return BalancedResult(out_labels, out_d2.astype(X.dtype), prices, graph.n_evals, n_paths,
                          graph.n_widened, split_rows, kept)


#: A warm start whose imbalance exceeds this many times ``sqrt(N C)`` (about what a sample
#: leaves) is mended on samples first.
_FAR = 1.0

#: A cold start first solves on samples of about this many rows per cluster, then on
#: samples 4 times larger, each from the last one's prices (:func:`_coarse_prices`).
_COARSE_ROWS_PER_CLUSTER = 20


def _coarse_prices(X, w, centers, lower, upper, unit, n_threads, n_candidates,
                   prices=None):
    """Prices for a cold start (or one far from balance, from its ``prices``): the optimal
    prices of nested random samples of the rows (a fixed seed: the same for every fit),
    each solve started from the last one's, with the bounds scaled to the sample (rounded
    outwards in rows, so that they always hold).

    From zero prices the solver moves every unit of the nearest-centre assignment's
    imbalance along its own path; a sample's optimal prices leave only the imbalance of
    sampling, ``O(sqrt(n C))`` units, to the next, larger solve (20,000 rows, 100
    clusters: 0.5 s instead of 12 s).

    Returns
    -------
    prices : ndarray of shape (n_clusters + 1,)
    n_distance_evals, n_paths : int
    """
    n_samples, n_clusters = X.shape[0], centers.shape[0]
    order = np.random.default_rng(0).permutation(n_samples)
    n_rows = _COARSE_ROWS_PER_CLUSTER * n_clusters
    n_evals, n_paths = 0, 0
    total = float(w.sum(dtype=np.float64))
    while 2 * n_rows <= n_samples:
        rows = np.sort(order[:n_rows])
        if unit is not None:  # in rows
            share = n_rows / n_samples
            sub_w = np.ones(n_rows, dtype=X.dtype)
            sub_lower = math.floor(lower * share)
            sub_upper = math.ceil(upper * share) if upper < math.inf else None
        else:
            sub_w = w[rows].astype(X.dtype)
            share = float(sub_w.sum(dtype=np.float64)) / total
            sub_lower, sub_upper = lower * share, upper * share
        result = balanced_assignment(np.ascontiguousarray(X[rows]), sub_w, centers,
                                     sub_lower, sub_upper, prices, n_threads, n_candidates)
        prices = result.prices
        n_evals += result.n_distance_evals
        n_paths += result.n_paths
        n_rows *= 4
    return prices, n_evals, n_paths


def _distances_of(graph, rows, clusters):
    """The squared distances of ``rows`` to ``clusters`` from the candidate graph."""
    ptr, idx, d2 = graph.csr(np.ones(graph.width.shape[0], dtype=bool))
    out = np.empty(len(rows))
    for n, (row, cluster) in enumerate(zip(rows, clusters)):
        span = slice(ptr[row], ptr[row + 1])
        out[n] = d2[span][idx[span] == cluster][0]
    return out
