"""transport (the capacitated assignment's successive shortest paths) on hand-made
candidate graphs: optimal duals, whole rows for integral data, split weights, blocked
graphs, and any prices as a start."""
import numpy as np
import pytest

from clusterkit._kernels import _balanced


def _full_graph(d2):
    n, c = d2.shape
    ptr = np.arange(0, n * c + 1, c, dtype=np.int64)
    idx = np.tile(np.arange(c, dtype=np.int32), n)
    return ptr, idx, np.ascontiguousarray(d2.ravel(), dtype=np.float64)


def _solve(ptr, idx, d2, mass, lower, upper, prices=None, tol=0.0):
    n, c = mass.shape[0], lower.shape[0]
    prices = np.zeros(c + 1) if prices is None else prices.astype(np.float64)
    labels = np.empty(n, dtype=np.int32)
    label_d2 = np.empty(n)
    status, splits, n_paths, n_searches, n_scanned = _balanced.transport(
        ptr, idx, d2, mass, lower.astype(np.float64), upper.astype(np.float64), prices,
        labels, label_d2, tol)
    return status, labels, label_d2, prices, splits


def test_bounds_move_the_cheapest_rows_and_prices_certify():
    # rows 0-2 are nearest cluster 0, which may hold 2: the row losing least moves
    d2 = np.array([[0.0, 5.0], [1.0, 3.0], [0.5, 9.0], [4.0, 0.0]])
    status, labels, label_d2, prices, splits = _solve(
        *_full_graph(d2), np.ones(4), np.array([0.0, 0.0]), np.array([2.0, 2.0]))
    assert status == 0
    assert labels.tolist() == [0, 1, 0, 1]
    assert label_d2.tolist() == [0.0, 3.0, 0.5, 0.0]
    # complementary slackness: every row's label minimises d2 - price
    value = d2 - prices[:-1]
    assert np.all(value[np.arange(4), labels] <= value.min(axis=1) + 1e-12)
    assert splits[0].size == 0


@pytest.mark.parametrize("seed", range(5))
def test_any_start_prices_give_the_same_cost(seed):
    rng = np.random.default_rng(seed)
    d2 = rng.uniform(0, 10, size=(40, 5))
    graph = _full_graph(d2)
    lower, upper = np.full(5, 6.0), np.full(5, 10.0)
    costs = []
    for prices in (None, rng.normal(size=6) * 20, np.full(6, 3.0)):
        status, labels, label_d2, _, _ = _solve(*graph, np.ones(40), lower, upper, prices)
        assert status == 0
        sizes = np.bincount(labels, minlength=5)
        assert sizes.min() >= 6 and sizes.max() <= 10
        costs.append(label_d2.sum())
    assert costs[1] == pytest.approx(costs[0]) and costs[2] == pytest.approx(costs[0])


def test_weights_split_at_most_the_rows_they_must():
    # total 3 in two clusters of exactly 1.5: one row must be split
    d2 = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 2.0]])
    mass = np.array([1.0, 1.0, 1.0])
    status, labels, _, _, (rows, clusters, masses, _) = _solve(
        *_full_graph(d2), mass, np.array([1.5, 1.5]), np.array([1.5, 1.5]), tol=1e-12)
    assert status == 0
    assert np.unique(rows).size == 1
    assert masses.sum() == pytest.approx(1.0)
    held = np.bincount(clusters, masses, minlength=2)
    whole = np.bincount(np.delete(labels, rows[0]), np.delete(mass, rows[0]), minlength=2)
    assert (held + whole).tolist() == pytest.approx([1.5, 1.5])


def test_a_blocked_candidate_graph_says_so():
    # every row may go to cluster 0 only, which holds at most 2 of the 3
    ptr = np.arange(4, dtype=np.int64)
    idx = np.zeros(3, dtype=np.int32)
    d2 = np.zeros(3)
    status, *_ = _solve(ptr, idx, d2, np.ones(3), np.array([0.0, 0.0]),
                        np.array([2.0, 3.0]))
    assert status == 1
