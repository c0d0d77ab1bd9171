"""A weight of 2 equals duplicating the sample, for every seeder, E-step and M-step.

Seeders are random and draw from the rows, so a duplicated data set gets other draws than a
weighted one for the same random state; for them the *distribution* of the chosen points is
compared with the exact one (which only depends on the merged weights), on a tiny data set.
E-steps and M-steps are deterministic given the centres (and, for :class:`PartialEStep`,
given ``K(n)`` and ``G_c``), so they are run from identical initial values on both data sets
and must give the same numbers.
"""
import itertools
import warnings

import numpy as np
import pytest
from scipy.stats import chisquare
from sklearn.exceptions import ConvergenceWarning

from clusterkit import (AFKMC2, Clusterer, FitState, FullEStep, HardMStep, KMeansPlusPlus,
                        PartialEStep, RandomSeeder, SampledSeeder, SoftMStep, TruncatedEStep,
                        presets)
from clusterkit.presets import PRESETS

from ._helpers import fixed_iterations

# --- seeders: the distribution of the chosen points -----------------------------------------

# five points, the second and fourth with weight 2 (duplicated in the copy)
POINTS = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [4.0, 1.0], [5.0, 5.0]])
WEIGHTS = np.array([1.0, 2.0, 1.0, 2.0, 1.0])
DUP_ROWS = [1, 3]
N_DRAWS = 1200


def _d2(a, b):
    return float(((a - b) ** 2).sum())


def _kmeanspp_pair(w, n_trials):
    """Exact P(first = i, second = j) of (greedy) k-means++ with weights ``w``."""
    n = len(w)
    d2 = np.array([[_d2(POINTS[i], POINTS[j]) for j in range(n)] for i in range(n)])
    p = np.zeros((n, n))
    for i in range(n):
        mass = w * d2[i]
        mass = mass / mass.sum()
        for cands in itertools.product(range(n), repeat=n_trials):
            prob = np.prod(mass[list(cands)])
            if prob == 0:
                continue
            potentials = [float(w @ np.minimum(d2[i], d2[c])) for c in cands]
            p[i, cands[int(np.argmin(potentials))]] += w[i] / w.sum() * prob
    return p


def _afkmc2_pair(w, chain_length):
    """Exact P(first = i, second = j) of AFK-MC^2 with weights ``w``."""
    return np.array([w[i] / w.sum() * _chain_end(w, i, chain_length) for i in range(len(w))])


def _greedy_afkmc2_pair(w, chain_length, n_chains, sample_size):
    """Exact P(first = i, second = j) of greedy AFK-MC^2 with weights ``w``: independent
    chains, the final state with the largest gain on the potential sample (the first on
    ties); the sample is every point with its weight (``sample_size=None``) or
    ``sample_size`` draws in proportion to weight, each point weighted by its count."""
    n = len(w)
    d2 = np.array([[_d2(POINTS[i], POINTS[j]) for j in range(n)] for i in range(n)])
    if sample_size is None:
        samples = [(1.0, w)]
    else:
        samples = [(np.prod(w[list(draws)] / w.sum()), np.bincount(draws, minlength=n))
                   for draws in itertools.product(range(n), repeat=sample_size)]
    p = np.zeros((n, n))
    for i in range(n):
        end = _chain_end(w, i, chain_length)
        for finals in itertools.product(range(n), repeat=n_chains):
            prob = w[i] / w.sum() * np.prod(end[list(finals)])
            for p_sample, counts in samples:
                gains = [counts @ np.maximum(d2[i] - d2[y], 0) for y in finals]
                p[i, finals[int(np.argmax(gains))]] += prob * p_sample
    return p


