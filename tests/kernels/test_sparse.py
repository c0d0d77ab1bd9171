"""CSR kernels (_sparse.pyx, and Elkan's CSR entry point) against their NumPy twins."""
import numpy as np
import pytest
import scipy.sparse as sp

from clusterkit import _reference as ref
from clusterkit._kernels import _elkan, _sparse

from .._helpers import assert_labels_equal_up_to_ties
from ..conftest import rtol_for

CHUNK = 256
# (n_samples, n_features, n_clusters): one sample, chunk edges, several chunks plus a
# remainder, a single cluster, one feature
SHAPES = [(1, 5, 2), (CHUNK - 1, 30, 7), (CHUNK + 1, 13, 1), (3 * CHUNK + 17, 41, 33),
          (300, 1, 4)]


def _csr(shape, dtype, density=0.2, seed=0):
    """CSR data with some rows without non-zeros (the first, and every seventh)."""
    n, d, _ = shape
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", dtype=np.float64, random_state=seed,
                  data_rvs=lambda size: rng.normal(size=size) * 3)
    X = X.astype(dtype)
    keep = np.ones(n)
    keep[::7] = 0
    X = sp.csr_matrix(sp.diags(keep) @ X, dtype=dtype)
    X.eliminate_zeros()
    X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    assert X.getnnz(axis=1)[0] == 0
    return X


def _centers(shape, dtype, seed=1):
    _, d, c = shape
    return np.random.default_rng(seed).normal(size=(c, d)).astype(dtype)


def _sqnorms(X, n_threads):
    out = np.empty(X.shape[0], dtype=X.dtype)
    _sparse.row_sqnorms(X.data, X.indptr, out, n_threads)
    return out


def _atol(X, centers, dtype):
    """Rounding of ||x||^2 - 2 x.c + ||c||^2 is relative to the norms, not the distance."""
    x_sqnorm = float(np.asarray(X.multiply(X).sum(1)).max(initial=0))
    scale = x_sqnorm + float((centers ** 2).sum(1).max())
    return 20 * np.finfo(dtype).eps * scale


@pytest.mark.parametrize("shape", SHAPES)
def test_row_sqnorms(shape, dtype, n_threads):
    X = _csr(shape, dtype)
    expected = np.asarray(X.astype(np.float64).multiply(X.astype(np.float64)).sum(1)).ravel()
    np.testing.assert_allclose(_sqnorms(X, n_threads), expected, rtol=rtol_for(dtype))


@pytest.mark.parametrize("shape", SHAPES)
def test_assign_sparse_matches_reference(shape, dtype):
    """Nearest centres (up to ties), distances within the rounding of the expansion, the
    evaluations counted, and the same bits for 1 and 2 threads."""
    X, centers = _csr(shape, dtype), _centers(shape, dtype)
    ref_labels, ref_dist2, ref_evals = ref.assign_sparse(X, centers)
    results = []
    for n_threads in (1, 2):
        labels = np.full(X.shape[0], -1, np.int32)
        dist2 = np.full(X.shape[0], np.nan, dtype)
        n_evals = _sparse.assign_sparse(X.data, X.indices, X.indptr, _sqnorms(X, n_threads),
                                        centers, labels, dist2, n_threads)
        assert n_evals == ref_evals
        assert (dist2 >= 0).all()
        assert_labels_equal_up_to_ties(X.toarray(), centers, labels, ref_labels,
                                       10 * rtol_for(dtype))
        d2 = ref.sparse_dist2(X, centers)[np.arange(X.shape[0]), labels]
        np.testing.assert_allclose(dist2, d2, rtol=rtol_for(dtype),
                                   atol=_atol(X, centers, dtype))
        np.testing.assert_allclose(dist2, ref_dist2, rtol=rtol_for(dtype),
                                   atol=_atol(X, centers, dtype))
        results.append((labels, dist2))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("shape", SHAPES)
