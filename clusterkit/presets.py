"""Ready-made configurations of the papers' algorithms.

Every preset takes ``n_clusters`` first, then its own keywords, and passes any other keyword
(``random_state``, ``n_threads``, ``max_iter``, ``tol``, ``seed``, ``compute_labels``,
``verbose``, ...) on to :class:`~clusterkit.Clusterer`, which it returns unfitted. The
strategies that define a preset's algorithm (its ``estep``, ``mstep`` and, for the coreset
presets, ``reduce``) cannot be passed: that raises a ``TypeError``. So does a keyword neither
the preset nor ``Clusterer`` takes; it names the closest keyword (``coresetsize`` ->
``coreset_size``), or for scikit-learn's names (``init``, ``algorithm``, ...) what to pass
instead.

.. presets-table

The complexities are those of Forster & Lücke (2018), Table 1: the variational algorithms
replace the ``O(N C D)`` of an exact E-step by ``O(N G D)`` (var-k-means) or
``O(N G^2 D)`` (var-GMM), plus ``O(C^2 D)`` for exhaustive neighbourhoods; bookkeeping is
``O(N C' G)``.
The coreset presets (Hirschberger, Forster & Lücke, Table 1) replace ``N`` by the coreset size
``N'`` after one ``O(N D)`` pass that builds the :class:`~clusterkit.LWCS`; ``labels_`` and
``inertia_`` still refer to the full training data (one more exact pass, ``N C`` evaluations
in ``cost_["labels"]``, skipped with ``compute_labels=False``).

Seeding and start, chosen for a fit as good as scikit-learn's at a fraction of its time
(measured with ``benchmarks/bench_defaults.py``; the numbers are in ``benchmarks/RESULTS.md``
and the documentation's page on the defaults), not as in the papers:

* the four full-data variational presets seed with greedy k-means++ with 15 candidates per
  step, on all the data when it has at most 16 features (pruning makes it cheap there, and
  it labels every sample with its nearest seed), on a sample of ``max(20 C, 10000)`` rows up
  to 64 features (:class:`~clusterkit.ByDimension`, :class:`~clusterkit.SampledSeeder`),
  and with AFK-MC² (chains of 200) on all the data above, where greedy seeding even of the
  sample costs more than the rest of the fit for little less error; from 1,000 clusters on
  as the exact presets, with k-means|| where the data have 32 rows per cluster
  (``var_kmeans_s`` on MNIST with ``C = 2048``: 29 s instead of 33 s, 0.5 % lower error;
  on 128-feature embeddings 1.9 % lower);
* the full-data exact, mini-batch and mixture presets (:func:`lloyd`, :func:`elkan`,
  :func:`minibatch`, :func:`nmbatch`, :func:`gmm`, :func:`spherical_kmeans`) seed with
  greedy k-means++ (``2 + ln C`` candidates per step, as scikit-learn's ``KMeans``) on as
  many rows as their schedule says a seeding is worth, and with k-means|| from 1,000
  clusters on where the data have 32 rows per cluster
  (:meth:`~clusterkit.Schedule.seeding_rows`, ``SampledSeeder(ByClusters(),
  size="schedule", float32=True)``): full batches on ``max(8192, r C)`` rows (``r = 64``
  up to 32 features, ``64 (32 / D)^1.5`` above, 8 from 128 features on, 32 where
  k-means|| seeds), mini-batches on ``max(3 b, r C / 4)`` (at least ``3 C``), nested
  mini-batches on a prefix of their order of at least their first batch and the full
  batches' rows; all rows when the data have no more or
  ``N C D <= 2^27``. On all rows of large data the seeding took most of the fit (at
  300,000 x 32 and ``C = 1024``, 45-50 s of Lloyd's 55-60 s); on 64 rows per centre Lloyd's
  iterations end within 0.3 % of that there, within 2 % on a mixture with very small
  clusters, and on 8 within 0.25 % on MNIST and 384-feature embeddings
  (``seed=KMeansPlusPlus()`` seeds on all rows). :func:`sbe` seeds on all the data; for very
  large ``N C D`` :func:`large_scale` seeds with AFK-MC² and a pilot fit, or pass
  ``seed=AFKMC2()``;
* the coreset presets seed with greedy k-means++ on the coreset up to 16 features, on a
  sample of the coreset up to 64, and with AFK-MC² (chains of 2) above, where greedy
  seeding would cost many times the rest of the fit;
* every variational E-step starts ``K(n)`` at the sample's nearest seeds
  (``init="auto"``), not at random.

The papers' settings: ``seed=AFKMC2(chain_length=2, n_candidates=1), init="random"`` (plain
AFK-MC²; :class:`~clusterkit.AFKMC2` is greedy by default). Above 64 features the presets
seed with plain AFK-MC², as measured for the defaults.

Which preset for which job: :data:`GUIDE` (printed by ``clusterkit presets``; the
documentation's page "Choosing a preset" adds measured times and errors).
"""
import functools
import inspect

