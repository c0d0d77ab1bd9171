"""Exact E-steps: Lloyd's assignment and full responsibilities (:class:`FullEStep`),
Elkan's bounded assignment (:class:`ElkanEStep`, of the family of :mod:`.bounds`) and the
exact truncated E-step (:class:`TruncatedEStep`), with the helpers the variational E-step
shares."""
from numbers import Integral

import numpy as np

from .._data.memory import budget, check_memory
from .._data.moments import weighted_sum
from .._data.sparse import CSR, DENSE, csr_arrays, kernels_for
from .._engine.assignment import FREE_ENERGY, QUANTIZATION_ERROR, Assignment
from .._engine.constraints import Interval, Options
from .._engine.contracts import EStep
from .._engine.state import free_energy
from .._kernels import _assign, _elkan, _topk
from .bounds import Bounds, BoundsEStep, bound_slack
from .pruning import Projection, assign_pruned, resolve_prune
from .rows import batch_rows, run_rows

__all__ = ["FullEStep", "ElkanEStep", "TruncatedEStep", "elkan_memory"]


def _float32_rows(X, buffers, state):
    """The float32 copy of the batch ``X`` for mixed-precision products, or ``None``: only
    for a contiguous run of the rows of the run's data (a view of the copy), which is made
    at the first such batch (batches of scattered rows, as mini-batches, never use it)."""
    source = buffers.source
    if source is None or not np.may_share_memory(X, source):
        return None
    try:
        rows = batch_rows(state, X.shape[0], source.shape[0])
    except ValueError:
        return None
    if not isinstance(rows, slice) or rows.step != 1:
        return None
    if buffers.x32 is None:
        buffers.x32 = _assign.float32_products(source)
        if buffers.x32 is None:  # values float32 cannot take
            buffers.source = None
            return None
    x32 = buffers.x32[rows]
    return x32 if x32.shape[0] == X.shape[0] else None


def soft_fit(state):
    """Whether an E-step computes responsibilities: the M-step reads them, or the declared
    objective is the mixture's free energy, which is made of them."""
    return state.config.needs_resp or state.config.objective == FREE_ENERGY


class _Buffers:
    """:class:`FullEStep`'s outputs, allocated once per run (an assignment is used within
    its step only, so the next step may overwrite it), and the kernels of the run's rows."""

    def __init__(self, kind, n_samples, n_clusters, n_features, dtype, soft, x_sqnorms=None,
                 source=None, projection=None):
        self.kind = kind
        self.x_sqnorms = x_sqnorms  # as the kind's kernels take them (CSR), once per run
        self.projection = projection  # the principal axes and the rows' projections (prune)
        # the run's data if it may get a float32 copy for mixed-precision products (made
        # at its first contiguous batch), and the copy
        self.source, self.x32 = source, None
        self.labels = np.empty(n_samples, dtype=np.int32)
        self.dist2 = np.empty(n_samples, dtype=dtype)
        self.centers_sum = np.empty((n_clusters, n_features), dtype=dtype)
        self.weight = np.empty(n_clusters, dtype=dtype)
        if soft:
            self.resp = np.empty((n_samples, n_clusters), dtype=dtype)
            self.log_norm = np.empty(n_samples, dtype=dtype)

    def batch_sqnorms(self, state, n_batch):
        """The rows' squared norms of the batch ``state.run.rows``, or ``None`` (dense rows)."""
        if self.x_sqnorms is None:
            return None
        return self.x_sqnorms[batch_rows(state, n_batch, self.x_sqnorms.shape[0])]


#: What the exact and variational E-steps compute: k-means' and the mixture's objectives.
MIXTURE_OBJECTIVES = (QUANTIZATION_ERROR, FREE_ENERGY)


