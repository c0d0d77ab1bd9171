"""Fits on all the rows of data in row chunks (dask arrays, memmaps larger than memory): the
driver's step as a map-reduce over the chunks, against the same fit in memory."""
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from clusterkit import (Assignment, BoundedEStep, Breathing, Clusterer, ElkanEStep,
                        FitState, KMeansPlusPlus, TruncatedEStep, YinyangEStep)
from clusterkit._data import blocks, chunked as _chunked
from clusterkit._data import memory as _memory
from clusterkit._engine import mapreduce as _mapreduce
from clusterkit._engine.far_rows import FarRows, batch_far_rows, far_scores
from clusterkit._kernels import _partial
from clusterkit.estep.neighbourhood_sums import (choose_neighbourhoods, combine_pair_sums,
                                                 pair_sums)
from clusterkit.mstep.batch_rules import relocate_empty
from clusterkit.metrics import quantization_error
from clusterkit.presets import (best_quality, elkan, gmm, large_scale, lloyd, minibatch,
                                spherical_kmeans, var_gmm_s, var_gmm_x, var_kmeans_s,
                                var_kmeans_x)

from ._helpers import OneChunkAtATime, assert_labels_equal_up_to_ties


def _blobs(n_samples, n_features, n_centers, random_state, dtype=np.float64):
    rng = np.random.RandomState(random_state)
    means = rng.normal(scale=6.0, size=(n_centers, n_features))
    X = means[rng.randint(n_centers, size=n_samples)] + rng.normal(size=(n_samples, n_features))
    return X.astype(dtype)


@pytest.fixture(scope="module")
def da():
    return pytest.importorskip("dask.array")


