"""Balanced clusters (BalancedEStep and its solver): the bounds hold, the assignment is the
transport problem's optimum (a linear program solved by HiGHS as the reference), weighted
bounds keep their stated tolerance, and what cannot hold is refused."""
import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, vstack

from clusterkit import (LWCS, QUANTIZATION_ERROR, BalancedEStep, Breathing, Clusterer,
                        FitState)
from clusterkit.datasets import make_gaussian_blobs
from clusterkit.estep.transport import balanced_assignment, size_bounds

DTYPES = (np.float32, np.float64)
# the solver ranks float32 distances: the optimum to float32 rounding
RTOL = {np.float32: 2e-5, np.float64: 1e-9}


def lp_optimum(X, sample_weight, centers, lower, upper):
    """The transport problem's optimal cost, rows split as the LP likes (HiGHS)."""
    X, centers = X.astype(np.float64), centers.astype(np.float64)
    n, c = X.shape[0], centers.shape[0]
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    columns = np.arange(n * c)
    rows_sum = coo_matrix((np.ones(n * c), (np.repeat(np.arange(n), c), columns)),
                          shape=(n, n * c))
    cluster_sum = coo_matrix((np.ones(n * c), (np.tile(np.arange(c), n), columns)),
                             shape=(c, n * c))
    result = linprog(d2.ravel(), A_ub=vstack([cluster_sum, -cluster_sum]),
                     b_ub=np.r_[np.full(c, upper), -np.full(c, lower)], A_eq=rows_sum,
                     b_eq=sample_weight.astype(np.float64), bounds=(0, None), method="highs")
    assert result.status == 0
    return result.fun, d2


