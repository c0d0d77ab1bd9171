"""The exact bounded E-step whose memory does not grow with the number of clusters: Yinyang's
grouped bounds (:class:`YinyangEStep`; Hamerly's single bound with one group, with a search
of the centre's nearest neighbours at low dimension)."""
import math
from numbers import Integral

import numpy as np

from .._engine.constraints import Interval, Options
from .._kernels import _assign, _centers, _yinyang
from .bounds import Bounds, BoundsEStep, bound_slack, bounds_budget

__all__ = ["YinyangEStep", "yinyang_memory", "yinyang_groups"]

#: Lloyd iterations of the k-means that groups the initial centres (Ding et al. 2015, §3.1).
GROUPING_ITERATIONS = 5

#: Up to this many features the E-step also tests each sample against half the distance from
#: its centre to the nearest other one (Hamerly's test; ``C (C - 1)`` centre distances per
#: step): at low dimension that test keeps most samples from their bounds.
SEPARATION_MAX_FEATURES = 8

#: With one group (Hamerly's bound) at low dimension, each centre's list of its nearest
#: other centres that a sample whose bound fails searches (at most this many).
NEIGHBOURS = 64


def center_neighbours(centers, n_neighbours, n_threads=1):
    """Each centre's ``n_neighbours`` nearest other centres, nearest first, their distances
    to it, and half the distance to the nearest one (kernel ``center_neighbours``).

    Returns
    -------
    neighbours : ndarray of shape (n_clusters, n_neighbours), dtype=int32
    neighbour_dist : ndarray of shape (n_clusters, n_neighbours), dtype=float64
    half_min : ndarray of shape (n_clusters,), dtype=float64
        ``inf`` for a single centre.
    n_distance_evals : int
        ``n_clusters (n_clusters - 1)``.
    """
    n_clusters = centers.shape[0]
    neighbours = np.empty((n_clusters, n_neighbours), dtype=np.int32)
    neighbour_dist = np.empty((n_clusters, n_neighbours))
    n_evals = _centers.center_neighbours(centers, neighbours, neighbour_dist, n_threads)
    half_min = (0.5 * neighbour_dist[:, 0] if n_neighbours > 0
                else np.full(n_clusters, np.inf))
    return neighbours, neighbour_dist, half_min, n_evals


def yinyang_memory(n_samples, n_groups):
    """Bytes :class:`YinyangEStep` keeps for a fit on ``n_samples`` rows: float32 group bounds
    (``4 N t``), and each row's last distance and visit (at most ``12 N``); the per-centre and
    per-group arrays (``O(C)``) are left out."""
    return 4 * n_samples * n_groups + 12 * n_samples


def yinyang_groups(n_samples, n_clusters, max_bounds_bytes=None):
    """The number of groups ``n_groups="auto"`` chooses: ``t = min(ceil(C / 10),
    (budget - 12 N) // (4 N))``, at least 1 and at most ``C``.

    ``C / 10`` is Ding et al.'s choice (a balance between the filters' power and the cost of
    the bounds); the budget caps the ``4 N t`` bytes of bounds: ``max_bounds_bytes``, or when
    ``None`` half the memory available (:func:`~clusterkit.estep.bounds.bounds_budget`, the
    budget of every bounded E-step). For example ``N = 10^6``, ``C = 4096`` in a budget of
    1 GiB: 265 groups (1.0 GiB of bounds) instead of Elkan's 16 GiB.

    Parameters
    ----------
    n_samples, n_clusters : int
    max_bounds_bytes : int or None, default=None

    Returns
    -------
    n_groups : int

    Examples
    --------
    >>> from clusterkit import yinyang_groups
    >>> yinyang_groups(100_000, 1000)
    100
    >>> yinyang_groups(1_000_000, 4096, max_bounds_bytes=2**30)
    265
    """
    return groups_within(n_samples, n_clusters, bounds_budget(max_bounds_bytes))


