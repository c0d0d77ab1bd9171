"""_yinyang.pyx and _centers.pyx against their NumPy twins: labels, distances, counts, valid
bounds, threads."""
import numpy as np
import pytest

from clusterkit import _reference
from clusterkit._kernels import _centers, _dist, _mstep, _yinyang
from clusterkit.estep.yinyang import _YinyangBounds, center_groups, center_neighbours

from .._helpers import assert_labels_equal_up_to_ties

RTOL = {np.float32: 1e-5, np.float64: 1e-12}


def _blobs(n, d, c, dtype=np.float64, seed=0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-20, 20, size=(c, d))
    return (means[rng.randint(c, size=n)] + rng.normal(size=(n, d))).astype(dtype)


def _distances(X, centers):
    X, centers = X.astype(np.float64), centers.astype(np.float64)
    return np.sqrt(((X[:, None, :] - centers[None]) ** 2).sum(-1))


def _group_bounds_hold(bounds, rows, X, centers, labels):
    """Every stored group bound, minus the group's moves, is below the distance to every
    centre of the group except the sample's label."""
    d = _distances(X, centers)
    d[np.arange(len(rows)), labels] = np.inf
    for g in range(bounds.n_groups):
        members = bounds.members[bounds.group_starts[g]:bounds.group_starts[g + 1]]
        valid = bounds.lower[rows, g] - bounds.group_shift_sum[g]
        assert np.all(valid <= d[:, members].min(1) * (1 + 1e-9)), f"group {g} bound invalid"


def _call(impl, X, centers, bounds, shift, previous, rows, n_threads, sums=None, search=None):
    """One call with the bookkeeping YinyangEStep.assign does; ``impl`` 'kernel' or 'ref';
    ``search``: None, "separation" (Hamerly's test), "neighbours" (also each centre's full
    list of neighbours) or "partial" (lists of 3, then Yinyang's search)."""
    bounds.step += 1
    bounds.group_shift_prev[:] = bounds.group_shift_sum
    bounds.group_shift_sum += np.maximum.reduceat(shift[bounds.members], bounds.group_starts[:-1])
    bounds.last_moved[shift > 0] = bounds.step
    slack = 2.0 ** -12 if X.dtype == np.float32 else 2.0 ** -20
    half_min = neighbours = neighbour_dist = None
    if search is not None:
        n_nb = len(centers) - 1 if search != "partial" else min(3, len(centers) - 1)
        neighbours, neighbour_dist, half_min, _ = center_neighbours(centers, n_nb)
        if search == "separation":
            half_min = np.empty(len(centers))
            assert _centers.center_half_min(centers, half_min, n_threads) == (
                len(centers) * (len(centers) - 1))
            d = _distances(centers, centers) + np.diag(np.full(len(centers), np.inf))
            np.testing.assert_allclose(half_min, d.min(1, initial=np.inf) / 2, rtol=1e-6)
            neighbours = neighbour_dist = None
    if impl == "ref":
        return _reference.yinyang_assign(
            X[rows], rows, centers, bounds.members, bounds.group_starts, bounds.group_of, shift,
            bounds.group_shift_sum, bounds.group_shift_prev, bounds.last_moved, bounds.step,
            bounds.lower, previous[rows], bounds.last_dist2, bounds.visit, slack,
            None if search is None else half_min)
    labels = np.empty(len(rows), dtype=np.int32)
    dist2 = np.empty(len(rows), dtype=X.dtype)
    centers_sum, weight = sums if sums is not None else (None, None)
    n_evals = _yinyang.yinyang_assign(
        np.ascontiguousarray(X[rows]), np.ones(len(rows), X.dtype), rows, centers,
        bounds.members, bounds.group_starts, bounds.group_of, shift, bounds.group_shift_sum,
        bounds.group_shift_prev, bounds.last_moved, bounds.step, bounds.lower,
        np.ascontiguousarray(previous[rows]), bounds.last_dist2, bounds.visit, labels, dist2,
        centers_sum, weight, slack, n_threads, half_min, neighbours, neighbour_dist)
    return labels, dist2, n_evals


@pytest.mark.parametrize("search", [None, "separation", "neighbours", "partial"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features,n_clusters,n_groups", [
    (1, 2, 1, 1), (255, 3, 9, 1), (257, 3, 9, 3), (600, 17, 31, 4), (300, 1, 40, 40),
    (513, 20, 12, 12), (701, 2, 45, 1)])
