"""The bounded E-steps' kernels with exact dimension pruning against the NumPy reference:
the stored bounds of a pruned first visit (``_pruned.assign_pruned`` with ``lower``) and the
pair-by-pair test of the revisits (``elkan_assign``, ``yinyang_assign``)."""
import numpy as np
import pytest

from clusterkit import _reference as ref
from clusterkit._kernels import _elkan, _pruned, _yinyang
from clusterkit.estep.bounds import bound_slack
from clusterkit.estep.pruning import pair_tolerances, principal_axes, project, tolerances

from .test_pruned import CHUNK, _data

# (n_samples, n_features, n_clusters, n_axes, n_groups)
SHAPES = [(1, 3, 2, 1, 1), (CHUNK - 1, 12, 7, 4, 3), (CHUNK + 1, 20, 5, 20, 5),
          (3 * CHUNK + 17, 40, 33, 8, 4), (600, 16, 1, 3, 1), (301, 64, 90, 16, 9)]


def _projections(X, centers, n_axes):
    V = principal_axes(X, n_axes)
    X_proj, x_rest, x_max = project(X, V)
    c_proj, c_rest, c_max = project(centers, V)
    return V, X_proj, x_rest, c_proj, c_rest, x_max, c_max


def _groups(n_clusters, n_groups):
    return (np.arange(n_clusters) % n_groups).astype(np.int32)


def _first_visit(X, centers, n_axes, n_threads, group_of=None, offset=3):
    """A pruned first visit of all rows into rows ``offset ..`` of a bound table."""
    _, X_proj, x_rest, c_proj, c_rest, x_max, c_max = _projections(X, centers, n_axes)
    n_groups = centers.shape[0] if group_of is None else int(group_of.max()) + 1
    lower = np.full((len(X) + offset, n_groups), -5, np.float32)
    rows = np.arange(offset, len(X) + offset, dtype=np.intp)
    shift = np.linspace(0, 0.5, n_groups)
    labels = np.empty(len(X), np.int32)
    dist2 = np.empty(len(X), X.dtype)
    slack = bound_slack(X.dtype)
    counts = _pruned.assign_pruned(X, centers, X_proj, x_rest, c_proj, c_rest,
                                   *tolerances(X.shape[1], n_axes, x_max, c_max), labels,
                                   dist2, n_threads, lower=lower, rows=rows, group_of=group_of,
                                   group_shift=shift, slack=slack)
    return labels, dist2, lower[offset:] - shift * (1 - slack), counts, lower[:offset]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("grouped", [False, True], ids=["elkan", "yinyang"])
def test_pruned_first_visit_bounds_match_reference(shape, grouped, dtype, n_threads):
    n, d, c, p, t = shape
    X, centers = _data(shape, dtype)
    group_of = _groups(c, t) if grouped else None
    labels, dist2, bounds, _, untouched = _first_visit(X, centers, p, n_threads, group_of)
    labels_plain = np.empty(n, np.int32)
    _pruned.assign_pruned(X, centers, *_projections(X, centers, p)[1:5],
                          *tolerances(d, p, *_projections(X, centers, p)[5:]), labels_plain,
                          np.empty(n, dtype), n_threads)
    np.testing.assert_array_equal(labels, labels_plain)  # the labels do not change
    np.testing.assert_array_equal(untouched, -5)  # only the batch's rows are written
    low, high = ref.pruned_stored_bounds(X, centers, *_projections(X, centers, p)[1:5],
                                         group_of)
    tol = 1e-3 if dtype == np.float32 else 1e-6
    finite = np.isfinite(high)
    # valid: never above the exact distance (the stored value is lowered by the slack)
    assert np.all(bounds[finite] <= high[finite] * (1 + 1e-9) + 1e-12)
    # and as tight as the pruning bound (or the direct distance where it was computed)
    assert np.all(bounds[finite] >= low[finite] * (1 - tol) - tol)
    np.testing.assert_array_equal(np.isinf(bounds), ~finite)


def test_pruned_first_visit_refuses_bad_bound_arguments(dtype):
    X, centers = _data((10, 6, 4), dtype)
    args = (*_projections(X, centers, 2)[1:5], 0.0, 0.0, np.empty(10, np.int32),
            np.empty(10, dtype), 1)
    with pytest.raises(ValueError, match="lower needs rows"):
        _pruned.assign_pruned(X, centers, *args, lower=np.zeros((10, 4), np.float32))
    with pytest.raises(ValueError, match="group_of must give each centre"):
        _pruned.assign_pruned(X, centers, *args, lower=np.zeros((10, 2), np.float32),
                              rows=np.arange(10, dtype=np.intp), group_shift=np.zeros(2),
                              group_of=np.array([0, 1, 2, 0], np.int32))


def _revisit_inputs(shape, dtype, seed):
    """A state after a first visit and a step of moved centres."""
    n, d, c, p, t = shape
    X, centers = _data(shape, dtype, seed=seed)
    rng = np.random.default_rng(seed)
    moved = (centers + 0.02 * rng.normal(size=centers.shape) * np.arange(1, d + 1) ** -1.0
             ).astype(dtype)
    V, X_proj, x_rest, c_proj, c_rest, x_max, c_max = _projections(X, moved, p)
    prune = dict(X_proj=X_proj, x_rest=x_rest, centers_proj=c_proj, centers_rest=c_rest,
                 prune_tol=pair_tolerances(d, p, x_max, c_max, dtype))
    shift = np.sqrt(ref.sqdist(centers, moved)[np.arange(c), np.arange(c)])
    return X, centers, moved, shift, prune


