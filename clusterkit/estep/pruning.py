"""Exact dimension pruning for the hard exact E-step (:class:`~clusterkit.FullEStep` with
``prune``): the leading principal axes of the data, found once per fit, and the rows' and
centres' coordinates along them with the norms of the rest, from which the kernel
``_pruned.assign_pruned`` bounds every distance from below before computing only the few
that may win (see its notes).

The labels do not depend on the axes (any orthonormal directions give valid bounds; the
nearest centre is ranked by direct distances over all features), only the work does: the
more variance the axes carry, the more centres their bound rules out.
"""
import numpy as np

from .._data import blocks
from .._data.moments import weighted_sum
from .._engine.assignment import Assignment
from .._kernels import _pruned
from .rows import batch_rows

__all__ = ["principal_axes", "project", "tolerances", "pair_tolerances", "auto_projections",
           "resolve_prune", "Projection", "CenterProjection", "assign_pruned",
           "dimension_count", "PRUNE_MIN_FEATURES", "PRUNE_MIN_CLUSTERS"]

#: Rows the principal axes are estimated from (evenly spaced through the data): about 10 per
#: feature, at least 2,000 and at most 10,000 (the covariance costs ``rows D^2``).
AXES_MIN_ROWS, AXES_ROWS_PER_FEATURE, AXES_MAX_ROWS = 2000, 10, 10000


def auto_projections(n_features):
    """The number of axes ``prune="auto"`` projects on: about an eighth of the features, a
    multiple of 8 between 32 and 96.

    Chosen with ``benchmarks/bench_pruning.py --fits`` (Lloyd iterations with 1,400
    clusters): the time hardly changes between 64 and 128 axes at 768 and 1,024 features,
    and 32 axes pay at 64 and 128 features where 8 or 16 do not (products over so few axes
    run far from the gemm rate and bound too little). Beyond 1,024 features the cap is not
    measured.
    """
    return int(min(96, max(32, 8 * round(n_features / 64))))


def principal_axes(X, n_axes):
    """The ``n_axes`` leading principal axes of a sample of the rows of ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Dense rows.
    n_axes : int
        At most ``n_features``.

    Returns
    -------
    V : ndarray of shape (n_features, n_axes), dtype=float64
        Orthonormal columns, by decreasing variance of the sample along them.

    Notes
    -----
    The sample is evenly spaced through the rows (deterministic: no draw from the fit's
    random stream, so a fit with pruning draws the same numbers as one without); its
    covariance costs ``rows D^2`` flops and its eigendecomposition ``D^3``, once per fit.
    """
    n_samples, n_features = X.shape
    n_rows = min(n_samples, max(AXES_MIN_ROWS, min(AXES_MAX_ROWS,
                                                   AXES_ROWS_PER_FEATURE * n_features)))
    rows = np.linspace(0, n_samples - 1, n_rows).astype(np.intp)
    sample = np.asarray(X[rows], dtype=np.float64)
    sample = sample - sample.mean(axis=0)
    _, vectors = np.linalg.eigh(sample.T @ sample)
    return np.ascontiguousarray(vectors[:, ::-1][:, :n_axes])


def project(A, V):
    """Coordinates of the rows of ``A`` along the columns of ``V`` and the norms of what is
    left of them, both computed in float64 and returned in ``A``'s dtype.

    Parameters
    ----------
    A : ndarray of shape (n_rows, n_features)
    V : ndarray of shape (n_features, n_axes), dtype=float64
        Orthonormal columns.

    Returns
    -------
    A_proj : ndarray of shape (n_rows, n_axes)
        ``A V``.
    rest : ndarray of shape (n_rows,)
        ``sqrt(max(||a||^2 - ||V^T a||^2, 0))``.
    max_norm : float
        The largest ``||a||`` (for :func:`tolerances`).
    """
    n_rows = A.shape[0]
    A_proj = np.empty((n_rows, V.shape[1]), dtype=A.dtype)
    rest = np.empty(n_rows, dtype=A.dtype)
    max_norm = 0.0
    for rows in blocks.row_slices(n_rows, blocks.PROJECT_BLOCK_ROWS):
        block = np.asarray(A[rows], dtype=np.float64)
        coords = block @ V
        sq = np.einsum("ij,ij->i", block, block)
        A_proj[rows] = coords
        rest[rows] = np.sqrt(np.maximum(
            sq - np.einsum("ij,ij->i", coords, coords), 0.0))
        if sq.size:
            max_norm = max(max_norm, float(np.sqrt(sq.max())))
    return A_proj, rest, max_norm


