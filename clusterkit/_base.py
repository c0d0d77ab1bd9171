"""The strategy contracts of :class:`~clusterkit.Clusterer`.

A fit is assembled from five small strategy objects, each with one verb:

* :class:`DataReducer` -- ``reduce(X, sample_weight, state) -> (X, sample_weight)``: coreset
  construction;
* :class:`Seeder` -- ``seed(X, sample_weight, n_clusters, state) -> centers``: initial centres;
* :class:`EStep` -- ``assign(X, sample_weight, centers, state) -> Assignment``: the E-step;
* :class:`MStep` -- ``update(X, sample_weight, assignment, centers, state) -> centers``: the
  M-step (centres and, if soft, the shared variance);
* :class:`Schedule` -- ``batches(n_samples, state)``: which samples each iteration sees, and
  ``should_stop(state, tol)``: when to stop.

Strategies are configuration objects: ``__init__`` only stores its arguments (so that
scikit-learn's ``get_params``/``clone`` work and the object pickles), and nothing is kept on
``self`` between fits. Whatever must survive from one iteration to the next (bounds, winners,
neighbourhoods, running sums) lives in an object returned by the optional ``init_state`` hook;
the driver stores it on the :class:`~clusterkit.FitState` it passes to every call
(``state.estep_state``, ``state.mstep_state``, ``state.schedule_state``).

Every array a strategy receives is C-contiguous and of one floating dtype (float32 or float64);
``sample_weight`` always is an array of that dtype (ones when the user gave none, times the
coreset weights after a reduction). Strategies add the distance evaluations they perform to
``state.cost`` (see :meth:`FitState.count`).
"""
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["Assignment", "Seeder", "DataReducer", "EStep", "MStep", "Schedule"]


class _Strategy:
    """Shared behaviour: a readable ``repr`` and a parameter check run when ``fit`` starts."""

    def _validate(self, X, n_clusters):
        """Check hyper-parameters against the data; raise ``ValueError`` if they cannot work.

        Called by the driver once per fit, before any work is done. The default accepts
        everything.
        """

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"

    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self):
        return hash(type(self).__name__)


@dataclass
class Assignment:
    """What an E-step hands to the M-step.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,), dtype=int32
        The best (nearest) cluster of each sample.
    dist2 : ndarray of shape (n_samples,)
        Squared distance of each sample to its best cluster (clamped at zero).
    objective : float
        The objective of the parameters the M-step is about to replace: the weighted
        quantization error ``sum_n w_n dist2_n`` for hard E-steps, the (truncated) free energy
        ``sum_n w_n log sum_{c in K(n)} p(c, x_n)`` for soft ones.
    qe : float
        Weighted quantization error ``sum_n w_n dist2_n`` (equals ``objective`` when hard).
    winners : ndarray of shape (n_samples, n_winners), dtype=int32, or None
        The clusters each sample's responsibilities refer to; ``None`` means all clusters in
        index order (``resp`` is then ``(n_samples, n_clusters)``).
    resp : ndarray of shape (n_samples, n_winners) or (n_samples, n_clusters), or None
        Responsibilities (rows sum to one); ``None`` for a hard assignment.
    centers_sum, weight_in_clusters : ndarray of shape (n_clusters, n_features) and \
            (n_clusters,), or None
        The hard M-step's statistics ``sum_{n in c} w_n x_n`` and ``sum_{n in c} w_n``, when
        the E-step summed them in its own pass over the data (bit-identical to what the
        M-step would compute); ``None`` otherwise.
    """

    labels: np.ndarray
    dist2: np.ndarray
    objective: float
    qe: float
    winners: Optional[np.ndarray] = None
    resp: Optional[np.ndarray] = None
    centers_sum: Optional[np.ndarray] = None
    weight_in_clusters: Optional[np.ndarray] = None

    @property
    def is_hard(self):
        """``True`` for a hard assignment (no responsibilities)."""
        return self.resp is None


class Seeder(_Strategy, ABC):
    """Chooses the initial centres.

    Subclasses implement :meth:`seed`. Example: a seeder that takes the first ``n_clusters``
    rows::

        class FirstRows(Seeder):
            def seed(self, X, sample_weight, n_clusters, state):
                return X[:n_clusters].copy()
    """

    @abstractmethod
    def seed(self, X, sample_weight, n_clusters, state):
        """Return initial centres.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Data (possibly a weighted coreset).
        sample_weight : ndarray of shape (n_samples,)
            Non-negative weights, same dtype as ``X``.
        n_clusters : int
            Number of centres to choose.
        state : FitState
            Reads ``random_state`` and ``n_threads``; add distance evaluations with
            ``state.count("seeding", n)``. A seeder that finds every sample's nearest centre
            as a by-product may store it as ``state.seed_labels``.

        Returns
        -------
        centers : ndarray of shape (n_clusters, n_features)
            C-contiguous, same dtype as ``X``.
        """


