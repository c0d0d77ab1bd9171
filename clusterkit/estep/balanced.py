"""Balanced clusters: the assignment of least (weighted) squared distance under bounds on
every cluster's size (:class:`BalancedEStep`), and its solver (:func:`balanced_assignment`).

For given centres the assignment is a transport problem: each row ships its weight to
clusters at ``d(x, c)^2`` per unit, and cluster ``c`` must receive between ``size_min`` and
``size_max``. It is solved on a sparse graph, each row linked to its few nearest centres,
by successive shortest paths over the clusters (``_kernels/_balanced.pyx``); the prices the
paths leave (one per centre) start the next step's solve. The candidate graph is widened
where it blocks the bounds, and every row is then checked against all centres with the
prices, so the result is optimal over the full problem.
"""
import math
from numbers import Real

import numpy as np

from .._data.moments import weighted_sum
from .._data.nearest import all_dist2, single_threaded_blas
from .._engine.assignment import QUANTIZATION_ERROR, Assignment
from .._engine.constraints import Interval
from .._engine.contracts import EStep
from .._kernels import _balanced, _topk

__all__ = ["BalancedResult", "balanced_assignment", "size_bounds"]

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
        Rows whose candidate centres had to be widened (over all widenings).
    split_rows : int
        Rows the fractional optimum splits between clusters (weighted bounds only; the
        labels then round them, see :class:`BalancedEStep`).
    """

    def __init__(self, labels, dist2, prices, n_distance_evals, n_paths, n_widened,
                 split_rows):
        self.labels, self.dist2, self.prices = labels, dist2, prices
        self.n_distance_evals, self.n_paths = n_distance_evals, n_paths
        self.n_widened, self.split_rows = n_widened, split_rows


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
    if n_clusters * lower > total:
        raise ValueError(
            f"size_min={size_min} cannot hold: n_clusters={n_clusters} clusters of at least "
            f"{_amount(lower, unit)} need more than {what}, {_amount(total, unit)}.")
    if n_clusters * upper < total:
        raise ValueError(
            f"size_max={size_max} cannot hold: n_clusters={n_clusters} clusters of at most "
            f"{_amount(upper, unit)} take less than {what}, {_amount(total, unit)}.")
    if lower > upper:  # (equal weights: no whole number of rows between the bounds)
        raise ValueError(
            f"size_min={size_min} and size_max={size_max} hold no whole number of rows of "
            f"weight {unit}: at least {lower:g} and at most {upper:g} rows.")
    return lower, min(upper, float(total)), unit


def _amount(rows, unit):
    """An amount in rows of weight ``unit`` (or in weight if ``None``), for messages."""
    if unit is None:
        return f"{rows:g}"
    return f"{rows:g} rows" if unit == 1.0 else f"{rows:g} rows of weight {unit:g}"


def _candidates(X, centers, n_candidates, n_threads):
    """Each row's ``n_candidates`` nearest centres (ascending) and their squared distances,
    and the evaluations (all ``N C``)."""
    winners = np.empty((X.shape[0], n_candidates), dtype=np.int32)
    win_dist2 = np.empty((X.shape[0], n_candidates), dtype=X.dtype)
    with single_threaded_blas():  # (the kernel calls gemm inside its parallel loop)
        n_evals = _topk.assign_topk(np.ascontiguousarray(X), centers, winners, win_dist2,
                                    n_threads)
    return winners, win_dist2, n_evals


class _Graph:
    """The candidate graph: per row a number of nearest centres, widened row by row."""

    def __init__(self, X, centers, n_candidates, n_threads):
        self.X, self.centers, self.n_threads = X, centers, n_threads
        self.n_clusters = centers.shape[0]
        k = min(n_candidates, self.n_clusters)
        winners, win_dist2, self.n_evals = _candidates(X, centers, k, n_threads)
        self.rows = [(np.arange(X.shape[0]), winners, win_dist2)]
        self.width = np.full(X.shape[0], k, dtype=np.intp)
        self.n_widened = 0

    def widen(self, rows):
        """Give ``rows`` four times their candidates (all centres at most)."""
        rows = rows[self.width[rows] < self.n_clusters]
        if rows.size == 0:
            return False
        self.width[rows] = np.minimum(4 * self.width[rows], self.n_clusters)
        self.n_widened += rows.size
        for k in np.unique(self.width[rows]):
            group = rows[self.width[rows] == k]
            X = np.ascontiguousarray(self.X[group])
            if k == self.n_clusters:  # all centres: their distances as the kernels rank them
                with single_threaded_blas():
                    d2 = all_dist2(X, self.centers, self.n_threads)
                self.n_evals += d2.size
                order = np.argsort(d2, axis=1, kind="stable").astype(np.int32)
                winners, win_dist2 = order, np.take_along_axis(d2, order, axis=1)
            else:
                winners, win_dist2, n_evals = _candidates(X, self.centers, int(k),
                                                          self.n_threads)
                self.n_evals += n_evals
            self.rows.append((group, winners, win_dist2))
        return True

    def csr(self, keep):
        """The graph of the rows ``keep`` (a boolean mask) as CSR arrays, each row with its
        widest candidates."""
        n_rows = self.width.shape[0]
        latest = np.full(n_rows, -1)
        for number, (rows, _, _) in enumerate(self.rows):
            latest[rows] = number  # (later blocks are wider)
        width = np.where(keep, self.width, 0)
        ptr = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(width, out=ptr[1:])
        idx = np.empty(ptr[-1], dtype=np.int32)
        d2 = np.empty(ptr[-1], dtype=np.float64)
        for number, (rows, winners, win_dist2) in enumerate(self.rows):
            mine = (latest[rows] == number) & keep[rows]
            if not mine.any():
                continue
            starts = ptr[rows[mine]]
            cols = np.arange(winners.shape[1])
            flat = (starts[:, None] + cols[None, :]).ravel()
            idx[flat] = winners[mine].ravel()
            d2[flat] = win_dist2[mine].ravel()
        return ptr, idx, d2


def balanced_assignment(X, sample_weight, centers, size_min=None, size_max=None,
                        prices=None, n_threads=1, n_candidates=N_CANDIDATES):
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
    prices = (np.zeros(n_clusters + 1) if prices is None
              else np.array(prices, dtype=np.float64))
    keep = w > 0
    mass = np.ones(n_samples) if unit is not None else w
    # integral masses and bounds solve exactly; weights, to a relative tolerance
    tol = 0.0 if unit is not None else 1e-12 * float(w.sum())
    graph = _Graph(X, centers, n_candidates, n_threads)
    lower_c = np.full(n_clusters, lower)
    upper_c = np.full(n_clusters, upper)
    n_paths = 0
    while True:
        ptr, idx, d2 = graph.csr(keep)
        held = np.flatnonzero(keep)
        labels = np.empty(held.size, dtype=np.int32)
        label_d2 = np.empty(held.size)
        status, splits, paths, _ = _balanced.transport(
            np.ascontiguousarray(ptr[np.r_[held, n_samples]]), idx, d2,
            np.ascontiguousarray(mass[held]), lower_c, upper_c, prices, labels, label_d2,
            tol)
        n_paths += paths
        if status == 2:
            raise MemoryError("BalancedEStep's solver ran out of memory.")
        if status == 1:  # the candidates block the bounds: widen every row's
            if not graph.widen(held):
                raise ValueError("The size bounds cannot be met (no feasible assignment).")
            continue
        # optimal on the candidates; over all centres too, unless a row might prefer a
        # centre beyond its last candidate at these prices
        slack = d2[ptr[held + 1] - 1] - prices[:-1].max() - (label_d2 - prices[labels])
        doubtful = held[slack < 0]
        if doubtful.size == 0 or not graph.widen(doubtful):
            break
    out_labels = np.empty(n_samples, dtype=np.int32)
    out_d2 = np.empty(n_samples, dtype=np.float64)
    out_labels[held], out_d2[held] = labels, label_d2
    split_rows = 0
    if splits[0].size:
        split_rows = np.unique(splits[0]).size
        rows, clusters = _round_splits(held[splits[0]], *splits[1:], w)
        out_labels[rows] = clusters
        out_d2[rows] = _distances_of(graph, rows, clusters)
    free = np.flatnonzero(~keep)
    if free.size:  # weightless rows: a centre of least dist2 - price among all
        with single_threaded_blas():
            d2_free = all_dist2(np.ascontiguousarray(X[free]), centers, n_threads)
        graph.n_evals += d2_free.size
        out_labels[free] = np.argmin(d2_free - prices[:-1], axis=1)
        out_d2[free] = d2_free[np.arange(free.size), out_labels[free]]
    return BalancedResult(out_labels, out_d2.astype(X.dtype), prices, graph.n_evals, n_paths,
                          graph.n_widened, split_rows)


def _distances_of(graph, rows, clusters):
    """The squared distances of ``rows`` to ``clusters`` from the candidate graph."""
    ptr, idx, d2 = graph.csr(np.ones(graph.width.shape[0], dtype=bool))
    out = np.empty(rows.size)
    for n, (row, cluster) in enumerate(zip(rows, clusters)):
        span = slice(ptr[row], ptr[row + 1])
        out[n] = d2[span][idx[span] == cluster][0]
    return out


def _round_splits(rows, clusters, masses, d2, weight):
    """Whole labels for the rows a fractional optimum splits, at no more cost.

    The split entries form a bipartite graph of rows and clusters. While it has an edge,
    take a cycle, or a path between two clusters of one entry each, and shift mass along it
    alternately (every row keeps its weight, every inner cluster its total) in the
    direction that does not raise the cost, until an entry empties or fills its row. Only a
    path's two end clusters change total, each while it holds one split entry: from that
    entry's mass to 0 or to the row's weight, so each cluster's total moves by less than
    the weight of one split row.

    Returns
    -------
    rows, clusters : ndarray
        Each split row once, and the cluster it goes to.
    """
    entry = {}  # (row, cluster) -> [mass, d2]
    for row, cluster, mass, dist in zip(rows.tolist(), clusters.tolist(), masses, d2):
        entry[row, cluster] = [float(mass), float(dist)]
    by_row, by_cluster = {}, {}
    for row, cluster in entry:
        by_row.setdefault(row, set()).add(cluster)
        by_cluster.setdefault(cluster, set()).add(row)
    full = {}

    def drop(row, cluster):
        del entry[row, cluster]
        by_row[row].discard(cluster)
        by_cluster[cluster].discard(row)
        if len(by_row[row]) == 1:  # the row is whole again
            (last,) = by_row[row]
            full[row] = last
            del entry[row, last]
            by_row[row].clear()
            by_cluster[last].discard(row)

    while entry:
        leaves = [c for c, held in by_cluster.items() if len(held) == 1]
        start = leaves[0] if leaves else next(c for c, held in by_cluster.items() if held)
        # walk cluster -> row -> cluster ..., never back along the edge just taken
        walk, seen = [("c", start)], {("c", start): 0}
        came = None
        while True:
            kind, node = walk[-1]
            if kind == "c":
                options = [r for r in by_cluster[node] if r != came]
                if not options:  # a leaf cluster: the path ends here
                    break
                nxt = ("r", min(options))
            else:
                nxt = ("c", min(c for c in by_row[node] if c != came))
            if nxt in seen:  # a cycle: make it start and end at a cluster
                walk = walk[seen[nxt]:] + [nxt]
                if walk[0][0] == "r":
                    walk = walk[1:] + [walk[1]]
                break
            came = node
            seen[nxt] = len(walk)
            walk.append(nxt)
        # edges (row, from cluster, to cluster): mass moves from -> to along the walk
        edges = [(walk[j][1], walk[j - 1][1], walk[j + 1][1])
                 for j in range(1, len(walk) - 1, 2)]
        gain = sum(entry[r, b][1] - entry[r, a][1] for r, a, b in edges)
        if gain > 0:  # the other way round costs less
            edges = [(r, b, a) for r, a, b in edges]
        delta = min(entry[r, a][0] for r, a, _ in edges)
        for r, a, b in edges:
            entry[r, a][0] -= delta
            entry[r, b][0] += delta
        for r, a, b in edges:
            if (r, a) in entry and entry[r, a][0] <= 1e-12 * weight[r]:
                drop(r, a)
    return (np.fromiter(full.keys(), dtype=np.intp, count=len(full)),
            np.fromiter(full.values(), dtype=np.int32, count=len(full)))
