"""Presets: the registry, keyword pass-through, defaults of the variational presets, a small
BIRCH trend."""
import re

import numpy as np
import pytest

from clusterkit import (AFKMC2, ByClusters, Clusterer, FullEStep, HardMStep, KMeansPlusPlus,
                        PartialEStep, SampledSeeder, SoftMStep, presets)
from clusterkit._estimator.guide import REGISTRY, preset_table
from clusterkit._estimator.registry import SHORTCUTS
from clusterkit.datasets import make_birch_grid

VARIATIONAL = {
    "var_kmeans_x": ("exhaustive", HardMStep),
    "var_kmeans_s": ("estimated", HardMStep),
    "var_gmm_x": ("exhaustive", SoftMStep),
    "var_gmm_s": ("estimated", SoftMStep),
}
ALL = list(presets.PRESETS)


def test_the_presets_are_the_registrys():
    """One record per preset: the names, ``__all__``, the functions (by name too) and the
    module's table all come from the registry."""
    assert presets.PRESETS == tuple(REGISTRY)
    assert presets.__all__[:len(REGISTRY)] == list(REGISTRY)
    functions = {name for name, value in vars(presets).items()
                 if callable(value) and getattr(value, "__module__", "") == presets.__name__
                 and hasattr(value, "__wrapped__")}
    assert functions == set(REGISTRY)
    for name in REGISTRY:
        assert presets._FUNCTIONS[name] is getattr(presets, name)
        assert type(presets.build_preset(name, 3)) is type(getattr(presets, name)(3))
    assert ".. presets-table" not in presets.__doc__ and preset_table() in presets.__doc__
    assert re.findall(r"^:func:`(\w+)`", presets.__doc__, re.M) == list(REGISTRY)


@pytest.mark.parametrize("name", presets.PRESETS)
def test_the_registry_says_which_strategies_a_preset_sets(name):
    """``fixes`` (what the command line refuses in ``--param``) is exactly what the preset
    refuses: the strategy parameters it sets itself."""
    refused = []
    for key in SHORTCUTS:
        try:
            getattr(presets, name)(3, **{key: None})
        except TypeError as error:
            assert str(error).startswith(f"This preset sets {key} itself"), error
            refused.append(key)
    assert sorted(refused) == sorted(REGISTRY[name].fixes)
    assert {"estep", "mstep"} <= set(refused)


@pytest.mark.parametrize("name", ALL)
def test_preset_passes_keywords_to_clusterer(name):
    seeder = SampledSeeder(KMeansPlusPlus(n_local_trials=3), size=50)
    callback = lambda info: False  # noqa: E731
    est = getattr(presets, name)(7, random_state=3, n_threads=1, max_iter=11, tol=0.5,
                                 seed=seeder, compute_labels=False, verbose=0,
                                 callback=callback)
    assert isinstance(est, Clusterer)
    params = est.get_params(deep=False)
    assert params["n_clusters"] == 7
    assert params["random_state"] == 3
    assert params["n_threads"] == 1
    assert params["max_iter"] == 11
    assert params["tol"] == 0.5
    assert params["seed"] is seeder
    assert params["compute_labels"] is False
    assert params["callback"] is callback
    assert not hasattr(est, "cluster_centers_")  # returned unfitted


@pytest.mark.parametrize("name", ALL)
def test_preset_refuses_its_own_strategies(name):
    """A preset is its algorithm: replacing its E-step or M-step would silently make another."""
    for slot in ("estep", "mstep"):
        with pytest.raises(TypeError, match=f"^This preset sets {slot} itself; to choose it, "
                                            "build a Clusterer directly\\.$"):
            getattr(presets, name)(7, **{slot: "full" if slot == "estep" else "hard"})


@pytest.mark.parametrize("name", ["lloyd", "gmm"])
def test_exact_presets_defaults(name):
    est = getattr(presets, name)(5)
    assert isinstance(est.estep, FullEStep)
    assert isinstance(est.mstep, SoftMStep if name == "gmm" else HardMStep)
    # greedy k-means++ (k-means|| from 1,000 clusters on) on as many rows as the schedule
    # says the seeding is worth
    assert repr(est.seed) == repr(SampledSeeder(ByClusters(), size="schedule", float32=True))


@pytest.mark.parametrize("name", list(VARIATIONAL))
def test_variational_presets_defaults(name):
    neighbourhoods, mstep = VARIATIONAL[name]
    est = getattr(presets, name)(50)
    estep = est.estep
    assert isinstance(estep, PartialEStep)
    assert (estep.G, estep.n_explore, estep.n_init_esteps) == (5, 1, 0)
    assert estep.neighbourhoods == neighbourhoods
    assert estep.n_winners is None  # 1 with a hard M-step, G with a soft one
    assert isinstance(est.mstep, mstep)
    assert repr(est.seed) == repr(presets._default_seed())
    # a fresh seeder per call: presets never share a strategy object
    assert getattr(presets, name)(50).seed is not est.seed


