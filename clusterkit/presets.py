"""Ready-made configurations of the papers' algorithms.

Every preset takes ``n_clusters`` first, then its own keywords, and passes any other keyword
(``random_state``, ``n_threads``, ``max_iter``, ``tol``, ``seed``, ``compute_labels``,
``verbose``, ...) on to :class:`~clusterkit.Clusterer`, which it returns unfitted.

=====================  ==============================  =========================================
preset                 E-step / M-step                 distance evaluations per iteration
=====================  ==============================  =========================================
:func:`lloyd`          exact / hard                    ``N C``
:func:`gmm`            exact / soft                    ``N C``
:func:`var_kmeans_x`   partial, exhaustive ``G_c``     ``N (G + n_explore) + C^2``
:func:`var_kmeans_s`   partial, estimated ``G_c``      ``N (G + n_explore)``
:func:`var_gmm_x`      partial (``C' = G``), exhaust.  ``<= N (G^2 + n_explore) + C^2``
:func:`var_gmm_s`      partial (``C' = G``), estim.    ``<= N (G^2 + n_explore)``
=====================  ==============================  =========================================

The complexities are those of Forster & Lücke (2018), Table 1: the variational algorithms
replace the ``O(N C D)`` of an exact E-step by ``O(N G D)`` (var-k-means) or
``O(N G^2 D)`` (var-GMM), plus ``O(C^2 D)`` for exhaustive neighbourhoods; bookkeeping is
``O(N C' G)``.
"""
from ._clusterer import Clusterer
from ._estep import FullEStep, PartialEStep
from ._mstep import HardMStep, SoftMStep
from ._seeding import AFKMC2, KMeansPlusPlus

__all__ = ["lloyd", "gmm", "var_kmeans_x", "var_kmeans_s", "var_gmm_x", "var_gmm_s"]


def _default_seed():
    """The seeding of the variational presets: AFK-MC² with chain length 2, as in both papers."""
    return AFKMC2(chain_length=2)


def lloyd(n_clusters, **kwargs):
    """k-means: k-means++ seeding and Lloyd iterations.

    Parameters
    ----------
    n_clusters : int
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding).

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N C`` distance evaluations.

    Examples
    --------
    >>> from clusterkit.presets import lloyd
    >>> lloyd(10, random_state=0).estep
    FullEStep()
    """
    kwargs.setdefault("seed", KMeansPlusPlus())
    return Clusterer(n_clusters, estep=FullEStep(), mstep=HardMStep(), **kwargs)


def gmm(n_clusters, **kwargs):
    """Standard EM for the isotropic, equal-weight GMM with one shared variance.

    Parameters
    ----------
    n_clusters : int
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer`.

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N C`` distance evaluations, ``N x C``
        responsibilities in memory.

    Examples
    --------
    >>> from clusterkit.presets import gmm
    >>> gmm(10).mstep
    SoftMStep()
    """
    kwargs.setdefault("seed", KMeansPlusPlus())
    return Clusterer(n_clusters, estep=FullEStep(), mstep=SoftMStep(), **kwargs)


def _variational(n_clusters, neighbourhoods, mstep, G, n_explore, n_init_esteps, kwargs):
    kwargs.setdefault("seed", _default_seed())
    estep = PartialEStep(G=G, neighbourhoods=neighbourhoods, n_explore=n_explore,
                         n_init_esteps=n_init_esteps)
    return Clusterer(n_clusters, estep=estep, mstep=mstep, **kwargs)


def var_kmeans_x(n_clusters, G=5, n_explore=1, n_init_esteps=0, **kwargs):
    """var-k-means-X: partial E-step with exact neighbourhoods, hard M-step (Forster & Lücke
    2018, Alg. 1 with ``C' = 1``).

    Parameters
    ----------
    n_clusters : int
    G : int, default=5
        Neighbourhood size (including the cluster itself).
    n_explore : int, default=1
        Random exploratory clusters per sample and iteration (the paper's "+1").
    n_init_esteps : int, default=0
        E-steps before the first M-step.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces ``AFKMC2(chain_length=2)``).

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N (G + n_explore) + C^2`` distance evaluations,
        ``O(C^2 D + N G D)`` time.

    Examples
    --------
    >>> from clusterkit.presets import var_kmeans_x
    >>> var_kmeans_x(100, G=3, random_state=0).estep.neighbourhoods
    'exhaustive'
    """
    return _variational(n_clusters, "exhaustive", HardMStep(), G, n_explore, n_init_esteps,
                        kwargs)


def var_kmeans_s(n_clusters, G=5, n_explore=1, n_init_esteps=0, **kwargs):
    """var-k-means-S: partial E-step with estimated neighbourhoods, hard M-step (Forster &
    Lücke 2018, Alg. 2 with ``C' = 1``); sublinear in ``C`` per iteration.

    Parameters
    ----------
    n_clusters : int
    G : int, default=5
    n_explore : int, default=1
    n_init_esteps : int, default=0
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer`.

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N (G + n_explore)`` distance evaluations,
        ``O(N G D)`` time, independent of ``C``.

    Examples
    --------
    >>> from clusterkit.presets import var_kmeans_s
    >>> var_kmeans_s(100, G=3).estep.G
    3
    """
    return _variational(n_clusters, "estimated", HardMStep(), G, n_explore, n_init_esteps,
                        kwargs)


def var_gmm_x(n_clusters, G=5, n_explore=1, n_init_esteps=0, **kwargs):
    """var-GMM-X: partial E-step with exact neighbourhoods and ``C' = G`` winners, soft
    M-step (Forster & Lücke 2018, Alg. 1).

    Parameters
    ----------
    n_clusters : int
    G : int, default=5
    n_explore : int, default=1
    n_init_esteps : int, default=0
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer`.

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: at most ``N (G^2 + n_explore) + C^2`` distance
        evaluations, ``O(C^2 D + N G^2 D)`` time.

    Examples
    --------
    >>> from clusterkit.presets import var_gmm_x
    >>> var_gmm_x(100).mstep
    SoftMStep()
    """
    return _variational(n_clusters, "exhaustive", SoftMStep(), G, n_explore, n_init_esteps,
                        kwargs)


def var_gmm_s(n_clusters, G=5, n_explore=1, n_init_esteps=0, **kwargs):
    """var-GMM-S: partial E-step with estimated neighbourhoods and ``C' = G`` winners, soft
    M-step (Forster & Lücke 2018, Alg. 2); sublinear in ``C`` per iteration.

    Parameters
    ----------
    n_clusters : int
    G : int, default=5
    n_explore : int, default=1
    n_init_esteps : int, default=0
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer`.

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: at most ``N (G^2 + n_explore)`` distance evaluations
        (fewer when neighbourhoods overlap), ``O(N G^2 D)`` time.

    Examples
    --------
    >>> from clusterkit.presets import var_gmm_s
    >>> var_gmm_s(100, G=4).estep.neighbourhoods
    'estimated'
    """
    return _variational(n_clusters, "estimated", SoftMStep(), G, n_explore, n_init_esteps,
                        kwargs)
