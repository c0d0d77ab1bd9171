"""Seeding kernels (D^2 update, greedy candidate potentials, AFK-MC^2 chains) vs NumPy twins."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import _reference as ref
from clusterkit._kernels import _seeding

CHUNK = 256  # CHUNK_SIZE of _dist.pxd
RTOL = {np.float32: 1e-5, np.float64: 1e-10}
SIZES = [1, CHUNK - 1, CHUNK + 1, 3 * CHUNK + 17]
# 1 and 3 features take the direct loop (1: no intermediate feature pass), 12 the gemm path
FEATURES = [1, 3, 12]


def _data(n_samples, n_features, dtype, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=n_samples).astype(dtype)
    w[rng.uniform(size=n_samples) < 0.1] = 0
    w[0] = 1
    return rng, X, w


def _min_dist2(rng, X, n_centers=3):
    """D^2 to a few random centres (some samples are centres: D^2 = 0)."""
    centers = X[rng.randint(len(X), size=n_centers)]
    return ref.sqdist(X, centers).min(axis=1).astype(X.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", FEATURES)
@pytest.mark.parametrize("n_samples", SIZES)
def test_d2_update_matches_reference(dtype, n_features, n_samples):
    rng, X, _ = _data(n_samples, n_features, dtype)
    start = _min_dist2(rng, X)
    start[rng.uniform(size=n_samples) < 0.2] = np.inf
    center = X[rng.randint(n_samples)] + dtype(0.25)
    expected, expected_evals = ref.d2_update(X, center, start)
    results = []
    for n_threads in (1, 2):
        min_dist2 = start.copy()
        n_evals = _seeding.d2_update(X, center, min_dist2, n_threads)
        assert n_evals == expected_evals == n_samples
        assert min_dist2.dtype == dtype
        assert_allclose(min_dist2, expected, rtol=RTOL[dtype])
        results.append(min_dist2)
    assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_d2_update_first_centre_and_exact_zero(dtype):
    _, X, _ = _data(CHUNK + 1, 12, dtype)
    min_dist2 = np.full(len(X), np.inf, dtype=dtype)
    _seeding.d2_update(X, X[5], min_dist2, 2)
    assert min_dist2[5] == 0
    assert np.all(np.isfinite(min_dist2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_candidates", [1, 9])
@pytest.mark.parametrize("n_features", FEATURES)
@pytest.mark.parametrize("n_samples", SIZES)
def test_d2_candidates_matches_reference(dtype, n_candidates, n_features, n_samples):
    rng, X, w = _data(n_samples, n_features, dtype)
    min_dist2 = _min_dist2(rng, X)
    # candidates: rows of X as in k-means++, plus points off the data
    candidates = X[rng.randint(n_samples, size=n_candidates)].copy()
    candidates[::2] += rng.normal(scale=0.5, size=candidates[::2].shape).astype(dtype)
    expected, expected_evals = ref.d2_candidates(X, w, candidates, min_dist2)
    results = []
    for n_threads in (1, 2):
        potentials = np.full(n_candidates, -1.0)
        n_evals = _seeding.d2_candidates(X, w, candidates, min_dist2, potentials, n_threads)
        assert n_evals == expected_evals == n_samples * n_candidates
        # gemm distances lose ~eps * ||x||^2 per term; the potential is a sum of such terms
        atol = 0 if n_features < 9 else 50 * np.finfo(dtype).eps * float(w @ (X * X).sum(1))
        assert_allclose(potentials, expected, rtol=RTOL[dtype], atol=atol)
        results.append(potentials)
    assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_d2_candidates_never_exceeds_current_potential(dtype):
    rng, X, w = _data(3 * CHUNK + 17, 12, dtype)
    min_dist2 = _min_dist2(rng, X)
    potentials = np.empty(9)
    _seeding.d2_candidates(X, w, np.ascontiguousarray(X[:9]), min_dist2, potentials, 2)
    current = float(w.astype(np.float64) @ min_dist2.astype(np.float64))
    assert np.all(potentials <= current * (1 + RTOL[dtype]))
    assert np.all(potentials >= 0)


def _chain_problem(n_samples, n_features, n_clusters, chain_length, dtype, seed=0):
    """Inputs of afkmc2_chain drawn the way AFKMC2 draws them."""
    rng, X, w = _data(n_samples, n_features, dtype, seed)
    w64 = w.astype(np.float64)
    first = int(np.flatnonzero(w > 0)[0])
    d2 = ref.sqdist(X, X[[first]])[:, 0]
    q = 0.5 * w64 / w64.sum()
    q += 0.5 * w64 * d2 / (w64 @ d2) if w64 @ d2 > 0 else q
    candidates = rng.choice(n_samples, size=(n_clusters - 1, chain_length), p=q / q.sum())
    uniforms = rng.uniform(size=(n_clusters - 1, chain_length))
    return X, w, q, first, candidates.astype(np.int32), uniforms


CHAIN_CASES = [  # (n_samples, n_clusters, chain_length)
    (1, 1, 5),
    (CHUNK - 1, 2, 1),
    (CHUNK + 1, 7, 30),
    (3 * CHUNK + 17, 12, 5),
    (CHUNK + 1, 70, 4),  # several blocks of AFKMC2_BLOCK = 32 steps
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_features", FEATURES)
@pytest.mark.parametrize("n_samples, n_clusters, chain_length", CHAIN_CASES)
def test_afkmc2_chain_matches_reference(dtype, n_features, n_samples, n_clusters,
                                        chain_length):
    X, w, q, first, candidates, uniforms = _chain_problem(
        n_samples, n_features, n_clusters, chain_length, dtype)
    expected_centers, expected_chosen, expected_evals = ref.afkmc2_chain(
        X, w, q, first, candidates, uniforms)
    results = []
    for n_threads in (1, 2):
        centers = np.empty((n_clusters, n_features), dtype=dtype)
        chosen = np.full(n_clusters, -1, dtype=np.int32)
        n_evals = _seeding.afkmc2_chain(X, w, q, first, candidates, uniforms, centers, chosen,
                                        n_threads)
        assert n_evals == expected_evals == chain_length * n_clusters * (n_clusters - 1) // 2
        assert_array_equal(chosen, expected_chosen)
        assert_array_equal(centers, expected_centers)
        results.append(centers)
    assert_array_equal(results[0], results[1])


def test_afkmc2_chain_rejects_existing_centres():
    # candidate 0 is the first centre (p = 0): the chain moves on whatever the uniforms say,
    # and never leaves a state with p > 0 for a candidate with p = 0
    X = np.array([[0.0], [1.0], [5.0]])
    w = np.ones(3)
    q = np.full(3, 1 / 3)
    candidates = np.array([[0, 2, 0, 0]], dtype=np.int32)
    uniforms = np.full((1, 4), 0.999)
    centers = np.empty((2, 1))
    chosen = np.empty(2, dtype=np.int32)
    _seeding.afkmc2_chain(X, w, q, 0, candidates, uniforms, centers, chosen, 1)
    assert_array_equal(chosen, [0, 2])
    assert_array_equal(centers, [[0.0], [5.0]])


def test_afkmc2_chain_acceptance_ratio():
    # from state 1 (p = 1) to candidate 2 (p = 25): ratio 25 accepts even for u close to 1;
    # back from 2 to 1 has ratio 1/25 = 0.04: rejected for u = 0.05, accepted for u = 0.03
    X = np.array([[0.0], [1.0], [5.0]])
    w, q = np.ones(3), np.full(3, 1 / 3)
    candidates = np.array([[1, 2, 1]], dtype=np.int32)
    for u, expected in [(0.05, 2), (0.03, 1)]:
        uniforms = np.array([[0.0, 0.999, u]])
        centers, chosen = np.empty((2, 1)), np.empty(2, dtype=np.int32)
        _seeding.afkmc2_chain(X, w, q, 0, candidates, uniforms, centers, chosen, 2)
        assert chosen[1] == expected
