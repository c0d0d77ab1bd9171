"""A worker lost in the middle of a fit on all the rows of a dask array costs time, not the
result: the chunks' states it held are computed again from their lineage.

The cluster of this module is its own (its workers are killed); its nannies start new ones.
"""
import os

import numpy as np
import pytest

from clusterkit import ElkanEStep, FitState, HardMStep
from clusterkit._engine.mapreduce import _ChunkState, _Plan, _step_chunk
from clusterkit.presets import elkan, lloyd, nmbatch, var_kmeans_s


def _blobs(n_samples, n_features, n_centers, random_state):
    rng = np.random.RandomState(random_state)
    means = rng.normal(scale=2.0, size=(n_centers, n_features))  # overlapping: many steps
    X = means[rng.randint(n_centers, size=n_samples)] + rng.normal(size=(n_samples, n_features))
    return X


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GiB") as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _busiest_worker(client):
    """The worker holding the most results (the chunks' states among them)."""
    held = client.has_what()
    return max(sorted(held), key=lambda address: len(held[address]))


def _pids(client):
    return set(client.run(os.getpid).values())


def _kill(client, address):
    """Have the nanny kill the worker process at ``address`` (with all it holds) and start a
    new one; returns the killed process's id. (A worker killed from outside is restarted
    by its nanny too, but not always promptly on a busy machine: this waits for it.)"""
    pid = client.run(os.getpid, workers=[address])[address]
    client.restart_workers([address], timeout=600)
    client.wait_for_workers(2, timeout=600)  # (its successor has joined)
    assert pid not in _pids(client)
    return pid


def _var_kmeans_s(n_clusters, **kwargs):
    """var-k-means-S: K(n) kept per chunk, G_c shared by all chunks, the row stream."""
    return var_kmeans_s(n_clusters, G=3, **kwargs)


def _nmbatch(n_clusters, **kwargs):
    """nmbatch: nested prefixes, each chunk's visited rows' bounds and labels kept."""
    return nmbatch(n_clusters, initial_batch=600, **kwargs)


# Alone this module passes (in a fresh environment too, in seconds). In the whole suite in a
# fresh environment, a killed worker was twice not replaced by its nanny within ten minutes,
# after a third of the other tests had run in the same process: opt in until the
# interaction is found.
@pytest.mark.skipif(os.environ.get("CLUSTERKIT_FAULT_TESTS") != "1",
                    reason="set CLUSTERKIT_FAULT_TESTS=1 to kill workers mid-fit")
@pytest.mark.parametrize("preset", [lloyd, elkan, _var_kmeans_s, _nmbatch])
def test_a_worker_killed_at_30_and_70_percent_of_the_fit_changes_nothing(client, preset):
    da = pytest.importorskip("dask.array")
    X = _blobs(6_000, 4, 8, 0)
    init = X[np.random.RandomState(1).choice(len(X), 8, replace=False)]
    Xd = da.from_array(X, chunks=(1_000, 4))
    undisturbed = preset(8, seed=init, tol=0.0, random_state=0).fit(Xd)  # (to a fixed point)
    n_iter = undisturbed.n_iter_
    assert n_iter >= 8  # (enough steps to kill a worker twice in the middle)
    kill_at = {max(1, round(0.3 * n_iter)), round(0.7 * n_iter)}
    pids = _pids(client)
    killed = []

    def kill_a_worker(info=None):
        if info is None or info["iteration"] in kill_at:
            address = _busiest_worker(client)
            killed.append((len(client.has_what()[address]), _kill(client, address)))

    disturbed = preset(8, seed=init, tol=0.0, random_state=0, callback=kill_a_worker).fit(Xd)
    assert len(killed) == 2 and min(n for n, _ in killed) > 0  # each held chunks' states
    # and once more before the lazy labels are computed from the chunks' last states (a
    # fixed point: no labelling pass)
    kill_a_worker()
    if preset is not _var_kmeans_s:
        assert disturbed.history_[-1]["n_changed"] == 0 and disturbed.cost_["labels"] == 0
        assert killed[-1][0] > 0
    np.testing.assert_array_equal(disturbed.cluster_centers_, undisturbed.cluster_centers_)
    assert disturbed.n_iter_ == n_iter
    assert [h["objective"] for h in disturbed.history_] == \
        [h["objective"] for h in undisturbed.history_]
    assert disturbed.cost_["estep"] == undisturbed.cost_["estep"]
    np.testing.assert_array_equal(disturbed.labels_.compute(), undisturbed.labels_.compute())
    assert float(disturbed.inertia_) == float(undisturbed.inertia_)
    assert len({pid for _, pid in killed}) == 3 and pids - _pids(client)


def test_a_pure_step_leaves_the_chunk_state_it_reads_unchanged():
    """What a recomputation relies on: the same task on the same state gives the same
    result, and the state is not written into (the E-step updates a copy of its bounds)."""
    rng = np.random.RandomState(2)
    X = rng.normal(size=(500, 3))
    w = np.ones(len(X))
    centers = X[:6].copy()
    config = FitState(n_clusters=6, n_features=3, random_state=None).config
    plan = _Plan(ElkanEStep(), HardMStep(), config, None, np.zeros(6), len(X), pure=True)
    _, chunk = _step_chunk(X, w, _ChunkState(None, None, None, 0), centers, plan)
    moved = centers + 0.05 * rng.normal(size=centers.shape)
    plan.center_shift = np.sqrt(((moved - centers) ** 2).sum(axis=1))
    before = {name: np.copy(value) for name, value in vars(chunk.estep_state).items()
              if isinstance(value, np.ndarray)}
    labels = chunk.labels.copy()
    first, state_1 = _step_chunk(X, w, chunk, moved, plan)
    again, state_2 = _step_chunk(X, w, chunk, moved, plan)  # as a recomputation would
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(chunk.estep_state, name), value)
    np.testing.assert_array_equal(chunk.labels, labels)
    assert state_1.estep_state is not chunk.estep_state
    np.testing.assert_array_equal(state_1.labels, state_2.labels)
    for name in before:
        np.testing.assert_array_equal(getattr(state_1.estep_state, name),
                                      getattr(state_2.estep_state, name))
    assert first.statistics.keys() == again.statistics.keys()
    for name, value in first.statistics.items():
        np.testing.assert_array_equal(again.statistics[name], value)
    assert (first.objective, first.n_evals) == (again.objective, again.n_evals)