def groups_within(n_samples, n_clusters, budget):
    """:func:`yinyang_groups` for a budget in bytes already resolved (``None``: no limit)."""
    by_memory = (n_clusters if budget is None
                 else (budget - 12 * n_samples) // max(4 * n_samples, 1))
    return int(max(1, min(math.ceil(n_clusters / 10), by_memory, n_clusters)))


def center_groups(centers, n_groups, n_threads):
    """Group the centres by k-means on them (Ding et al. 2015, §3.1): ``n_groups`` starting
    centres evenly spaced in index (deterministic: no draw from the fit's random stream, whose
    sequence must stay Lloyd's), then :data:`GROUPING_ITERATIONS` Lloyd iterations; empty
    groups are dropped.

    Returns
    -------
    group_of : ndarray of shape (n_clusters,), dtype=int32
        Group of each centre, ``0 .. n_groups' - 1`` with ``n_groups' <= n_groups``.
    n_distance_evals : int
    """
    n_clusters = centers.shape[0]
    group_of = np.zeros(n_clusters, dtype=np.int32)
    if n_groups <= 1:
        return group_of, 0
    if n_groups >= n_clusters:
        return np.arange(n_clusters, dtype=np.int32), 0
    points = np.ascontiguousarray(centers, dtype=np.float64)
    means = points[np.linspace(0, n_clusters - 1, n_groups).round().astype(np.intp)].copy()
    dist2 = np.empty(n_clusters)
    n_evals = 0
    for _ in range(GROUPING_ITERATIONS):
        n_evals += _assign.assign_full(points, means, group_of, dist2, n_threads)
        counts = np.bincount(group_of, minlength=n_groups)
        sums = np.zeros_like(means)
        np.add.at(sums, group_of, points)
        filled = counts > 0
        means[filled] = sums[filled] / counts[filled, None]
    used = np.unique(group_of)
    renumber = np.zeros(n_groups, dtype=np.int32)
    renumber[used] = np.arange(used.size, dtype=np.int32)
    return renumber[group_of], n_evals


class _YinyangBounds(Bounds):
    """:class:`YinyangEStep`'s per-run state: the stored group bounds and each row's last
    distance and visit; the groups (``members`` in group order, ``group_starts``,
    ``group_of``); per group the sum of its largest moves (now and at the last call); per
    centre its move at this call (``shift``) and the call at which it last moved; the number
    of calls (``step``) and the coordinates' ``scale`` (see
    :func:`~clusterkit.estep.bounds.bounds_scale`)."""

    def __init__(self, n_samples, group_of, dtype, scale, separated=False):
        n_groups = int(group_of.max(initial=0)) + 1
        super().__init__(np.empty((n_samples, n_groups), dtype=np.float32), scale)
        self.last_dist2 = np.empty(n_samples, dtype=dtype)
        self.visit = np.zeros(n_samples, dtype=np.int32)
        self.group_of = group_of
        self.members = np.argsort(group_of, kind="stable").astype(np.int32)
        self.group_starts = np.zeros(n_groups + 1, dtype=np.intp)
        np.cumsum(np.bincount(group_of, minlength=n_groups), out=self.group_starts[1:])
        self.group_shift_sum = np.zeros(n_groups)
        self.group_shift_prev = np.zeros(n_groups)
        self.shift = np.zeros(group_of.shape[0])
        self.last_moved = np.zeros(group_of.shape[0], dtype=np.int32)
        self.separated = separated
        self.half_min = np.empty(group_of.shape[0])
        self.neighbours = self.neighbour_dist = None
        self.step = 0

    @property
    def n_groups(self):
        return self.lower.shape[1]


class YinyangEStep(BoundsEStep):
    """Exact hard assignment with Yinyang's grouped bounds: memory that does not grow with C.

    The same labels as :class:`FullEStep` (each sample's nearest centre, ties to the lower
    index), computing far fewer distances once the centres settle (Ding et al. 2015). The
    initial centres are split into ``t`` groups by k-means on them (§3.1). Per sample it keeps
    one lower bound per group, on the distance to every centre of the group except the
    sample's own, and after each step lowers it by the largest move of a centre of the group.
    A sample's exact distance ``u`` to its current centre is known at every visit (computed
    if that centre moved, as :class:`ElkanEStep` does). Then (Algorithm 1):

    * global filter: if every group's bound exceeds ``u``, the label stays;
    * group filter: otherwise only the groups whose bound is at most the best distance so far
      are searched;
    * local filter: in a searched group, centre ``c`` is skipped if the group's bound of the
      previous step minus ``c``'s move exceeds the best distance so far.

    With ``t = 1`` this is Hamerly's algorithm (one bound on the second-nearest centre); with
    ``t = C`` each group is one centre, and the bounds are Elkan's.

    At low dimension (at most 8 features) two more tests come first, as in Hamerly's and the
    Exponion algorithm (Newling & Fleuret 2016): a sample nearer to its centre than half the
    distance from that centre to its nearest other one keeps it without a look at its bounds;
    and with ``t = 1``, a sample whose bound fails searches the other centres in order of
    their distance to its centre, and stops at the first one too far from that centre
    (``d(a, c) - u`` above the second distance so far) to be among its two nearest (the
    bound is then the exact second distance). At low dimension a sample then looks at a few
    centres around its own instead of all ``C``.

    Parameters
    ----------
    n_groups : int or "auto", default="auto"
        ``t``, the number of groups (``1 <= t <= n_clusters``). ``"auto"``:
        :func:`yinyang_groups`, ``min(ceil(C / 10), budget / (4 N))``.
    max_bounds_bytes : int or None, default=None
        Memory budget of the bounds (:func:`yinyang_memory`: ``4 N t + 12 N`` bytes). With
        ``n_groups="auto"`` it caps ``t``; a fit whose bounds need more (a given ``n_groups``,
        or even one group) is refused when it starts. ``None``: half the memory available
        when ``fit`` starts, no limit where that is not known
        (:func:`~clusterkit.estep.bounds.bounds_budget`, the budget of :class:`ElkanEStep`
        and :class:`BoundedEStep` too). A fit needing more than the memory available is
        refused in any case.
    prune : int, "auto" or None, default="auto"
        Exact dimension pruning of the first visits and of the centres the filters do not
        rule out, as :class:`ElkanEStep`'s ``prune`` (a skipped centre's bound stands for
        its distance in its group's bound). The labels and iterates are those without it.
        ``"auto"``: the axes of :class:`FullEStep`'s ``"auto"``, from 256 features and 256
        clusters (below, measured slower than without).

    Notes
    -----
    Memory: ``N x t`` float32 bounds plus ``12 N`` bytes, whatever ``C``: 1.0 GiB for
    ``N = 10^6``, ``C = 4096`` with the 265 groups ``"auto"`` chooses in a budget of 1 GiB,
    where Elkan's bounds take 16 GiB. No ``C x C`` table.

    Cost per step: one distance per sample whose centre moved, plus those the filters do not
    rule out (at a sample's first visit all ``C``); ``O(t)`` per sample for the global filter.
    Grouping the centres costs ``5 C t`` distances once per run, counted under ``"estep"``;
    at low dimension, the centre-centre distances cost ``C (C - 1)`` per step (counted), and
    with ``t = 1`` each centre's 64 nearest centres are sorted per step. A sample whose centre
    did not move and that passes the separation test (or with ``t = 1`` its bound) costs a few
    loads and stores: the kernel tests it in squares before the per-sample routine.

    Deviations from the paper, and why: the upper bound is always the exact distance to the
    current centre (the paper keeps a loose one and tightens it only when the global filter
    fails) because the objective and the M-step read the exact ``dist2``; this costs one
    distance per sample per step, a fraction ``1 / C`` of Lloyd's. The bounds are stored as
    ``l + S_g`` with ``S_g`` the running sum of group ``g``'s largest moves, so that the moves
    reach every bound without a pass over the table and samples outside a mini-batch keep
    valid bounds (the local filter is used only for samples visited in the previous E-step,
    whose old bounds it needs). Group k-means starts from centres evenly spaced in index, not
    random ones, so that the fit's random stream stays that of Lloyd's. Bounds are loosened
    by the relative margin of :class:`ElkanEStep` and stored in float32.

    Hard M-steps, dense data only. Results do not depend on the number of threads.

    References
    ----------
    .. [1] Y. Ding, Y. Zhao, X. Shen, M. Musuvathi and T. Mytkowicz, "Yinyang K-Means: A
       Drop-In Replacement of the Classic K-Means with Consistent Speedup", ICML 2015.
    .. [2] G. Hamerly, "Making k-means even faster", SDM 2010.
    .. [3] J. Newling and F. Fleuret, "Fast k-means with accurate bounds", ICML 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, YinyangEStep
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> Clusterer(2, seed=X[[0, 2]], estep=YinyangEStep(n_groups=1)).fit(X).labels_
    array([0, 0, 1, 1], dtype=int32)
    """

    _parameter_constraints = {**BoundsEStep._parameter_constraints,
                              "n_groups": [Options("auto"), Interval(Integral, 1)]}

    #: ``prune="auto"`` prunes from 256 features (and 256 clusters): fits with the axes of
    #: ``FullEStep``'s ``"auto"`` took 0.85x the time without at 256 features and 0.5-0.8x
    #: from 384 to 1,024, but 1.14-1.31x at 64 and 128 (``benchmarks/bench_pruning.py
    #: --fits ... --estep yinyang --forced``)
    auto_prune_min_features = 256

    _instead = ("use fewer groups (n_groups='auto' fits the budget), reduce the data "
                "(reduce=LWCS(...)), or use FullEStep (Lloyd, no bounds).")

    def __init__(self, n_groups="auto", max_bounds_bytes=None, prune="auto"):
        self.n_groups = n_groups
        self.max_bounds_bytes = max_bounds_bytes
        self.prune = prune

    def _stored_groups(self, bounds):
        return bounds.group_of, bounds.group_shift_sum

    def _visited(self, bounds, rows, labels, dist2):
        bounds.last_dist2[rows] = dist2
        bounds.visit[rows] = bounds.step

    def _resolved_groups(self, n_samples, n_clusters, budget):
        if isinstance(self.n_groups, str):
            return groups_within(n_samples, n_clusters, budget)
        return int(self.n_groups)

    def _check_layout(self, n_clusters):
        """Check ``n_groups <= n_clusters`` (its type and lower end are declared)."""
        if self.n_groups != "auto" and self.n_groups > n_clusters:
            raise ValueError(f"n_groups={self.n_groups} must be <= n_clusters={n_clusters}.")

    def _bounds_bytes(self, n_rows, n_clusters, budget):
        n_groups = self._resolved_groups(n_rows, n_clusters, budget)
        return yinyang_memory(n_rows, n_groups), f"n_groups={n_groups}"

    def _new_bounds(self, X, centers, scale, state):
        """Group the centres (counted under ``"estep"``) and allocate the bounds; at low
        dimension, with Hamerly's test and the neighbour search (see the class notes)."""
        budget = (bounds_budget(self.max_bounds_bytes) if isinstance(self.n_groups, str)
                  else None)
        n_groups = self._resolved_groups(X.shape[0], centers.shape[0], budget)
        group_of, n_evals = center_groups(centers, n_groups, state.config.n_threads)
        state.meter.count_per_chunk("estep", n_evals)
        return _YinyangBounds(X.shape[0], group_of, X.dtype, scale,
                              X.shape[1] <= SEPARATION_MAX_FEATURES)

    def _start_step(self, X, bounds, centers, scale, state):
        # the moves since the last E-step: each group's bound drops by its largest one
        bounds.step += 1
        bounds.shift = shift = scale * np.asarray(state.run.center_shift, dtype=np.float64)
        bounds.group_shift_prev[:] = bounds.group_shift_sum
        bounds.group_shift_sum += np.maximum.reduceat(shift[bounds.members],
                                                      bounds.group_starts[:-1])
        bounds.last_moved[shift > 0] = bounds.step
        bounds.neighbours = bounds.neighbour_dist = None
        if bounds.separated and bounds.n_groups == 1:  # Hamerly's bound: neighbour search
            (bounds.neighbours, bounds.neighbour_dist, bounds.half_min,
             n_evals) = center_neighbours(centers, min(NEIGHBOURS, centers.shape[0] - 1),
                                          state.config.n_threads)
            state.meter.count_per_chunk("estep", n_evals)
        elif bounds.separated:  # Hamerly's test at low dimension (see the class notes)
            state.meter.count_per_chunk("estep", _centers.center_half_min(
                centers, bounds.half_min, state.config.n_threads))

    def _first_visit_kernel(self, X, rows, centers, bounds, labels, dist2, state):
        return _yinyang.yinyang_init_bounds(
            np.ascontiguousarray(X), np.ascontiguousarray(rows), centers, bounds.group_of,
            bounds.group_shift_sum, bounds.step, bounds.lower, bounds.last_dist2, bounds.visit,
            labels, dist2, bound_slack(X.dtype), state.config.n_threads)

    def _revisit_kernel(self, X, sample_weight, rows, previous, centers, bounds, labels,
                        dist2, centers_sum, weight, state):
        return _yinyang.yinyang_assign(
            np.ascontiguousarray(X), sample_weight, rows, centers, bounds.members,
            bounds.group_starts, bounds.group_of, bounds.shift, bounds.group_shift_sum,
            bounds.group_shift_prev, bounds.last_moved, bounds.step, bounds.lower,
            previous, bounds.last_dist2, bounds.visit, labels, dist2, centers_sum, weight,
            bound_slack(X.dtype), state.config.n_threads,
            bounds.half_min if bounds.separated else None, bounds.neighbours,
            bounds.neighbour_dist, **self._prune_args(bounds))
