"""Rows of one kind: dense or CSR, asked once (:func:`kernels_for`), and each kind's kernels.

scikit-learn's k-means takes scipy.sparse matrices (TF-IDF text, one-hot features); so do the
exact compositions of clusterkit (the strategies that declare ``accepts_sparse``). The data
stay in CSR end to end -- never centred, since centring fills in every zero -- and the
centres are dense. The kernels read the three CSR arrays with int32 indices.

Whether rows are dense or CSR is asked here only: :func:`kernels_for` gives the rows' kind,
:data:`DENSE` or :data:`CSR`, whose methods are that kind's kernels with one signature. A
caller binds the kind once (where the data enter, in a strategy's ``init_state``, at the top
of a function) and calls its kernels on one path for both kinds, as scikit-learn's
``_kmeans_single_lloyd`` binds its dense or sparse iteration once.
"""
import numpy as np
import scipy.sparse as sp

from .._kernels import _assign, _dist, _elkan, _mstep, _sparse
from . import blocks

__all__ = ["kernels_for", "RowsKind", "DENSE", "CSR", "check_csr", "bounding_rows",
           "row_sqnorms", "csr_arrays", "dense_rows", "center_half_distances",
           "mean_of_row_sums"]

_INT32_MAX = np.iinfo(np.int32).max


def kernels_for(X):
    """The kind of the rows ``X``: :data:`CSR` for a scipy.sparse matrix or array (CSR once
    validated), :data:`DENSE` for anything else (arrays, array-likes, row chunks). The one
    test of the rows' kind."""
    return CSR if sp.issparse(X) else DENSE


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
    return kernels_for(X).dense_rows(X, rows)


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



def mean_of_row_sums(row_sums, n_rows):
    """The centring of a fit from its rows' sums block by block (``row_sums`` of shape
    ``(n_blocks, n_features)``, in the rows' dtype): the sums added in block order in that
    dtype, divided by ``n_rows``. Rows in memory are one block (the result is then
    ``X.mean(axis=0)`` bit for bit), data in row chunks one block per chunk."""
    return row_sums.sum(axis=0, dtype=row_sums.dtype) / n_rows

