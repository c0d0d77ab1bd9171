"""Tests for clusterkit.metrics against plain NumPy."""
import itertools

import numpy as np
import pytest

from clusterkit.metrics import clustering_accuracy, nmi, quantization_error

RTOL = {np.float32: 1e-5, np.float64: 1e-10}


def brute_force_qe(X, centers, sample_weight=None):
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    d2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(-1).min(axis=1)
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    return float(d2 @ w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n_samples, n_features, n_clusters", [
    (1, 2, 1), (255, 3, 5), (257, 12, 7), (700, 2, 30), (600, 20, 1),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_quantization_error_matches_brute_force(dtype, n_threads, n_samples, n_features,
                                                n_clusters, weighted):
    rng = np.random.RandomState(0)
    X = (rng.standard_normal((n_samples, n_features)) + 5).astype(dtype)
    centers = X[rng.choice(n_samples, n_clusters)] + rng.standard_normal(
        (n_clusters, n_features)).astype(dtype)
    w = rng.uniform(0, 3, n_samples).astype(dtype) if weighted else None
    got = quantization_error(X, centers, w, n_threads=n_threads)
    assert isinstance(got, float)
    np.testing.assert_allclose(got, brute_force_qe(X, centers, w), rtol=RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_quantization_error_same_for_any_thread_count(dtype):
    rng = np.random.RandomState(1)
    X = rng.standard_normal((1000, 10)).astype(dtype)
    centers = rng.standard_normal((17, 10)).astype(dtype)
    assert (quantization_error(X, centers, n_threads=1)
            == quantization_error(X, centers, n_threads=2))


def test_quantization_error_far_from_origin_float32():
    # centring avoids the cancellation of ||x||^2 - 2 x.c + ||c||^2 on the gemm path
    rng = np.random.RandomState(2)
    X = (rng.standard_normal((500, 16)) + 1e4).astype(np.float32)
    centers = X[:10] + np.float32(0.1)
    np.testing.assert_allclose(quantization_error(X, centers), brute_force_qe(X, centers),
                               rtol=1e-4)


def test_quantization_error_weights():
    rng = np.random.RandomState(3)
    X = rng.standard_normal((50, 4))
    centers = rng.standard_normal((3, 4))
    # unit weights equal no weights; weight 2 equals duplicating the row; weight 0 drops it
    assert quantization_error(X, centers, np.ones(50)) == quantization_error(X, centers)
    # a scalar weighs every sample
    assert quantization_error(X, centers, 2.0) == 2 * quantization_error(X, centers)
    w = np.ones(50)
    w[7] = 2.0
    w[9] = 0.0
    X_dup = np.vstack([np.delete(X, 9, axis=0), X[7:8]])
    np.testing.assert_allclose(quantization_error(X, centers, w),
                               quantization_error(X_dup, centers), rtol=1e-12)


def test_quantization_error_int_input_and_list_weights():
    X = [[0, 0], [1, 0], [10, 0]]
    assert quantization_error(X, [[0, 0], [10, 0]]) == 1.0
    assert quantization_error(X, [[0, 0], [10, 0]], sample_weight=[1, 3, 1]) == 3.0
    assert quantization_error(X, [[0.5, 0.0]]) == 0.25 + 0.25 + 9.5 ** 2


@pytest.mark.parametrize("centers, sample_weight, error, match", [
    (np.zeros((2, 3)), None, ValueError, r"centers has 3 features, but X has 2\."),
    (np.zeros((2, 2)), np.ones(4), ValueError,
     r"sample_weight has 4 entries, but X has 5 samples\."),
    (np.zeros((2, 2)), np.ones((5, 1)), ValueError,
     r"sample_weight must be 1-D, got shape \(5, 1\)\."),
    (np.zeros((2, 2)), [1.0, -1.0, 1.0, -2.0, 1.0], ValueError,
     r"sample_weight has 2 negative entries; weights must be non-negative\."),
    (np.zeros((2, 2)), [1.0, np.nan, 1.0, 1.0, 1.0], ValueError,
     r"sample_weight has 1 non-finite entries; weights must be finite\."),
    (np.zeros((2, 2)), np.zeros(5), ValueError,
     r"sample_weight is zero everywhere; at least one weight must be positive\."),
    (np.zeros((2, 2)), ["a"] * 5, TypeError, r"sample_weight must be numeric, got dtype <U1\."),
    (np.full((2, 2), np.nan), None, ValueError, r"Input centers contains NaN"),
    (np.zeros((0, 2)), None, ValueError, r"Found array with 0 sample"),
])
def test_quantization_error_errors(centers, sample_weight, error, match):
    X = np.zeros((5, 2))
    with pytest.raises(error, match=match):
        quantization_error(X, centers, sample_weight)


def test_quantization_error_rejects_bad_X():
    with pytest.raises(ValueError, match=r"Input X contains infinity"):
        quantization_error([[np.inf, 0.0]], [[0.0, 0.0]])


def test_clustering_accuracy_permuted_labels():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 6, 300)
    perm = rng.permutation(6)
    assert clustering_accuracy(y, perm[y]) == 1.0
    assert clustering_accuracy(y, np.array(list("abcdef"))[y]) == 1.0


def test_clustering_accuracy_values():
    assert clustering_accuracy([0, 0, 1, 1, 2], [2, 2, 0, 0, 0]) == 0.8
    # more predicted clusters than classes: the extra cluster counts as wrong
    assert clustering_accuracy([0, 0, 0, 1, 1, 1], [5, 5, 7, 9, 9, 9]) == 5 / 6
    # a single predicted cluster matches the largest class only
    assert clustering_accuracy([0, 1, 1, 2, 2, 2], [0] * 6) == 0.5


def test_clustering_accuracy_is_the_best_matching():
    rng = np.random.RandomState(4)
    y_true = rng.randint(0, 4, 40)
    y_pred = rng.randint(0, 4, 40)
    best = max(np.mean(np.array(p)[y_pred] == y_true)
               for p in itertools.permutations(range(4)))
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(best)


def test_nmi():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 5, 2000)
    assert nmi(y, rng.permutation(5)[y]) == pytest.approx(1.0)
    other = rng.randint(0, 5, 2000)
    assert nmi(y, other) == pytest.approx(nmi(other, y))
    assert 0.0 <= nmi(y, other) < 0.01
    # by hand: H(T) = log 2, H(P) = log 4 - 3/4 log 3, I = H(T) - 3/4 H(2/3, 1/3)
    h_t, h_p = np.log(2), np.log(4) - 0.75 * np.log(3)
    mi = h_t - 0.75 * (np.log(3) - 2 / 3 * np.log(2))
    assert nmi([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(mi / ((h_t + h_p) / 2))


@pytest.mark.parametrize("metric", [nmi, clustering_accuracy])
@pytest.mark.parametrize("labels_true, labels_pred, match", [
    ([0, 1, 1], [0, 1], r"labels_true has 3 entries, but labels_pred has 2; they must label"),
    ([[0, 1]], [0, 1], r"labels_true has shape \(1, 2\); expected a 1-d array of labels\."),
    ([0, 1], [[0], [1]], r"labels_pred has shape \(2, 1\); expected a 1-d array"),
    ([], [], r"labels_true is empty; expected at least one label\."),
    ([0.0, np.nan], [0, 1], r"labels_true contains NaN, which is not a label\."),
])
def test_label_metric_errors(metric, labels_true, labels_pred, match):
    with pytest.raises(ValueError, match=match):
        metric(labels_true, labels_pred)


@pytest.mark.parametrize("metric", [nmi, clustering_accuracy])
def test_label_metrics_take_strings_and_refuse_mixed_types(metric):
    assert metric(["a", "a", "b"], ["x", "x", "y"]) == 1.0
    with pytest.raises(TypeError, match=r"^labels_pred mixes values that cannot be compared"):
        metric([0, 0, 1], np.array([None, 1, 1], dtype=object))
