# The pair-by-pair bound of exact dimension pruning, shared by the bounded E-steps' searches
# (_elkan.pyx, _yinyang.pyx): where their own bounds fail, a centre is first tested on the
# sample's and the centre's coordinates along p principal axes and the norms of the rest
# (the bound of _pruned.pyx, one pair at a time), and its direct distance over all features
# is computed only if that test does not rule it out.
from cython cimport floating
from libc.math cimport sqrt

from ._dist cimport _sqdist_wide


cdef struct _PruneTol:
    # how far the bound of _prune_bound2 must be lowered to stay below the exact distance
    Py_ssize_t n_proj
    double shrink       # 1 - 4 (p + 2) eps: the rounding of the p-term sum and its root
    double tol_abs      # the projections' rounding (to the dtype and in float64), as a distance
    double rest_tol     # the rest norms' float64 cancellation (pruning.tolerances)
    double rest_rel     # 8 eps: their rounding to the dtype
    double grow         # 1 + 8 (D + 2) eps: a direct distance's rounding, both sides


cdef inline double _prune_bound2(const floating* x_proj,   # IN  (n_proj,)
                                 double x_rest,
                                 const floating* c_proj,   # IN  (n_proj,)
                                 double c_rest,
                                 const _PruneTol* tol) noexcept nogil:
    """A lower bound on ``||x - c||^2`` from the coordinates along the axes and the norms
    of the rest, ``||x~ - c~||^2 + (||x_r|| - ||c_r||)^2``, each term lowered by its
    rounding (see ``_PruneTol``); never negative."""
    cdef double s = sqrt(<double> _sqdist_wide(x_proj, c_proj, tol.n_proj)) * tol.shrink
    s = s - tol.tol_abs
    cdef double gap = x_rest - c_rest
    gap = (gap if gap > 0 else -gap) - tol.rest_rel * (x_rest + c_rest) - tol.rest_tol
    s = s if s > 0 else 0.0
    gap = gap if gap > 0 else 0.0
    return s * s + gap * gap


cdef inline _PruneTol _prune_tol(prune_tol, Py_ssize_t n_proj):
    """The ``_PruneTol`` of ``n_proj`` axes from the 5 numbers ``shrink, tol_abs, rest_tol,
    rest_rel, grow`` (``clusterkit.estep.pruning.pair_tolerances``)."""
    cdef _PruneTol tol
    if len(prune_tol) != 5 or n_proj < 1:
        raise ValueError("prune_tol must hold 5 numbers, for at least one axis.")
    tol.n_proj = n_proj
    tol.shrink, tol.tol_abs, tol.rest_tol = prune_tol[0], prune_tol[1], prune_tol[2]
    tol.rest_rel, tol.grow = prune_tol[3], prune_tol[4]
    return tol


cdef inline void _check_projections(Py_ssize_t n_rows, Py_ssize_t n_clusters, X_proj, x_rest,
                                    centers_proj, centers_rest, prune_tol) except *:
    """Refuse projections that do not give every row of the state and every centre the
    same number of coordinates and a norm."""
    if (x_rest is None or centers_proj is None or centers_rest is None or prune_tol is None
            or X_proj.shape[0] != n_rows or x_rest.shape[0] != n_rows
            or centers_proj.shape[0] != n_clusters or centers_rest.shape[0] != n_clusters
            or centers_proj.shape[1] != X_proj.shape[1]):
        raise ValueError("Pruning needs X_proj, x_rest, centers_proj, centers_rest and "
                         "prune_tol, one projected row per row of the bounds.")


cdef struct _Pruning:
    # a call's projections, in the kernel's dtype (_set_pruning); X_proj NULL: no pruning
    _PruneTol tol
    const void* X_proj        # (n_rows, n_proj): one row per row of the bounds
    const void* x_rest        # (n_rows,)
    const void* centers_proj  # (n_clusters, n_proj)
    const void* centers_rest  # (n_clusters,)


cdef inline bint _set_pruning(_Pruning* prune, Py_ssize_t n_rows, Py_ssize_t n_clusters,
                              const floating[:, ::1] X_proj, const floating[::1] x_rest,
                              const floating[:, ::1] centers_proj,
                              const floating[::1] centers_rest, prune_tol) except -1:
    """Point ``prune`` at a bounded E-step's pruning arguments (checked); whether there are
    any (``X_proj`` None: no pruning, ``prune.X_proj`` NULL)."""
    prune.X_proj = NULL
    if X_proj is None:
        return False
    _check_projections(n_rows, n_clusters, X_proj, x_rest, centers_proj, centers_rest,
                       prune_tol)
    prune.tol = _prune_tol(prune_tol, X_proj.shape[1])
    if n_rows > 0:
        prune.X_proj, prune.x_rest = &X_proj[0, 0], &x_rest[0]
    prune.centers_proj, prune.centers_rest = &centers_proj[0, 0], &centers_rest[0]
    return True


cdef inline bint _pruned_away(const _Pruning* prune, Py_ssize_t r, Py_ssize_t c, floating best,
                              double* bound2, Py_ssize_t* n_tests) noexcept nogil:
    """Whether the projections rule out centre ``c`` for row ``r`` of the bounds: their
    bound (written to ``bound2``, counted in ``n_tests``) exceeds ``best``, the smallest
    squared distance so far, beyond the rounding of two direct distances."""
    cdef Py_ssize_t n_proj = prune.tol.n_proj
    bound2[0] = _prune_bound2((<const floating*> prune.X_proj) + r * n_proj,
                              (<const floating*> prune.x_rest)[r],
                              (<const floating*> prune.centers_proj) + c * n_proj,
                              (<const floating*> prune.centers_rest)[c], &prune.tol)
    n_tests[0] += 1
    return bound2[0] > best * prune.tol.grow


cdef inline object _counts(Py_ssize_t n_evals, Py_ssize_t n_tests, bint pruned):
    """A bounded E-step's return value: the distances computed, with pruning also the tests
    on the projections."""
    if pruned:
        return n_evals, n_tests
    return n_evals
