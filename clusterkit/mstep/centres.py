"""M-steps of k-means and the isotropic Gaussian mixture: re-estimate the centres (and the
shared variance) from an assignment."""

import numpy as np

from .._data import blocks
from .._engine.assignment import FREE_ENERGY
from .._engine.contracts import MStep
from .._kernels import _mstep
from .batch_rules import HARD_RULES, all_rows, batch_sums, divide, relocate_empty

__all__ = ["HardMStep", "SoftMStep", "SphericalMStep"]



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
    * ``"adaptive"`` (:class:`~clusterkit.MiniBatch` with ``learning_rate="adaptive"``,
      Schwartzman 2023): each centre moves from where it is towards the mean ``m_j`` of its
      batch samples, ``c_j <- (1 - a_j) c_j + a_j m_j``, by the learning rate ``a_j =
      sqrt(W_j / W)`` (``W_j`` the batch weight of cluster ``j``, ``W`` the batch's), which
      does not decay with the number of visits;
    * ``"latest"`` (:class:`~clusterkit.NestedDoubling`, Newling & Fleuret 2016, §3.1): the
      means of the samples visited so far, each by its latest assignment only: a revisited
      sample first withdraws its previous vote (one sample, one vote);
    * ``"backward_euler"`` (:class:`~clusterkit.SBEDecay`, Yin et al. 2018): the implicit
      gradient step ``y = x^k - gamma g(y)`` of the k-means objective, with the batch's
      weighted gradient ``g_j(y) = (W_j y_j - S_j) / W`` (``S_j``, ``W_j`` the weighted sum
      and weight of the batch's samples in cluster ``j``, ``W`` the batch's weight; a weight
      of 2 counts as the sample twice), and the forward-looking average of the iterates,
      which ends the outer step. A centre without batch samples has ``g_j = 0`` and moves
      towards ``x^k_j``; nothing is relocated, and a batch without weight moves nothing.
      With the step size ``state.run.channel.step_size = inf`` (polishing steps) it is the
      step's limit for a fixed assignment, the batch's means.

    Notes
    -----
    Cost ``O(N D)`` per batch (``O(nnz + C D)`` for sparse data, whose sums are dense), no
    distance evaluations; deterministic for any number of threads. A cluster without weight in
    a full batch is moved onto one of the samples with the largest weighted squared distance to
    their centre, farthest first, each sample used once (as in scikit-learn; a distance within
    its rounding counts as 0, so that noise never decides, see
    :func:`~clusterkit.mstep.batch_rules.far_scores`). Under a
    mini-batch rule a cluster keeps its centre until it gets a vote (the seed does not count as
    one, unlike the papers' ``v(j) = 1``, so that a full batch gives Lloyd's means exactly and
    only the ratios of the weights matter). A *starved* cluster is moved onto a sample of the
    current batch drawn with probability proportional to its weighted squared distance to its
    centre (D^2 sampling, as k-means++ seeds), so that a mini-batch fit does not end with fewer
    useful clusters than the data support: a cluster that, during a whole window of rows,
    collected at most a ratio of an average cluster's share of their weight (the window and
    ratio are the schedule's, see :class:`~clusterkit.MiniBatch`'s ``reassignment_ratio``;
    without them, a pass over the data and no vote at all). A moved cluster starts afresh,
    without votes. The running sums are float64; they are published in ``state.run.channel``
    (``cluster_weight``, ``cluster_sse``) for the schedule.

    State (``state.run.mstep_state``): the rule object :meth:`init_state` chose for the schedule's
    ``center_update`` (running sums, or the implicit step's anchor and average).

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, HardMStep
    >>> X = np.array([[0.0], [2.0], [10.0], [12.0]])
    >>> Clusterer(2, seed=X[[0, 2]], mstep=HardMStep()).fit(X).cluster_centers_
    array([[ 1.],
           [11.]])
    """

    update_rules = tuple(HARD_RULES)
    fixed_point_rules = ("replace", "latest")
    chunk_rules = ("replace", "latest")
    accepts_sparse = True

    def reads_batch_sums(self, center_update):
        """Whether the rule for ``center_update`` sums the batch's votes per cluster (see
        :meth:`MStep.reads_batch_sums`)."""
        return HARD_RULES[center_update].reads_batch_sums

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Under the nested schedule's rule ``"latest"``: each sample's last squared
        distance, kept (float64, ``8 N``), and in a step over up to ``N`` rows their float64
        distances and row numbers (``16 N``), previous labels (``4 N``) and the larger of
        the unmoved rows' terms (indices, float64 weights, differences and products,
        ``32 N``) and the moved rows' copies with their counting-sort order (``N (D itemsize
        + 16)``). Other rules: the counting sort's order over at most ``N`` rows, ``8 N``."""
        if composition.schedule.center_update == "latest":
            moved = n_features * dtype.itemsize + 16
            return n_samples * (8 + 16 + 4 + max(32, moved))
        return 8 * n_samples

    def init_state(self, X, sample_weight, centers, state):
        """The rule object for the schedule's ``center_update``, chosen once per run."""
        return HARD_RULES[state.config.center_update](X.shape[0], centers)

    def update(self, X, sample_weight, assignment, centers, state):
        """The batch's means (full batches: :meth:`statistics` then
        :meth:`update_statistics`), or the running rule's centres."""
        rule = state.run.mstep_state
        if rule is None:  # called without init_state
            rule = state.run.mstep_state = self.init_state(X, sample_weight, centers, state)
        if state.config.center_update == "replace":
            return super().update(X, sample_weight, assignment, centers, state)
        return rule.update(X, sample_weight, assignment, centers, state)

    def statistics(self, X, sample_weight, assignment, centers, state):
        """A batch's or chunk's per-cluster weighted sums and weights: those its E-step
        summed in its pass, else one accumulation (see :meth:`MStep.statistics`); under the
        rule ``"latest"`` (the chunk's visited rows, each by its latest label) also the
        weighted squared distances per cluster, which the schedule's rule reads."""
        centers_sum, weight = batch_sums(X, sample_weight, assignment, centers, state)
        statistics = {"centers_sum": centers_sum, "weight": weight}
        if state.config.center_update == "latest":
            statistics["sse"] = np.bincount(
                assignment.labels, sample_weight.astype(np.float64)
                * assignment.dist2.astype(np.float64), minlength=centers.shape[0])
        return statistics

    def update_statistics(self, statistics, centers, far_rows, state):
        """The weighted means of the combined sums, empty clusters relocated by the rule of
        a full batch (see :meth:`MStep.update_statistics`). Under ``"latest"`` the sums are
        those of the visited rows (``state.run.rows``, a prefix), as the running sums in memory,
        published in ``state.run.channel`` (``cluster_weight``, ``cluster_sse``); an empty
        cluster keeps its centre until the prefix is all rows, as in memory."""
        weight = statistics["weight"]
        centers_new = divide(statistics["centers_sum"], weight, centers)
        if state.config.center_update != "latest" or all_rows(state):
            relocate_empty(centers_new, weight.copy(), far_rows, state, withdraw=True)
        else:
            state.run.n_relocated = 0
        if state.config.center_update == "latest":
            state.run.channel.cluster_weight, state.run.channel.cluster_sse = (weight,
                                                                               statistics["sse"])
        return centers_new


