"""The isotropic Gaussian mixture: its free energy, and the methods of a fitted mixture.

clusterkit's Gaussian mixtures have equal weights ``1/C`` and one shared variance ``sigma2``
(Forster & Lücke 2018): ``log p(c, x) = -log C - (D/2) log(2 pi sigma2) - ||x - mu_c||^2 /
(2 sigma2)``. The E-steps report the (truncated) free energy below; a fitted
:class:`~clusterkit.Clusterer` whose M-step maximises it gets the probabilistic methods of
:class:`GaussianMixtureMethods`.
"""
import math

import numpy as np
from scipy.special import logsumexp

from .._engine.state import free_energy, log_joint_offset  # noqa: F401
from . import lazy as _lazy
from .available import available_if

__all__ = ["GaussianMixtureMethods", "free_energy", "log_joint_offset"]


def _is_gmm(estimator):
    """Whether the estimator is a Gaussian mixture (its M-step maximises the free energy);
    otherwise the ``AttributeError`` says how to get one."""
    if estimator._is_mixture():
        return True
    raise AttributeError("This Clusterer is not a Gaussian mixture, so it has no "
                         "probabilities; fit with mstep='soft' (or presets.gmm, var_gmm_s, "
                         "vc_gmm) for predict_proba and score_samples.")


class GaussianMixtureMethods:
    """``predict_proba``, ``score_samples``, ``bic`` and ``aic`` of a fitted isotropic
    Gaussian mixture (available only when the estimator is one, see ``_is_mixture``).

    Mixed into :class:`~clusterkit.Clusterer`, whose ``_check_test_data`` and
    ``_dist2_blocks`` it uses.
    """

    def _scaled_dist2_blocks(self, X):
        """Row blocks of the log-joint ``log p(c, x)`` of the fitted mixture for validated
        ``X``, in float64, as ``(rows, best, shifted)``:
        ``-d2(x, mu_c) / (2 sigma2)`` is ``best + shifted`` with ``best`` its row maximum, up
        to the constant ``log C + (D/2) log(2 pi sigma2)``.

        The shift keeps the nearest centre at 0 even where the scaled distances overflow to
        ``-inf`` (tiny variances, far samples), so that probabilities never become ``nan``.
        """
        for rows, d2 in self._dist2_blocks(X):
            d2 = d2.astype(np.float64)
            nearest = d2.min(axis=1, keepdims=True)
            with np.errstate(over="ignore"):
                best = nearest[:, 0] / (-2.0 * self.sigma2_)
                shifted = (d2 - nearest) / (-2.0 * self.sigma2_)
            yield rows, best, shifted

    @available_if(_is_gmm)
    @_lazy.per_row_chunk(None, per_cluster=True)
    def predict_proba(self, X):
        """Posterior probability of every cluster for each sample (soft M-steps only).

        The exact responsibilities of the fitted isotropic Gaussian mixture (equal weights
        ``1/C``, shared variance ``sigma2_``) over all clusters, whatever E-step the fit used.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            A dask array gives a dask array, computed chunk by chunk.

        Returns
        -------
        proba : ndarray or dask array of shape (n_samples, n_clusters)
            Rows sum to one; the most probable cluster is the nearest centre.
        """
        X = self._check_test_data(X)
        proba = np.empty((X.shape[0], self.cluster_centers_.shape[0]), dtype=X.dtype)
        for rows, _, shifted in self._scaled_dist2_blocks(X):
            proba[rows] = np.exp(shifted - logsumexp(shifted, axis=1, keepdims=True))
        return proba

    @available_if(_is_gmm)
    @_lazy.per_row_chunk(np.float64)
    def score_samples(self, X):
        """Log-likelihood of each sample under the fitted mixture (soft M-steps only).

        ``log p(x) = log sum_c (1/C) N(x; mu_c, sigma2_ I)`` over all clusters.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            As for :meth:`predict_proba`.

        Returns
        -------
        log_likelihood : ndarray or dask array of shape (n_samples,), dtype=float64
        """
        X = self._check_test_data(X)
        const = log_joint_offset(self.sigma2_, *self.cluster_centers_.shape)
        log_likelihood = np.empty(X.shape[0])
        for rows, best, shifted in self._scaled_dist2_blocks(X):
            log_likelihood[rows] = best + logsumexp(shifted, axis=1) - const
        return log_likelihood

    def _n_parameters(self):
        """Free parameters of the isotropic mixture: the means and one shared variance (the
        mixing weights are fixed at ``1/C``)."""
        return self.cluster_centers_.size + 1

    def _deviance(self, X):
        """``-2 log L`` of the fitted mixture on ``X``, and ``X``'s number of samples: what
        both information criteria penalise."""
        log_likelihood = self.score_samples(X)
        return -2.0 * float(log_likelihood.sum()), log_likelihood.shape[0]

    @available_if(_is_gmm)
    def bic(self, X):
        """Bayesian information criterion of the fitted mixture on ``X`` (lower is better).

        ``-2 log L + p log N`` with ``p = C D + 1`` free parameters (``C`` means, one shared
        variance; the weights are fixed), as ``GaussianMixture.bic``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        bic : float
        """
        deviance, n_samples = self._deviance(X)
        return deviance + self._n_parameters() * math.log(n_samples)

    @available_if(_is_gmm)
    def aic(self, X):
        """Akaike information criterion of the fitted mixture on ``X`` (lower is better).

        ``-2 log L + 2 p`` with ``p = C D + 1`` free parameters, as ``GaussianMixture.aic``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            As for :meth:`bic`: the data whose log-likelihood ``L`` is penalised.

        Returns
        -------
        aic : float
        """
        return self._deviance(X)[0] + 2.0 * self._n_parameters()