from ._engine.constraints import check_value
from ._estimator import guide as _registry
from ._estimator.clusterer import Clusterer
from ._estimator.guide import PresetGuide
from ._estimator.registry import auto_seeder, keywords, unknown_keyword
from .estep.balanced import BalancedEStep
from .estep.bounded import BoundedEStep
from .estep.exact import ElkanEStep, FullEStep
from .estep.variational import PartialEStep
from .estep.yinyang import YinyangEStep
from .mstep.centres import HardMStep, SoftMStep, SphericalMStep
from .reduction.lwcs import LWCS, default_coreset_size
from .refine.breathing import Breathing
from .schedules.nested import NestedDoubling
from .schedules.schedules import FullBatch, MiniBatch, SBEDecay
from .seeding.afkmc2 import AFKMC2
from .seeding.composite import ByClusters, ByDimension, SampledSeeder
from .seeding.pilot import FittedSeeder
from .seeding.seeders import KMeansPlusPlus
from .slk.laplacian import LaplacianEStep, ModeMStep

if __doc__:  # the table of the notes, from the presets' registry (no docstring under -OO)
    __doc__ = __doc__.replace(".. presets-table", _registry.preset_table())

#: The names of the presets, in the order of the table above (:data:`GUIDE`'s).
PRESETS = _registry.PRESETS

__all__ = list(PRESETS) + ["default_coreset_size", "GUIDE", "PresetGuide"]

#: Which preset for which job: every preset's :class:`PresetGuide` (what it is for, its
#: model, its cost per iteration, its memory), in the order of :data:`PRESETS`.
GUIDE = _registry.GUIDE

#: Every preset's function, by name (filled by :func:`_preset`).
_FUNCTIONS = {}


def build_preset(name, n_clusters, **kwargs):
    """``<name>(n_clusters, **kwargs)`` for a preset's name (the command line and
    :func:`~clusterkit.ablate` take presets by name); ``ValueError`` naming the presets, and
    the closest ones, for an unknown ``name``."""
    if name not in PRESETS:
        raise ValueError(f"Unknown preset {name!r}; {_registry.unknown_preset(name)}")
    return _FUNCTIONS[name](n_clusters, **kwargs)


def _preset(function):
    """The preset of the registry's record named as ``function``, which answers a keyword
    neither it nor :class:`~clusterkit.Clusterer` takes with a ``TypeError`` naming the
    closest of those keywords (or, for scikit-learn's names, what to pass instead), before it
    builds anything."""
    if function.__name__ not in PRESETS:
        raise NameError(f"{function.__name__} has no record in the presets' registry")
    own = [name for name, parameter in inspect.signature(function).parameters.items()
           if parameter.kind is not parameter.VAR_KEYWORD]
    known = list(dict.fromkeys(own + list(keywords(Clusterer))))

    @functools.wraps(function)
    def preset(*args, **kwargs):
        for key in kwargs:
            if key not in known:
                raise unknown_keyword(f"presets.{function.__name__}", key, known)
        return function(*args, **kwargs)
    _FUNCTIONS[function.__name__] = preset
    return preset


def _greedy_where_affordable(n_local_trials, chain_length):
    """Greedy k-means++ on all the data up to 16 features, on a sample up to 64, AFK-MC²
    above (see the module notes for why and the measurements)."""
    return ByDimension(low=KMeansPlusPlus(n_local_trials=n_local_trials),
                       high=ByDimension(low=SampledSeeder(KMeansPlusPlus(n_local_trials)),
                                        high=AFKMC2(chain_length=chain_length,
                                                    n_candidates=1),
                                        max_features=64))


def _variational_seed(n_local_trials, chain_length):
    """The full-data variational seeding: :func:`_greedy_where_affordable`, and from 1,000
    clusters on ``Clusterer``'s default seeding (k-means|| where the data have 32 rows per
    cluster; see the module notes)."""
    return ByClusters(low=_greedy_where_affordable(n_local_trials, chain_length),
                      high=auto_seeder())


def _scheduled_seed():
    """The seeding of the exact, mini-batch and mixture presets: greedy k-means++ on as many
    rows as the schedule says a seeding is worth (:meth:`~clusterkit.Schedule.seeding_rows`;
    see the module notes): ``Clusterer``'s default, ``seed="auto"``."""
    return auto_seeder()


def _default_seed():
    """The seeding of the full-data variational presets."""
    return _variational_seed(n_local_trials=15, chain_length=200)


def _coreset_seed(chain_length=2):
    """The seeding of the coreset presets."""
    return _greedy_where_affordable(n_local_trials=None, chain_length=chain_length)


def _coreset(preset, coreset_size):
    """``LWCS(coreset_size)``, a bad size refused at once with a message that names the
    preset's parameter (``LWCS`` would name its own, ``size``, when the fit starts)."""
    check_value(f"presets.{preset}", "coreset_size", coreset_size,
                LWCS._parameter_constraints["size"])
    return LWCS(coreset_size)


def _clusterer(n_clusters, kwargs, **strategies):
    """The preset's :class:`~clusterkit.Clusterer`: its own ``strategies`` plus the user's
    other keywords; a keyword naming one of the preset's strategies is an error (it would
    silently make a different algorithm)."""
    taken = sorted(set(strategies) & set(kwargs))
    if taken:
        raise TypeError(f"This preset sets {', '.join(taken)} itself; to choose "
                        f"{'it' if len(taken) == 1 else 'them'}, build a Clusterer directly.")
    return Clusterer(n_clusters, **strategies, **kwargs)


