"""Data reducers: NoReduction passes through, LWCS draws an unbiased weighted coreset."""
import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from clusterkit import LWCS, Clusterer, FitState, NoReduction
from clusterkit._data import blocks
from clusterkit._data.containers import chunked_data
from clusterkit.metrics import quantization_error

from ._helpers import fixed_iterations


def _state(X, n_clusters=3, seed=0, n_threads=1):
    return FitState(n_clusters=n_clusters, n_features=X.shape[1],
                    random_state=np.random.RandomState(seed), n_threads=n_threads, needs_resp=False)


def _data(n=2000, d=3, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(8, d))
    X = centres[rng.integers(8, size=n)] + rng.normal(size=(n, d))
    X[:5] *= 4.0  # a few far samples: the distance term of q matters
    return np.ascontiguousarray(X, dtype=dtype)


def _weighted_qe(X, w, centres):
    d2 = ((X[:, None, :].astype(np.float64) - centres[None]) ** 2).sum(-1).min(1)
    return float(w.astype(np.float64) @ d2)


# --- NoReduction ----------------------------------------------------------------------------

def test_no_reduction_returns_its_inputs():
    X, w = _data(10), np.arange(10.0)
    Xr, wr = NoReduction().reduce(X, w, _state(X))
    assert Xr is X and wr is w


# --- the sampling distribution ----------------------------------------------------------------

def _q(X, w):
    """LWCS's q (Bachem et al., Alg. 1, with input weights), computed the direct way."""
    X, w = X.astype(np.float64), w.astype(np.float64)
    mu = w @ X / w.sum()
    d2 = ((X - mu) ** 2).sum(1)
    spread = w @ d2
    return 0.5 * w / w.sum() + (0.5 * w * d2 / spread if spread > 0 else 0.5 * w / w.sum())


def _draws(X, w, Xc, wc, size):
    """The drawn rows of ``X`` and their numbers of draws, from the coreset's weights
    (``wc = count w / (size q)``); asserts that the counts come out as integers."""
    rows = np.array([np.flatnonzero((X == x).all(1))[0] for x in Xc])
    counts = wc.astype(np.float64) * size * _q(X, w)[rows] / w[rows]
    rtol = 1e-5 if wc.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(counts, np.round(counts), rtol=rtol)
    return rows, np.round(counts).astype(int)


@pytest.mark.parametrize("weighted", [False, True])
def test_draw_frequencies_follow_q(weighted):
    """Every row is drawn with probability q: the coreset weights are ``count w / (size q)``
    with integer counts, and the counts of many draws match ``size q``."""
    X = _data(400)
    w = np.ones(400)
    if weighted:
        w = np.random.default_rng(1).uniform(0, 3, size=400)
        w[::7] = 0
    size = 399
    total = np.zeros(400)
    for seed in range(60):
        Xc, wc = LWCS(size).reduce(X, w, _state(X, seed=seed))
        rows, counts = _draws(X, w, Xc, wc, size)
        assert counts.sum() == size and np.all(w[rows] > 0)
        total[rows] += counts
    expected = 60 * size * _q(X, w)
    assert np.all(total[w == 0] == 0)
    chi2 = ((total - expected) ** 2 / np.where(expected > 0, expected, 1))[w > 0].sum()
    dof = int((w > 0).sum()) - 1
    assert chi2 < dof + 5 * np.sqrt(2 * dof), (chi2, dof)


def test_weight_two_has_the_weight_of_two_copies():
    """A row of weight 2 gets the probability (2 q) and per-draw weight of its two copies."""
    X = _data(300)
    w = np.ones(300)
    w[:40] = 2.0
    X_dup = np.vstack([X, X[:40]])
    q_w, q_dup = _q(X, w), _q(X_dup, np.ones(340))
    np.testing.assert_allclose(q_w[:40], q_dup[:40] + q_dup[300:], rtol=1e-12)
    Xc, wc = LWCS(200).reduce(X, w, _state(X))
    rows, counts = _draws(X, w, Xc, wc, 200)
    # one draw of a copy weighs 1 / (size q_copy), as one draw of the weight-2 row does
    np.testing.assert_allclose(wc / counts, 1 / (200 * q_dup[rows]), rtol=1e-12)


def test_all_samples_on_the_mean_gives_the_weight_distribution():
    X = np.ones((50, 2))
    w = np.linspace(1, 2, 50)
    np.testing.assert_allclose(_q(X, w), w / w.sum(), rtol=1e-12)
    Xc, wc = LWCS(20).reduce(X, w, _state(X, n_clusters=1))
    # every draw weighs sum(w) / size, whichever row it is
    counts = wc * 20 / w.sum()
    np.testing.assert_allclose(counts, np.round(counts), rtol=1e-12)
    assert np.round(counts).sum() == 20


