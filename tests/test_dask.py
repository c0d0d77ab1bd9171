"""Data in row chunks: dask arrays on a dask.distributed LocalCluster, and NumPy memmaps.

One module-scoped cluster of two worker processes serves every test that needs dask; the
tests that need no dask (memmaps, the error without dask) run without it.
"""
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from clusterkit import (LWCS, Clusterer, FitState, KMeansPlusPlus, MiniBatch, NestedDoubling,
                        NoReduction)
from clusterkit._data import blocks, chunked as _chunked
from clusterkit._data.containers import chunked_data
from clusterkit._estimator import lazy as _lazy
from clusterkit.metrics import quantization_error
from clusterkit.presets import (lloyd, lwcs_lloyd, slk_bo, spherical_kmeans, var_gmm_s,
                                var_kmeans_s, vc_gmm)

from ._helpers import OneChunkAtATime, assert_labels_equal_up_to_ties


def _blobs(n_samples, n_features, n_centers, random_state, dtype=np.float64, spread=1.0):
    """Gaussian blobs of unequal sizes, generated here."""
    rng = np.random.RandomState(random_state)
    means = rng.normal(scale=10.0, size=(n_centers, n_features))
    sizes = rng.dirichlet(np.full(n_centers, 2.0))
    component = rng.choice(n_centers, size=n_samples, p=sizes)
    X = means[component] + spread * rng.normal(size=(n_samples, n_features))
    return X.astype(dtype), means


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


def _coreset(X, sample_weight, n_clusters, size, random_state, n_threads=1):
    """LWCS's chunked coreset of a dask array or memmap, and the fit state it counted in."""
    data = chunked_data(X, sample_weight, n_threads)
    state = FitState(n_clusters=n_clusters, n_features=X.shape[1],
                     random_state=np.random.RandomState(random_state))
    Xc, wc = LWCS(size).reduce_chunked(data, state)
    return Xc, wc, state, data


def _within_sampling_error(draw_values, target, n_sigma=5.0):
    """Whether the mean of per-draw estimates is within ``n_sigma`` standard errors of
    ``target`` (the standard error estimated from the draws themselves)."""
    values = np.asarray(draw_values, dtype=np.float64)
    error = values.std(ddof=1) / np.sqrt(len(values))
    return abs(values.mean() - target) <= n_sigma * error, values.mean(), error


# -- the first pass and the coreset -------------------------------------------------------