@_preset
def lloyd(n_clusters, **kwargs):
    """k-means: k-means++ seeding and Lloyd iterations.

    Parameters
    ----------
    n_clusters : int
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding
        on ``max(8192, r C)`` rows, ``r`` from 64 to 8 per centre as the features grow:
        :meth:`FullBatch.seeding_rows <clusterkit.FullBatch.seeding_rows>`;
        ``seed=KMeansPlusPlus()`` seeds on all of them).

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N C`` distance evaluations.

    Examples
    --------
    >>> from clusterkit.presets import lloyd
    >>> lloyd(10, random_state=0).estep
    FullEStep(prune='auto')
    """
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=FullEStep(), mstep=HardMStep())


@_preset
def elkan(n_clusters, **kwargs):
    """k-means: k-means++ seeding and Lloyd iterations with Elkan's bounded E-step.

    The same iterates as :func:`lloyd` from the same start, computing far fewer distances
    once the centres settle, for ``4 N C`` bytes of bounds (:class:`~clusterkit.ElkanEStep`).
    Where those bounds would take more than half the memory available, Yinyang's grouped
    bounds (:class:`~clusterkit.YinyangEStep`, ``4 N t`` bytes with ``t <= C / 10`` groups,
    in the same budget) take their place: the same iterates again (the rule is
    :class:`~clusterkit.BoundedEStep`'s).

    Parameters
    ----------
    n_clusters : int
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding
        on ``max(8192, r C)`` rows, ``r`` from 64 to 8 per centre as the features grow:
        :meth:`FullBatch.seeding_rows <clusterkit.FullBatch.seeding_rows>`;
        ``seed=KMeansPlusPlus()`` seeds on all of them).

    Returns
    -------
    Clusterer
        Unfitted.

    Examples
    --------
    >>> from clusterkit.presets import elkan
    >>> elkan(10, random_state=0).estep
    BoundedEStep(max_bounds_bytes=None, n_groups='auto', prune='auto')
    """
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=BoundedEStep(), mstep=HardMStep())


@_preset
def minibatch(n_clusters, batch_size=1024, max_passes=10.0, **kwargs):
    """Mini-batch k-means (Sculley 2010): k-means++ seeding, uniform batches, running means.

    Parameters
    ----------
    n_clusters : int
    batch_size : int, default=1024
    max_passes : float, default=10.0
        Passes over the data at most; the run usually ends sooner, by the early stop on the
        smoothed batch objective (see :class:`~clusterkit.MiniBatch`).
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding
        on ``max(3 batch_size, r C)`` rows, ``r`` from 16 per centre at up to 32 features
        to 3 from 128 on: :meth:`MiniBatch.seeding_rows <clusterkit.MiniBatch.seeding_rows>`).

    Returns
    -------
    Clusterer
        Unfitted.

    Examples
    --------
    >>> from clusterkit.presets import minibatch
    >>> minibatch(10, batch_size=256).schedule  # doctest: +NORMALIZE_WHITESPACE
    MiniBatch(batch_size=256, max_passes=10.0, max_no_improvement=10, center_tol=None,
              reassignment_ratio=0.01, sampling='uniform', learning_rate='count')
    """
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=FullEStep(), mstep=HardMStep(),
                      schedule=MiniBatch(batch_size, max_passes))


@_preset
def nmbatch(n_clusters, initial_batch="auto", rho=10.0, spread="deviation", **kwargs):
    """Nested mini-batch k-means (Newling & Fleuret 2016): nested prefixes with Elkan bounds.

    Parameters
    ----------
    n_clusters : int
    initial_batch : int or "auto", default="auto"
        Rows of the first prefix; ``"auto"``: ``max(5000, 20 n_clusters)`` (see
        :class:`~clusterkit.NestedDoubling`).
    rho : float, default=10.0
        The doubling threshold (see :class:`~clusterkit.NestedDoubling`).
    spread : {"deviation", "standard_error"}, default="deviation"
        What the threshold is relative to: the cluster's deviation (the authors' code) or
        the centre's standard error (the paper's eq. 4; see
        :class:`~clusterkit.NestedDoubling`).
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding
        on a prefix of at least the first batch and a full batch's seeding rows).

    Returns
    -------
    Clusterer
        Unfitted. Ends at a fixed point of Lloyd's algorithm (or ``max_iter``).

    Examples
    --------
    >>> from clusterkit.presets import nmbatch
    >>> nmbatch(10, initial_batch=1000).schedule
    NestedDoubling(initial_batch=1000, rho=10.0, spread='deviation')
    """
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=ElkanEStep(), mstep=HardMStep(),
                      schedule=NestedDoubling(initial_batch, rho, spread))


@_preset
def sbe(n_clusters, batch_size=1000, **kwargs):
    """Stochastic backward Euler (Yin, Pham, Oberman & Osher 2018): k-means++ seeding, then
    implicit mini-batch gradient steps with a forward-looking average and a decaying step.

    Parameters
    ----------
    n_clusters : int
    batch_size : int, default=1000
        Rows per inner iteration (see :class:`~clusterkit.SBEDecay`; its other parameters
        can be set with ``set_params(schedule__decay=...)`` and so on).
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding;
        ``seed=RandomSeeder()`` starts from random samples, as in the paper).

    Returns
    -------
    Clusterer
        Unfitted. Runs the schedule's budget of outer steps (``outer_iter``, 100).

    Examples
    --------
    >>> from clusterkit.presets import sbe
    >>> sbe(3, batch_size=30).schedule  # doctest: +NORMALIZE_WHITESPACE
    SBEDecay(batch_size=30, step=None, decay=0.95, averaging=0.75, inner_iter=10,
             outer_iter=100, polish_iter=0)
    """
    kwargs.setdefault("seed", KMeansPlusPlus())
    kwargs.setdefault("max_iter", 10**9)  # the budget of outer steps ends the run
    return _clusterer(n_clusters, kwargs, estep=FullEStep(), mstep=HardMStep(),
                      schedule=SBEDecay(batch_size))


