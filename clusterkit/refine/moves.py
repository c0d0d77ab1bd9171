"""Single-point moves: polish a run's partition until no row's move to another cluster lowers
the k-means objective (a local optimum in Hartigan's sense), :class:`SinglePointMoves`.

The rows move one by one in a kernel (:func:`~clusterkit._kernels._moves.moves_pass`); this
module ranks every row's nearest centres for it, keeps the exact partition between passes
and judges the result.
"""
from numbers import Integral

import numpy as np

from .._data.moments import weighted_sum
from .._data.nearest import single_threaded_blas
from .._engine.assignment import QUANTIZATION_ERROR
from .._engine.constraints import Interval
from .._engine.contracts import Refiner
from .._kernels import _moves, _topk

__all__ = ["SinglePointMoves"]


class SinglePointMoves(Refiner):
    """Move single rows between clusters while that lowers the k-means objective (Hartigan's
    rule), until no single move does: a D-local optimum.

    A converged Lloyd run is a fixed point of its two steps: each row is nearest to its own
    centre and each centre is the mean of its rows. Moving one row ``x`` (weight ``w``) from
    cluster ``a`` to ``b`` also moves both means, and changes the weighted quantization error
    by exactly ``w W_b / (W_b + w) ||x - c_b||^2 - w W_a / (W_a - w) ||x - c_a||^2`` (``W``
    the clusters' weights, ``c`` their means). The first term shrinks and the second grows
    with the cluster sizes, so a row near the border of a small cluster can lower the error by
    leaving it although its own centre is its nearest: Lloyd's fixed points need not be local
    optima for such moves. Passes over the rows move each row to the cluster that lowers the
    error most, if any does, and update the two means and weights at once, until a pass moves
    nothing or ``max_passes`` passes have run.

    Parameters
    ----------
    max_passes : int, default=100
        Most passes over the rows.
    n_candidates : int, default=4
        How many nearest centres of each row are ranked (one pass over all rows and
        centres) and compared with it in every pass; the other centres are compared only
        with the rows whose bound does not rule them out (see Notes). Larger: fewer such
        rows, more distances per row. At most ``n_clusters`` are used.

    Notes
    -----
    What is guaranteed: when the passes end because one moved nothing, no single row of
    positive weight can move to another cluster and lower the fit's objective (the weighted
    quantization error of the rows the fit ran on: a coreset's after a reduction) by more
    than ``1e-10`` of its own term ``w W_a / (W_a - w) ||x - c_a||^2``, up to float64 rounding of
    the changes; the passes compare each row with every centre, exactly, some of them through
    bounds. A row that is the last of positive weight in its cluster does not move (no
    cluster is emptied), and rows of weight zero change nothing and are not moved. When
    ``max_passes`` ends the passes first, the result is better than the run but may not be
    such an optimum (the last entry of ``refinement_log_`` moved rows). ``labels_`` are then
    the nearest final centres, as after any run that did not end at a fixed point; at a
    D-local optimum every row of positive weight is nearer to its own mean than to any other
    (moving it would otherwise gain), so they are the polished partition up to rounding.

    How the target is found without every row-centre distance in every pass: each row's
    ``n_candidates`` nearest centres are ranked once, and a bound ``f`` on the distance to
    every other centre is kept (the last candidate's distance, less the ranking's rounding).
    A centre ``c_b`` outside the candidates has moved by at most ``m``, the largest move of a
    centre since the ranking, so ``||x - c_b|| >= f - m``, and its cost is at least
    ``w W_min / (W_min + w) (f - m)^2`` (``W_min`` the smallest cluster weight). A row whose
    bound is below its best candidate's cost and its own term bounds every other centre by
    that centre's own move instead (``w W_b / (W_b + w) (f - m_b)^2``, no distance) and
    computes the distances of those this does not rule out. The centres are ranked again
    before a pass if more than a sixteenth of the rows needed that in the last one.

    The refinement starts from the nearest centres of the run's final centres, whose means
    (one M-step) are its first centres; the objective is tracked by the exact changes of the
    moves (``refinement_log_``, one entry per pass, with ``"pass"``, ``"rows_moved"``,
    ``"full_checks"``, ``"ranked"``, ``"objective_before"``, ``"objective"``, ``"kept"``), and
    the final objective is computed again from the final centres (in the data's dtype) and
    labels. The run is kept as it was if no row moved, or if that objective is not below
    the run's at its own centres; otherwise it ends at the new partition with one more
    ``history_`` entry (``"polish_passes"``, ``"n_changed"`` the rows moved).

    Cost: one ranking pass (``n_samples * n_clusters`` distances, in gemm tiles; again when
    the bounds have worn out), then per pass ``n_candidates + 1`` direct distances per row,
    plus, for a row whose shared bound fails, the distances of the centres its bound by
    each centre's own move does not rule out; and three passes of ``n_samples`` for the
    exact objectives (the run's, the start's, the result's); counted under
    ``cost_["refinement"]``. The moves run on one thread (each changes what the next
    row sees). Memory: ``O(n_samples * n_candidates)``.

    Refines the quantization error of hard k-means only (not a mixture's free energy); not
    with a spherical M-step (the means leave the unit sphere), not with an E-step whose
    labels obey a constraint (:attr:`EStep.constrained <clusterkit.EStep.constrained>`), not
    on sparse rows or rows in chunks. Composes with any other refiner before or after it,
    e.g. ``refine=(Breathing(), SinglePointMoves())``
    (:class:`~clusterkit.RefinerSequence`).

    References
    ----------
    .. [1] J. A. Hartigan and M. A. Wong, "Algorithm AS 136: A k-means clustering
       algorithm", Journal of the Royal Statistical Society, Series C (Applied Statistics),
       28(1):100-108, 1979. Their transfer stage moves one point at a time by this change
       of the error.
    .. [2] M. Li, M. R. Metel and A. Takeda, "Modified k-means algorithm with local
       optimality guarantees", Proceedings of the 42nd International Conference on Machine
       Learning (ICML), PMLR 267, 2025. They show that Lloyd's algorithm may stop at points
       that are not local optima, and call a partition that no single move improves
       D-local (discrete); these passes reach one.

    Examples
    --------
    Lloyd's iterations from these two seeds stop with the row at 7 in the right cluster,
    although it is nearer to the left one's mean once it has joined it:

    >>> import numpy as np
    >>> from clusterkit import Clusterer, SinglePointMoves
    >>> X = np.array([[0.], [3.], [6.], [7.], [12.], [13.]])
    >>> start = np.array([[0.], [13.]])
    >>> plain = Clusterer(2, seed=start).fit(X)
    >>> plain.labels_, round(float(plain.inertia_), 6)
    (array([0, 0, 0, 1, 1, 1], dtype=int32), 38.666667)
    >>> polished = Clusterer(2, seed=start, refine=SinglePointMoves()).fit(X)
    >>> polished.labels_, round(float(polished.inertia_), 6)
    (array([0, 0, 0, 0, 1, 1], dtype=int32), 30.5)
    >>> polished.cluster_centers_.ravel()
    array([ 4. , 12.5])
    """

    objectives = (QUANTIZATION_ERROR,)
    chunks = False
    chunks_refusal = "its moves visit the rows one by one, all in one process"
    _parameter_constraints = {"max_passes": [Interval(Integral, 1)],
                              "n_candidates": [Interval(Integral, 1)]}

    def __init__(self, max_passes=100, n_candidates=4):
        self.max_passes = max_passes
        self.n_candidates = n_candidates

    def _validate(self, X, n_clusters, composition):
        if composition.mstep.spherical:
            raise ValueError("SinglePointMoves moves rows by the k-means error of their "
                             f"means, which {type(composition.mstep).__name__} puts on the "
                             "unit sphere; use refine=None for spherical k-means.")
        if composition.estep.constrained:
            raise ValueError(f"SinglePointMoves would break the constraint of "
                             f"{type(composition.estep).__name__}'s labels (it moves rows "
                             "by the k-means error alone); use refine=None or "
                             "refine=Breathing().")

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Each row's ranked candidates and their distances, its bound, its labels and a
        float64 distance."""
        n_cand = min(self.n_candidates, n_clusters)
        return n_samples * (n_cand * (4 + dtype.itemsize) + 8 + 4 + 8)

    def refine(self, X, sample_weight, run, iterate, state):
        n_clusters, n_samples = run.centers.shape[0], X.shape[0]
        if n_clusters < 2 or n_samples == 0:
            return run
        log = state.run.refinement_log
        first = len(log)
        ranking = _Ranking(X, run.centers, min(self.n_candidates, n_clusters), state)
        labels = ranking.candidates[:, 0].copy()
        start = labels.copy()
        given = _objective(X, sample_weight, labels, run.centers, state)
        part = _Partition(X, sample_weight, labels, run.centers.astype(np.float64))
        objective = _objective(X, sample_weight, labels, part.centers, state)
        n_moved, n_full, ranked = 0, 0, True
        for number in range(1, self.max_passes + 1):
            state.meter.progress("refinement", number - 1, self.max_passes, "passes")
            if number > 1:
                part = _Partition(X, sample_weight, labels, part.centers)
                ranked = n_full > n_samples // 16
                if ranked:
                    ranking = _Ranking(X, part.centers.astype(X.dtype), ranking.n_cand, state)
            drift = ranking.drift(part.centers)
            moved, n_full, n_evals, delta, _ = _moves.moves_pass(
                X, sample_weight, labels, part.centers, part.weight, part.n_members,
                ranking.candidates, ranking.far, ranking.centers, drift,
                float(drift.max(initial=0.0)))
            state.meter.count("refinement", n_evals)
            n_moved += moved
            log.append({"refiner": type(self).__name__, "pass": number, "rows_moved": moved,
                        "full_checks": n_full, "ranked": bool(ranked),
                        "objective_before": objective, "objective": objective + delta,
                        "kept": True, "seconds": state.meter.seconds,
                        "distance_evals": state.meter.n_distance_evals})
            objective += delta
            if moved == 0:
                break
        part = _Partition(X, sample_weight, labels, part.centers)
        centers = part.centers.astype(X.dtype)
        final = _objective(X, sample_weight, labels, centers, state)
        log[-1]["objective_recomputed"] = final
        if n_moved == 0 or not final < given:
            for entry in log[first:]:
                entry["kept"] = False
            return run
        run.replace_partition(centers, labels, final, {
            "batch_size": n_samples, "weight": float(part.weight.sum()),
            "n_changed": int(np.count_nonzero(labels != start)),
            "polish_passes": len(log) - first,
            "distance_evals": state.meter.n_distance_evals, "seconds": state.meter.seconds})
        return run


class _Ranking:
    """Every row's ``n_cand`` nearest centres of ``centers`` (in the data's dtype) and the
    bound on its distance to the others (:func:`~clusterkit._kernels._moves.far_bounds`);
    ``n_samples * n_clusters`` distances, counted under ``"refinement"``."""

    def __init__(self, X, centers, n_cand, state):
        n_threads = state.config.n_threads
        self.n_cand = n_cand
        self.candidates = np.empty((X.shape[0], n_cand), dtype=np.int32)
        dist2 = np.empty((X.shape[0], n_cand), dtype=X.dtype)
        with single_threaded_blas():  # (the kernel calls gemm inside its parallel loop)
            state.meter.count("refinement",
                              _topk.assign_topk(X, centers, self.candidates, dist2, n_threads))
        self.centers = centers.astype(np.float64)
        self.far = np.empty(X.shape[0])
        if n_cand < centers.shape[0]:
            max_sqnorm = float(np.einsum("ij,ij->i", self.centers, self.centers).max())
            _moves.far_bounds(X, np.ascontiguousarray(dist2[:, -1]), max_sqnorm, self.far,
                              n_threads)
        else:  # (no centre outside the candidates)
            self.far.fill(np.inf)

    def drift(self, centers):
        """How far each of ``centers`` (float64) is from where it was ranked."""
        shift = centers - self.centers
        return np.sqrt(np.einsum("ij,ij->i", shift, shift))


class _Partition:
    """The exact weighted means (float64), weights and positive-weight members of the
    clusters of ``labels``; a cluster without weight keeps its centre of ``centers``."""

    def __init__(self, X, sample_weight, labels, centers):
        n_clusters = centers.shape[0]
        sums = np.empty((n_clusters, X.shape[1]))
        self.weight = np.empty(n_clusters)
        self.n_members = np.empty(n_clusters, dtype=np.int32)
        _moves.partition_sums(X, sample_weight, labels, sums, self.weight, self.n_members)
        held = self.weight > 0
        self.centers = np.array(centers, dtype=np.float64)
        self.centers[held] = sums[held] / self.weight[held, None]


def _objective(X, sample_weight, labels, centers, state):
    """The weighted quantization error of the partition ``labels`` at ``centers``, in
    float64; ``n_samples`` distances, counted under ``"refinement"``."""
    dist2 = np.empty(X.shape[0])
    state.meter.count("refinement", _moves.labelled_dist2(
        X, labels, np.ascontiguousarray(centers, dtype=np.float64), dist2,
        state.config.n_threads))
    return weighted_sum(dist2, sample_weight)