def test_dist2_sparse_and_dist2_to_labels(shape, dtype, n_threads):
    """All distances match the direct ones; their row minimum is assign_sparse's choice with
    its distance; the distance to given labels matches too."""
    X, centers = _csr(shape, dtype), _centers(shape, dtype)
    sqnorms = _sqnorms(X, n_threads)
    expected = ref.sparse_dist2(X, centers)
    out = np.full((X.shape[0], centers.shape[0]), np.nan, dtype)
    n_evals = _sparse.dist2_sparse(X.data, X.indices, X.indptr, sqnorms, centers, out,
                                   n_threads)
    assert n_evals == out.size
    np.testing.assert_allclose(out, expected, rtol=rtol_for(dtype),
                               atol=_atol(X, centers, dtype))
    labels = np.empty(X.shape[0], np.int32)
    dist2 = np.empty(X.shape[0], dtype)
    _sparse.assign_sparse(X.data, X.indices, X.indptr, sqnorms, centers, labels, dist2,
                          n_threads)
    np.testing.assert_array_equal(out.argmin(1), labels)
    np.testing.assert_array_equal(out.min(1), dist2)
    given = np.random.default_rng(2).integers(0, centers.shape[0], X.shape[0]).astype(np.int32)
    to_labels = np.full(X.shape[0], np.nan, dtype)
    n_evals = _sparse.dist2_to_labels_sparse(X.data, X.indices, X.indptr, sqnorms, centers,
                                             given, to_labels, n_threads)
    assert n_evals == X.shape[0]
    np.testing.assert_allclose(to_labels, expected[np.arange(X.shape[0]), given],
                               rtol=rtol_for(dtype), atol=_atol(X, centers, dtype))


@pytest.mark.parametrize("with_sse", [False, True], ids=["no_sse", "sse"])
@pytest.mark.parametrize("shape", SHAPES + [(2000, 50, 300)])
def test_accumulate_sparse_is_its_reference_bit_for_bit(shape, with_sse, dtype, n_threads):
    """The dense owner layout's sums of the densified rows, bit for bit, zero weights and
    empty clusters included."""
    X = _csr(shape, dtype)
    n, _, c = shape
    rng = np.random.default_rng(3)
    w = (rng.random(n) + 0.1).astype(dtype)
    w[::11] = 0
    labels = rng.integers(0, max(c - 1, 1), n).astype(np.int32)  # the last cluster empty
    dist2 = rng.random(n) * 5 if with_sse else None
    sums = np.full((c, X.shape[1]), np.nan, dtype)
    weight = np.full(c, np.nan, dtype)
    sse = np.full(c, np.nan) if with_sse else None
    _sparse.accumulate_sparse(X.data, X.indices, X.indptr, w, labels, dist2, sums, weight,
                              sse, n_threads)
    expected = ref.accumulate_sparse(X, w, labels, dist2, c)
    np.testing.assert_array_equal(sums, expected[0])
    np.testing.assert_array_equal(weight, expected[1])
    if with_sse:
        np.testing.assert_array_equal(sse, expected[2])


