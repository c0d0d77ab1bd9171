"""The schedule that trains the centroids of an inverted-file (IVF) index
(:class:`IndexTraining`): Lloyd's iterations on a sample of so many rows per centroid, stopped
when the cells of rows held out of the sample stop changing."""
from numbers import Integral, Real

import numpy as np

from .._engine.constraints import Interval
from .._engine.contracts import Schedule
from .._kernels import _assign
from .schedules import FullBatch

__all__ = ["IndexTraining"]


class _HeldOut:
    """:class:`IndexTraining`'s per-run state: the training rows (a prefix of the run's
    order), the held-out rows (the next ones; ``None`` when the sample is all rows) and their
    cells at the last step, and the fraction of them that changed cell at each step."""

    def __init__(self, n_train, rows):
        self.n_train = n_train
        self.rows = rows
        self.labels = None
        self.changed = []


class IndexTraining(Schedule):
    """Train IVF centroids: Lloyd's iterations on a sample of ``points_per_centroid`` rows
    per centroid, until the cells of held-out rows stop changing.

    The rows are put in one random order (:meth:`order`, so the sample is a view of the
    driver's copy). Every step is a full Lloyd step on the first ``min(N, points_per_centroid
    * C)`` of them, the training sample (faiss' convention: its ``Kmeans`` subsamples to 256
    rows per centroid by default). The next ``min(holdout, N - sample)`` rows are held out:
    after each step they are assigned to the new centroids (``H C`` distances, counted under
    ``"estep"``), and the fit stops once at most a fraction ``change_tol`` of them changed
    cell since the step before. When the sample is all rows, the fraction is that of the
    training rows whose label changed in the step (no held-out rows are left).

    An IVF index only sees which cell a vector falls in, so a partition that no longer
    changes for unseen vectors is what an index needs, whatever the objective still gains.
    The threshold: on the embedding-like rows of ``benchmarks/bench_embeddings.py --index``
    (60,000 rows, ``C = 980 = 4 sqrt(N)``, recall@10 at ``nprobe = 2``; it prints the
    fraction changed, the error and the recall after each iteration), Lloyd's iterations
    had their recall within 0.004 of their fixed point's once at most about 2 % of the rows
    changed cell per iteration (iteration 3 or 4 of 20-31, at 384 to 1,024 features), while
    the error was still 0.5-1 % above the fixed point's; ``change_tol=0.02`` stopped after
    4-5 iterations within 0.003 of the fixed point's recall (``benchmarks/RESULTS.md``).

    Parameters
    ----------
    points_per_centroid : int, default=256
        Rows of the training sample per centroid (all rows if the data have fewer).
    holdout : int, default=10000
        Rows held out of the sample for the stop rule (fewer if the data have fewer left).
        With ``H`` rows a change fraction ``f`` is known to about ``sqrt(f / H)``: 0.0014
        at ``f = 0.02``, ``H = 10,000``, for ``H C D`` flops per step, a few percent of a
        step on ``256 C`` rows.
    change_tol : float, default=0.02
        The fit stops once at most this fraction of the held-out rows changed cell in a
        step (0: only when none does). The estimator's ``tol`` still stops it on the
        relative change of the training sample's objective, as for a full batch.

    Notes
    -----
    The centroids are the weighted means of the training sample's cells (weights kept);
    with :class:`~clusterkit.SphericalMStep` they are the unit mean directions, for an
    inner-product index. ``history_`` records ``heldout_changed``, the fraction of
    held-out rows that changed cell at each step. Per-sample state of the E-step is kept for
    all rows (use :class:`~clusterkit.FullEStep`, which keeps none, as the embeddings page's
    example does). With ``n_init > 1`` the runs share the
    order, so the sample and the held-out rows.

    Examples
    --------
    >>> from clusterkit import IndexTraining
    >>> IndexTraining(points_per_centroid=64)
    IndexTraining(points_per_centroid=64, holdout=10000, change_tol=0.02)
    """

    _parameter_constraints = {
        "points_per_centroid": [Interval(Integral, 1)],
        "holdout": [Interval(Integral, 0)],
        "change_tol": [Interval(Real, 0, 1)],
    }

    def __init__(self, points_per_centroid=256, holdout=10000, change_tol=0.02):
        self.points_per_centroid = points_per_centroid
        self.holdout = holdout
        self.change_tol = change_tol

    def sample_rows(self, n_samples, n_clusters):
        """Rows of the training sample: ``min(N, points_per_centroid * C)``."""
        return int(min(n_samples, self.points_per_centroid * n_clusters))

    def order(self, n_samples, state):
        """One random order of the rows: the sample and the held-out rows are views."""
        return state.random_state.permutation(n_samples)

    def seeding_rows(self, n_samples, n_clusters, n_features):
        """A full batch's seeding rows on the training sample
        (:meth:`FullBatch.seeding_rows`), a prefix of it."""
        return FullBatch().seeding_rows(self.sample_rows(n_samples, n_clusters), n_clusters,
                                        n_features)

    def init_state(self, X, sample_weight, centers, state):
        """The training sample's size and the held-out rows (a view of ``X``)."""
        n_train = self.sample_rows(X.shape[0], centers.shape[0])
        n_held = min(int(self.holdout), X.shape[0] - n_train)
        rows = X[n_train:n_train + n_held] if n_held > 0 else None
        return _HeldOut(n_train, rows)

    def batches(self, n_samples, state):
        """The training sample, ``slice(0, n_train)``, at every step."""
        run = state.run.schedule_state
        size = run.n_train if isinstance(run, _HeldOut) else self.sample_rows(
            n_samples, state.config.n_clusters)
        while True:
            yield slice(0, size)

    def _changed(self, state):
        """The fraction of the held-out rows (or, without any, of the training sample) whose
        cell changed in the last step; ``None`` after the first step of held-out rows."""
        run = state.run.schedule_state
        if run.rows is None:
            return state.run.n_changed / max(run.n_train, 1)
        centers = np.ascontiguousarray(state.run.centers, dtype=run.rows.dtype)
        labels = np.empty(run.rows.shape[0], dtype=np.int32)
        dist2 = np.empty(run.rows.shape[0], dtype=run.rows.dtype)
        state.meter.count("estep", _assign.assign_full(np.ascontiguousarray(run.rows), centers,
                                                       labels, dist2, state.config.n_threads))
        previous, run.labels = run.labels, labels
        if previous is None:
            return None
        return float(np.count_nonzero(labels != previous)) / labels.shape[0]

    def should_stop(self, state, tol):
        """Stop once at most ``change_tol`` of the held-out rows changed cell in a step, at
        a fixed point of the training sample (no label changed), or by the rule of full
        batches on the training sample's objective (:meth:`Schedule.should_stop`)."""
        run = state.run.schedule_state
        changed = self._changed(state)
        run.changed.append(changed)
        if state.run.history:
            state.run.history[-1]["heldout_changed"] = changed
        if changed is not None and changed <= self.change_tol:
            return True
        return state.run.n_changed == 0 or super().should_stop(state, tol)