#: A cluster's weighted sum of unit rows whose norm is at most this many machine epsilons
#: times the cluster's weight has no direction above rounding noise: the spherical M-step
#: treats the cluster as empty (summing ``W`` of weight in unit vectors rounds by about
#: ``eps W``).
_NO_DIRECTION = 8


def _directions(vectors, scale, dtype):
    """``vectors / ||vectors||`` row by row in float64, cast to ``dtype``, and which rows have
    a direction (norm above :data:`_NO_DIRECTION` epsilons of ``dtype`` times ``scale``).

    Each row is divided by its ``scale`` (a cluster's weight) before its norm is taken: the
    mean of unit rows has norm at most 1, whereas the squared norm of a weighted sum
    overflows for weights of about 1e154 (and the direction does not depend on the scale, so
    weights scaled by a power of two give the same centres bit for bit)."""
    vectors = vectors.astype(np.float64, copy=False)
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), vectors.shape[:1])
    positive = scale > 0
    means = np.zeros(vectors.shape)
    means[positive] = vectors[positive] / scale[positive, None]
    norms = np.sqrt(np.einsum("ij,ij->i", means, means))
    has = norms > _NO_DIRECTION * float(np.finfo(dtype).eps)
    out = np.zeros(vectors.shape, dtype=dtype)
    out[has] = means[has] / norms[has, None]
    return out, has


