"""The family of exact bounded E-steps (:class:`~clusterkit.ElkanEStep`,
:class:`~clusterkit.YinyangEStep`): the one memory budget of their bounds
(:func:`bounds_budget`), its refusal (:func:`check_bounds`), and the skeleton they share
(:class:`BoundsEStep`): the checks when ``fit`` starts, the per-run state and, in
:meth:`BoundsEStep.assign`, the handling of the batch's rows, first visits, fused sums and
rescaled coordinates, around the kernel calls each specialises."""
import math
from numbers import Integral

import numpy as np

from .._data import memory
from .._data.checks import check_int
from .._data.moments import weighted_sum
from .._data.sparse import kernels_for
from .._engine.assignment import QUANTIZATION_ERROR, Assignment
from .._engine.constraints import Interval, Options
from .._engine.contracts import EStep
from .._kernels import _pruned
from .pruning import CenterProjection, Projection, dimension_count, resolve_prune
from .rows import batch_rows, run_rows

__all__ = ["BoundsEStep", "bounds_budget", "check_bounds", "bounds_scale", "bound_slack",
           "split_first_visits"]


def bounds_budget(max_bounds_bytes):
    """The bytes the bounds of a bounded E-step may take: the one budget rule of
    :class:`~clusterkit.ElkanEStep`, :class:`~clusterkit.YinyangEStep` and
    :class:`~clusterkit.BoundedEStep`.

    Parameters
    ----------
    max_bounds_bytes : int or None
        The budget. ``None``: what the fit's memory budget leaves for them
        (:func:`clusterkit._data.memory.budget`: ``Clusterer(memory_limit=...)`` or half the
        memory available when ``fit`` starts, less the fit's other buffers), or no limit
        where the available memory is not known.

    Returns
    -------
    budget : int or None
        ``None`` for no limit.

    Raises
    ------
    TypeError
        If ``max_bounds_bytes`` is neither ``None`` nor an integer.
    ValueError
        If ``max_bounds_bytes`` is negative.
    """
    if max_bounds_bytes is not None:
        return check_int(max_bounds_bytes, "max_bounds_bytes", minimum=0)
    # read through the module, so that one stand-in for the system (tests) reaches the
    # budget and check_memory alike
    return memory.budget()


def check_bounds(estep, need, n_rows, layout, max_bounds_bytes, budget, instead):
    """Refuse, when ``fit`` starts, bounds that need more than the fit's memory budget or
    than their own budget: the refusal of every bounded E-step.

    Parameters
    ----------
    estep : str
        The E-step's name.
    need : int
        Bytes of its bounds for ``n_rows`` rows.
    n_rows : int
    layout : str
        What besides the rows sets ``need``, e.g. ``"n_clusters=4096"``.
    max_bounds_bytes : int or None
        As given, for the message.
    budget : int or None
        :func:`bounds_budget` of it.
    instead : str
        What to do instead, a lower-case clause (after "Raise max_bounds_bytes, ").

    Raises
    ------
    FitMemoryError
        A :class:`MemoryError` and :class:`ValueError`.
    """
    if budget is not None and need > budget:
        given = (f"max_bounds_bytes={max_bounds_bytes}" if max_bounds_bytes is not None else
                 f"{memory.describe_budget()} less the fit's other buffers "
                 "(max_bounds_bytes=None)")
        raise memory.FitMemoryError(
            f"{estep} needs {need / 2**30:.2f} GiB of bounds for {n_rows} samples and "
            f"{layout}, above {given} ({budget / 2**30:.2f} GiB). Raise max_bounds_bytes, "
            f"{instead}")
    # a given max_bounds_bytes is also held to the fit's budget
    memory.check_memory(need, f"{estep}'s bounds for {n_rows} samples and {layout}",
                        instead[:1].upper() + instead[1:])


#: Data whose diagonal times this margin (for the centres' moves over many steps) reaches
#: float32's largest number are assigned in rescaled coordinates, whose diagonal is then
#: about :data:`_BOUND_TARGET` / margin.
_BOUND_MARGIN = 1e6
_BOUND_TARGET = 1e30


