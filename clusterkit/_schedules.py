"""Schedules: which samples each iteration works on, and when a fit stops."""
from ._base import Schedule

__all__ = ["FullBatch"]


class FullBatch(Schedule):
    """Every iteration uses all (reduced) samples; stop on the objective's relative change.

    The batch EM of the papers: iterate until ``|F_t - F_{t-1}| <= tol |F_t|`` (Hirschberger,
    Forster & Lücke, Suppl. F) or ``max_iter`` iterations.

    Notes
    -----
    Yields ``None`` ("all rows"), so no data are copied. Keeps no state.

    Examples
    --------
    >>> from clusterkit import FullBatch
    >>> batches = FullBatch().batches(5, state=None)
    >>> next(batches) is None
    True
    """

    def batches(self, n_samples, state):
        while True:
            yield None
