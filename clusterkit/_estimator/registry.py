"""The names users can give instead of objects: strategy shortcuts, and answers to names
clusterkit does not take.

One table per strategy kind maps a string shortcut of :class:`~clusterkit.Clusterer`'s
parameters to the strategy class (built with its defaults; listed in the documentation's
composing page), or to a function that builds a configured strategy (``seed="auto"``,
:func:`auto_seeder`); :func:`sparse_seeds` names the seeding shortcuts that take sparse data.
:data:`SKLEARN_NAMES` and :func:`unknown_keyword` answer the names users bring that
clusterkit does not take: scikit-learn's (``init``, ``algorithm``, ...) with clusterkit's
equivalent, a typo with the closest name (for ``Clusterer``, the presets and the command line
alike); :func:`did_you_mean` does the same for a shortcut or a preset named by a string.
"""
import difflib
import functools
import inspect

from .._engine.contracts import DataReducer, EStep, MStep, Refiner, Schedule, Seeder
from ..estep.bounded import BoundedEStep
from ..estep.exact import ElkanEStep, FullEStep, TruncatedEStep
from ..estep.variational import PartialEStep
from ..estep.yinyang import YinyangEStep
from ..mstep.centres import HardMStep, SoftMStep, SphericalMStep
from ..reduction.lwcs import LWCS, NoReduction
from ..refine.breathing import Breathing, NoRefinement
from ..refine.sequence import RefinerSequence
from ..schedules.nested import NestedDoubling
from ..schedules.schedules import FullBatch, MiniBatch, SBEDecay
from ..seeding.afkmc2 import AFKMC2
from ..seeding.composite import ByClusters, ByDimension, SampledSeeder
from ..seeding.seeders import KMeansPlusPlus, RandomSeeder

__all__ = ["NO_SHORTCUT", "SHORTCUTS", "SKLEARN_NAMES", "AnswersUnknownKeywords", "accepts_sparse",
           "auto_seeder", "close_name", "did_you_mean", "keywords", "resolve", "sparse_seeds",
           "strategy_class", "unknown_keyword"]


def auto_seeder():
    """``Clusterer``'s default seeding, ``seed="auto"``: on as many rows as the fit's
    schedule says a seeding is worth (:meth:`Schedule.seeding_rows
    <clusterkit.Schedule.seeding_rows>`; all rows when ``N C D <= 2^27``), in float32
    (:class:`~clusterkit.SampledSeeder`), greedy k-means++ below a thousand clusters and
    k-means|| from there on where the data have 32 rows per cluster
    (:class:`~clusterkit.ByClusters`); the seeding of the exact, mini-batch and mixture
    presets too. ``seed="k-means++"`` seeds on all rows."""
    return SampledSeeder(ByClusters(), size="schedule", float32=True)


#: For each strategy parameter of ``Clusterer``: its base class, what ``None`` stands for
#: (the default), and the string shortcuts; each a strategy class (built with its defaults)
#: or a function in :data:`_BUILDS` that returns a configured strategy.
SHORTCUTS = {
    "seed": (Seeder, auto_seeder,
             {"k-means++": KMeansPlusPlus, "auto": auto_seeder, "afkmc2": AFKMC2,
              "random": RandomSeeder, "sampled": SampledSeeder, "by-dimension": ByDimension,
              "by-clusters": ByClusters}),
    "reduce": (DataReducer, NoReduction, {"none": NoReduction, "lwcs": LWCS}),
    "estep": (EStep, FullEStep, {"full": FullEStep, "elkan": ElkanEStep,
                                 "yinyang": YinyangEStep, "bounded": BoundedEStep,
                                 "truncated": TruncatedEStep, "partial": PartialEStep}),
    "mstep": (MStep, HardMStep, {"hard": HardMStep, "soft": SoftMStep,
                                 "spherical": SphericalMStep}),
    "schedule": (Schedule, FullBatch, {"full": FullBatch, "minibatch": MiniBatch,
                                       "nmbatch": NestedDoubling, "sbe": SBEDecay}),
    "refine": (Refiner, NoRefinement, {"none": NoRefinement, "breathing": Breathing}),
}