def bounds_scale(X):
    """The power of two a bounded E-step multiplies the coordinates by so that its float32
    bounds (a distance plus a centre's total move, each at most the data's diagonal) cannot
    overflow: 1 unless the data's diagonal times :data:`_BOUND_MARGIN` reaches float32's
    largest number."""
    values = kernels_for(X).values(X)
    extent = 2.0 * float(np.abs(values).max(initial=0.0)) * math.sqrt(X.shape[1])
    if extent * _BOUND_MARGIN >= float(np.finfo(np.float32).max):
        return 2.0 ** -math.ceil(math.log2(extent * _BOUND_MARGIN / _BOUND_TARGET))
    return 1.0


def bound_slack(dtype):
    """The relative margin of the bounded E-steps' stored bounds: well above the rounding of
    the distances of ``dtype`` and of the float32 conversion."""
    return 2.0 ** -12 if dtype == np.float32 else 2.0 ** -20


def split_first_visits(first, dtype, first_visits, revisit):
    """Labels and distances of a batch whose rows ``first`` are at their first visit: those
    from ``first_visits(index)``, the others from ``revisit(index)``, each returning the
    ``(labels, dist2)`` of the batch's rows at ``index`` (a slice of all rows when every
    row is new). The bounded E-steps' first visits go by distance tiles, their revisits by
    the bounds."""
    if first.all():
        return first_visits(slice(None))
    labels = np.empty(first.shape[0], dtype=np.int32)
    dist2 = np.empty(first.shape[0], dtype=dtype)
    new, again = np.flatnonzero(first), np.flatnonzero(~first)
    labels[new], dist2[new] = first_visits(new)
    labels[again], dist2[again] = revisit(again)
    return labels, dist2


def _has_repeats(rows):
    """Whether an array of row indices holds a row twice (sorted batches: one pass)."""
    rows = np.asarray(rows)
    if rows.size < 2:
        return False
    if np.all(rows[1:] >= rows[:-1]):
        return bool(np.any(rows[1:] == rows[:-1]))
    return np.unique(rows).size < rows.size


class Bounds:
    """What the per-run state of every bounded E-step holds besides its own bounds: the
    stored bounds ``lower`` (one row per sample), the power of two ``scale`` the E-step
    multiplies the coordinates by (see :func:`bounds_scale`), the E-step that made it
    (``estep``; :class:`~clusterkit.BoundedEStep` runs the one its state names), the kernels
    of the run's rows (``kind``, :func:`~clusterkit._data.sparse.kernels_for`) and the rows'
    squared norms as they take them (``x_sqnorms``, in the scaled frame; ``None`` for dense
    rows)."""

    estep = kind = x_sqnorms = None
    #: the principal axes and the rows' projections (``prune``), and the centres' at this call
    projection = centers_projection = None

    def __init__(self, lower, scale):
        self.lower = lower
        self.scale = scale


