"""E-steps: how samples are assigned to clusters."""
import math
import numbers
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ._base import Assignment, EStep
from ._kernels import _assign, _elkan, _laplacian, _mstep, _partial, _topk
from ._state import weighted_sum
from ._validation import check_int

__all__ = ["FullEStep", "ElkanEStep", "TruncatedEStep", "PartialEStep", "LaplacianEStep",
           "free_energy"]


def free_energy(log_norm, sample_weight, sigma2, n_clusters, n_features):
    """Truncated free energy of an isotropic, equal-weight GMM (Forster & Lücke 2018, eq. 10).

    ``F = sum_n w_n log sum_{c in K(n)} p(c, x_n)`` with
    ``log p(c, x) = -log C - (D/2) log(2 pi sigma2) - d2(x, mu_c) / (2 sigma2)``; ``log_norm``
    holds ``log sum_{c in K(n)} exp(-d2_nc / (2 sigma2))`` per sample. With ``K(n)`` all clusters
    this is the weighted log-likelihood.
    """
    w = sample_weight.astype(np.float64, copy=False)
    const = log_joint_offset(sigma2, n_clusters, n_features)
    return weighted_sum(log_norm, w) - const * float(w.sum())


def log_joint_offset(sigma2, n_clusters, n_features):
    """``log C + (D/2) log(2 pi sigma2)``: ``log p(c, x) = -d2(x, mu_c) / (2 sigma2)`` minus
    this, for the isotropic, equal-weight GMM."""
    return math.log(n_clusters) + 0.5 * n_features * math.log(2.0 * math.pi * sigma2)




class _Buffers:
    """:class:`FullEStep`'s outputs, allocated once per run: an assignment is used within
    its step only, so the next step may overwrite it."""

    def __init__(self, n_samples, n_clusters, n_features, dtype, needs_resp):
        self.labels = np.empty(n_samples, dtype=np.int32)
        self.dist2 = np.empty(n_samples, dtype=dtype)
        self.centers_sum = np.empty((n_clusters, n_features), dtype=dtype)
        self.weight = np.empty(n_clusters, dtype=dtype)
        if needs_resp:
            self.resp = np.empty((n_samples, n_clusters), dtype=dtype)
            self.log_norm = np.empty(n_samples, dtype=dtype)