class FullEStep(EStep):
    """Exact E-step over all clusters: Lloyd's assignment, or full GMM responsibilities.

    With a hard M-step each sample is assigned to its nearest centre (the E-step of Lloyd's
    k-means); with a soft M-step the exact posterior over all ``C`` clusters of the isotropic,
    equal-weight GMM is computed (standard EM; Forster & Lücke 2018, eq. 2 with ``C' = C``).

    Parameters
    ----------
    prune : int, "auto" or None, default="auto"
        Exact dimension pruning of hard assignments of dense data. ``None``: off. An integer
        ``p``: once per fit the ``p`` leading principal axes of a sample of the rows are
        found and the rows projected on them; each call then bounds every row-centre
        distance from below by gemm over those ``p`` coordinates and the norms of the rest
        (``_pruned.assign_pruned``), and computes direct distances only for the centres
        whose bound does not rule them out. The labels are those without pruning (ranked
        by the same direct distances, ties to the lower index); only the work changes.
        ``"auto"``: ``p`` by :func:`~clusterkit.estep.pruning.auto_projections`, and no
        pruning below ``PRUNE_MIN_FEATURES`` (64) features or ``PRUNE_MIN_CLUSTERS`` (256)
        clusters, where it does not pay. Has no effect on soft or sparse assignments.

    Notes
    -----
    Cost per call: ``N C`` distance evaluations; with pruning, ``N C p / D`` (the products
    over ``p`` of the ``D`` features, counted by dimension) plus the direct distances.
    Pruning keeps ``N (p + 1)`` values per run and computes no M-step sums in its pass.
    Memory: hard, ``O(N)`` outputs plus one cache-sized tile per thread; soft, the
    ``N x C`` responsibilities the M-step consumes.
    Hard assignments of float64 data with at least ``MIXED_MIN_FEATURES`` (64) features
    rank the centres by float32 products on a float32 copy of the data made once per run
    (``N (D + 1)`` float32, about half the data; skipped when it would take more than half
    the free memory, or for values beyond 1e15): the labels are the same, rows with a near-tie in
    float32 are settled by float64 distances, and each distance is computed in float64.
    Hard assignments also take sparse (CSR) data (``accepts_sparse``): distances
    ``||x||^2 - 2 x.c + ||c||^2`` from the rows' squared norms, computed once per run, in
    ``O(nnz C)`` per call.
    A hard call also sums each cluster's samples in the same pass over the data when the
    partial sums are small (``Assignment.centers_sum``), so that Lloyd's iteration reads the
    data once.
    State: only its output buffers, allocated once per run (:meth:`init_state`). On the first
    soft E-step, when no variance is known yet, the variance is set from the distances just
    computed (vc-GMM eq. 12) before the responsibilities are formed.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, FullEStep
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> km = Clusterer(2, seed=X[[0, 2]], estep=FullEStep()).fit(X)
    >>> km.labels_
    array([0, 0, 1, 1], dtype=int32)
    """

    _parameter_constraints = {"prune": [None, Options("auto"), Interval(Integral, 1)]}

    exact = True
    objectives = MIXTURE_OBJECTIVES
    chunks = True
    per_sample_state = False  # (its state is its output buffers)
    accepts_sparse = True  # hard assignments; a soft M-step does not take sparse data

    #: the default for subclasses whose own ``__init__`` does not call this one (they prune
    #: nothing, as before the parameter existed)
    prune = None

    def __init__(self, prune="auto"):
        self.prune = prune

    def _projections(self, n_features, n_clusters):
        """The principal axes pruning projects on for data of ``n_features`` features, or
        ``None`` for no pruning (``prune=None``, or ``"auto"`` where it does not pay)."""
        return resolve_prune(self.prune, n_features, n_clusters)

    def _validate(self, X, n_clusters, composition):
        """Refuse, before any work, full responsibilities that do not fit in memory, and
        more axes to prune by than features.

        Raises
        ------
        ValueError
            If responsibilities would not fit in memory, or ``prune`` exceeds the features.
        """
        if self.prune is not None and self.prune != "auto" and self.prune > X.shape[1]:
            raise ValueError(f"prune={self.prune} must be <= n_features={X.shape[1]}.")
        mstep = composition.mstep
        if mstep.needs_resp or mstep.objective == FREE_ENERGY:
            n_rows = run_rows(X, n_clusters, composition)
            check_memory(n_rows * n_clusters * X.dtype.itemsize,
                         f"FullEStep's responsibilities for {n_rows} samples and "
                         f"n_clusters={n_clusters}", "Use TruncatedEStep or PartialEStep "
                         "(responsibilities over a few clusters), or reduce the data "
                         "(reduce=LWCS(...)).")

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Labels and distances; ``N x C`` responsibilities for a mixture; the float32 copy
        of float64 rows for mixed-precision products, when the budget leaves room for it
        (as :meth:`init_state` decides); the rows' projections when pruning."""
        itemsize, mstep = dtype.itemsize, composition.mstep
        n_bytes = n_samples * (4 + itemsize)
        if mstep.needs_resp or mstep.objective == FREE_ENERGY:
            return n_bytes + n_samples * (n_clusters + 1) * itemsize
        n_axes = self._projections(n_features, n_clusters)
        if n_axes is not None:
            return n_bytes + n_samples * (n_axes + 1) * itemsize
        mixed = n_samples * (n_features + 1) * 4
        left = budget()
        if dtype == np.float64 and n_features >= _assign.MIXED_MIN_FEATURES and (
                left is None or mixed <= left):
            n_bytes += mixed
        return n_bytes

    def init_state(self, X, sample_weight, centers, state):
        """The output buffers, allocated once per run for the largest batch (all rows), and
        the kernels of the run's kind of rows."""
        kind = kernels_for(X)
        soft = soft_fit(state)
        layout = (kind, X.shape[0], centers.shape[0], X.shape[1], X.dtype, soft)
        # pruning and float32 copies read the rows as arrays, for hard assignments
        hard_arrays = kind.ndarray and not soft
        n_axes = self._projections(X.shape[1], centers.shape[0]) if hard_arrays else None
        if n_axes is not None:  # the axes once per run, for every call's bounds
            return _Buffers(*layout, projection=Projection(X, n_axes))
        source = None
        if (hard_arrays and X.dtype == np.float64
                and X.shape[1] >= _assign.MIXED_MIN_FEATURES):
            left = budget()
            if left is None or X.shape[0] * (X.shape[1] + 1) * 4 <= left:
                source = X
        return _Buffers(*layout, kind.kernel_sqnorms(X, state.config.n_threads), source)

    def assign(self, X, sample_weight, centers, state):
        n_samples = X.shape[0]
        buffers = state.run.estep_state
        if not isinstance(buffers, _Buffers):  # called without init_state
            buffers = self.init_state(X, sample_weight, centers, state)
        labels, dist2 = buffers.labels[:n_samples], buffers.dist2[:n_samples]
        if not soft_fit(state):  # (the only assignments of CSR rows, see accepts_sparse)
            kind = buffers.kind
            n_clusters, n_features = centers.shape
            if buffers.projection is not None:
                return assign_pruned(X, centers, buffers.projection, state, labels, dist2,
                                     sample_weight)
            x32 = _float32_rows(X, buffers, state)
            if not (state.config.fuse_sums
                    and kind.sums_fit(n_samples, n_clusters, n_features, X.dtype.itemsize)):
                state.meter.count("estep", kind.assign(
                    X, buffers.batch_sqnorms(state, n_samples), centers, labels, dist2,
                    state.config.n_threads, x32))
                qe = weighted_sum(dist2, sample_weight)
                return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe)
            # One pass over the data for the assignment and the hard M-step's sums.
            centers_sum, weight = buffers.centers_sum, buffers.weight
            state.meter.count("estep", _assign.assign_full_accumulate(
                X, sample_weight, centers, labels, dist2, centers_sum, weight,
                state.config.n_threads, X32=x32))
            qe = weighted_sum(dist2, sample_weight)
            return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe,
                              centers_sum=centers_sum, weight_in_clusters=weight)

        resp, log_norm = buffers.resp[:n_samples], buffers.log_norm[:n_samples]
        sigma2 = -1.0 if state.run.sigma2 is None else state.run.sigma2
        state.meter.count("estep", _assign.responsibilities_full(
            X, centers, sigma2, resp, labels, dist2, log_norm, state.config.n_threads))
        if state.run.sigma2 is None:  # resp holds distances: set eq. 12's variance, then normalise
            state.init_sigma2(X, sample_weight, centers, labels)
            _assign.responsibilities_truncated(resp, state.run.sigma2, resp, log_norm,
                                               state.config.n_threads)
        qe = weighted_sum(dist2, sample_weight)
        objective = (qe if state.config.objective == QUANTIZATION_ERROR else
                     free_energy(log_norm, sample_weight, state.run.sigma2, *centers.shape))
        return Assignment(labels=labels, dist2=dist2, objective=objective, qe=qe, resp=resp)


    def labelling_rows(self, X, state):
        """The float32 copy of ``X`` the hard E-steps made for their products, if they made
        one of these very rows (see :meth:`EStep.labelling_rows`)."""
        buffers = state.run.estep_state
        if isinstance(buffers, _Buffers) and buffers.source is X:
            return buffers.x32
        return None


