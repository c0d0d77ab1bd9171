"""A worker lost in the middle of a fit on all the rows of a dask array costs time, not the
result: the chunks' states it held are computed again from their lineage.

Each test has its own cluster of four workers and closes three of them, each with all it
holds (nothing is handed over). The workers run in this process: starting worker processes
in the middle of the whole suite proved unreliable here (a nanny's successor process did not
always start), and what is tested -- the scheduler losing a worker's results and computing
them again -- is the same for threads and processes. Threads are the stricter test too: their
tasks read the client's very objects, not copies, so anything changed after it was handed to
a step shows in a recomputed result.
"""
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


@pytest.fixture
def cluster():
    pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=4, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield cluster, client


def _busiest_worker(client):
    """The worker holding the most results (the chunks' states among them)."""
    held = client.has_what()
    return max(sorted(held), key=lambda address: len(held[address]))


def _kill(cluster, client, address):
    """Close the worker at ``address`` without handing anything over; returns how many
    results it held."""
    n_held = len(client.has_what()[address])
    worker = next(w for w in cluster.workers.values() if w.address == address)
    cluster.sync(worker.close, executor_wait=False, reason="killed by the test")
    assert address not in client.scheduler_info()["workers"]
    return n_held


def _var_kmeans_s(n_clusters, **kwargs):
    """var-k-means-S: K(n) kept per chunk, G_c shared by all chunks, the row stream."""
    return var_kmeans_s(n_clusters, G=3, **kwargs)


def _nmbatch(n_clusters, **kwargs):
    """nmbatch: nested prefixes, each chunk's visited rows' bounds and labels kept."""
    return nmbatch(n_clusters, initial_batch=600, **kwargs)


@pytest.mark.parametrize("preset, persist", [(lloyd, False), (elkan, False),
                                             (_var_kmeans_s, False), (_nmbatch, False),
                                             (lloyd, True), (_var_kmeans_s, True)])
def test_a_worker_killed_at_30_and_70_percent_of_the_fit_changes_nothing(cluster, preset,
                                                                        persist):
    """Also on a persisted array, whose chunks' steps keep the framed rows with the states
    (a lost state is made again from the chunk's first step, which read the chunk)."""
    da = pytest.importorskip("dask.array")
    cluster, client = cluster
    X = _blobs(6_000, 4, 8, 0)
    init = X[np.random.RandomState(1).choice(len(X), 8, replace=False)]
    Xd = da.from_array(X, chunks=(1_000, 4))
    if persist:
        Xd = Xd.persist()
    undisturbed = preset(8, seed=init, tol=0.0, random_state=0).fit(Xd)  # (to a fixed point)
    n_iter = undisturbed.n_iter_
    # (the tasks of four worker threads share the strategies' objects: still the fit in memory)
    in_memory = preset(8, seed=init, tol=0.0, random_state=0).fit(X)
    assert in_memory.n_iter_ == n_iter
    np.testing.assert_allclose(undisturbed.cluster_centers_, in_memory.cluster_centers_,
                               rtol=0, atol=1e-10)
    assert n_iter >= 8  # (enough steps to kill a worker twice in the middle)
    kill_at = {max(1, round(0.3 * n_iter)), round(0.7 * n_iter)}
    killed = []  # (address, results it held)

    def kill_a_worker(info=None):
        if info is None or info["iteration"] in kill_at:
            address = _busiest_worker(client)
            killed.append((address, _kill(cluster, client, address)))

    disturbed = preset(8, seed=init, tol=0.0, random_state=0, callback=kill_a_worker).fit(Xd)
    assert len(killed) == 2 and min(n for _, n in killed) > 0  # each held chunks' states
    # and once more before the lazy labels are computed from the chunks' last states (a
    # fixed point: no labelling pass)
    kill_a_worker()
    if preset is not _var_kmeans_s:
        assert disturbed.history_[-1]["n_changed"] == 0 and disturbed.cost_["labels"] == 0
        assert killed[-1][1] > 0
    np.testing.assert_array_equal(disturbed.cluster_centers_, undisturbed.cluster_centers_)
    assert disturbed.n_iter_ == n_iter
    assert [h["objective"] for h in disturbed.history_] == \
        [h["objective"] for h in undisturbed.history_]
    assert disturbed.cost_["estep"] == undisturbed.cost_["estep"]
    np.testing.assert_array_equal(disturbed.labels_.compute(), undisturbed.labels_.compute())
    assert float(disturbed.inertia_) == float(undisturbed.inertia_)
    assert len({address for address, _ in killed}) == 3
    assert len(client.scheduler_info()["workers"]) == 1


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
