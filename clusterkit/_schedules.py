"""Schedules: which samples each iteration works on, and when a fit stops."""
import math

from ._base import QUANTIZATION_ERROR, Schedule

__all__ = ["FullBatch"]


class FullBatch(Schedule):
    """Every iteration uses all (reduced) samples; stop on the objective's relative change.

    The batch EM of the papers: iterate until ``|F_t - F_{t-1}| <= tol |F_t|`` (Hirschberger,
    Forster & Lücke, Suppl. F) or ``max_iter`` iterations.

    Parameters
    ----------
    kmeans_objective : {"qe", "free_energy"}, default="qe"
        What the rule compares when the objective is the quantization error (hard fits).
        ``"qe"``: the quantization error itself. ``"free_energy"``: the k-means free energy
        ``-sum_n w_n [log C + (D/2) log(2 pi e sigma2)]`` with
        ``sigma2 = QE / (D sum_n w_n)`` (Lücke & Forster 2017), the rule the vc-GMM paper
        applies to k-means. Its relative change is about that of the quantization error times
        ``(D/2) / |log C + (D/2) log(2 pi e sigma2)|``, usually much smaller, so hard fits
        stop sooner; unlike the quantization error's, it depends on the units of the data.
        Soft fits always compare their own free energy.

    Notes
    -----
    Yields ``slice(0, n_samples)`` (all rows, a view), so no data are copied. Keeps no state.

    Examples
    --------
    >>> from clusterkit import FullBatch
    >>> batches = FullBatch().batches(5, state=None)
    >>> next(batches)
    slice(0, 5, None)
    """

    full_batch = True

    def __init__(self, kmeans_objective="qe"):
        self.kmeans_objective = kmeans_objective

    def _validate(self, X, n_clusters, composition):
        """Raises ``ValueError`` for an unknown ``kmeans_objective``."""
        if self.kmeans_objective not in ("qe", "free_energy"):
            raise ValueError(f"Unknown kmeans_objective={self.kmeans_objective!r}; expected "
                             "'qe' or 'free_energy'.")

    def batches(self, n_samples, state):
        """Yield all rows, forever (the driver's ``max_iter`` and :meth:`should_stop` end
        the run)."""
        while True:
            yield slice(0, n_samples)

    def should_stop(self, state, tol):
        """The default rule (:meth:`Schedule.should_stop`), on the k-means free energy
        instead of the quantization error if ``kmeans_objective="free_energy"``."""
        history = state.history
        if (self.kmeans_objective == "qe" or len(history) < 2
                or state.objective != QUANTIZATION_ERROR):
            return super().should_stop(state, tol)
        f_new = _kmeans_free_energy(history[-1], state)
        f_old = _kmeans_free_energy(history[-2], state)
        return abs(f_new - f_old) <= tol * abs(f_new)


def _kmeans_free_energy(entry, state):
    """The k-means free energy per unit of sample weight of a history entry, with the k-means
    variance ``sigma2 = QE / (D sum w)`` (clamped at ``sigma2_floor``; Lücke & Forster 2017);
    in a full batch the total weight is the same every step, so it cancels from the relative
    change."""
    sigma2 = max(entry["qe"] / (state.n_features * entry["weight"]), state.sigma2_floor)
    return -(math.log(state.n_clusters)
             + 0.5 * state.n_features * math.log(2 * math.pi * math.e * sigma2))