@pytest.fixture(scope="module")
def client(da):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, memory_limit="1GiB") as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _assert_same_fit(chunked, in_memory, X, bit_identical=False):
    """The chunked fit ended where the in-memory fit ended: the same iterations, centres and
    inertia to rounding (or bit for bit), labels equal up to near-ties."""
    labels = np.asarray(chunked.labels_) if not hasattr(chunked.labels_, "compute") \
        else chunked.labels_.compute()
    inertia = float(chunked.inertia_)
    assert chunked.n_iter_ == in_memory.n_iter_
    assert [h["n_changed"] for h in chunked.history_] == \
        [h["n_changed"] for h in in_memory.history_]
    if bit_identical:
        np.testing.assert_array_equal(chunked.cluster_centers_, in_memory.cluster_centers_)
        return
    rtol = 1e-5 if X.dtype == np.float32 else 1e-10
    scale = np.abs(X).max()
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                               rtol=0, atol=rtol * scale)
    np.testing.assert_allclose(inertia, in_memory.inertia_, rtol=1e-6)
    assert np.mean(labels == in_memory.labels_) >= 0.9999
    assert_labels_equal_up_to_ties(X, chunked.cluster_centers_, labels, in_memory.labels_,
                                   rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lloyd_on_dask_chunks_ends_where_the_in_memory_fit_ends(da, client, dtype):
    X = _blobs(12_001, 5, 9, 0, dtype)
    init = X[np.random.RandomState(1).choice(len(X), 9, replace=False)]
    in_memory = lloyd(9, seed=init).fit(X)
    fits = [lloyd(9, seed=init).fit(da.from_array(X, chunks=(rows, 5)))
            for rows in (2_500, 4_999)]  # two chunkings, on the two workers
    for fit in fits:
        _assert_same_fit(fit, in_memory, X)
        assert fit.cluster_centers_.dtype == dtype
        assert fit.cost_["estep"] == in_memory.cost_["estep"]  # N C per iteration
        assert hasattr(fit.labels_, "compute") and hasattr(fit.inertia_, "compute")


def test_one_and_two_workers_give_the_same_fit_bit_for_bit(da, client):
    dask = pytest.importorskip("dask")
    X = _blobs(9_000, 4, 7, 2)
    w = np.random.RandomState(3).gamma(2.0, size=len(X))
    Xd, wd = da.from_array(X, chunks=(1_700, 4)), da.from_array(w, chunks=1_700)
    two = lloyd(7, random_state=4).fit(Xd, sample_weight=wd)  # the two worker processes
    with dask.config.set(scheduler="synchronous"):  # one worker: this process, in order
        one = lloyd(7, random_state=4).fit(Xd, sample_weight=wd)
    np.testing.assert_array_equal(one.cluster_centers_, two.cluster_centers_)
    assert one.objective_ == two.objective_
    assert [h["objective"] for h in one.history_] == [h["objective"] for h in two.history_]
    # and the weighted in-memory fit from the same seeds (all weights positive: the same
    # seeding sample) ends at the same place
    in_memory = lloyd(7, random_state=4).fit(X, sample_weight=w)
    _assert_same_fit(two, in_memory, X)


def test_default_seeding_on_chunks_draws_the_in_memory_sample(da, client):
    X = _blobs(30_000, 3, 40, 5, np.float32)  # N C D above the rule's "all rows"
    in_memory = lloyd(40, random_state=6).fit(X)
    chunked = lloyd(40, random_state=6).fit(da.from_array(X, chunks=(7_000, 3)))
    assert chunked.cost_["seeding"] == in_memory.cost_["seeding"]
    _assert_same_fit(chunked, in_memory, X)


def test_a_seeder_of_all_rows_sees_all_rows_of_chunks_up_to_the_cap(da, monkeypatch):
    X = _blobs(30_000, 3, 40, 5, np.float32)
    seen = []
    seeding = KMeansPlusPlus.seeding
    monkeypatch.setattr(KMeansPlusPlus, "seeding", lambda self, X, *args: (
        seen.append(X.shape[0]), seeding(self, X, *args))[1])
    fit = lloyd(40, seed=KMeansPlusPlus(), max_iter=1, random_state=6)
    with pytest.warns(ConvergenceWarning):
        fit.fit(da.from_array(X, chunks=(7_000, 3)))
        monkeypatch.setattr(_mapreduce, "SEEDING_BYTES", 1_000 * 3 * 4)
        fit.fit(da.from_array(X, chunks=(7_000, 3)))
    assert seen == [30_000, 1_000]  # all rows, as in memory; then the cap's sample


def _less_memory(monkeypatch, block_bytes):
    """Memmaps larger than the memory left (as far as the fit can tell), read in blocks of
    ``block_bytes``."""
    monkeypatch.setattr(_chunked, "budget", lambda: 1 << 9)
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", block_bytes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lloyd_on_a_memmap_larger_than_memory_reads_blocks(tmp_path, monkeypatch, dtype):
    X = _blobs(7_003, 6, 5, 7, dtype)
    np.save(tmp_path / "X.npy", X)
    X_mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    init = X[:5] * 1.0
    in_memory = lloyd(5, seed=init).fit(X)
    _less_memory(monkeypatch, 40_000)
    chunked = lloyd(5, seed=init, n_threads=2).fit(X_mm)
    assert "scan" in chunked.seconds_  # read in blocks, not as an array
    _assert_same_fit(chunked, in_memory, X)
    assert isinstance(chunked.labels_, np.ndarray)
    # a fixed point: the labels the blocks hold are the final ones, no labelling pass
    assert in_memory.history_[-1]["n_changed"] == 0 and chunked.cost_["labels"] == 0
    with pytest.warns(ConvergenceWarning):  # not at a fixed point: a labelling pass
        stopped = lloyd(5, seed=init, max_iter=2).fit(X_mm)
        reference = lloyd(5, seed=init, max_iter=2).fit(X)
    assert stopped.cost_["labels"] == 5 * len(X)
    assert_labels_equal_up_to_ties(X, stopped.cluster_centers_, stopped.labels_,
                                   reference.labels_, rtol=1e-5)


def test_gmm_on_chunks_ends_where_the_in_memory_fit_ends(da, client, tmp_path, monkeypatch):
    X = _blobs(6_000, 3, 5, 8)
    init = X[np.random.RandomState(9).choice(len(X), 5, replace=False)]
    in_memory = gmm(5, seed=init).fit(X)
    chunked = gmm(5, seed=init).fit(da.from_array(X, chunks=(1_300, 3)))
    np.save(tmp_path / "X.npy", X)
    _less_memory(monkeypatch, 30_000)
    mapped = gmm(5, seed=init).fit(np.load(tmp_path / "X.npy", mmap_mode="r"))
    for fit in (chunked, mapped):
        assert fit.n_iter_ == in_memory.n_iter_
        np.testing.assert_allclose(fit.sigma2_, in_memory.sigma2_, rtol=1e-9)
        np.testing.assert_allclose(fit.cluster_centers_, in_memory.cluster_centers_,
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(fit.objective_, in_memory.objective_, rtol=1e-9)


def test_empty_clusters_are_relocated_as_in_memory(da, client):
    X = _blobs(5_000, 2, 4, 10)
    # two centres far from everything: no row picks them in the first step
    init = np.vstack([X[:4], [[1e3, 1e3], [-1e3, 1e3]]])
    in_memory = lloyd(6, seed=init).fit(X)
    assert in_memory.history_[0]["n_changed"] == len(X)
    chunked = lloyd(6, seed=init).fit(da.from_array(X, chunks=(900, 2)))
    _assert_same_fit(chunked, in_memory, X)
    assert not np.any(np.abs(chunked.cluster_centers_) > 100)  # both moved onto rows


class _SortedFarRows:
    """``far_rows(k)`` by a full stable sort of the scores (as chunks find them: each
    call a new pass), counting its calls."""

    def __init__(self, X, w, labels, dist2):
        self.score = far_scores(X, w, dist2, 1)
        self.X, self.w, self.labels = X, w, labels
        self.calls = []

    def __call__(self, k):
        self.calls.append(k)
        order = np.argsort(-self.score, kind="stable")[:k]
        order = order[self.score[order] > 0]
        return FarRows(self.score[order], self.X[order], self.labels[order], self.w[order],
                       int(np.count_nonzero(self.score > 0)))


@pytest.mark.parametrize("withdraw", [False, True])
def test_relocation_on_rows_found_in_passes_is_the_batch_relocation(withdraw):
    rng = np.random.RandomState(11)
    X = rng.normal(size=(60, 3))
    w = rng.uniform(0.5, 2.0, size=60)
    # clusters 0-2 hold the rows, each farthest row alone in its cluster (it cannot leave),
    # clusters 3-5 are empty: the walk must go past the first rows found
    labels = np.repeat(np.arange(3), 20).astype(np.int32)
    dist2 = rng.uniform(0.1, 1.0, size=60)
    loners = np.array([5, 25, 45])
    labels[loners] = np.array([6, 7, 8]) % 9
    dist2[loners] = 10.0 + np.arange(3)
    n_clusters = 9
    centers = rng.normal(size=(n_clusters, 3))
    weight = np.bincount(labels, w, minlength=n_clusters)
    for j in range(3):
        centers[j] = np.average(X[labels == j], axis=0, weights=w[labels == j])
    for j in (6, 7, 8):
        centers[j] = X[labels == j][0]
    expected, expected_weight = centers.copy(), weight.copy()
    state = FitState(n_clusters=n_clusters, n_features=3, random_state=None)
    relocate_empty(expected, expected_weight,
                   batch_far_rows(X, w, Assignment(labels, dist2, 0.0, 0.0), 1), state,
                   withdraw=withdraw)
    expected_moved = state.run.n_relocated
    got, got_weight = centers.copy(), weight.copy()
    far = _SortedFarRows(X, w, labels, dist2)
    relocate_empty(got, got_weight, far, state, withdraw=withdraw)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got_weight, expected_weight)
    assert state.run.n_relocated == expected_moved == 3
    assert far.calls[0] == 3
    if withdraw:  # the three farthest rows are alone in their clusters: more were asked for
        assert len(far.calls) == 2 and far.calls[1] == 12


def test_spherical_kmeans_on_chunks_scales_each_chunk(da, client):
    rng = np.random.RandomState(12)
    directions = rng.normal(size=(6, 4))
    X = 3.0 * (directions[rng.randint(6, size=4_000)] + 0.3 * rng.normal(size=(4_000, 4)))
    init = X[:6] * 2.0  # given centres are scaled to unit norm too
    in_memory = spherical_kmeans(6, seed=init).fit(X)
    chunked = spherical_kmeans(6, seed=init).fit(da.from_array(X, chunks=(900, 4)))
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    _assert_same_fit(chunked, in_memory, unit)
    np.testing.assert_allclose(np.linalg.norm(chunked.cluster_centers_, axis=1), 1.0,
                               rtol=1e-12)
    seeded = spherical_kmeans(6, random_state=1).fit(da.from_array(X, chunks=(900, 4)))
    _assert_same_fit(seeded, spherical_kmeans(6, random_state=1).fit(X), unit)
    X[[1234, 3333]] = 0.0
    with pytest.raises(ValueError, match=r"X has 2 rows of zero norm \(the first is row 1234"):
        spherical_kmeans(6, seed=init).fit(da.from_array(X, chunks=(900, 4)))


def _nbytes(value):
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if hasattr(value, "__dict__"):
        return sum(_nbytes(v) for v in vars(value).values())
    return 8


def _counting_what_comes_back(monkeypatch):
    """Record the bytes of every step's result that reaches this process."""
    steps = []
    map_with_state = _chunked.ChunkedData.map_chunks_with_state

    def counting(self, func, args, states, progress=None, combine=None, finish=None,
                 result_bytes=None):
        results, states = map_with_state(self, func, args, states, progress, combine, finish,
                                         result_bytes)
        steps.append(_nbytes(results))
        return results, states

    monkeypatch.setattr(_chunked.ChunkedData, "map_chunks_with_state", counting)
    return steps


@pytest.mark.parametrize("gather_bytes", [0, None])
def test_the_client_gets_a_few_numbers_per_cluster(da, client, monkeypatch, capsys,
                                                   gather_bytes):
    """Large results are added up on the workers (the client gets the root); small ones
    come to the client, which adds them in the same tree: the same fit."""
    from clusterkit._data import dask_chunks
    if gather_bytes is not None:
        monkeypatch.setattr(dask_chunks, "GATHER_BYTES", gather_bytes)
    X = _blobs(20_000, 6, 10, 13, np.float32)
    Xd = da.from_array(OneChunkAtATime(X, 4_000), chunks=(4_000, 6), asarray=True)
    steps = _counting_what_comes_back(monkeypatch)
    km = lloyd(10, random_state=0, verbose=1).fit(Xd)
    assert len(steps) == km.n_iter_
    # sums and weights per cluster, the weight per label and a few numbers: once (added up
    # on the workers), or once per chunk (5 chunks, added up here)
    one = 8 * (10 * (6 + 2) + 16)
    assert max(steps) <= (one if gather_bytes == 0 else 5 * one)
    monkeypatch.setattr(dask_chunks, "GATHER_BYTES", 1 << 40)  # (every result gathered)
    reference = lloyd(10, random_state=0).fit(Xd)
    np.testing.assert_array_equal(km.cluster_centers_, reference.cluster_centers_)
    assert km.labels_.compute().shape == (20_000,)
    out = capsys.readouterr().out
    assert "Scan: 20000 samples in 5 chunks" in out
    assert out.count("Iteration") == km.n_iter_  # one line per step, as in memory


def test_estimated_neighbourhoods_reach_the_client_not_their_sums(da, client, monkeypatch):
    """var-k-means-S's chunks sum eq. 8 over pairs of clusters (up to C^2 of them); the
    sums are added and G_c chosen on the workers: the client gets C x G numbers."""
    X = _blobs(12_000, 4, 40, 5, np.float32)
    Xd = da.from_array(X, chunks=(2_000, 4))
    init = X[np.random.RandomState(0).choice(len(X), 40, replace=False)]
    steps = _counting_what_comes_back(monkeypatch)
    chunked = var_kmeans_s(40, G=4, seed=init, random_state=0, max_iter=6, tol=0.0).fit(Xd)
    assert max(steps) <= 8 * (40 * (4 + 2 + 4) + 16)
    in_memory = var_kmeans_s(40, G=4, seed=init, random_state=0, max_iter=6, tol=0.0).fit(X)
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                               rtol=1e-5, atol=1e-5)