def test_kernel_matches_reference_with_valid_bounds(dtype, n_samples, n_features, n_clusters,
                                                    n_groups, search):
    """First visits, then visits after random centre moves (one centre still from the second
    move on, so that its samples' distances are reused): the kernel's labels, distances and
    counts are the NumPy twin's, labels are the nearest centres, every stored bound stays
    valid, and the results do not depend on the number of threads. With the separation test
    or the neighbour search (one group only) the labels and distances are still the twin's;
    the neighbour search computes other distances, so its counts are not compared."""
    if search in ("neighbours", "partial") and n_groups != 1:
        pytest.skip("the neighbour search needs one group")
    X = _blobs(n_samples, n_features, 6, dtype)
    rng = np.random.RandomState(1)
    centers = X[rng.choice(n_samples, n_clusters, replace=n_clusters > n_samples)].copy()
    group_of, _ = center_groups(centers, n_groups, 1)
    rows = np.arange(n_samples, dtype=np.intp)
    outputs = {}
    for impl, n_threads in [("ref", 1), ("kernel", 1), ("kernel", 2)]:
        move_rng = np.random.RandomState(2)
        bounds = _YinyangBounds(n_samples, group_of, dtype, 1.0)
        previous = np.full(n_samples, -1, dtype=np.int32)
        current, shift = centers.copy(), np.zeros(n_clusters)
        runs = []
        for visit in range(5):
            labels, dist2, n_evals = _call(impl, X, current, bounds, shift, previous, rows,
                                           n_threads, search=search)
            d = _distances(X, current)
            assert_labels_equal_up_to_ties(X, current, labels, d.argmin(1), RTOL[dtype])
            np.testing.assert_allclose(dist2, d[rows, labels] ** 2, rtol=RTOL[dtype] * 10,
                                       atol=1e-5)
            _group_bounds_hold(bounds, rows, X, current, labels)
            if visit == 0:
                assert n_evals == n_samples * n_clusters
            runs.append((labels.copy(), dist2.copy(), n_evals))
            previous = labels
            scale = 0.3 if visit < 2 else 0.02  # large moves, then settling centres
            moved = current + move_rng.normal(scale=scale, size=current.shape).astype(dtype)
            if visit >= 1:
                moved[0] = current[0]
            shift = np.sqrt(((moved.astype(np.float64) - current) ** 2).sum(1))
            current = moved
        outputs[impl, n_threads] = runs
    for ref, one, two in zip(outputs["ref", 1], outputs["kernel", 1], outputs["kernel", 2]):
        np.testing.assert_array_equal(one[0], two[0])
        np.testing.assert_array_equal(one[1], two[1])
        assert one[2] == two[2]
        assert_labels_equal_up_to_ties(X, centers, one[0], ref[0], 1.0)  # (checked above)
        np.testing.assert_allclose(one[1], ref[1], rtol=RTOL[dtype] * 10, atol=1e-5)
        assert one[2] == ref[2] or search in ("neighbours", "partial")


@pytest.mark.parametrize("search", ["separation", "neighbours"])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_groups", [1, 3])
def test_samples_of_still_centres_leave_early(dtype, n_threads, search, n_groups):
    """Centres that do not move: the early exit (squared tests, no call per sample) gives the
    twin's labels, distances and counts; once all centres are still, only a sample exactly
    halfway between two centres (a tie) is searched, and it goes to the lower index."""
    if search == "neighbours" and n_groups != 1:
        pytest.skip("the neighbour search needs one group")
    grid = np.array([(i, j) for i in range(-6, 7, 3) for j in range(-6, 7, 4)])
    centers = grid[np.random.RandomState(4).permutation(len(grid))[:9]].astype(dtype)
    centers[1] = centers[0] + np.array([2, 0], dtype=dtype)  # (grid points are 3 or 4 apart)
    X = np.vstack([_blobs(301, 2, 9, dtype, seed=5), centers[:1] + np.array([1, 0], dtype)])
    X = X.astype(dtype)
    group_of, _ = center_groups(centers, n_groups, 1)
    rows = np.arange(len(X), dtype=np.intp)
    outputs = {}
    for impl in ("ref", "kernel"):
        bounds = _YinyangBounds(len(X), group_of, dtype, 1.0)
        previous = np.full(len(X), -1, dtype=np.int32)
        shift = np.zeros(len(centers))
        outputs[impl] = []
        for _ in range(3):
            labels, dist2, n_evals = _call(impl, X, centers, bounds, shift, previous, rows,
                                           n_threads, search=search)
            outputs[impl].append((labels.copy(), dist2.copy(), n_evals))
            previous = labels
    for ref, ours in zip(outputs["ref"], outputs["kernel"]):
        np.testing.assert_array_equal(ours[0], ref[0])
        np.testing.assert_allclose(ours[1], ref[1], rtol=RTOL[dtype] * 10, atol=1e-5)
        assert ours[2] == ref[2] or search == "neighbours"
    labels, dist2, n_evals = outputs["kernel"][-1]
    assert labels[-1] == 0  # the tie between centres 0 and 1
    d = _distances(X, centers)
    np.testing.assert_array_equal(labels, d.argmin(1))
    assert n_evals <= len(centers)  # the tied sample's search only