#: Names of strategies that have no shortcut, because a shortcut builds its strategy with
#: its defaults and these need parameters, with why and what to pass instead; :func:`resolve`
#: says so rather than suggesting a close shortcut (``'bounded'`` is Elkan's E-step).
NO_SHORTCUT = {
    "estep": {"balanced": "a shortcut builds its E-step with the defaults, and "
                          "BalancedEStep's bounds have none; pass "
                          "estep=BalancedEStep(size_min=..., size_max=...), or "
                          "presets.balanced_kmeans(n_clusters, size_min=..., size_max=...)"},
}


#: The strategy class each building function of :data:`SHORTCUTS` returns an instance of.
_BUILDS = {auto_seeder: SampledSeeder}


def _builder(name, value):
    """What builds the strategy ``value`` names as parameter ``name`` (a shortcut, or
    ``None`` for the default): a class or a function of :data:`_BUILDS`; else ``None``."""
    _, default, aliases = SHORTCUTS[name]
    if value is None:
        return default
    return aliases.get(value) if isinstance(value, str) else None


def strategy_class(name, value):
    """The class ``value`` stands for as ``Clusterer``'s parameter ``name`` (an instance's
    class, a shortcut's class, the default for ``None``), or ``None`` if it is neither;
    never raises, never builds anything."""
    if isinstance(value, SHORTCUTS[name][0]):
        return type(value)
    if name == "refine" and isinstance(value, (tuple, list)):  # refiners in turn
        return RefinerSequence
    builder = _builder(name, value)
    return _BUILDS.get(builder, builder)


def accepts_sparse(clusterer):
    """Whether every strategy of a ``Clusterer``'s composition declares ``accepts_sparse``
    (initial centres given as an array do; values that are no strategy do not); never
    raises."""
    names = ["reduce", "estep", "mstep", "schedule", "refine"]
    if clusterer.seed is None or isinstance(clusterer.seed, (str, Seeder)):
        names.append("seed")
    classes = [strategy_class(name, getattr(clusterer, name)) for name in names]
    return all(cls is not None and cls.accepts_sparse for cls in classes)


def resolve(name, value):
    """The strategy object for ``Clusterer``'s parameter ``name`` given as ``value``: an
    instance as is, a string shortcut or ``None`` (the default) as a new object.

    Raises
    ------
    ValueError
        For an unknown shortcut.
    TypeError
        For anything else than an instance of the parameter's base class or a string.
    """
    base, _, aliases = SHORTCUTS[name]
    if isinstance(value, base):
        return value
    if name == "refine" and isinstance(value, (tuple, list)):  # refiners in turn
        return RefinerSequence(tuple(resolve(name, refiner) for refiner in value))
    builder = _builder(name, value)
    if builder is not None:
        return builder()
    if isinstance(value, str) and value in NO_SHORTCUT.get(name, {}):
        raise ValueError(f"{name}={value!r} is not a shortcut: {NO_SHORTCUT[name][value]}.")
    if isinstance(value, str):
        expected = ", ".join(repr(a) for a in aliases)
        raise ValueError(f"Unknown {name}={value!r}; expected one of {expected} or an "
                         f"instance of {base.__name__}.{did_you_mean(value, aliases)}")
    raise TypeError(f"{name} must be an instance of {base.__name__} or a string, got "
                    f"{type(value).__name__}.")


def sparse_seeds():
    """The seeding shortcuts whose seeder takes sparse data."""
    return tuple(alias for alias in SHORTCUTS["seed"][2]
                 if strategy_class("seed", alias).accepts_sparse)