def test_steps_run_while_the_client_knows_no_worker_yet(da, client, monkeypatch):
    """The client's view of the workers can be empty for a moment (workers starting): the
    steps then leave the placement to the scheduler, with the same fit."""
    X = _blobs(6_000, 3, 6, 14)
    init = X[:6].copy()
    expected = lloyd(6, seed=init).fit(da.from_array(X, chunks=(1_500, 3)))
    monkeypatch.setattr(type(client), "scheduler_info", lambda self, **kw: {"workers": {}})
    fit = lloyd(6, seed=init).fit(da.from_array(X, chunks=(1_500, 3)))
    np.testing.assert_array_equal(fit.cluster_centers_, expected.cluster_centers_)


def test_several_runs_and_the_callback_on_chunks(da, client):
    X = _blobs(6_000, 3, 6, 14)
    seen = []
    chunked = lloyd(6, n_init=2, random_state=3,
                    callback=lambda info: seen.append(info["centers"].shape)).fit(
        da.from_array(X, chunks=(1_500, 3)))
    in_memory = lloyd(6, n_init=2, random_state=3).fit(X)
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                               rtol=0, atol=1e-9)
    assert len(seen) >= chunked.n_iter_ and seen[0] == (6, 3)


@pytest.mark.parametrize("weighted", [False, True])
def test_minibatch_reads_its_batches_from_the_chunks(da, weighted):
    dask = pytest.importorskip("dask")
    X = _blobs(12_000, 4, 8, 15)
    w = np.random.RandomState(16).uniform(0.5, 2.0, size=len(X)) if weighted else None
    in_memory = minibatch(8, batch_size=300, random_state=2).fit(X, sample_weight=w)
    with dask.config.set(scheduler="synchronous"):  # (a round trip per batch: no cluster)
        for rows in (12_000, 2_500):  # one chunk, and several
            chunked = minibatch(8, batch_size=300, random_state=2).fit(
                da.from_array(X, chunks=(rows, 4)),
                sample_weight=None if w is None else da.from_array(w, chunks=rows))
            # the same batches from the fit's random stream, the same steps
            assert len(chunked.history_) == len(in_memory.history_)
            assert [h["n_changed"] for h in chunked.history_] == \
                [h["n_changed"] for h in in_memory.history_]
            if rows == 12_000:  # one chunk: its mean is the array's, bit for bit
                np.testing.assert_array_equal(chunked.cluster_centers_,
                                              in_memory.cluster_centers_)
            _assert_same_fit(chunked, in_memory, X)