class FullEStep(EStep):
    """Exact E-step over all clusters: Lloyd's assignment, or full GMM responsibilities.

    With a hard M-step each sample is assigned to its nearest centre (the E-step of Lloyd's
    k-means); with a soft M-step the exact posterior over all ``C`` clusters of the isotropic,
    equal-weight GMM is computed (standard EM; Forster & Lücke 2018, eq. 2 with ``C' = C``).

    Notes
    -----
    Cost per call: ``N C`` distance evaluations. Memory: hard, ``O(N)`` outputs plus one
    ``256 x C`` tile per thread; soft, the ``N x C`` responsibilities the M-step consumes.
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

    exact = True

    def init_state(self, X, sample_weight, centers, state):
        """The output buffers, allocated once per run for the largest batch (all rows)."""
        return _Buffers(X.shape[0], centers.shape[0], X.shape[1], X.dtype, state.needs_resp)

    def assign(self, X, sample_weight, centers, state):
        n_samples = X.shape[0]
        buffers = state.estep_state
        if not isinstance(buffers, _Buffers):  # called without init_state
            buffers = _Buffers(n_samples, *centers.shape, X.dtype, state.needs_resp)
        labels, dist2 = buffers.labels[:n_samples], buffers.dist2[:n_samples]
        if not state.needs_resp:
            n_clusters, n_features = centers.shape
            if not _mstep.blocks_fit(n_samples, n_clusters, n_features, X.itemsize):
                state.count("estep", _assign.assign_full(X, centers, labels, dist2,
                                                         state.n_threads))
                qe = weighted_sum(dist2, sample_weight)
                return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe)
            # One pass over the data for the assignment and the hard M-step's sums.
            centers_sum, weight = buffers.centers_sum, buffers.weight
            state.count("estep", _assign.assign_full_accumulate(
                X, sample_weight, centers, labels, dist2, centers_sum, weight, state.n_threads))
            qe = weighted_sum(dist2, sample_weight)
            return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe,
                              centers_sum=centers_sum, weight_in_clusters=weight)

        resp, log_norm = buffers.resp[:n_samples], buffers.log_norm[:n_samples]
        sigma2 = -1.0 if state.sigma2 is None else state.sigma2
        state.count("estep", _assign.responsibilities_full(
            X, centers, sigma2, resp, labels, dist2, log_norm, state.n_threads))
        if state.sigma2 is None:  # resp holds distances: set eq. 12's variance, then normalise
            state.init_sigma2(dist2, sample_weight)
            _assign.responsibilities_truncated(resp, state.sigma2, resp, log_norm, state.n_threads)
        objective = free_energy(log_norm, sample_weight, state.sigma2, centers.shape[0],
                                X.shape[1])
        return Assignment(labels=labels, dist2=dist2, objective=objective,
                          qe=weighted_sum(dist2, sample_weight), resp=resp)


# --- ElkanEStep (Elkan 2003) -----------------------------------------------------------------


def _batch_rows(state, n_batch, n_rows):
    """The rows of the fit data (of ``n_rows``) that a batch of ``n_batch`` rows holds:
    ``state.rows``, checked against the batch (per-sample state is indexed by it); a batch of
    all the rows is all the rows whatever ``state.rows`` says (a strategy called outside the
    driver's loop)."""
    rows = state.rows
    if isinstance(rows, slice):
        rows = slice(*rows.indices(n_rows))
    count = len(range(n_rows)[rows]) if isinstance(rows, slice) else len(rows)
    if count == n_batch:
        return rows
    if n_batch == n_rows:
        return slice(0, n_rows)
    raise ValueError(f"The batch has {n_batch} rows but state.rows selects {count} of the "
                     f"{n_rows} rows the E-step's state was made for.")


class _ElkanBounds:
    """:class:`ElkanEStep`'s per-run state: the stored lower bounds, the total move of each
    centre, and the centre-centre half distances of the current step."""

    def __init__(self, n_samples, n_clusters, dtype):
        self.lower = np.empty((n_samples, n_clusters), dtype=np.float32)
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


class ElkanEStep(EStep):
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
    max_bounds_bytes : int, default=2**31
        Memory budget of the bounds (:func:`elkan_memory`: about ``4 N C + 8 C^2`` bytes). A fit
        that would need more is refused when it starts, before anything is allocated.

    Notes
    -----
    Memory: the lower bounds are an ``N x C`` float32 table (float32 also for float64 data:
    half the memory traffic, and a bound only has to be a little too small, never exact),
    plus ``C x C`` float64 half distances. At the default budget, 2 GiB, that is for instance
    ``N = 500,000`` with ``C = 1,000``; beyond it, use :class:`FullEStep` (Lloyd, ``O(N)``
    memory) or, approximately, :class:`PartialEStep`.

    Cost per step: ``C (C - 1) / 2`` centre distances, one distance per sample whose centre
    moved, and those the bounds do not rule out (at a sample's first visit all ``C``, pruned
    by the centre distances). Each bound is stored as ``l + S_c`` with ``S_c`` the total move
    of centre ``c`` so far, so the centres' moves apply to all bounds without a pass over the
    table, and under a mini-batch schedule the bounds of samples outside the batch stay valid.
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

    exact = True

    def __init__(self, max_bounds_bytes=2**31):
        self.max_bounds_bytes = max_bounds_bytes

    def _validate(self, X, n_clusters, composition):
        """Refuse soft M-steps and fits whose bounds exceed ``max_bounds_bytes``.

        Raises
        ------
        TypeError
            If ``max_bounds_bytes`` is not an integer.
        ValueError
            If the M-step needs responsibilities, or the bounds would need more memory than
            ``max_bounds_bytes``.
        """
        budget = check_int(self.max_bounds_bytes, "max_bounds_bytes", minimum=0)
        if composition.mstep.needs_resp:
            raise ValueError(f"ElkanEStep assigns hard labels; {type(composition.mstep).__name__}"
                             " needs responsibilities. Use FullEStep, TruncatedEStep or "
                             "PartialEStep for a Gaussian mixture.")
        n_rows = composition.reduce.max_rows(X.shape[0], n_clusters)
        need = elkan_memory(n_rows, n_clusters)
        if need > budget:
            raise ValueError(
                f"ElkanEStep needs {need / 2**30:.2f} GiB of bounds for {n_rows} samples and "
                f"n_clusters={n_clusters}, above max_bounds_bytes={budget} "
                f"({budget / 2**30:.2f} GiB). Raise max_bounds_bytes, reduce the data "
                "(reduce=LWCS(...)), or use FullEStep (Lloyd, no bounds) or PartialEStep.")

    def init_state(self, X, sample_weight, centers, state):
        """Allocate the bounds for all rows (set at each row's first visit)."""
        return _ElkanBounds(X.shape[0], centers.shape[0], X.dtype)

    def assign(self, X, sample_weight, centers, state):
        """Return the exact nearest-centre assignment of the batch ``state.rows``.

        See :meth:`EStep.assign`; counts the centre and sample distances computed under
        ``"estep"``.
        """
        bounds = state.estep_state
        bounds.shift_sum += state.center_shift  # the moves since the last E-step
        state.count("estep", _elkan.center_half_distances(
            centers, bounds.half_cc, bounds.half_min, state.n_threads))
        rows = _batch_rows(state, X.shape[0], bounds.lower.shape[0])
        if isinstance(rows, slice):
            rows = np.arange(rows.start, rows.stop, rows.step, dtype=np.intp)
        n_samples, n_features = X.shape
        n_clusters = centers.shape[0]
        labels = np.empty(n_samples, dtype=np.int32)
        dist2 = np.empty(n_samples, dtype=X.dtype)
        centers_sum = weight = None
        if _mstep.blocks_fit(n_samples, n_clusters, n_features, X.itemsize):
            # the M-step's sums in the same pass (every row is read for its distance anyway)
            centers_sum = np.empty_like(centers)
            weight = np.empty(n_clusters, dtype=X.dtype)
        slack = 2.0 ** -12 if X.dtype == np.float32 else 2.0 ** -20
        state.count("estep", _elkan.elkan_assign(
            X, sample_weight, np.asarray(rows, dtype=np.intp), centers, bounds.half_cc,
            bounds.half_min, bounds.shift_sum, bounds.lower,
            np.ascontiguousarray(state.labels[rows]), bounds.last_dist2, bounds.visit_shift,
            labels, dist2, centers_sum, weight, slack, state.n_threads))
        qe = weighted_sum(dist2, sample_weight)
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe,
                          centers_sum=centers_sum, weight_in_clusters=weight)


