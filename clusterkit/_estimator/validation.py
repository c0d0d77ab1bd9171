"""Input checks shared by the public entry points (a thin layer over scikit-learn's); the
checks of rows, weights and ranges live in ``_data/checks.py`` and are re-exported here."""
import numbers
from numbers import Integral

import numpy as np
from sklearn.utils.validation import validate_data

from .._data.checks import (bounding_box, check_bandwidth, check_block_rows,  # noqa: F401
                            check_finite_centers, check_finite_rows, check_int,
                            check_n_clusters, check_range,
                            check_representable, check_sample_weight, check_unit_rows,
                            check_weight_counts, count_weight_problems, nonfinite_rows, rows_from, squared_diagonal, unit_rows,
                            zero_norm_rows)
from .._data.sparse import kernels_for
from .._engine.constraints import Interval, check_parameters
from .._kernels._openmp import effective_n_threads

__all__ = ["check_data", "check_initial_centers", "check_params", "check_sample_weight",
           "check_n_clusters", "check_int", "check_memory_limit", "check_range",
           "check_representable", "bounding_box", "squared_diagonal",
           "check_finite_centers", "check_bandwidth",
           "count_weight_problems", "check_weight_counts", "unit_rows", "nonfinite_rows",
           "check_finite_rows", "check_unit_rows", "zero_norm_rows", "check_block_rows",
           "rows_from"]


def check_data(estimator, X, dtype=(np.float64, np.float32), reset=True):
    """``validate_data`` for the data of ``fit``, ``partial_fit``, ``predict``, ...: C-ordered
    float32 or float64 (or ``dtype``), finite (:func:`check_finite_rows`), at least one
    sample; a scipy.sparse matrix becomes CSR (as scikit-learn's ``accept_sparse="csr"``)
    with int32 indices (:func:`~clusterkit._data.sparse.check_csr`)."""
    X = validate_data(estimator, X, accept_sparse="csr", dtype=dtype, order="C",
                      ensure_min_samples=1, ensure_all_finite=False, reset=reset)
    X = kernels_for(X).checked(X)
    check_finite_rows(X)
    return X


#: Rows per block of :func:`nonfinite_rows` and :func:`unit_rows` (bounds their temporaries).
def check_params(estimator, n_samples):
    """The hyper-parameters of a ``Clusterer`` that no strategy checks, against the data's
    ``n_samples``: clear ``ValueError``/``TypeError`` messages."""
    check_n_clusters(estimator.n_clusters, n_samples)
    if isinstance(estimator.n_init, str):  # scikit-learn's "auto" and the like
        raise TypeError(f"n_init={estimator.n_init!r} is not a number of runs; pass an "
                        "integer >= 1 (scikit-learn's n_init='auto' is n_init=1 with "
                        "k-means++ seeding, clusterkit's default, and n_init=10 with "
                        "seed='random').")
    check_int(estimator.n_init, "n_init", minimum=1)
    check_int(estimator.max_iter, "max_iter", minimum=1)
    if not isinstance(estimator.tol, numbers.Real) or not estimator.tol >= 0:
        raise ValueError(f"tol={estimator.tol!r} must be a non-negative number.")
    effective_n_threads(estimator.n_threads)  # raises for invalid values
    if not isinstance(estimator.compute_labels, (bool, np.bool_)):
        raise TypeError(f"compute_labels must be True or False, got "
                        f"{estimator.compute_labels!r}.")
    if estimator.callback is not None and not callable(estimator.callback):
        raise TypeError(f"callback must be callable, got {type(estimator.callback).__name__}.")


def check_memory_limit(estimator):
    """The estimator's ``memory_limit``, checked by its declared constraint: ``None`` or an
    integer number of bytes >= 1 (``TypeError`` or ``ValueError`` naming it)."""
    check_parameters(estimator, {"memory_limit": [Interval(Integral, 1), None]})


def check_initial_centers(seed, n_clusters, X):
    """Initial centres given as ``seed``: checked (numbers, shape ``(n_clusters,
    n_features)``, finite in ``X``'s dtype) and returned C-contiguous in that dtype."""
    centers = np.asarray(seed)
    if centers.dtype.kind not in "biuf":
        raise TypeError(f"seed must be a string, a Seeder or an array of centres, got "
                        f"{type(seed).__name__}.")
    expected = (n_clusters, X.shape[1])
    if centers.shape != expected:
        raise ValueError(f"seed has shape {centers.shape}, but initial centres must have "
                         f"shape (n_clusters, n_features)={expected}.")
    if not np.all(np.isfinite(centers)):
        raise ValueError("seed contains NaN or infinity; initial centres must be finite.")
    with np.errstate(over="ignore"):
        centers = np.ascontiguousarray(centers, dtype=X.dtype)
    if not np.all(np.isfinite(centers)):
        raise ValueError(f"seed has values beyond the range of {X.dtype.name}, the "
                         "data's dtype.")
    return centers
