"""Nested mini-batches (nmbatch, NestedDoubling) on all the rows of data in row chunks: the
keyed order of the rows, each chunk's step on its rows in the prefix, against the fit in
memory."""
import copy
import pickle

import numpy as np
import pytest

from clusterkit import Clusterer, ElkanEStep, FitState, HardMStep, NestedDoubling, YinyangEStep
from clusterkit._data import chunked as _chunked
from clusterkit._engine import mapreduce as _mapreduce
from clusterkit.presets import nmbatch
from clusterkit.schedules.order import KeyedOrder

from .test_chunked_fit import _assert_same_fit, _blobs, _less_memory, _nbytes


@pytest.fixture(scope="module")
def da():
    return pytest.importorskip("dask.array")


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def client(request, da):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=request.param, threads_per_worker=1,
                                  processes=True, dashboard_address=None,
                                  memory_limit="1GiB") as cluster, \
            distributed.Client(cluster) as client:
        yield client


def _init(X, n_clusters, seed):
    return X[np.random.RandomState(seed).choice(len(X), n_clusters, replace=False)]


def _sizes(fit):
    return [h["batch_size"] for h in fit.history_]


# -- the order -------------------------------------------------------------------------------


@pytest.mark.parametrize("n_samples", [1, 2, 3, 7, 64, 1_000, 40_961])
def test_the_keyed_order_is_a_permutation_given_row_by_row(n_samples):
    order = KeyedOrder(n_samples, 123_456_789)
    positions = order.positions(np.arange(n_samples))
    assert positions.dtype == np.int64
    np.testing.assert_array_equal(np.sort(positions), np.arange(n_samples))
    np.testing.assert_array_equal(order.permutation()[positions], np.arange(n_samples))
    # any rows, in any grouping, find the same positions (as the chunks do)
    rows = np.random.RandomState(0).permutation(n_samples)[: max(1, n_samples // 3)]
    np.testing.assert_array_equal(order.positions(rows), positions[rows])
    # the prefixes are nested and hold exactly b rows
    for b in sorted({1, n_samples // 4, n_samples // 2, n_samples}):
        prefix = np.flatnonzero(positions < b)
        assert prefix.size == b
        assert set(prefix) <= set(np.flatnonzero(positions < 2 * b))
    assert pickle.loads(pickle.dumps(order)).positions([0])[0] == positions[0]


def test_the_keyed_order_looks_uniform():
    """A prefix of ``b`` of ``n`` rows is a uniform draw without replacement: over many keys
    each tenth of the rows holds ``b / 10`` of it on average, the prefixes of two keys are
    independent, and the position of a row does not follow its number."""
    n_samples, b, n_keys = 10_000, 1_000, 300
    counts = np.zeros((n_keys, 10))
    first = np.zeros(n_samples)
    for key in range(n_keys):
        positions = KeyedOrder(n_samples, 7919 * key + 1).positions(np.arange(n_samples))
        counts[key] = np.bincount(np.flatnonzero(positions < b) // 1_000, minlength=10)
        first += positions < b
        assert abs(np.corrcoef(np.arange(n_samples), positions)[0, 1]) < 0.05
    # hypergeometric: mean 100 rows per tenth, standard deviation below 10 per key
    mean = counts.mean(axis=0)
    assert np.all(np.abs(mean - 100) < 5 * 10 / np.sqrt(n_keys))
    assert 0.7 < counts.std(axis=0).mean() / 9.0 < 1.3
    # how often each row is in the prefix: binomial(n_keys, 0.1)
    assert abs(first.mean() - 30) < 1e-9 and 0.8 < first.std() / np.sqrt(27) < 1.2
    a = KeyedOrder(n_samples, 1).positions(np.arange(n_samples)) < b
    c = KeyedOrder(n_samples, 2).positions(np.arange(n_samples)) < b
    assert abs(np.count_nonzero(a & c) - 100) < 5 * 9.5


@pytest.mark.filterwarnings("ignore:The fit did not converge")
def test_in_memory_the_driver_runs_in_the_keyed_order():
    X = _blobs(3_001, 3, 6, 1)
    seen = []

    class Recorder(NestedDoubling):
        def batches(self, n_samples, state):
            seen.append(state.order.copy())
            yield from super().batches(n_samples, state)

    Clusterer(6, estep="elkan", schedule=Recorder(500), random_state=4, max_iter=3).fit(X)
    key = np.random.RandomState(4).randint(0, 2**63 - 1, dtype=np.int64)
    np.testing.assert_array_equal(seen[0], KeyedOrder(len(X), key).permutation())


# -- one chunk's step ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_chunk_step_visits_its_prefix_rows_and_leaves_its_state_as_it_was(dtype):
    """A chunk's task is pure: given the same state twice it returns the same result and
    state, and the state it was given is unchanged (a lost worker's state is computed
    again from it). It visits exactly its rows of position below the prefix's end."""
    rng = np.random.RandomState(3)
    X = rng.normal(size=(301, 4)).astype(dtype)
    w = rng.uniform(0.5, 2.0, size=301).astype(dtype)
    centers = X[:5].copy()
    order = KeyedOrder(2_000, 99)
    state = FitState(n_clusters=5, n_features=4, random_state=None, center_update="latest")

    def plan(prefix, shift):
        return _mapreduce._Plan(ElkanEStep(), HardMStep(), state.config, None, shift, 2_000.0,
                                pure=True, order=order, prefix=prefix)

    first = _mapreduce._ChunkState(None, None, None, 700)
    result, chunk = _mapreduce._step_chunk(X, w, first, centers, plan(600, np.zeros(5)))
    inside = order.positions(700 + np.arange(301)) < 600
    assert result.n_rows == np.count_nonzero(inside) > 0
    np.testing.assert_array_equal(chunk.labels >= 0, inside)
    np.testing.assert_array_equal(chunk.dist2[~inside], 0)
    np.testing.assert_allclose(result.weight, w[inside].sum(dtype=np.float64), rtol=1e-6)
    np.testing.assert_allclose(result.statistics["weight"].sum(), result.weight, rtol=1e-5)
    before = pickle.dumps(chunk)
    moved = centers + dtype(0.05)
    shift = np.sqrt(((moved - centers).astype(np.float64) ** 2).sum(axis=1))
    again = [_mapreduce._step_chunk(X, w, chunk, moved, plan(1_200, shift)) for _ in range(2)]
    assert pickle.dumps(chunk) == before
    assert pickle.dumps(again[0]) == pickle.dumps(again[1])
    wider = order.positions(700 + np.arange(301)) < 1_200
    np.testing.assert_array_equal(again[0][1].labels >= 0, wider)
    # the visited rows' latest labels are their nearest centres; their statistics those
    d2 = ((X[wider, None, :].astype(np.float64) - moved[None]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(again[0][1].labels[wider], d2.argmin(axis=1))
    sse = np.bincount(d2.argmin(axis=1), w[wider] * d2.min(axis=1), minlength=5)
    np.testing.assert_allclose(again[0][0].statistics["sse"], sse, rtol=1e-4)


# -- fits ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nmbatch_on_dask_chunks_ends_where_the_in_memory_fit_ends(da, client, dtype):
    """From the same centres: the same prefixes, steps and labels, for two chunkings, on
    one worker and on two; labels_ and inertia_ lazy."""
    X = _blobs(12_001, 5, 9, 0, dtype)
    init = _init(X, 9, 1)
    in_memory = nmbatch(9, seed=init, initial_batch=1_000, random_state=5).fit(X)
    assert len(set(_sizes(in_memory))) >= 3 and in_memory.converged_
    for rows in (2_500, 4_999):
        fit = nmbatch(9, seed=init, initial_batch=1_000, random_state=5).fit(
            da.from_array(X, chunks=(rows, 5)))
        assert _sizes(fit) == _sizes(in_memory)
        _assert_same_fit(fit, in_memory, X)
        assert fit.cluster_centers_.dtype == dtype
        assert hasattr(fit.labels_, "compute") and hasattr(fit.inertia_, "compute")


def test_weighted_nmbatch_on_dask_chunks(da, client):
    X = _blobs(8_003, 4, 7, 2)
    w = np.random.RandomState(3).uniform(0.2, 3.0, size=len(X))
    init = _init(X, 7, 4)
    in_memory = nmbatch(7, seed=init, initial_batch=700, random_state=6).fit(
        X, sample_weight=w)
    fit = nmbatch(7, seed=init, initial_batch=700, random_state=6).fit(
        da.from_array(X, chunks=(1_900, 4)), sample_weight=da.from_array(w, chunks=1_900))
    assert _sizes(fit) == _sizes(in_memory)
    _assert_same_fit(fit, in_memory, X)
    plain = nmbatch(7, seed=init, initial_batch=700, random_state=6).fit(
        da.from_array(X, chunks=(1_900, 4)))
    assert not np.allclose(plain.cluster_centers_, fit.cluster_centers_)  # weights count


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nmbatch_on_a_memmap_ends_where_the_in_memory_fit_ends(tmp_path, monkeypatch, dtype):
    X = _blobs(9_007, 6, 8, 8, dtype)
    np.save(tmp_path / "X.npy", X)
    init = _init(X, 8, 9)
    in_memory = nmbatch(8, seed=init, initial_batch=800, random_state=1).fit(X)
    for block_bytes in (40_000, 150_000):  # two chunkings (of 833 or 208 and 3125 or 781 rows)
        _less_memory(monkeypatch, block_bytes)
        fit = nmbatch(8, seed=init, initial_batch=800, random_state=1).fit(
            np.load(tmp_path / "X.npy", mmap_mode="r"))
        assert "scan" in fit.seconds_  # read in blocks
        assert _sizes(fit) == _sizes(in_memory)
        _assert_same_fit(fit, in_memory, X)
        # a fixed point of all the rows: the labels the blocks hold, no labelling pass
        assert isinstance(fit.labels_, np.ndarray) and fit.cost_["labels"] == 0


def test_an_unvoted_centre_moves_alike_in_memory_and_on_chunks(tmp_path, monkeypatch):
    """A centre that no visited row votes for keeps its position until the prefix is all
    rows, then moves onto the row farthest from its centre (the full-batch rule), in memory
    and on the chunks."""
    X = _blobs(6_001, 3, 5, 10)
    init = _init(X, 5, 11)
    init[2] = X.max(axis=0) * 50  # far from every row
    seen = {"memory": [], "chunks": []}

    def fit(data, where):
        return nmbatch(5, seed=init, initial_batch=600, random_state=2, callback=lambda info:
                       seen[where].append((info["batch_size"], info["centers"][2]))).fit(data)

    in_memory = fit(X, "memory")
    np.save(tmp_path / "X.npy", X)
    _less_memory(monkeypatch, 30_000)
    chunked = fit(np.load(tmp_path / "X.npy", mmap_mode="r"), "chunks")
    _assert_same_fit(chunked, in_memory, X)
    for steps in seen.values():
        sizes = [size for size, _ in steps]
        first_full = sizes.index(len(X))
        assert first_full >= 3
        # kept while the prefix is not all rows, moved onto a row by the first full step
        for _, centre in steps[:first_full]:
            np.testing.assert_allclose(centre, init[2], rtol=1e-12)
        assert np.abs(steps[first_full][1]).max() <= np.abs(X).max()


def test_the_client_holds_a_few_numbers_per_cluster(da, client, monkeypatch):
    """No N-long array on the client: no permutation of the rows, no per-row labels; a step
    brings back the chunks' sums per cluster and a few numbers, added up in one tree."""
    X = _blobs(10_000, 6, 10, 13, np.float32)
    sizes = []
    map_with_state = _chunked.ChunkedData.map_chunks_with_state

    def counting(self, func, args, states, progress=None, combine=None, finish=None,
                 result_bytes=None):
        results, states = map_with_state(self, func, args, states, progress, combine, finish,
                                         result_bytes)
        sizes.append(_nbytes(results) if combine is not None
                     else max(_nbytes(r) for r in results))
        return results, states

    def no_permutation(self):
        raise AssertionError("the order of all the rows was made")

    monkeypatch.setattr(_chunked.ChunkedData, "map_chunks_with_state", counting)
    monkeypatch.setattr(KeyedOrder, "permutation", no_permutation)
    fit = nmbatch(10, initial_batch=1_000, random_state=0).fit(
        da.from_array(X, chunks=(2_000, 6)))
    assert len(set(_sizes(fit))) >= 2 and len(sizes) >= len(fit.history_)
    # sums, weights and squared errors per cluster, the weight per label, a few numbers
    assert max(sizes) <= 8 * (10 * (6 + 3) + 16)
    assert fit.labels_.compute().shape == (10_000,)


@pytest.mark.parametrize("estep", [YinyangEStep(), "full"])
def test_nested_batches_with_other_exact_esteps_on_chunks(tmp_path, monkeypatch, estep):
    X = _blobs(5_003, 4, 6, 14)
    init = _init(X, 6, 15)
    make = lambda: Clusterer(6, seed=init, estep=copy.deepcopy(estep),  # noqa: E731
                             schedule=NestedDoubling(500), random_state=3)
    in_memory = make().fit(X)
    np.save(tmp_path / "X.npy", X)
    _less_memory(monkeypatch, 30_000)
    fit = make().fit(np.load(tmp_path / "X.npy", mmap_mode="r"))
    assert _sizes(fit) == _sizes(in_memory)
    _assert_same_fit(fit, in_memory, X)
