"""The gemm assignment blocked over the centres, and its float32 products for float64 data,
against the direct-distance reference."""
import numpy as np
import pytest

from clusterkit import _reference as ref
from clusterkit._kernels import _assign

from .._helpers import assert_labels_equal_up_to_ties
from ..conftest import rtol_for

# (n_samples, n_features, n_clusters): centres in several tile blocks (4096 float32, 2048
# float64 per block) with a short last one, with float32 products too, odd sizes, chunk edges.
SHAPES = [(257, 13, 6500), (130, 70, 6200), (300, 33, 700), (513, 70, 45), (1, 64, 3)]


def _data(shape, dtype, seed=0):
    n, d, c = shape
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, d)).astype(dtype), rng.normal(size=(c, d)).astype(dtype))


def _assign_full(X, centers, n_threads, X32=None):
    labels = np.empty(len(X), np.int32)
    dist2 = np.empty(len(X), X.dtype)
    n_evals = _assign.assign_full(X, centers, labels, dist2, n_threads, X32)
    return labels, dist2, n_evals


def _direct_labels(X, centers):
    """Nearest centres by direct float64 distances, ties to the lower index."""
    return ref.sqdist(X, centers).argmin(axis=1)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mixed", [False, True], ids=["own", "mixed"])
def test_blocked_assign_matches_reference(shape, mixed, dtype, n_threads):
    X, centers = _data(shape, dtype)
    X32 = _assign.float32_products(X) if mixed else None
    assert (X32 is not None) == (mixed and dtype == np.float64)
    labels, dist2, n_evals = _assign_full(X, centers, n_threads, X32)
    labels_ref, _, n_ref = ref.assign_full(X, centers)
    assert n_evals == n_ref
    assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol_for(dtype))
    d_own = ref.sqdist(X, centers)[np.arange(len(X)), labels]
    np.testing.assert_allclose(dist2, d_own, rtol=rtol_for(dtype) * 10,
                               atol=rtol_for(dtype) * 10)


@pytest.mark.parametrize("shape", SHAPES)
def test_mixed_products_give_the_labels_of_float64_products(shape, n_threads):
    X, centers = _data(shape, np.float64, seed=3)
    own = _assign_full(X, centers, n_threads)
    mixed = _assign_full(X, centers, n_threads, _assign.float32_products(X))
    np.testing.assert_array_equal(mixed[0], own[0])
    assert mixed[2] == own[2]
    # the distance is computed directly in float64
    d_own = ref.sqdist(X, centers)[np.arange(len(X)), own[0]]
    np.testing.assert_allclose(mixed[1], d_own, rtol=1e-13)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mixed", [False, True], ids=["own", "mixed"])
def test_blocked_assign_same_for_one_and_two_threads(shape, mixed, dtype):
    X, centers = _data(shape, dtype, seed=1)
    X32 = _assign.float32_products(X) if mixed else None
    one, two = _assign_full(X, centers, 1, X32), _assign_full(X, centers, 2, X32)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])


@pytest.mark.parametrize("n_features", [20, 65])
@pytest.mark.parametrize("tied", [(3, 5000), (1, 4100, 6150), (4000, 6199)])
@pytest.mark.parametrize("mixed", [False, True], ids=["own", "mixed"])
def test_ties_across_blocks_go_to_the_lowest_index(n_features, tied, mixed, dtype,
                                                   n_threads):
    # integer data: every point exactly between the tied centres, in different tile blocks
    rng = np.random.default_rng(2)
    n_clusters = 6200
    centers = rng.integers(-3, 4, size=(n_clusters, n_features)).astype(dtype) + 40
    X = rng.integers(-2, 3, size=(301, n_features)).astype(dtype)
    X[:, 0] = 0
    for sign, j in zip([1, -1, 1], tied):
        centers[j] = 0
        centers[j, 0] = sign
    X32 = _assign.float32_products(X) if mixed else None
    labels, dist2, _ = _assign_full(X, centers, n_threads, X32)
    np.testing.assert_array_equal(labels, min(tied))
    np.testing.assert_array_equal(labels, _direct_labels(X, centers))
    np.testing.assert_allclose(dist2, (X.astype(np.float64) ** 2).sum(axis=1) + 1,
                               rtol=rtol_for(dtype))


@pytest.mark.parametrize("n_copies", [2, 17, 40])
@pytest.mark.parametrize("mixed", [False, True], ids=["own", "mixed"])
def test_many_equal_nearest_centres_go_to_the_lowest_index(n_copies, mixed, dtype, n_threads):
    # more equal nearest centres than a row keeps as near-ties (16): its row is recomputed
    rng = np.random.default_rng(5)
    n_features, n_clusters = 70, 6200
    centers = rng.integers(-3, 4, size=(n_clusters, n_features)).astype(dtype) + 40
    X = rng.integers(-2, 3, size=(300, n_features)).astype(dtype)
    copies = np.sort(rng.choice(n_clusters, n_copies, replace=False))
    centers[copies] = 1
    X32 = _assign.float32_products(X) if mixed else None
    labels, dist2, _ = _assign_full(X, centers, n_threads, X32)
    np.testing.assert_array_equal(labels, copies[0])
    np.testing.assert_allclose(dist2, ((X.astype(np.float64) - 1) ** 2).sum(axis=1),
                               rtol=rtol_for(dtype))


