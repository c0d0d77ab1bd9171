"""Every error and warning message of the public entry points."""
import numpy as np
import pytest

from clusterkit import Clusterer, FullEStep, presets

X = np.random.default_rng(0).normal(size=(20, 3))


@pytest.mark.parametrize("bad,match", [
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), "infinity"),
    (np.zeros(5), "Expected 2D array"),
    (np.zeros((0, 3)), "0 sample"),
])
def test_bad_X(bad, match):
    with pytest.raises(ValueError, match=match):
        Clusterer(2).fit(bad)


def _rows_with_nan():
    Y = np.random.default_rng(0).normal(size=(100, 3))
    Y[[42, 77], 1] = np.nan
    Y[80, 0] = -np.inf
    return Y


_NAN_MESSAGE = r"^Input X contains NaN or infinity in 3 rows \(the first is row 42\); "


@pytest.mark.parametrize("container", ["array", "csr", "memmap", "dask"])
def test_nan_in_X_names_its_first_row_in_X(container, tmp_path, monkeypatch):
    """The first row with a NaN or an infinity, numbered in X whatever holds it (a memmap
    read in row chunks and a dask array too), without scikit-learn's advice for
    supervised estimators."""
    Y = _rows_with_nan()
    if container == "csr":
        import scipy.sparse as sp
        Y = sp.csr_matrix(Y)
    elif container == "memmap":  # read in row chunks, as a memmap larger than memory is
        from clusterkit._data import chunked
        np.save(tmp_path / "X.npy", Y)
        Y = np.load(tmp_path / "X.npy", mmap_mode="r")
        monkeypatch.setattr(chunked, "exceeds_budget", lambda X: True)
    elif container == "dask":
        dask = pytest.importorskip("dask")
        import dask.array as da
        Y = da.from_array(Y, chunks=(30, 3))
        monkeypatch.setitem(dask.config.config, "scheduler", "synchronous")
    with pytest.raises(ValueError, match=_NAN_MESSAGE) as error:
        presets.lloyd(4, random_state=0).fit(Y)
    assert "HistGradientBoosting" not in str(error.value)
    assert "imput" not in str(error.value).lower()


def test_nan_in_predict_names_its_row():
    model = Clusterer(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"NaN or infinity in 1 row \(the first is row 1\)"):
        model.predict(np.array([[0.0, 1.0, 2.0], [np.nan, 0.0, 0.0]]))


@pytest.mark.parametrize("reduce", [None, "lwcs"])
def test_values_whose_squared_distances_overflow_float32(reduce):
    """float32 data near 1e19 would make every squared distance inf; 1e18 still fits, with
    the same labels as float64."""
    from clusterkit import LWCS
    reducer = LWCS(15) if reduce else None
    big = np.random.default_rng(1).normal(size=(60, 3))
    with pytest.raises(ValueError, match=r"^X's values are too large for float32: squared "
                                         r"distances between samples can reach .*e\+39, beyond "
                                         r"the largest float32 \(3\.4e\+38\)\. Rescale X or "
                                         r"pass it as float64\.$"):
        Clusterer(3, reduce=reducer, random_state=0).fit((big * 1e19).astype(np.float32))
    fits = [Clusterer(3, reduce=reducer, mstep=mstep, random_state=0).fit(data * 1e18)
            for mstep in ("hard", "soft")
            for data in (big.astype(np.float32), big)]
    for km32, km64 in (fits[:2], fits[2:]):
        assert np.isfinite(km32.objective_) and np.isfinite(km32.inertia_)
        np.testing.assert_array_equal(km32.labels_, km64.labels_)
    with pytest.raises(ValueError, match=r"^X's values are too large for float32"):
        fits[0].predict((big * 1e19).astype(np.float32))


def test_fewer_samples_than_clusters():
    with pytest.raises(ValueError, match=r"n_clusters=30 must be <= n_samples=20\."):
        Clusterer(30).fit(X)


@pytest.mark.parametrize("n_clusters,error,match", [
    (0, ValueError, r"n_clusters=0 must be >= 1\."),
    (-3, ValueError, r"n_clusters=-3 must be >= 1\."),
    (2.5, TypeError, "n_clusters must be an integer"),
])
def test_bad_n_clusters(n_clusters, error, match):
    with pytest.raises(error, match=match):
        Clusterer(n_clusters).fit(X)


