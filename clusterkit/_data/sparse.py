"""CSR input: the checks at the public boundary and the calls of the CSR kernels.

scikit-learn's k-means takes scipy.sparse matrices (TF-IDF text, one-hot features); so do the
exact compositions of clusterkit (the strategies that declare ``accepts_sparse``). The data
stay in CSR end to end -- never centred, since centring fills in every zero -- and the
centres are dense. The kernels read the three CSR arrays with int32 indices.
"""
import numpy as np
import scipy.sparse as sp

from .._kernels import _sparse

__all__ = ["is_sparse", "check_csr", "bounding_rows", "row_sqnorms", "csr_arrays",
           "dense_rows", "center_half_distances"]

_INT32_MAX = np.iinfo(np.int32).max


def is_sparse(X):
    """Whether ``X`` is a scipy.sparse matrix or array."""
    return sp.issparse(X)


def check_csr(X):
    """A validated CSR matrix (``check_array``'s output) with int32 indices for the kernels.

    scipy uses int64 indices only when asked to or when int32 cannot hold them; int64 indices
    whose values fit are narrowed (one copy of the index arrays).

    Raises
    ------
    ValueError
        If ``X`` has more non-zeros or features than int32 indices can address.
    """
    if X.indices.dtype == np.int32 and X.indptr.dtype == np.int32:
        return X
    if X.nnz > _INT32_MAX or X.shape[1] > _INT32_MAX:
        raise ValueError(f"X has {X.nnz} non-zeros in {X.shape[1]} features; sparse input "
                         f"is limited to {_INT32_MAX} of each (int32 indices). Split the "
                         "data, or reduce it.")
    return sp.csr_matrix((X.data, X.indices.astype(np.int32), X.indptr.astype(np.int32)),
                         shape=X.shape)


def bounding_rows(X):
    """Two dense rows spanning ``X``'s bounding box (per-feature minima and maxima, zeros
    included), which ``check_representable`` reads in place of the data."""
    low = np.asarray(X.min(axis=0).todense()).reshape(1, -1)
    high = np.asarray(X.max(axis=0).todense()).reshape(1, -1)
    return np.ascontiguousarray(np.vstack([low, high]), dtype=X.dtype)


def csr_arrays(X):
    """The three CSR arrays of ``X`` as the kernels take them."""
    return X.data, X.indices, X.indptr


def row_sqnorms(X, n_threads):
    """``||x_i||^2`` of every row of CSR ``X``, in its dtype (summed in float64)."""
    out = np.empty(X.shape[0], dtype=X.dtype)
    _sparse.row_sqnorms(X.data, X.indptr, out, n_threads)
    return out


def dense_rows(X, rows):
    """Rows of ``X`` (dense or CSR) as a dense C-contiguous array."""
    taken = X[rows]
    return np.ascontiguousarray(taken.toarray() if is_sparse(taken) else taken)


def center_half_distances(centers, half_cc, half_min, n_threads):
    """Lower bounds on half the distance between every two centres (Elkan's ``d(c, c') / 2``)
    and on each centre's nearest other one, from the centres as a CSR matrix.

    Centres fitted to sparse data are mostly zeros, so their products cost
    ``nnz(centers) * C`` instead of the direct loop's ``C^2 D / 2``. The expansion
    ``||a||^2 - 2 a.b + ||b||^2`` (in float64) is lowered by a bound on its rounding, so
    every value stays a valid lower bound and Elkan's pruning stays exact. Writes
    ``half_cc`` and ``half_min`` as ``_elkan.center_half_distances`` does; returns the
    evaluations, ``C (C - 1) / 2``.
    """
    n_clusters = centers.shape[0]
    rows = check_csr(sp.csr_matrix(centers, dtype=np.float64))
    sqnorms = row_sqnorms(rows, n_threads)
    _sparse.dist2_sparse(*csr_arrays(rows), sqnorms, rows.toarray(), half_cc, n_threads)
    # each product sums nnz terms: |error| <= (nnz + 4) eps (||a||^2 + ||b||^2), doubled
    terms = (np.diff(rows.indptr) + 4.0)[:, None]
    margin = 2 * np.finfo(np.float64).eps * terms * (sqnorms[:, None] + sqnorms[None, :])
    np.subtract(half_cc, margin, out=half_cc)
    np.maximum(half_cc, 0, out=half_cc)
    np.sqrt(half_cc, out=half_cc)
    half_cc *= 0.5
    np.minimum(half_cc, half_cc.T, out=half_cc)  # one value per pair
    np.fill_diagonal(half_cc, np.inf)
    np.min(half_cc, axis=1, out=half_min)
    np.fill_diagonal(half_cc, 0.0)
    return n_clusters * (n_clusters - 1) // 2