# --- the coreset --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_coreset_rows_weights_and_cost(dtype):
    X = _data(3000, dtype=dtype)
    state = _state(X)
    Xc, wc = LWCS(500).reduce(X, np.ones(3000, dtype=dtype), state)
    assert Xc.dtype == dtype and wc.dtype == dtype and Xc.flags.c_contiguous
    assert 3 <= len(Xc) <= 500 and wc.shape == (len(Xc),) and np.all(wc > 0)
    assert state.meter.cost == {"seeding": 0, "reduction": 3000, "estep": 0, "labels": 0}
    # distinct rows of X, in increasing row order, with weights count / (size q)
    rows, counts = _draws(X, np.ones(3000), Xc, wc, 500)
    assert np.all(np.diff(rows) > 0)
    assert counts.sum() == 500


@pytest.mark.parametrize("n_threads", [1, 2])
def test_same_random_state_same_coreset_for_any_thread_count(monkeypatch, n_threads):
    X = _data(40_000, d=8)  # enough work per block for the kernels to use both threads
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", 7_001 * 8 * 8)  # several blocks
    a = LWCS(400).reduce(X, np.ones(40_000), _state(X, seed=3, n_threads=1))
    b = LWCS(400).reduce(X, np.ones(40_000), _state(X, seed=3, n_threads=n_threads + 1))
    c = LWCS(400).reduce(X, np.ones(40_000), _state(X, seed=4, n_threads=1))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])


def _memmap(X, tmp_path, name="X.npy"):
    np.save(tmp_path / name, X)
    return np.load(tmp_path / name, mmap_mode="r")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_samples, size", [(5_003, 777), (20_011, 4_099)])
def test_ndarray_and_memmap_give_the_same_coreset(monkeypatch, tmp_path, dtype, weighted,
                                                  n_samples, size):
    """One sampler: an array and a memmap of the same rows give bit-identical coresets."""
    X = _data(n_samples, d=5, dtype=dtype, seed=1)
    w = (np.random.default_rng(2).uniform(0, 3, size=n_samples) if weighted else None)
    # blocks of 1237 rows: several, the last one shorter
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", 1_237 * 5 * np.dtype(dtype).itemsize)
    X_mm = _memmap(X, tmp_path)
    w_fit = np.ones(n_samples, dtype=dtype) if w is None else w.astype(dtype)
    state = _state(X, seed=9)
    Xc, wc = LWCS(size).reduce(X, w_fit, state)
    state_mm = _state(X, seed=9, n_threads=2)
    Xc_mm, wc_mm = LWCS(size).reduce_chunked(chunked_data(X_mm, w, 2), state_mm)
    assert Xc.dtype == Xc_mm.dtype == wc.dtype == wc_mm.dtype == dtype
    np.testing.assert_array_equal(Xc_mm, Xc)
    np.testing.assert_array_equal(wc_mm, wc)
    assert state.meter.cost == state_mm.meter.cost
    # fits on the same coreset (centred on the mean of the array or of the memmap's first
    # pass, which agree to rounding)
    fits = [Clusterer(4, reduce=LWCS(size), random_state=9, max_iter=3).fit(data, sample_weight=w)
            for data in (X, X_mm)]
    np.testing.assert_allclose(fits[1].cluster_centers_, fits[0].cluster_centers_,
                               rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-4)
    assert fits[0].cost_["reduction"] == fits[1].cost_["reduction"] == n_samples


def test_zero_weight_samples_are_never_drawn():
    X = _data(1000)
    w = np.ones(1000)
    w[:500] = 0
    X[:500] += 100.0  # far away: they would dominate the distance term if they counted
    Xc, _ = LWCS(2000 - 1001).reduce(X, w, _state(X))
    assert np.all(Xc[:, 0] < 50)


@pytest.mark.parametrize("weighted", [False, True])
def test_coreset_quantization_error_is_unbiased(weighted):
    """Over repeats, the coreset's weighted QE of fixed centres estimates the data's."""
    X = _data(2000)
    rng = np.random.default_rng(5)
    w = rng.uniform(0.5, 2.0, size=2000) if weighted else np.ones(2000)
    centres = X[rng.choice(2000, 6, replace=False)]
    exact_qe, exact_total = _weighted_qe(X, w, centres), w.sum()
    estimates, totals = [], []
    for seed in range(300):
        Xc, wc = LWCS(100).reduce(X, w, _state(X, seed=seed))
        estimates.append(_weighted_qe(Xc, wc, centres))
        totals.append(wc.sum())
    for values, exact in ((estimates, exact_qe), (totals, exact_total)):
        values = np.asarray(values)
        sem = values.std(ddof=1) / np.sqrt(len(values))
        assert abs(values.mean() - exact) <= 4 * sem, (values.mean(), exact, sem)
        assert sem < 0.05 * exact  # the check above is not vacuous


def test_few_distinct_draws_are_kept_unmerged_with_a_warning():
    X = np.zeros((1000, 2))
    X[0] = 1e6  # almost half of the mass of q
    state = _state(X, n_clusters=10, seed=0)
    with pytest.warns(RuntimeWarning, match=r"LWCS drew only \d+ distinct samples for "
                                            r"n_clusters=10 \(size=10\)"):
        Xc, wc = LWCS(10).reduce(X, np.ones(1000), state)
    assert len(Xc) == 10 and (Xc[:, 0] == 1e6).sum() >= 2
    np.testing.assert_allclose(wc[Xc[:, 0] == 1e6], 1 / (10 * _q(X, np.ones(1000))[0]),
                               rtol=1e-12)