@pytest.mark.parametrize("weights,match", [
    (-np.ones(20), "sample_weight has 20 negative entries; weights must be non-negative."),
    (np.zeros(20), "sample_weight is zero everywhere"),
    (np.ones(7), "sample_weight has 7 entries, but X has 20 samples."),
    (np.ones((20, 2)), "sample_weight must be 1-D"),
    (np.r_[np.ones(19), np.nan], "sample_weight has 1 non-finite entries"),
])
def test_bad_sample_weight(weights, match):
    with pytest.raises(ValueError, match=match):
        Clusterer(2).fit(X, sample_weight=weights)


@pytest.mark.parametrize("mstep", ["hard", "soft"])
@pytest.mark.parametrize("dtype,weights,match", [
    (np.float32, np.full(20, 1e37), r"^sample_weight is too large for X in float32: weighted "
                                    r"sums over the samples can reach .*Rescale the "
                                    r"weights \(only their ratios matter\) or pass X as "
                                    r"float64\.$"),
    (np.float64, np.full(20, 1e307), r"^sample_weight is too large for X in float64: .* "
                                     r"Rescale the weights \(only their ratios matter\)\.$"),
    (np.float32, np.full(20, 1e39), r"^sample_weight has entries beyond the range of float32"),
    (np.float32, np.r_[np.ones(19), 1e-46], r"^sample_weight has 1 positive entries below the "
                                            r"smallest normal float32"),
])
def test_weights_the_dtype_cannot_hold(mstep, dtype, weights, match):
    """Finite weights whose sums overflow (or that the dtype cannot represent) are refused
    instead of ending in NaN centres or a crash; only the weights' ratios matter."""
    with pytest.raises(ValueError, match=match):
        Clusterer(2, mstep=mstep, random_state=0).fit(X.astype(dtype), sample_weight=weights)
    km = Clusterer(2, mstep=mstep, random_state=0).fit(X.astype(dtype),
                                                        sample_weight=np.full(20, 1e30))
    assert np.all(np.isfinite(km.cluster_centers_))


def test_values_too_large_or_too_close_for_float64():
    with pytest.raises(ValueError, match="^X's values are too large for float64"):
        Clusterer(2).fit(np.array([[0.0, 0.0], [1e155, 0.0], [2.0, 1.0]]))
    km = Clusterer(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="^X's values are too large for float64"):
        km.predict([[1e155, 0.0, 0.0]])
    with pytest.raises(ValueError, match="^X's values are too close together for float64"):
        Clusterer(2).fit(X * 1e-200)


def test_effective_n_threads_resolves_none_negative_and_positive():
    from clusterkit import effective_n_threads, openmp_enabled
    available = effective_n_threads(None)
    assert available >= 1
    if not openmp_enabled():
        assert available == effective_n_threads(3) == 1
        return
    assert effective_n_threads(-1) == available  # all cores
    assert effective_n_threads(-2) == max(1, available - 1)
    assert effective_n_threads(-available - 5) == 1
    assert effective_n_threads(3) == 3 and effective_n_threads(np.int64(1)) == 1


@pytest.mark.parametrize("n_threads,error,match", [
    (0, ValueError, "n_threads=0 must be a positive number"),
    (1.5, TypeError, "n_threads must be an integer or None, got 1.5"),
    ("a", TypeError, "n_threads must be an integer or None, got 'a'"),
    (2 ** 31, ValueError, r"n_threads=2147483648 is out of range\."),
])
def test_bad_n_threads_everywhere(n_threads, error, match):
    from clusterkit.metrics import quantization_error
    with pytest.raises(error, match=match):
        Clusterer(2, n_threads=n_threads).fit(X)
    with pytest.raises(error, match=match):
        quantization_error(X, X[:2], n_threads=n_threads)