@pytest.mark.parametrize("n_clusters", [5, 600])
def test_mixed_products_settle_what_float32_cannot_see(n_clusters, n_threads):
    # two centres closer together than float32 resolves: float64 distances must decide
    rng = np.random.default_rng(7)
    n_features = 96
    X = rng.normal(size=(300, n_features)) * 1e-3
    centers = rng.normal(size=(n_clusters, n_features)) + 50.0
    centers[n_clusters - 2] = 1.0
    centers[n_clusters - 1] = 1.0
    centers[n_clusters - 1, 0] -= 1e-9  # nearer to every x, by less than float32 resolves
    X32 = _assign.float32_products(X)
    labels, dist2, _ = _assign_full(X, centers, n_threads, X32)
    np.testing.assert_array_equal(labels, n_clusters - 1)
    np.testing.assert_array_equal(labels, _assign_full(X, centers, n_threads)[0])
    np.testing.assert_allclose(dist2, ref.sqdist(X, centers)[:, -1], rtol=1e-14)


def test_float32_products_only_where_they_apply():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 20))
    X32 = _assign.float32_products(X)
    assert X32.dtype == np.float32 and X32.flags.c_contiguous
    np.testing.assert_array_equal(X32[:, :-1], X.astype(np.float32))
    np.testing.assert_allclose(X32[:, -1], (X ** 2).sum(axis=1), rtol=1e-6)
    assert _assign.float32_products(X.astype(np.float32)) is None  # float32 data
    assert _assign.float32_products(X[:, :3]) is None  # few features: direct loops
    assert _assign.float32_products(X * 1e16) is None  # float32 squares could overflow
    X[3, 4] = np.nan
    assert _assign.float32_products(X) is None


def test_mixed_products_keep_float64_products_for_huge_centres():
    X, centers = _data((100, 20, 7), np.float64, seed=4)
    centers[2] = 1e16
    own = _assign_full(X, centers, 2)
    mixed = _assign_full(X, centers, 2, _assign.float32_products(X))
    for a, b in zip(own, mixed):
        np.testing.assert_array_equal(a, b)


def test_assign_full_accumulate_with_mixed_products():
    from clusterkit._kernels import _mstep
    X, centers = _data((9000, 70, 300), np.float64, seed=5)
    X32 = _assign.float32_products(X)
    n, c, d = X.shape[0], len(centers), X.shape[1]
    w = np.random.default_rng(6).random(n)
    assert _mstep.blocks_fit(n, c, d, X.itemsize)
    labels, dist2 = np.empty(n, np.int32), np.empty(n)
    sums, weight, sse = np.empty((c, d)), np.empty(c), np.empty(c)
    _assign.assign_full_accumulate(X, w, centers, labels, dist2, sums, weight, 2, sse, X32)
    labels_ref, dist2_ref, _ = _assign_full(X, centers, 2, X32)
    np.testing.assert_array_equal(labels, labels_ref)
    np.testing.assert_array_equal(dist2, dist2_ref)
    sums_ref, weight_ref, sse_ref = np.empty((c, d)), np.empty(c), np.empty(c)
    _mstep.accumulate_statistics(X, w, labels[:, None], None, dist2, sums_ref, weight_ref,
                                 sse_ref, 1)
    np.testing.assert_array_equal(sums, sums_ref)
    np.testing.assert_array_equal(weight, weight_ref)
    np.testing.assert_array_equal(sse, sse_ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_clusters", [3, 300, 5000])
def test_distance_is_direct_for_rows_without_near_ties(dtype, n_clusters):
    """Rows within a thousandth of their centres, away from the origin: the distance is the
    direct one to the label, not ``||x||^2 - 2 x.c + ||c||^2``, whose rounding is larger
    than the distance itself."""
    rng = np.random.default_rng(5)
    centers = (rng.normal(size=(n_clusters, 64)) + 10).astype(dtype)
    X = (centers[:3] + rng.normal(size=(3, 64)) * 1e-3).astype(dtype)
    labels, dist2, _ = _assign_full(X, centers, 1)
    np.testing.assert_array_equal(labels, [0, 1, 2])
    direct = ((X.astype(np.float64) - centers[:3]) ** 2).sum(axis=1)
    np.testing.assert_allclose(dist2, direct, rtol=rtol_for(dtype) * 10)