# --- ElkanEStep (Elkan 2003) -----------------------------------------------------------------


class _ElkanBounds(Bounds):
    """:class:`ElkanEStep`'s per-run state: the stored lower bounds, the total move of each
    centre, the centre-centre half distances of the current step, and the power of two
    (``scale``) the E-step multiplies the coordinates by (1 unless the distances could reach
    float32's range, where the bounds are stored)."""

    def __init__(self, n_samples, n_clusters, dtype, scale):
        super().__init__(np.empty((n_samples, n_clusters), dtype=np.float32), scale)
        self.last_dist2 = np.empty(n_samples, dtype=dtype)
        self.visit_shift = np.empty(n_samples)
        self.shift_sum = np.zeros(n_clusters)
        self.half_cc = np.empty((n_clusters, n_clusters))
        self.half_min = np.empty(n_clusters)


def elkan_memory(n_samples, n_clusters):
    """Bytes :class:`ElkanEStep` keeps for a fit on ``n_samples`` rows: float32 lower bounds
    (``4 N C``), each row's last distance and its centre's total move then (at most
    ``16 N``), and the float64 centre-centre half distances (``8 C^2``)."""
    return 4 * n_samples * n_clusters + 16 * n_samples + 8 * n_clusters * n_clusters


class ElkanEStep(BoundsEStep):
    """Exact hard assignment that skips distances with Elkan's triangle-inequality bounds.

    The same labels as :class:`FullEStep` (each sample's nearest centre, ties to the lower
    index) while computing far fewer distances once the centres settle (Elkan 2003). Per
    sample it keeps a lower bound on the distance to every centre; per step it computes half
    the distance between every two centres. A sample's exact distance ``u`` to its current
    centre is known at every visit (it is the ``dist2`` the objective and the M-step read):
    computed if that centre moved since the sample's last visit, else the last one, still
    exact. Centre ``c`` is then looked at only if ``d(c_a, c) / 2 <= u`` and its lower bound
    is at most ``u``, and not at all if ``u`` is below half the distance to the nearest other
    centre.

    Parameters
    ----------
    max_bounds_bytes : int or None, default=None
        Memory budget of the bounds (:func:`elkan_memory`: about ``4 N C + 8 C^2`` bytes). A fit
        that would need more is refused when it starts, before anything is allocated.
        ``None``: half the memory available when ``fit`` starts, no limit where that is not
        known (:func:`~clusterkit.estep.bounds.bounds_budget`, the budget of
        :class:`YinyangEStep` and :class:`BoundedEStep` too). A fit needing more than the
        memory available is refused in any case.
    prune : int, "auto" or None, default="auto"
        Exact dimension pruning of dense data, as :class:`FullEStep`'s ``prune`` (the same
        principal axes, made once per fit): the first visits are its pruned pass, whose
        bounds (direct distances where computed) become the stored bounds, and a centre the
        stored bounds do not rule out is first tested on the projections (``p`` of the ``D``
        features) before its direct distance. The labels and iterates are those without
        pruning; the cost counts a test as ``p / D`` of a distance. ``"auto"`` does not
        prune: Elkan's steps read their ``N C`` bounds whatever is skipped, and fits with
        pruning measured 1.1-1.2x the time without at 64 to 384 features and 0.96-1.19x
        at 768 to 1,024 (``benchmarks/bench_pruning.py --fits ... --estep elkan
        --forced``); give ``p`` to prune anyway.

    Notes
    -----
    Memory: the lower bounds are an ``N x C`` float32 table (float32 also for float64 data:
    half the memory traffic, and a bound only has to be a little too small, never exact),
    plus ``C x C`` float64 half distances: 2 GiB for instance for ``N = 500,000`` with
    ``C = 1,000``. Where that is too much, use :class:`YinyangEStep` (the same labels with
    ``4 N t`` bytes of grouped bounds; :class:`BoundedEStep` chooses between the two by
    memory), :class:`FullEStep` (Lloyd, ``O(N)`` memory) or, approximately,
    :class:`PartialEStep`.

    Cost per step: ``C (C - 1) / 2`` centre distances, one distance per sample whose centre
    moved, and those the bounds do not rule out. At a sample's first visit all ``C``: from 9
    features on in gemm tiles, as Lloyd's E-step computes them (several times faster than
    one by one; each bound is the tile's distance lowered by its rounding), below that one by
    one, pruned by the centre distances. Each bound is stored as ``l + S_c`` with ``S_c`` the
    total move of centre ``c`` so far, so the centres' moves apply to all bounds without a pass
    over the table, and under a mini-batch schedule the bounds of samples outside the batch
    stay valid; a sample drawn twice into a batch is assigned once.
    Bounds are loosened by a relative margin (``2^-12`` for float32 data, ``2^-20`` for
    float64) larger than the rounding of the distances, so rounding never makes one invalid.
    Hard M-steps only. Results do not depend on the number of threads.

    References
    ----------
    .. [1] C. Elkan, "Using the triangle inequality to accelerate k-means", ICML 2003.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, ElkanEStep
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> Clusterer(2, seed=X[[0, 2]], estep=ElkanEStep()).fit(X).labels_
    array([0, 0, 1, 1], dtype=int32)
    """

    accepts_sparse = True
    _instead = ("reduce the data (reduce=LWCS(...)), or use YinyangEStep (bounds that do not "
                "grow with C), FullEStep (Lloyd, no bounds) or PartialEStep.")

    def __init__(self, max_bounds_bytes=None, prune="auto"):
        self.max_bounds_bytes = max_bounds_bytes
        self.prune = prune

    def _bounds_bytes(self, n_rows, n_clusters, budget):
        return elkan_memory(n_rows, n_clusters), f"n_clusters={n_clusters}"

    def _stored_groups(self, bounds):
        return None, bounds.shift_sum

    def _visited(self, bounds, rows, labels, dist2):
        bounds.last_dist2[rows] = dist2
        bounds.visit_shift[rows] = bounds.shift_sum[labels]

    def _new_bounds(self, X, centers, scale, state):
        return _ElkanBounds(X.shape[0], centers.shape[0], X.dtype, scale)

    def _start_step(self, X, bounds, centers, scale, state):
        bounds.shift_sum += scale * state.run.center_shift  # the moves since the last E-step
        state.meter.count_per_chunk("estep", bounds.kind.center_half_distances(
            centers, bounds.half_cc, bounds.half_min, state.config.n_threads))

    @staticmethod
    def _tiled_first_visits(kind, n_features):
        # from 9 features on (gemm tiles); below, the bounded kernel's pruned search is faster
        return kind.uses_gemm(n_features)

    def _first_visit_kernel(self, X, rows, centers, bounds, labels, dist2, state):
        return _elkan.elkan_init_bounds(
            np.ascontiguousarray(X), rows, centers, bounds.shift_sum, bounds.lower,
            bounds.last_dist2, bounds.visit_shift, labels, dist2, bound_slack(X.dtype),
            state.config.n_threads)

    def _revisit_kernel(self, X, sample_weight, rows, previous, centers, bounds, labels,
                        dist2, centers_sum, weight, state):
        return _ELKAN_REVISITS[bounds.kind](
            X, sample_weight, rows, previous, centers, bounds, labels, dist2, centers_sum,
            weight, bound_slack(X.dtype), state.config.n_threads, self._prune_args(bounds))