def _chain_end(w, i, chain_length):
    """Distribution of an AFK-MC^2 chain's final state, first centre ``i``."""
    n = len(w)
    d2 = np.array([[_d2(POINTS[a], POINTS[b]) for b in range(n)] for a in range(n)])
    target = w * d2[i]
    q = 0.5 * w / w.sum() + 0.5 * target / target.sum()
    ratio = target / q
    # transition of one Metropolis-Hastings step: propose y ~ q, accept with
    # probability 1 if p(state) = 0, else min(1, ratio(y) / ratio(state))
    step = np.zeros((n, n))
    for s in range(n):
        for y in range(n):
            acc = 1.0 if target[s] == 0 else min(1.0, ratio[y] / ratio[s])
            step[s, y] += q[y] * acc
            step[s, s] += q[y] * (1 - acc)
    dist = q.copy()  # the first candidate is accepted unconditionally
    for _ in range(chain_length - 1):
        dist = dist @ step
    return dist


def _first_only(w):
    return np.diag(w / w.sum())  # n_clusters = 1: first centre = second "centre"


def _draw_pairs(seeder, X, w, n_clusters):
    """Observed counts of (first, second) chosen points, over N_DRAWS random states."""
    counts = np.zeros((len(POINTS), len(POINTS)))
    for seed in range(N_DRAWS):
        state = FitState(n_clusters=n_clusters, n_features=2,
                         random_state=np.random.RandomState(seed), n_threads=1, needs_resp=False)
        centres = seeder.seed(X, w, n_clusters, state)
        idx = [int(np.flatnonzero((POINTS == c).all(1))[0]) for c in centres]
        counts[idx[0], idx[-1]] += 1
    return counts


SEEDER_CASES = [
    ("random", RandomSeeder(), 1, _first_only),
    ("kmeans++", KMeansPlusPlus(n_local_trials=1), 2, lambda w: _kmeanspp_pair(w, 1)),
    ("greedy-kmeans++", KMeansPlusPlus(n_local_trials=2), 2, lambda w: _kmeanspp_pair(w, 2)),
    ("afkmc2-m2", AFKMC2(chain_length=2, n_candidates=1), 2, lambda w: _afkmc2_pair(w, 2)),
    ("afkmc2-m4", AFKMC2(chain_length=4, n_candidates=1), 2, lambda w: _afkmc2_pair(w, 4)),
    ("greedy-afkmc2-all", AFKMC2(chain_length=2, n_candidates=2, potential_sample="all"), 2,
     lambda w: _greedy_afkmc2_pair(w, 2, 2, None)),
    ("greedy-afkmc2-sample", AFKMC2(chain_length=2, n_candidates=2, potential_sample=2), 2,
     lambda w: _greedy_afkmc2_pair(w, 2, 2, 2)),
    # on a sample as large as the data the inner seeder sees all rows with their weights
    ("sampled", SampledSeeder(KMeansPlusPlus(n_local_trials=1), size=10), 2,
     lambda w: _kmeanspp_pair(w, 1)),
]


@pytest.mark.filterwarnings("ignore:AFKMC2 chose:RuntimeWarning")  # the dup's other copy
@pytest.mark.parametrize("name, seeder, n_clusters, exact", SEEDER_CASES,
                         ids=[case[0] for case in SEEDER_CASES])
def test_seeder_samples_in_proportion_to_weight_times_d2(name, seeder, n_clusters, exact):
    """Weighted data and duplicated data both follow the exact weighted distribution."""
    p = exact(WEIGHTS)
    assert p.sum() == pytest.approx(1.0)
    X_dup = np.vstack([POINTS, POINTS[DUP_ROWS]])
    for X, w in ((POINTS, WEIGHTS), (X_dup, np.ones(len(X_dup)))):
        observed = _draw_pairs(seeder, X, w, n_clusters)
        support = p > 0
        assert observed[~support].sum() == 0, f"{name} chose an impossible pair"
        expected = p[support] * N_DRAWS
        assert chisquare(observed[support], expected).pvalue > 1e-3, (
            name, observed, expected)


