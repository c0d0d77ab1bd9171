"""Tests for clusterkit.datasets: the BIRCH grid, Gaussian blobs and the benchmark loader."""
import numpy as np
import pytest

from clusterkit.datasets import (birch_grid_quantization_error, load_benchmark, make_birch_grid,
                                 make_gaussian_blobs)
from clusterkit.metrics import quantization_error


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_birch_grid_shapes_and_dtypes(dtype):
    X, y, centers = make_birch_grid(n_side=3, n_per_cluster=7, dtype=dtype, random_state=0)
    assert X.shape == (63, 2) and X.dtype == dtype and X.flags.c_contiguous
    assert y.shape == (63,) and y.dtype == np.int32
    assert centers.shape == (9, 2) and centers.dtype == dtype
    np.testing.assert_array_equal(np.bincount(y), np.full(9, 7))


def test_birch_grid_means_on_the_grid():
    spacing = 4 * np.sqrt(2)
    _, _, centers = make_birch_grid(n_side=4, n_per_cluster=1, random_state=0)
    j = np.arange(16)
    expected = np.column_stack([j // 4, j % 4]) * spacing
    np.testing.assert_allclose(centers, expected, rtol=0, atol=1e-12)
    # nearest-neighbour distance between means is the spacing
    d = np.sqrt(((centers[:, None] - centers[None]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    np.testing.assert_allclose(d.min(axis=1), spacing)


def test_birch_grid_sample_mean_and_variance():
    n = 4000
    X, y, centers = make_birch_grid(n_side=2, n_per_cluster=n, spacing=10.0, variance=2.5,
                                    random_state=1)
    for j in range(4):
        member = X[y == j]
        # standard error of the mean is sqrt(2.5 / 4000) = 0.025
        np.testing.assert_allclose(member.mean(axis=0), centers[j], atol=0.125)
        np.testing.assert_allclose(member.var(axis=0), [2.5, 2.5], rtol=0.1)


def test_birch_grid_zero_variance_puts_samples_on_means():
    X, y, centers = make_birch_grid(n_side=2, n_per_cluster=3, variance=0.0, random_state=0)
    np.testing.assert_array_equal(X, centers[y])


def test_birch_grid_shuffle_and_determinism():
    X1, y1, _ = make_birch_grid(n_side=3, n_per_cluster=5, random_state=42)
    X2, y2, _ = make_birch_grid(n_side=3, n_per_cluster=5, random_state=42)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.all(np.diff(y1) >= 0)
    _, y3, _ = make_birch_grid(n_side=3, n_per_cluster=5, shuffle=False, random_state=42)
    np.testing.assert_array_equal(y3, np.repeat(np.arange(9), 5))


def test_birch_grid_float32_is_the_cast_float64_draw():
    X64, y64, c64 = make_birch_grid(n_side=2, n_per_cluster=10, random_state=3)
    X32, y32, c32 = make_birch_grid(n_side=2, n_per_cluster=10, dtype=np.float32,
                                    random_state=3)
    np.testing.assert_array_equal(X32, X64.astype(np.float32))
    np.testing.assert_array_equal(y32, y64)
    np.testing.assert_array_equal(c32, c64.astype(np.float32))


def test_birch_grid_quantization_error_matches_the_data():
    assert birch_grid_quantization_error() == 100 * 100 * 2.0
    assert birch_grid_quantization_error(n_side=45) == 202_500 * 2.0
    assert birch_grid_quantization_error(n_side=64, variance=0.5) == 409_600.0
    X, _, centers = make_birch_grid(n_side=5, random_state=0)
    expected = birch_grid_quantization_error(n_side=5)
    # relative fluctuation is about sqrt(2 / (N D)) = 1.4 %
    np.testing.assert_allclose(quantization_error(X, centers), expected, rtol=0.06)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_side=0), ValueError, r"n_side=0 must be >= 1\."),
    (dict(n_side=2.0), TypeError, r"n_side must be an integer, got 2\.0\."),
    (dict(n_per_cluster=0), ValueError, r"n_per_cluster=0 must be >= 1\."),
    (dict(spacing=0.0), ValueError, r"spacing=0.0 must be a finite number > 0\."),
    (dict(spacing="1"), TypeError, r"spacing must be a real number, got str\."),
    (dict(variance=-1.0), ValueError, r"variance=-1.0 must be a finite number >= 0\."),
    (dict(variance=np.inf), ValueError, r"variance=inf must be a finite number >= 0\."),
    (dict(dtype=np.int64), ValueError, r"dtype=int64 is not supported; expected float32 or"),
])
def test_birch_grid_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        make_birch_grid(**kwargs)


def test_birch_grid_quantization_error_errors():
    with pytest.raises(ValueError, match=r"variance=-2.0 must be a finite number >= 0\."):
        birch_grid_quantization_error(variance=-2.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gaussian_blobs(dtype):
    X, y, centers = make_gaussian_blobs(101, 3, 4, cluster_std=0.5, dtype=dtype,
                                        random_state=0)
    assert X.shape == (101, 3) and X.dtype == dtype
    assert y.shape == (101,) and y.dtype == np.int32 and set(y) == {0, 1, 2, 3}
    assert centers.shape == (4, 3) and centers.dtype == dtype
    assert np.all((centers >= -10) & (centers <= 10))
    X2, y2, _ = make_gaussian_blobs(101, 3, 4, cluster_std=0.5, dtype=dtype, random_state=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)


def test_gaussian_blobs_errors():
    with pytest.raises(ValueError, match=r"n_clusters=0 must be >= 1\."):
        make_gaussian_blobs(10, 2, 0)
    with pytest.raises(ValueError, match=r"dtype=float16 is not supported"):
        make_gaussian_blobs(10, 2, 2, dtype=np.float16)


def test_load_benchmark_roundtrip(tmp_path, monkeypatch):
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 0, 1, 1, 2, 2])
    np.savez(tmp_path / "toy.npz", X=X, y=y)
    np.savez(tmp_path / "nolabels.npz", X=X)
    X_loaded, y_loaded = load_benchmark("toy", data_home=tmp_path)
    np.testing.assert_array_equal(X_loaded, X)
    np.testing.assert_array_equal(y_loaded, y)
    monkeypatch.setenv("CLUSTERKIT_DATA", str(tmp_path))
    X_loaded, y_loaded = load_benchmark("nolabels")
    np.testing.assert_array_equal(X_loaded, X)
    assert y_loaded is None


def test_load_benchmark_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("CLUSTERKIT_DATA", raising=False)
    with pytest.raises(FileNotFoundError,
                       match=r"environment variable CLUSTERKIT_DATA is not set"):
        load_benchmark("kdd")
    monkeypatch.setenv("CLUSTERKIT_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"kdd\.npz does not exist \(CLUSTERKIT_DATA="):
        load_benchmark("kdd")
    with pytest.raises(FileNotFoundError, match=r"kdd\.npz does not exist \(data_home="):
        load_benchmark("kdd", data_home=tmp_path / "missing")
    np.savez(tmp_path / "bad.npz", Z=np.zeros(3))
    with pytest.raises(ValueError, match=r"bad\.npz has no array 'X' \(found \['Z'\]\)\."):
        load_benchmark("bad")
    with pytest.raises(ValueError, match=r"name='a/b' must be a non-empty file stem"):
        load_benchmark("a/b")