class SphericalMStep(HardMStep):
    """Unit-norm centres: the normalised weighted sums of each cluster (spherical k-means).

    ``mu_c = S_c / ||S_c||`` with ``S_c = sum_{n in c} w_n x_n`` (Dhillon & Modha 2001,
    the concept vectors), for rows ``x_n`` of unit norm. Spherical k-means maximises the
    weighted cosine similarity ``sum_n w_n x_n . mu_{c(n)}``; for unit rows and unit centres
    ``||x - mu||^2 = 2 - 2 x . mu``, so

    * the nearest centre by Euclidean distance is the most similar by cosine, and every
      E-step finds it unchanged (:class:`~clusterkit.FullEStep`,
      :class:`~clusterkit.ElkanEStep`, whose triangle-inequality bounds hold for any
      metric distances, :class:`~clusterkit.TruncatedEStep`,
      :class:`~clusterkit.PartialEStep`), as do the seeders (their centres are rows of the
      data, so of unit norm) and :class:`~clusterkit.LWCS` coresets (weighted unit rows);
    * the quantization error it declares as its objective (:data:`~clusterkit.QUANTIZATION_ERROR`)
      is twice the cosine dissimilarity ``sum_n w_n (1 - cos(x_n, mu_{c(n)}))``: minimising one
      minimises the other, and with an exact E-step neither increases from one iteration to
      the next (the E-step picks each row's most similar centre; for fixed labels
      ``S_c / ||S_c||`` is the unit vector most similar to the cluster's rows).

    The model lives on the unit sphere (:attr:`spherical` is ``True``): the estimator scales
    every row to unit norm, refuses rows of zero norm and does not centre the data, so this
    M-step sees unit rows in the frame of the origin. ``inertia_``, ``objective_`` and
    ``score`` are the (minus, for ``score``) squared Euclidean errors of the unit rows,
    ``2 sum_n w_n (1 - cos)``, and ``transform`` gives ``sqrt(2 - 2 cos)``.

    Under a mini-batch schedule the centres are the normalised running sums of
    :class:`HardMStep`'s rules ``"running"`` (:class:`~clusterkit.MiniBatch`), ``"adaptive"``
    and ``"latest"`` (:class:`~clusterkit.NestedDoubling`): a running mean of unit rows points
    where their sum does, so its direction is the spherical centre of the rows it holds (for
    ``"adaptive"``, the step towards the batch's mean is projected back onto the sphere). The
    implicit gradient step of ``"backward_euler"`` (:class:`~clusterkit.SBEDecay`) is a step
    of the Euclidean objective off the sphere and is not offered.

    Notes
    -----
    Cost ``O(N D)`` per batch plus ``O(C D)`` for the normalisation, no distance evaluations;
    deterministic for any number of threads. A cluster without weight, or whose weighted sum
    has no direction (norm at most 8 machine epsilons times its weight, e.g. two opposite
    rows; any unit centre then explains it equally well), is relocated by the rule of
    :class:`HardMStep` (onto the rows with the largest weighted squared distance), so centres
    are never NaN. Under a mini-batch rule such a cluster keeps its previous centre until its
    running sum has a direction, and starved clusters are relocated as by :class:`HardMStep`.
    Initial centres must have unit norm (the built-in seeders return rows of the data; given
    centres are scaled by the estimator): :meth:`init_state` refuses others with a
    ``ValueError``.

    References
    ----------
    Dhillon, I. S. and Modha, D. S. (2001). Concept decompositions for large sparse text data
    using clustering. Machine Learning 42, 143-175.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, SphericalMStep
    >>> X = np.array([[1.0, 0.1], [2.0, -0.2], [0.1, 3.0], [-0.1, 1.0]])
    >>> km = Clusterer(2, seed=X[[0, 2]], mstep=SphericalMStep()).fit(X)
    >>> km.labels_
    array([0, 0, 1, 1], dtype=int32)
    >>> np.round(np.linalg.norm(km.cluster_centers_, axis=1), 6)
    array([1., 1.])
    """

    spherical = True
    update_rules = ("replace", "running", "adaptive", "latest")
    fixed_point_rules = ("replace", "latest")
    chunk_rules = ("replace",)

    def init_state(self, X, sample_weight, centers, state):
        """The rule object of :class:`HardMStep`, after checking that the initial centres have
        unit norm."""
        norms = np.sqrt(np.einsum("ij,ij->i", centers.astype(np.float64),
                                  centers.astype(np.float64)))
        slack = 1e-3 if centers.dtype == np.float32 else 1e-8
        bad = np.flatnonzero(np.abs(norms - 1.0) > slack)
        if bad.size:
            raise ValueError(f"SphericalMStep needs initial centres of unit norm; centre "
                             f"{bad[0]} has norm {norms[bad[0]]:.6g}. Seed with rows of the "
                             "data (every built-in seeder does) or give initial centres, "
                             "which the estimator scales to unit norm.")
        return super().init_state(X, sample_weight, centers, state)

    def update_statistics(self, statistics, centers, far_rows, state):
        """The normalised sums, clusters without a direction relocated (see
        :meth:`MStep.update_statistics`)."""
        weight = statistics["weight"]
        centers_new, has = _directions(statistics["centers_sum"], weight, centers.dtype)
        centers_new[~has] = centers[~has]  # (relocated next, or kept if nowhere to go)
        relocate_empty(centers_new, np.where(has, weight, 0), far_rows, state)
        return centers_new

    def update(self, X, sample_weight, assignment, centers, state):
        """The normalised sums of the batch (full batches), or the running rule's means
        projected onto the sphere."""
        rule = state.run.mstep_state
        if rule is None:  # called without init_state
            rule = state.run.mstep_state = self.init_state(X, sample_weight, centers, state)
        if state.config.center_update == "replace":
            return MStep.update(self, X, sample_weight, assignment, centers, state)
        # running rules: HardMStep's running means (starved clusters already moved onto unit
        # rows), projected onto the sphere; the running mean of unit rows has norm <= 1
        centers_new = rule.update(X, sample_weight, assignment, centers, state)
        moved = np.flatnonzero(np.any(centers_new != centers, axis=1))
        directions, has = _directions(centers_new[moved], 1.0, X.dtype)
        centers_new[moved[has]] = directions[has]
        centers_new[moved[~has]] = centers[moved[~has]]
        return centers_new