def test_minibatch_runs_compete_on_chunks_as_in_memory(da):
    """``n_init`` mini-batch runs are compared by one E-step of all rows from a fresh state
    (the same rule, chunk by chunk): the same run wins, with the same evaluations."""
    dask = pytest.importorskip("dask")
    X = _blobs(7_500, 3, 5, 5)
    in_memory = minibatch(5, batch_size=500, n_init=3, random_state=4).fit(X)
    with dask.config.set(scheduler="synchronous"):
        chunked = minibatch(5, batch_size=500, n_init=3, random_state=4).fit(
            da.from_array(X, chunks=(2_500, 3)))
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                               rtol=0, atol=1e-9)
    assert chunked.cost_["estep"] == in_memory.cost_["estep"]


def test_minibatch_on_a_cluster_and_on_a_memmap(da, client, tmp_path, monkeypatch):
    X = _blobs(4_000, 3, 5, 17, np.float32)
    in_memory = minibatch(5, batch_size=1_000, max_passes=2.0, random_state=3).fit(X)
    on_cluster = minibatch(5, batch_size=1_000, max_passes=2.0, random_state=3).fit(
        da.from_array(X, chunks=(1_500, 3)))
    np.save(tmp_path / "X.npy", X)
    _less_memory(monkeypatch, 10_000)
    mapped = minibatch(5, batch_size=1_000, max_passes=2.0, random_state=3).fit(
        np.load(tmp_path / "X.npy", mmap_mode="r"))
    for fit in (on_cluster, mapped):
        assert len(fit.history_) == len(in_memory.history_)
        _assert_same_fit(fit, in_memory, X)