def tolerances(n_features, n_axes, max_norm_rows, max_norm_centers):
    """``(proj_tol, rest_tol)`` of ``_pruned.assign_pruned``: how far the float64
    projections of :func:`project` may lie from exact ones.

    A ``D``-term float64 sum of products errs by at most about ``D eps ||a||^2`` (and
    ``eigh``'s axes are orthonormal to about ``D eps``), so the squared prefix distance errs
    by at most ``2 sqrt(p) D eps (||x|| + ||c||)^2`` and ``||a||^2 - ||V^T a||^2`` by
    ``D eps ||a||^2``, whose square root (the norm of the rest) by ``sqrt(D eps) ||a||``;
    both are taken eight times over.
    """
    eps = np.finfo(np.float64).eps
    scale = max_norm_rows + max_norm_centers
    proj_tol = 16.0 * (n_features + 2) * eps * np.sqrt(n_axes) * scale * scale
    rest_tol = np.sqrt(8.0 * (n_features + 2) * eps) * scale
    return float(proj_tol), float(rest_tol)


def pair_tolerances(n_features, n_axes, max_norm_rows, max_norm_centers, dtype):
    """The 5 numbers ``shrink, tol_abs, rest_tol, rest_rel, grow`` by which the bounded
    E-steps' pair-by-pair bound (``_pruning._prune_bound2``) is lowered below the exact
    distance, and a direct distance raised above its own rounding.

    ``shrink = 1 - 4 (p + 2) eps``: the relative rounding of a ``p``-term sum of squares and
    of its root; ``tol_abs``: the rounding of the coordinates to ``dtype`` (at most
    ``eps (||x|| + ||c||)`` together) and the float64 projection error of :func:`tolerances`
    (``sqrt(proj_tol)`` as a distance), both taken twice; ``rest_tol`` as in
    :func:`tolerances`; ``rest_rel = 8 eps`` (the rest norms rounded to ``dtype``);
    ``grow = 1 + 8 (D + 2) eps``, the rounding of two direct distances (as
    ``_pruned.assign_pruned`` allows for it).
    """
    eps = float(np.finfo(dtype).eps)
    proj_tol, rest_tol = tolerances(n_features, n_axes, max_norm_rows, max_norm_centers)
    tol_abs = 2.0 * (eps * (max_norm_rows + max_norm_centers) + np.sqrt(proj_tol))
    return np.array([1.0 - 4.0 * (n_axes + 2) * eps, tol_abs, rest_tol, 8.0 * eps,
                     1.0 + 8.0 * (n_features + 2) * eps])


def resolve_prune(prune, n_features, n_clusters, min_features=None):
    """The number of principal axes an exact E-step's ``prune`` projects on for data of
    ``n_features`` features and ``n_clusters`` clusters, or ``None`` for no pruning
    (``prune=None``, or ``"auto"`` below ``min_features`` features, by default
    ``PRUNE_MIN_FEATURES``, or ``PRUNE_MIN_CLUSTERS`` clusters, where it does not pay;
    ``min_features=inf``: ``"auto"`` never prunes)."""
    if prune is None:
        return None
    if prune == "auto":
        min_features = PRUNE_MIN_FEATURES if min_features is None else min_features
        if n_features < min_features or n_clusters < PRUNE_MIN_CLUSTERS:
            return None
        return min(auto_projections(n_features), n_features)
    return int(prune)


