"""M-steps: re-estimate the centres (and the shared variance) from an assignment."""
import numbers

import numpy as np

from ._base import FREE_ENERGY, MStep, Objective
from ._estep import LaplacianEStep
from ._kernels import _mstep
from ._state import weighted_sum
from ._validation import check_int

__all__ = ["HardMStep", "SoftMStep", "ModeMStep", "SLK_ENERGY", "relocate_empty_clusters"]


def relocate_empty_clusters(centers_new, weight_in_clusters, X, sample_weight, assignment):
    """Move every cluster that received no weight onto a far-away sample.

    The one rule for empty clusters in clusterkit: the empty clusters, in index order, take the
    samples with the largest weighted squared distance ``w_n * dist2_n`` to their best centre,
    farthest first, each sample used once (as scikit-learn's ``KMeans`` does). Such samples are
    the worst explained, so this lowers the objective the most among single-sample moves. If
    there are more empty clusters than samples with positive weight, the rest keep their
    previous position (already in ``centers_new``). Centres are never NaN.

    Returns the number of relocated clusters.
    """
    empty = np.flatnonzero(weight_in_clusters <= 0)
    if empty.size == 0:
        return 0
    score = sample_weight.astype(np.float64) * assignment.dist2.astype(np.float64)
    n_far = min(empty.size, int(np.count_nonzero(sample_weight > 0)))
    far = _largest(score, n_far)
    centers_new[empty[:n_far]] = X[far]
    return n_far


# Up to this many of the largest scores, _largest picks them one argmax at a time: at 56,000
# scores one pass took 0.01-0.02 ms where np.partition took 0.5 ms, and partial E-steps can
# leave the same few clusters empty at every iteration.
_FEW = 8


def _largest(score, k):
    """Indices of the ``k`` largest scores, largest first, ties to the lower index.

    The same as ``np.argsort(-score, kind="stable")[:k]`` for finite scores, without sorting
    all ``N`` scores (empty clusters are few, the data are not).
    """
    if k <= _FEW:
        # a few passes of argmax (the first of equal maxima) cost far less than a partition
        score = score.copy()
        chosen = np.empty(k, dtype=np.intp)
        for i in range(k):
            chosen[i] = np.argmax(score)
            score[chosen[i]] = -np.inf
        return chosen
    kth = np.partition(score, score.size - k)[score.size - k]
    above = np.flatnonzero(score > kth)
    ties = np.flatnonzero(score == kth)[:k - above.size]
    chosen = np.concatenate([above, ties])
    return chosen[np.lexsort((chosen, -score[chosen]))]


def _check_rule(mstep, schedule):
    """``ValueError`` if the M-step does not implement the schedule's batch rule."""
    if schedule.center_update not in mstep._rules:
        raise ValueError(
            f"{type(mstep).__name__} implements center_update in {list(mstep._rules)}, but "
            f"{type(schedule).__name__} needs {schedule.center_update!r}.")


def _divide(centers_sum, weight_in_clusters, centers):
    """Means where a cluster has weight; the old centre elsewhere (relocated afterwards)."""
    has = weight_in_clusters > 0
    out = centers.copy()
    out[has] = centers_sum[has] / weight_in_clusters[has, None]
    return out


