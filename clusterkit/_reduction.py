"""Data reducers: replace the data by a smaller weighted set before clustering."""
from ._base import DataReducer

__all__ = ["NoReduction"]


class NoReduction(DataReducer):
    """Cluster the data as they are: returns ``X`` and ``sample_weight`` unchanged.

    Notes
    -----
    No cost, no copy.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import NoReduction
    >>> X, w = np.zeros((3, 2)), np.ones(3)
    >>> Xr, wr = NoReduction().reduce(X, w, state=None)
    >>> Xr is X and wr is w
    True
    """

    def reduce(self, X, sample_weight, state):
        return X, sample_weight