def _elkan_revisit_dense(X, sample_weight, rows, previous, centers, bounds, labels, dist2,
                         centers_sum, weight, slack, n_threads, prune_args):
    """Elkan's bounded search on dense rows, with the M-step's sums and pruning if asked."""
    return _elkan.elkan_assign(
        np.ascontiguousarray(X), sample_weight, rows, centers, bounds.half_cc,
        bounds.half_min, bounds.shift_sum, bounds.lower, previous, bounds.last_dist2,
        bounds.visit_shift, labels, dist2, centers_sum, weight, slack, n_threads, **prune_args)


def _elkan_revisit_csr(X, sample_weight, rows, previous, centers, bounds, labels, dist2,
                       centers_sum, weight, slack, n_threads, prune_args):
    """Elkan's bounded search on CSR rows, from their squared norms; never fused
    (``centers_sum`` is ``None``, see ``RowsKind.sums_fit``) nor pruned."""
    return _elkan.elkan_assign_sparse(
        *csr_arrays(X), bounds.x_sqnorms[rows], rows, centers, bounds.half_cc,
        bounds.half_min, bounds.shift_sum, bounds.lower, previous, bounds.last_dist2,
        bounds.visit_shift, labels, dist2, slack, n_threads)


#: Elkan's bounded search on each kind of rows.
_ELKAN_REVISITS = {DENSE: _elkan_revisit_dense, CSR: _elkan_revisit_csr}