@pytest.mark.parametrize("n_candidates", [1, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_d2_update_sparse_matches_reference(shape, n_candidates, dtype):
    X = _csr(shape, dtype)
    rng = np.random.default_rng(4)
    candidates = X[rng.integers(0, X.shape[0], n_candidates)].toarray()
    min_dist2 = (rng.random(X.shape[0]) * 10).astype(dtype)
    min_dist2[::5] = np.inf
    expected, ref_evals = ref.d2_update_sparse(X, candidates, min_dist2)
    results = []
    for n_threads in (1, 2):
        out = np.full((n_candidates, X.shape[0]), np.nan, dtype)
        n_evals = _sparse.d2_update_sparse(X.data, X.indices, X.indptr, _sqnorms(X, n_threads),
                                           candidates, min_dist2, out, n_threads)
        assert n_evals == ref_evals
        np.testing.assert_allclose(out, expected, rtol=rtol_for(dtype),
                                   atol=_atol(X, candidates, dtype))
        results.append(out)
    np.testing.assert_array_equal(*results)
    # in place, one candidate: min_dist2 lowered where it lay
    inplace = min_dist2.copy()
    _sparse.d2_update_sparse(X.data, X.indices, X.indptr, _sqnorms(X, 1), candidates[:1],
                             inplace, inplace[None], 1)
    np.testing.assert_array_equal(inplace, results[0][0])


@pytest.mark.parametrize("shape", SHAPES)
def test_elkan_assign_sparse_is_nearest_centre_with_valid_bounds(shape, dtype):
    """First visits and a visit after the centres moved: nearest centres (up to ties),
    distances within rounding, bounds below the true distances, 1 and 2 threads alike."""
    X, centers = _csr(shape, dtype), _centers(shape, dtype)
    n, _, c = shape
    slack = 2.0 ** -12 if dtype == np.float32 else 2.0 ** -20
    moved = (centers + 0.3 * np.random.default_rng(5).normal(size=centers.shape)).astype(dtype)
    shift = np.sqrt(((moved.astype(np.float64) - centers) ** 2).sum(1))
    results = []
    for n_threads in (1, 2):
        lower = np.empty((n, c), np.float32)
        last_dist2, visit_shift = np.empty(n, dtype), np.empty(n)
        previous = np.full(n, -1, np.int32)
        shift_sum = np.zeros(c)
        rows = np.arange(n, dtype=np.intp)
        for step, cents in enumerate((centers, moved)):
            if step:
                shift_sum = shift_sum + shift
            half_cc, half_min = np.empty((c, c)), np.empty(c)
            _elkan.center_half_distances(cents, half_cc, half_min, 1)
            labels, dist2 = np.empty(n, np.int32), np.empty(n, dtype)
            n_evals = _elkan.elkan_assign_sparse(
                X.data, X.indices, X.indptr, _sqnorms(X, 1), rows, cents, half_cc, half_min,
                shift_sum, lower, previous, last_dist2, visit_shift, labels, dist2, slack,
                n_threads)
            assert 0 < n_evals <= n * c
            ref_labels, _, _ = ref.assign_sparse(X, cents)
            assert_labels_equal_up_to_ties(X.toarray(), cents, labels, ref_labels,
                                           10 * rtol_for(dtype))
            exact = ref.sparse_dist2(X, cents)
            np.testing.assert_allclose(dist2, exact[np.arange(n), labels],
                                       rtol=rtol_for(dtype), atol=_atol(X, cents, dtype))
            valid = lower.astype(np.float64) - shift_sum
            assert (valid <= np.sqrt(exact) * (1 + 1e-6) + 1e-3).all()
            previous = labels.copy()
        results.append((labels, dist2))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("n_clusters,n_features", [(1, 4), (7, 30), (40, 200)])
def test_sparse_center_half_distances_are_tight_lower_bounds(n_clusters, n_features, dtype,
                                                              n_threads):
    """Elkan's centre half distances from CSR centres: never above the exact ones (so the
    pruning stays exact), within rounding of them, symmetric, zero on the diagonal."""
    from clusterkit._data.sparse import center_half_distances
    rng = np.random.default_rng(6)
    centers = rng.normal(size=(n_clusters, n_features)).astype(dtype)
    centers[rng.random(centers.shape) < 0.8] = 0
    centers[-1] = centers[0]  # a duplicate centre (distance 0)
    half_cc, half_min = np.full((n_clusters,) * 2, np.nan), np.full(n_clusters, np.nan)
    n_evals = center_half_distances(centers, half_cc, half_min, n_threads)
    assert n_evals == n_clusters * (n_clusters - 1) // 2
    exact = np.sqrt(ref.sqdist(centers, centers)) / 2
    assert (half_cc <= exact * (1 + 1e-12) + 1e-300).all()
    np.testing.assert_allclose(half_cc, exact, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(half_cc, half_cc.T)
    np.testing.assert_array_equal(np.diag(half_cc), 0)
    off = np.where(np.eye(n_clusters, dtype=bool), np.inf, half_cc)
    np.testing.assert_array_equal(half_min, off.min(1))