@_preset
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
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=FullEStep(), mstep=SoftMStep())


def _variational(n_clusters, neighbourhoods, mstep, G, n_explore, n_init_esteps, init,
                 kwargs):
    kwargs.setdefault("seed", _default_seed())
    estep = PartialEStep(G=G, neighbourhoods=neighbourhoods, n_explore=n_explore,
                         n_init_esteps=n_init_esteps, init=init)
    return _clusterer(n_clusters, kwargs, estep=estep, mstep=mstep)


@_preset
def var_kmeans_x(n_clusters, G=5, n_explore=1, n_init_esteps=0, init="auto", **kwargs):
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
    init : {"auto", "random", "exact"}, default="auto"
        Start of ``K(n)`` and ``G_c`` (see :class:`~clusterkit.PartialEStep`): the nearest
        seeds, or ``"random"`` as in the paper.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding).

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
                        init, kwargs)


@_preset
def var_kmeans_s(n_clusters, G=5, n_explore=1, n_init_esteps=0, init="auto", **kwargs):
    """var-k-means-S: partial E-step with estimated neighbourhoods, hard M-step (Forster &
    Lücke 2018, Alg. 2 with ``C' = 1``); sublinear in ``C`` per iteration.

    Parameters
    ----------
    n_clusters : int
    G, n_explore, n_init_esteps, init
        As for :func:`var_kmeans_x`.
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
                        init, kwargs)


@_preset
def var_gmm_x(n_clusters, G=5, n_explore=1, n_init_esteps=0, init="auto", **kwargs):
    """var-GMM-X: partial E-step with exact neighbourhoods and ``C' = G`` winners, soft
    M-step (Forster & Lücke 2018, Alg. 1).

    Parameters
    ----------
    n_clusters : int
    G, n_explore, n_init_esteps, init
        As for :func:`var_kmeans_x`.
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
                        init, kwargs)


