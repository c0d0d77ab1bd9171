"""Sparse (CSR) input through Clusterer and the presets: scikit-learn's k-means tests that run
on CSR data, the sparse fit against the dense one from the same start, and the refusals."""
import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import pairwise_distances_argmin, v_measure_score

from clusterkit import (AFKMC2, LWCS, Clusterer, ElkanEStep, FullEStep, HardMStep, MiniBatch,
                        NestedDoubling, PartialEStep, RandomSeeder, SBEDecay, SoftMStep,
                        TruncatedEStep, presets)

from ._helpers import assert_labels_equal_up_to_ties, fixed_iterations

CSR = [sp.csr_matrix, sp.csr_array]
SPARSE_ONLY = pytest.mark.parametrize("csr", CSR, ids=["csr_matrix", "csr_array"])
# a dense container and the CSR ones, as scikit-learn's data_containers
CONTAINERS = pytest.mark.parametrize("container", [np.asarray] + CSR,
                                     ids=["dense", "csr_matrix", "csr_array"])
EXACT = {"lloyd": presets.lloyd, "elkan": presets.elkan}


def _text_like(n_samples=300, n_features=60, n_topics=4, density=0.1, seed=0):
    """Non-negative sparse rows with topic structure, l2-normalised (a small TF-IDF)."""
    rng = np.random.default_rng(seed)
    topics = rng.integers(0, n_topics, n_samples)
    X = sp.random(n_samples, n_features, density=density, format="lil", random_state=seed)
    for t in range(n_topics):  # each topic's own block of frequent terms
        rows = np.flatnonzero(topics == t)
        cols = t * (n_features // n_topics) + rng.integers(0, n_features // n_topics,
                                                          (len(rows), 3))
        for r, cs in zip(rows, cols):
            X[r, cs] = 1.0 + rng.random(3)
    X = sp.csr_matrix(X)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(1))).ravel()
    return sp.csr_matrix(sp.diags(1 / np.maximum(norms, 1e-12)) @ X), topics


# --- scikit-learn's CSR k-means tests, through Clusterer ----------------------------------