def test_filters_skip_distances_once_centres_settle():
    """On clustered data with centres that barely move, most samples pass the global filter:
    about one distance per sample (to its own, moved centre) instead of C."""
    X = _blobs(2000, 4, 20, seed=3)
    centers = _blobs(20, 4, 20, seed=3) + 0.0
    group_of, _ = center_groups(centers, 4, 1)
    bounds = _YinyangBounds(len(X), group_of, X.dtype, 1.0)
    rows = np.arange(len(X), dtype=np.intp)
    previous = np.full(len(X), -1, dtype=np.int32)
    labels, _, n_first = _call("kernel", X, centers, bounds, np.zeros(20), previous, rows, 2)
    shift = np.full(20, 1e-3)
    _, _, n_next = _call("kernel", X, centers + 1e-3 / 2, bounds, shift, labels, rows, 2)
    assert n_first == 20 * len(X)
    assert len(X) <= n_next < 1.2 * len(X)


def test_bounds_survive_samples_outside_the_batch():
    """Rows not in a batch keep their bounds; after more centre moves they are still valid,
    and the kernel still agrees with its twin (the local filter is off for them)."""
    X = _blobs(500, 4, 8)
    centers = X[:12].copy()
    group_of, _ = center_groups(centers, 3, 1)
    states = {impl: (_YinyangBounds(500, group_of, X.dtype, 1.0),
                     np.full(500, -1, dtype=np.int32)) for impl in ("ref", "kernel")}
    rng = np.random.RandomState(0)
    shift = np.zeros(12)
    for _ in range(8):
        rows = np.sort(rng.choice(500, 120, replace=False)).astype(np.intp)
        results = {}
        for impl, (bounds, previous) in states.items():
            results[impl] = _call(impl, X, centers, bounds, shift, previous, rows, 2)
            labels = results[impl][0]
            np.testing.assert_array_equal(labels, _distances(X[rows], centers).argmin(1))
            previous[rows] = labels
            seen = np.flatnonzero(previous >= 0)
            _group_bounds_hold(bounds, seen, X[seen], centers, previous[seen])
        assert results["ref"][2] == results["kernel"][2]
        moved = centers + rng.normal(scale=0.2, size=centers.shape)
        shift = np.sqrt(((moved - centers) ** 2).sum(1))
        centers = moved


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_sums_equal_the_hard_msteps(dtype):
    """With the fixed-block layout the kernel sums the clusters in the M-step's order: the
    same bits as _mstep.accumulate_statistics, for 1 and 2 threads."""
    X = _blobs(9001, 3, 10, dtype)
    w = np.random.RandomState(0).uniform(0.5, 2, len(X)).astype(dtype)
    centers = X[:10].copy()
    assert _mstep.blocks_fit(len(X), 10, 3, X.itemsize)
    group_of, _ = center_groups(centers, 3, 1)
    for n_threads in (1, 2):
        bounds = _YinyangBounds(len(X), group_of, dtype, 1.0)
        labels = np.empty(len(X), dtype=np.int32)
        dist2 = np.empty(len(X), dtype=dtype)
        sums, weight = np.empty_like(centers), np.empty(10, dtype=dtype)
        bounds.step = 1
        _yinyang.yinyang_assign(X, w, np.arange(len(X), dtype=np.intp), centers, bounds.members,
                                bounds.group_starts, bounds.group_of, np.zeros(10),
                                bounds.group_shift_sum, bounds.group_shift_prev,
                                bounds.last_moved, 1, bounds.lower,
                                np.full(len(X), -1, np.int32), bounds.last_dist2, bounds.visit,
                                labels, dist2, sums, weight, 2.0 ** -20, n_threads)
        expected_sums, expected_weight = np.empty_like(centers), np.empty(10, dtype=dtype)
        _mstep.accumulate_statistics(X, w, labels[:, None], None, None, expected_sums,
                                     expected_weight, None, n_threads)
        np.testing.assert_array_equal(sums, expected_sums)
        np.testing.assert_array_equal(weight, expected_weight)


