"""How a hard M-step turns a batch's assignment into centres: the per-batch sums, the batch
rules (``replace``, ``running``, ``adaptive``, ``latest``, ``backward_euler``; see
:attr:`~clusterkit.Schedule.center_update`), each a small object holding its running state,
and the relocation of clusters without weight."""

import numpy as np

from .._data.sparse import dense_rows, kernels_for
from .._engine.far_rows import batch_far_rows, far_scores

__all__ = ["HARD_RULES", "all_rows", "batch_sums", "divide", "relocate_empty"]


def relocate_empty(centers_new, weight_in_clusters, far_rows, state, withdraw=False):
    """Move every cluster that received no weight onto a far-away sample.

    The one rule for empty clusters in clusterkit: the empty clusters, in index order, take the
    samples with the largest weighted squared distance ``w_n * dist2_n`` to their best centre
    (:func:`~clusterkit._engine.far_rows.far_scores`: 0 within the distance's rounding),
    farthest first, ties to the lower row number, each sample used once (as scikit-learn's
    ``KMeans`` does). Such samples are the worst explained, so this lowers the objective the
    most among single-sample moves. A sample that sits on its centre (score 0) is never taken:
    a centre moved onto it would only duplicate one (more clusters than distinct points;
    scikit-learn then relocates nothing either). If there are more empty clusters than such
    samples, the rest keep their previous position (already in ``centers_new``). Centres are
    never NaN.

    ``far_rows(k)`` gives the ``k`` rows of largest score
    (:class:`~clusterkit._engine.far_rows.FarRows`): of the batch in memory
    (:func:`~clusterkit._engine.far_rows.batch_far_rows`), or of all the row chunks (one
    pass over them). It is asked only when a cluster is empty.

    With ``withdraw=True`` (``centers_new`` the weighted means of hard clusters whose weights
    are ``weight_in_clusters``), a moved sample also leaves the cluster it was assigned to,
    whose centre becomes the mean of its other samples, as scikit-learn's ``KMeans`` does: the
    centres are then those of the labels the sample now has (its new centre is the sample
    itself), so the next E-step finds the same partition where it can, and a fit that
    relocated does not spend an extra iteration undoing a stale mean. A sample alone in its
    cluster (nothing else with weight) is not taken then: moving it would empty its cluster;
    when the farthest rows cannot all leave their clusters, the walk down the scores asks
    ``far_rows`` for more rows until it has enough or there are none left.
    ``weight_in_clusters`` is updated in place.

    Sets ``state.run.n_relocated`` to the number of clusters whose position this changed (a
    cluster placed again where it already was does not count): with them, a step in which
    no label changed is no fixed point (:attr:`FitState.at_fixed_point`). Returns the number
    of relocated clusters.
    """
    state.run.n_relocated = 0
    empty = np.flatnonzero(weight_in_clusters <= 0)
    if empty.size == 0:
        return 0
    centers_given, weight_given = centers_new.copy(), weight_in_clusters.copy()
    k = empty.size
    while True:
        far = far_rows(k)
        n_far = min(empty.size, far.score.size)
        chosen = np.arange(n_far)
        if not withdraw:
            break
        centers_new[:], weight_in_clusters[:] = centers_given, weight_given
        chosen = _withdraw(chosen, far.score, empty, centers_new, weight_in_clusters,
                           far.rows, far.sample_weight, far.labels)
        if chosen.size == n_far or far.score.size >= far.n_positive:
            break
        k *= 4  # the walk ran past the rows found: find more
    moved = empty[:chosen.size]
    rows = far.rows[chosen]
    state.run.n_relocated = int(np.count_nonzero(np.any(centers_new[moved] != rows, axis=1)))
    centers_new[moved] = rows
    return chosen.size