#: Keywords of scikit-learn's ``KMeans``, ``MiniBatchKMeans`` and ``GaussianMixture`` that
#: ``Clusterer`` and the presets do not take, and what to pass instead.
SKLEARN_NAMES = {
    "init": "seed= ('k-means++', 'random', an array of initial centres or a Seeder)",
    "algorithm": "estep= (algorithm='lloyd' is estep='full', the default; algorithm='elkan' "
                 "is estep='elkan' or 'bounded', or presets.elkan)",
    "copy_x": "nothing (clusterkit never modifies X: it centres a copy)",
    "n_jobs": "n_threads=",
    "batch_size": "schedule=MiniBatch(batch_size=...) or presets.minibatch(n_clusters, "
                  "batch_size=...)",
    "max_no_improvement": "schedule=MiniBatch(max_no_improvement=...)",
    "reassignment_ratio": "schedule=MiniBatch(reassignment_ratio=...)",
    "init_size": "seed=SampledSeeder(size=...)",
    "n_components": "n_clusters= with mstep='soft' (or presets.gmm)",
    "covariance_type": "mstep='soft' (clusterkit's mixtures are isotropic, one variance "
                       "shared by all clusters)",
    "means_init": "seed= with the array of initial means",
}


def close_name(key, known):
    """The name of ``known`` closest to the unknown ``key`` (:func:`difflib.get_close_matches`),
    or ``None`` if none is close."""
    close = difflib.get_close_matches(key, list(known), n=1)
    return close[0] if close else None


def did_you_mean(name, known):
    """`` Did you mean 'lloyd'?`` (with its leading space) for a string ``name`` that is not
    one of ``known`` (preset names, shortcuts): the closest names by
    :func:`difflib.get_close_matches`, as Python suggests a keyword (all of the best score
    when several tie, ``'var_kmeans_x' or 'var_kmeans_s'``); ``""`` if none is close."""
    known = [k for k in known if isinstance(k, str)]
    matches = difflib.get_close_matches(name, known, n=len(known) or 1)
    if not matches:
        return ""
    score = difflib.SequenceMatcher(None, name, matches[0]).ratio()
    best = [m for m in matches if difflib.SequenceMatcher(None, name, m).ratio() == score]
    return f" Did you mean {' or '.join(repr(m) for m in best)}?"


def unknown_keyword(owner, key, known):
    """The ``TypeError`` for a keyword ``key`` that ``owner`` (``"Clusterer"``,
    ``"presets.vc_gmm"``) does not take: for a scikit-learn name, what clusterkit takes
    instead (:data:`SKLEARN_NAMES`); else the closest of the ``known`` names, or all of them."""
    if key in SKLEARN_NAMES:
        return TypeError(f"{owner}() got scikit-learn's keyword {key!r}; pass "
                         f"{SKLEARN_NAMES[key]} instead.")
    close = close_name(key, known)
    hint = (f"did you mean {close!r}?" if close else
            f"the keywords are {', '.join(known)}.")
    return TypeError(f"{owner}() got an unexpected keyword argument {key!r}; {hint}")


@functools.lru_cache(maxsize=None)
def keywords(cls):
    """The parameters of ``cls.__init__`` after ``self``, in order."""
    return tuple(list(inspect.signature(cls.__init__).parameters)[1:])


class AnswersUnknownKeywords:
    """A base for an estimator (``Clusterer``) whose construction answers a keyword its
    ``__init__`` does not take with :func:`unknown_keyword`'s ``TypeError`` instead of
    Python's bare "unexpected keyword argument".

    The check is a ``__new__``, so ``__init__`` stays scikit-learn's plain list of stored
    parameters (``clone``, ``get_params`` and pickling construct with known keywords or
    none). It lives in a base class after the estimator in the MRO, so that the estimator's
    signature (:func:`inspect.signature`, scikit-learn's checks, the documentation) is still
    its ``__init__``'s.
    """

    def __new__(cls, *args, **kwargs):
        known = keywords(cls)
        for key in kwargs:
            if key not in known:
                raise unknown_keyword(cls.__name__, key, known)
        return super().__new__(cls)