class RowsKind:
    """The kernels of one kind of rows, dense (:data:`DENSE`) or CSR (:data:`CSR`), with one
    signature for both; :func:`kernels_for` gives the kind of given rows.

    Attributes
    ----------
    name : str
        ``"dense"`` or ``"csr"``.
    centred : bool
        Whether a fit's rows are centred on the data's mean (dense), or stay in the origin's
        frame because centring would fill in their zeros (CSR).
    ndarray : bool
        Whether the rows are NumPy arrays, which the dense-only methods read: the principal
        axes of pruning, float32 copies of the rows.
    """

    name = centred = ndarray = None

    def __repr__(self):
        return f"<{self.name} rows>"

    def __reduce__(self):
        # one object per kind, also in a worker's copy of a run's state (tables key on it)
        return self.name.upper()

    def refuses(self, strategy):
        """Whether ``strategy`` (a strategy or its class) cannot run on rows of this kind."""
        raise NotImplementedError

    def as_rows(self, X):
        """``X`` as rows of this kind before validation (array-likes become arrays)."""
        raise NotImplementedError

    def checked(self, X):
        """Validated rows (scikit-learn's ``validate_data`` output) as the kernels read
        them: CSR with int32 indices (:func:`check_csr`); dense rows as they are."""
        raise NotImplementedError

    def checking_copies(self, X):
        """Whether validating ``X`` for a fit copies it."""
        raise NotImplementedError

    def mean(self, X):
        """The centring of a fit on ``X``: its mean in its own dtype (zero for CSR)."""
        raise NotImplementedError

    def in_frame(self, X, x_mean):
        """Rows ``X`` shifted to the frame centred on ``x_mean`` (a new array); CSR rows as
        they are (their frame is the origin)."""
        raise NotImplementedError

    def frame_centers(self, centers, x_mean):
        """Centres relative to ``x_mean`` (or ``None``) in the frame of the rows
        :meth:`in_frame` gives: as they are for dense rows, moved to the origin's for CSR."""
        raise NotImplementedError

    def centred_copy(self, X, x_mean, n_threads, order=None):
        """The rows a fit runs on, centred on ``x_mean``, in ``order`` (``None``: as given),
        and their float64 sum of squares; dense rows are copied, CSR rows used as they are
        (a copy when reordered)."""
        raise NotImplementedError

    def take(self, X, rows):
        """Rows ``rows`` of ``X`` as the kernels read them (C-contiguous, or CSR)."""
        raise NotImplementedError

    def dense_rows(self, X, rows):
        """Rows ``rows`` of ``X`` as a dense C-contiguous array."""
        raise NotImplementedError

    def values(self, X):
        """The values ``X`` stores (for CSR its non-zeros), whose extremes bound the rows."""
        raise NotImplementedError

    def kernel_sqnorms(self, X, n_threads, scale=1.0):
        """The squared norms of the rows multiplied by ``scale`` (a power of two) as this
        kind's distance kernels take them: computed once for CSR rows, ``None`` for dense
        rows (their kernels form them)."""
        raise NotImplementedError

    def sqnorms(self, X, n_threads):
        """The rows' squared norms in float64 (what the relocation rules compare distances
        with)."""
        raise NotImplementedError

    def accumulate_hard(self, X, sample_weight, labels, dist2, sums, weight, sse, n_threads):
        """Per-cluster weighted sums, weights and (if ``sse`` is given) squared errors of
        the rows' labels, into ``sums``, ``weight`` and ``sse``."""
        raise NotImplementedError

    def assign(self, X, x_sqnorms, centers, labels, dist2, n_threads, x32=None):
        """Nearest centre of every row (ties to the lower index): fill ``labels`` and
        ``dist2``, return the evaluations. ``x_sqnorms`` from :meth:`kernel_sqnorms`;
        ``x32`` the float32 copy of dense rows for mixed-precision products, or ``None``."""
        raise NotImplementedError

    def dist2_to_labels(self, X, centers, labels, n_threads):
        """Squared distance of each row to the centre its label names, and the evaluations
        (one per row)."""
        raise NotImplementedError

    def all_dist2(self, X, centers, n_threads):
        """The ``n_samples x n_clusters`` squared distances the nearest-centre kernel
        compares (so that each row's smallest is the centre it picks)."""
        raise NotImplementedError

    def center_half_distances(self, centers, half_cc, half_min, n_threads):
        """Elkan's half distances between the centres and to each centre's nearest other one,
        as lower bounds; returns the evaluations (see :func:`center_half_distances`)."""
        raise NotImplementedError

    def uses_gemm(self, n_features):
        """Whether distance tiles of these rows come from gemm (dense rows of 9 features or
        more; see ``_dist.uses_gemm``)."""
        raise NotImplementedError

    def sums_fit(self, n_samples, n_clusters, n_features, itemsize):
        """Whether an E-step's pass over these rows can also sum the hard M-step's
        statistics in fixed blocks (``_mstep.blocks_fit``; never for CSR rows, which the
        M-step sums itself)."""
        raise NotImplementedError

    def nonfinite_rows(self, X):
        """The number of rows with a NaN or infinite entry and the index of the first of
        them (-1 if there is none)."""
        raise NotImplementedError

    def row_norms(self, X):
        """Euclidean norms of the rows, in float64."""
        raise NotImplementedError

    def scaled_rows(self, X, norms):
        """A new copy of ``X`` (of its dtype) with every row divided by its norm (positive
        ``norms``, float64), computed in float64 (CSR zeros stay zeros)."""
        raise NotImplementedError

    def bounding_box(self, X):
        """Every feature's smallest and largest value (for CSR zeros included), as two
        arrays of shape (n_features,) of ``X``'s dtype."""
        raise NotImplementedError


