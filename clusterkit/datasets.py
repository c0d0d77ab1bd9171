"""Synthetic data sets for examples, tests and benchmarks, and a loader for local benchmark files.

Nothing here downloads anything. :func:`make_birch_grid` builds the BIRCH grid used by Forster &
Lücke (2018) to study clustering with many clusters; :func:`make_gaussian_blobs` is a thin
wrapper over :func:`sklearn.datasets.make_blobs` that follows clusterkit's dtype and label
conventions; :func:`load_benchmark` reads real data sets that the user has stored locally.
"""
import numbers
import os

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.utils import check_random_state

from ._estimator.validation import check_int

__all__ = [
    "make_birch_grid",
    "birch_grid_quantization_error",
    "make_gaussian_blobs",
    "load_benchmark",
]

DATA_ENV_VAR = "CLUSTERKIT_DATA"


def _check_nonnegative_float(name, value, strict):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (strict and value == 0):
        expected = "a finite number > 0" if strict else "a finite number >= 0"
        raise ValueError(f"{name}={value!r} must be {expected}.")
    return value


def _check_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"dtype={dtype.name} is not supported; expected float32 or float64.")
    return dtype


def make_birch_grid(n_side=10, n_per_cluster=100, spacing=4 * np.sqrt(2), variance=1.0,
                    dtype=np.float64, shuffle=True, random_state=None):
    """Generate the BIRCH grid: isotropic 2-D Gaussians whose means sit on a square grid.

    ``C = n_side**2`` clusters, each with ``n_per_cluster`` samples drawn from
    ``N(mu_c, variance * I_2)``; the means are ``{0, ..., n_side - 1}**2 * spacing``, so the
    nearest-neighbour distance between means is ``spacing``. With the defaults this is the data
    of Forster & Lücke (2018, §4), who used ``n_side`` from 5 (C=25, N=2,500) to 64 (C=4096,
    N=409,600); their Table 2 uses ``n_side=45`` (C=2025, N=202,500) and ``n_side=64``.

    Parameters
    ----------
    n_side : int, default=10
        Number of clusters along each axis of the grid.
    n_per_cluster : int, default=100
        Number of samples per cluster.
    spacing : float, default=4*sqrt(2)
        Distance between neighbouring means along an axis.
    variance : float, default=1.0
        Variance of every cluster in each dimension (0 puts every sample on its mean).
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X`` and ``centers``. Samples are drawn in float64 and then cast, so both
        dtypes give the same data up to rounding.
    shuffle : bool, default=True
        Shuffle the samples. When ``False`` they are ordered by cluster.
    random_state : int, numpy.random.RandomState or None, default=None
        Seed or generator for the samples and the shuffle.

    Returns
    -------
    X : ndarray of shape (n_side**2 * n_per_cluster, 2)
        The samples.
    y : ndarray of shape (n_side**2 * n_per_cluster,), dtype=int32
        Index of the Gaussian each sample was drawn from (a row of ``centers``).
    centers : ndarray of shape (n_side**2, 2)
        The true means; cluster ``j`` sits at ``(j // n_side, j % n_side) * spacing``.

    Raises
    ------
    TypeError
        If ``n_side`` or ``n_per_cluster`` is not an int, or ``spacing`` or ``variance`` is
        not a number.
    ValueError
        If a size is smaller than 1, ``spacing`` is not positive, ``variance`` is negative
        or the dtype is not float32 or float64.

    See Also
    --------
    birch_grid_quantization_error : the quantization error of the true means.

    Notes
    -----
    The grid follows Zhang, Ramakrishnan & Livny's BIRCH data as described by Forster & Lücke:
    well separated clusters (``spacing / sqrt(variance) = 5.66`` with the defaults) whose number
    can grow without changing the geometry, which makes it a test bed for algorithms whose cost
    per iteration should not grow linearly with the number of clusters.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, §4.
    .. [2] T. Zhang, R. Ramakrishnan and M. Livny, "BIRCH: A new data clustering algorithm and
       its applications", Data Mining and Knowledge Discovery 1(2), 1997.

    Examples
    --------
    >>> from clusterkit.datasets import make_birch_grid
    >>> X, y, centers = make_birch_grid(n_side=3, n_per_cluster=10, random_state=0)
    >>> X.shape, y.shape, centers.shape
    ((90, 2), (90,), (9, 2))
    >>> centers[4]
    array([5.65685425, 5.65685425])
    """
    n_side = check_int(n_side, "n_side", minimum=1)
    n_per_cluster = check_int(n_per_cluster, "n_per_cluster", minimum=1)
    spacing = _check_nonnegative_float("spacing", spacing, strict=True)
    variance = _check_nonnegative_float("variance", variance, strict=False)
    dtype = _check_dtype(dtype)
    rng = check_random_state(random_state)

    axis = np.arange(n_side, dtype=np.float64) * spacing
    rows, cols = np.meshgrid(axis, axis, indexing="ij")
    centers = np.column_stack([rows.ravel(), cols.ravel()])
    n_clusters = centers.shape[0]
    y = np.repeat(np.arange(n_clusters, dtype=np.int32), n_per_cluster)
    X = centers[y] + np.sqrt(variance) * rng.standard_normal((y.shape[0], 2))
    if shuffle:
        order = rng.permutation(y.shape[0])
        X, y = X[order], y[order]
    return np.ascontiguousarray(X, dtype=dtype), y, centers.astype(dtype)