# --- variational E-steps: TruncatedEStep, PartialEStep (Forster & Lücke 2018) ---------------


def winners_assignment(X, sample_weight, centers, state, winners, win_dist2):
    """The :class:`Assignment` of ``C'`` winners per sample (sorted by increasing distance).

    Hard M-step: labels are the first winners and the objective is the weighted QE. Soft
    M-step: truncated responsibilities (eq. 5) over the winners and the truncated free energy
    (eq. 10); ``win_dist2`` is overwritten with the responsibilities, so it must be a fresh
    array the caller does not use again.
    """
    labels = winners[:, 0].copy()
    dist2 = win_dist2[:, 0].copy()
    qe = weighted_sum(dist2, sample_weight)
    if not soft_fit(state):
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe, winners=winners)
    if state.run.sigma2 is None:  # vc-GMM eq. 12 from the nearest centres just found
        state.init_sigma2(X, sample_weight, centers, labels)
    log_norm = np.empty(X.shape[0], dtype=X.dtype)
    _assign.responsibilities_truncated(win_dist2, state.run.sigma2, win_dist2, log_norm,
                                       state.config.n_threads)
    objective = (qe if state.config.objective == QUANTIZATION_ERROR else
                 free_energy(log_norm, sample_weight, state.run.sigma2, *centers.shape))
    return Assignment(labels=labels, dist2=dist2, objective=objective, qe=qe, winners=winners,
                      resp=win_dist2)