class SoftMStep(MStep):
    """Means and one shared variance of an isotropic, equal-weight GMM.

    Implements the weighted M-step of Hirschberger, Forster & Lücke (eq. 9; Forster & Lücke
    2018, eq. 4, is the unweighted case) for full or truncated responsibilities::

        U_c   = sum_n w_n r_nc
        mu_c  = sum_n w_n r_nc x_n / U_c
        s2    = sum_n w_n sum_{c in K(n)} r_nc ||x_n - mu_c||^2 / (D sum_n w_n)

    with the NEW means in ``s2``. Reads ``assignment.winners``/``assignment.resp`` and writes
    ``state.run.sigma2`` (it owns the variance). Declares ``needs_resp = True`` and the objective
    :data:`~clusterkit.FREE_ENERGY` (maximised). The first variance comes from the first
    E-step (vc-GMM eq. 12).

    Notes
    -----
    Cost ``O(N C' D)`` for ``C'`` winners per sample (``O(N C D)`` for full responsibilities),
    no distance evaluations. The variance is clamped at ``state.config.sigma2_floor``, ``eps B / D``
    with ``eps = 2.2e-16`` (float64's machine epsilon, whatever the data's dtype) and ``B``
    the squared diagonal of the bounding box of all the given rows (zero weights included;
    at least the dtype's smallest normal number): duplicated points, constant data or ``C``
    close to ``N`` never give a zero variance, and the floor is relative to the data's
    scale, so that it means the same for data scaled by 1e-30 or 1e150. At the floor every
    training sample has ``d2 / (2 sigma2) <= D / (2 eps)``: ``score`` and
    ``score_samples`` stay finite (scikit-learn's ``GaussianMixture`` adds an absolute
    ``reg_covar=1e-6`` instead, which would swamp small-scale data). With full or
    truncated responsibilities the sums ``U_c``, ``m_c`` and ``S2_c = sum_n w_n r_nc
    ||x_n||^2`` are accumulated in float64 (float32 rows copied to float64 a chunk of rows
    at a time) and the variance is expanded around the centres as stored,
    ``sum_c (S2_c - 2 mu_c . m_c + U_c ||mu_c||^2)`` (exact up to float64 rounding),
    because the shorter identity ``sum_n w_n ||x_n||^2 - sum_c U_c ||mu_c||^2`` cancels
    catastrophically in float32 when the clusters are far apart relative to their spread.
    :meth:`update` is :meth:`statistics` then :meth:`update_statistics`, as on data in row
    chunks, so a fit on data in one row chunk is the fit in memory bit for bit. Clusters without
    weight are relocated as by :class:`HardMStep`.

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
    chunk_rules = ("replace",)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The float64 scratch of its statistics, a chunk of rows at a time. Full
        responsibilities: ``r = min(N, 4096, max(256, 2^20 / (8 C)))`` rows of the
        right-hand side, ``8 r (D + 2)``, and for float32 data the rows' and the
        responsibilities' float64 copies, ``8 r (D + C)``. Truncated ones over ``C'``
        clusters per sample (:meth:`~clusterkit.EStep.winners_per_sample`): for float32
        data rows copied to float64 with their weights, norms and responsibilities, ``8 r
        (D + 3 + C')`` for ``r = min(N, max(C, 4 MiB / (8 (D + 2 + C'))))`` rows; for
        float64 data only the norms, ``8 N``."""
        n_winners = composition.estep.winners_per_sample(n_clusters, composition)
        if n_winners is not None:
            if dtype == np.float64:
                return 8 * n_samples
            rows = min(n_samples, _truncated_rows(n_features, n_clusters, n_winners))
            return 8 * rows * (n_features + 3 + n_winners)
        rows = min(n_samples, _dense_rows(n_clusters))
        copies = 0 if dtype == np.float64 else n_features + n_clusters
        return 8 * rows * (n_features + 2 + copies)

    def statistics(self, X, sample_weight, assignment, centers, state):
        """A chunk's ``U_c``, ``m_c = sum_n w_n r_nc x_n`` and ``S2_c = sum_n w_n r_nc
        ||x_n||^2`` (the columns of ``"sums"``) and its weight ``"total"``, in float64 (see
        :meth:`MStep.statistics`)."""
        if assignment.winners is None:
            sums = _dense_soft_statistics(X, sample_weight, assignment.resp)
        else:
            sums = _truncated_soft_statistics(X, sample_weight, assignment.winners,
                                              assignment.resp, centers.shape[0],
                                              state.config.n_threads)
        return {"sums": sums, "total": np.float64(sample_weight.sum(dtype=np.float64))}

    def update_statistics(self, statistics, centers, far_rows, state):
        """The means and the variance of the statistics, empty clusters relocated (see
        :meth:`MStep.update_statistics`)."""
        centers_new, weight, sse = _soft_from_statistics(statistics["sums"], centers)
        relocate_empty(centers_new, weight, far_rows, state)
        _set_variance(sse, statistics["total"], centers, state)
        return centers_new


