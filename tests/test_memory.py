"""A fit's memory: the budget (``memory_limit``), the estimate before it runs, the refusal
that says what would fit, and memmaps read in blocks when their copy would not fit."""
import re
import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from clusterkit import (BoundedEStep, Clusterer, ElkanEStep, FitMemoryError, KMeansPlusPlus,
                        MemoryEstimate, Seeder, YinyangEStep)
from clusterkit._data import blocks
from clusterkit.presets import PRESETS, build_preset, lloyd


def _blobs(n=3_000, d=4, c=6, seed=0, dtype=np.float64):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-20, 20, size=(c, d))
    return (means[rng.randint(c, size=n)] + rng.normal(size=(n, d))).astype(dtype)


class _Untouchable(Seeder):
    def seed(self, X, sample_weight, n_clusters, state):
        raise AssertionError("the fit did work before refusing")


@pytest.mark.parametrize("limit, error, shown", [("4GB", TypeError, "'4GB'"),
                                                 (2.5e9, TypeError, "2500000000.0"),
                                                 (True, TypeError, "True"),
                                                 (0, ValueError, "0")])
def test_memory_limit_is_checked_by_its_declared_constraint(limit, error, shown):
    message = ("Clusterer: memory_limit must be an integer >= 1 or None; got "
               + re.escape(shown) + r"\.")
    with pytest.raises(error, match=message):
        Clusterer(3, memory_limit=limit).fit(_blobs())
    with pytest.raises(error, match=message):
        Clusterer(3, memory_limit=limit).estimate_memory((100, 2))


def test_the_estimate_has_every_phase_and_is_the_same_for_any_container(tmp_path):
    X = _blobs(dtype=np.float32)
    np.save(tmp_path / "X.npy", X)
    model = Clusterer(20, estep="elkan", n_init=2)
    estimates = [model.estimate_memory(X), model.estimate_memory(X.shape, np.float32),
                 model.estimate_memory(np.load(tmp_path / "X.npy", mmap_mode="r"))]
    assert all(isinstance(e, MemoryEstimate) for e in estimates)
    assert len({int(e) for e in estimates}) == 1
    estimate = estimates[0]
    assert set(estimate.phases) == {"data", "reduction", "seeding", "estep", "mstep",
                                    "labels"}
    assert estimate.phases["estep"] >= 4 * 3_000 * 20  # Elkan's N x C float32 bounds
    assert estimate.phases["data"] >= X.nbytes  # the centred copy
    # n_init=2 keeps the best run's state beside the next one's
    one = model.set_params(n_init=1).estimate_memory(X)
    assert estimate.runs == 2 and int(estimate) > int(one)
    # float64 input of float32 values: twice the data
    assert int(model.estimate_memory(X.astype(np.float64))) > int(one)
    # lists and integers are copied once more when validated
    assert (model.estimate_memory(X.astype(int)).phases["data"]
            > model.estimate_memory(X.astype(np.float64)).phases["data"])
    assert "at the peak" in str(estimate) and "estep" in str(estimate)
    assert not hasattr(model, "n_features_in_")  # an estimate fits nothing


def test_the_estimate_follows_the_choice_of_the_bounded_estep():
    shape = (20_000, 40)
    elkan = Clusterer(200, estep=ElkanEStep()).estimate_memory(shape)
    yinyang = Clusterer(200, estep=YinyangEStep()).estimate_memory(shape)
    roomy = Clusterer(200, estep=BoundedEStep(), memory_limit=4 * int(elkan))
    tight = Clusterer(200, estep=BoundedEStep(), memory_limit=int(yinyang) + 4096)
    assert roomy.estimate_memory(shape).phases["estep"] == elkan.phases["estep"]
    assert tight.estimate_memory(shape).phases["estep"] == yinyang.phases["estep"]
    assert int(tight.estimate_memory(shape)) <= tight.memory_limit
    tight.set_params(n_clusters=5).fit(_blobs(2_000, 40))  # (runs in its budget)


def test_kmeanspp_seeding_memory_does_not_grow_as_the_square_of_the_clusters():
    seeder, dtype = KMeansPlusPlus(), np.dtype(np.float32)
    args = (50_000, 32)
    few = seeder.buffer_bytes(*args, 2_000, dtype, None)
    many = seeder.buffer_bytes(*args, 20_000, dtype, None)
    # beyond the lists' cap only the candidates' O(L C) arrays grow
    assert many - few < 20_000 * 12 * 64
    assert many < 2 * few


