"""The exact bounded E-step whose memory does not grow with the number of clusters: Yinyang's
grouped bounds (:class:`YinyangEStep`; Hamerly's single bound with one group, with a search
of the centre's nearest neighbours at low dimension)."""
import math

import numpy as np

from .._engine.assignment import QUANTIZATION_ERROR, Assignment
from .._engine.contracts import EStep
from .._engine.state import weighted_sum
from .._estimator.validation import available_memory, check_int, check_memory
from .._kernels import _assign, _centers, _mstep, _yinyang
from .exact import batch_rows, bound_slack, bounds_scale, split_first_visits

__all__ = ["YinyangEStep", "yinyang_memory", "yinyang_groups"]

#: The bounds' budget of ``n_groups="auto"`` when ``max_bounds_bytes`` is ``None``: 1 GiB, or
#: half the memory available when ``fit`` starts if that is less.
YINYANG_DEFAULT_BUDGET = 2 ** 30

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


def _budget(max_bounds_bytes):
    """The bounds' budget in bytes: ``max_bounds_bytes``, or the default (see
    :data:`YINYANG_DEFAULT_BUDGET`)."""
    if max_bounds_bytes is not None:
        return int(max_bounds_bytes)
    available = available_memory()
    return YINYANG_DEFAULT_BUDGET if available is None else min(YINYANG_DEFAULT_BUDGET,
                                                                 available // 2)


def yinyang_groups(n_samples, n_clusters, max_bounds_bytes=None):
    """The number of groups ``n_groups="auto"`` chooses: ``t = min(ceil(C / 10),
    (budget - 12 N) // (4 N))``, at least 1 and at most ``C``.

    ``C / 10`` is Ding et al.'s choice (a balance between the filters' power and the cost of
    the bounds); the budget caps the ``4 N t`` bytes of bounds: ``max_bounds_bytes``, or when
    ``None`` 1 GiB (half the available memory if that is less). For example ``N = 10^6``,
    ``C = 4096``: 265 groups (1.0 GiB of bounds) instead of Elkan's 16 GiB.

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
    by_memory = (_budget(max_bounds_bytes) - 12 * n_samples) // max(4 * n_samples, 1)
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


def _has_repeats(rows):
    """Whether an array of row indices holds a row twice (sorted batches: one pass)."""
    rows = np.asarray(rows)
    if rows.size < 2:
        return False
    if np.all(rows[1:] >= rows[:-1]):
        return bool(np.any(rows[1:] == rows[:-1]))
    return np.unique(rows).size < rows.size


class _YinyangBounds:
    """:class:`YinyangEStep`'s per-run state: the stored group bounds and each row's last
    distance and visit (and the rows' indices ``0 .. N - 1``); the groups (``members`` in group
    order, ``group_starts``, ``group_of``); per group the sum of its largest moves (now and at
    the last call); per centre the call at which it last moved; the number of calls (``step``)
    and the coordinates' ``scale`` (see :func:`~clusterkit.estep.exact.bounds_scale`)."""

    def __init__(self, n_samples, group_of, dtype, scale, separated=False):
        n_groups = int(group_of.max(initial=0)) + 1
        self.lower = np.empty((n_samples, n_groups), dtype=np.float32)
        self.last_dist2 = np.empty(n_samples, dtype=dtype)
        self.visit = np.zeros(n_samples, dtype=np.int32)
        self.all_rows = np.arange(n_samples, dtype=np.intp)
        self.group_of = group_of
        self.members = np.argsort(group_of, kind="stable").astype(np.int32)
        self.group_starts = np.zeros(n_groups + 1, dtype=np.intp)
        np.cumsum(np.bincount(group_of, minlength=n_groups), out=self.group_starts[1:])
        self.group_shift_sum = np.zeros(n_groups)
        self.group_shift_prev = np.zeros(n_groups)
        self.last_moved = np.zeros(group_of.shape[0], dtype=np.int32)
        self.separated = separated
        self.half_min = np.empty(group_of.shape[0])
        self.neighbours = self.neighbour_dist = None
        self.step = 0
        self.scale = scale

    @property
    def n_groups(self):
        return self.lower.shape[1]


class YinyangEStep(EStep):
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
        ``n_groups="auto"`` it caps ``t``; with a given ``n_groups`` a fit whose bounds need
        more is refused when it starts. ``None``: 1 GiB for ``"auto"`` (or half the memory
        available if that is less); a given ``n_groups`` is refused only above the memory
        available.

    Notes
    -----
    Memory: ``N x t`` float32 bounds plus ``12 N`` bytes, whatever ``C``: 1.0 GiB for
    ``N = 10^6``, ``C = 4096`` with the automatic 265 groups, where Elkan's bounds take
    16 GiB. No ``C x C`` table.

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

    exact = True
    objectives = (QUANTIZATION_ERROR,)

    def __init__(self, n_groups="auto", max_bounds_bytes=None):
        self.n_groups = n_groups
        self.max_bounds_bytes = max_bounds_bytes

    def _resolved_groups(self, n_samples, n_clusters):
        if isinstance(self.n_groups, str):
            return yinyang_groups(n_samples, n_clusters, self.max_bounds_bytes)
        return int(self.n_groups)

    def _validate(self, X, n_clusters, composition):
        """Check ``n_groups`` and ``max_bounds_bytes``; refuse soft M-steps and bounds above
        the budget or the memory available.

        Raises
        ------
        TypeError
            If ``n_groups`` is neither ``"auto"`` nor an integer, or ``max_bounds_bytes``
            neither ``None`` nor an integer.
        ValueError
            If ``n_groups`` is outside ``[1, n_clusters]``, the M-step needs
            responsibilities, or the bounds would need more memory than allowed.
        """
        budget = (None if self.max_bounds_bytes is None
                  else check_int(self.max_bounds_bytes, "max_bounds_bytes", minimum=0))
        if isinstance(self.n_groups, str):
            if self.n_groups != "auto":
                raise ValueError(f"Unknown n_groups={self.n_groups!r}; expected 'auto' or an "
                                 "integer.")
        else:
            n_groups = check_int(self.n_groups, "n_groups", minimum=1)
            if n_groups > n_clusters:
                raise ValueError(f"n_groups={n_groups} must be <= n_clusters={n_clusters}.")
        if composition.mstep.needs_resp:
            raise ValueError(f"YinyangEStep assigns hard labels; "
                             f"{type(composition.mstep).__name__} needs responsibilities. Use "
                             "FullEStep, TruncatedEStep or PartialEStep for a Gaussian mixture.")
        n_rows = composition.reduce.max_rows(X.shape[0], n_clusters)
        n_groups = self._resolved_groups(n_rows, n_clusters)
        need = yinyang_memory(n_rows, n_groups)
        if budget is not None and need > budget and not isinstance(self.n_groups, str):
            raise ValueError(
                f"YinyangEStep needs {need / 2**30:.2f} GiB of bounds for {n_rows} samples and "
                f"n_groups={n_groups}, above max_bounds_bytes={budget} "
                f"({budget / 2**30:.2f} GiB). Use fewer groups (n_groups='auto' fits the "
                "budget), raise max_bounds_bytes, or use FullEStep (Lloyd, no bounds).")
        check_memory(need, f"YinyangEStep's bounds for {n_rows} samples and "
                           f"n_groups={n_groups}", "Use fewer groups, reduce the data "
                     "(reduce=LWCS(...)), or use FullEStep (Lloyd, no bounds).")

    def init_state(self, X, sample_weight, centers, state):
        """Group the centres and allocate the bounds for all rows (set at each row's first
        visit), in coordinates scaled as :class:`ElkanEStep`'s where distances could reach
        float32's range."""
        n_groups = self._resolved_groups(X.shape[0], centers.shape[0])
        group_of, n_evals = center_groups(centers, n_groups, state.n_threads)
        state.count("estep", n_evals)
        return _YinyangBounds(X.shape[0], group_of, X.dtype, bounds_scale(X),
                              X.shape[1] <= SEPARATION_MAX_FEATURES)

    def assign(self, X, sample_weight, centers, state):
        """Return the exact nearest-centre assignment of the batch ``state.rows``.

        See :meth:`EStep.assign`; counts the distances computed under ``"estep"``.
        """
        bounds = state.estep_state
        if not isinstance(bounds, _YinyangBounds):  # called without init_state
            bounds = state.estep_state = self.init_state(X, sample_weight, centers, state)
        scale = bounds.scale
        if scale != 1.0:  # data near float32's range: exact rescaling (see ElkanEStep)
            X, centers = X * scale, centers * scale
        # the moves since the last E-step: each group's bound drops by its largest one
        bounds.step += 1
        shift = scale * np.asarray(state.center_shift, dtype=np.float64)
        bounds.group_shift_prev[:] = bounds.group_shift_sum
        bounds.group_shift_sum += np.maximum.reduceat(shift[bounds.members],
                                                      bounds.group_starts[:-1])
        bounds.last_moved[shift > 0] = bounds.step
        bounds.neighbours = bounds.neighbour_dist = None
        if bounds.separated and bounds.n_groups == 1:  # Hamerly's bound: neighbour search
            (bounds.neighbours, bounds.neighbour_dist, bounds.half_min,
             n_evals) = center_neighbours(centers, min(NEIGHBOURS, centers.shape[0] - 1),
                                        state.n_threads)
            state.count("estep", n_evals)
        elif bounds.separated:  # Hamerly's test at low dimension (see the class notes)
            state.count("estep", _centers.center_half_min(centers, bounds.half_min,
                                                          state.n_threads))
        rows = batch_rows(state, X.shape[0], bounds.lower.shape[0])
        repeated = not isinstance(rows, slice) and _has_repeats(rows)
        if isinstance(rows, slice):  # a view of the kept 0 .. N - 1: no array per step
            rows = bounds.all_rows[rows]
        rows = np.asarray(rows, dtype=np.intp)
        if repeated:
            # a batch drawn with replacement: a sample's group bounds exclude the label its
            # first occurrence found, so each sample is assigned once and its result repeated
            unique, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
            labels, dist2 = self._assign_rows(X[first], sample_weight[first], unique, centers,
                                              shift, bounds, state, fuse=False)[:2]
            labels, dist2 = labels[inverse], dist2[inverse]
            centers_sum = weight = None
        else:
            labels, dist2, centers_sum, weight = self._assign_rows(
                X, sample_weight, rows, centers, shift, bounds, state, fuse=state.fuse_sums)
        if scale != 1.0:
            dist2 /= scale * scale
            if centers_sum is not None:
                centers_sum /= scale
        qe = weighted_sum(dist2, sample_weight)
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe,
                          centers_sum=centers_sum, weight_in_clusters=weight)

    @staticmethod
    def _init_rows(X, rows, centers, bounds, state):
        """First visits of distinct ``rows`` by distance tiles: labels and distances."""
        labels = np.empty(X.shape[0], dtype=np.int32)
        dist2 = np.empty(X.shape[0], dtype=X.dtype)
        state.count("estep", _yinyang.yinyang_init_bounds(
            np.ascontiguousarray(X), np.ascontiguousarray(rows), centers, bounds.group_of,
            bounds.group_shift_sum, bounds.step, bounds.lower, bounds.last_dist2, bounds.visit,
            labels, dist2, bound_slack(X.dtype), state.n_threads))
        return labels, dist2

    @staticmethod
    def _assign_rows(X, sample_weight, rows, centers, shift, bounds, state, fuse):
        """The kernel on distinct ``rows``: labels, distances and, if ``fuse`` and the
        fixed-block layout fits, the M-step's sums (else ``None``)."""
        n_samples, n_features = X.shape
        n_clusters = centers.shape[0]
        previous = np.ascontiguousarray(state.labels[rows])
        first = previous < 0
        if first.any():
            # first visits: all distances in tiles, as Lloyd's E-step computes them
            labels, dist2 = split_first_visits(
                first, X.dtype,
                lambda i: YinyangEStep._init_rows(X[i], rows[i], centers, bounds, state),
                lambda i: YinyangEStep._assign_rows(X[i], sample_weight[i], rows[i], centers,
                                                    shift, bounds, state, fuse=False)[:2])
            return labels, dist2, None, None
        labels = np.empty(n_samples, dtype=np.int32)
        dist2 = np.empty(n_samples, dtype=X.dtype)
        centers_sum = weight = None
        if fuse and _mstep.blocks_fit(n_samples, n_clusters, n_features, X.itemsize):
            # the M-step's sums in the same pass (every row is read for its distance anyway)
            centers_sum = np.empty_like(centers)
            weight = np.empty(n_clusters, dtype=X.dtype)
        state.count("estep", _yinyang.yinyang_assign(
            np.ascontiguousarray(X), sample_weight, rows, centers, bounds.members,
            bounds.group_starts, bounds.group_of, shift, bounds.group_shift_sum,
            bounds.group_shift_prev, bounds.last_moved, bounds.step, bounds.lower,
            previous, bounds.last_dist2, bounds.visit, labels, dist2, centers_sum, weight,
            bound_slack(X.dtype), state.n_threads,
            bounds.half_min if bounds.separated else None, bounds.neighbours,
            bounds.neighbour_dist))
        return labels, dist2, centers_sum, weight