class _RunningSums:
    """A mini-batch hard M-step's state: float64 running sums per cluster, and, for the
    ``"latest"`` rule, each sample's squared distance at its last visit (to withdraw its
    vote)."""

    def __init__(self, n_samples, centers, latest):
        n_clusters, n_features = centers.shape
        self.sums = np.zeros((n_clusters, n_features))
        self.weight = np.zeros(n_clusters)
        self.sse = np.zeros(n_clusters)
        self.last_dist2 = np.zeros(n_samples) if latest else None
        # rows seen when each cluster was last (re)placed: a cluster that a whole pass over
        # the data has not voted for is starved
        self.placed_at = np.zeros(n_clusters, dtype=np.int64)

    def add(self, X, sample_weight, labels, dist2, sign, n_threads, sums=None, weight=None):
        """Add (``sign=1``) or withdraw (``sign=-1``) the votes of these samples."""
        if sums is None:
            sums = np.empty((self.sums.shape[0], X.shape[1]), dtype=X.dtype)
            weight = np.empty(self.sums.shape[0], dtype=X.dtype)
            sse = np.empty(self.sse.shape[0])
            _mstep.accumulate_statistics(X, sample_weight, labels[:, None], None, dist2, sums,
                                         weight, sse, n_threads)
        else:  # sums from the E-step's pass, which did not sum the squared distances
            w = sample_weight.astype(np.float64)
            sse = np.bincount(labels, w * dist2, minlength=self.sse.shape[0])
        self.sums += sign * sums.astype(np.float64)
        self.weight += sign * weight.astype(np.float64)
        self.sse += sign * sse


class _ImplicitStep:
    """The ``"backward_euler"`` rule's state within one outer step: the iterate it started
    from (``x^k``), the forward-looking average, the batch objective at ``x^k`` and whether
    the step diverged (float64)."""

    anchor = average = None
    reference = 0.0
    diverged = False


#: An inner iteration has diverged (the fixed-point map expands for too large a step) if its
#: mean batch objective, or the squared distance it moves a centre from ``x^k``, exceeds this
#: many times the mean batch objective at the outer step's start. (The backward Euler point
#: itself lies between ``x^k_j`` and the mean of the cluster's samples.)
DIVERGENCE_FACTOR = 1e3