class CenterProjection:
    """The centres' coordinates along a :class:`Projection`'s axes, the norms of the rest
    and the tolerances of the pair-by-pair bound (:func:`pair_tolerances`), made once per
    E-step call."""

    def __init__(self, centers, projection):
        self.proj, self.rest, max_center = project(centers, projection.V)
        n_features, n_axes = projection.V.shape
        self.proj_tol, self.rest_tol = tolerances(n_features, n_axes, projection.max_norm,
                                                  max_center)
        self.pair_tol = pair_tolerances(n_features, n_axes, projection.max_norm, max_center,
                                        centers.dtype)

    def prune_args(self, projection):
        """The keyword arguments of ``elkan_assign`` and ``yinyang_assign`` that switch
        pruning on."""
        return dict(X_proj=projection.rows, x_rest=projection.rest, centers_proj=self.proj,
                    centers_rest=self.rest, prune_tol=self.pair_tol)


def dimension_count(n_direct, n_partial, n_axes, n_features):
    """Distance evaluations counted by dimension: ``n_direct`` over all ``n_features``
    features plus ``n_partial`` over ``n_axes`` of them (rounded up)."""
    return int(n_direct) + -(-int(n_partial) * int(n_axes) // int(n_features))


class Projection:
    """A run's principal axes and the projections of its rows (per-run state of a pruning
    E-step): ``V`` (``D x p`` float64), ``rows`` (``N x p``), ``rest`` (``N``) and the
    largest row norm, for the data ``source`` they were made from."""

    def __init__(self, X, n_axes):
        self.source = X
        self.V = principal_axes(X, n_axes)
        self.rows, self.rest, self.max_norm = project(X, self.V)


#: ``FullEStep(prune="auto")`` prunes from this many features and clusters on: below, the
#: products over few axes run far from the gemm rate and bound little, and with few
#: clusters the projection of the rows costs several iterations (both slower than Lloyd's
#: E-step in ``benchmarks/bench_pruning.py --fits``).
PRUNE_MIN_FEATURES = 64
PRUNE_MIN_CLUSTERS = 256


def assign_pruned(X, centers, projection, state, labels, dist2, sample_weight):
    """:class:`~clusterkit.FullEStep`'s hard assignment with dimension pruning (``prune``):
    the rows' projections made once per run (:class:`Projection`; for a batch of other rows,
    made now), the centres' now, then ``_pruned.assign_pruned`` into ``labels`` and
    ``dist2``; the cost is counted by dimension (``N C p / D`` plus the direct distances).
    Returns the assignment (without the M-step's sums)."""
    n_features = X.shape[1]
    rows = None
    if projection.source is X:  # made from this batch (a mini-batch of chunks keeps no state)
        rows = slice(None)
    elif np.may_share_memory(X, projection.source):
        try:
            rows = batch_rows(state, X.shape[0], projection.source.shape[0])
        except ValueError:
            rows = None
    if rows is not None:
        X_proj = np.ascontiguousarray(projection.rows[rows])
        x_rest = np.ascontiguousarray(projection.rest[rows])
        max_norm = projection.max_norm
    else:
        X_proj, x_rest, max_norm = project(X, projection.V)
    centers_proj, centers_rest, max_center = project(centers, projection.V)
    proj_tol, rest_tol = tolerances(n_features, projection.V.shape[1], max_norm, max_center)
    n_pairs, n_direct = _pruned.assign_pruned(X, centers, X_proj, x_rest, centers_proj,
                                              centers_rest, proj_tol, rest_tol, labels, dist2,
                                              state.config.n_threads)
    state.meter.count("estep", dimension_count(n_direct, n_pairs, projection.V.shape[1],
                                               n_features))
    qe = weighted_sum(dist2, sample_weight)
    return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe)
