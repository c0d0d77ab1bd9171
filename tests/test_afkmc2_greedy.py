"""Greedy AFK-MC^2: one chain is the paper's plain AFK-MC^2, several keep the final state with
the lowest estimated potential, the potential sample, progress."""
import math
import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from clusterkit import AFKMC2, LWCS, Clusterer, FitState, PartialEStep, _reference as ref
from clusterkit._engine.progress import QuietDisplay


def _blobs(n_samples=600, n_features=3, n_blobs=12, dtype=np.float64, seed=0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-30, 30, size=(n_blobs, n_features))
    X = means[rng.randint(n_blobs, size=n_samples)] + rng.normal(size=(n_samples, n_features))
    return np.ascontiguousarray(X, dtype=dtype)


def _state(n_clusters, n_features, seed, n_threads=1):
    return FitState(n_clusters=n_clusters, n_features=n_features,
                    random_state=np.random.RandomState(seed), n_threads=n_threads,
                    needs_resp=False)


def _draw(cumsum, u):
    """Rows by inverting the cumulative mass (all rows here have positive mass)."""
    return np.searchsorted(cumsum, u * cumsum[-1], side="right")


def _replay(X, w, n_clusters, chain_length, n_chains, seed):
    """The draws of plain AFK-MC^2, as the seeder made them before the greedy variant
    existed, in plain NumPy: the first centre, the proposal from one pass, the candidates
    and uniforms of every chain side by side. Returns them and the random state after."""
    rs = np.random.RandomState(seed)
    w64 = w.astype(np.float64)
    first = int(_draw(np.cumsum(w64), rs.uniform()))
    d2 = ref.sqdist(X, X[[first]])[:, 0]
    q = 0.5 * w64 / w64.sum() + 0.5 * w64 * d2 / (w64 @ d2)
    size = (n_clusters - 1, n_chains * chain_length)
    candidates = _draw(np.cumsum(q), rs.uniform(size=size)).astype(np.int32)
    uniforms = rs.uniform(size=size)
    return first, d2, q, candidates, uniforms, rs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_clusters, chain_length", [(2, 1), (9, 20), (45, 3)])
def test_one_candidate_is_plain_afkmc2(dtype, n_clusters, chain_length):
    """Same random stream, centres and count as plain AFK-MC^2 (the reference chains on the
    replayed draws), for any thread count."""
    X = _blobs(dtype=dtype)
    w = np.random.RandomState(1).uniform(0.5, 2, size=len(X)).astype(dtype)
    first, _, q, candidates, uniforms, rs = _replay(X, w, n_clusters, chain_length, 1, 3)
    expected, _, chain_evals = ref.afkmc2_chain(X, w, q, first, candidates, uniforms)
    next_draw = rs.uniform()
    for n_threads in (1, 2):
        state = _state(n_clusters, X.shape[1], 3, n_threads)
        centers = AFKMC2(chain_length, n_candidates=1).seed(X, w, n_clusters, state)
        assert_array_equal(centers, expected)
        assert state.meter.cost["seeding"] == len(X) + chain_evals
        # nothing more was drawn: the fit's later draws are unchanged too
        assert state.random_state.uniform() == next_draw


@pytest.mark.parametrize("potential_sample", ["all", 150])
@pytest.mark.parametrize("n_candidates", [2, 5])
def test_greedy_keeps_the_final_state_with_the_lowest_estimated_potential(n_candidates,
                                                                          potential_sample):
    """Replays the draws, runs every chain in NumPy from the seeder's own earlier centres
    and checks each step's choice against the potentials of the chains' final states."""
    X = _blobs()
    w = np.random.RandomState(2).randint(1, 4, size=len(X)).astype(np.float64)
    C, m = 12, 4
    state = _state(C, X.shape[1], 5)
    seeder = AFKMC2(chain_length=m, n_candidates=n_candidates,
                    potential_sample=potential_sample)
    centers = seeder.seed(X, w, C, state)
    first, _, q, candidates, uniforms, rs = _replay(X, w, C, m, n_candidates, 5)
    if potential_sample == "all":
        X_pot, w_pot = X, w
    else:  # draws in proportion to weight, each distinct row weighted by its count
        counts = rs.multinomial(potential_sample, w / w.sum())
        rows = np.flatnonzero(counts)
        X_pot, w_pot = X[rows], counts[rows].astype(np.float64)
    assert_array_equal(centers[0], X[first])
    n_chosen_differently = 0
    for i in range(1, C):
        finals = []
        for l in range(n_candidates):
            ys = candidates[i - 1, l * m:(l + 1) * m]
            p = w[ys] * ref.sqdist(X[ys], centers[:i]).min(axis=1)
            finals.append(ys[ref._walk_chain(p, q, ys, uniforms[i - 1, l * m:(l + 1) * m])])
        potentials = [w_pot @ ref.sqdist(X_pot, np.vstack([centers[:i], X[[y]]])).min(axis=1)
                      for y in finals]
        best = finals[int(np.argmin(potentials))]
        assert_array_equal(centers[i], X[best])
        n_chosen_differently += best != finals[0]
    assert n_chosen_differently > 0  # the choice mattered