def test_first_pass_combines_chunks_exactly(da, client):
    X, _ = _blobs(30_000, 6, 8, 0)
    w = np.random.RandomState(1).uniform(0.0, 3.0, size=len(X))
    data = chunked_data(da.from_array(X, chunks=(4_000, 6)), da.from_array(w, 5_000),
                                 1)
    moments = data.scan()
    mean = (w @ X) / w.sum()
    spread = float(w @ ((X - mean) ** 2).sum(axis=1))
    assert data.chunk_rows == (4_000,) * 7 + (2_000,)
    np.testing.assert_allclose(moments.total_weight, w.sum(), rtol=1e-12)
    np.testing.assert_allclose(moments.global_mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(moments.spread, spread, rtol=1e-10)
    np.testing.assert_array_equal(moments.low, X.min(axis=0))
    np.testing.assert_array_equal(moments.high, X.max(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_coreset_estimates_weight_and_quantization_error(da, client, dtype):
    X, means = _blobs(40_000, 5, 10, 2, dtype=dtype)
    w = np.random.RandomState(3).uniform(0.5, 2.0, size=len(X))
    size = 3_000
    Xc, wc, state, data = _coreset(da.from_array(X, chunks=(6_000, 5)),
                                   da.from_array(w, chunks=7_000), 10, size, 0)
    assert Xc.dtype == dtype and wc.dtype == dtype
    assert Xc.shape[1] == 5 and len(Xc) <= size and np.all(wc > 0)
    assert state.meter.cost["reduction"] == len(X)
    # Every draw of row n weighs w_n / (size q_n): rebuild the draws from the merged rows
    # (count = weight / one draw's weight) to get the standard error of the estimates.
    moments = data.scan()
    mu = moments.global_mean
    a, b = 0.5 / moments.total_weight, 0.5 / moments.spread
    unit = 1.0 / (size * (a + b * ((Xc.astype(np.float64) - mu) ** 2).sum(axis=1)))
    counts = np.rint(wc / unit).astype(int)
    np.testing.assert_allclose(wc, counts * unit, rtol=1e-3)
    assert counts.sum() == size
    ok, estimate, error = _within_sampling_error(np.repeat(size * unit, counts), w.sum())
    assert ok, (estimate, w.sum(), error)
    np.testing.assert_allclose(wc.sum(dtype=np.float64), estimate * 1.0, rtol=1e-3)
    # the quantization error of fixed centres (the true means, shifted)
    centers = means + 0.5
    d2_full = ((X[:, None, :].astype(np.float64) - centers) ** 2).sum(axis=2).min(axis=1)
    d2_core = ((Xc[:, None, :].astype(np.float64) - centers) ** 2).sum(axis=2).min(axis=1)
    ok, estimate, error = _within_sampling_error(np.repeat(size * unit * d2_core, counts),
                                                 float(w @ d2_full))
    assert ok, (estimate, float(w @ d2_full), error)
    assert error < 0.05 * float(w @ d2_full)  # and the estimate is informative


def test_same_coreset_on_one_and_two_workers(da, client):
    dask = pytest.importorskip("dask")
    X, _ = _blobs(25_000, 4, 6, 4, dtype=np.float32)
    w = np.random.RandomState(5).gamma(2.0, size=len(X))
    Xd, wd = da.from_array(X, chunks=(3_000, 4)), da.from_array(w, chunks=3_000)
    Xc2, wc2, _, _ = _coreset(Xd, wd, 6, 2_000, 7)  # the two worker processes
    with dask.config.set(scheduler="synchronous"):  # one worker: this process, in order
        Xc1, wc1, _, _ = _coreset(Xd, wd, 6, 2_000, 7)
    np.testing.assert_array_equal(Xc1, Xc2)
    np.testing.assert_array_equal(wc1, wc2)
    # a NumPy weight array split like X draws the same coreset as the dask weights
    Xc3, wc3, _, _ = _coreset(Xd, w, 6, 2_000, 7)
    np.testing.assert_array_equal(Xc3, Xc2)
    np.testing.assert_array_equal(wc3, wc2)
    # columns in chunks are merged first: the same coreset
    Xc4, wc4, _, _ = _coreset(Xd.rechunk((3_000, 2)), wd, 6, 2_000, 7)
    np.testing.assert_array_equal(Xc4, Xc2)
    # another seed draws another coreset
    Xc5, _, _, _ = _coreset(Xd, wd, 6, 2_000, 8)
    assert Xc5.shape != Xc2.shape or not np.array_equal(Xc5, Xc2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dask_fit_matches_in_memory_vc_gmm(da, client, dtype):
    X, _ = _blobs(60_000, 8, 25, 6, dtype=dtype)
    kwargs = dict(G=5, coreset_size=6_000, seed=KMeansPlusPlus(), n_init=3, random_state=0)
    local = vc_gmm(25, **kwargs).fit(X)
    distributed = vc_gmm(25, **kwargs).fit(da.from_array(X, chunks=(8_000, 8)))
    assert distributed.cluster_centers_.dtype == dtype
    assert distributed.n_features_in_ == 8
    qe_local = quantization_error(X, local.cluster_centers_)
    qe_dask = quantization_error(X, distributed.cluster_centers_)
    assert abs(qe_dask - qe_local) <= 0.02 * qe_local, (qe_dask, qe_local)
    # lazy labels and inertia, the nearest final centres of every row
    assert type(distributed.labels_).__module__.startswith("dask.")
    assert distributed.labels_.dtype == np.int32
    assert distributed.inertia_.shape == ()
    labels, inertia = distributed.labels_.compute(), float(distributed.inertia_)
    # (the fit labels in its own centred frame: equal up to rounding-level ties)
    assert_labels_equal_up_to_ties(X, distributed.cluster_centers_, labels,
                                   distributed.predict(X), rtol=1e-5)
    np.testing.assert_allclose(inertia, qe_dask, rtol=1e-5)
    assert distributed.cost_["reduction"] == len(X) and distributed.cost_["labels"] == 0
    assert {"scan", "reduction", "seeding", "estep", "mstep"} <= set(distributed.seconds_)


def test_prediction_on_dask_arrays_equals_numpy(da, client):
    X, _ = _blobs(12_000, 5, 7, 8, dtype=np.float32)
    Xd = da.from_array(X, chunks=(2_500, 5))
    w = np.random.RandomState(9).uniform(0.0, 2.0, size=len(X))
    km = lwcs_lloyd(7, coreset_size=1_500, random_state=0).fit(X)
    for method in ("predict", "transform"):
        lazy = getattr(km, method)(Xd)
        assert type(lazy).__module__.startswith("dask.")
        expected = getattr(km, method)(X)
        assert lazy.dtype == expected.dtype and lazy.shape == expected.shape
        np.testing.assert_array_equal(lazy.compute(), expected)
    # (sums over chunks: the same up to the order of the additions)
    np.testing.assert_allclose(float(km.score(Xd)), km.score(X), rtol=1e-9)
    np.testing.assert_allclose(float(km.score(Xd, sample_weight=da.from_array(w, 4_000))),
                               km.score(X, sample_weight=w), rtol=1e-9)
    gmm = vc_gmm(7, coreset_size=1_500, random_state=0).fit(X)
    for method in ("predict_proba", "score_samples"):
        np.testing.assert_array_equal(getattr(gmm, method)(Xd).compute(),
                                      getattr(gmm, method)(X))
    np.testing.assert_allclose(float(gmm.score(Xd, sample_weight=w)),
                               gmm.score(X, sample_weight=w), rtol=1e-9)
    with pytest.raises(ValueError, match="X has 4 features, but Clusterer is expecting 5"):
        km.predict(Xd[:, :4])
    bad = X.copy()
    bad[7_000, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        km.predict(da.from_array(bad, chunks=(2_500, 5))).compute()


# -- what the client holds ----------------------------------------------------------------


def test_client_never_materialises_the_data(da, client, monkeypatch):
    dask = pytest.importorskip("dask")
    X, _ = _blobs(40_000, 6, 12, 10, dtype=np.float32)
    guarded = OneChunkAtATime(X, 5_000)
    Xd = da.from_array(guarded, chunks=(5_000, 6), asarray=True)
    with pytest.raises(MemoryError):
        np.asarray(guarded)
    with pytest.raises(MemoryError, match="span more than one chunk"):
        guarded[4_000:6_000]
    # the client gets results from the passes only through dask.compute: count their bytes
    gathered = []
    compute = dask.compute

    def counting_compute(*args, **kwargs):
        results = compute(*args, **kwargs)
        gathered.append(sum(_nbytes(r) for r in results))
        return results

    monkeypatch.setattr(dask, "compute", counting_compute)
    for name in ("__array__", "compute", "persist"):
        monkeypatch.setattr(type(Xd), name, _refuse, raising=False)
    size = 2_000
    km = vc_gmm(12, coreset_size=size, random_state=0).fit(Xd)
    monkeypatch.undo()
    coreset_bytes = size * 6 * 4
    assert len(gathered) == 2  # the two passes
    assert gathered[0] < 8 * 64 * (6 + 8)  # pass 1: a few numbers per chunk
    assert gathered[1] <= 2 * coreset_bytes  # pass 2: the coreset, its counts and weights
    labels = km.labels_.compute()
    assert labels.shape == (40_000,)
    assert_labels_equal_up_to_ties(X, km.cluster_centers_, labels, km.predict(X), rtol=1e-5)


def _refuse(*args, **kwargs):
    raise MemoryError("the dask array was computed on the client")


def _nbytes(value):
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 8


# -- compositions and validation ----------------------------------------------------------


def test_dask_fit_refuses_what_cannot_run_on_chunks(da, client):
    Xd = da.from_array(_blobs(2_000, 3, 4, 11)[0], chunks=(500, 3))
    supported = (r"runs on all the rows with FullEStep, TruncatedEStep, PartialEStep "
                 r"\(or a bounded E-step on full or nested batches\), a HardMStep, SoftMStep "
                 r"or SphericalMStep, full batches, nested batches \(with a HardMStep\) or "
                 r"uniform mini-batches and no refiner or Breathing \(presets.lloyd, "
                 r"presets.elkan, presets.nmbatch, presets.gmm, presets.spherical_kmeans, "
                 r"presets.minibatch, presets.var_kmeans_s, presets.var_gmm_s, "
                 r"presets.best_quality, presets.large_scale\), or on a coreset with a "
                 r"reducer that works on row chunks, reduce=LWCS\(\.\.\.\)")
    with pytest.raises(ValueError, match=supported + r".*estep=PartialEStep cannot run "
                                                     r"chunk by chunk yet \(estep=Partial"
                                                     r"EStep: its initial E-steps would "
                                                     r"estimate G_c from each chunk alone"):
        var_kmeans_s(4, n_init_esteps=2).fit(Xd)
    with pytest.raises(ValueError, match=r"estep=ElkanEStep cannot run chunk by chunk yet "
                                         r"\(estep=ElkanEStep: its per-sample state"):
        Clusterer(4, estep="elkan", schedule="minibatch").fit(Xd)
    with pytest.raises(ValueError, match=r"schedule=MiniBatch cannot run chunk by chunk yet "
                                         r"\(schedule=MiniBatch: it needs all weights\)"):
        Clusterer(4, schedule=MiniBatch(sampling="weighted")).fit(Xd)
    with pytest.raises(ValueError, match=r"mstep=SphericalMStep cannot run chunk by chunk"):
        Clusterer(4, estep="elkan", mstep="spherical", schedule=NestedDoubling()).fit(Xd)
    with pytest.raises(ValueError, match=r"estep=PartialEStep: init='random' draws K\(n\)"):
        var_gmm_s(4, init="random").fit(Xd)
    with pytest.raises(ValueError, match=r"LWCS.*LaplacianEStep: it needs the kNN graph"):
        slk_bo(4).fit(Xd)
    with pytest.raises(ValueError, match="LaplacianEStep"):
        slk_bo(4, reduce=LWCS(1_000)).fit(Xd)
    assert LWCS.chunked and not NoReduction.chunked


def test_dask_fit_validates_chunks(da, client):
    X, _ = _blobs(6_000, 3, 4, 12)
    X[4_321, 1] = np.nan
    with pytest.raises(ValueError, match=r"Input X contains NaN or infinity in 1 row \(the "
                                         r"first is row 4321\)"):
        lwcs_lloyd(4, coreset_size=500).fit(da.from_array(X, chunks=(1_000, 3)))
    X[4_321, 1] = 0.0
    w = np.ones(len(X))
    w[[10, 5_000, 5_001]] = -1.0
    with pytest.raises(ValueError, match="sample_weight has 3 negative entries"):
        lwcs_lloyd(4, coreset_size=500).fit(da.from_array(X, chunks=(1_000, 3)),
                                             sample_weight=da.from_array(w, chunks=1_500))
    with pytest.raises(ValueError, match="sample_weight is zero everywhere"):
        lwcs_lloyd(4, coreset_size=500).fit(da.from_array(X, chunks=(1_000, 3)),
                                             sample_weight=da.zeros(len(X), chunks=2_000))
    with pytest.raises(ValueError, match="sample_weight has 5 entries, but X has 6000"):
        lwcs_lloyd(4, coreset_size=500).fit(da.from_array(X, chunks=(1_000, 3)),
                                             sample_weight=da.ones(5, chunks=5))
    with pytest.raises(ValueError, match="n_clusters=4 must be <= n_samples=3"):
        lwcs_lloyd(4, coreset_size=500).fit(da.from_array(X[:3], chunks=(2, 3)))
    with pytest.raises(ValueError, match="LWCS size=2 must be >= n_clusters=4"):
        lwcs_lloyd(4, coreset_size=2).fit(da.from_array(X, chunks=(1_000, 3)))
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        Xd = da.from_array(X, chunks=(1_000, 3))
        lwcs_lloyd(4, coreset_size=500).fit(Xd[Xd[:, 0] > 0])


def test_given_centres_and_small_data_on_dask(da, client):
    X, means = _blobs(3_000, 3, 4, 13)
    Xd = da.from_array(X + 1000.0, chunks=(700, 3))  # far from the origin: centring matters
    km = Clusterer(4, seed=means[:4] + 1000.0, reduce=LWCS(800), max_iter=50,
                   random_state=0).fit(Xd)
    assert km.n_iter_ >= 1
    np.testing.assert_allclose(np.sort(km.cluster_centers_[:, 0]),
                               np.sort(means[:4, 0] + 1000.0), atol=0.5)
    with pytest.warns(RuntimeWarning, match="clustering the full data instead"):
        full = Clusterer(4, seed=means[:4] + 1000.0, reduce=LWCS(5_000),
                         random_state=0).fit(Xd)
    reference = Clusterer(4, seed=means[:4] + 1000.0, random_state=0).fit(X + 1000.0)
    np.testing.assert_allclose(full.cluster_centers_, reference.cluster_centers_, rtol=1e-10)
    np.testing.assert_array_equal(full.labels_.compute(), reference.labels_)
    # dask weights: a weighted coreset, a lazily weighted inertia
    w = np.random.RandomState(14).uniform(0.0, 3.0, size=len(X))
    weighted = lwcs_lloyd(4, coreset_size=800, random_state=0).fit(
        Xd, sample_weight=da.from_array(w, chunks=1_000))
    np.testing.assert_allclose(float(weighted.inertia_),
                               quantization_error(X + 1000.0, weighted.cluster_centers_, w),
                               rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_coreset_does_not_depend_on_the_chunking(da, client, dtype):
    """Any chunking of a dask array draws the in-memory array's coreset (the same rows;
    weights equal up to the rounding of the per-chunk sums)."""
    X, _ = _blobs(30_011, 5, 7, 6, dtype=dtype)
    w = np.random.RandomState(7).uniform(0.0, 2.0, size=len(X))
    state = FitState(n_clusters=7, n_features=5, random_state=np.random.RandomState(11))
    Xc, wc = LWCS(2_500).reduce(X, w.astype(dtype), state)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    for chunks in (4_000, (10_000, 3, 17_000, 3_008)):
        Xc_d, wc_d, state_d, _ = _coreset(da.from_array(X, chunks=(chunks, 5)),
                                          da.from_array(w, chunks=(chunks,)), 7, 2_500, 11)
        np.testing.assert_array_equal(Xc_d, Xc)
        np.testing.assert_allclose(wc_d, wc, rtol=rtol)
        # the second pass reads only the chunks that drew (not the 3-row ones, here)
        assert state_d.meter.cost["reduction"] == (len(X) if chunks == 4_000 else len(X) - 3)
    assert state.meter.cost["reduction"] == len(X)


# -- memmaps ------------------------------------------------------------------------------


def test_memmap_fit_reads_blocks_and_matches_the_dask_coreset(da, client, tmp_path,
                                                             monkeypatch):
    X, means = _blobs(20_000, 4, 5, 14, dtype=np.float32)
    path = tmp_path / "X.npy"
    np.save(path, X)
    X_mm = np.load(path, mmap_mode="r")
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", 3_000 * 4 * 4)  # 3000-row blocks
    Xc_mm, wc_mm, state, data = _coreset(X_mm, None, 5, 1_500, 3, n_threads=2)
    assert isinstance(data, _chunked.MemmapChunks)
    assert data.chunk_rows == (3_000,) * 6 + (2_000,)
    Xc_d, wc_d, _, _ = _coreset(da.from_array(X_mm, chunks=(3_000, 4)), None, 5, 1_500, 3)
    np.testing.assert_array_equal(Xc_mm, Xc_d)
    np.testing.assert_array_equal(wc_mm, wc_d)
    # a fit: labels in memory (block by block), centres as on the dask array
    init = means + 0.1
    km = Clusterer(5, seed=init, reduce=LWCS(1_500), random_state=3).fit(X_mm)
    km_d = Clusterer(5, seed=init, reduce=LWCS(1_500), random_state=3).fit(
        da.from_array(X_mm, chunks=(3_000, 4)))
    np.testing.assert_array_equal(km.cluster_centers_, km_d.cluster_centers_)
    assert isinstance(km.labels_, np.ndarray)
    np.testing.assert_array_equal(km.labels_, km.predict(X))
    np.testing.assert_allclose(km.inertia_, -km.score(X), rtol=1e-6)
    assert km.cost_["labels"] == 5 * len(X)  # every row to every centre


def _graph_warnings(action):
    """The warnings ``action()`` gives about data in a dask array's task graph."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [w for w in caught if "task graph holds" in str(w.message)]


def test_a_graph_that_carries_a_large_array_gets_one_warning(da, client, tmp_path,
                                                             monkeypatch):
    """A dask array of a memmap (or of an array in memory) carries the data in its graph,
    which dask.distributed sends with every compute: one warning per fit, predict or score,
    naming the fix; a dask array whose tasks read the file, and the memmap itself, get
    none."""
    import dask
    X, means = _blobs(2_000, 3, 4, random_state=0, dtype=np.float32)
    path = tmp_path / "X.npy"
    np.save(path, X)
    monkeypatch.setattr(_lazy, "EMBEDDED_DATA_WARNING_BYTES", X.nbytes // 2)
    model = Clusterer(4, seed=means.astype(np.float32), max_iter=3)
    embedded = da.from_array(np.load(path, mmap_mode="r"), chunks=(500, 3))
    for action in (lambda: model.fit(embedded), lambda: model.predict(embedded),
                   lambda: float(model.score(embedded))):
        caught = _graph_warnings(action)
        assert len(caught) == 1 and caught[0].category is RuntimeWarning
        message = str(caught[0].message)
        assert "Pass the memmap or array itself" in message
        assert "each task reads its rows from the file" in message
    assert len(_graph_warnings(lambda: model.fit(da.from_array(X, chunks=(500, 3))))) == 1

    def rows(start, stop):
        return np.load(path, mmap_mode="r")[start:stop]
    from_file = da.concatenate([da.from_delayed(dask.delayed(rows)(i, i + 500),
                                                shape=(500, 3), dtype=np.float32)
                                for i in range(0, 2_000, 500)])
    assert _graph_warnings(lambda: model.fit(from_file)) == []
    labels = model.labels_.compute()
    assert _graph_warnings(lambda: model.fit(np.load(path, mmap_mode="r"))) == []
    np.testing.assert_array_equal(model.labels_, labels)
    with dask.config.set(scheduler="synchronous"):  # no graph leaves this process
        assert _graph_warnings(lambda: model.fit(embedded)) == []


def test_memmap_without_a_chunked_reducer_is_read_as_an_array(tmp_path):
    X, _ = _blobs(3_000, 3, 4, 15)
    np.save(tmp_path / "X.npy", X)
    X_mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    km = Clusterer(4, random_state=0).fit(X_mm)
    reference = Clusterer(4, random_state=0).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, reference.cluster_centers_)
    assert "scan" not in km.seconds_


# -- without dask -------------------------------------------------------------------------


class _FakeDaskArray:
    """Looks like a dask array (its class lives in a ``dask.`` module) where dask is missing."""

    __module__ = "dask.array.core"
    shape, ndim, dtype = (100, 2), 2, np.dtype(np.float64)
    chunks, numblocks = ((50, 50), (2,)), (2, 1)

    def to_delayed(self):
        raise AssertionError("not reached")


def test_dask_paths_without_dask_name_the_extra(monkeypatch):
    for name in ("dask", "dask.array", "distributed"):
        monkeypatch.setitem(sys.modules, name, None)  # "import dask" now fails
    with pytest.raises(ImportError, match=r"pip install 'clusterkit\[dask\]'"):
        lwcs_lloyd(3, coreset_size=50).fit(_FakeDaskArray())
    km = Clusterer(3, random_state=0).fit(_blobs(300, 2, 3, 16)[0])
    with pytest.raises(ImportError, match=r"clusterkit\[dask\]"):
        km.predict(_FakeDaskArray())


def test_everything_else_works_without_dask(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        for name in ("dask", "dask.array", "distributed"):
            sys.modules[name] = None
        import numpy as np
        import clusterkit
        from clusterkit.presets import vc_gmm
        X = np.random.RandomState(0).normal(size=(5_000, 3)).astype(np.float32)
        np.save({str(tmp_path / "X.npy")!r}, X)
        X_mm = np.load({str(tmp_path / "X.npy")!r}, mmap_mode="r")
        for data in (X, X_mm):
            gmm = vc_gmm(4, coreset_size=1_000, random_state=0).fit(data)
            assert gmm.labels_.shape == (5_000,) and gmm.predict(X).shape == (5_000,)
        assert clusterkit.Clusterer(4, random_state=0).fit(X).inertia_ > 0
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_lazy_methods_name_a_refused_row_by_its_number_in_the_dask_array(da):
    """A fitted model's methods run chunk by chunk: a NaN or zero-norm row is numbered in the
    dask array (not in its chunk), and the message says which chunk was counted."""
    dask = pytest.importorskip("dask")
    X = np.random.RandomState(0).normal(size=(100, 3))
    Y = X.copy()
    Y[[42, 47], 1] = np.nan
    with dask.config.set(scheduler="synchronous"), pytest.raises(
            ValueError, match=r"^Input X contains NaN or infinity in 2 rows of its row chunk "
                              r"from row 30 \(the first is row 42\)"):
        lloyd(3, random_state=0).fit(X).predict(da.from_array(Y, chunks=(30, 3))).compute()
    Y = X.copy()
    Y[77] = 0.0
    with dask.config.set(scheduler="synchronous"), pytest.raises(
            ValueError, match=r"^X has 1 row of zero norm in its row chunk from row 60 \(the "
                              r"first is row 77\)"):
        spherical_kmeans(3, random_state=0).fit(X).predict(
            da.from_array(Y, chunks=(30, 3))).compute()