class _DenseRows(RowsKind):
    """Dense rows: C-contiguous float32 or float64 arrays, centred on the data's mean."""

    name, centred, ndarray = "dense", True, True

    def refuses(self, strategy):
        return False

    def as_rows(self, X):
        return X if isinstance(X, np.ndarray) else np.asarray(X)

    def checked(self, X):
        return X

    def checking_copies(self, X):
        # anything but a C-contiguous float32 or float64 array is converted
        return not (isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64)
                    and X.flags.c_contiguous)

    def mean(self, X):
        return mean_of_row_sums(X.sum(axis=0)[None], X.shape[0])

    def in_frame(self, X, x_mean):
        return X - x_mean

    def frame_centers(self, centers, x_mean):
        return centers

    def centred_copy(self, X, x_mean, n_threads, order=None):
        centred = np.empty_like(X)
        # (the sum of squares in float64: in float32 it can overflow where no distance does)
        return centred, _dist.center_rows(X, x_mean, centred, n_threads, order)

    def take(self, X, rows):
        return np.ascontiguousarray(X[rows])

    def dense_rows(self, X, rows):
        return np.ascontiguousarray(X[rows])

    def values(self, X):
        return X

    def kernel_sqnorms(self, X, n_threads, scale=1.0):
        return None

    def sqnorms(self, X, n_threads):
        return np.einsum("ij,ij->i", X, X, dtype=np.float64)

    def accumulate_hard(self, X, sample_weight, labels, dist2, sums, weight, sse, n_threads):
        _mstep.accumulate_statistics(X, sample_weight, labels[:, None], None, dist2, sums,
                                     weight, sse, n_threads)

    def assign(self, X, x_sqnorms, centers, labels, dist2, n_threads, x32=None):
        return _assign.assign_full(X, centers, labels, dist2, n_threads, x32)

    def dist2_to_labels(self, X, centers, labels, n_threads):
        dist2 = np.empty(X.shape[0], dtype=X.dtype)
        return dist2, _assign.dist2_to_labels(X, centers, labels, dist2, n_threads)

    def all_dist2(self, X, centers, n_threads):
        dist2 = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
        labels = np.empty(X.shape[0], dtype=np.int32)
        smallest = np.empty(X.shape[0], dtype=X.dtype)
        # a variance <= 0 leaves the squared distances in the output
        _assign.responsibilities_full(X, centers, -1.0, dist2, labels, smallest, smallest,
                                      n_threads)
        return dist2

    def center_half_distances(self, centers, half_cc, half_min, n_threads):
        return _elkan.center_half_distances(centers, half_cc, half_min, n_threads)

    def uses_gemm(self, n_features):
        return _dist.uses_gemm(n_features)

    def sums_fit(self, n_samples, n_clusters, n_features, itemsize):
        return _mstep.blocks_fit(n_samples, n_clusters, n_features, itemsize)

    def nonfinite_rows(self, X):
        with np.errstate(over="ignore", invalid="ignore"):
            if X.size == 0 or np.isfinite(X.sum()):  # (one pass when all is finite)
                return 0, -1
        rows = np.concatenate([
            block.start + np.flatnonzero(~np.isfinite(X[block]).all(axis=1))
            for block in blocks.row_slices(X.shape[0], blocks.CHECK_BLOCK_ROWS)])
        return rows.size, int(rows[0]) if rows.size else -1

    def row_norms(self, X):
        norms = np.empty(X.shape[0])
        for rows in blocks.row_slices(X.shape[0], blocks.CHECK_BLOCK_ROWS):
            block = X[rows].astype(np.float64)
            norms[rows] = np.sqrt(np.einsum("ij,ij->i", block, block))
        return norms

    def scaled_rows(self, X, norms):
        Y = np.empty_like(X)
        for rows in blocks.row_slices(X.shape[0], blocks.CHECK_BLOCK_ROWS):
            Y[rows] = X[rows].astype(np.float64) / norms[rows, None]
        return Y

    def bounding_box(self, X):
        return X.min(axis=0), X.max(axis=0)