def test_wrong_feature_count_at_predict():
    km = Clusterer(2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 4 features, but Clusterer is expecting 3"):
        km.predict(np.zeros((2, 4)))


@pytest.mark.parametrize("params,error,match", [
    ({"max_iter": 0}, ValueError, r"max_iter=0 must be >= 1\."),
    ({"n_init": 0}, ValueError, r"n_init=0 must be >= 1\."),
    ({"n_init": 1.5}, TypeError, "n_init must be an integer"),
    ({"tol": -1.0}, ValueError, r"tol=-1.0 must be a non-negative number\."),
    ({"n_threads": 0}, ValueError, "n_threads=0 must be a positive number"),
    ({"callback": 3}, TypeError, "callback must be callable"),
    ({"seed": "kmeans"}, ValueError, r"Unknown seed='kmeans'; expected one of 'k-means\+\+', "
                                     r"'auto', 'afkmc2', 'random', 'sampled', 'by-dimension', "
                                     r"'by-clusters' or an instance of Seeder\."),
    ({"estep": "partial-ish"}, ValueError, r"Unknown estep='partial-ish'"),
    ({"estep": "elkna"}, ValueError, r"instance of EStep\. Did you mean 'elkan'\?$"),
    ({"seed": "kmeans++"}, ValueError, r"Seeder\. Did you mean 'k-means\+\+'\?$"),
    ({"schedule": "mini-batch"}, ValueError, r"Schedule\. Did you mean 'minibatch'\?$"),
    ({"mstep": 3}, TypeError, "mstep must be an instance of MStep or a string, got int."),
    ({"seed": np.zeros((3, 3))}, ValueError, r"seed has shape \(3, 3\), but initial centres "
                                             r"must have shape \(n_clusters, n_features\)="
                                             r"\(2, 3\)\."),
    ({"seed": np.full((2, 3), np.nan)}, ValueError, "seed contains NaN or infinity"),
    ({"seed": np.full((2, 3), 1e39)}, ValueError, "seed has values beyond the range of "
                                                  "float32, the data's dtype"),
])
def test_bad_parameters(params, error, match):
    with pytest.raises(error, match=match):
        Clusterer(2, **params).fit(X.astype(np.float32))


def test_strategy_objects_are_accepted_as_parameters():
    km = Clusterer(2, estep=FullEStep(), random_state=0).fit(X)
    assert km.get_params()["estep"] == FullEStep()


def test_memory_beyond_what_is_available_is_refused_before_any_work(monkeypatch):
    from clusterkit import ElkanEStep, LaplacianEStep, ModeMStep, Seeder
    from clusterkit._data import memory as _memory

    class Untouchable(Seeder):
        def seed(self, X, sample_weight, n_clusters, state):
            raise AssertionError("fit did work before refusing the composition")

    monkeypatch.setattr(_memory, "_system_available", lambda: 10_000)
    X = np.random.RandomState(0).normal(size=(500, 3))
    for kwargs in [dict(estep=ElkanEStep()), dict(mstep="soft"),
                   dict(estep=LaplacianEStep(), mstep=ModeMStep()), {}]:
        # (a ValueError, as before the memory budget covered every fit)
        with pytest.raises(ValueError, match=r"needs? .*(GiB|MiB|KiB).*(budget|above)"):
            Clusterer(10, seed=Untouchable(), **kwargs).fit(X)


def test_a_batch_without_weight_moves_no_centre_under_sbe():
    X = np.random.RandomState(0).normal(size=(100, 2))
    w = np.r_[np.ones(50), np.zeros(50)]
    km = presets.sbe(3, batch_size=1, random_state=0, max_iter=30).fit(X, sample_weight=w)
    assert np.all(np.isfinite(km.cluster_centers_)) and np.isfinite(km.inertia_)


@pytest.mark.parametrize("kwargs,match", [
    ({"init": "k-means++"}, r"^Clusterer\(\) got scikit-learn's keyword 'init'; pass seed= "
                            r"\('k-means\+\+', 'random', an array of initial centres or a "
                            r"Seeder\) instead\.$"),
    ({"algorithm": "elkan"}, r"^Clusterer\(\) got scikit-learn's keyword 'algorithm'; pass "
                             r"estep= \(algorithm='lloyd' is estep='full', the default; "
                             r"algorithm='elkan' is estep='elkan' or 'bounded', or "
                             r"presets\.elkan\) instead\.$"),
    ({"n_jobs": 2}, r"keyword 'n_jobs'; pass n_threads= instead\.$"),
    ({"batch_size": 100}, r"keyword 'batch_size'; pass schedule=MiniBatch\(batch_size=\.\.\.\)"),
    ({"n_int": 3}, r"^Clusterer\(\) got an unexpected keyword argument 'n_int'; did you mean "
                   r"'n_init'\?$"),
    ({"zzz": 3}, r"unexpected keyword argument 'zzz'; the keywords are n_clusters, seed, "),
])
def test_scikit_learn_keywords_and_typos_name_what_to_pass(kwargs, match):
    with pytest.raises(TypeError, match=match):
        Clusterer(10, **kwargs)


def test_unknown_keywords_leave_the_estimator_scikit_learn_compliant():
    import pickle

    from sklearn.base import clone
    km = Clusterer(3, n_init=2, estep="elkan")
    assert clone(km).get_params() == km.get_params()
    assert pickle.loads(pickle.dumps(km)).get_params() == km.get_params()


def test_n_init_auto_says_what_to_pass():
    with pytest.raises(TypeError, match=r"^n_init='auto' is not a number of runs; pass an "
                                        r"integer >= 1 \(scikit-learn's n_init='auto' is "
                                        r"n_init=1 with k-means\+\+ seeding, clusterkit's "
                                        r"default, and n_init=10 with seed='random'\)\.$"):
        Clusterer(2, n_init="auto").fit(X)


@pytest.mark.parametrize("model,reason", [
    (presets.vc_gmm(3), "partial_fit keeps running means of hard assignments; this "
                        "Clusterer's M-step needs responsibilities (a Gaussian mixture)."),
    (presets.lwcs_lloyd(3), "partial_fit clusters each batch as it comes; LWCS summarises a "
                            "whole data set. Use fit, or reduce=None for a stream."),
    (presets.var_kmeans_s(3), "partial_fit needs an exact E-step (FullEStep, ElkanEStep or "
                              "TruncatedEStep), not PartialEStep: per-sample search state "
                              "cannot follow a stream of new samples."),
    (presets.nmbatch(3), "partial_fit steps on the caller's batches; "
                         "NestedDoubling chooses its own batches from all the data. Use "
                         "fit, or schedule='minibatch' (or 'full') for a stream."),
])
def test_partial_fit_that_cannot_stream_is_absent_with_its_reason(model, reason):
    import re
    assert not hasattr(model, "partial_fit")
    with pytest.raises(AttributeError, match="^" + re.escape(
            f"This 'Clusterer' has no attribute 'partial_fit': {reason}") + "$") as error:
        model.partial_fit(X)
    assert str(error.value.__cause__) == reason


def test_predict_proba_of_k_means_is_absent_with_its_reason():
    km = presets.lloyd(2, random_state=0).fit(X)
    for method in ("predict_proba", "score_samples", "bic", "aic"):
        assert not hasattr(km, method)
        with pytest.raises(AttributeError, match=rf"^This 'Clusterer' has no attribute "
                                                 rf"'{method}': This Clusterer is not a "
                                                 r"Gaussian mixture, so it has no "
                                                 r"probabilities; fit with mstep='soft'"):
            getattr(km, method)
    assert presets.gmm(2, random_state=0).fit(X).predict_proba(X).shape == (20, 2)
    assert Clusterer.predict_proba.__doc__.startswith("Posterior probability")


def _warned_here(category, match, action):
    """The warnings ``action()`` emits point at this file (the caller's line), not into
    clusterkit, whatever the call depth inside the library."""
    with pytest.warns(category, match=match) as record:
        action()
    hits = [w for w in record if issubclass(w.category, category) and
            __import__("re").search(match, str(w.message))]
    assert hits and all(w.filename == __file__ for w in hits), [w.filename for w in hits]


def test_warnings_point_at_the_callers_line():
    from sklearn.exceptions import ConvergenceWarning

    from clusterkit import LWCS, PartialEStep
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(200, 2))
    _warned_here(RuntimeWarning, r"LWCS size=1000 >= n_samples=200",
                 lambda: Clusterer(3, reduce=LWCS(1000), random_state=0).fit(Y))
    _warned_here(RuntimeWarning, r"LWCS size=1000 >= n_samples=200",
                 lambda: presets.lwcs_lloyd(3, coreset_size=1000, random_state=0).fit_predict(Y))
    _warned_here(RuntimeWarning, r"seed gives the initial centres: running once instead of "
                                 r"n_init=3 times\.",
                 lambda: Clusterer(2, seed=Y[:2], n_init=3).fit(Y))
    _warned_here(ConvergenceWarning, r"The fit did not converge",
                 lambda: Clusterer(5, max_iter=1, tol=0.0, random_state=0).fit(Y))
    _warned_here(ConvergenceWarning, r"Number of distinct clusters \(2\) found smaller than "
                                     r"n_clusters \(3\)",
                 lambda: Clusterer(3, random_state=0).fit(np.repeat(Y[:2], 5, axis=0)))
    _warned_here(RuntimeWarning, r"KMeansPlusPlus found only 2 distinct points",
                 lambda: Clusterer(3, random_state=0).fit(np.repeat(Y[:2], 5, axis=0)))
    _warned_here(RuntimeWarning, r"G=9 > n_clusters=3; using G=n_clusters\.",
                 lambda: Clusterer(3, estep=PartialEStep(G=9), random_state=0).fit(Y))
    # inside a pilot fit, itself inside the seeding of the fit called here
    _warned_here(RuntimeWarning, r"LWCS size=1000 >= n_samples=200",
                 lambda: presets.best_quality(3, coreset_size=1000, random_state=0).fit(Y))