class HardMStep(MStep):
    """Weighted means of the samples assigned to each cluster (Lloyd's M-step).

    ``mu_c = sum_{n in c} w_n x_n / sum_{n in c} w_n``; the weights are the user's
    ``sample_weight`` times any coreset weights (Hirschberger et al., eq. 9 with hard
    responsibilities). Reads ``assignment.labels``, or the sums an E-step computed in its own
    pass (``assignment.centers_sum``, ``assignment.weight_in_clusters``).

    Under a mini-batch schedule the same means are kept as running sums (the schedule's
    ``center_update``), from the same per-cluster batch statistics:

    * ``"replace"`` (full batches): the means of the batch;
    * ``"running"`` (:class:`~clusterkit.MiniBatch`, Sculley 2010): the means of every
      sample assigned so far, a sample counted at every visit (Sculley's per-centre learning
      rate ``1 / v(j)``);
    * ``"latest"`` (:class:`~clusterkit.NestedDoubling`, Newling & Fleuret 2016, §3.1): the
      means of the samples visited so far, each by its latest assignment only: a revisited
      sample first withdraws its previous vote (one sample, one vote);
    * ``"backward_euler"`` (:class:`~clusterkit.SBEDecay`, Yin et al. 2018): the implicit
      gradient step ``y = x^k - gamma g(y)`` of the k-means objective, with the batch's
      weighted gradient ``g_j(y) = (W_j y_j - S_j) / W`` (``S_j``, ``W_j`` the weighted sum
      and weight of the batch's samples in cluster ``j``, ``W`` the batch's weight; a weight
      of 2 counts as the sample twice), and the forward-looking average of the iterates,
      which ends the outer step. A centre without batch samples has ``g_j = 0`` and moves
      towards ``x^k_j``; nothing is relocated. With ``state.step_size = inf`` (polishing
      steps) it is the step's limit for a fixed assignment, the batch's means.

    Notes
    -----
    Cost ``O(N D)`` per batch, no distance evaluations; deterministic for any number of
    threads. A cluster without weight in a full batch is moved onto one of the samples with
    the largest weighted squared distance to their centre, farthest first, each sample used
    once (as in scikit-learn). Under a mini-batch rule a cluster keeps its centre until it
    gets a vote (the seed does not count as one, unlike the papers' ``v(j) = 1``, so that a
    full batch gives Lloyd's means exactly and only the ratios of the weights matter); a
    cluster that no sample voted for during a whole pass over the data since it was placed
    ("starved") is moved in the same way, onto the batch's worst-explained samples, so a
    mini-batch fit does not end with fewer clusters than the data support. The running sums
    are float64; the state writes ``state.cluster_weight`` and ``state.cluster_sse``.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, HardMStep
    >>> X = np.array([[0.0], [2.0], [10.0], [12.0]])
    >>> Clusterer(2, seed=X[[0, 2]], mstep=HardMStep()).fit(X).cluster_centers_
    array([[ 1.],
           [11.]])
    """

    #: The batch rules (:attr:`Schedule.center_update`) this M-step implements, each a
    #: function of the batch's statistics ``(centers_sum, weight)``.
    _rules = ("replace", "running", "latest", "backward_euler")

    def _validate(self, X, n_clusters, composition):
        """Refuses a schedule whose batch rule (``center_update``) is not implemented."""
        _check_rule(self, composition.schedule)

    def init_state(self, X, sample_weight, centers, state):
        """The running sums of a mini-batch rule (``None`` for full batches)."""
        if state.center_update == "replace":
            return None
        if state.center_update == "backward_euler":
            return _ImplicitStep()
        return _RunningSums(X.shape[0], centers, latest=state.center_update == "latest")

    def update(self, X, sample_weight, assignment, centers, state):
        if state.center_update == "latest":  # sums of the samples whose vote moved only
            return self._running_update(X, sample_weight, assignment, centers, None, None,
                                        state)
        # the batch's per-cluster weighted sums and weights (one kernel for every rule)
        centers_sum, weight = assignment.centers_sum, assignment.weight_in_clusters
        if centers_sum is None:  # the E-step did not sum the clusters in its pass
            centers_sum = np.empty_like(centers)
            weight = np.empty(centers.shape[0], dtype=X.dtype)
            _mstep.accumulate_statistics(X, sample_weight, assignment.labels[:, None], None, None,
                                         centers_sum, weight, None, state.n_threads)
        if state.center_update == "replace":
            centers_new = _divide(centers_sum, weight, centers)
            relocate_empty_clusters(centers_new, weight, X, sample_weight, assignment)
            return centers_new
        if state.center_update == "backward_euler":
            return self._implicit_update(sample_weight, assignment, centers, centers_sum,
                                         weight, state)
        return self._running_update(X, sample_weight, assignment, centers, centers_sum,
                                    weight, state)

    def _implicit_update(self, sample_weight, assignment, centers, centers_sum, weight, state):
        """One inner iteration of stochastic backward Euler (see the class notes)."""
        step = state.mstep_state
        if not isinstance(step, _ImplicitStep):  # called without init_state
            step = state.mstep_state = _ImplicitStep()
        if state.step_size == np.inf:  # the step's limit for a fixed assignment: Lloyd's means
            return _divide(centers_sum, weight, centers)
        total = float(sample_weight.sum(dtype=np.float64))
        level = assignment.qe / total  # the mean batch objective at the current iterate
        if state.inner_step == 0:  # the outer step starts at x^k = y = z
            step.anchor = centers.astype(np.float64)
            step.average = step.anchor.copy()
            step.reference = max(level, state.qe_resolution / total)
            step.diverged = False
        limit = DIVERGENCE_FACTOR * step.reference
        if not step.diverged and level <= limit:
            gradient = (weight.astype(np.float64)[:, None] * centers
                        - centers_sum.astype(np.float64)) / total
            y = step.anchor - state.step_size * gradient
            if np.einsum("ij,ij->i", y - step.anchor, y - step.anchor).max() <= limit:
                step.average *= state.averaging
                step.average += (1 - state.averaging) * y
                last = state.inner_step == state.n_inner_steps - 1
                centers_new = (step.average if last else y).astype(centers.dtype)
                if np.all(np.isfinite(centers_new)):
                    return centers_new
        # diverged: abandon the outer step, back to x^k (the schedule retries with a
        # smaller step)
        step.diverged = True
        state.step_info["diverged"] = True
        return step.anchor.astype(centers.dtype)

    def _running_update(self, X, sample_weight, assignment, centers, centers_sum, weight,
                        state):
        sums = state.mstep_state
        if sums is None:  # called without init_state
            sums = state.mstep_state = self.init_state(X, sample_weight, centers, state)
        dist2 = assignment.dist2.astype(np.float64)
        labels = assignment.labels
        if sums.last_dist2 is None:  # "running": every visit votes
            sums.add(X, sample_weight, labels, dist2, 1, state.n_threads, centers_sum, weight)
        else:  # "latest": a revisited sample's vote moves only if its label changed
            rows = np.arange(state.n_samples)[state.rows]
            previous = state.labels[rows]
            moved = previous != labels  # first visits included (previous = -1)
            withdrawn = moved & (previous >= 0)
            if withdrawn.any():
                sums.add(np.ascontiguousarray(X[withdrawn]), sample_weight[withdrawn],
                         previous[withdrawn], sums.last_dist2[rows[withdrawn]], -1,
                         state.n_threads)
            if moved.any():
                sums.add(np.ascontiguousarray(X[moved]), sample_weight[moved], labels[moved],
                         dist2[moved], 1, state.n_threads)
            kept = ~moved
            sums.sse += np.bincount(labels[kept], sample_weight[kept].astype(np.float64) * (
                dist2[kept] - sums.last_dist2[rows[kept]]), minlength=sums.sse.shape[0])
            sums.last_dist2[rows] = dist2
        # rounding of the withdrawals can leave a tiny non-zero weight: count it as none
        voted = sums.weight > 1e-12 * max(float(sums.weight.max()), 1.0)
        centers_new = centers.copy()
        centers_new[voted] = (sums.sums[voted] / sums.weight[voted, None]).astype(X.dtype)
        seen_rows = state.n_samples_seen + X.shape[0]
        starved = ~voted & (seen_rows - sums.placed_at >= state.n_samples)
        if starved.any():
            starved_weight = np.where(starved, 0.0, 1.0)
            moved = relocate_empty_clusters(centers_new, starved_weight, X, sample_weight,
                                            assignment)
            if moved:
                sums.placed_at[np.flatnonzero(starved)[:moved]] = seen_rows
        state.cluster_weight, state.cluster_sse = sums.weight, sums.sse
        return centers_new