def test_exact_distributions_differ_from_the_unweighted_ones():
    """The check above has power: ignoring the weights gives other distributions."""
    ones = np.ones(len(POINTS))
    for exact in (_first_only, lambda w: _kmeanspp_pair(w, 1), lambda w: _kmeanspp_pair(w, 2),
                  lambda w: _afkmc2_pair(w, 2), lambda w: _greedy_afkmc2_pair(w, 2, 2, None),
                  lambda w: _greedy_afkmc2_pair(w, 2, 2, 2)):
        assert np.abs(exact(WEIGHTS) - exact(ones)).max() > 0.02


# --- E-steps and M-steps: identical runs from identical initial values ----------------------

N_ROWS, N_DUP, N_CLUSTERS = 300, 60, 12


def _blobs(dtype=np.float64):
    rng = np.random.default_rng(0)
    grid = 8.0 * np.array([[i, j] for i in range(4) for j in range(3)], dtype=float)
    X = grid[rng.integers(len(grid), size=N_ROWS)] + rng.normal(size=(N_ROWS, 2))
    X = np.hstack([X, rng.normal(size=(N_ROWS, 1))])  # three features
    init = X[[int(np.argmin(((X[:, :2] - g) ** 2).sum(1))) for g in grid]] + 0.5
    return X.astype(dtype), init.astype(dtype)


def _weighted_and_duplicated(dtype=np.float64):
    X, init = _blobs(dtype)
    w = np.ones(N_ROWS, dtype=dtype)
    w[:N_DUP] = 2
    X_dup = np.vstack([X, X[:N_DUP]])
    return X, w, X_dup, np.ones(len(X_dup), dtype=dtype), init


def _run(estep, mstep, X, w, init, n_iter, partial_state=None):
    """The driver's loop on given data; returns per-iteration (objective, qe, centres, s2)."""
    state = FitState(n_clusters=N_CLUSTERS, n_features=X.shape[1],
                     random_state=np.random.RandomState(0), n_threads=1, needs_resp=mstep.needs_resp,
                     objective=mstep.objective)
    state.run.estep_state = estep.init_state(X, w, init, state)
    if partial_state is not None:
        partial_state(state.run.estep_state)
    state.run.mstep_state = mstep.init_state(X, w, init, state)
    centres, out = init.copy(), []
    for _ in range(n_iter):
        assignment = estep.assign(X, w, centres, state)
        centres = mstep.update(X, w, assignment, centres, state)
        out.append((assignment.objective, assignment.qe, centres.copy(), state.run.sigma2,
                    assignment))
    return out, state


ESTEPS = {
    "full": lambda: FullEStep(),
    "truncated": lambda: TruncatedEStep(n_winners=2),
    "partial-exhaustive": lambda: PartialEStep(G=3, neighbourhoods="exhaustive", n_explore=0),
    "partial-estimated": lambda: PartialEStep(G=3, neighbourhoods="estimated", n_explore=0),
}
MSTEPS = {"hard": HardMStep, "soft": SoftMStep}


def _same_iterations(estep_name, mstep_name, X, w, X_more, w_more, init, n_iter):
    """Run on ``X`` and on ``X_more`` (``X`` plus ``N_DUP`` rows) from the same start and check
    that every iteration agrees on the rows of ``X``; returns both runs' assignments."""
    if not estep_name.startswith("partial"):
        copy_partial = None
    else:
        # PartialEStep starts from random K(n) and G_c, drawn differently for other row
        # counts: the extra rows get the K(n) of the first N_DUP rows, both runs the same G_c
        _, fresh = _run(ESTEPS[estep_name](), MSTEPS[mstep_name](), X, w, init, n_iter=0)
        start = fresh.run.estep_state
        assert not start.exact

        def copy_partial(st_more):
            st_more.winners = np.vstack([start.winners, start.winners[:N_DUP]])
            st_more.neighbourhoods = start.neighbourhoods.copy()

    # (_run seeds every state with RandomState(0): the first run starts from `start`)
    a, _ = _run(ESTEPS[estep_name](), MSTEPS[mstep_name](), X, w, init, n_iter)
    b, _ = _run(ESTEPS[estep_name](), MSTEPS[mstep_name](), X_more, w_more, init, n_iter,
                partial_state=copy_partial)
    for (obj_a, qe_a, c_a, s2_a, asg_a), (obj_b, qe_b, c_b, s2_b, asg_b) in zip(a, b):
        assert obj_a == pytest.approx(obj_b, rel=1e-10)
        assert qe_a == pytest.approx(qe_b, rel=1e-10)
        np.testing.assert_allclose(c_a, c_b, rtol=1e-10, atol=1e-12)
        if s2_a is not None:
            assert s2_a == pytest.approx(s2_b, rel=1e-10)
        np.testing.assert_array_equal(asg_a.labels, asg_b.labels[:N_ROWS])
    return [run[4] for run in a], [run[4] for run in b]