class BoundsEStep(EStep):
    """The skeleton of an exact bounded E-step: hard labels, each sample's nearest centre
    (ties to the lower index), found with stored bounds in a budget (:func:`bounds_budget`).

    Subclasses say how their bounds are laid out and which kernels run:
    :meth:`_check_layout` (their own parameters), :meth:`_bounds_bytes`, :meth:`_new_bounds`,
    :meth:`_start_step` (the moves since the last E-step, centre-centre distances),
    :meth:`_tiled_first_visits`, :meth:`_first_visit_kernel` and :meth:`_revisit_kernel`;
    ``_instead``: what a refusal suggests instead. The rest is here: soft M-steps and bounds
    above the budget or the memory available are refused when ``fit`` starts; coordinates
    near float32's range are rescaled; a batch's rows may be a slice or sorted indices, with
    repeats (assigned once each); first visits go by distance tiles where the subclass says
    so; the M-step's per-cluster sums come in the same pass when it reads them
    (``state.config.fuse_sums``) and the fixed-block layout fits. The final labels are each sample's
    nearest final centre (the default of :meth:`EStep.final_labels`; the bounds keep no
    float32 copy of the data to lend, see :meth:`EStep.labelling_rows`).
    """

    _parameter_constraints = {"max_bounds_bytes": [Interval(Integral, 0), None],
                              "prune": [None, Options("auto"), Interval(Integral, 1)]}

    exact = True
    objectives = (QUANTIZATION_ERROR,)
    chunks = True  # (each chunk's bounds stay with it, on its worker)
    _instead = "or use FullEStep (Lloyd, no bounds)."

    #: the default for subclasses whose own ``__init__`` does not set it (no pruning)
    prune = None
    #: ``prune="auto"`` prunes from this many features on (and ``PRUNE_MIN_CLUSTERS``
    #: clusters); ``inf``: never (each subclass says where pruning was measured to pay)
    auto_prune_min_features = float("inf")

    # -- what subclasses specialise ------------------------------------------------------------

    def _check_layout(self, n_clusters):
        """Check the subclass' own parameters (none by default)."""

    def _bounds_bytes(self, n_rows, n_clusters, budget):
        """``(bytes, layout)``: the bytes of the bounds for ``n_rows`` rows in ``budget`` (or
        ``None``), and what besides the rows sets them, e.g. ``"n_clusters=10"``."""
        raise NotImplementedError

    def _new_bounds(self, X, centers, scale, state):
        """The per-run state (a :class:`Bounds`) for all rows of ``X``."""
        raise NotImplementedError

    def _start_step(self, X, bounds, centers, scale, state):
        """Bring the bounds up to the centres' moves since the last E-step
        (``scale * state.run.center_shift``); compute the step's centre-centre distances."""
        raise NotImplementedError

    @staticmethod
    def _tiled_first_visits(kind, n_features):
        """Whether first visits of rows of ``kind`` and ``n_features`` go by distance tiles
        (:meth:`_first_visit_kernel`) rather than by the bounded kernel."""
        return True

    def _first_visit_kernel(self, X, rows, centers, bounds, labels, dist2, state):
        """Fill ``labels``, ``dist2`` and the bounds of distinct ``rows`` at their first
        visit; return the distances computed."""
        raise NotImplementedError

    def _revisit_kernel(self, X, sample_weight, rows, previous, centers, bounds, labels,
                        dist2, centers_sum, weight, state):
        """The bounded search on distinct ``rows`` (``previous``: their last labels, -1 at a
        first visit): fill ``labels``, ``dist2`` and, unless ``None``, the M-step's sums;
        return the distances computed (with pruning, the kernel's ``(direct, tests)``)."""
        raise NotImplementedError

    def _stored_groups(self, bounds):
        """``(group_of, group_shift)`` of the stored bounds for ``_pruned.assign_pruned``'s
        first visits: ``group_of`` None for one bound per centre."""
        raise NotImplementedError

    def _visited(self, bounds, rows, labels, dist2):
        """Record the first visits of ``rows`` made by ``_pruned.assign_pruned`` in the
        per-row state besides the bounds (each row's last distance and visit)."""
        raise NotImplementedError

    def _prune_args(self, bounds):
        """The keyword arguments that switch pruning on in the revisit kernel (none
        without pruning)."""
        if bounds.centers_projection is None:
            return {}
        return bounds.centers_projection.prune_args(bounds.projection)

    @staticmethod
    def _dimension_count(result, bounds, n_features):
        """A kernel's count: its distances, or with pruning ``(direct, tests)`` counted by
        dimension (a test reads ``p`` of the ``D`` features)."""
        if isinstance(result, tuple):
            return dimension_count(result[0], result[1], bounds.projection.V.shape[1],
                                   n_features)
        return result

    # -- the skeleton --------------------------------------------------------------------------

    def _validate(self, X, n_clusters, composition):
        """Refuse soft M-steps and bounds above the budget (:func:`bounds_budget`) or the
        memory available.

        Raises
        ------
        TypeError
            If ``max_bounds_bytes`` is neither ``None`` nor an integer, or a parameter of the
            subclass has the wrong type.
        ValueError
            If the M-step needs responsibilities, the bounds would need more memory than
            allowed, or a parameter of the subclass is out of range.
        """
        self._check_fit(X, n_clusters, composition, bounds_budget(self.max_bounds_bytes))

    def _check_fit(self, X, n_clusters, composition, budget):
        """:meth:`_validate` with the budget already resolved (once per fit)."""
        self._check_layout(n_clusters)
        name = type(self).__name__
        if self.prune is not None and self.prune != "auto" and self.prune > X.shape[1]:
            raise ValueError(f"prune={self.prune} must be <= n_features={X.shape[1]}.")
        if composition.mstep.needs_resp:
            raise ValueError(f"{name} assigns hard labels; {type(composition.mstep).__name__} "
                             "needs responsibilities. Use FullEStep, TruncatedEStep or "
                             "PartialEStep for a Gaussian mixture.")
        n_rows = run_rows(X, n_clusters, composition)
        need, layout = self._bounds_bytes(n_rows, n_clusters, budget)
        check_bounds(name, need, n_rows, layout, self.max_bounds_bytes, budget, self._instead)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The bounds (as checked when ``fit`` starts), the step's labels and distances, and
        the rows' projections when pruning."""
        need, _ = self._bounds_bytes(n_samples, n_clusters, bounds_budget(self.max_bounds_bytes))
        n_axes = resolve_prune(self.prune, n_features, n_clusters, self.auto_prune_min_features)
        return (need + n_samples * (4 + dtype.itemsize)
                + (0 if n_axes is None else n_samples * (n_axes + 1) * dtype.itemsize))

    def init_state(self, X, sample_weight, centers, state):
        """Allocate the bounds for all rows (set at each row's first visit).

        A bound is a distance plus a centre's total move, each at most the data's diagonal.
        float32 bounds would overflow to ``inf`` (and skip their centre for ever) on float64
        data near float32's range, so such data are assigned in coordinates multiplied by a
        power of two (exact: labels are the same, distances and sums are scaled back), with a
        wide margin for the moves of many steps.
        """
        kind = kernels_for(X)
        bounds = self._new_bounds(X, centers, bounds_scale(X), state)
        bounds.estep, bounds.kind = self, kind
        bounds.x_sqnorms = kind.kernel_sqnorms(X, state.config.n_threads, bounds.scale)
        # (pruning projects rows as arrays, in the coordinates as given)
        n_axes = (None if not kind.ndarray or bounds.scale != 1.0 else
                  resolve_prune(self.prune, X.shape[1], centers.shape[0],
                                self.auto_prune_min_features))
        if n_axes is not None:  # the axes once per run, for every call's bounds
            bounds.projection = Projection(X, n_axes)
        return bounds

    def carry_state(self, estep_state, state):
        """Keep the bounds for a refiner's round (see :meth:`EStep.carry_state`): each
        centre's move since the last E-step, however large, is added to them as a step's
        move is, so they stay valid and the labels are those of fresh bounds; distances are
        computed only for rows whose bounds the moved centres invalidate."""
        if isinstance(estep_state, Bounds) and estep_state.lower.shape[0] == state.run.n_samples:
            return estep_state
        return None

    def assign(self, X, sample_weight, centers, state):
        """Return the exact nearest-centre assignment of the batch ``state.run.rows``.

        See :meth:`EStep.assign`; counts the distances computed under ``"estep"``.
        """
        bounds = state.run.estep_state
        if not isinstance(bounds, Bounds):  # called without init_state
            bounds = state.run.estep_state = self.init_state(X, sample_weight, centers, state)
        scale = bounds.scale
        if scale != 1.0:  # data near float32's range (see init_state): exact rescaling
            X, centers = X * scale, centers * scale
        self._start_step(X, bounds, centers, scale, state)
        if bounds.projection is not None:  # the centres along the axes, once per call
            bounds.centers_projection = CenterProjection(centers, bounds.projection)
        rows = batch_rows(state, X.shape[0], bounds.lower.shape[0])
        repeated = not isinstance(rows, slice) and _has_repeats(rows)
        if isinstance(rows, slice):
            rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.intp)
        rows = np.asarray(rows, dtype=np.intp)
        if repeated:
            # a batch drawn with replacement: a sample's bounds are updated by its visit (and
            # Yinyang's group bounds exclude the label it found), so each sample is assigned
            # once and its result repeated
            unique, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
            labels, dist2 = self._assign_rows(X[first], sample_weight[first], unique, centers,
                                              bounds, state, fuse=False)[:2]
            labels, dist2 = labels[inverse], dist2[inverse]
            centers_sum = weight = None
        else:
            labels, dist2, centers_sum, weight = self._assign_rows(
                X, sample_weight, rows, centers, bounds, state, fuse=state.config.fuse_sums)
        if scale != 1.0:
            dist2 /= scale * scale
            if centers_sum is not None:
                centers_sum /= scale
        qe = weighted_sum(dist2, sample_weight)
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe,
                          centers_sum=centers_sum, weight_in_clusters=weight)

    def _assign_rows(self, X, sample_weight, rows, centers, bounds, state, fuse):
        """Labels, distances and (see :meth:`_revisit`) sums of distinct ``rows``."""
        previous = np.ascontiguousarray(state.run.labels[rows])
        first = previous < 0
        if (self._tiled_first_visits(bounds.kind, X.shape[1])
                or bounds.projection is not None) and first.any():
            # first visits: all distances in tiles, as Lloyd's E-step computes them
            labels, dist2 = split_first_visits(
                first, X.dtype,
                lambda i: self._first_visits(X[i], rows[i], centers, bounds, state),
                lambda i: self._revisit(X[i], sample_weight[i], rows[i], previous[i], centers,
                                        bounds, state, fuse=False)[:2])
            return labels, dist2, None, None
        return self._revisit(X, sample_weight, rows, previous, centers, bounds, state, fuse)

    def _first_visits(self, X, rows, centers, bounds, state):
        """Labels and distances of distinct ``rows`` at their first visit, and their bounds."""
        labels = np.empty(X.shape[0], dtype=np.int32)
        dist2 = np.empty(X.shape[0], dtype=X.dtype)
        if bounds.projection is None:
            state.meter.count("estep", self._first_visit_kernel(X, rows, centers, bounds, labels,
                                                                dist2, state))
            return labels, dist2
        # with pruning: the labels of Lloyd's E-step from the pruned pass, whose bounds (or
        # direct distances where computed) become the stored bounds
        projection, centers_projection = bounds.projection, bounds.centers_projection
        group_of, group_shift = self._stored_groups(bounds)
        rows = np.ascontiguousarray(rows, dtype=np.intp)
        n_pairs, n_direct = _pruned.assign_pruned(
            np.ascontiguousarray(X), centers, np.ascontiguousarray(projection.rows[rows]),
            np.ascontiguousarray(projection.rest[rows]), centers_projection.proj,
            centers_projection.rest, centers_projection.proj_tol, centers_projection.rest_tol,
            labels, dist2, state.config.n_threads, lower=bounds.lower, rows=rows, group_of=group_of,
            group_shift=group_shift, slack=bound_slack(X.dtype))
        self._visited(bounds, rows, labels, dist2)
        state.meter.count("estep", dimension_count(n_direct, n_pairs, projection.V.shape[1],
                                                   X.shape[1]))
        return labels, dist2

    def _revisit(self, X, sample_weight, rows, previous, centers, bounds, state, fuse):
        """The bounded search on distinct ``rows``: labels, distances and, if ``fuse`` and
        the fixed-block layout fits dense data, the M-step's sums (else ``None``)."""
        n_samples, n_features = X.shape
        n_clusters = centers.shape[0]
        labels = np.empty(n_samples, dtype=np.int32)
        dist2 = np.empty(n_samples, dtype=X.dtype)
        centers_sum = weight = None
        if fuse and bounds.kind.sums_fit(n_samples, n_clusters, n_features, X.dtype.itemsize):
            # the M-step's sums in the same pass (every row is read for its distance anyway);
            # sparse rows are summed by the M-step itself
            centers_sum = np.empty_like(centers)
            weight = np.empty(n_clusters, dtype=X.dtype)
        state.meter.count("estep", self._dimension_count(self._revisit_kernel(
            X, sample_weight, rows, previous, centers, bounds, labels, dist2, centers_sum,
            weight, state), bounds, n_features))
        return labels, dist2, centers_sum, weight