# --- variational E-steps: TruncatedEStep, PartialEStep (Forster & Lücke 2018) ---------------


def _winners_assignment(X, sample_weight, centers, state, winners, win_dist2):
    """The :class:`Assignment` of ``C'`` winners per sample (sorted by increasing distance).

    Hard M-step: labels are the first winners and the objective is the weighted QE. Soft
    M-step: truncated responsibilities (eq. 5) over the winners and the truncated free energy
    (eq. 10); ``win_dist2`` is overwritten with the responsibilities, so it must be a fresh
    array the caller does not use again.
    """
    labels = winners[:, 0].copy()
    dist2 = win_dist2[:, 0].copy()
    qe = weighted_sum(dist2, sample_weight)
    if not state.needs_resp:
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe, winners=winners)
    if state.sigma2 is None:  # vc-GMM eq. 12 from the best distances just found
        state.init_sigma2(dist2, sample_weight)
    log_norm = np.empty(X.shape[0], dtype=X.dtype)
    _assign.responsibilities_truncated(win_dist2, state.sigma2, win_dist2, log_norm,
                                       state.n_threads)
    objective = free_energy(log_norm, sample_weight, state.sigma2, centers.shape[0], X.shape[1])
    return Assignment(labels=labels, dist2=dist2, objective=objective, qe=qe, winners=winners,
                      resp=win_dist2)