def _elkan_revisit(X, centers, moved, shift, n_threads, prune):
    n, c = X.shape[0], centers.shape[0]
    rows = np.arange(n, dtype=np.intp)
    lower = np.empty((n, c), np.float32)
    last = np.empty(n, X.dtype)
    visit_shift = np.empty(n)
    labels = np.empty(n, np.int32)
    dist2 = np.empty(n, X.dtype)
    slack = bound_slack(X.dtype)
    _elkan.elkan_assign(X, np.ones(n, X.dtype), rows, centers, np.zeros((c, c)),
                        np.zeros(c), np.zeros(c), lower, np.full(n, -1, np.int32), last,
                        visit_shift, labels, dist2, None, None, slack, 1)
    half_cc = np.empty((c, c))
    half_min = np.empty(c)
    _elkan.center_half_distances(moved, half_cc, half_min, 1)
    out = _elkan.elkan_assign(X, np.ones(n, X.dtype), rows, moved, half_cc, half_min, shift,
                              lower, labels.copy(), last, visit_shift, labels, dist2, None,
                              None, slack, n_threads, **prune)
    return labels, dist2, lower - shift, out


@pytest.mark.parametrize("shape", SHAPES)
def test_elkan_revisit_with_pruning_matches_reference(shape, dtype, n_threads):
    X, centers, moved, shift, prune = _revisit_inputs(shape, dtype, seed=11)
    plain = _elkan_revisit(X, centers, moved, shift, n_threads, {})
    pruned = _elkan_revisit(X, centers, moved, shift, n_threads, prune)
    labels_ref, dist2_ref, _ = ref.assign_full(X, moved)
    np.testing.assert_array_equal(pruned[0], plain[0])
    np.testing.assert_array_equal(pruned[1], plain[1])
    d2 = ref.sqdist(X, moved)
    np.testing.assert_array_equal(d2[np.arange(len(X)), pruned[0]]
                                  <= dist2_ref * (1 + 1e-4) + 1e-6, True)
    n_direct, n_tests = pruned[3]
    assert n_direct <= plain[3] and n_direct + n_tests >= plain[3]
    # every stored bound stays below the exact distance
    assert np.all(pruned[2] <= np.sqrt(d2) * (1 + 1e-9) + 1e-9)


def _yinyang_revisit(X, centers, moved, shift, n_groups, n_threads, prune):
    n, c = X.shape[0], centers.shape[0]
    group_of = _groups(c, n_groups)
    members = np.argsort(group_of, kind="stable").astype(np.int32)
    starts = np.zeros(n_groups + 1, np.intp)
    np.cumsum(np.bincount(group_of, minlength=n_groups), out=starts[1:])
    rows = np.arange(n, dtype=np.intp)
    lower = np.empty((n, n_groups), np.float32)
    last = np.empty(n, X.dtype)
    visit = np.zeros(n, np.int32)
    labels = np.empty(n, np.int32)
    dist2 = np.empty(n, X.dtype)
    slack = bound_slack(X.dtype)
    zeros = np.zeros(n_groups)
    _yinyang.yinyang_init_bounds(X, rows, centers, group_of, zeros, 1, lower, last, visit,
                                 labels, dist2, slack, 1)
    group_shift = np.maximum.reduceat(shift[members], starts[:-1])
    out = _yinyang.yinyang_assign(X, np.ones(n, X.dtype), rows, moved, members, starts,
                                  group_of, shift, group_shift, zeros,
                                  np.full(c, 2, np.int32), 2, lower, labels.copy(), last,
                                  visit, labels, dist2, None, None, slack, n_threads, **prune)
    return labels, dist2, lower - group_shift, out


@pytest.mark.parametrize("shape", SHAPES)
def test_yinyang_revisit_with_pruning_matches_reference(shape, dtype, n_threads):
    X, centers, moved, shift, prune = _revisit_inputs(shape, dtype, seed=12)
    n_groups = shape[4]
    plain = _yinyang_revisit(X, centers, moved, shift, n_groups, n_threads, {})
    pruned = _yinyang_revisit(X, centers, moved, shift, n_groups, n_threads, prune)
    np.testing.assert_array_equal(pruned[0], plain[0])
    np.testing.assert_array_equal(pruned[1], plain[1])
    labels_ref, dist2_ref, _ = ref.assign_full(X, moved)
    d2 = ref.sqdist(X, moved)
    np.testing.assert_array_equal(d2[np.arange(len(X)), pruned[0]]
                                  <= dist2_ref * (1 + 1e-4) + 1e-6, True)
    n_direct, n_tests = pruned[3]
    assert n_direct <= plain[3] and n_direct + n_tests >= plain[3]
    # each group bound stays below the exact distance to every other centre of the group
    group_of = _groups(moved.shape[0], n_groups)
    d = np.sqrt(d2)
    d[np.arange(len(X)), pruned[0]] = np.inf
    for g in range(n_groups):
        exact = d[:, group_of == g].min(axis=1)
        assert np.all(pruned[2][:, g] <= exact * (1 + 1e-9) + 1e-9)


def test_revisit_refuses_mismatched_projections(dtype):
    X, centers, moved, shift, prune = _revisit_inputs((50, 8, 5, 2, 1), dtype, seed=13)
    prune["x_rest"] = prune["x_rest"][:-1]
    with pytest.raises(ValueError, match="one projected row per row of the bounds"):
        _elkan_revisit(X, centers, moved, shift, 1, prune)
    prune["x_rest"] = None
    with pytest.raises(ValueError, match="one projected row per row of the bounds"):
        _yinyang_revisit(X, centers, moved, shift, 1, 1, prune)