def _problem(seed, n, c, rounded=False, duplicates=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) + 3 * rng.integers(0, 2, size=(n, 1))
    if rounded:  # many equal distances
        X = np.round(X)
    if duplicates:
        X[n // 2:] = X[: n - n // 2]
    centers = X[rng.choice(n, c, replace=False)] + 0.1 * rng.normal(size=(c, 2))
    return X, centers


def _cost(d2, weight, labels):
    return float((weight * d2[np.arange(len(labels)), labels]).sum())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", [
    # (n, c, size_min, size_max, rounded, duplicates, n_candidates)
    (37, 4, 5, 11, False, False, 2),
    (41, 5, 0, 9, True, False, 1),       # ties
    (30, 3, 10, 10, False, True, 2),     # size_min = size_max = N / C, duplicate rows
    (23, 1, 0, 23, False, False, 8),     # C = 1
    (53, 6, 8, 9, True, True, 3),        # ties and duplicates, tight bounds
    (57, 7, 3, None, False, False, 2),   # lower bounds only
    (420, 3, 120, 160, False, False, 2), # a cold start from samples' prices
])
def test_equals_linear_programming_optimum(dtype, case):
    n, c, size_min, size_max, rounded, duplicates, n_candidates = case
    X, centers = _problem(n + c, n, c, rounded, duplicates)
    weight = np.ones(n)
    result = balanced_assignment(X.astype(dtype), weight.astype(dtype), centers.astype(dtype),
                                 size_min, size_max, n_candidates=n_candidates)
    sizes = np.bincount(result.labels, minlength=c)
    assert sizes.min() >= size_min and sizes.max() <= (n if size_max is None else size_max)
    optimum, d2 = lp_optimum(X, weight, centers, size_min, n if size_max is None else size_max)
    assert _cost(d2, weight, result.labels) == pytest.approx(optimum, rel=RTOL[dtype], abs=1e-9)
    assert result.labels.dtype == np.int32 and result.dist2.dtype == dtype
    assert result.split_rows == 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_warm_start_gives_the_same_optimum(dtype):
    X, centers = _problem(3, 60, 5)
    weight = np.ones(60, dtype=dtype)
    X, centers = X.astype(dtype), centers.astype(dtype)
    cold = balanced_assignment(X, weight, centers, 10, 13)
    moved = centers + dtype(0.05)
    warm = balanced_assignment(X, weight, moved, 10, 13, prices=cold.prices)
    fresh = balanced_assignment(X, weight, moved, 10, 13)
    optimum, d2 = lp_optimum(X, weight, moved, 10, 13)
    for result in (warm, fresh):
        assert _cost(d2, weight, result.labels) == pytest.approx(optimum, rel=RTOL[dtype])
    # any prices are a valid start
    odd = balanced_assignment(X, weight, moved, 10, 13,
                              prices=np.random.default_rng(0).normal(size=6) * 50)
    assert _cost(d2, weight, odd.labels) == pytest.approx(optimum, rel=RTOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("seed", range(4))
def test_weighted_bounds_within_one_split_row(dtype, seed):
    """The promise for unequal weights: no more cost than the fractional optimum, and every
    cluster's weight within the bounds up to less than one split row's weight."""
    rng = np.random.default_rng(seed)
    n, c = 45, 4
    X, centers = _problem(seed, n, c, rounded=seed % 2 == 1)
    weight = rng.uniform(0.2, 3.0, n)
    total = weight.sum()
    size_min, size_max = 0.8 * total / c, 1.1 * total / c
    result = balanced_assignment(X.astype(dtype), weight.astype(dtype), centers.astype(dtype),
                                 size_min, size_max, n_candidates=2)
    w = weight.astype(dtype).astype(np.float64)
    optimum, d2 = lp_optimum(X, w, centers, size_min, size_max)
    assert _cost(d2, w, result.labels) <= optimum * (1 + RTOL[dtype]) + 1e-9
    sizes = np.bincount(result.labels, w, minlength=c)
    slack = w.max()
    assert np.all(sizes > size_min - slack) and np.all(sizes < size_max + slack)


def test_equal_weights_count_rows():
    X, centers = _problem(5, 40, 4)
    result = balanced_assignment(X, np.full(40, 2.5), centers, 25, 25)  # 10 rows of 2.5
    assert np.bincount(result.labels, minlength=4).tolist() == [10, 10, 10, 10]


def test_zero_weight_rows_count_in_no_bound():
    X, centers = _problem(6, 30, 3)
    weight = np.ones(30)
    weight[:6] = 0
    result = balanced_assignment(X, weight, centers, 8, 8)
    assert np.bincount(result.labels, weight, minlength=3).tolist() == [8, 8, 8]


@pytest.mark.parametrize("size_min, size_max, match", [
    (5, 4, "size_min=5 must be <= size_max=4"),
    (11, None, "size_min=11 cannot hold"),
    (None, 9, "size_max=9 cannot hold"),
    (10.2, 10.8, "size_min=10.2 and size_max=10.8 hold no whole number"),
])
def test_infeasible_bounds_are_refused(size_min, size_max, match):
    with pytest.raises(ValueError, match=match):
        size_bounds(size_min, size_max, 3, np.ones(30))
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError, match=match):
        Clusterer(3, estep=BalancedEStep(size_min, size_max), random_state=0).fit(X)


def test_parameters_are_checked():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError, match="size_min"):
        Clusterer(3, estep=BalancedEStep(size_min=-1), random_state=0).fit(X)
    with pytest.raises(ValueError, match="size_max"):
        Clusterer(3, estep=BalancedEStep(size_max=0), random_state=0).fit(X)


def _blobs(n=900, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) + 6 * rng.integers(0, 3, size=(n, 1))
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", [{}, {"n_init": 2}, {"mstep": "spherical"},
                                     {"refine": Breathing(max_rounds=3)},
                                     {"seed": "random"}])