def test_a_fit_above_its_budget_is_refused_before_any_work_with_what_would_fit():
    X = _blobs(4_000, 8)
    model = Clusterer(400, seed=_Untouchable(), estep="elkan")
    estimate = model.estimate_memory(X)
    limit = int(estimate) - 1000  # (Elkan's bounds alone fit)
    model.set_params(memory_limit=limit)
    with pytest.raises(FitMemoryError, match=r"would need about .* above memory_limit="
                                             rf"{limit} .* What would fit: n_clusters=\d+; "
                                             r"or an E-step that keeps less per sample .*"
                                             rf"memory_limit >= {int(estimate)}") as info:
        model.fit(X)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, ValueError)
    # what it says would fit does: the same fit with that many clusters
    n_clusters = int(re.search(r"n_clusters=(\d+)", str(info.value)).group(1))
    assert 1 <= n_clusters < 400
    model.set_params(n_clusters=n_clusters, seed="k-means++", max_iter=2)
    assert int(model.estimate_memory(X)) <= limit
    with pytest.warns(ConvergenceWarning):  # (max_iter)
        model.fit(X)
    # and a limit at the estimate runs the fit as asked
    with pytest.warns(ConvergenceWarning):  # (max_iter)
        Clusterer(400, estep="elkan", max_iter=2, memory_limit=int(estimate)).fit(X)


def test_verbose_shows_the_estimate_when_the_fit_starts(capsys):
    X = _blobs(500, 3)
    Clusterer(4, verbose=1, random_state=0).fit(X)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("Memory: ") and "at the peak" in first and "budget" in first


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_memmap_whose_copy_exceeds_memory_limit_is_read_in_blocks(tmp_path, monkeypatch,
                                                                     dtype):
    X = _blobs(20_000, 32, 5, 3, dtype)
    np.save(tmp_path / "X.npy", X)
    X_mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    init = X[:5] * 1.0
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", 20_000)
    in_memory = lloyd(5, seed=init).fit(X)
    estimate = lloyd(5, seed=init).estimate_memory(X)
    # a limit below the copy, above what the blocks need
    limit = 3 << 20 if dtype == np.float64 else 2 << 20
    blocked = lloyd(5, seed=init, memory_limit=limit)
    assert int(blocked.estimate_memory(X_mm)) <= limit < int(estimate)
    blocked.fit(X_mm)
    assert "scan" in blocked.seconds_  # read in blocks, not copied
    # the same steps (labels changed at each), the same centres up to the order of the sums
    # (float64 per block, float32 in memory)
    assert blocked.n_iter_ == in_memory.n_iter_
    changed = [[h["n_changed"] for h in fit.history_] for fit in (blocked, in_memory)]
    np.testing.assert_allclose(*changed, rtol=0, atol=0 if dtype == np.float64 else 2)
    np.testing.assert_allclose(blocked.cluster_centers_, in_memory.cluster_centers_, rtol=0,
                               atol=(1e-3 if dtype == np.float32 else 1e-10) * np.abs(X).max())
    np.testing.assert_allclose(blocked.inertia_, in_memory.inertia_, rtol=1e-5)
    # without the limit the same memmap is copied, as any array
    assert "scan" not in lloyd(5, seed=init).fit(X_mm).seconds_


@pytest.mark.parametrize("name", PRESETS)
def test_each_presets_estimate_is_near_the_peak_of_its_traced_allocations(name):
    # NumPy's allocations as tracemalloc sees them, on a small fit run to its end (the
    # exact kNN search of the SLK presets below EXACT_BELOW rows: no numba); generous,
    # since fixed costs weigh more on small data (the benchmark holds the real peak to 25 %)
    X = _blobs(n=4_000, d=8, c=10, dtype=np.float32)
    model = build_preset(name, 20, random_state=0)
    estimate = int(model.estimate_memory(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tracemalloc.start()
        try:
            model.fit(X)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert estimate / 3 <= peak <= 3 * estimate, (peak, estimate)