@pytest.mark.parametrize("n_groups", [1, 3, 7, 12])
def test_center_groups_partition_the_centres(n_groups):
    """Every group is non-empty and numbered 0 .. t'-1 with t' <= n_groups; t = 1 and t = C
    are one group and one centre per group."""
    centers = _blobs(12, 3, 4, seed=5)
    group_of, n_evals = center_groups(centers, n_groups, 2)
    t = group_of.max() + 1
    assert t <= n_groups and set(group_of.tolist()) == set(range(t))
    if n_groups == 1:
        assert t == 1 and n_evals == 0
    if n_groups == 12:
        np.testing.assert_array_equal(group_of, np.arange(12))
    if 1 < n_groups < 12:
        assert n_evals == 5 * 12 * n_groups


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_samples,n_features,n_clusters,n_groups", [
    (1, 9, 1, 1), (255, 12, 9, 3), (257, 40, 30, 30), (700, 17, 31, 1), (301, 2, 17, 3),
    (600, 8, 33, 1), (2, 1, 3, 3)])
def test_init_bounds_match_reference(dtype, n_samples, n_features, n_clusters, n_groups):
    """First visits in tiles (gemm from 9 features, direct distances below): Lloyd's labels,
    exact distances, group bounds below the exact group minima and close to them; the same
    for 1 and 2 threads."""
    assert _dist.uses_gemm(9) and not _dist.uses_gemm(8)
    X = _blobs(n_samples, n_features, 5, dtype, seed=4)
    X -= X.mean(0)  # as the driver centres them
    centers = X[np.random.RandomState(3).choice(n_samples, n_clusters,
                                                replace=n_clusters > n_samples)].copy()
    group_of, _ = center_groups(centers, n_groups, 1)
    t = group_of.max() + 1
    labels_ref, dist2_ref, group_min, n_ref = _reference.yinyang_init_bounds(X, centers,
                                                                            group_of, t)
    outputs = []
    for n_threads in (1, 2):
        bounds = _YinyangBounds(n_samples + 2, group_of, dtype, 1.0)
        bounds.group_shift_sum[:] = 0.5
        rows = np.arange(2, n_samples + 2, dtype=np.intp)  # rows of the state, not the batch
        labels = np.empty(n_samples, dtype=np.int32)
        dist2 = np.empty(n_samples, dtype=dtype)
        n_evals = _yinyang.yinyang_init_bounds(X, rows, centers, group_of,
                                               bounds.group_shift_sum, 3, bounds.lower,
                                               bounds.last_dist2, bounds.visit, labels, dist2,
                                               2.0 ** -12 if dtype == np.float32 else 2.0 ** -20,
                                               n_threads)
        assert n_evals == n_ref
        assert_labels_equal_up_to_ties(X, centers, labels, labels_ref, RTOL[dtype])
        np.testing.assert_allclose(dist2, dist2_ref, rtol=RTOL[dtype] * 10, atol=1e-5)
        np.testing.assert_array_equal(bounds.last_dist2[rows], dist2)
        assert np.all(bounds.visit[rows] == 3)
        valid = bounds.lower[rows].astype(np.float64) - 0.5
        assert np.all(valid <= group_min * (1 + 1e-9)), "a bound is above the distance"
        finite = np.isfinite(group_min)
        np.testing.assert_allclose(valid[finite], group_min[finite], rtol=1e-2, atol=0.05)
        outputs.append((labels, dist2, bounds.lower[rows].copy()))
    for a, b in zip(*outputs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_clusters,n_features,n_nb", [(1, 2, 0), (2, 1, 1), (37, 2, 36),
                                                        (101, 3, 7), (65, 8, 64)])
def test_center_neighbours_match_reference(dtype, n_clusters, n_features, n_nb):
    """Each centre's nearest other centres in order (integer coordinates: exact ties, kept in
    index order), their distances and half the nearest one; the same for 1 and 2 threads."""
    centers = np.random.RandomState(n_clusters).randint(-4, 5, size=(n_clusters, n_features))
    centers = centers.astype(dtype)
    d = _distances(centers, centers) + np.diag(np.full(n_clusters, np.inf))
    order = np.argsort(d, axis=1, kind="stable")[:, :n_nb]
    for n_threads in (1, 2):
        neighbours, neighbour_dist, half_min, n_evals = center_neighbours(centers, n_nb,
                                                                          n_threads)
        assert n_evals == n_clusters * (n_clusters - 1)
        assert neighbours.dtype == np.int32 and neighbours.shape == (n_clusters, n_nb)
        np.testing.assert_allclose(neighbour_dist, np.take_along_axis(d, order, axis=1),
                                   rtol=1e-6)
        # (integer coordinates: the distances are exact, so the ties are real ones)
        np.testing.assert_array_equal(neighbours, order)
        np.testing.assert_allclose(half_min, d.min(axis=1, initial=np.inf) / 2, rtol=1e-6)