@pytest.mark.parametrize("name", list(VARIATIONAL))
def test_variational_presets_own_keywords(name):
    est = getattr(presets, name)(50, G=3, n_explore=2, n_init_esteps=4,
                                 seed=AFKMC2(chain_length=7))
    assert (est.estep.G, est.estep.n_explore, est.estep.n_init_esteps) == (3, 2, 4)
    assert est.seed.chain_length == 7


def test_default_seed_is_a_fresh_seeder():
    first, second = presets._default_seed(), presets._default_seed()
    assert first is not second
    assert repr(first) == repr(second)


@pytest.mark.parametrize("n_side", [5, 10])
def test_var_kmeans_s_reaches_lloyd_on_birch(n_side):
    # Forster & Lücke (2018), Fig. 2 and Table 2: from the same AFK-MC2 seeds, var-k-means-S
    # with G=5+1 ends at about k-means' quantization error on the BIRCH grid (often below it).
    # Both fits draw their seeds first from the same random_state, so they start from the same
    # centres. Single runs vary either way, so the mean ratio over a few seeds is checked.
    X, _, _ = make_birch_grid(n_side, random_state=0)
    n_clusters = n_side * n_side
    ratios = []
    for seed in range(6):
        paper_seed = AFKMC2(chain_length=2, n_candidates=1)
        lloyd = presets.lloyd(n_clusters, seed=paper_seed, random_state=seed,
                              n_threads=1).fit(X)
        var = presets.var_kmeans_s(n_clusters, seed=paper_seed, random_state=seed,
                                   n_threads=1).fit(X)
        ratios.append(var.inertia_ / lloyd.inertia_)
    assert np.mean(ratios) <= 1.05, ratios


def test_large_scale_polishes_its_variational_pilot():
    """Lloyd's iterations from the pilot's centres never raise the error, and the pilot's
    work (its exact start of ``K(n)`` included) is counted under seeding."""
    from clusterkit import FittedSeeder
    from clusterkit.metrics import quantization_error
    X, _, _ = make_birch_grid(n_side=8, n_per_cluster=60, random_state=0)
    X = np.hstack([X, np.random.RandomState(1).normal(size=(len(X), 70))]).astype(np.float32)
    model = presets.large_scale(64, random_state=0, tol=0, max_iter=300).fit(X)
    assert isinstance(model.seed, FittedSeeder)
    assert isinstance(model.seed.estimator.estep, PartialEStep)
    assert isinstance(model.seed.estimator.seed.low.high.high, AFKMC2)  # 72 features
    assert model.seed.estimator.seed.low.high.high.chain_length == 20
    qe = [entry["qe"] for entry in model.history_]
    assert all(b <= a * (1 + 1e-6) for a, b in zip(qe, qe[1:]))
    assert model.inertia_ <= qe[0] * (1 + 1e-6)
    assert model.cost_["seeding"] >= len(X) * 64
    assert np.isclose(model.inertia_, quantization_error(X, model.cluster_centers_), rtol=1e-5)


@pytest.mark.parametrize("name,kwargs,match", [
    ("vc_gmm", {"coresetsize": 100}, r"^presets\.vc_gmm\(\) got an unexpected keyword argument "
                                     r"'coresetsize'; did you mean 'coreset_size'\?$"),
    ("lwcs_lloyd", {"max_iters": 5}, r"'max_iters'; did you mean 'max_iter'\?$"),
    ("lloyd", {"init": "random"}, r"^presets\.lloyd\(\) got scikit-learn's keyword 'init'; "
                                  r"pass seed= \('k-means\+\+', 'random', an array of initial "
                                  r"centres or a Seeder\) instead\.$"),
    ("minibatch", {"algorithm": "elkan"}, r"keyword 'algorithm'; pass estep= "),
    ("gmm", {"n_components": 3}, r"keyword 'n_components'; pass n_clusters= with "
                                 r"mstep='soft'"),
])
def test_preset_keyword_typos_and_scikit_learn_names(name, kwargs, match):
    with pytest.raises(TypeError, match=match):
        getattr(presets, name)(3, **kwargs)


def test_preset_own_keyword_init_is_not_scikit_learns():
    """The variational presets' own ``init`` (the start of K(n)) is theirs, not advice."""
    assert presets.vc_gmm(3, init="random").estep.init == "random"


@pytest.mark.parametrize("name", ["lwcs_lloyd", "vc_gmm", "best_quality"])
@pytest.mark.parametrize("value,error,match", [
    (0, ValueError, r"coreset_size must be an integer >= 1 or None; got 0\.$"),
    (2.5, TypeError, r"coreset_size must be an integer >= 1 or None; got 2\.5\.$"),
])
def test_a_bad_coreset_size_is_refused_under_its_own_name(name, value, error, match):
    """Not as LWCS's ``size`` (best_quality passes it on to its pilot's LWCS)."""
    with pytest.raises(error, match=rf"^presets\.{name}: {match}"):
        getattr(presets, name)(4, coreset_size=value, random_state=0).fit(
            np.random.RandomState(0).normal(size=(200, 2)))
