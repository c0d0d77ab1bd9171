"""E-steps: how samples are assigned to clusters."""
import math

import numpy as np

from ._base import Assignment, EStep
from ._kernels import _assign

__all__ = ["FullEStep", "free_energy"]


def free_energy(log_norm, sample_weight, sigma2, n_clusters, n_features):
    """Truncated free energy of an isotropic, equal-weight GMM (Forster & Lücke 2018, eq. 10).

    ``F = sum_n w_n log sum_{c in K(n)} p(c, x_n)`` with
    ``log p(c, x) = -log C - (D/2) log(2 pi sigma2) - d2(x, mu_c) / (2 sigma2)``; ``log_norm``
    holds ``log sum_{c in K(n)} exp(-d2_nc / (2 sigma2))`` per sample. With ``K(n)`` all clusters
    this is the weighted log-likelihood.
    """
    w = sample_weight.astype(np.float64, copy=False)
    const = math.log(n_clusters) + 0.5 * n_features * math.log(2.0 * math.pi * sigma2)
    return float(np.dot(w, log_norm.astype(np.float64, copy=False)) - const * w.sum())


def weighted_qe(dist2, sample_weight):
    """``sum_n w_n dist2_n`` accumulated in float64."""
    return float(np.dot(sample_weight.astype(np.float64, copy=False),
                        dist2.astype(np.float64, copy=False)))


class FullEStep(EStep):
    """Exact E-step over all clusters: Lloyd's assignment, or full GMM responsibilities.

    With a hard M-step each sample is assigned to its nearest centre (the E-step of Lloyd's
    k-means); with a soft M-step the exact posterior over all ``C`` clusters of the isotropic,
    equal-weight GMM is computed (standard EM; Forster & Lücke 2018, eq. 2 with ``C' = C``).

    Notes
    -----
    Cost per call: ``N C`` distance evaluations. Memory: hard, ``O(N)`` outputs plus one
    ``256 x C`` tile per thread; soft, the ``N x C`` responsibilities the M-step consumes.
    Keeps no state between calls. On the first soft E-step, when no variance is known yet, the
    variance is set from the distances just computed (vc-GMM eq. 12) before the
    responsibilities are formed.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer, FullEStep
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> km = Clusterer(2, seed=X[[0, 2]], estep=FullEStep()).fit(X)
    >>> km.labels_
    array([0, 0, 1, 1], dtype=int32)
    """

    def assign(self, X, sample_weight, centers, state):
        n_samples = X.shape[0]
        labels = np.empty(n_samples, dtype=np.int32)
        dist2 = np.empty(n_samples, dtype=X.dtype)
        if not state.soft:
            state.count("estep", _assign.assign_full(X, centers, labels, dist2, state.n_threads))
            qe = weighted_qe(dist2, sample_weight)
            return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe)

        resp = np.empty((n_samples, centers.shape[0]), dtype=X.dtype)
        log_norm = np.empty(n_samples, dtype=X.dtype)
        sigma2 = -1.0 if state.sigma2 is None else state.sigma2
        state.count("estep", _assign.responsibilities_full(
            X, centers, sigma2, resp, labels, dist2, log_norm, state.n_threads))
        if state.sigma2 is None:  # resp holds distances: set eq. 12's variance, then normalise
            state.init_sigma2(dist2, sample_weight)
            _assign.responsibilities_truncated(resp, state.sigma2, resp, log_norm, state.n_threads)
        objective = free_energy(log_norm, sample_weight, state.sigma2, centers.shape[0],
                                X.shape[1])
        return Assignment(labels=labels, dist2=dist2, objective=objective,
                          qe=weighted_qe(dist2, sample_weight), resp=resp)
