"""The dimension-pruned exact assignment against its NumPy twin and Lloyd's kernel."""
import numpy as np
import pytest

from clusterkit import _reference as ref
from clusterkit._kernels import _assign, _pruned
from clusterkit.estep.pruning import principal_axes, project, tolerances

from .._helpers import assert_labels_equal_up_to_ties
from ..conftest import rtol_for

CHUNK = 256
# (n_samples, n_features, n_clusters, n_prefix): one sample, chunk edges, several chunks plus
# a remainder, one cluster, a prefix of one feature and of all of them, few and many features
SHAPES = [(1, 3, 2, 1), (CHUNK - 1, 12, 7, 4), (CHUNK + 1, 20, 5, 20), (3 * CHUNK + 17, 40, 33, 8),
          (600, 16, 1, 3), (301, 64, 90, 16), (97, 2, 6, 1)]


def _data(shape, dtype, seed=0):
    """Rows and centres with a decaying spectrum (as after a PCA rotation), so that the
    prefix bound rules most centres out, and centres near the rows."""
    n, d, c = shape[:3]
    rng = np.random.default_rng(seed)
    scale = np.arange(1, d + 1) ** -1.0
    X = (rng.normal(size=(n, d)) * scale).astype(dtype)
    centers = (X[rng.integers(n, size=c)] + 0.1 * rng.normal(size=(c, d)) * scale).astype(dtype)
    return X, centers


def _projected(X, centers, n_axes, V=None):
    """The kernel's projected arguments for the leading ``n_axes`` principal axes (or
    ``V``)."""
    V = principal_axes(X, n_axes) if V is None else V
    X_proj, x_rest, x_max = project(X, V)
    centers_proj, centers_rest, c_max = project(centers, V)
    return (X_proj, x_rest, centers_proj, centers_rest,
            *tolerances(X.shape[1], V.shape[1], x_max, c_max))


def _run(X, centers, n_axes, n_threads, V=None):
    labels = np.full(len(X), -7, np.int32)
    dist2 = np.full(len(X), -1, X.dtype)
    counts = _pruned.assign_pruned(X, centers, *_projected(X, centers, n_axes, V), labels,
                                   dist2, n_threads)
    return labels, dist2, counts


def _reference(X, centers, n_axes, V=None):
    return ref.assign_pruned(X, centers, *_projected(X, centers, n_axes, V)[:4])


@pytest.mark.parametrize("shape", SHAPES)
def test_assign_pruned_matches_reference(shape, dtype, n_threads):
    X, centers = _data(shape, dtype)
    labels, dist2, (n_pairs, n_direct) = _run(X, centers, shape[3], n_threads)
    labels_ref, dist2_ref, n_pairs_ref, n_direct_min = _reference(X, centers, shape[3])
    assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol_for(dtype))
    d_own = ref.sqdist(X, centers)[np.arange(len(X)), labels]
    np.testing.assert_allclose(dist2, d_own, rtol=rtol_for(dtype) * 10, atol=rtol_for(dtype))
    assert n_pairs == n_pairs_ref == X.shape[0] * centers.shape[0]
    # every centre whose exact bound is below the nearest distance must have been completed;
    # the float bounds are lowered by their rounding, so a few more may be
    assert n_direct_min <= n_direct <= n_pairs
    assert n_direct <= n_direct_min + max(2, 0.05 * n_pairs)


@pytest.mark.parametrize("shape", SHAPES)
def test_assign_pruned_gives_lloyds_labels(shape, dtype):
    """The same labels as Lloyd's kernel, bit for bit: both rank near centres by the same
    direct distances, ties to the lower index."""
    X, centers = _data(shape, dtype, seed=2)
    labels, dist2, _ = _run(X, centers, shape[3], 2)
    labels_full = np.empty(len(X), np.int32)
    _assign.assign_full(X, centers, labels_full, np.empty(len(X), dtype), 1)
    np.testing.assert_array_equal(labels, labels_full)


def test_assign_pruned_prunes_with_a_decaying_spectrum(dtype):
    X, centers = _data((2000, 64, 200), dtype, seed=3)
    _, _, (n_pairs, n_direct) = _run(X, centers, 8, 2)
    assert n_direct < 0.2 * n_pairs


@pytest.mark.parametrize("n_clusters", [3500, 6500])
def test_assign_pruned_several_blocks_of_centres(n_clusters, dtype, n_threads):
    """More centres than one tile block holds (2,048 float64 or 4,096 float32, up to half as
    many again in one block): the best distance carries over from block to block."""
    X, centers = _data((CHUNK + 40, 12, n_clusters), dtype, seed=4)
    labels, dist2, (n_pairs, n_direct) = _run(X, centers, 3, n_threads)
    labels_ref, _, _, n_direct_min = _reference(X, centers, 3)
    assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol_for(dtype))
    assert n_direct_min <= n_direct < n_pairs


@pytest.mark.parametrize("shape", SHAPES)
def test_assign_pruned_same_for_one_and_two_threads(shape, dtype):
    X, centers = _data(shape, dtype, seed=1)
    one = _run(X, centers, shape[3], 1)
    two = _run(X, centers, shape[3], 2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    assert one[2] == two[2]


def test_assign_pruned_ties_go_to_lowest_index(dtype):
    X = np.zeros((5, 3), dtype)
    centers = np.ones((4, 3), dtype)
    labels, dist2, _ = _run(X, centers, 1, 1)
    np.testing.assert_array_equal(labels, 0)
    np.testing.assert_array_equal(dist2, 3)


def test_assign_pruned_any_orthonormal_axes(dtype):
    """Axes that carry no particular variance (a random rotation's) give the same labels:
    the bound is valid for any, only the work depends on them."""
    X, centers = _data((500, 24, 40), dtype, seed=5)
    V = np.linalg.qr(np.random.default_rng(5).normal(size=(24, 24)))[0][:, :6]
    labels, _, (n_pairs, n_direct) = _run(X, centers, 6, 2, V=V)
    labels_ref, _, _, n_direct_min = _reference(X, centers, 6, V=V)
    assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, rtol_for(dtype))
    assert n_direct_min <= n_direct <= n_pairs


def test_assign_pruned_empty_and_mismatched(dtype):
    X = np.zeros((0, 4), dtype)
    centers = np.ones((2, 4), dtype)
    args = (np.zeros((0, 2), dtype), np.zeros(0, dtype), np.zeros((2, 2), dtype),
            np.zeros(2, dtype), 0.0, 0.0)
    assert _pruned.assign_pruned(X, centers, *args, np.empty(0, np.int32), np.empty(0, dtype),
                                 1) == (0, 0)
    X = np.zeros((3, 4), dtype)
    bad = (np.zeros((3, 2), dtype), np.zeros(3, dtype), np.zeros((2, 3), dtype),
           np.zeros(2, dtype), 0.0, 0.0)
    with pytest.raises(ValueError, match="must give each row and centre 1 to n_features"):
        _pruned.assign_pruned(X, centers, *bad, np.empty(3, np.int32), np.empty(3, dtype), 1)