def _withdraw(far, score, empty, centers_new, weight_in_clusters, X, sample_weight, labels):
    """The samples (at most as many as ``far``, farthest first) that leave their clusters for
    the ``empty`` ones; each one's cluster becomes the mean of its other samples
    (``centers_new`` and ``weight_in_clusters`` updated in place)."""
    n_far = far.size
    remaining = weight_in_clusters.astype(np.float64)
    chosen = []
    for i in (far if _can_all_leave(far, labels, sample_weight, remaining)
              else np.argsort(-score, kind="stable")[:np.count_nonzero(score > 0)]):
        if len(chosen) == n_far:
            break
        j, w = labels[i], float(sample_weight[i])
        if remaining[j] - w <= 1e-12 * remaining[j]:
            continue  # alone in its cluster
        # the mean of the cluster's other samples
        x = dense_rows(X, np.array([i])).astype(np.float64)[0]
        mean = centers_new[j].astype(np.float64)
        centers_new[j] = mean + (w / (remaining[j] - w)) * (mean - x)
        remaining[j] -= w
        remaining[empty[len(chosen)]] = w
        chosen.append(i)
    weight_in_clusters[:] = remaining
    return np.array(chosen, dtype=np.intp)


def _can_all_leave(far, labels, sample_weight, weight_in_clusters):
    """Whether every sample of ``far`` can leave its cluster without emptying it."""
    leaving = np.bincount(labels[far], sample_weight[far].astype(np.float64),
                          minlength=weight_in_clusters.shape[0])
    return bool(np.all(weight_in_clusters[labels[far]] - leaving[labels[far]]
                       > 1e-12 * weight_in_clusters[labels[far]]))


def all_rows(state):
    """Whether the current batch, ``state.run.rows``, is all the run's rows."""
    rows = state.run.rows
    n_samples = state.run.n_samples
    if isinstance(rows, slice):
        return len(range(n_samples)[rows]) == n_samples
    return len(rows) == n_samples and np.array_equal(rows, np.arange(n_samples))


def divide(centers_sum, weight_in_clusters, centers):
    """Means where a cluster has weight; the old centre elsewhere (relocated afterwards)."""
    has = weight_in_clusters > 0
    out = centers.copy()
    out[has] = centers_sum[has] / weight_in_clusters[has, None]
    return out


def _accumulate_hard(X, sample_weight, labels, dist2, sums, weight, sse, n_threads):
    """Per-cluster sums, weights and (if ``sse`` is given) squared errors of a hard
    assignment, for dense or CSR rows."""
    kernels_for(X).accumulate_hard(X, sample_weight, labels, dist2, sums, weight, sse,
                                   n_threads)


def batch_sums(X, sample_weight, assignment, centers, state):
    """The batch's per-cluster weighted sums and weights: those the E-step summed in its
    pass, else from one accumulation over the batch."""
    if assignment.centers_sum is not None:
        return assignment.centers_sum, assignment.weight_in_clusters
    centers_sum = np.empty_like(centers)
    weight = np.empty(centers.shape[0], dtype=X.dtype)
    _accumulate_hard(X, sample_weight, assignment.labels, None, centers_sum, weight, None,
                     state.config.n_threads)
    return centers_sum, weight


class _Replace:
    """Rule ``"replace"`` (full batches): the centres are the batch's weighted means, from its
    statistics (:meth:`HardMStep.update_statistics <clusterkit.HardMStep.update_statistics>`);
    nothing runs on between batches."""

    reads_batch_sums = True

    def __init__(self, n_samples, centers):
        pass