@pytest.mark.parametrize("estep", [ElkanEStep(prune=4), YinyangEStep(prune=4)])
def test_pruned_bounds_on_chunks_give_the_fit_in_memory(da, client, estep):
    """Each chunk's E-step state projects its own rows (its own axes): the iterates are
    those in memory, with or without pruning."""
    X = _blobs(6_000, 10, 12, 21)
    init = X[np.random.RandomState(22).choice(len(X), 12, replace=False)]
    in_memory = Clusterer(12, seed=init, estep=estep).fit(X)
    plain = Clusterer(12, seed=init, estep=type(estep)()).fit(X)
    _assert_same_fit(in_memory, plain, X)
    chunked = Clusterer(12, seed=init, estep=estep).fit(da.from_array(X, chunks=(1_600, 10)))
    _assert_same_fit(chunked, in_memory, X, bit_identical=False)


@pytest.mark.parametrize("estep", [ElkanEStep(), YinyangEStep(), BoundedEStep()])
def test_bounds_stay_with_their_chunks_and_save_the_same_distances(da, client, estep):
    X = _blobs(10_000, 10, 12, 18)
    init = X[np.random.RandomState(19).choice(len(X), 12, replace=False)]
    in_memory = Clusterer(12, seed=init, estep=estep).fit(X)
    lloyd_cost = lloyd(12, seed=init).fit(X).cost_["estep"]
    for rows in (10_000, 2_600):  # one chunk, and four on the two workers
        chunked = Clusterer(12, seed=init, estep=estep).fit(da.from_array(X, chunks=(rows, 10)))
        _assert_same_fit(chunked, in_memory, X, bit_identical=rows == 10_000)
        extra = chunked.cost_["estep"] - in_memory.cost_["estep"]
        assert chunked.cost_["estep"] < 0.5 * lloyd_cost  # the bounds skip distances
        if rows == 10_000:
            assert extra == 0
        elif not isinstance(estep, YinyangEStep):  # Elkan: each chunk's centre distances
            assert extra == 3 * 12 * 11 // 2 * chunked.n_iter_
        else:
            assert 0 <= extra <= 3 * 12 * 12 * chunked.n_iter_


def test_each_chunk_sizes_its_bounds_to_its_share_of_the_memory(tmp_path, monkeypatch):
    X = _blobs(8_000, 10, 40, 20)
    np.save(tmp_path / "X.npy", X)
    init = X[np.random.RandomState(21).choice(len(X), 40, replace=False)]
    in_memory = Clusterer(40, seed=init, estep=BoundedEStep()).fit(X)
    _less_memory(monkeypatch, 8_000 * 10 * 8 // 4)  # four blocks
    # half the memory holds the fit with Yinyang's bounds; what it leaves after the data,
    # shared by the four blocks, holds no block's Elkan bounds
    memmap = np.load(tmp_path / "X.npy", mmap_mode="r")
    half = int(Clusterer(40, seed=init, estep=YinyangEStep()).estimate_memory(memmap)) + 4096
    monkeypatch.setattr(_memory, "_system_available", lambda: 2 * half)
    chosen = []
    rule = BoundedEStep._rule

    def recording(self, n_rows, n_clusters, sparse, n_features, budget):
        estep = rule(self, n_rows, n_clusters, sparse, n_features, budget)
        chosen.append((budget, estep))
        return estep

    monkeypatch.setattr(BoundedEStep, "_rule", recording)
    chunked = Clusterer(40, seed=init, estep=BoundedEStep()).fit(
        np.load(tmp_path / "X.npy", mmap_mode="r"))
    _assert_same_fit(chunked, in_memory, X)
    # each block's budget is its rows' share of what the process' half leaves after the
    # fit's data: Yinyang's groups (the other choices are the fit's, for all rows)
    low = min(budget for budget, _ in chosen)
    per_block = [(budget, estep) for budget, estep in chosen if budget == low]
    assert len(per_block) == 4 and len(chosen) > 4
    # (less the fit's data and labels, which the fit sets aside first)
    assert all(0 < budget <= half // 4 and isinstance(estep, YinyangEStep)
               for budget, estep in per_block)


def test_a_dask_worker_offers_what_it_may_hold_before_spilling(da, client):
    limit = client.run(lambda dask_worker: dask_worker.memory_manager.memory_limit)
    available = client.submit(_memory.available_memory, pure=False).result()
    assert 0 < available <= 0.6 * max(limit.values())  # (spilling starts at 60 %)
    with _memory.memory_share(0.25):
        assert _memory.available_memory() <= _memory._system_available() // 4 + 1
def test_breathing_rounds_on_chunks_end_where_they_end_in_memory(da, client, tmp_path,
                                                                  monkeypatch):
    X = _blobs(5_000, 3, 12, 20)
    init = X[np.random.RandomState(21).choice(len(X), 10, replace=False)]

    def fit(data):
        return Clusterer(10, seed=init, refine=Breathing(m=3, max_rounds=6),
                         random_state=0).fit(data)

    in_memory = fit(X)
    assert any(r["kept"] for r in in_memory.refinement_log_)  # (rounds that change the fit)
    np.save(tmp_path / "X.npy", X)
    _less_memory(monkeypatch, 20_000)
    fits = [fit(da.from_array(X, chunks=(rows, 3))) for rows in (1_200, 3_001)]
    fits.append(fit(np.load(tmp_path / "X.npy", mmap_mode="r")))
    for chunked in fits:
        _assert_same_fit(chunked, in_memory, X)
        assert [r["kept"] for r in chunked.refinement_log_] == \
            [r["kept"] for r in in_memory.refinement_log_]
        np.testing.assert_allclose([r["objective"] for r in chunked.refinement_log_],
                                   [r["objective"] for r in in_memory.refinement_log_],
                                   rtol=1e-12)
        assert chunked.cost_["refinement"] == in_memory.cost_["refinement"]


@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_truncated_e_step_on_chunks_ends_where_it_ends_in_memory(da, client, mstep):
    dask = pytest.importorskip("dask")
    X = _blobs(6_000, 4, 9, 22)
    init = X[np.random.RandomState(23).choice(len(X), 9, replace=False)]

    def fit(data):
        return Clusterer(9, seed=init, estep=TruncatedEStep(n_winners=3), mstep=mstep,
                         max_iter=60).fit(data)

    in_memory = fit(X)
    fits = [fit(da.from_array(X, chunks=(rows, 4))) for rows in (1_100, 2_500)]
    with dask.config.set(scheduler="synchronous"):  # one worker: this process
        fits.append(fit(da.from_array(X, chunks=(1_100, 4))))
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[2].cluster_centers_)
    for chunked in fits:
        assert chunked.n_iter_ == in_memory.n_iter_
        np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(chunked.objective_, in_memory.objective_, rtol=1e-9)
        assert chunked.cost_["estep"] >= in_memory.cost_["estep"]
    labels = fits[0].labels_.compute()
    assert np.mean(labels == in_memory.labels_) >= 0.9999