@pytest.mark.parametrize("mstep_name", list(MSTEPS))
@pytest.mark.parametrize("estep_name", list(ESTEPS))
def test_weight_two_equals_duplication_for_every_estep_and_mstep(estep_name, mstep_name):
    X, w, X_dup, w_dup, init = _weighted_and_duplicated()
    # Eq. 8 of the estimated neighbourhoods averages over samples, not over weight (as both
    # authors' implementations do), so after the first E-step G_c may differ between the two
    # data sets; later iterations are compared for the other E-steps only.
    n_iter = 1 if estep_name == "partial-estimated" else 8
    for asg_a, asg_b in zip(*_same_iterations(estep_name, mstep_name, X, w, X_dup, w_dup, init,
                                              n_iter)):
        np.testing.assert_array_equal(asg_b.labels[N_ROWS:], asg_b.labels[:N_DUP])
        if asg_a.resp is not None:
            np.testing.assert_allclose(asg_a.resp, asg_b.resp[:N_ROWS], rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("mstep_name", list(MSTEPS))
@pytest.mark.parametrize("estep_name", list(ESTEPS))
def test_weight_zero_equals_removal_for_every_estep_and_mstep(estep_name, mstep_name):
    """Zero-weight samples are as if absent, over many iterations, for every E-step (eq. 8's
    estimated neighbourhoods included) and M-step."""
    X, init = _blobs()
    X_z = np.vstack([X, X[:N_DUP] + 3.0])  # extra rows elsewhere, weight 0
    w, w_z = np.ones(N_ROWS), np.r_[np.ones(N_ROWS), np.zeros(N_DUP)]
    assignments, _ = _same_iterations(estep_name, mstep_name, X, w, X_z, w_z, init, 8)
    assert len(assignments) == 8


@pytest.mark.parametrize("mstep", ["hard", "soft"])
@pytest.mark.parametrize("estep", [FullEStep(), TruncatedEStep(n_winners=3)],
                         ids=["full", "truncated"])
def test_weight_two_equals_duplication_end_to_end(estep, mstep):
    """Whole fits from given centres: centres, objectives, iterations, labels, inertia."""
    X, w, X_dup, _, init = _weighted_and_duplicated()
    kwargs = dict(seed=init, estep=estep, mstep=mstep, tol=1e-6, max_iter=50)
    a = Clusterer(N_CLUSTERS, **kwargs).fit(X, sample_weight=w)
    b = Clusterer(N_CLUSTERS, **kwargs).fit(X_dup)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose([h["objective"] for h in a.history_],
                               [h["objective"] for h in b.history_], rtol=1e-10)
    assert getattr(a, "sigma2_", 0) == pytest.approx(getattr(b, "sigma2_", 0), rel=1e-10)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)
    np.testing.assert_array_equal(a.labels_, b.labels_[:N_ROWS])
    assert a.score(X, sample_weight=w) == pytest.approx(b.score(X_dup), rel=1e-10)