# --- inside Clusterer -----------------------------------------------------------------------

def test_fit_on_coreset_labels_and_inertia_refer_to_the_full_data():
    X = _data(3000)
    km = Clusterer(8, reduce=LWCS(600), random_state=0).fit(X)
    assert km.labels_.shape == (3000,)
    assert km.inertia_ == pytest.approx(quantization_error(X, km.cluster_centers_), rel=1e-10)
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    assert km.cost_["reduction"] == 3000
    assert km.cost_["labels"] == 3000 * 8
    n_coreset = km.cost_["estep"] // km.n_iter_ // 8  # exact E-step: N' C per iteration
    assert 8 <= n_coreset <= 600
    assert km.n_distance_evals_ == sum(km.cost_.values())
    # the history's quantization error is the coreset's
    assert km.history_[-1]["qe"] != pytest.approx(km.inertia_, rel=1e-12)

    lazy = Clusterer(8, reduce=LWCS(600), random_state=0, compute_labels=False).fit(X)
    assert not hasattr(lazy, "labels_") and not hasattr(lazy, "inertia_")
    assert lazy.cost_["labels"] == 0
    np.testing.assert_array_equal(lazy.cluster_centers_, km.cluster_centers_)


def test_coreset_fit_never_copies_the_full_data():
    # only the coreset is centred, and the labelling pass centres blocks of rows
    X = _data(200_000, d=32)
    tracemalloc.start()
    try:
        Clusterer(8, reduce=LWCS(2**12), random_state=0).fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.75 * X.nbytes


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blockwise_labelling_equals_one_pass(monkeypatch, dtype):
    X = _data(2001, d=12, dtype=dtype) + 1e3  # far from the origin: centring matters
    whole = Clusterer(8, reduce=LWCS(500), random_state=0).fit(X)
    monkeypatch.setattr(blocks, "NEAREST_BLOCK_BYTES", 1)  # one tile per block
    blockwise = Clusterer(8, reduce=LWCS(500), random_state=0).fit(X)
    np.testing.assert_array_equal(blockwise.labels_, whole.labels_)
    assert blockwise.inertia_ == whole.inertia_
    np.testing.assert_array_equal(blockwise.predict(X), whole.labels_)
    assert blockwise.cost_ == whole.cost_


@fixed_iterations
def test_user_weights_compose_with_coreset_weights():
    X = _data(2000)
    w = np.where(np.arange(2000) % 2 == 0, 3.0, 1.0)
    km = Clusterer(4, reduce=LWCS(300), random_state=0, max_iter=1).fit(X, sample_weight=w)
    assert km.inertia_ == pytest.approx(quantization_error(X, km.cluster_centers_, w),
                                        rel=1e-10)
    # the coreset's total weight estimates the user's total weight
    coreset_totals = []
    for seed in range(50):
        _, wc = LWCS(300).reduce(X, w, _state(X, seed=seed))
        coreset_totals.append(wc.sum())
    assert np.mean(coreset_totals) == pytest.approx(w.sum(), rel=0.02)


def test_size_at_least_n_samples_clusters_the_full_data_with_a_warning():
    X = _data(300)
    with pytest.warns(RuntimeWarning, match=r"LWCS size=300 >= n_samples=300; clustering the "
                                            r"full data instead\."):
        a = Clusterer(4, reduce=LWCS(300), random_state=0).fit(X)
    b = Clusterer(4, random_state=0).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.cost_ == b.cost_ and a.cost_["reduction"] == 0
    Xr, wr = LWCS(10**6).reduce(X, np.ones(300), _state(X))
    assert Xr is X


@pytest.mark.parametrize("size, error, match", [
    (0, ValueError, r"^LWCS: size must be an integer >= 1 or None; got 0\.$"),
    (-3, ValueError, r"^LWCS: size must be an integer >= 1 or None; got -3\.$"),
    (2.5, TypeError, r"^LWCS: size must be an integer >= 1 or None; got 2\.5\.$"),
    ("big", TypeError, r"^LWCS: size must be an integer >= 1 or None; got 'big'\.$"),
    (4, ValueError, r"^LWCS size=4 must be >= n_clusters=5\.$"),
])
def test_validation_messages(size, error, match):
    X = _data(200)
    with pytest.raises(error, match=match):
        Clusterer(5, reduce=LWCS(size)).fit(X)


def test_no_warning_for_a_proper_size():
    X = _data(300)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Clusterer(4, reduce=LWCS(100), random_state=0).fit(X)


def test_strategy_object_stores_its_argument_pickles_and_clones():
    reducer = LWCS(2**15)
    assert reducer.size == 2**15 and repr(reducer) == "LWCS(size=32768)"
    assert pickle.loads(pickle.dumps(reducer)) == reducer
    km = clone(Clusterer(reduce=LWCS(123)))
    assert km.reduce == LWCS(123) and km.get_params()["reduce"] == LWCS(123)