def test_the_row_stream_draws_the_same_numbers_for_a_row_in_any_chunk():
    state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0))
    whole = state.row_integers(np.arange(1_000), 2, 7, call=3)
    key = state.run.stream_key
    assert whole.shape == (1_000, 2) and whole.dtype == np.int32
    assert whole.min() == 0 and whole.max() == 6
    for start, stop in ((0, 400), (400, 1_000), (999, 1_000)):
        chunk = FitState(n_clusters=3, n_features=2, random_state=None)
        chunk.run.stream_key, chunk.run.first_row = key, start
        np.testing.assert_array_equal(chunk.row_integers(np.arange(stop - start), 2, 7, 3),
                                      whole[start:stop])
    # another call, another key: other numbers; all values about equally frequent
    assert np.mean(state.row_integers(np.arange(1_000), 2, 7, call=4) == whole) < 0.3
    other = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(1))
    assert np.mean(other.row_integers(np.arange(1_000), 2, 7, call=3) == whole) < 0.3
    counts = np.bincount(state.row_integers(np.arange(70_000), 1, 7, 0).ravel())
    assert np.all(np.abs(counts - 10_000) < 5 * np.sqrt(10_000))
    with pytest.raises(ValueError, match="row stream needs the fit's random_state"):
        FitState(n_clusters=3, n_features=2, random_state=None).row_integers([0], 1, 2, 0)