@pytest.mark.parametrize("mstep", [HardMStep(), SoftMStep()], ids=["hard", "soft"])
@fixed_iterations
def test_scaling_all_weights_changes_only_the_objective_scale(mstep):
    X, init = _blobs()
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=len(X))
    a = Clusterer(N_CLUSTERS, seed=init, mstep=mstep, tol=0, max_iter=6).fit(X, sample_weight=w)
    b = Clusterer(N_CLUSTERS, seed=init, mstep=mstep, tol=0, max_iter=6).fit(
        X, sample_weight=3 * w)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-10, atol=1e-12)
    assert getattr(a, "sigma2_", 0) == pytest.approx(getattr(b, "sigma2_", 0), rel=1e-10)
    assert b.inertia_ == pytest.approx(3 * a.inertia_, rel=1e-10)
    assert b.objective_ == pytest.approx(3 * a.objective_, rel=1e-10)


# --- only the ratios of the weights matter ---------------------------------------------------

#: Exact rescalings (powers of two), from well below to well above 1.
POWERS_OF_TWO = (2.0 ** -60, 2.0 ** -20, 2.0 ** 20, 2.0 ** 100)
#: The presets that fit data in row chunks where they are (or on a coreset of them).
CHUNK_PRESETS = ("lloyd", "elkan", "minibatch", "nmbatch", "gmm", "var_kmeans_s", "var_gmm_s",
                 "lwcs_lloyd", "vc_gmm", "best_quality", "large_scale", "spherical_kmeans")
#: Small batches and prefixes, so that the mini-batch rules (relocation of starved
#: clusters, doubling of the prefix) decide within the few hundred rows.
_SMALL_BATCHES = {"minibatch": {"batch_size": 40}, "nmbatch": {"initial_batch": 30}}


def _scaled_weight_fits(name, make_data):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(360, 3)) + rng.randint(0, 6, size=(360, 1)) * 3.0
    w = rng.uniform(0.01, 0.3, size=len(X))  # votes below 1: no rule may count them as samples
    fits = []
    for scale in (1.0,) + POWERS_OF_TWO:
        model = getattr(presets, name)(8, random_state=0, max_iter=30,
                                       **_SMALL_BATCHES.get(name, {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(make_data(X), sample_weight=w * scale)
        fits.append(model)
    return fits


def _assert_same_fits(fits):
    first = fits[0]
    for fit in fits[1:]:
        assert fit.n_iter_ == first.n_iter_
        assert [h.get("batch_size") for h in fit.history_] == \
            [h.get("batch_size") for h in first.history_]
        np.testing.assert_array_equal(fit.cluster_centers_, first.cluster_centers_)


@pytest.mark.parametrize("name", PRESETS)
def test_weights_scaled_by_a_power_of_two_give_the_same_fit_bit_for_bit(name):
    """Every rule reads ratios of weights (no absolute threshold on a weight, no weight sum
    compared with a constant): weights times 2**-60 ... 2**100 fit the same centres."""
    _assert_same_fits(_scaled_weight_fits(name, lambda X: X))


@pytest.mark.parametrize("name", CHUNK_PRESETS)
def test_weights_scaled_by_a_power_of_two_give_the_same_fit_on_dask_chunks(name):
    dask = pytest.importorskip("dask")
    import dask.array as da
    with dask.config.set(scheduler="synchronous"):
        fits = _scaled_weight_fits(name, lambda X: da.from_array(X, chunks=(100, 3)))
    _assert_same_fits(fits)


def test_tiny_weights_move_mini_batch_centres():
    """Weights far below 1 (1e-30 each) move the centres of a mini-batch fit as weights
    about 1 do (a vote threshold used to be absolute, and froze them at the seeds)."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 2)) * 3 + rng.randint(0, 5, size=(300, 1)) * 4
    init = X[:10].copy()
    w = rng.uniform(0.1, 3, size=len(X))
    for name in ("minibatch", "nmbatch"):
        ones = getattr(presets, name)(10, seed=init, random_state=0).fit(X, sample_weight=w)
        tiny = getattr(presets, name)(10, seed=init, random_state=0).fit(
            X, sample_weight=w * 1e-30)
        assert not np.array_equal(tiny.cluster_centers_, init)
        np.testing.assert_allclose(tiny.cluster_centers_, ones.cluster_centers_, rtol=1e-10)