@pytest.mark.parametrize("n_samples, n_clusters, explicit", [
    (4096, 10, AFKMC2(chain_length=50, n_candidates=4, potential_sample="all")),
    (4097, 10, AFKMC2(chain_length=50, n_candidates=4, potential_sample=4096)),
    (700, 80, AFKMC2(chain_length=33, n_candidates=6, potential_sample="all")),
    (700, 1, AFKMC2(chain_length=200, n_candidates=1)),
])
def test_auto_settings(n_samples, n_clusters, explicit):
    """``n_candidates="auto"``: ``2 + int(ln C)``; ``chain_length="auto"``: ``200 // L``;
    ``potential_sample="auto"``: all rows up to ``max(8 C, 4096)``, that many draws above."""
    X = _blobs(n_samples=n_samples, n_features=2)
    w = np.ones(n_samples)
    auto, explicit_state = _state(n_clusters, 2, 0), _state(n_clusters, 2, 0)
    assert_array_equal(AFKMC2().seed(X, w, n_clusters, auto),
                       explicit.seed(X, w, n_clusters, explicit_state))
    assert auto.meter.cost == explicit_state.meter.cost


def test_greedy_cost_counts_distinct_sample_rows():
    """Draws that repeat a row are one row of the sample; the count is the proposal's pass
    plus what the reference computes on the replayed sample."""
    X = _blobs()
    w = np.ones(len(X))
    C, m, L, size = 7, 5, 3, 2000  # more draws than rows: nearly every row, some repeated
    state = _state(C, X.shape[1], 0)
    AFKMC2(m, n_candidates=L, potential_sample=size).seed(X, w, C, state)
    first, d2, q, candidates, uniforms, rs = _replay(X, w, C, m, L, 0)
    counts = rs.multinomial(size, w / w.sum())
    rows = np.flatnonzero(counts)
    assert len(rows) < len(X)
    *_, n_evals = ref.afkmc2_greedy(X, w, q, first, candidates, uniforms, L, X[rows],
                                    counts[rows].astype(np.float64), d2[rows])
    assert state.meter.cost["seeding"] == len(X) + n_evals


def test_a_huge_potential_sample_takes_memory_in_proportion_to_the_rows():
    """The sample's counts are drawn at once (a multinomial), not draw by draw: 10**12
    draws on 60 rows allocate a few kilobytes (a draw each would be 8 TB)."""
    X = _blobs()[:60]
    w = np.random.RandomState(2).randint(1, 4, size=len(X)).astype(np.float64)
    state = _state(5, X.shape[1], 0)
    tracemalloc.start()
    try:
        centers = AFKMC2(3, n_candidates=2, potential_sample=10**12).seed(X, w, 5, state)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert len(np.unique(centers, axis=0)) == 5


def test_greedy_covers_separated_blobs_better_than_plain():
    """Chains of 2 approximate k-means++ poorly; the best of 5 misses fewer blobs."""
    X = _blobs(n_samples=2000, n_blobs=40, n_features=2)
    w = np.ones(len(X))

    def median_potential(seeder):
        return np.median([ref.sqdist(X, seeder.seed(X, w, 40, _state(40, 2, s))).min(1).sum()
                          for s in range(8)])

    plain = median_potential(AFKMC2(chain_length=2, n_candidates=1))
    greedy = median_potential(AFKMC2(chain_length=2, n_candidates=5))
    assert greedy < 0.8 * plain


def test_greedy_reports_progress_to_the_end():
    X = _blobs(n_samples=3000, n_features=4)
    reports = []
    state = _state(150, 4, 0)
    state.meter.display = QuietDisplay()
    state.meter.display.report = lambda *args: reports.append(args)
    AFKMC2(chain_length=3, n_candidates=3).seed(X, np.ones(len(X)), 150, state)
    assert reports[-1] == ("seeding", 150, 150, "centres")
    assert len(reports) > 2
    assert [done for _, done, *_ in reports] == sorted({done for _, done, *_ in reports})


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fit_with_greedy_seeds_is_thread_independent(dtype):
    X = _blobs(n_samples=3000, n_features=5, n_blobs=30, dtype=dtype)
    fits = [Clusterer(30, seed=AFKMC2(chain_length=5), reduce=LWCS(1000),
                      estep=PartialEStep(G=3), random_state=0, n_threads=t).fit(X)
            for t in (1, 2)]
    assert fits[0].cluster_centers_.dtype == dtype
    assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    assert fits[0].cost_["seeding"] == fits[1].cost_["seeding"]
    assert_allclose(fits[0].inertia_, fits[1].inertia_, rtol=0)
    L = 2 + int(math.log(30))
    assert fits[0].cost_["seeding"] > L * 5 * 30 * 29 // 2