def _set_variance(sse, total_weight, centers, state):
    """``state.run.sigma2``: the weighted SSE per dimension and unit of weight, at least the
    floor."""
    state.run.sigma2 = max(float(sse) / (centers.shape[1] * float(total_weight)),
                           state.config.sigma2_floor)


def _dense_rows(n_clusters):
    """Rows per chunk of the dense soft M-step: as many as fill
    :data:`~clusterkit._data.blocks.SOFT_MSTEP_BLOCK_BYTES` of float64 responsibilities,
    between :data:`~clusterkit._data.blocks.SOFT_MSTEP_MIN_ROWS` and
    :data:`~clusterkit._data.blocks.SOFT_MSTEP_MAX_ROWS`."""
    return blocks.rows_for_bytes(8 * n_clusters, blocks.SOFT_MSTEP_BLOCK_BYTES,
                                 at_least=blocks.SOFT_MSTEP_MIN_ROWS,
                                 at_most=blocks.SOFT_MSTEP_MAX_ROWS)


def _dense_soft_statistics(X, sample_weight, resp):
    """The statistics of the dense soft M-step, of shape (n_clusters, n_features + 2).

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
    # (a chunk of data in chunks may be empty)
    chunk = max(1, min(_dense_rows(n_clusters), n_samples))
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
    return stats


def _truncated_rows(n_features, n_clusters, n_winners):
    """Rows per chunk of the truncated soft M-step on float32 data, which sums float64 copies
    of the rows, their weights, norms and ``n_winners`` responsibilities: as many as fill
    :data:`~clusterkit._data.blocks.TRUNCATED_MSTEP_BLOCK_BYTES`, at least ``n_clusters``."""
    return blocks.rows_for_bytes(8 * (n_features + 2 + n_winners),
                                 blocks.TRUNCATED_MSTEP_BLOCK_BYTES, at_least=n_clusters)


def _truncated_soft_statistics(X, sample_weight, winners, resp, n_clusters, n_threads):
    """The statistics of :func:`_dense_soft_statistics` for truncated responsibilities
    (``resp[n, m]`` of cluster ``winners[n, m]``), of shape (n_clusters, n_features + 2).

    One :func:`~clusterkit._kernels._mstep.accumulate_statistics` pass in float64 (its
    per-cluster squared errors of the distances ``||x_n||^2`` are the column ``S2_c``):
    float64 data at once, float32 data in chunks of rows copied to float64, so that the
    variance's expansion in :func:`_soft_from_statistics` keeps float64's accuracy.
    """
    n_samples, n_features = X.shape
    if X.dtype == np.float64:
        chunk = max(1, n_samples)
    else:
        chunk = _truncated_rows(n_features, n_clusters, winners.shape[1])
    stats = np.zeros((n_clusters, n_features + 2), dtype=np.float64)
    centers_sum = np.empty((n_clusters, n_features), dtype=np.float64)
    weight, sq_sum = np.empty(n_clusters), np.empty(n_clusters)
    for start in range(0, n_samples, chunk):
        rows = slice(start, start + chunk)
        x = np.ascontiguousarray(X[rows], dtype=np.float64)
        _mstep.accumulate_statistics(
            x, np.ascontiguousarray(sample_weight[rows], dtype=np.float64), winners[rows],
            np.ascontiguousarray(resp[rows], dtype=np.float64), np.einsum("ij,ij->i", x, x),
            centers_sum, weight, sq_sum, n_threads)
        stats[:, :n_features] += centers_sum
        stats[:, n_features] += weight
        stats[:, n_features + 1] += sq_sum
    return stats


def _soft_from_statistics(stats, centers):
    """New centres, cluster weights and weighted SSE from the statistics of
    :func:`_dense_soft_statistics` or :func:`_truncated_soft_statistics` (of one batch, or
    added up over chunks)."""
    n_features = centers.shape[1]
    centers_sum, weight = stats[:, :n_features], stats[:, n_features]
    sq = float(stats[:, n_features + 1].sum())  # S2
    centers_new = divide(centers_sum, weight, centers.astype(np.float64)).astype(centers.dtype)
    mu = centers_new.astype(np.float64)
    sse = (sq - 2.0 * float(np.einsum("ij,ij->", mu, centers_sum))
           + float(weight @ np.einsum("ij,ij->i", mu, mu)))
    return centers_new, np.ascontiguousarray(weight), sse