def _top_winners(X, centers, n_winners, state):
    """Exact ``n_winners`` nearest centres of every sample (``N C`` evaluations, counted)."""
    winners = np.empty((X.shape[0], n_winners), dtype=np.int32)
    win_dist2 = np.empty((X.shape[0], n_winners), dtype=X.dtype)
    state.count("estep", _topk.assign_topk(X, centers, winners, win_dist2, state.n_threads))
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
    responsibilities. Keeps no state between calls. Reads ``state.needs_resp`` and
    ``state.sigma2`` (set on the first soft call from the distances to the nearest centres,
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
        n_winners = check_int(self.n_winners, "n_winners", minimum=1)
        if n_winners > n_clusters:
            raise ValueError(f"n_winners={n_winners} must be <= n_clusters={n_clusters}.")

    def assign(self, X, sample_weight, centers, state):
        """Return the assignment to each sample's ``n_winners`` nearest centres.

        See :meth:`EStep.assign`; counts ``N C`` evaluations under ``"estep"``.
        """
        n_winners = min(int(self.n_winners), centers.shape[0])
        winners, win_dist2 = _top_winners(X, centers, n_winners, state)
        return _winners_assignment(X, sample_weight, centers, state, winners, win_dist2)


def _distinct_random(random_state, n_rows, n_values, n_draws):
    """``n_draws`` distinct uniform integers from ``range(n_values)`` per row, int32.

    Floyd's sampling algorithm, vectorised over rows: every row is a uniformly random subset
    (its order is not uniformly random, which no caller needs). ``O(n_rows n_draws^2)``.
    """
    out = np.empty((n_rows, n_draws), dtype=np.int32)
    for col, top in enumerate(range(n_values - n_draws, n_values)):
        draw = random_state.randint(0, top + 1, size=n_rows).astype(np.int32)
        taken = (out[:, :col] == draw[:, None]).any(axis=1)
        out[:, col] = np.where(taken, top, draw)
    return out


class _PartialState:
    """Per-fit state of :class:`PartialEStep` (``state.estep_state``).

    Attributes
    ----------
    n_winners : int
        ``C'`` after resolving the default and clamping to ``n_clusters``.
    G : int
        Neighbourhood size after clamping to ``n_clusters``.
    exact : bool
        The search space covers all clusters (``G >= C`` or ``C' G + n_explore >= C``): every
        call runs the exact truncated E-step instead and the arrays below are ``None``.
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        ``K(n)``: distinct clusters per row, ascending by distance after each search.
    neighbourhoods : ndarray of shape (n_clusters, G), dtype=int32
        ``G_c``: distinct clusters, ``c`` first.
    neighbourhood_centers : ndarray of shape (n_clusters, n_features) or None
        The centres exhaustive neighbourhoods were last computed from (they are recomputed
        only when the centres changed, e.g. not between initial E-steps).
    cand, cand_dist2, n_cand : ndarray
        Scratch of :func:`~clusterkit._kernels._partial.partial_search`, allocated once:
        ``(n_samples, max_cand)`` candidates and their squared distances, ``(n_samples,)``
        counts, ``max_cand = min(C, C' G + n_explore)``.
    entry_cluster, entry_dist2 : ndarray or None
        Scratch of :func:`~clusterkit._kernels._partial.neighbourhoods_estimated`, at least
        ``n_cand.sum()`` long; grown when ``S(n)`` grows.
    """

    def __init__(self, n_winners, G, exact):
        self.n_winners = n_winners
        self.G = G
        self.exact = exact
        self.winners = None
        self.neighbourhoods = None
        self.neighbourhood_centers = None
        self.cand = None
        self.cand_dist2 = None
        self.n_cand = None
        self.entry_cluster = None
        self.entry_dist2 = None


class PartialEStep(EStep):
    """Partial variational E-step over cluster neighbourhoods (var-k-means, var-GMM).

    Forster & Lücke (2018), Algs. 1 and 2. Each sample keeps a set ``K(n)`` of ``C'``
    clusters across iterations; each cluster a neighbourhood ``G_c`` of ``G`` clusters (itself
    first). One call searches, for every sample, only
    ``S(n) = union_{c in K(n)} G_c`` plus ``n_explore`` uniformly random clusters, computes
    those distances and makes the ``C'`` nearest of them the new ``K(n)``. The responsibilities
    are the truncated posterior over ``K(n)`` (eq. 5), the objective the truncated free energy
    (eq. 10). With a hard M-step and ``C' = 1`` this is var-k-means, with a soft M-step and
    ``C' = G`` var-GMM; ``neighbourhoods="exhaustive"`` gives the ``-X`` variants (Alg. 1),
    ``"estimated"`` the ``-S`` variants (Alg. 2).

    Parameters
    ----------
    G : int, default=5
        Neighbourhood size ``|G_c|`` (including ``c``). Clamped to ``n_clusters`` with a warning.
    n_winners : int or None, default=None
        ``C' = |K(n)|``; ``None`` means 1 with a hard M-step (var-k-means) and ``G`` with a soft
        one (var-GMM). Must satisfy ``1 <= n_winners <= n_clusters``; ``n_winners > G`` is
        allowed (the search space then has up to ``C' G`` clusters).
    neighbourhoods : {"estimated", "exhaustive"}, default="estimated"
        ``"exhaustive"``: before the data loop, ``G_c`` = ``c`` and its ``G - 1`` nearest
        centres from all ``C^2`` centre distances (Alg. 1; counted as ``C^2`` evaluations).
        ``"estimated"``: after the data loop, ``G_c`` = ``c`` and the ``G - 1`` clusters with
        the smallest mean distance to the samples whose best cluster is ``c``, over the
        distances already computed (eq. 8, Alg. 2; no extra evaluation).
    n_explore : int, default=1
        Uniformly random clusters added to each ``S(n)`` per call (the "+1" of the paper's
        large-scale experiments, e.g. ``G = 2+1``).
    n_init_esteps : int, default=0
        Searches run once before the first M-step, updating ``K(n)`` and ``G_c`` only (the
        paper's "initial E-steps"; its reference code uses 5 for large data).
    neighbour_stat : {"sqdist", "dist"}, default="sqdist"
        Statistic averaged in eq. 8: the squared distance (as in both authors' public
        implementations, which produced the papers' numbers) or the plain distance (the
        formula as printed).
    init : {"auto", "random", "exact"}, default="auto"
        How ``K(n)`` and ``G_c`` start. ``"auto"``: from the seeder's nearest-seed labels
        when it provides them, else from one exact truncated E-step (see below);
        ``"exact"``: always from the exact E-step; ``"random"``: uniformly at random, the
        papers' setting.

    Notes
    -----
    Cost per call: ``sum_n |S(n)| <= N (C' G + n_explore)`` distance evaluations (fewer when the
    neighbourhoods of ``K(n)`` overlap), plus ``C^2`` with exhaustive neighbourhoods;
    bookkeeping ``O(N C' G)``, never ``O(N C)`` or, for estimated neighbourhoods, ``O(C^2)``.
    Memory: ``K(n)`` ``O(N C')``, ``G_c`` ``O(C G)``, the computed distances
    ``O(N (C' G + n_explore))`` and one ``n_clusters``-long stamp array per thread.

    State (``state.estep_state``, created by :meth:`init_state`): ``winners`` ``K(n)`` and
    ``neighbourhoods`` ``G_c``. Reads ``state.needs_resp``, ``state.sigma2`` and
    ``state.random_state``; on the first soft call the variance is set from the best
    distances found (vc-GMM eq. 12).

    Guarantee (Prop. 1): ``c`` is in ``G_c``, so every old member of ``K(n)`` is re-evaluated
    and for fixed centres no sample's best distance increases and the truncated free energy
    never decreases; the M-step increases it in turn.

    Initialisation (``init``): the paper starts from ``C'`` distinct uniformly random clusters
    per sample and ``G_c`` = ``c`` plus ``G - 1`` distinct uniformly random others, and
    ``n_init_esteps`` repair this before the first M-step (``init="random"``). A random
    ``K(n)`` is far from the sample's clusters: the first searches find distances far above
    the seeds' own, a soft fit's first variance (eq. 12) is inflated (about 500 times on
    birch2 from AFK-MC² seeds) and the fit can settle far above k-means (var-k-means from
    AFK-MC² seeds on a coreset of cod_rna, ``C = 500``: +23 % above scikit-learn's error;
    from the informed start below, +13 %). So by default (``"auto"``) ``K(n)`` starts at
    each sample's nearest seed:

    * k-means++ seeding (:class:`~clusterkit.KMeansPlusPlus` on the data the fit runs on)
      knows each sample's nearest seed as a by-product (``state.seed_labels``). ``G_c``
      starts as the exact neighbourhoods of the seeds (one pass over the ``C^2`` centre
      distances, counted) and ``K(n)`` as the sample's nearest seed and that seed's
      ``C' - 1`` nearest centres.
    * Otherwise one exact truncated E-step finds the ``C'`` nearest seeds (``N C``
      distances, counted, once; the cost of one Lloyd iteration, at gemm speed with many
      features) plus the ``C^2`` centre distances for ``G_c``. On a coreset this is cheap;
      on all the data it is one iteration of the ``N C`` work the method avoids, against the
      tens of iterations a fit makes.

    ``init="exact"`` uses the exact E-step even after k-means++ seeding (it then also gives
    ``C' > 1`` winners their exact order).

    Deviations and choices:

    * If ``G >= C`` or ``C' G + n_explore >= C`` the search space can be as large as all
      clusters, and each call runs the exact truncated E-step (:class:`TruncatedEStep` with
      ``C'`` winners, ``N C`` evaluations) instead; initial E-steps are then skipped.
    * Eq. 8 averages squared distances by default (see ``neighbour_stat``), over the samples
      whose best cluster is ``c`` counted once each (the papers' Alg. 2), not weighted;
      zero-weight samples are left out, so they are as if absent.
    * When fewer than ``G - 1`` clusters were evaluated together with ``c``, ``G_c`` keeps old
      entries to fill up; clusters that are no sample's best keep their ``G_c``.
    * Ties in distance go to the lower cluster index.
    * Under a mini-batch schedule each call searches and keeps ``K(n)`` of the batch's rows
      (``state.rows``; a row's ``K(n)`` waits for its next visit) and estimates ``G_c`` from
      the batch's distances.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, Algs. 1-2, eqs. 5, 8,
       10, Prop. 1.
    .. [2] F. Hirschberger, D. Forster and J. Lücke, "Accelerated training of large-scale
       Gaussian mixtures by a merger of sublinear approaches" (vc-GMM), eq. 12.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer
    >>> from clusterkit import PartialEStep
    >>> rng = np.random.RandomState(0)
    >>> grid = 6.0 * np.array([[i, j] for i in range(4) for j in range(4)])
    >>> X = np.repeat(grid, 20, axis=0) + rng.normal(size=(320, 2))
    >>> km = Clusterer(16, seed=grid, estep=PartialEStep(G=3), random_state=0).fit(X)
    >>> np.bincount(km.labels_).tolist() == [20] * 16
    True
    """

    def __init__(self, G=5, n_winners=None, neighbourhoods="estimated", n_explore=1,
                 n_init_esteps=0, neighbour_stat="sqdist", init="auto"):
        self.G = G
        self.n_winners = n_winners
        self.neighbourhoods = neighbourhoods
        self.n_explore = n_explore
        self.n_init_esteps = n_init_esteps
        self.neighbour_stat = neighbour_stat
        self.init = init

    def _validate(self, X, n_clusters, composition):
        """Check the hyper-parameters; warn if ``G > n_clusters`` (``G`` is then clamped).

        Raises
        ------
        TypeError
            If ``G``, ``n_winners``, ``n_explore`` or ``n_init_esteps`` is not an integer.
        ValueError
            If ``G < 1``, ``n_winners`` is outside ``[1, n_clusters]``, ``n_explore < 0``,
            ``n_init_esteps < 0`` or an option is unknown.
        """
        G = check_int(self.G, "G", minimum=1)
        if self.n_winners is not None:
            n_winners = check_int(self.n_winners, "n_winners", minimum=1)
            if n_winners > n_clusters:
                raise ValueError(f"n_winners={n_winners} must be <= n_clusters={n_clusters}.")
        if self.neighbourhoods not in ("estimated", "exhaustive"):
            raise ValueError(f"Unknown neighbourhoods={self.neighbourhoods!r}; expected "
                             "'estimated' or 'exhaustive'.")
        if self.neighbour_stat not in ("sqdist", "dist"):
            raise ValueError(f"Unknown neighbour_stat={self.neighbour_stat!r}; expected "
                             "'sqdist' or 'dist'.")
        if self.init not in ("auto", "random", "exact"):
            raise ValueError(f"Unknown init={self.init!r}; expected 'auto', 'random' or "
                             "'exact'.")
        check_int(self.n_explore, "n_explore", minimum=0)
        check_int(self.n_init_esteps, "n_init_esteps", minimum=0)
        if G > n_clusters:
            warnings.warn(f"G={G} > n_clusters={n_clusters}; using G=n_clusters.",
                          RuntimeWarning, stacklevel=2)
        elif G == 1 and self.n_explore == 0 and n_clusters > 1 and (
                self.n_winners is None or self.n_winners < n_clusters):
            warnings.warn("G=1 with n_explore=0: the search space S(n) is K(n) itself, so "
                          "no sample can ever change its clusters; use G >= 2 or "
                          "n_explore >= 1.", RuntimeWarning, stacklevel=2)

    def init_state(self, X, sample_weight, centers, state):
        """Initial ``K(n)`` and ``G_c`` (see ``init``), then the initial E-steps.

        Returns the state object kept as ``state.estep_state``; initial E-steps count their
        distance evaluations under ``"estep"``.
        """
        n_samples, n_clusters = X.shape[0], centers.shape[0]
        G = min(int(self.G), n_clusters)
        if self.n_winners is None:
            n_winners = G if state.needs_resp else 1
        else:
            n_winners = min(int(self.n_winners), n_clusters)
        exact = G >= n_clusters or n_winners * G + int(self.n_explore) >= n_clusters
        st = _PartialState(n_winners, G, exact)
        if exact:
            return st
        seed_labels = state.seed_labels
        from_seeding = (self.init == "auto" and seed_labels is not None
                        and len(seed_labels) == n_samples)
        if self.init != "random":
            # one pass over the C^2 centre distances gives G_c and, as K(n) may be wider
            # (C' > G), each seed's C' nearest centres
            nearest = np.empty((n_clusters, max(G, n_winners)), dtype=np.int32)
            state.count("estep", _partial.neighbourhoods_exhaustive(
                centers, nearest, state.n_threads))
            st.neighbourhoods = np.ascontiguousarray(nearest[:, :G])
            st.neighbourhood_centers = centers.copy()
            if from_seeding:
                st.winners = np.ascontiguousarray(nearest[seed_labels, :n_winners])
            else:
                st.winners, _ = _top_winners(X, centers, n_winners, state)
        else:
            # Forster & Lücke (2018), Sec. 4: uniformly random K(n) and G_c
            rng = state.random_state
            st.winners = _distinct_random(rng, n_samples, n_clusters, n_winners)
            others = _distinct_random(rng, n_clusters, n_clusters - 1, G - 1)
            own = np.arange(n_clusters, dtype=np.int32)[:, None]
            st.neighbourhoods = np.hstack([own, others + (others >= own)]).astype(np.int32)
        max_cand = min(n_clusters, n_winners * G + int(self.n_explore))
        st.cand = np.empty((n_samples, max_cand), dtype=np.int32)
        st.cand_dist2 = np.empty((n_samples, max_cand), dtype=X.dtype)
        st.n_cand = np.empty(n_samples, dtype=np.int32)
        for _ in range(int(self.n_init_esteps)):
            self._search(X, sample_weight, centers, state, st, slice(None))
        return st

    def _search(self, X, sample_weight, centers, state, st, rows):
        """One search over ``S(n)`` of the fit data's ``rows`` (the batch ``X``) plus the
        neighbourhood update; returns the winners' squared distances (a fresh array)."""
        n_samples, n_clusters = X.shape[0], centers.shape[0]
        # K(n) of the batch: a view of the rows of a slice (updated in place), else a copy
        winners = st.winners[rows]
        cand, cand_dist2 = st.cand[:n_samples], st.cand_dist2[:n_samples]
        n_cand = st.n_cand[:n_samples]
        if self.neighbourhoods == "exhaustive" and not (
                st.neighbourhood_centers is not None
                and np.array_equal(st.neighbourhood_centers, centers)):
            # Alg. 1, first block: exact neighbourhoods from all C^2 centre distances
            state.count("estep", _partial.neighbourhoods_exhaustive(
                centers, st.neighbourhoods, state.n_threads))
            st.neighbourhood_centers = centers.copy()
        explore = state.random_state.randint(
            0, n_clusters, size=(n_samples, int(self.n_explore))).astype(np.int32)
        win_dist2 = np.empty((n_samples, st.n_winners), dtype=X.dtype)
        # Alg. 1/2, data loop: distances to S(n), new K(n) = the C' nearest of S(n)
        state.count("estep", _partial.partial_search(
            X, centers, st.neighbourhoods, explore, winners, win_dist2, cand, cand_dist2,
            n_cand, state.n_threads))
        if self.neighbourhoods == "estimated":
            # Alg. 2: G_c from the distances just computed (eq. 8), no new evaluation;
            # zero-weight samples are not data (they are in no I_c)
            labels = winners[:, 0].copy()
            labels[~(sample_weight > 0)] = -1
            n_entries = int(n_cand.sum())
            if st.entry_cluster is None or st.entry_cluster.shape[0] < n_entries:
                # kept between calls: fresh memory would be paged in at every call; the
                # headroom spares a reallocation each time S(n) grows a little
                size = min(st.cand.size, n_entries + n_entries // 4)
                st.entry_cluster = np.empty(size, dtype=np.int32)
                st.entry_dist2 = np.empty(size, dtype=X.dtype)
            _partial.neighbourhoods_estimated(
                labels, cand, cand_dist2, n_cand, st.neighbourhoods,
                self.neighbour_stat == "dist", state.n_threads, st.entry_cluster,
                st.entry_dist2)
        if not isinstance(rows, slice):
            st.winners[rows] = winners
        return win_dist2

    def assign(self, X, sample_weight, centers, state):
        """Partial E-step: update ``K(n)`` (and ``G_c``), return the truncated assignment.

        See :meth:`EStep.assign`. ``winners`` of the result is a copy of ``K(n)`` sorted by
        increasing distance; ``labels`` its first column.
        """
        st = state.estep_state
        if not isinstance(st, _PartialState):  # called without init_state
            st = state.estep_state = self.init_state(X, sample_weight, centers, state)
        if st.exact:
            winners, win_dist2 = _top_winners(X, centers, st.n_winners, state)
        else:
            rows = _batch_rows(state, X.shape[0], st.winners.shape[0])
            win_dist2 = self._search(X, sample_weight, centers, state, st, rows)
            winners = st.winners[rows].copy()
        return _winners_assignment(X, sample_weight, centers, state, winners, win_dist2)


class _LaplacianState:
    """:class:`LaplacianEStep`'s per-run state: the graph in CSR arrays, and the soft
    assignments and labels of the last step that kept every cluster."""

    def __init__(self, indptr, indices, weights, locality):
        # the graph with its rows and columns in the order ``locality`` of the fit's rows
        self.indptr, self.indices, self.weights = indptr, indices, weights
        self.locality = locality
        self.z = self.labels = None
        self.trivial = False


class LaplacianEStep(EStep):
    """Soft assignments of Scalable Laplacian K-modes by bound optimisation (Ziko, Granger &
    Ben Ayed 2018, eqs. 5-8).

    With the modes ``m_l`` (the current centres) fixed, minimises the concave-convex
    relaxation ``sum_p z_p^T log z_p - sum_pl z_pl a_pl - lam sum_pq w_pq z_p^T z_q`` of the
    Laplacian K-modes energy over the soft assignments ``z_p`` (rows of the simplex), where
    ``a_pl = k(x_p, m_l) = exp(-||x_p - m_l||^2 / (2 sigma^2))`` and ``w`` is a sparse
    k-nearest-neighbour graph. The run's first step only labels every sample with its
    nearest seed (``z_p`` one-hot), so that the M-step finds the first modes from the seeds'
    clusters (Alg. 1, as the authors' code). Every later step starts from
    ``z_p = softmax(a_p)``, and each inner iteration
    replaces every ``z_p`` at once by the minimiser of the bound (eq. 5), ``softmax(a_p + lam
    b_p)`` with ``b_p = sum_q w_pq z_q`` (eq. 8, one Cython pass over the graph's rows), until
    the bound's relative change is at most ``tol_inner``. Labels are ``argmax_l z_pl``.

    Parameters
    ----------
    n_neighbors : int, default=5
        ``rho``: neighbours per sample in the graph built from the fit data
        (:func:`~clusterkit.knn_graph`; exact below
        :data:`~clusterkit._graph.EXACT_BELOW` samples, pynndescent above).
    lam : float, default=1.0
        Weight ``lambda >= 0`` of the Laplacian term (0: K-modes without the graph).
    sigma : float or None, default=None
        Kernel bandwidth ``> 0``; ``None`` estimates ``sigma^2`` as the mean squared distance
        of the samples to their graph neighbours (§4.2).
    graph : sparse matrix of shape (n_samples, n_samples) or None, default=None
        A precomputed graph of the training data (e.g. from :func:`~clusterkit.knn_graph`),
        reused instead of building one; its entries are the weights ``w_pq``.
        ``n_neighbors`` is then not used.
    max_inner : int, default=1000
        Most z-updates per E-step (the authors' current code; their code of 2018: 200, which
        on MNIST ends at a clearly lower NMI, 0.69 against 0.81 for the same seed).
    tol_inner : float, default=1e-6
        Relative change of the bound that ends the z-updates (2018 code: 1e-4).

    Notes
    -----
    Cost per E-step: ``N L`` kernel evaluations (counted as distance evaluations) plus
    ``O(N rho L)`` per z-update (their number is ``"z_updates"`` in ``history_``); memory
    ``O(N rho + N L)``. The objective reported to the
    driver is the discrete energy of eq. 1 at the labels, ``-sum_p w_p k(x_p, m_{l_p}) + lam
    sum_pq w_pq [l_p != l_q]`` (minimised; ``w_p`` the sample weights). The E-step writes
    the bandwidth as ``state.sigma2`` (the estimator's ``sigma2_``), which
    :class:`~clusterkit.ModeMStep` reads. If a z-update leaves a cluster with no sample, the
    step reverts to the previous step's assignments and flags the fit
    (``trivial_solution_``), as the authors' code does; the modes then stay and the fit
    stops. The graph is built on the data the fit runs on, so a
    :class:`~clusterkit.DataReducer` other than :class:`~clusterkit.NoReduction` is refused.
    Needs an M-step with responsibilities (:class:`~clusterkit.ModeMStep`) and full batches.

    Fitted attributes added to the estimator: ``soft_labels_`` (``N x L``, the last ``z``)
    and ``trivial_solution_``.

    Examples
    --------
    >>> from clusterkit import LaplacianEStep
    >>> LaplacianEStep(lam=2.0)  # doctest: +NORMALIZE_WHITESPACE
    LaplacianEStep(n_neighbors=5, lam=2.0, sigma=None, graph=None, max_inner=1000,
                   tol_inner=1e-06)
    """

    def __init__(self, n_neighbors=5, lam=1.0, sigma=None, graph=None, max_inner=1000,
                 tol_inner=1e-6):
        self.n_neighbors = n_neighbors
        self.lam = lam
        self.sigma = sigma
        self.graph = graph
        self.max_inner = max_inner
        self.tol_inner = tol_inner

    def _validate(self, X, n_clusters, composition):
        """Parameters, the graph's shape, full batches, no reduction, a soft M-step."""
        from ._reduction import NoReduction
        n_samples = X.shape[0]
        if self.graph is None:
            n_neighbors = check_int(self.n_neighbors, "n_neighbors", minimum=1)
            if n_neighbors >= n_samples:
                raise ValueError(f"n_neighbors={n_neighbors} must be < n_samples={n_samples}.")
        elif not sp.issparse(self.graph) or self.graph.shape != (n_samples, n_samples):
            shape = getattr(self.graph, "shape", None)
            raise ValueError(f"graph must be a sparse matrix of shape ({n_samples}, "
                             f"{n_samples}) for these data, got {type(self.graph).__name__} "
                             f"of shape {shape}.")
        if not (isinstance(self.lam, numbers.Real) and self.lam >= 0):
            raise ValueError(f"lam={self.lam!r} must be a number >= 0.")
        if self.sigma is not None and not (isinstance(self.sigma, numbers.Real)
                                           and self.sigma > 0):
            raise ValueError(f"sigma={self.sigma!r} must be None or a number > 0.")
        check_int(self.max_inner, "max_inner", minimum=1)
        if not (isinstance(self.tol_inner, numbers.Real) and self.tol_inner >= 0):
            raise ValueError(f"tol_inner={self.tol_inner!r} must be a number >= 0.")
        if not isinstance(composition.reduce, NoReduction):
            raise ValueError("LaplacianEStep builds its graph on the training samples; a "
                             f"{type(composition.reduce).__name__} is not supported.")
        if not composition.schedule.full_batch:
            raise ValueError("LaplacianEStep updates every sample from its graph neighbours: "
                             "it needs a full-batch schedule, got "
                             f"{type(composition.schedule).__name__}.")
        if not composition.mstep.needs_resp:
            raise ValueError("LaplacianEStep gives soft assignments: it needs an M-step that "
                             f"reads them (ModeMStep), not {type(composition.mstep).__name__}.")

    def init_state(self, X, sample_weight, centers, state):
        """The graph (built unless given) and the bandwidth (``state.sigma2``)."""
        from ._graph import knn_graph
        graph = self.graph
        if graph is None:
            graph = knn_graph(X, self.n_neighbors, random_state=state.random_state,
                              n_threads=state.n_threads)
        graph = sp.csr_matrix(graph)
        if state.order is not None:  # the run's order of the rows
            graph = graph[state.order][:, state.order].tocsr()
        graph.sort_indices()
        if self.sigma is None:  # mean squared distance to the graph neighbours (§4.2)
            total = _laplacian.graph_sqdist_sum(X, graph.indptr.astype(np.int32),
                                                graph.indices.astype(np.int32),
                                                state.n_threads)
            sigma2 = total / max(graph.nnz, 1)
        else:
            sigma2 = float(self.sigma) ** 2
        if not sigma2 > 0:
            raise ValueError("The kernel bandwidth is zero: every sample coincides with its "
                             "graph neighbours. Pass sigma > 0.")
        state.sigma2 = sigma2
        # The z-updates run over the rows in reverse Cuthill-McKee order, in which graph
        # neighbours sit close together: their rows of z are then mostly in cache (on MNIST
        # a z-update is about three times faster than in the data's order).
        locality = reverse_cuthill_mckee(graph, symmetric_mode=False).astype(np.intp)
        graph = graph[locality][:, locality].tocsr()
        graph.sort_indices()
        return _LaplacianState(graph.indptr.astype(np.int32), graph.indices.astype(np.int32),
                               graph.data.astype(X.dtype), locality)

    def assign(self, X, sample_weight, centers, state):
        """z-updates with the current modes; the labels, their discrete energy (eq. 1).

        The run's first step only labels every sample with its nearest seed: Alg. 1 starts
        from the seeds' clusters, whose modes the M-step then finds (as the authors' code).
        """
        st = state.estep_state
        n_samples, n_clusters = X.shape[0], centers.shape[0]
        dist2 = _full_dist2(X, centers)
        state.count("estep", n_samples * n_clusters)
        a = np.exp(dist2 / (-2 * state.sigma2)).astype(X.dtype)
        n_updates = 0
        if st.labels is None:
            labels = dist2.argmin(axis=1).astype(np.int32)
            z = np.zeros_like(a)
            z[np.arange(n_samples), labels] = 1
        else:
            a_local = a[st.locality]  # the rows in the graph's order
            z = np.exp(a_local - a_local.max(axis=1, keepdims=True))  # softmax(a) (Alg. 1)
            z /= z.sum(axis=1, keepdims=True)
            z_new = np.empty_like(z)
            bound = None
            while n_updates < self.max_inner:
                previous = bound
                bound = _laplacian.z_update(a_local, st.indptr, st.indices, st.weights, z,
                                            float(self.lam), z_new, state.n_threads)
                z, z_new = z_new, z
                n_updates += 1
                if (previous is not None
                        and abs(bound - previous) <= self.tol_inner * abs(previous)):
                    break
            z_new[st.locality] = z  # back to the fit's order of the rows
            z = z_new
            labels = z.argmax(axis=1).astype(np.int32)
        state.step_info["z_updates"] = n_updates
        if st.labels is not None and np.unique(labels).size < min(n_clusters, n_samples):
            # a cluster vanished: back to the last assignments that kept every cluster
            st.trivial = True
            state.step_info["trivial_solution"] = True
            z, labels = st.z, st.labels
        st.z, st.labels = z, labels
        best = dist2[np.arange(n_samples), labels]
        kernel = a[np.arange(n_samples), labels].astype(np.float64)
        local = labels[st.locality]
        cut = np.repeat(local, np.diff(st.indptr)) != local[st.indices]
        energy = (-float(np.dot(sample_weight, kernel))
                  + float(self.lam) * float(st.weights[cut].sum(dtype=np.float64)))
        return Assignment(labels=labels, dist2=best, objective=energy,
                          qe=weighted_sum(best, sample_weight), resp=z)

    def final_labels(self, state):
        """``argmax_l z_pl`` of the kept run (SLK labels by assignment, not nearest mode)."""
        return state.estep_state.labels

    def fitted_attributes(self, state):
        """``soft_labels_`` (in the order of the training rows) and ``trivial_solution_``."""
        st = state.estep_state
        return {"soft_labels_": state.in_data_order(st.z), "trivial_solution_": st.trivial}


def _full_dist2(X, centers):
    """All ``N x L`` squared distances (clamped at zero), in blocks of rows."""
    centers_sqnorm = np.einsum("ij,ij->i", centers, centers)
    out = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
    for start in range(0, X.shape[0], 4096):
        block = X[start:start + 4096]
        d2 = (np.einsum("ij,ij->i", block, block)[:, None] - 2 * block @ centers.T
              + centers_sqnorm)
        np.maximum(d2, 0, out=out[start:start + 4096])
    return out