@pytest.mark.parametrize("preset", [var_kmeans_s, var_gmm_s, var_kmeans_x, var_gmm_x])
def test_variational_e_step_on_chunks_ends_where_it_ends_in_memory(da, client, tmp_path,
                                                                  monkeypatch, preset):
    """Each chunk keeps its rows' K(n) on its worker; a row's random candidates come from the
    run's row stream, so any chunking draws the same; estimated neighbourhoods come from
    all chunks' sums of eq. 8. On one chunk every preset is the fit in memory bit for bit
    (the soft M-step's statistics are those of the fit in memory)."""
    dask = pytest.importorskip("dask")
    X = _blobs(6_000, 4, 30, 24)
    init = X[np.random.RandomState(25).choice(len(X), 30, replace=False)]

    def fit(data):
        return preset(30, G=3, seed=init, max_iter=200, random_state=3).fit(data)

    in_memory = fit(X)
    # one chunk: the very fit, the mixture's variance included (the mixture's first
    # variance costs one more pass, N C distances, on chunks)
    whole = fit(da.from_array(X, chunks=(6_000, 4)))
    np.testing.assert_array_equal(whole.cluster_centers_, in_memory.cluster_centers_)
    assert whole.objective_ == in_memory.objective_
    assert getattr(whole, "sigma2_", None) == getattr(in_memory, "sigma2_", None)
    first_variance = 6_000 * 30 if preset in (var_gmm_s, var_gmm_x) else 0
    assert whole.cost_["estep"] == in_memory.cost_["estep"] + first_variance
    # also for tiny rows far from the origin, with weights: the first variance divides by
    # the weights summed as in memory
    rng = np.random.RandomState(245476750)
    small = (rng.normal(size=(400, 9)) + 10.0) * 1e-6
    weights = rng.exponential(size=400)
    start = small[rng.choice(400, 20, replace=False)]
    pair = [preset(20, seed=start, random_state=518, n_threads=1).fit(
        data, sample_weight=w) for data, w in ((small, weights),
                                               (da.from_array(small, chunks=(400, 9)),
                                                da.from_array(weights, chunks=400)))]
    np.testing.assert_array_equal(pair[1].cluster_centers_, pair[0].cluster_centers_)
    assert getattr(pair[1], "sigma2_", None) == getattr(pair[0], "sigma2_", None)
    fits = [fit(da.from_array(X, chunks=(rows, 4))) for rows in (1_100, 2_500)]
    with dask.config.set(scheduler="synchronous"):  # one worker: this process
        one_worker = fit(da.from_array(X, chunks=(1_100, 4)))
    np.testing.assert_array_equal(one_worker.cluster_centers_, fits[0].cluster_centers_)
    np.save(tmp_path / "X.npy", X)
    _less_memory(monkeypatch, 30_000)
    fits.append(fit(np.load(tmp_path / "X.npy", mmap_mode="r")))
    for chunked in fits:
        assert chunked.n_iter_ == in_memory.n_iter_
        assert [h["n_changed"] for h in chunked.history_] == \
            [h["n_changed"] for h in in_memory.history_]
        np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_,
                                   rtol=0, atol=1e-9)
        np.testing.assert_allclose(chunked.objective_, in_memory.objective_, rtol=1e-9)
        labels = np.asarray(chunked.labels_.compute() if hasattr(chunked.labels_, "compute")
                            else chunked.labels_)
        assert np.mean(labels == in_memory.labels_) >= 0.9999


def test_best_quality_and_large_scale_fit_all_the_rows_of_chunks(da, client, tmp_path,
                                                                 monkeypatch):
    """Their pilot fits on the seeding's sample of the chunks (in memory: on all the rows);
    then Lloyd's iterations (and best_quality's breathing rounds) run on all the rows."""
    X = _blobs(8_000, 4, 15, 26, np.float32)
    np.save(tmp_path / "X.npy", X)
    for preset in (best_quality, large_scale):
        in_memory = preset(15, random_state=0).fit(X)
        on_dask = preset(15, random_state=0).fit(da.from_array(X, chunks=(2_000, 4)))
        _less_memory(monkeypatch, 25_000)
        mapped = preset(15, random_state=0).fit(np.load(tmp_path / "X.npy", mmap_mode="r"))
        monkeypatch.undo()
        assert hasattr(on_dask.labels_, "compute") and hasattr(on_dask.inertia_, "compute")
        assert "scan" in mapped.seconds_ and isinstance(mapped.labels_, np.ndarray)
        for fit in (on_dask, mapped):
            qe = quantization_error(X, fit.cluster_centers_)
            assert qe <= 1.02 * quantization_error(X, in_memory.cluster_centers_)
            np.testing.assert_allclose(float(fit.inertia_), qe, rtol=1e-4)
    given = X[:15] * 1.0  # from given centres (no pilot): the in-memory fit
    in_memory = best_quality(15, seed=given, random_state=0).fit(X)
    _assert_same_fit(best_quality(15, seed=given, random_state=0).fit(
        da.from_array(X, chunks=(2_000, 4))), in_memory, X)