def birch_grid_quantization_error(n_side=10, n_per_cluster=100, variance=1.0):
    """Expected quantization error of the true means on :func:`make_birch_grid` data.

    Every sample is at squared distance ``variance`` per dimension from its own mean on
    average, so the sum over ``N = n_side**2 * n_per_cluster`` samples in ``D = 2`` dimensions
    is ``N * D * variance``, the reference a good clustering should reach. On one draw the
    sum over own means fluctuates by about ``sqrt(2 N D) * variance`` around it, and measuring
    to the nearest rather than the own mean makes it smaller: by about 1.5 % with the default
    ``spacing`` and ``variance``, because samples in the tails of one Gaussian are nearer to a
    neighbouring mean.

    Parameters
    ----------
    n_side, n_per_cluster, variance
        As for :func:`make_birch_grid`.

    Returns
    -------
    error : float
        ``n_side**2 * n_per_cluster * 2 * variance``.

    Raises
    ------
    TypeError, ValueError
        As :func:`make_birch_grid` for the same arguments.

    See Also
    --------
    clusterkit.metrics.quantization_error : the exact value for given data and centres.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, §4.

    Examples
    --------
    >>> from clusterkit.datasets import birch_grid_quantization_error
    >>> birch_grid_quantization_error(n_side=5)
    5000.0
    """
    n_side = check_int(n_side, "n_side", minimum=1)
    n_per_cluster = check_int(n_per_cluster, "n_per_cluster", minimum=1)
    variance = _check_nonnegative_float("variance", variance, strict=False)
    return float(n_side * n_side * n_per_cluster * 2) * variance


def make_gaussian_blobs(n_samples, n_features, n_clusters, cluster_std=1.0,
                        center_box=(-10.0, 10.0), dtype=np.float64, shuffle=True,
                        random_state=None):
    """Generate isotropic Gaussian blobs with uniformly random centres.

    A thin wrapper over :func:`sklearn.datasets.make_blobs` that also returns the centres,
    casts to the requested floating dtype and returns int32 labels.

    Parameters
    ----------
    n_samples : int
        Total number of samples, split as evenly as possible between the clusters.
    n_features : int
        Number of features.
    n_clusters : int
        Number of Gaussians.
    cluster_std : float or array-like of shape (n_clusters,), default=1.0
        Standard deviation of each Gaussian (in every dimension).
    center_box : tuple of float (min, max), default=(-10.0, 10.0)
        The centres are drawn uniformly from this box in every dimension.
    dtype : {numpy.float64, numpy.float32}, default=numpy.float64
        Dtype of ``X`` and ``centers``; samples are drawn in float64 and then cast.
    shuffle : bool, default=True
        Shuffle the samples.
    random_state : int, numpy.random.RandomState or None, default=None
        Seed or generator for centres, samples and shuffle.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The samples.
    y : ndarray of shape (n_samples,), dtype=int32
        Index of the Gaussian (row of ``centers``) each sample was drawn from.
    centers : ndarray of shape (n_clusters, n_features)
        The true means.

    Raises
    ------
    TypeError
        If a size is not an int.
    ValueError
        If a size is smaller than 1 or the dtype is not float32 or float64.

    Examples
    --------
    >>> from clusterkit.datasets import make_gaussian_blobs
    >>> X, y, centers = make_gaussian_blobs(100, 3, 4, dtype="float32", random_state=0)
    >>> X.shape, X.dtype, y.dtype, centers.shape
    ((100, 3), dtype('float32'), dtype('int32'), (4, 3))
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    n_clusters = check_int(n_clusters, "n_clusters", minimum=1)
    dtype = _check_dtype(dtype)
    X, y, centers = make_blobs(n_samples=n_samples, n_features=n_features, centers=n_clusters,
                               cluster_std=cluster_std, center_box=center_box, shuffle=shuffle,
                               random_state=random_state, return_centers=True)
    return (np.ascontiguousarray(X, dtype=dtype), y.astype(np.int32),
            np.ascontiguousarray(centers, dtype=dtype))


def load_benchmark(name, data_home=None):
    """Load a benchmark data set stored locally as ``<data_home>/<name>.npz``.

    The file holds an array ``X`` of shape (n_samples, n_features) and, optionally, labels
    ``y``. Only the benchmark scripts use this; the package and its tests never need
    external data.

    Parameters
    ----------
    name : str
        Name of the data set, e.g. ``"kdd"``; the file read is ``<name>.npz``.
    data_home : str or os.PathLike or None, default=None
        Directory holding the files. ``None`` uses the environment variable
        ``CLUSTERKIT_DATA``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        The data, as stored.
    y : ndarray of shape (n_samples,) or None
        The labels if the file has them.

    Raises
    ------
    FileNotFoundError
        If ``data_home`` is not given and ``CLUSTERKIT_DATA`` is unset, or the file does not
        exist.
    ValueError
        If ``name`` is empty or contains a path separator, or the file has no array ``X``.
    """
    if not isinstance(name, str) or not name or os.sep in name or "/" in name:
        raise ValueError(f"name={name!r} must be a non-empty file stem without a path "
                         "separator, e.g. 'kdd'.")
    if data_home is None:
        data_home = os.environ.get(DATA_ENV_VAR) or None
        if data_home is None:
            raise FileNotFoundError(
                f"Cannot load benchmark {name!r}: the environment variable {DATA_ENV_VAR} is "
                f"not set; set it (or pass data_home) to a directory holding {name}.npz.")
        source = f"{DATA_ENV_VAR}={data_home!r}"
    else:
        source = f"data_home={os.fspath(data_home)!r}"
    path = os.path.join(os.fspath(data_home), f"{name}.npz")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"Cannot load benchmark {name!r}: {path} does not exist ({source}); the directory "
            f"must hold {name}.npz with an array X and optionally y.")
    with np.load(path, allow_pickle=False) as data:
        if "X" not in data.files:
            raise ValueError(f"{path} has no array 'X' (found {sorted(data.files)}).")
        X = data["X"]
        y = data["y"] if "y" in data.files else None
    return X, y