def test_fit_labels_hold_the_bounds(dtype, options):
    X = _blobs(dtype=dtype)
    km = Clusterer(7, estep=BalancedEStep(size_min=110, size_max=140), random_state=0,
                   **options).fit(X)
    sizes = np.bincount(km.labels_, minlength=7)
    assert sizes.min() >= 110 and sizes.max() <= 140
    assert km.cluster_centers_.dtype == dtype
    if "mstep" in options:
        return  # (a spherical model's inertia_ is of the rows scaled to unit norm)
    # labels_ are the bounded assignment to the final centres, inertia_ theirs
    centers = km.cluster_centers_.astype(np.float64)
    d2 = ((X.astype(np.float64)[:, None, :] - centers[None]) ** 2).sum(-1)
    assert km.inertia_ == pytest.approx(_cost(d2, np.ones(len(X)), km.labels_), rel=RTOL[dtype])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_breathing_judges_rounds_by_the_bounded_error(seed):
    """A kept round lowers the error of bounded labels, and the fit ends at or below every
    kept round's: the rounds are not judged by the (lower) error of nearest centres."""
    X = make_gaussian_blobs(3000, 4, 10, dtype=np.float64, random_state=seed)[0]
    km = Clusterer(30, estep=BalancedEStep(size_min=90, size_max=110),
                   refine=Breathing(max_rounds=6), random_state=seed).fit(X)
    log = km.refinement_log_
    centers = km.cluster_centers_
    bounded = float(((X - centers[km.labels_]) ** 2).sum())
    nearest = float(((X[:, None, :] - centers[None]) ** 2).sum(-1).min(axis=1).sum())
    assert all(r["objective"] < r["objective_before"] for r in log if r["kept"])
    assert bounded <= min(r["objective"] if r["kept"] else r["objective_before"]
                          for r in log) * (1 + 1e-12)
    assert nearest < bounded  # (the bounds cost something here: the test tells them apart)


def test_fit_with_weights_and_the_class_promise():
    X = _blobs(600, seed=1)
    weight = np.random.default_rng(1).uniform(0.5, 2.0, 600)
    total = weight.sum()
    km = Clusterer(5, estep=BalancedEStep(size_min=0.9 * total / 5, size_max=1.1 * total / 5),
                   random_state=0).fit(X, sample_weight=weight)
    sizes = np.bincount(km.labels_, weight, minlength=5)
    assert np.all(sizes > 0.9 * total / 5 - weight.max())
    assert np.all(sizes < 1.1 * total / 5 + weight.max())


def test_fit_min_equals_max_and_one_cluster():
    X = _blobs(600)
    km = Clusterer(6, estep=BalancedEStep(size_min=100, size_max=100), random_state=0).fit(X)
    assert np.bincount(km.labels_).tolist() == [100] * 6
    one = Clusterer(1, estep=BalancedEStep(size_min=600, size_max=600), random_state=0).fit(X)
    assert np.all(one.labels_ == 0)


def test_steps_count_distances_and_keep_prices():
    X = _blobs(300)
    centers = X[:4].copy()
    estep = BalancedEStep(size_max=80)
    w = np.ones(300)
    state = FitState(n_clusters=4, n_features=3, random_state=np.random.RandomState(0),
                     objective=QUANTIZATION_ERROR, n_samples=300)
    state.run.estep_state = estep.init_state(X, w, centers, state)
    first = estep.assign(X, w, centers, state)
    assert state.meter.cost["estep"] >= 300 * 4
    assert state.run.estep_state.prices is not None
    assert np.bincount(first.labels, minlength=4).max() <= 80
    assert first.objective == pytest.approx(float(first.dist2.sum()))


def test_compositions_that_cannot_hold_the_bounds_are_refused():
    X = _blobs(600)
    balanced = BalancedEStep(size_max=250)
    with pytest.raises(ValueError, match="reduce=LWCS .*not the data's sizes"):
        Clusterer(3, estep=balanced, reduce=LWCS(200), random_state=0).fit(X)
    with pytest.raises(ValueError, match="schedule=MiniBatch"):
        Clusterer(3, estep=balanced, schedule="minibatch", random_state=0).fit(X)
    with pytest.raises(ValueError, match="mstep=SoftMStep needs responsibilities"):
        Clusterer(3, estep=balanced, mstep="soft", random_state=0).fit(X)
    assert not hasattr(Clusterer(3, estep=balanced), "partial_fit")


