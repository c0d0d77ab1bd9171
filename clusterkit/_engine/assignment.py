"""What the strategies hand each other: the objective a fit optimises (:class:`Objective`)
and an E-step's result (:class:`Assignment`). The contracts that use them are in
:mod:`clusterkit._engine.contracts`."""
from dataclasses import dataclass
from typing import Optional

import numpy as np

__all__ = ["Assignment", "Objective", "QUANTIZATION_ERROR", "FREE_ENERGY"]


@dataclass(frozen=True)
class Objective:
    """What a fit optimises: its name and its direction.

    Declared by the M-step (:attr:`MStep.objective`); the driver reads it to keep the best of
    ``n_init`` runs and the stopping rule to interpret the history.

    Attributes
    ----------
    name : str
        Printed in verbose output and documentation, e.g. ``"quantization error"``.
    maximize : bool
        ``True`` if larger is better (a free energy), ``False`` if smaller is better.

    Examples
    --------
    >>> from clusterkit import Objective
    >>> Objective("SLK bound", maximize=False).better(1.0, 2.0)
    True
    """

    name: str
    maximize: bool

    def better(self, a, b):
        """Whether objective value ``a`` is strictly better than ``b``."""
        return a > b if self.maximize else a < b


#: The weighted quantization error ``sum_n w_n min_c ||x_n - mu_c||^2`` (k-means), minimised.
QUANTIZATION_ERROR = Objective("quantization error", maximize=False)
#: The (truncated) free energy ``sum_n w_n log sum_{c in K(n)} p(c, x_n)`` of the isotropic
#: GMM (Forster & Lücke 2018, eq. 10), maximised; the log-likelihood when ``K(n)`` is all.
FREE_ENERGY = Objective("free energy", maximize=True)


@dataclass
class Assignment:
    """What an E-step hands to the M-step.

    All arrays refer to the rows of the batch, in batch order.

    Attributes
    ----------
    labels : ndarray of shape (n_batch,), dtype=int32
        The best (nearest) cluster of each sample.
    dist2 : ndarray of shape (n_batch,)
        Exact squared distance of each sample to its best cluster (clamped at zero).
    objective : float
        The fit's objective (:attr:`MStep.objective`) on the batch for the parameters the
        M-step is about to replace: the weighted quantization error ``sum_n w_n dist2_n``
        for hard fits, the (truncated) free energy
        ``sum_n w_n log sum_{c in K(n)} p(c, x_n)`` for soft ones.
    qe : float
        Weighted quantization error ``sum_n w_n dist2_n`` of the batch.
    winners : ndarray of shape (n_batch, n_winners), dtype=int32, or None
        The clusters each sample's responsibilities refer to; ``None`` means all clusters in
        index order (``resp`` is then ``(n_batch, n_clusters)``).
    resp : ndarray of shape (n_batch, n_winners) or (n_batch, n_clusters), or None
        Responsibilities (rows sum to one); ``None`` for a hard assignment.
    centers_sum, weight_in_clusters : ndarray of shape (n_clusters, n_features) and \
            (n_clusters,), or None
        The hard M-step's statistics ``sum_{n in c} w_n x_n`` and ``sum_{n in c} w_n``, when
        the M-step asked for them (``state.config.fuse_sums``) and the E-step summed them in its own
        pass over the data (bit-identical to what the M-step would compute); ``None``
        otherwise.
    kernel_sigma2 : float or None
        The squared bandwidth ``sigma^2`` of the kernel ``exp(-d2 / (2 sigma^2))`` that soft
        assignments derived from a kernel were computed with (Laplacian K-modes), for the
        M-step that reads them; ``None`` otherwise.
    """

    labels: np.ndarray
    dist2: np.ndarray
    objective: float
    qe: float
    winners: Optional[np.ndarray] = None
    resp: Optional[np.ndarray] = None
    centers_sum: Optional[np.ndarray] = None
    weight_in_clusters: Optional[np.ndarray] = None
    kernel_sigma2: Optional[float] = None