class _CSRRows(RowsKind):
    """CSR rows with int32 indices (:func:`check_csr`), never centred; only the strategies
    that declare ``accepts_sparse`` take them."""

    name, centred, ndarray = "csr", False, False

    def refuses(self, strategy):
        return not strategy.accepts_sparse

    def as_rows(self, X):
        return X

    def checked(self, X):
        return check_csr(X)

    def checking_copies(self, X):
        return False

    def mean(self, X):
        return np.zeros(X.shape[1], dtype=X.dtype)

    def in_frame(self, X, x_mean):
        return X

    def frame_centers(self, centers, x_mean):
        if x_mean is None or not np.any(x_mean):
            return centers
        return np.ascontiguousarray(centers + x_mean, dtype=centers.dtype)

    def centred_copy(self, X, x_mean, n_threads, order=None):
        if order is not None:
            X = X[order]
        return X, float(np.dot(X.data, X.data.astype(np.float64)))

    def take(self, X, rows):
        return X[rows]

    def dense_rows(self, X, rows):
        return np.ascontiguousarray(X[rows].toarray())

    def values(self, X):
        return X.data

    def kernel_sqnorms(self, X, n_threads, scale=1.0):
        return row_sqnorms(X * scale if scale != 1.0 else X, n_threads)

    def sqnorms(self, X, n_threads):
        return row_sqnorms(X, n_threads).astype(np.float64)

    def accumulate_hard(self, X, sample_weight, labels, dist2, sums, weight, sse, n_threads):
        _sparse.accumulate_sparse(*csr_arrays(X), sample_weight, labels, dist2, sums, weight,
                                  sse, n_threads)

    def assign(self, X, x_sqnorms, centers, labels, dist2, n_threads, x32=None):
        return _sparse.assign_sparse(*csr_arrays(X), x_sqnorms, centers, labels, dist2,
                                     n_threads)

    def dist2_to_labels(self, X, centers, labels, n_threads):
        dist2 = np.empty(X.shape[0], dtype=X.dtype)
        return dist2, _sparse.dist2_to_labels_sparse(
            *csr_arrays(X), row_sqnorms(X, n_threads), centers, labels, dist2, n_threads)

    def all_dist2(self, X, centers, n_threads):
        dist2 = np.empty((X.shape[0], centers.shape[0]), dtype=X.dtype)
        _sparse.dist2_sparse(*csr_arrays(X), row_sqnorms(X, n_threads), centers, dist2,
                             n_threads)
        return dist2

    def center_half_distances(self, centers, half_cc, half_min, n_threads):
        # centres fitted to sparse data are mostly zeros: their distances cost less as CSR
        return center_half_distances(centers, half_cc, half_min, n_threads)

    def uses_gemm(self, n_features):
        return False

    def sums_fit(self, n_samples, n_clusters, n_features, itemsize):
        return False

    def nonfinite_rows(self, X):
        bad = ~np.isfinite(X.data)
        if not bad.any():
            return 0, -1
        rows = np.unique(np.searchsorted(X.indptr, np.flatnonzero(bad), side="right") - 1)
        return rows.size, int(rows[0])

    def _row_of(self, X):
        """The row of each stored value."""
        return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))

    def row_norms(self, X):
        data = X.data.astype(np.float64)
        return np.sqrt(np.bincount(self._row_of(X), data * data, minlength=X.shape[0]))

    def scaled_rows(self, X, norms):
        data = X.data.astype(np.float64)
        Y = X.copy()
        Y.data = (data / norms[self._row_of(X)]).astype(X.dtype)
        return Y

    def bounding_box(self, X):
        box = bounding_rows(X)
        return box.min(axis=0), box.max(axis=0)


#: The kernels of dense rows.
DENSE = _DenseRows()
#: The kernels of CSR rows.
CSR = _CSRRows()