@_preset
def var_gmm_s(n_clusters, G=5, n_explore=1, n_init_esteps=0, init="auto", **kwargs):
    """var-GMM-S: partial E-step with estimated neighbourhoods and ``C' = G`` winners, soft
    M-step (Forster & Lücke 2018, Alg. 2); sublinear in ``C`` per iteration.

    Parameters
    ----------
    n_clusters : int
    G, n_explore, n_init_esteps, init
        As for :func:`var_kmeans_x`.
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
                        init, kwargs)


@_preset
def lwcs_lloyd(n_clusters, coreset_size=None, **kwargs):
    """k-means on a lightweight coreset: LWCS, k-means++ seeding on it, Lloyd iterations.

    The "LWCS" baseline of Hirschberger, Forster & Lücke (Table 1; Bachem, Lucic & Krause
    2018): :class:`~clusterkit.LWCS` of ``coreset_size`` draws, then weighted k-means on it.

    Parameters
    ----------
    n_clusters : int
    coreset_size : int or None, default=None
        Draws of the coreset ``N'`` (``>= n_clusters``; ``>= n_samples`` fits the full data).
        ``None``: ``max(2**15, 32 * n_clusters)`` (:func:`default_coreset_size`).
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the default seeding,
        see the module notes; the paper seeds this baseline with ``AFKMC2(chain_length=2, n_candidates=1)``;
        ``tol`` is ``1e-3`` unless given, see the notes).

    Returns
    -------
    Clusterer
        Unfitted. Cost: ``N`` distance evaluations once for the coreset, then ``N' C`` per
        iteration (``N'`` the number of distinct draws).

    Notes
    -----
    The fit stops when the quantization error of the coreset changes by at most ``1e-3`` of
    itself, not ``1e-4`` as :class:`~clusterkit.Clusterer` by default: the coreset's own error
    against the full data is several percent, far above what the iterations between the two
    thresholds still gain on the full data, while they can take half of the fit (the
    documentation's page on the defaults has the measurements). Pass ``tol=1e-4`` for the
    paper's threshold.

    Examples
    --------
    >>> from clusterkit.presets import lwcs_lloyd
    >>> lwcs_lloyd(10, coreset_size=1024).reduce
    LWCS(size=1024)
    """
    return _lwcs_lloyd(n_clusters, coreset_size, kwargs, "lwcs_lloyd")


def _lwcs_lloyd(n_clusters, coreset_size, kwargs, preset):
    """:func:`lwcs_lloyd` for the preset ``preset`` (named by a bad ``coreset_size``)."""
    kwargs.setdefault("seed", _coreset_seed())
    kwargs.setdefault("tol", 1e-3)
    return _clusterer(n_clusters, kwargs, reduce=_coreset(preset, coreset_size),
                      estep=FullEStep(), mstep=HardMStep())


@_preset
def vc_gmm(n_clusters, G=5, coreset_size=None, chain_length=2, n_explore=1, n_init_esteps=0,
           init="auto", **kwargs):
    """vc-GMM: var-GMM-S on a lightweight coreset (Hirschberger, Forster & Lücke, Alg. 1).

    :class:`~clusterkit.LWCS` of ``coreset_size`` draws, seeding on the coreset (greedy
    k-means++, on a sample of the coreset above 16 features, :class:`~clusterkit.AFKMC2`
    above 64; the paper uses AFK-MC² throughout), then the partial E-step with estimated
    neighbourhoods and ``C' = G`` winners and the weighted soft M-step (eq. 9), until the
    relative change of the merged free energy (eq. 10, the coreset-weighted truncated free
    energy) is at most ``tol`` (``1e-4`` by default, as in the paper's Suppl. F). The first
    E-step sets the variance by eq. 12.

    Parameters
    ----------
    n_clusters : int
    G : int, default=5
        Neighbourhood size, also the number of winners ``C'`` per sample.
    coreset_size : int or None, default=None
        Draws of the coreset ``N'`` (the paper uses ``2^12`` to ``2^16``). ``None``:
        ``max(2**15, 32 * n_clusters)`` (:func:`default_coreset_size`), so that many
        clusters still get enough samples each.
    chain_length : int, default=2
        Markov chain length of the AFK-MC² seeding, used on data with more than 64 features
        (the paper's ``m = 2``; ``20`` for RNA).
    n_explore : int, default=1
        Random exploratory clusters per sample and iteration (the paper's "+1"); ``0`` gives
        the paper's plain ``G`` settings.
    n_init_esteps : int, default=0
        E-steps before the first M-step; they move the random ``K(n)`` towards each sample's
        nearest clusters before eq. 12 sets the variance. The paper found them favourable on
        RNA only (Suppl. F: two for ``G = 5``, four for ``G = 3+1``).
    init : {"auto", "random", "exact"}, default="auto"
        Start of ``K(n)`` and ``G_c`` (see :class:`~clusterkit.PartialEStep`): the ``G``
        nearest seeds of each coreset point, or ``"random"`` as in the paper.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the default seeding,
        and ``chain_length`` is then unused).

    Returns
    -------
    Clusterer
        Unfitted. Cost: ``N`` distance evaluations once for the coreset; the seeding on the
        coreset, at most ``N' C L`` for greedy k-means++ with ``L`` candidates per step (far
        fewer with few features, where its pruning skips most) or ``N' + m C (C-1)/2`` for
        AFK-MC²; then at most ``N' (G^2 + n_explore)`` per iteration (``O(N' G^2 D)`` time).

    See Also
    --------
    var_gmm_s : the same iterations on the full data.
    lwcs_lloyd : k-means on the same coreset.

    Notes
    -----
    A hard M-step in the same composition gives coreset var-k-means, e.g. the design's
    ``Clusterer(seed=AFKMC2(), reduce=LWCS(2**15), estep=PartialEStep(G=5))``.

    Defaults that differ from the paper, for a lower error at little cost (see the module
    notes): greedy k-means++ seeds on the coreset or a sample of it for data with at most 64
    features, AFK-MC² only above, and ``K(n)`` started at the nearest seeds. The paper's
    setting is ``vc_gmm(C, seed=AFKMC2(chain_length=2, n_candidates=1), init="random")``.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit.datasets import make_birch_grid
    >>> from clusterkit.presets import vc_gmm
    >>> X, _, _ = make_birch_grid(n_side=5, random_state=0)
    >>> gmm = vc_gmm(25, G=3, coreset_size=1000, random_state=0).fit(X)
    >>> gmm.labels_.shape, gmm.cost_["reduction"]
    ((2500,), 2500)
    >>> objectives = [h["objective"] for h in gmm.history_]
    >>> bool(np.all(np.diff(objectives) >= -1e-9 * abs(objectives[-1])))
    True
    """
    kwargs.setdefault("seed", _coreset_seed(chain_length))
    estep = PartialEStep(G=G, neighbourhoods="estimated", n_explore=n_explore,
                         n_init_esteps=n_init_esteps, init=init)
    return _clusterer(n_clusters, kwargs, reduce=_coreset("vc_gmm", coreset_size), estep=estep,
                      mstep=SoftMStep())



@_preset
def best_quality(n_clusters, budget=0.75, time_budget=None, max_rounds=None, m=None,
                 polish_tol=None, coreset_size=None, **kwargs):
    """k-means for the lowest error: a refined coreset fit as the start, then Lloyd's
    iterations and breathing rounds on all the data, for a stated budget.

    The seeding is a pilot fit (:class:`~clusterkit.FittedSeeder`): :func:`lwcs_lloyd` with
    :class:`~clusterkit.Breathing` until no round helps, cheap because it runs on the coreset.
    From its centres Lloyd's iterations (Yinyang's bounded E-step, the same iterates) run on
    all the data, then breathing rounds on all the data until the budget is spent.
    Breathing (after Fritzke 2020) moves the least useful centres to where the error is
    largest and keeps what lowers it, so the fit leaves the local minima in which seeding
    and Lloyd alone stay.

    Parameters
    ----------
    n_clusters : int
    budget : float or None, default=0.75
        The rounds' distance evaluations, at most, as a multiple of the fit's before them
        (the pilot's and the first Lloyd iterations': fewer than scikit-learn
        ``KMeans(n_init=1)``'s, see the Notes); counted, so the same on every machine. The
        rounds use all of it: a larger budget runs the same rounds and more, and never ends
        at a higher error. ``None``: no such limit.
    time_budget : float or None, default=None
        The rounds' seconds, at most (a wall-clock limit: a slower machine may end earlier,
        see :class:`~clusterkit.Breathing`'s notes on reproducibility).
        ``best_quality(C, budget=None, time_budget=T)`` keeps lowering the error for ``T``
        seconds.
    max_rounds : int or None, default=None
        Most breathing rounds on all the data (``None``: the budgets decide).
    m : int or None, default=None
        Centres the first round moves (``None``: ``max(5, n_clusters // 10)``).
    polish_tol : float or None, default=None
        After the rounds, iterate the kept centres until the objective changes by at most
        this (:class:`~clusterkit.Breathing`'s ``polish_tol``; ``None``: no polish).
    coreset_size : int or None, default=None
        Draws of the pilot's coreset (``None``: :func:`default_coreset_size`).
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the pilot fit).

    Returns
    -------
    Clusterer
        Unfitted. Cost: the pilot's (on the coreset), then at most ``N C`` per iteration
        (the bounds skip most), plus ``N C`` per breathing round (``cost_["refinement"]``),
        the rounds together at most ``budget`` times the rest.

    Notes
    -----
    The defaults, measured with ``benchmarks/bench_quality.py`` (the quality page): the fit
    before the rounds costs fewer distance evaluations than scikit-learn's
    ``KMeans(n_init=1)`` (greedy k-means++ then Lloyd to convergence, ``(2 + ln C + n_iter)
    N C``) and takes a tenth to a third of its time; with ``budget=0.75`` the whole fit took
    0.11-1.83 times scikit-learn's time on the page's data sets and ended at or below
    the median error of ``KMeans(n_init=10)`` on each. The rounds spend the whole budget:
    when a cycle of rounds has brought ``m`` down to zero, the next starts again with drawn
    moves (:class:`~clusterkit.Breathing`), so a larger budget, or ``budget=None`` with a
    ``time_budget``, keeps lowering the error (on the quality page's 500-Gaussian mixture
    -1.69 % of scikit-learn's error at the default, -3.08 % at one scikit-learn fit's time,
    -5.40 % at four). Every round that lowers the error is kept (``tol=0``): the gains per
    round on all the data are 0.005-0.3 %, which a relative tolerance of 1e-4 rejected.
    Rounds that move ``C / 10`` centres gained more per second than five on the Gaussian
    mixtures (five moved centres were rejected in every round on the 200-Gaussian one);
    where they are rejected (cod_rna), a rejected round halves the centres moved while that
    leaves five or more, then moves one fewer. Each round's iterations end at the
    Clusterer's ``tol`` (1e-4); ``polish_tol=0`` runs the final centres to their fixed point
    (MNIST: -0.31 % instead of -0.30 % of scikit-learn's error, for 1-2 % more time).

    Yinyang's E-step (:class:`~clusterkit.YinyangEStep`, memory ``N t`` bounds, ``t <= C /
    10``): each round continues the last round's bounds (``Breathing(carry=True)``), so its
    iterations compute distances only for the rows that the moved centres may win or lose,
    with the iterates of Lloyd's. The budget counts those distances, so it buys more rounds
    than with Lloyd's E-step (measured at ``budget=2``, one cycle: on cod_rna, C = 500, 17
    rounds instead of 3, 2.98 % below scikit-learn's error instead of 2.13 %; on MNIST 19
    instead of 11, -0.30 % instead of -0.23 %). Elkan's ``N C`` bounds cost more to update
    than they save at these sizes (the same rounds in 1.8 times Yinyang's time on cod_rna). Memory: Yinyang's bounds, plus the pilot's coreset. The
    documentation's page on quality compares it with scikit-learn's ``KMeans`` with 1 and 10
    restarts, breathing k-means (``bkmeans``), FLS++ (``flspp``) and fuel's Hartigan-Wong,
    and gives its error against time on each data set.

    Examples
    --------
    >>> from clusterkit.presets import best_quality
    >>> best_quality(100).refine.get_params()["m"]
    10
    """
    pilot = _lwcs_lloyd(n_clusters, coreset_size, {"refine": Breathing()}, "best_quality")
    kwargs.setdefault("seed", FittedSeeder(pilot))
    m = max(5, n_clusters // 10) if m is None else m
    return _clusterer(n_clusters, kwargs, estep=YinyangEStep(), mstep=HardMStep(),
                      refine=Breathing(m=m, tol=0, max_rounds=max_rounds, budget=budget,
                                       time_budget=time_budget, polish_tol=polish_tol))


@_preset
def large_scale(n_clusters, G=5, chain_length=20, **kwargs):
    """k-means for large data with many clusters (embeddings, index training): var-k-means-S
    on all the data as the start, then Lloyd's iterations to polish it.

    The seeding is a pilot fit (:class:`~clusterkit.FittedSeeder`): :func:`var_kmeans_s`
    from AFK-MC² seeds with chains of ``chain_length`` (greedy k-means++ up to 64 features,
    k-means|| from 1,000 clusters on, as the variational presets seed). Its iterations
    cost ``N G D``, not ``N C D``, so it comes close to a fixed point cheaply; but a partial
    E-step stops where no sample's few candidate clusters improve, and a few exact Lloyd
    iterations then lower the error further (by about 1 % in two or three, on the embeddings of
    ``benchmarks/bench_embeddings.py``). They stop at a relative change of ``tol`` (3e-3
    unless given: the further iterations each cost a full pass and lowered the error by
    less than 0.1 % there).

    Parameters
    ----------
    n_clusters : int
    G : int, default=5
        Neighbourhood size of the pilot's partial E-step.
    chain_length : int, default=20
        AFK-MC² chain length of the pilot's seeding above 64 features, below 1,000
        clusters. The variational presets' 200 costs ``200 C^2 D / 2``: at ``C = 4096``
        most of the fit.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the pilot fit;
        ``tol`` defaults to 3e-3 here).

    Returns
    -------
    Clusterer
        Unfitted. Cost: ``N C`` for the pilot's start of ``K(n)``, ``N (G + 1)`` per pilot
        iteration, then ``N C`` per Lloyd iteration.

    Notes
    -----
    Memory: as :func:`var_kmeans_s` during the pilot, then as :func:`lloyd`.
    ``benchmarks/bench_embeddings.py`` compares it with faiss' ``Kmeans`` and
    ``SuperKMeans`` on float32 rows of 128 and 768 features with thousands of clusters.

    Examples
    --------
    >>> from clusterkit.presets import large_scale
    >>> large_scale(10).estep, large_scale(10).tol
    (FullEStep(prune='auto'), 0.003)
    """
    kwargs.setdefault("tol", 3e-3)
    pilot = var_kmeans_s(n_clusters, G=G,
                         seed=_variational_seed(n_local_trials=15,
                                                chain_length=chain_length))
    kwargs.setdefault("seed", FittedSeeder(pilot))
    return _clusterer(n_clusters, kwargs, estep=FullEStep(), mstep=HardMStep())


def _slk(n_clusters, method, lam, n_neighbors, graph, sigma, kwargs):
    kwargs.setdefault("seed", KMeansPlusPlus())
    kwargs.setdefault("schedule", FullBatch(center_tol=1e-3))
    kwargs.setdefault("max_iter", 100)
    return _clusterer(n_clusters, kwargs,
                      estep=LaplacianEStep(n_neighbors=n_neighbors, lam=lam, sigma=sigma,
                                           graph=graph),
                      mstep=ModeMStep(method))


@_preset
def slk_bo(n_clusters, lam=1.0, n_neighbors=5, graph=None, sigma=None, **kwargs):
    """Scalable Laplacian K-modes, SLK-BO (Ziko, Granger & Ben Ayed 2018): k-means++ seeds,
    z-updates on a kNN graph, modes as the samples of largest assignment (eq. 11).

    Parameters
    ----------
    n_clusters : int
    lam : float, default=1.0
        Weight of the Laplacian term (the paper tunes it in [1, 4] on labelled samples).
    n_neighbors : int, default=5
        Neighbours per sample in the graph (``rho``).
    graph : sparse matrix or None, default=None
        A precomputed graph of the training data (:func:`~clusterkit.knn_graph`), to reuse
        across fits.
    sigma : float or None, default=None
        Kernel bandwidth; ``None`` estimates it from the graph.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++
        seeding; ``schedule`` the stop when the modes move by at most 0.1 % of their norm,
        ``FullBatch(center_tol=1e-3)``).

    Returns
    -------
    Clusterer
        Unfitted. After ``fit``: ``modes_`` (the training rows that are the modes),
        ``cluster_centers_`` (those rows), ``soft_labels_``, ``labels_`` (``argmax z``).

    Examples
    --------
    >>> from clusterkit.presets import slk_bo
    >>> slk_bo(10, lam=2.0).mstep
    ModeMStep(method='bo', ms_tol=1e-05, ms_max_iter=1000)
    """
    return _slk(n_clusters, "bo", lam, n_neighbors, graph, sigma, kwargs)


@_preset
def slk_ms(n_clusters, lam=1.0, n_neighbors=5, graph=None, sigma=None, **kwargs):
    """Scalable Laplacian K-modes, SLK-MS: as :func:`slk_bo`, with modes by mean-shift over
    each cluster's members (eq. 9); the modes are then not training samples.

    Parameters
    ----------
    n_clusters : int
    lam, n_neighbors, graph, sigma
        As for :func:`slk_bo`.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer`.

    Returns
    -------
    Clusterer
        Unfitted.

    Examples
    --------
    >>> from clusterkit.presets import slk_ms
    >>> slk_ms(10).mstep
    ModeMStep(method='ms', ms_tol=1e-05, ms_max_iter=1000)
    """
    return _slk(n_clusters, "ms", lam, n_neighbors, graph, sigma, kwargs)


@_preset
def spherical_kmeans(n_clusters, **kwargs):
    """Spherical k-means (cosine similarity): k-means++ seeding and Lloyd iterations on rows
    scaled to unit norm, with unit-norm centres (:class:`~clusterkit.SphericalMStep`).

    Every row given to the model (``fit``, ``predict``, ``transform``, ``score``) is scaled
    to unit Euclidean norm first; a row of zero norm raises a ``ValueError``. Each sample
    goes to the centre of largest cosine similarity, and each centre is the normalised
    weighted sum of its cluster's rows, so the cosine dissimilarity
    ``sum_n w_n (1 - cos(x_n, mu_n))`` never increases from one iteration to the next.
    ``inertia_`` and ``objective_`` are twice it (squared distances of unit rows).

    Parameters
    ----------
    n_clusters : int
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``seed`` replaces the k-means++ seeding;
        ``schedule="minibatch"`` gives mini-batch spherical k-means, ``reduce="lwcs"`` a
        fit on a coreset of the unit rows). For a bounded or variational E-step build a
        Clusterer with ``mstep="spherical"`` and ``estep="elkan"``, ``"truncated"`` or
        ``"partial"``.

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N C`` distance evaluations.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit.presets import spherical_kmeans
    >>> X = np.array([[1.0, 0.1], [3.0, -0.2], [0.2, 2.0], [-0.1, 0.5]])
    >>> km = spherical_kmeans(2, random_state=0).fit(X)
    >>> km.predict([[10.0, 0.0], [0.0, 0.1]]) == km.labels_[[0, 2]]
    array([ True,  True])
    >>> np.round(np.linalg.norm(km.cluster_centers_, axis=1), 6)
    array([1., 1.])
    """
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=FullEStep(), mstep=SphericalMStep())


@_preset
def balanced_kmeans(n_clusters, size_min=None, size_max=None, **kwargs):
    """Balanced k-means: k-means++ seeding and iterations in which every cluster's size
    stays between ``size_min`` and ``size_max`` (:class:`~clusterkit.BalancedEStep`).

    Each E-step is the exact optimum of the capacitated transport problem (least total
    squared distance with every cluster's size within the bounds) and the M-step takes each
    cluster's mean; ``labels_`` are the bounded assignment to the final centres.

    Parameters
    ----------
    n_clusters : int
    size_min : float or None, default=None
        Least rows (weight, with ``sample_weight``) of every cluster; ``None``: no lower
        bound.
    size_max : float or None, default=None
        Most rows (or weight) of every cluster; ``None``: no upper bound. Give at least one
        of the two: without either, nothing is bounded and the fit is k-means.
    **kwargs
        Passed on to :class:`~clusterkit.Clusterer` (``refine="breathing"`` adds breathing
        rounds, see the Notes; ``seed`` replaces the k-means++ seeding on ``max(8192, r C)``
        rows, as :func:`lloyd` seeds).

    Returns
    -------
    Clusterer
        Unfitted. Cost per iteration: ``N C`` distance evaluations for the first solve,
        about ``N k`` (``k = 8`` candidate centres per row) once the centres settle; time
        goes mostly to the first steps' solves, which move many rows.

    See Also
    --------
    clusterkit.BalancedEStep : the bounds, weights, refusals and ``predict="bounded"``.

    Notes
    -----
    The bounds tie all rows into one problem, so the fit takes rows in memory, full batches,
    a hard M-step and no reducer (see :class:`~clusterkit.BalancedEStep`). ``predict`` gives
    nearest centres; ``set_params(estep__predict="bounded")`` makes it the bounded
    assignment of each new batch, the bounds scaled to its rows. Memory: the candidate graph,
    about ``200 N`` bytes between steps and ``500 N`` at the peak of a solve, more where the
    bounds block the nearest candidates and rows get more (see
    :class:`~clusterkit.BalancedEStep`, ``buffer_bytes``). Time: at
    1,000,000 x 16 float32 rows, ``C = 1,000``, ``size_max = 1.1 N / C``, 20.7 times the
    default fit's (``benchmarks/bench_balanced.py --part scale``; the docs page on balanced
    clusters says where it goes).

    No breathing rounds by default, as measured on 100,000 x 32 float32 rows from 50
    Gaussians (``make_gaussian_blobs``), ``C = 500``, ``size_max = 1.1 N / C``, 2 threads
    on a shared 2-core machine, seeds 0 and 1: this preset took 46 and 106 s, at 1.091 and
    1.116 times the error of an unbounded ``Clusterer(500)`` (6 and 8 s); with
    ``refine=Breathing()`` it took 347 and 915 s (7.5 and 8.6 times as long) for 0.14 % and
    1.2 % less error. On small problems the rounds pay: on 20,000 x 16 rows, ``C = 100``,
    clusters of 150 to 250 rows (``benchmarks/bench_balanced.py``), the iterations alone
    stopped in a poor local minimum on two seeds of three (up to 1.34 times
    k-means-constrained's error) and breathing brought every seed to 0.87-1.00 times it,
    for 3.5 to 4 times the time. Pass ``refine="breathing"`` when the error matters more than
    the time.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit.presets import balanced_kmeans
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (70, 2)), rng.normal(8, 1, (30, 2))])
    >>> km = balanced_kmeans(4, size_min=20, size_max=30, random_state=0).fit(X)
    >>> sizes = np.bincount(km.labels_)
    >>> bool(sizes.min() >= 20 and sizes.max() <= 30)
    True
    """
    kwargs.setdefault("seed", _scheduled_seed())
    return _clusterer(n_clusters, kwargs, estep=BalancedEStep(size_min, size_max),
                      mstep=HardMStep())