@pytest.mark.parametrize("budget", [2.0, 5.0])
@pytest.mark.parametrize("mstep", ["hard", "soft"])
def test_breathing_budget_buys_the_same_rounds_on_any_chunks(da, budget, mstep, monkeypatch):
    """The counted budget leaves out what depends on the chunks (each chunk's own centre
    distances; a mixture's search for the nearest centres before its first E-step, which in
    memory the first E-step does) and the rounds continue their bounds on chunks as in
    memory, so the same budget buys the same breathing rounds whatever the chunking."""
    dask = pytest.importorskip("dask")
    rng = np.random.RandomState(0)
    means = rng.normal(scale=6, size=(8, 3))
    X = (means[rng.randint(8, size=2000)] + rng.normal(size=(2000, 3))).astype(np.float32)
    init = X[rng.choice(2000, 12, replace=False)].copy()

    def fit(data):
        if mstep == "hard":
            return best_quality(12, seed=init, budget=budget, random_state=0).fit(data)
        return Clusterer(12, seed=init, mstep="soft", random_state=0,
                         refine=Breathing(m=3, budget=budget)).fit(data)

    # the evaluations the budget is a multiple of, as the refinement starts
    from clusterkit.refine import breathing
    bases, limits = [], breathing._Limits
    monkeypatch.setattr(breathing, "_Limits", lambda refiner, state: (
        bases.append(state.meter.n_budget_evals), limits(refiner, state))[1])
    in_memory = fit(X)
    rounds = [(r["moved"], r["kept"]) for r in in_memory.refinement_log_]
    assert len(rounds) >= 1 + (budget > 2)
    with dask.config.set(scheduler="synchronous"):
        chunked = fit(da.from_array(X, chunks=(50, 3)))  # 40 chunks
    assert [(r["moved"], r["kept"]) for r in chunked.refinement_log_] == rounds
    assert chunked.cost_["refinement"] == in_memory.cost_["refinement"]
    # (the full E-step counts N C per step on any chunks; the bounded one of best_quality
    # skips distances by bounds on centres that differ by the rounding of the chunks' sums,
    # so its counts agree to a few evaluations: docs/dask.rst)
    assert len(bases) == 2
    if mstep == "soft":
        assert bases[0] == bases[1]
    else:
        np.testing.assert_allclose(bases[0], bases[1], rtol=1e-3)
    np.testing.assert_allclose(chunked.cluster_centers_, in_memory.cluster_centers_, rtol=0,
                               atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_dist", [False, True])
def test_neighbourhoods_from_chunk_sums_follow_the_kernel(dtype, use_dist):
    rng = np.random.RandomState(27)
    n_rows, n_clusters, G, max_cand = 503, 40, 5, 7
    cand = np.array([rng.choice(n_clusters, max_cand, replace=False) for _ in range(n_rows)],
                    dtype=np.int32)
    # few distinct distances: ties between means, decided by the lower index
    cand_dist2 = rng.randint(1, 5, size=cand.shape).astype(dtype)
    n_cand = rng.randint(1, max_cand + 1, size=n_rows).astype(np.int32)
    labels = rng.randint(-1, n_clusters - 8, size=n_rows).astype(np.int32)  # some I_c empty
    labels[:40] = 0  # and one cluster with many rows
    labels[500], n_cand[500], cand[500, :2] = 39, 2, [39, 5]
    old = np.array([[c] + list(rng.choice([k for k in range(n_clusters) if k != c], G - 1,
                                          replace=False)) for c in range(n_clusters)],
                   dtype=np.int32)
    expected = old.copy()
    _partial.neighbourhoods_estimated(labels, cand, cand_dist2, n_cand, expected, use_dist, 2)
    whole = pair_sums(labels, cand, cand_dist2, n_cand, n_clusters, use_dist)
    np.testing.assert_array_equal(choose_neighbourhoods(*whole, old), expected)
    for cuts in ([0, 250, n_rows], [0, 1, 100, 101, 400, n_rows]):
        parts = [pair_sums(labels[a:b], cand[a:b], cand_dist2[a:b], n_cand[a:b], n_clusters,
                           use_dist) for a, b in zip(cuts[:-1], cuts[1:])]
        np.testing.assert_array_equal(choose_neighbourhoods(*combine_pair_sums(parts), old),
                                      expected)
    # cluster 39: one row, one neighbour evaluated (5), old ones fill up; cluster 38: no row
    assert expected[39, 1] == 5 and expected[39, 0] == 39
    np.testing.assert_array_equal(expected[39, 2:], [k for k in old[39, 1:] if k != 5][:3])
    np.testing.assert_array_equal(expected[38], old[38])


def test_each_chunk_steps_on_the_worker_holding_it(da, client):
    """A persisted array's chunks are stepped where they are held (as far as the workers'
    shares allow): no chunk is sent to another worker at every step."""
    from distributed import futures_of, wait

    from clusterkit._data.dask_chunks import DaskChunks
    Xd = da.from_array(_blobs(4_000, 3, 4, 21), chunks=(500, 3)).persist()
    wait(Xd)
    data = DaskChunks(Xd, None)
    blocks, _ = data._delayed_blocks()
    holders = client.who_has(futures_of(Xd))
    placement = data._placement(client, blocks)
    share = -(-data.n_chunks // len(client.scheduler_info()["workers"]))
    on_holder = sum(placement[c][0] in holders[block.key] for c, block in enumerate(blocks))
    per_holder = {}
    for block in blocks:
        per_holder[holders[block.key][0]] = per_holder.get(holders[block.key][0], 0) + 1
    assert on_holder == sum(min(n, share) for n in per_holder.values())


@pytest.mark.parametrize("preset", [lloyd, elkan])
def test_a_persisted_array_keeps_its_framed_chunks_with_the_same_fit(da, client, preset):
    """On a persisted array each chunk is centred once per run and kept with its state on
    its worker; the fit is the one that centres the chunks at every step, bit for bit."""
    from distributed import wait
    X = _blobs(6_000, 3, 6, 22, np.float32)
    init = X[:6].copy()
    read = preset(6, seed=init, tol=0.0).fit(da.from_array(X, chunks=(1_500, 3)))
    Xd = da.from_array(X, chunks=(1_500, 3)).persist()
    wait(Xd)
    kept = preset(6, seed=init, tol=0.0).fit(Xd)
    np.testing.assert_array_equal(kept.cluster_centers_, read.cluster_centers_)
    np.testing.assert_array_equal(np.asarray(kept.labels_), np.asarray(read.labels_))
    assert [h["objective"] for h in kept.history_] == [h["objective"] for h in read.history_]