def test_row_chunks_are_refused_with_the_reason():
    da = pytest.importorskip("dask.array")
    X = _blobs(600)
    with pytest.raises(ValueError, match="estep=BalancedEStep: its bounds tie all the rows"):
        Clusterer(3, estep=BalancedEStep(size_max=250), random_state=0).fit(
            da.from_array(X, chunks=200))


def test_predict_is_the_nearest_centre():
    X = _blobs(600)
    km = Clusterer(3, estep=BalancedEStep(size_min=150, size_max=210), random_state=0).fit(X)
    centers = km.cluster_centers_
    nearest = np.argmin(((X[:, None, :] - centers[None]) ** 2).sum(-1), axis=1)
    assert np.array_equal(km.predict(X), nearest)


def test_weighted_bounds_at_the_total_to_rounding():
    """Bounds in weight that meet the total only to rounding (size_min = size_max = W / C)
    are taken, and met to one split row's weight."""
    rng = np.random.default_rng(3)
    X = _blobs(300, seed=3)
    weight = rng.uniform(0.3, 1.7, 300)
    share = weight.sum() / 4
    km = Clusterer(4, estep=BalancedEStep(share, share), random_state=0).fit(
        X, sample_weight=weight)
    sizes = np.bincount(km.labels_, weight, minlength=4)
    assert np.all(np.abs(sizes - share) < weight.max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("weighted", [False, True])
def test_kept_candidates_give_the_optimum_as_centres_move(dtype, weighted):
    """A solve from the last one's prices and candidates (kept while their bound certifies
    them) still finds the optimum, after small, large and no moves of the centres."""
    rng = np.random.default_rng(4)
    n, c = 120, 6
    X, centers = _problem(4, n, c)
    weight = rng.uniform(0.3, 2.0, n) if weighted else np.ones(n)
    size_min, size_max = (0.7 * weight.sum() / c, 1.2 * weight.sum() / c) if weighted else (14, 23)
    X, w = X.astype(dtype), weight.astype(dtype)
    result = balanced_assignment(X, w, centers.astype(dtype), size_min, size_max,
                                 n_candidates=2)
    for scale in (0.01, 0.5, 0.0, 2.0):
        centers = centers + scale * rng.normal(size=centers.shape)
        result = balanced_assignment(X, w, centers.astype(dtype), size_min, size_max,
                                     prices=result.prices, n_candidates=2,
                                     candidates=result.candidates)
        wd = w.astype(np.float64)
        optimum, d2 = lp_optimum(X, wd, centers.astype(dtype), size_min, size_max)
        cost = _cost(d2, wd, result.labels)
        sizes = np.bincount(result.labels, wd, minlength=c)
        if weighted:
            assert cost <= optimum * (1 + RTOL[dtype]) + 1e-9
            assert np.all(sizes > size_min - wd.max()) and np.all(sizes < size_max + wd.max())
        else:
            assert cost == pytest.approx(optimum, rel=RTOL[dtype])
            assert sizes.min() >= size_min and sizes.max() <= size_max


def test_widened_candidates_free_the_older_and_a_graph_past_the_budget_is_refused():
    """Each row's newest candidates are all the graph keeps (a widening of every row frees
    the blocks before it), and a widening the fit's memory cannot hold is refused before it
    allocates."""
    from clusterkit._data import memory
    from clusterkit.estep.transport import _Graph

    X, centers = _problem(5, 300, 40)
    X, centers = X.astype(np.float32), centers.astype(np.float32)
    prices = np.zeros(41)
    graph = _Graph.ranked(X, centers, prices, 4, 1)
    graph.widen(np.arange(10), prices)  # a few rows: both blocks hold newest candidates
    assert len(graph.blocks) == 2
    for _ in range(3):  # every row: renewed, renewed, then four times as many
        graph.widen(np.arange(300), prices)
        assert len(graph.blocks) == len(np.unique(graph.width))
    assert graph.width.min() == 16
    with memory.fit_budget(50_000), pytest.raises(memory.FitMemoryError,
                                                 match="candidate graph"):
        graph.widen(np.arange(300), prices)
    assert graph.width.min() == 16  # nothing was ranked