class SoftMStep(MStep):
    """Means and one shared variance of an isotropic, equal-weight GMM.

    Implements the weighted M-step of Hirschberger, Forster & Lücke (eq. 9; Forster & Lücke
    2018, eq. 4, is the unweighted case) for full or truncated responsibilities::

        U_c   = sum_n w_n r_nc
        mu_c  = sum_n w_n r_nc x_n / U_c
        s2    = sum_n w_n sum_{c in K(n)} r_nc ||x_n - mu_c||^2 / (D sum_n w_n)

    with the NEW means in ``s2``. Reads ``assignment.winners``/``assignment.resp`` and writes
    ``state.sigma2`` (it owns the variance). Declares ``needs_resp = True`` and the objective
    :data:`~clusterkit.FREE_ENERGY` (maximised). The first variance comes from the first
    E-step (vc-GMM eq. 12).

    Notes
    -----
    Cost ``O(N C' D)`` for ``C'`` winners per sample (``O(N C D)`` for full responsibilities),
    no distance evaluations. The variance is clamped at ``state.sigma2_floor``
    (``1e-12`` times the data variance per dimension, at least the dtype's smallest normal
    number) so that duplicated points, constant data or
    ``C`` close to ``N`` never give a zero variance. With full responsibilities the sums are
    accumulated in float64 over chunks of rows and the variance is expanded around the
    centres as stored (exact up to float64 rounding), because the shorter identity
    ``sum_n w_n ||x_n||^2 - sum_c U_c ||mu_c||^2`` cancels catastrophically in float32 when
    the clusters are far apart relative to their spread. Clusters without weight are
    relocated as by :class:`HardMStep`.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, SoftMStep
    >>> X = np.array([[0.0], [2.0], [10.0], [12.0]])
    >>> gmm = Clusterer(2, seed=X[[0, 2]], mstep=SoftMStep(), random_state=0).fit(X)
    >>> np.round(gmm.cluster_centers_, 3)
    array([[ 1.],
           [11.]])
    >>> round(gmm.sigma2_, 3)
    1.0
    """

    needs_resp = True
    objective = FREE_ENERGY
    _rules = ("replace",)

    def _validate(self, X, n_clusters, composition):
        """Refuses a schedule whose batch rule (``center_update``) is not implemented."""
        _check_rule(self, composition.schedule)

    def update(self, X, sample_weight, assignment, centers, state):
        n_clusters, n_features = centers.shape
        total_weight = float(sample_weight.sum(dtype=np.float64))
        if assignment.winners is None:  # dense responsibilities over all clusters
            centers_new, weight, sse = _dense_soft_update(X, sample_weight, assignment.resp,
                                                          centers)
        else:
            centers_sum = np.empty_like(centers)
            weight = np.empty(n_clusters, dtype=X.dtype)
            _mstep.accumulate_statistics(X, sample_weight, assignment.winners, assignment.resp,
                                         None, centers_sum, weight, None, state.n_threads)
            centers_new = _divide(centers_sum, weight, centers)
            per_sample = np.empty(X.shape[0], dtype=X.dtype)
            _mstep.soft_sse(X, assignment.winners, assignment.resp, centers_new, per_sample,
                            state.n_threads)
            sse = weighted_sum(per_sample, sample_weight)
        relocate_empty_clusters(centers_new, weight, X, sample_weight, assignment)
        state.sigma2 = max(float(sse) / (n_features * total_weight), state.sigma2_floor)
        return centers_new