class DataReducer(_Strategy, ABC):
    """Replaces the data by a smaller weighted set that the rest of the fit works on."""

    @abstractmethod
    def reduce(self, X, sample_weight, state):
        """Return the (possibly reduced) data and its weights.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The training data as given (the driver centres only what the reducer returns,
            so that a reduced fit never copies the full data).
        sample_weight : ndarray of shape (n_samples,)
        state : FitState
            Reads ``random_state``; add distance evaluations with
            ``state.count("reduction", n)``.

        Returns
        -------
        X_reduced : ndarray of shape (n_reduced, n_features)
        sample_weight_reduced : ndarray of shape (n_reduced,)
            Weights such that weighted sums over the reduced set estimate the sums over the
            input (user weights included).
        """


class EStep(_Strategy, ABC):
    """Assigns samples to clusters (hard) or computes responsibilities (soft).

    ``state.soft`` tells whether the M-step needs responsibilities; ``state.sigma2`` holds the
    shared variance of the soft model (``None`` before the first E-step: then the E-step sets
    it with :meth:`FitState.init_sigma2` from the distances it computed, vc-GMM eq. 12).
    """

    def init_state(self, X, sample_weight, centers, state):
        """Create the per-fit state kept across E-steps.

        Called once after seeding; the driver stores the result as ``state.estep_state``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        sample_weight : ndarray of shape (n_samples,)
        centers : ndarray of shape (n_clusters, n_features)
            The seeded centres.
        state : FitState

        Returns
        -------
        estep_state : object or None
            The default keeps no state and returns ``None``.
        """
        return None

    @abstractmethod
    def assign(self, X, sample_weight, centers, state):
        """Return an :class:`Assignment` of ``X`` to ``centers``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        sample_weight : ndarray of shape (n_samples,)
        centers : ndarray of shape (n_clusters, n_features)
        state : FitState
            Add distance evaluations with ``state.count("estep", n)``.

        Returns
        -------
        assignment : Assignment
        """


class MStep(_Strategy, ABC):
    """Re-estimates the centres (and, if soft, the shared variance) from an assignment.

    Attributes
    ----------
    soft : bool
        Class attribute: ``True`` if :meth:`update` needs responsibilities (and maintains
        ``state.sigma2``), ``False`` for hard assignments.
    """

    soft = False

    def init_state(self, X, sample_weight, centers, state):
        """Create the per-fit state kept across M-steps.

        Called once after seeding; the driver stores the result as ``state.mstep_state``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        sample_weight : ndarray of shape (n_samples,)
        centers : ndarray of shape (n_clusters, n_features)
        state : FitState

        Returns
        -------
        mstep_state : object or None
            The default keeps no state and returns ``None``.
        """
        return None

    @abstractmethod
    def update(self, X, sample_weight, assignment, centers, state):
        """Return new centres.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        sample_weight : ndarray of shape (n_samples,)
        assignment : Assignment
        centers : ndarray of shape (n_clusters, n_features)
            The centres the assignment was computed with (read-only).
        state : FitState

        Returns
        -------
        centers_new : ndarray of shape (n_clusters, n_features)
            Never NaN: clusters without weight are relocated (see the M-step's Notes).
        """


class Schedule(_Strategy, ABC):
    """Decides which samples each iteration works on and when to stop."""

    def init_state(self, n_samples, state):
        """Create per-fit schedule state (stored as ``state.schedule_state``).

        Parameters
        ----------
        n_samples : int
            Rows of the (reduced) data.
        state : FitState

        Returns
        -------
        schedule_state : object or None
            The default keeps no state and returns ``None``.
        """
        return None

    @abstractmethod
    def batches(self, n_samples, state):
        """Yield, once per iteration, the samples that iteration uses.

        The driver stops when the generator is exhausted, after ``max_iter`` iterations or
        when :meth:`should_stop` says so.

        Parameters
        ----------
        n_samples : int
            Rows of the (reduced) data.
        state : FitState
            Reads ``random_state`` for random batches.

        Yields
        ------
        batch : ndarray of shape (n_batch,), dtype=intp, or None
            Row indices into the (reduced) data, or ``None`` for all rows (no copy is made).
        """

    def should_stop(self, state, tol):
        """Decide after each iteration whether the fit has converged.

        The default is the rule of the papers for full-batch EM: stop when the relative change
        of the objective between the last two iterations is at most ``tol``. An objective that
        is the quantization error (hard fits) counts as at least ``state.qe_resolution``
        here, so a fit with more clusters than distinct points stops once the error is down
        to rounding noise.

        Parameters
        ----------
        state : FitState
            Reads ``state.history`` and ``state.qe_resolution``.
        tol : float
            The estimator's tolerance.

        Returns
        -------
        stop : bool
        """
        history = state.history
        if len(history) < 2:
            return False
        f_new, f_old = history[-1]["objective"], history[-2]["objective"]
        scale = abs(f_new)
        if self._objective_is_qe(history[-1]):
            # At rounding level (more clusters than distinct points) the quantization error
            # counts as zero: its changes are noise, which can cycle forever.
            scale = max(scale, state.qe_resolution)
        return abs(f_new - f_old) <= tol * scale

    @staticmethod
    def _objective_is_qe(entry):
        """Whether a history entry's objective is the quantization error (a hard fit)."""
        return entry["objective"] == entry["qe"]
