"""The empty-cluster rule of the M-steps and the accuracy of the soft M-step's variance."""
import numpy as np
import pytest

from clusterkit import Assignment, Clusterer, FitState, SoftMStep, TruncatedEStep
from clusterkit._data import blocks
from clusterkit.mstep import centres as _mstep
from clusterkit._engine.far_rows import batch_far_rows, largest
from clusterkit.mstep.batch_rules import relocate_empty

from .conftest import make_state


@pytest.mark.parametrize("seed", range(20))
def test_largest_equals_a_stable_full_sort(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    score = rng.integers(0, 5, n).astype(float)  # many ties
    for k in range(n + 1):
        np.testing.assert_array_equal(largest(score, k),
                                      np.argsort(-score, kind="stable")[:k])


def _relocate(X, centers, weight=None):
    """Relocation after one hard M-step from ``centers``, withdrawing the moved samples."""
    X = np.asarray(X, dtype=float).reshape(-1, 1)
    w = np.ones(len(X)) if weight is None else np.asarray(weight, dtype=float)
    d2 = (X - np.asarray(centers, dtype=float).T) ** 2
    labels = np.argmin(d2, axis=1).astype(np.int32)
    assignment = Assignment(labels=labels, dist2=d2[np.arange(len(X)), labels],
                            objective=0.0, qe=0.0)
    weight_in = np.bincount(labels, w, minlength=len(centers))
    new = np.array(centers, dtype=float).reshape(-1, 1)
    has = weight_in > 0
    new[has, 0] = np.bincount(labels, w * X[:, 0], minlength=len(centers))[has] / weight_in[has]
    state = make_state(X, len(centers))
    n = relocate_empty(new, weight_in, batch_far_rows(X, w, assignment, 1), state,
                       withdraw=True)
    return n, new[:, 0], weight_in


def test_relocation_withdraws_the_moved_sample():
    """The moved sample leaves its cluster, whose centre is the mean of the others."""
    n, centers, weight = _relocate([0.0, 10.0, 12.0, 13.0], [[0.0], [11.0], [100.0]],
                                   weight=[1.0, 1.0, 2.0, 1.0])
    # farthest weighted: 13 (w 1, d2 4) then 10 (d2 1) and 12 (w 2, d2 1): 13 moves
    assert n == 1
    np.testing.assert_allclose(centers, [0.0, (10 + 2 * 12) / 3, 13.0])
    np.testing.assert_allclose(weight, [1.0, 3.0, 1.0])


def test_relocation_takes_no_sample_alone_or_on_its_centre():
    """A sample alone in its cluster would empty it; one on its centre would duplicate a
    centre: the empty cluster stays where it was."""
    n, centers, _ = _relocate([0.0, 0.0, 5.0], [[0.0], [4.0], [50.0]])
    assert n == 0
    np.testing.assert_allclose(centers, [0.0, 5.0, 50.0])


def _far_apart(n_per_cluster):
    """Two unit-variance float32 blobs 1e4 apart: ||mu||^2 / sigma^2 is about 1e8."""
    rng = np.random.RandomState(0)
    X = np.vstack([rng.normal(size=(n_per_cluster, 2)),
                   rng.normal(size=(n_per_cluster, 2)) + 1e4])
    return X.astype(np.float32)


@pytest.mark.parametrize("n_per_cluster", [500, 50])
def test_dense_soft_variance_of_far_apart_float32_clusters(n_per_cluster):
    """Full responsibilities give the variance of truncated ones and of float64 data (the
    identity sum w ||x||^2 - sum U ||mu||^2 in float32 was off by 140%, or hit the floor)."""
    X = _far_apart(n_per_cluster)
    dense = Clusterer(2, mstep="soft", random_state=0).fit(X).sigma2_
    truncated = Clusterer(2, estep=TruncatedEStep(2), mstep="soft", random_state=0).fit(X)
    double = Clusterer(2, mstep="soft", random_state=0).fit(X.astype(np.float64))
    assert 0.5 < dense < 2.0
    assert dense == pytest.approx(truncated.sigma2_, rel=1e-4)
    assert dense == pytest.approx(double.sigma2_, rel=1e-4)


@pytest.mark.parametrize("chunk_bytes", [None, 1])
def test_dense_soft_update_is_exact_for_the_stored_responsibilities(monkeypatch, chunk_bytes):
    """One dense update on float32 data and responsibilities (rows not summing to exactly
    one), non-unit weights and an odd number of rows spanning several chunks: the variance
    is that of the returned centres, computed directly in float64."""
    if chunk_bytes is not None:  # the smallest chunks
        monkeypatch.setattr(blocks, "SOFT_MSTEP_BLOCK_BYTES", chunk_bytes)
    n_clusters, n_features = 3, 3
    chunk = _mstep._dense_rows(n_clusters)
    n_samples = 2 * chunk + 101  # odd, two full chunks and a partial one
    rng = np.random.RandomState(1)
    # two clusters close together (soft responsibilities between them), one 1.7e4 away
    means = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1e4, 1e4, -1e4]])
    true = rng.randint(n_clusters, size=n_samples)
    X = (means[true] + rng.normal(size=(n_samples, n_features))).astype(np.float32)
    X -= X.mean(0)
    w = rng.uniform(0.5, 2.0, n_samples).astype(np.float32)
    logits = rng.normal(size=(n_samples, n_clusters)).astype(np.float32)
    logits[:, 2] += np.where(true == 2, 25, -25)  # nearly hard between near and far
    resp = np.exp(logits - logits.max(1, keepdims=True))
    resp /= resp.sum(1, keepdims=True)
    assert resp.dtype == np.float32
    assert np.abs(resp.sum(1, dtype=np.float64) - 1).max() > 1e-8  # not exactly one
    centers = (means - means.mean(0)).astype(np.float32)
    dist2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    labels = dist2.argmin(1).astype(np.int32)
    assignment = Assignment(labels=labels, dist2=dist2[np.arange(n_samples), labels],
                            objective=0.0, qe=0.0, resp=resp)
    state = FitState(n_clusters=n_clusters, n_features=n_features,
                     random_state=np.random.RandomState(0), n_threads=1, needs_resp=True)

    centers_new = SoftMStep().update(X, w, assignment, centers, state)

    assert centers_new.dtype == np.float32
    X64, w64, r64 = X.astype(np.float64), w.astype(np.float64), resp.astype(np.float64)
    weight = w64 @ r64
    np.testing.assert_allclose(centers_new, (r64.T @ (w64[:, None] * X64)) / weight[:, None],
                               rtol=1e-6, atol=1e-3)
    mu = centers_new.astype(np.float64)
    d2 = ((X64[:, None, :] - mu[None]) ** 2).sum(-1)
    sigma2 = float(w64 @ (r64 * d2).sum(1)) / (n_features * w64.sum())
    assert 0.5 < sigma2 < 5.0
    assert state.run.sigma2 == pytest.approx(sigma2, rel=1e-6)