# Rows per chunk of the dense soft M-step: as many as fill _DENSE_CHUNK_BYTES of float64
# responsibilities (about an L2 cache, so the gemm reads the copy back from cache and no
# N x C float64 array is made), at least _DENSE_MIN_ROWS (no tiny gemms for many clusters) and
# at most _DENSE_MAX_ROWS (each gemm sums its rows sequentially and the variance amplifies
# that rounding by ||x||^2 / sigma^2: at 3e7, 4096 rows gave errors near 1e-8, 65536 5e-6).
_DENSE_CHUNK_BYTES = 1 << 20
_DENSE_MIN_ROWS = 256
_DENSE_MAX_ROWS = 4096


def _dense_soft_update(X, sample_weight, resp, centers):
    """New centres, cluster weights and weighted SSE for full responsibilities.

    Accumulates, in float64 and over chunks of rows, ``U_c = sum_n w_n r_nc``,
    ``m_c = sum_n w_n r_nc x_n`` and ``S2 = sum_n w_n (sum_c r_nc) ||x_n||^2`` (the actual row
    sums of the stored responsibilities, which need not be exactly one), all three from one
    gemm ``r.T @ [w x, w, w ||x||^2]`` per chunk. The centres ``m_c / U_c`` are cast to the
    data dtype, and the SSE ``sum_n w_n sum_c r_nc ||x_n - mu_c||^2`` is expanded around the
    centres as stored, ``S2 - 2 sum_c mu_c . m_c + sum_c U_c ||mu_c||^2``: exact for the
    stored responsibilities and centres up to float64 rounding.
    """
    n_samples, n_features = X.shape
    n_clusters = resp.shape[1]
    chunk = min(_DENSE_MAX_ROWS, max(_DENSE_MIN_ROWS, _DENSE_CHUNK_BYTES // (8 * n_clusters)))
    chunk = min(chunk, n_samples)
    # columns: w_n x_n (n_features), w_n, w_n ||x_n||^2
    stats = np.zeros((n_clusters, n_features + 2), dtype=np.float64)
    rhs = np.empty((chunk, n_features + 2), dtype=np.float64)
    resp64 = None if resp.dtype == np.float64 else np.empty((chunk, n_clusters), np.float64)
    for start in range(0, n_samples, chunk):
        rows = slice(start, start + chunk)
        n_rows = min(chunk, n_samples - start)
        x = X[rows].astype(np.float64, copy=False)
        a = rhs[:n_rows]
        np.multiply(x, sample_weight[rows, None], out=a[:, :n_features])
        a[:, n_features] = sample_weight[rows]
        np.einsum("ij,ij->i", a[:, :n_features], x, out=a[:, n_features + 1])
        if resp64 is None:
            r = resp[rows]
        else:
            r = resp64[:n_rows]
            np.copyto(r, resp[rows])
        stats += r.T @ a
    centers_sum, weight = stats[:, :n_features], stats[:, n_features]
    sq = float(stats[:, n_features + 1].sum())  # S2
    centers_new = _divide(centers_sum, weight, centers.astype(np.float64)).astype(X.dtype)
    mu = centers_new.astype(np.float64)
    sse = (sq - 2.0 * float(np.einsum("ij,ij->", mu, centers_sum))
           + float(weight @ np.einsum("ij,ij->i", mu, mu)))
    return centers_new, np.ascontiguousarray(weight), sse


#: The discrete Laplacian K-modes energy (Ziko et al. 2018, eq. 1), minimised.
SLK_ENERGY = Objective("Laplacian K-modes energy", maximize=False)


#: Members of a cluster that the first SLK-BO modes are chosen among and estimated from.
MODE_SAMPLE = 2000


def _kernel_modes(X, labels, n_clusters, sigma2, random_state):
    """Each cluster's discrete kernel mode, ``argmax_p sum_q k(x_p, x_q)`` over its members
    (the mode definition of eq. 1 for hard clusters), estimated on at most
    :data:`MODE_SAMPLE` members drawn at random; a cluster without members gets a random
    row."""
    rows = np.empty(n_clusters, dtype=np.intp)
    for cluster in range(n_clusters):
        members = np.flatnonzero(labels == cluster)
        if members.size == 0:
            rows[cluster] = random_state.randint(X.shape[0])
            continue
        if members.size > MODE_SAMPLE:
            members = np.sort(random_state.choice(members, MODE_SAMPLE, replace=False))
        Xc = X[members].astype(np.float64)
        sqnorm = np.einsum("ij,ij->i", Xc, Xc)
        dist2 = np.maximum(sqnorm[:, None] - 2 * Xc @ Xc.T + sqnorm, 0)
        density = np.exp(dist2 / (-2 * sigma2)).sum(axis=1)
        rows[cluster] = members[density.argmax()]
    return rows


class _Modes:
    """:class:`ModeMStep`'s state: the training rows that are the modes (SLK-BO)."""

    rows = None


class ModeMStep(MStep):
    """The modes of Scalable Laplacian K-modes (Ziko, Granger & Ben Ayed 2018).

    Reads the soft assignments ``z`` of :class:`~clusterkit.LaplacianEStep` and the kernel
    bandwidth ``state.sigma2`` it set.

    * ``method="bo"`` (SLK-BO, eq. 11): ``m_l = x_p`` with ``p = argmax_q z_ql``: modes are
      training samples, found in ``O(N L)``. The first modes are the clusters' discrete
      kernel modes instead (§4.2: "the starting mode ... from the initial assignments by
      following the mode definition"), ``argmax_p sum_q k(x_p, x_q)`` over the members of
      each cluster of the nearest-seed labels that :class:`~clusterkit.LaplacianEStep`
      gives first, estimated on at most :data:`MODE_SAMPLE` random members
      (``O(MODE_SAMPLE^2 D)`` per cluster), as the authors' code.
    * ``method="ms"`` (SLK-MS, eq. 9): for each cluster, mean-shift from the current mode over
      the samples labelled ``l`` (hard members, as the authors' code; weighted by the sample
      weights), ``m <- sum_p v_p x_p / sum_p v_p`` with ``v_p = w_p exp(-||m - x_p||^2 / (2
      sigma^2))``, until the largest coordinate change is at most ``ms_tol`` times the
      largest coordinate of ``m``, or ``ms_max_iter`` iterations.

    The fit's objective is the discrete energy of eq. 1 (:data:`SLK_ENERGY`, minimised). A
    cluster without members keeps its mode. No distance evaluations are counted for the
    mean-shift's kernel sums (``O(iterations n_l D)`` per cluster).

    Parameters
    ----------
    method : {"bo", "ms"}, default="bo"
    ms_tol : float, default=1e-5
    ms_max_iter : int, default=1000

    Examples
    --------
    >>> from clusterkit import ModeMStep
    >>> ModeMStep("ms")
    ModeMStep(method='ms', ms_tol=1e-05, ms_max_iter=1000)
    """

    needs_resp = True
    objective = SLK_ENERGY
    _rules = ("replace",)

    def __init__(self, method="bo", ms_tol=1e-5, ms_max_iter=1000):
        self.method = method
        self.ms_tol = ms_tol
        self.ms_max_iter = ms_max_iter

    def _validate(self, X, n_clusters, composition):
        """A known method, positive mean-shift settings, a Laplacian E-step."""
        if self.method not in ("bo", "ms"):
            raise ValueError(f"Unknown method={self.method!r}; expected 'bo' or 'ms'.")
        if not (isinstance(self.ms_tol, numbers.Real) and self.ms_tol > 0):
            raise ValueError(f"ms_tol={self.ms_tol!r} must be a number > 0.")
        check_int(self.ms_max_iter, "ms_max_iter", minimum=1)
        _check_rule(self, composition.schedule)
        if not isinstance(composition.estep, LaplacianEStep):
            raise ValueError("ModeMStep needs the soft assignments and bandwidth of a "
                             f"LaplacianEStep, not {type(composition.estep).__name__}.")

    def init_state(self, X, sample_weight, centers, state):
        return _Modes()

    def update(self, X, sample_weight, assignment, centers, state):
        if self.method == "bo":
            modes = state.mstep_state
            if not isinstance(modes, _Modes):  # called without init_state
                modes = state.mstep_state = _Modes()
            if modes.rows is None:  # the first modes: those of the clusters (§4.2)
                modes.rows = _kernel_modes(X, assignment.labels, centers.shape[0],
                                           state.sigma2, state.random_state)
            else:
                modes.rows = assignment.resp.argmax(axis=0)  # eq. 11
            return np.ascontiguousarray(X[modes.rows])
        centers_new = centers.copy()
        for cluster in range(centers.shape[0]):
            members = np.flatnonzero(assignment.labels == cluster)
            if members.size:
                centers_new[cluster] = self._mean_shift(X[members], sample_weight[members],
                                                        centers[cluster], state.sigma2)
        return centers_new

    def _mean_shift(self, X, sample_weight, mode, sigma2):
        """Gaussian mean-shift of one mode over its cluster's members (eq. 9)."""
        mode = mode.astype(np.float64)
        for _ in range(int(self.ms_max_iter)):
            diff = X - mode
            v = sample_weight * np.exp(np.einsum("ij,ij->i", diff, diff) / (-2 * sigma2))
            if not v.sum() > 0:  # every member beyond the kernel's reach: keep the mode
                break
            new = (v @ X) / v.sum()
            done = np.abs(new - mode).max() <= self.ms_tol * np.abs(mode).max()
            mode = new
            if done:
                break
        return mode.astype(X.dtype)

    def fitted_attributes(self, state):
        """``modes_``: indices of the training rows that are the modes (SLK-BO only)."""
        if self.method != "bo" or not isinstance(state.mstep_state, _Modes):
            return {}
        rows = state.mstep_state.rows
        if state.order is not None:
            rows = state.order[rows]
        return {"modes_": np.asarray(rows, dtype=np.intp)}