def top_winners(X, centers, n_winners, state, phase="estep"):
    """Exact ``n_winners`` nearest centres of every sample (``N C`` evaluations, counted
    under ``phase``)."""
    winners = np.empty((X.shape[0], n_winners), dtype=np.int32)
    win_dist2 = np.empty((X.shape[0], n_winners), dtype=X.dtype)
    state.meter.count(phase, _topk.assign_topk(X, centers, winners, win_dist2,
                                               state.config.n_threads))
    return winners, win_dist2


class TruncatedEStep(EStep):
    """Exact truncated E-step: all distances, keep each sample's ``C'`` nearest clusters.

    Every sample gets the set ``K(n)`` of its ``n_winners`` nearest centres, found by computing
    all ``N C`` distances. With a hard M-step and ``n_winners=1`` this is Lloyd's k-means; with
    a soft M-step it is truncated EM for the isotropic GMM (Lücke & Forster 2017): the
    responsibilities are the exact posterior renormalised over ``K(n)`` (Forster & Lücke
    2018, eq. 5), and the objective is the truncated free energy (eq. 10). ``n_winners = C``
    gives standard EM.

    Parameters
    ----------
    n_winners : int, default=1
        ``C'``, the number of clusters kept per sample, ``1 <= n_winners <= n_clusters``.

    Notes
    -----
    Cost per call: ``N C`` distance evaluations plus an ``O(C log C')`` selection per sample.
    Memory: one ``256 x C`` distance tile per thread and the ``N x C'`` winners and
    responsibilities. Keeps no state between calls. Reads ``state.config.needs_resp``,
    ``state.config.objective`` and
    ``state.run.sigma2`` (set on the first soft call from the distances to the nearest centres,
    vc-GMM eq. 12); hard calls return labels and the weighted quantization error, soft calls
    ``winners`` (sorted by distance) and ``resp``.

    References
    ----------
    .. [1] J. Lücke and D. Forster, "k-means as a variational EM approximation of Gaussian
       mixture models", Pattern Recognition Letters, 2019 (arXiv:1704.04812).
    .. [2] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, eqs. 5 and 10.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer
    >>> from clusterkit import TruncatedEStep
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> gmm = Clusterer(2, seed=X[[0, 2]], estep=TruncatedEStep(n_winners=2), mstep="soft")
    >>> gmm.fit(X).labels_
    array([0, 0, 1, 1], dtype=int32)
    """

    exact = True  # the labels are the nearest centres, whatever n_winners
    objectives = MIXTURE_OBJECTIVES
    chunks = True  # (each chunk's winners; the M-steps sum their statistics per chunk)
    per_sample_state = False

    _parameter_constraints = {"n_winners": [Interval(Integral, 1)]}

    def __init__(self, n_winners=1):
        self.n_winners = n_winners

    def _validate(self, X, n_clusters, composition):
        """Check ``1 <= n_winners <= n_clusters``.

        Raises
        ------
        TypeError
            If ``n_winners`` is not an integer.
        ValueError
            If ``n_winners`` is below 1 or above ``n_clusters``.
        """
        if self.n_winners > n_clusters:
            raise ValueError(f"n_winners={self.n_winners} must be <= n_clusters={n_clusters}.")

    def winners_per_sample(self, n_clusters, composition):
        """``n_winners``, at most ``n_clusters``."""
        return min(int(self.n_winners), n_clusters)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Each step's winners, their distances and responsibilities (``N x C'``)."""
        n_winners = self.winners_per_sample(n_clusters, composition)
        return n_samples * (n_winners * (4 + 2 * dtype.itemsize) + 4 + dtype.itemsize)

    def assign(self, X, sample_weight, centers, state):
        """Return the assignment to each sample's ``n_winners`` nearest centres.

        See :meth:`EStep.assign`; counts ``N C`` evaluations under ``"estep"``.
        """
        n_winners = min(int(self.n_winners), centers.shape[0])
        winners, win_dist2 = top_winners(X, centers, n_winners, state)
        return winners_assignment(X, sample_weight, centers, state, winners, win_dist2)