class _Running:
    """Rule ``"running"`` (Sculley): float64 running sums per cluster, every visit votes."""

    reads_batch_sums = True

    def __init__(self, n_samples, centers):
        n_clusters, n_features = centers.shape
        self.sums = np.zeros((n_clusters, n_features))
        self.weight = np.zeros(n_clusters)
        self.sse = np.zeros(n_clusters)
        self.touched = np.zeros(n_clusters, dtype=bool)  # clusters whose votes this step moved
        # the starved rule's window: when it began, the weight of its votes (all, and per
        # cluster), and when each cluster was last (re)placed
        self.window_start = 0
        self.window_weight = 0.0
        self.recent = np.zeros(n_clusters)
        self.placed_at = np.zeros(n_clusters, dtype=np.int64)

    def add(self, X, sample_weight, labels, dist2, sign, n_threads, sums=None, weight=None):
        """Add (``sign=1``) or withdraw (``sign=-1``) the votes of these samples; returns
        their per-cluster sums and weights."""
        if sums is None:
            sums = np.empty((self.sums.shape[0], X.shape[1]), dtype=X.dtype)
            weight = np.empty(self.sums.shape[0], dtype=X.dtype)
            sse = np.empty(self.sse.shape[0])
            _accumulate_hard(X, sample_weight, labels, dist2, sums, weight, sse, n_threads)
        else:  # sums from the E-step's pass, which did not sum the squared distances
            w = sample_weight.astype(np.float64)
            sse = np.bincount(labels, w * dist2, minlength=self.sse.shape[0])
        # only the clusters these samples voted for change: at many clusters a batch touches
        # a few of them, and a pass over all C x D sums per step would cost more than it
        touched = np.flatnonzero(weight)
        self.sums[touched] += sign * sums[touched].astype(np.float64)
        self.weight[touched] += sign * weight[touched].astype(np.float64)
        self.sse += sign * sse
        self.touched[touched] = True
        return sums, weight

    def vote(self, X, sample_weight, assignment, centers, state):
        """Add the batch's votes (every visit counts), with the sums the E-step computed in its
        pass if it did; returns the batch's per-cluster sums and weights."""
        sums, weight = self.add(X, sample_weight, assignment.labels,
                                assignment.dist2.astype(np.float64), 1, state.config.n_threads,
                                assignment.centers_sum, assignment.weight_in_clusters)
        self.recent += weight
        return sums, weight

    def update(self, X, sample_weight, assignment, centers, state):
        centers_new, voted = self.voted_means(X, sample_weight, assignment, centers, state)
        return self.finish(X, sample_weight, assignment, centers_new, voted, state)

    def voted_means(self, X, sample_weight, assignment, centers, state):
        """Add the batch's votes; the centres whose sums changed moved to their means (the
        others are their means already, or keep their position), and which have votes."""
        self.vote(X, sample_weight, assignment, centers, state)
        # rounding of the withdrawals can leave a tiny non-zero weight: count it as none
        # (relative to the largest cluster weight, so that only the weights' ratios matter)
        voted = self.weight > 1e-12 * float(self.weight.max())
        moved = np.flatnonzero(self.touched & voted)
        centers_new = centers.copy()
        centers_new[moved] = (self.sums[moved] / self.weight[moved, None]).astype(X.dtype)
        return centers_new, voted

    def finish(self, X, sample_weight, assignment, centers_new, voted, state):
        """Relocate the starved clusters and publish the running statistics."""
        self.window_weight += float(sample_weight.sum(dtype=np.float64))
        state.run.step_info["n_relocated"] = self.relocate_starved(X, sample_weight, assignment,
                                                                   centers_new, voted, state)
        state.run.channel.cluster_weight, state.run.channel.cluster_sse = self.weight, self.sse
        self.touched[:] = False  # (the next step's votes mark their own)
        return centers_new

    def held(self, voted):
        """The weight each cluster collected in the window (every visit votes)."""
        return self.recent

    def relocate_starved(self, X, sample_weight, assignment, centers_new, voted, state):
        """Move the starved clusters onto samples of the batch drawn by D^2 sampling.

        Checked at the end of every window of ``state.run.channel.reassignment_window`` rows (a
        pass over the data if unset): a cluster placed before the window began is starved
        if it :meth:`held` at most ``state.run.channel.reassignment_ratio`` (0 if unset) times an
        average cluster's share of the window's weight. At most half the batch's rows are
        used per step, the most starved clusters first. A moved cluster starts afresh, with
        no votes. Returns the number of moved clusters, and sets ``state.run.n_relocated`` to
        those whose position changed (as :func:`relocate_empty`).
        """
        state.run.n_relocated = 0
        channel = state.run.channel
        seen_rows = state.run.n_samples_seen + X.shape[0]
        if seen_rows - self.window_start < (channel.reassignment_window or state.run.n_samples):
            return 0
        held = self.held(voted)
        share = self.window_weight / held.shape[0]
        eligible = self.placed_at <= self.window_start
        ratio = channel.reassignment_ratio or 0.0
        starved = np.flatnonzero(eligible & (held <= ratio * share))
        self.window_start, self.window_weight = seen_rows, 0.0
        self.recent[:] = 0.0
        score = far_scores(X, sample_weight, assignment.dist2, state.config.n_threads)
        candidates = np.flatnonzero(score > 0)
        n_moves = min(starved.size, candidates.size, max(X.shape[0] // 2, 1))
        if n_moves == 0:
            return 0  # none starved, or every sample of the batch sits on a centre
        p = score[candidates] / score[candidates].sum()
        chosen = state.random_state.choice(candidates, n_moves, replace=False, p=p)
        # duplicated samples: one centre per position (a second would get no vote)
        chosen = np.sort(chosen[_first_of_equal_rows(dense_rows(X, chosen))])
        n_moves = chosen.size
        starved = starved[np.argsort(held[starved], kind="stable")[:n_moves]]
        rows = dense_rows(X, chosen)
        state.run.n_relocated = int(np.count_nonzero(np.any(centers_new[starved] != rows, axis=1)))
        centers_new[starved] = rows
        self.sums[starved] = 0.0
        self.weight[starved] = self.sse[starved] = 0.0
        self.placed_at[starved] = seen_rows
        return n_moves


def _first_of_equal_rows(rows):
    """Indices of the first of each group of equal rows (-0.0 equals 0.0): the rows compared
    as raw bytes, which is several times faster than ``np.unique(axis=0)`` on wide rows."""
    rows = np.ascontiguousarray(rows) + rows.dtype.type(0)  # (x + 0 turns -0.0 into 0.0)
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    return np.unique(as_bytes, return_index=True)[1]


class _Adaptive(_Running):
    """Rule ``"adaptive"`` (Schwartzman 2023): each centre moves towards the mean of its
    batch samples by the learning rate ``sqrt(W_j / W)`` (``W_j`` the batch weight of its
    cluster, ``W`` the batch's); running weights are kept for the starved rule."""

    def update(self, X, sample_weight, assignment, centers, state):
        sums, weight = self.vote(X, sample_weight, assignment, centers, state)
        weight = weight.astype(np.float64)
        total = float(weight.sum())
        has = weight > 0
        centers_new = centers.copy()
        if total > 0:
            rate = np.sqrt(weight[has] / total)[:, None]
            means = sums[has].astype(np.float64) / weight[has, None]
            centers_new[has] = ((1 - rate) * centers[has] + rate * means).astype(X.dtype)
        voted = self.weight > 0
        return self.finish(X, sample_weight, assignment, centers_new, voted, state)


class _Latest(_Running):
    """Rule ``"latest"`` (nested mini-batches): running sums in which only each sample's
    latest visit votes; a revisited sample whose label changed withdraws its old vote (its
    squared distance at that visit is kept for it). A centre without a vote keeps its
    position while the batch is a prefix of the rows (a longer prefix may bring it votes:
    often a seed outside the first prefix); once the batch is all rows, a cluster without a
    vote moves as in a full batch (:func:`relocate_empty`, onto the farthest rows),
    which data in row chunks do alike (:meth:`HardMStep.update_statistics
    <clusterkit.HardMStep.update_statistics>`)."""

    reads_batch_sums = False  # only the votes that moved are summed

    def __init__(self, n_samples, centers):
        super().__init__(n_samples, centers)
        self.n_samples = n_samples
        self.last_dist2 = None  # (made at the first vote: never on data in row chunks)

    def vote(self, X, sample_weight, assignment, centers, state):
        if self.last_dist2 is None:
            self.last_dist2 = np.zeros(self.n_samples)
        dist2 = assignment.dist2.astype(np.float64)
        labels = assignment.labels
        rows = np.arange(state.run.n_samples)[state.run.rows]
        previous = state.run.labels[rows]
        moved = previous != labels  # first visits included (previous = -1)
        withdrawn = moved & (previous >= 0)
        if withdrawn.any():
            self.add(np.ascontiguousarray(X[withdrawn]), sample_weight[withdrawn],
                     previous[withdrawn], self.last_dist2[rows[withdrawn]], -1,
                     state.config.n_threads)
        if moved.any():
            self.add(np.ascontiguousarray(X[moved]), sample_weight[moved], labels[moved],
                     dist2[moved], 1, state.config.n_threads)
        kept = ~moved
        self.sse += np.bincount(labels[kept], sample_weight[kept].astype(np.float64) * (
            dist2[kept] - self.last_dist2[rows[kept]]), minlength=self.sse.shape[0])
        self.last_dist2[rows] = dist2

    def update(self, X, sample_weight, assignment, centers, state):
        centers_new, voted = self.voted_means(X, sample_weight, assignment, centers, state)
        if all_rows(state):  # (the sums follow the labels: a row moved onto an empty
            # cluster withdraws its vote at the next step, when its label changes)
            relocate_empty(centers_new, np.where(voted, self.weight, 0.0),
                           batch_far_rows(X, sample_weight, assignment, state.config.n_threads),
                           state, withdraw=True)
        else:
            state.run.n_relocated = 0
        state.run.channel.cluster_weight, state.run.channel.cluster_sse = self.weight, self.sse
        self.touched[:] = False
        return centers_new


#: An inner iteration has diverged (the fixed-point map expands for too large a step) if its
#: mean batch objective, or the squared distance it moves a centre from ``x^k``, exceeds this
#: many times the mean batch objective at the outer step's start. (The backward Euler point
#: itself lies between ``x^k_j`` and the mean of the cluster's samples.)
DIVERGENCE_FACTOR = 1e3


class _BackwardEuler:
    """Rule ``"backward_euler"`` (stochastic backward Euler): within one outer step, the
    iterate it started from (``x^k``), the forward-looking average, the batch objective at
    ``x^k`` and whether the step diverged (float64)."""

    reads_batch_sums = True

    def __init__(self, n_samples, centers):
        self.anchor = self.average = None
        self.reference = 0.0
        self.diverged = False

    def update(self, X, sample_weight, assignment, centers, state):
        """One inner iteration of stochastic backward Euler (see :class:`HardMStep`)."""
        centers_sum, weight = batch_sums(X, sample_weight, assignment, centers, state)
        step_size, averaging = state.run.channel.step_size, state.run.channel.averaging
        if step_size == np.inf:  # the step's limit for a fixed assignment: Lloyd's means
            return divide(centers_sum, weight, centers)
        total = float(sample_weight.sum(dtype=np.float64))
        # the mean batch objective at the current iterate (a batch without weight has none)
        level = assignment.qe / total if total > 0 else 0.0
        if state.run.inner_step == 0:  # the outer step starts at x^k = y = z
            self.anchor = centers.astype(np.float64)
            self.average = self.anchor.copy()
            self.reference = max(level, state.config.qe_resolution / total if total > 0 else 0.0)
            self.diverged = False
        limit = DIVERGENCE_FACTOR * self.reference
        if not self.diverged and level <= limit:
            gradient = ((weight.astype(np.float64)[:, None] * centers
                         - centers_sum.astype(np.float64)) / total if total > 0 else 0.0)
            y = self.anchor - step_size * gradient
            if np.einsum("ij,ij->i", y - self.anchor, y - self.anchor).max() <= limit:
                self.average *= averaging
                self.average += (1 - averaging) * y
                last = state.run.inner_step == state.run.n_inner_steps - 1
                centers_new = (self.average if last else y).astype(centers.dtype)
                if np.all(np.isfinite(centers_new)):
                    return centers_new
        # diverged: abandon the outer step, back to x^k (the schedule retries with a
        # smaller step)
        self.diverged = True
        state.run.step_info["diverged"] = True
        return self.anchor.astype(centers.dtype)


#: The batch rules of :class:`HardMStep`, each a small object holding its running state.
HARD_RULES = {"replace": _Replace, "running": _Running, "adaptive": _Adaptive,
               "latest": _Latest, "backward_euler": _BackwardEuler}