@CONTAINERS
@pytest.mark.parametrize("algo", ["lloyd", "elkan"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_results(container, algo, dtype):
    """Hand-computed labels, inertia, centres and n_iter_ (scikit-learn's toy case)."""
    X = container(np.array([[0, 0], [0.5, 0], [0.5, 1], [1, 1]], dtype=dtype))
    init = np.array([[0, 0], [1, 1]], dtype=dtype)
    km = EXACT[algo](2, seed=init).fit(X, sample_weight=[3, 1, 1, 3])
    np.testing.assert_array_equal(km.labels_, [0, 0, 1, 1])
    np.testing.assert_allclose(km.inertia_, 0.375, rtol=1e-6)
    np.testing.assert_allclose(km.cluster_centers_, [[0.125, 0], [0.875, 1]], rtol=1e-6)
    assert km.n_iter_ == 2
    assert km.cluster_centers_.dtype == dtype


@CONTAINERS
@pytest.mark.parametrize("algo", ["lloyd", "elkan"])
def test_kmeans_relocated_clusters(container, algo):
    """A centre too far to get any sample at first is relocated (scikit-learn's case), with
    the dense fit's n_iter_."""
    X = np.array([[0, 0], [0.5, 0], [0.5, 1], [1, 1]])
    init = np.array([[0.5, 0.5], [3, 3]])
    km = EXACT[algo](2, seed=init).fit(container(X))
    assert km.n_iter_ == EXACT[algo](2, seed=init).fit(X).n_iter_
    np.testing.assert_allclose(km.inertia_, 0.25)
    if km.labels_[0] == 0:
        np.testing.assert_array_equal(km.labels_, [0, 0, 1, 1])
        np.testing.assert_allclose(km.cluster_centers_, [[0.25, 0], [0.75, 1]])
    else:
        np.testing.assert_array_equal(km.labels_, [1, 1, 0, 0])
        np.testing.assert_allclose(km.cluster_centers_, [[0.75, 1], [0.25, 0]])


@fixed_iterations
@CONTAINERS
def test_relocate_empty_clusters(container):
    """Three centres on the first point: after one M-step the empty clusters sit on the two
    farthest points, farthest first, and the first centre is the mean of the other eight
    points (the relocated points leave it, as with scikit-learn's helper: -36 / 8)."""
    X = container(np.array([-10.0, -9.5, -9, -8.5, -8, -1, 1, 9, 9.5, 10]).reshape(-1, 1))
    km = presets.lloyd(3, seed=np.full((3, 1), -10.0), max_iter=1).fit(X)
    np.testing.assert_allclose(km.cluster_centers_, [[-4.5], [10], [9.5]])


@CONTAINERS
@pytest.mark.parametrize("distribution", ["normal", "blobs"])
@pytest.mark.parametrize("tol", [1e-2, 1e-8, 0])
def test_kmeans_elkan_results(container, distribution, tol):
    """Elkan gives Lloyd's centres, labels, n_iter_ and inertia."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(1000, 10)) if distribution == "normal" else make_blobs(
        random_state=rng)[0]
    X[X < 0] = 0
    X = container(X)
    lloyd = presets.lloyd(5, random_state=0, tol=tol).fit(X)
    elkan = presets.elkan(5, random_state=0, tol=tol).fit(X)
    np.testing.assert_allclose(elkan.cluster_centers_, lloyd.cluster_centers_)
    np.testing.assert_array_equal(elkan.labels_, lloyd.labels_)
    assert elkan.n_iter_ == lloyd.n_iter_
    assert elkan.inertia_ == pytest.approx(lloyd.inertia_, rel=1e-6)
    assert elkan.cost_["estep"] < lloyd.cost_["estep"]


@SPARSE_ONLY
def test_minibatch_update_consistency(csr):
    """One mini-batch step from the same centres gives the same centres and labels for dense
    and CSR batches, and lowers the batch's inertia."""
    X, _ = make_blobs(n_samples=100, centers=3, n_features=5, random_state=0)
    centers = X[:3] + np.random.RandomState(1).normal(size=(3, 5))
    batch = X[:10]
    fits = [presets.minibatch(3, seed=centers).partial_fit(data)
            for data in (batch, csr(batch))]
    np.testing.assert_allclose(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    old_inertia = ((batch[:, None] - centers[None]) ** 2).sum(-1).min(1).sum()
    assert 0 < fits[1].inertia_ < old_inertia
    assert fits[1].inertia_ == pytest.approx(fits[0].inertia_, rel=1e-10)


@fixed_iterations
@CONTAINERS
@pytest.mark.parametrize("preset", ["lloyd", "elkan", "minibatch"])
@pytest.mark.parametrize("max_iter", [2, 100])
def test_kmeans_predict(container, preset, max_iter, dtype):
    """predict on the training data gives labels_, so does fit_predict, and the centres
    predict themselves."""
    X, _ = make_blobs(n_samples=200, n_features=10, centers=10, random_state=0)
    X = container(X.astype(dtype))
    kwargs = dict(seed="random", n_init=3, max_iter=max_iter, random_state=0)
    if preset == "minibatch":
        kwargs["batch_size"] = 64
    km = getattr(presets, preset)(10, **kwargs).fit(X)
    labels = km.labels_
    np.testing.assert_array_equal(km.predict(X), labels)
    np.testing.assert_array_equal(km.fit_predict(X), labels)
    np.testing.assert_array_equal(km.predict(km.cluster_centers_), np.arange(10))


@SPARSE_ONLY
@pytest.mark.parametrize("preset", ["lloyd", "minibatch"])
def test_dense_sparse(csr, preset):
    """The default fit (k-means++ seeding) with weights gives the same labels and centres for
    dense and CSR input."""
    X, _ = make_blobs(n_samples=200, centers=4, n_features=6, random_state=0)
    X[X < 0] = 0  # (zeros to leave out)
    w = np.random.RandomState(0).random_sample(len(X))
    dense = getattr(presets, preset)(4, random_state=0).fit(X, sample_weight=w)
    sparse = getattr(presets, preset)(4, random_state=0).fit(csr(X), sample_weight=w)
    np.testing.assert_array_equal(dense.labels_, sparse.labels_)
    np.testing.assert_allclose(dense.cluster_centers_, sparse.cluster_centers_, atol=1e-12)


@SPARSE_ONLY
@pytest.mark.parametrize("seed", ["random", "k-means++", "ndarray"])
@pytest.mark.parametrize("preset", ["lloyd", "minibatch"])
def test_predict_dense_sparse(csr, seed, preset):
    """A model fitted on CSR predicts dense data, and the other way round."""
    X, _ = make_blobs(n_samples=200, centers=4, n_features=6, random_state=0)
    seed = X[:4] if seed == "ndarray" else seed
    km = getattr(presets, preset)(4, seed=seed, n_init=3 if isinstance(seed, str) else 1,
                                   random_state=0)
    np.testing.assert_array_equal(km.fit(csr(X)).predict(X), km.labels_)
    np.testing.assert_array_equal(km.fit(X).predict(csr(X)), km.labels_)


@CONTAINERS
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("seed", ["k-means++", "ndarray"])
def test_integer_input(container, dtype, seed):
    """Integer data become float64, also in CSR, for fit and partial_fit."""
    X_dense = np.array([[0, 0], [10, 10], [12, 9], [-1, 1], [2, 0], [8, 10]])
    X = container(X_dense.astype(dtype))
    seed = X_dense[:2] if seed == "ndarray" else seed
    km = presets.lloyd(2, seed=seed, n_init=3 if isinstance(seed, str) else 1,
                       random_state=0).fit(X)
    assert km.cluster_centers_.dtype == np.float64
    assert v_measure_score(km.labels_, [0, 1, 1, 0, 0, 1]) == pytest.approx(1.0)
    km = presets.minibatch(2, seed=seed, random_state=0).partial_fit(X)
    assert km.cluster_centers_.dtype == np.float64


@CONTAINERS
def test_kmeans_empty_cluster_relocated(container):
    """With weights, the centre that gets no sample moves onto the light sample."""
    X = container(np.array([[-1.0], [1.0]]))
    km = presets.lloyd(2, seed=np.array([[-1.0], [10.0]])).fit(X, sample_weight=[1.9, 0.1])
    assert len(set(km.labels_)) == 2
    np.testing.assert_allclose(km.cluster_centers_, [[-1], [1]])


@fixed_iterations
@CONTAINERS
@pytest.mark.parametrize("algo", ["lloyd", "elkan"])
def test_k_means_1_iteration(container, algo):
    """One iteration (E-step, M-step, then the labels) against plain NumPy."""
    X = np.random.RandomState(0).uniform(size=(100, 5))
    init = X[:5]
    labels = pairwise_distances_argmin(X, init)
    centers = np.array([X[labels == j].mean(0) for j in range(5)])
    km = EXACT[algo](5, seed=init, max_iter=1).fit(container(X))
    np.testing.assert_allclose(km.cluster_centers_, centers)
    np.testing.assert_array_equal(km.labels_, pairwise_distances_argmin(X, centers))


@pytest.mark.parametrize("csr", CSR + [None], ids=["csr_matrix", "csr_array", "dense"])
def test_predict_does_not_change_cluster_centers(csr):
    """predict with read-only centres (as a memmap would make them) gives fit's labels."""
    X, _ = make_blobs(n_samples=200, n_features=10, centers=10, random_state=0)
    X = X if csr is None else csr(X)
    km = Clusterer(random_state=0)
    labels = km.fit_predict(X)
    km.cluster_centers_.setflags(write=False)
    np.testing.assert_array_equal(km.predict(X), labels)


@CONTAINERS
@pytest.mark.parametrize("algo", ["lloyd", "elkan"])
def test_relocating_with_duplicates(container, algo):
    """More centres than distinct samples: the fit stops, warns, and as the dense fit."""
    X = np.array([[0, 0], [1, 1], [1, 1], [1, 0], [0, 1]], dtype=float)
    with pytest.warns(ConvergenceWarning, match=r"Number of distinct clusters \(4\) found "
                                                r"smaller than n_clusters \(5\)"):
        km = EXACT[algo](5, seed=X).fit(container(X))
    with pytest.warns(ConvergenceWarning):
        dense = EXACT[algo](5, seed=X).fit(X)
    assert km.n_iter_ == dense.n_iter_ <= 2
    np.testing.assert_array_equal(km.labels_, dense.labels_)


# --- the sparse fit is the dense fit ----------------------------------------------------------

def _iterates(km, X, sample_weight=None):
    """Every iteration's centres and objective."""
    seen = []
    km.set_params(callback=lambda info: seen.append((info["centers"].copy(),
                                                     info["objective"])))
    km.fit(X, sample_weight=sample_weight)
    return seen


@fixed_iterations
@pytest.mark.parametrize("algo", ["lloyd", "elkan"])
def test_iterates_equal_the_dense_fit(algo, dtype):
    """From the same centres, every iterate (centres, objective) of the sparse fit is the
    dense fit's within the dtype's rounding, and so are labels_, inertia_, n_iter_ and the
    distance evaluations."""
    X, _ = _text_like()
    X = X.astype(dtype)
    w = np.random.RandomState(1).uniform(0.5, 2, X.shape[0]).astype(dtype)
    init = X[:6].toarray()
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    runs = []
    for data in (X.toarray(), X):
        km = EXACT[algo](6, seed=init, max_iter=15, tol=0)
        runs.append((km, _iterates(km, data, w)))
    (dense, dense_steps), (sparse, sparse_steps) = runs
    assert len(dense_steps) == len(sparse_steps) > 2
    for (c_dense, f_dense), (c_sparse, f_sparse) in zip(dense_steps, sparse_steps):
        np.testing.assert_allclose(c_sparse, c_dense, rtol=rtol, atol=rtol)
        assert f_sparse == pytest.approx(f_dense, rel=rtol)
    assert sparse.cluster_centers_.dtype == dtype
    assert_labels_equal_up_to_ties(X.toarray(), sparse.cluster_centers_, sparse.labels_,
                                   dense.labels_, rtol)
    assert sparse.inertia_ == pytest.approx(dense.inertia_, rel=rtol)
    assert sparse.n_iter_ == dense.n_iter_
    if algo == "lloyd":
        assert sparse.cost_ == dense.cost_
    assert sparse.n_distance_evals_ == sum(sparse.cost_.values())


def test_sparse_scikit_learn_parity():
    """Lloyd on CSR from given centres: scikit-learn's KMeans's centres and inertia."""
    X, _ = _text_like(n_samples=400)
    init = X[:5].toarray()
    ours = presets.lloyd(5, seed=init).fit(X)
    theirs = KMeans(5, init=init, n_init=1, algorithm="lloyd").fit(X)
    np.testing.assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, atol=1e-10)
    assert ours.inertia_ == pytest.approx(theirs.inertia_, rel=1e-10)
    assert ours.n_iter_ == theirs.n_iter_


@pytest.mark.parametrize("preset", ["lloyd", "elkan", "minibatch"])
def test_sparse_results_do_not_depend_on_threads(preset):
    X, _ = _text_like()
    fits = [getattr(presets, preset)(8, random_state=0, n_threads=n,
                                     **({"batch_size": 50} if preset == "minibatch" else {}))
            .fit(X) for n in (1, 2)]
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    assert fits[0].n_distance_evals_ == fits[1].n_distance_evals_


@pytest.mark.parametrize("preset", ["lloyd", "elkan", "minibatch"])
def test_weights_are_repetitions(preset):
    """A weight of 2 counts a sparse row twice (from the same centres)."""
    X, _ = _text_like(n_samples=120)
    init = X[:4].toarray()
    w = np.ones(X.shape[0])
    w[::3] = 2
    repeated = sp.vstack([X, X[::3]]).tocsr()
    kwargs = dict(seed=init, random_state=0)
    if preset == "minibatch":  # full batches, so that the draws cannot differ
        kwargs.update(batch_size=10_000, max_passes=5)
    weighted = getattr(presets, preset)(4, **kwargs).fit(X, sample_weight=w)
    twice = getattr(presets, preset)(4, **kwargs).fit(repeated)
    np.testing.assert_allclose(weighted.cluster_centers_, twice.cluster_centers_, atol=1e-12)
    assert weighted.inertia_ == pytest.approx(twice.inertia_, rel=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_kept_and_other_formats_converted(dtype):
    """CSC, COO and int64-indexed CSR work like CSR; float32 stays float32; transform and
    score on CSR equal those on the dense rows."""
    X, _ = _text_like()
    X = X.astype(dtype)
    km = presets.lloyd(5, random_state=0).fit(X)
    assert km.cluster_centers_.dtype == dtype
    assert km.transform(X).dtype == dtype
    wide = sp.csr_matrix(X, dtype=dtype)
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    for other in (X.tocsc(), X.tocoo(), wide):
        refit = presets.lloyd(5, random_state=0).fit(other)
        np.testing.assert_array_equal(refit.cluster_centers_, km.cluster_centers_)
        np.testing.assert_array_equal(km.predict(other), km.labels_)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(km.transform(X), km.transform(X.toarray()), rtol=rtol,
                               atol=rtol)
    assert km.score(X) == pytest.approx(km.score(X.toarray()), rel=rtol)
    assert km.score(X) == pytest.approx(-km.inertia_, rel=rtol)


def test_partial_fit_streams_sparse_batches():
    """A stream of CSR batches equals the stream of their dense rows; a stream that began
    on dense data (centred on their mean) refuses sparse batches."""
    X, _ = _text_like(n_samples=200)
    init = X[:4].toarray()
    dense, sparse = presets.minibatch(4, seed=init), presets.minibatch(4, seed=init)
    for start in range(0, 200, 50):
        dense.partial_fit(X[start:start + 50].toarray())
        sparse.partial_fit(X[start:start + 50])
    np.testing.assert_allclose(sparse.cluster_centers_, dense.cluster_centers_, atol=1e-12)
    started_dense = presets.minibatch(4, seed=init).partial_fit(X[:50].toarray() + 1.0)
    with pytest.raises(ValueError, match="started on dense data .* Pass X.toarray()"):
        started_dense.partial_fit(X[50:100])


# --- refusals and bad input -------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: presets.nmbatch(3), lambda: presets.sbe(3), lambda: presets.gmm(3),
    lambda: presets.var_kmeans_x(3), lambda: presets.lwcs_lloyd(3), lambda: presets.vc_gmm(3),
    lambda: presets.slk_bo(3), lambda: Clusterer(3, estep=TruncatedEStep()),
    lambda: Clusterer(3, estep=PartialEStep(G=2)), lambda: Clusterer(3, mstep=SoftMStep()),
    lambda: Clusterer(3, seed=AFKMC2()), lambda: Clusterer(3, reduce=LWCS(50)),
    lambda: Clusterer(3, schedule=NestedDoubling()), lambda: Clusterer(3, schedule=SBEDecay()),
], ids=["nmbatch", "sbe", "gmm", "var_kmeans_x", "lwcs_lloyd", "vc_gmm", "slk_bo",
        "truncated", "partial", "soft", "afkmc2", "lwcs", "nested", "sbe_schedule"])
def test_other_compositions_refuse_sparse_before_any_work(make):
    X, _ = _text_like(n_samples=100)
    km = make()
    calls = []
    km.set_params(callback=lambda info: calls.append(info))
    with pytest.raises(TypeError, match=r"cannot take sparse X\. Sparse input is taken by "
                                        r"presets\.lloyd, presets\.elkan, presets\.minibatch "
                                        r"or presets\.spherical_kmeans .*X\.toarray\(\)"):
        km.fit(X)
    assert not calls and not hasattr(km, "cluster_centers_")


def test_refusal_names_the_strategies():
    X, _ = _text_like(n_samples=50)
    with pytest.raises(TypeError, match=r"^estep=TruncatedEStep, mstep=SoftMStep cannot take "
                                        r"sparse X"):
        Clusterer(3, estep=TruncatedEStep(), mstep=SoftMStep()).fit(X)


def test_exact_strategies_take_sparse():
    """What the refusal names as taking sparse input does."""
    X, _ = _text_like(n_samples=100)
    for km in (Clusterer(3, seed=RandomSeeder(), estep=ElkanEStep(), random_state=0),
               Clusterer(3, estep=FullEStep(), mstep=HardMStep(),
                         schedule=MiniBatch(batch_size=20), random_state=0)):
        km.fit(X)
        assert km.cluster_centers_.shape == (3, X.shape[1])
        assert isinstance(km.cluster_centers_, np.ndarray)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_sparse_data_are_refused(bad):
    X, _ = _text_like(n_samples=50)
    X.data[3] = bad
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        presets.lloyd(3).fit(X)
    fitted = presets.lloyd(3, random_state=0).fit(_text_like(n_samples=50)[0])
    with pytest.raises(ValueError, match="Input X contains (NaN|infinity)"):
        fitted.predict(X)


def test_wrong_shapes_are_refused():
    X, _ = _text_like(n_samples=50)
    km = presets.lloyd(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 59 features, but Clusterer is expecting 60"):
        km.predict(X[:, :59])
    with pytest.raises(ValueError, match=r"n_clusters=51 must be <= n_samples=50\."):
        presets.lloyd(51).fit(X)
    with pytest.raises(ValueError, match=r"seed has shape \(3, 59\)"):
        presets.lloyd(3, seed=np.zeros((3, 59))).fit(X)


def test_sparse_tag_follows_the_composition():
    """scikit-learn's input tag says whether the composition takes sparse data."""
    assert Clusterer().__sklearn_tags__().input_tags.sparse
    assert presets.elkan(3, seed=np.zeros((3, 2))).__sklearn_tags__().input_tags.sparse
    assert presets.minibatch(3).__sklearn_tags__().input_tags.sparse
    assert not presets.gmm(3).__sklearn_tags__().input_tags.sparse
    assert not presets.vc_gmm(3).__sklearn_tags__().input_tags.sparse


def test_more_non_zeros_than_int32_indices_is_refused(monkeypatch):
    """int64 indices are narrowed to the kernels' int32 when their values fit; the message
    for data that do not fit (shown with a lowered limit: such data need gigabytes)."""
    import clusterkit._data.sparse
    X, _ = _text_like(n_samples=50)
    wide = sp.csr_matrix(X)
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    monkeypatch.setattr(clusterkit._data.sparse, "_INT32_MAX", X.nnz - 1)
    with pytest.raises(ValueError, match=rf"X has {X.nnz} non-zeros in 60 features; sparse "
                                         r"input is limited to \d+ of each \(int32 indices\)"):
        presets.lloyd(3).fit(wide)


def test_refusal_of_a_pilot_seeding_says_which_seeding_to_pass():
    """presets.large_scale seeds with a pilot fit: only its seeding refuses sparse data, and
    the message says what to pass instead."""
    X, _ = _text_like(n_samples=50)
    with pytest.raises(TypeError, match=r"^seed=FittedSeeder cannot take sparse X\. Sparse "
                                        r"input is taken by presets\.lloyd, presets\.elkan, "
                                        r"presets\.minibatch or presets\.spherical_kmeans "
                                        r"\(and by the rest of this composition with seed= one "
                                        r"of 'k-means\+\+', 'auto', 'random', 'sampled', "
                                        r"'by-clusters' or initial centres; presets take seed= "
                                        r"too\); or pass X\.toarray\(\)\.$"):
        presets.large_scale(3).fit(X)
    assert presets.large_scale(3, seed="k-means++", random_state=0).fit(X).labels_.shape == (50,)


@pytest.mark.parametrize("name", presets.PRESETS)
def test_the_presets_the_docs_name_for_sparse_data_take_it(name):
    """The guide says "also sparse (CSR) data" exactly for the presets whose strategies all
    take sparse data, and those fit a CSR matrix."""
    from clusterkit._estimator.registry import accepts_sparse
    model = getattr(presets, name)(3, random_state=0)
    assert ("also sparse (CSR) data" in presets.GUIDE[name].use) == accepts_sparse(model)
    assert presets.GUIDE[name].sparse == accepts_sparse(model)
    if accepts_sparse(model):
        X, _ = _text_like(n_samples=60)
        assert model.fit(X).cluster_centers_.shape == (3, X.shape[1])


# --- the rows' kinds: one test, one signature per kernel ------------------------------------

def test_the_rows_kind_is_decided_by_one_test():
    from clusterkit._data.sparse import CSR as CSR_ROWS, DENSE, kernels_for
    X, _ = _text_like(n_samples=20)
    assert kernels_for(X) is CSR_ROWS and kernels_for(sp.csr_array(X)) is CSR_ROWS
    assert kernels_for(X.toarray()) is DENSE and kernels_for([[0.0, 1.0]]) is DENSE
    assert not DENSE.refuses(AFKMC2()) and CSR_ROWS.refuses(AFKMC2())
    assert not CSR_ROWS.refuses(RandomSeeder())
    # (a run's state, which names its kind, is copied to dask's workers)
    assert pickle.loads(pickle.dumps(CSR_ROWS)) is CSR_ROWS and copy.deepcopy(DENSE) is DENSE


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_csr_kernels_agree_with_the_dense_kernels(dtype):
    """Every kernel of the CSR kind gives the dense kind's result on the same rows (up to
    rounding where the two compute differently)."""
    from clusterkit._data.sparse import CSR as CSR_ROWS, DENSE
    X = sp.random(200, 30, density=0.3, format="csr", random_state=0, dtype=dtype) * 3
    X = sp.csr_matrix(X, dtype=dtype)
    dense = X.toarray()
    centers = dense[[0, 50, 100, 150, 199]].copy()
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    norms = DENSE.row_norms(dense)
    np.testing.assert_allclose(CSR_ROWS.row_norms(X), norms, rtol=rtol)
    assert np.abs(CSR_ROWS.values(X)).max() == np.abs(DENSE.values(dense)).max()
    np.testing.assert_allclose(CSR_ROWS.scaled_rows(X, norms).toarray(),
                               DENSE.scaled_rows(dense, norms), rtol=rtol)
    for got, expected in zip(CSR_ROWS.bounding_box(X), DENSE.bounding_box(dense)):
        np.testing.assert_array_equal(got, expected)
    rows = [3, 1, 4, 1, 5]
    np.testing.assert_array_equal(CSR_ROWS.dense_rows(X, rows), DENSE.dense_rows(dense, rows))
    np.testing.assert_array_equal(CSR_ROWS.take(X, rows).toarray(), DENSE.take(dense, rows))
    labels = np.empty(200, dtype=np.int32)
    dist2 = np.empty(200, dtype=dtype)
    CSR_ROWS.assign(X, CSR_ROWS.kernel_sqnorms(X, 1), centers, labels, dist2, 1)
    expected_labels = np.empty(200, dtype=np.int32)
    expected_dist2 = np.empty(200, dtype=dtype)
    DENSE.assign(dense, DENSE.kernel_sqnorms(dense, 1), centers, expected_labels,
                 expected_dist2, 1)
    assert_labels_equal_up_to_ties(dense, centers, labels, expected_labels, rtol)
    np.testing.assert_allclose(dist2, expected_dist2, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(CSR_ROWS.dist2_to_labels(X, centers, labels, 1)[0],
                               DENSE.dist2_to_labels(dense, centers, labels, 1)[0],
                               rtol=rtol, atol=rtol)
    np.testing.assert_allclose(CSR_ROWS.all_dist2(X, centers, 1),
                               DENSE.all_dist2(dense, centers, 1), rtol=rtol, atol=rtol)
    # (both kinds' centre distances are lower bounds, within rounding of the exact ones)
    half = [(np.empty((5, 5)), np.empty(5)) for _ in range(2)]
    CSR_ROWS.center_half_distances(centers, *half[0], 1)
    DENSE.center_half_distances(centers, *half[1], 1)
    for got, expected in zip(*half):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    bad = X.copy()
    bad.data[bad.indptr[7]] = np.nan
    assert CSR_ROWS.nonfinite_rows(bad) == DENSE.nonfinite_rows(bad.toarray()) == (1, 7)
    assert not np.any(CSR_ROWS.mean(X)) and CSR_ROWS.in_frame(X, None) is X
