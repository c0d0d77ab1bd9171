"""Scalable Laplacian K-modes: the kNN graph, the z-update kernel, LaplacianEStep, ModeMStep."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_moons

from clusterkit import (LWCS, Clusterer, FitState, FullBatch, LaplacianEStep, ModeMStep, knn_graph,
                        presets)
from clusterkit._kernels import _laplacian
from clusterkit.metrics import nmi


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(1000, noise=0.05, random_state=1)
    return X, y


@pytest.fixture(scope="module")
def moons_graph(moons):
    """One graph for the module (built once, reused by every fit that passes it)."""
    return knn_graph(moons[0], n_neighbors=10)


def _softmax(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_clusters", [(1, 1), (37, 5), (1001, 3)])
def test_z_update_matches_scipy(dtype, n_samples, n_clusters):
    rng = np.random.RandomState(n_samples)
    W = sp.random(n_samples, n_samples, density=min(1.0, 7 / n_samples), random_state=rng,
                  format="csr", dtype=np.float64)
    W.data = rng.uniform(0.5, 1.5, W.nnz)
    a = rng.rand(n_samples, n_clusters).astype(dtype)
    z = rng.dirichlet(np.ones(n_clusters), n_samples).astype(dtype)
    s = a.astype(np.float64) + 1.7 * (W @ z.astype(np.float64))
    outs = []
    for n_threads in (1, 2):
        out = np.empty_like(z)
        bound = _laplacian.z_update(a, W.indptr.astype(np.int32), W.indices.astype(np.int32),
                                    W.data.astype(dtype), z, 1.7, out, n_threads)
        np.testing.assert_allclose(out, _softmax(s), rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 if dtype == np.float32 else 1e-14)
        top = s.max(axis=1)
        expected = -(top + np.log(np.exp(s - top[:, None]).sum(axis=1))).sum()
        assert bound == pytest.approx(expected, rel=1e-5 if dtype == np.float32 else 1e-12)
        outs.append((out, bound))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    assert outs[0][1] == outs[1][1]



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features", [(1, 1), (37, 5), (1001, 3)])
def test_graph_sqdist_sum_matches_numpy(dtype, n_samples, n_features):
    rng = np.random.RandomState(n_samples)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    W = sp.random(n_samples, n_samples, density=min(1.0, 7 / n_samples), random_state=rng,
                  format="csr")
    rows = np.repeat(np.arange(n_samples), np.diff(W.indptr))
    diff = X[rows].astype(np.float64) - X[W.indices].astype(np.float64)
    expected = float((diff * diff).sum())
    sums = [_laplacian.graph_sqdist_sum(X, W.indptr.astype(np.int32),
                                        W.indices.astype(np.int32), n_threads)
            for n_threads in (1, 2)]
    assert sums[0] == pytest.approx(expected, rel=1e-12)
    assert sums[0] == sums[1]

def _relaxation(z, a, W, lam):
    """Eq. 2 with fixed modes: sum z log z - sum z a - lam sum_pq w_pq z_p^T z_q."""
    return float((z * np.log(np.maximum(z, 1e-300))).sum() - (z * a).sum()
                 - lam * (z * (W @ z)).sum())


def test_each_z_update_minimises_the_bound_and_the_relaxation_never_increases():
    rng = np.random.RandomState(0)
    n, L, lam = 300, 4, 0.8
    B = sp.random(n, n, density=0.02, random_state=rng, format="csr")
    W = (B @ B.T).tocsr()  # positive semi-definite, as Proposition 1 asks
    a = rng.rand(n, L)
    z = _softmax(a)
    args = (W.indptr.astype(np.int32), W.indices.astype(np.int32), W.data)
    previous = _relaxation(z, a, W, lam)
    for _ in range(30):
        b = W @ z
        z_new = np.empty_like(z)
        _laplacian.z_update(a, *args, z, lam, z_new, 2)

        def bound(y):
            return float((y * (np.log(np.maximum(y, 1e-300)) - a - lam * b)).sum())
        assert bound(z_new) <= bound(z) + 1e-9  # eq. 7: the minimiser of the bound
        current = _relaxation(z_new, a, W, lam)
        assert current <= previous + 1e-9  # eq. 4: the bound is an auxiliary function
        z, previous = z_new, current


def test_knn_graph_exact_and_approximate(moons):
    X = moons[0][:300]
    exact = knn_graph(X, n_neighbors=4)
    assert exact.shape == (300, 300) and sp.isspmatrix_csr(exact)
    assert np.all(np.diff(exact.indptr) == 4) and exact.diagonal().sum() == 0
    d2 = ((X[:, None] - X) ** 2).sum(-1)
    np.fill_diagonal(d2, np.inf)
    expected = np.sort(np.argsort(d2, axis=1)[:, :4], axis=1)
    np.testing.assert_array_equal(np.sort(exact.indices.reshape(300, 4), axis=1), expected)
    approx = knn_graph(X, n_neighbors=4, exact=False, random_state=0, n_threads=1)
    assert np.all(np.diff(approx.indptr) == 4) and approx.diagonal().sum() == 0
    agree = np.mean([len(set(approx.indices[approx.indptr[p]:approx.indptr[p + 1]])
                         & set(expected[p])) / 4 for p in range(300)])
    assert agree > 0.95


def test_slk_separates_the_half_moons_where_kmeans_cannot(moons, moons_graph):
    X, y = moons
    assert nmi(y, presets.lloyd(2, random_state=0).fit(X).labels_) < 0.5
    for make in (presets.slk_bo, presets.slk_ms):
        km = make(2, graph=moons_graph, n_init=5, random_state=0).fit(X)
        assert nmi(y, km.labels_) >= 0.9
        assert km.soft_labels_.shape == (len(X), 2)
        np.testing.assert_allclose(km.soft_labels_.sum(axis=1), 1)
        np.testing.assert_array_equal(km.labels_, km.soft_labels_.argmax(axis=1))
        assert not km.trivial_solution_


def test_slk_bo_modes_are_training_rows(moons, moons_graph):
    X, _ = moons
    km = presets.slk_bo(2, graph=moons_graph, random_state=0).fit(X)
    np.testing.assert_allclose(km.cluster_centers_, X[km.modes_], rtol=1e-12, atol=1e-12)
    objectives = [h["objective"] for h in km.history_]
    assert km.objective_ == objectives[-1] and km.kernel_sigma2_ > 0
    assert not hasattr(km, "sigma2_")  # a mixture's variance only
    # predict: the nearest mode
    np.testing.assert_array_equal(km.predict(X[:50]),
                                  ((X[:50, None] - km.cluster_centers_) ** 2).sum(-1).argmin(1))
    # refitted with another M-step, the attributes of the old one go
    km.set_params(mstep=ModeMStep("ms")).fit(X)
    assert not hasattr(km, "modes_") and hasattr(km, "soft_labels_")



def _slk_bo_reference(X, W, seeds, lam, max_inner=1000, tol_inner=1e-6):
    """SLK-BO in plain NumPy, step by step as Alg. 1 and the authors' code: labels of the
    nearest seeds, their kernel modes, then z-updates from softmax(a) and modes as the
    argmax of z, until the modes repeat."""
    rows = np.repeat(np.arange(len(X)), np.diff(W.indptr))
    sigma2 = ((X[rows] - X[W.indices]) ** 2).sum() / W.nnz
    kernel = np.exp(-((X[:, None] - X) ** 2).sum(-1) / (2 * sigma2))
    labels = ((X[:, None] - seeds) ** 2).sum(-1).argmin(axis=1)
    modes = [np.flatnonzero(labels == j)[kernel[np.ix_(labels == j, labels == j)].sum(1)
                                         .argmax()] for j in range(len(seeds))]
    for _ in range(100):
        a = kernel[:, modes]
        z, bound = _softmax(a), None
        for _ in range(max_inner):
            s = a + lam * (W @ z)
            previous, bound = bound, -(s.max(1) + np.log(np.exp(s - s.max(1)[:, None])
                                                         .sum(1))).sum()
            z = _softmax(s)
            if previous is not None and abs(bound - previous) <= tol_inner * abs(previous):
                break
        labels, new_modes = z.argmax(axis=1), list(z.argmax(axis=0))
        if new_modes == modes:
            energy = (-kernel[np.arange(len(X)), np.array(modes)[labels]].sum()
                      + lam * W.multiply(labels[:, None] != labels[None, :]).sum())
            return labels, np.array(modes), energy
        modes = new_modes
    raise AssertionError("no fixed point")


def test_slk_bo_follows_the_plain_numpy_algorithm(moons, moons_graph):
    X, _ = moons
    X, W = X[::2], knn_graph(X[::2], n_neighbors=10)
    seeds = X[[3, 250]]
    labels, modes, energy = _slk_bo_reference(X, W, seeds, lam=1.0)
    km = presets.slk_bo(2, graph=W, seed=seeds, schedule=FullBatch(center_tol=0.0)).fit(X)
    np.testing.assert_array_equal(km.modes_, modes)
    np.testing.assert_array_equal(km.labels_, labels)
    assert km.objective_ == pytest.approx(energy, rel=1e-10)  # the discrete energy of eq. 1
    assert [h["z_updates"] for h in km.history_][0] == 0  # the first step: nearest seeds

def test_a_graph_is_reused_across_fits(moons, moons_graph):
    X, _ = moons
    built = presets.slk_bo(2, n_neighbors=10, random_state=0).fit(X)
    given = presets.slk_bo(2, graph=moons_graph, random_state=0).fit(X)
    np.testing.assert_array_equal(built.labels_, given.labels_)
    # building the graph is a phase of its own in seconds_, within the total
    assert 0 < built.seconds_["graph"] <= built.seconds_["total"]
    assert "graph" not in given.seconds_


def test_a_vanishing_cluster_reverts_and_is_flagged():
    """Two far groups and three modes: a z-update empties a cluster."""
    rng = np.random.RandomState(0)
    X = np.vstack([rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 20])
    seeds = np.array([[0.0, 0.0], [0.5, 0.5], [20.0, 20.0]])
    km = Clusterer(3, seed=seeds, estep=LaplacianEStep(n_neighbors=20, lam=1.0),
                   mstep=ModeMStep(), random_state=0).fit(X)
    assert km.trivial_solution_
    assert any(h.get("trivial_solution") for h in km.history_)
    assert np.unique(km.labels_).size == 3  # the last assignment that kept every cluster
    assert np.all(np.isfinite(km.cluster_centers_))


@pytest.mark.parametrize("estep,match", [
    (LaplacianEStep(n_neighbors=1000), r"n_neighbors=1000 must be < n_samples=1000"),
    (LaplacianEStep(lam=-1.0), r"^LaplacianEStep: lam must be a number >= 0; got -1\.0\.$"),
    (LaplacianEStep(sigma=0.0),
     r"^LaplacianEStep: sigma must be a number > 0 or None; got 0\.0\.$"),
    (LaplacianEStep(graph=sp.eye(10, format="csr")), r"graph must be a sparse matrix of shape "
                                                     r"\(1000, 1000\)"),
])
def test_bad_parameters(moons, estep, match):
    with pytest.raises(ValueError, match=match):
        Clusterer(2, estep=estep, mstep=ModeMStep()).fit(moons[0])


def _graph_with(value, dtype=np.float64):
    X = np.random.RandomState(0).normal(size=(60, 4))
    graph = knn_graph(X, n_neighbors=5).astype(dtype)
    graph.data[7] = value
    return X, graph


@pytest.mark.parametrize("value,error,match", [
    (np.nan, ValueError, r"^graph has 1 non-finite weight; the graph's weights w_pq must be "
                         r"finite and non-negative\.$"),
    (np.inf, ValueError, r"^graph has 1 non-finite weight"),
    (-1.0, ValueError, r"^graph has 1 negative weight"),
    (1e300, ValueError, r"^graph has 1 weight beyond the range of float32, the data's dtype; "),
])
def test_a_given_graph_with_invalid_weights_is_refused(value, error, match):
    """A NaN weight made every objective NaN from the first z-update."""
    X, graph = _graph_with(value)
    for preset in (presets.slk_bo, presets.slk_ms):
        with pytest.raises(error, match=match):
            preset(3, graph=graph, random_state=0).fit(X.astype(np.float32))


def test_a_given_graph_with_non_numeric_weights_is_refused():
    X, graph = _graph_with(1.0, dtype=np.complex128)
    with pytest.raises(TypeError, match=r"^graph must hold numeric weights, got dtype complex"):
        presets.slk_bo(3, graph=graph, random_state=0).fit(X)


def test_zero_bandwidth_and_incompatible_compositions(moons):
    with pytest.raises(ValueError, match="The kernel bandwidth is zero"):
        Clusterer(2, estep=LaplacianEStep(n_neighbors=3), mstep=ModeMStep(),
                  seed=np.array([[0.0], [1.0]])).fit(np.repeat([[0.0], [1.0]], 20, axis=0))
    X = moons[0]
    with pytest.raises(ValueError, match="LWCS is not supported"):
        Clusterer(2, estep=LaplacianEStep(), mstep=ModeMStep(), reduce=LWCS(500)).fit(X)
    with pytest.raises(ValueError, match="LaplacianEStep cannot compute the quantization "
                                         "error that HardMStep optimises"):
        Clusterer(2, estep=LaplacianEStep()).fit(X)
    with pytest.raises(ValueError, match="FullEStep cannot compute the Laplacian K-modes "
                                         "energy that ModeMStep optimises"):
        Clusterer(2, mstep=ModeMStep()).fit(X)
    with pytest.raises(ValueError, match=r"^ModeMStep: method must be 'bo' or 'ms'; got 'x'\.$"):
        Clusterer(2, estep=LaplacianEStep(), mstep=ModeMStep("x")).fit(X)


def test_state_is_not_needed_to_build_the_graph_in_init_state(moons):
    X = moons[0][:200]
    state = FitState(n_clusters=2, n_features=2, random_state=np.random.RandomState(0))
    st = LaplacianEStep(n_neighbors=4).init_state(X, np.ones(200), X[:2], state)
    assert np.all(np.diff(st.indptr) == 4) and st.sigma2 > 0


def test_approximate_graph_does_not_depend_on_n_threads():
    """pynndescent's parallel descent depends on its threads; the graph must not."""
    X = np.random.RandomState(0).normal(size=(3000, 6))
    one, two = (knn_graph(X, n_neighbors=5, exact=False, random_state=0, n_threads=n)
                for n in (1, 2))
    assert (one != two).nnz == 0
