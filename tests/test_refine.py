"""Refiners: breathing never returns worse centres than the run it refines, composes with the
E-steps, reducers and schedules, keeps weights equivalent to repetition, and the driver keeps
the iterations behind the centres it returns."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.cluster import KMeans

from clusterkit import (AFKMC2, LWCS, Breathing, Clusterer, FitState, FittedSeeder, NoRefinement,
                        PartialEStep, Refiner, YinyangEStep, presets)
from clusterkit.datasets import make_gaussian_blobs
from clusterkit.metrics import quantization_error
from clusterkit.refine.breathing import cluster_statistics, fewer_moves


@pytest.fixture(scope="module")
def blobs():
    return make_gaussian_blobs(3000, 4, 40, cluster_std=0.5, random_state=0)[0]


# every kind of composition breathing refines: exact, bounded, variational, soft, on a
# coreset, with mini-batches
COMPOSITIONS = {
    "lloyd": lambda C, **kw: presets.lloyd(C, **kw),
    "elkan": lambda C, **kw: presets.elkan(C, **kw),
    "lwcs_lloyd": lambda C, **kw: presets.lwcs_lloyd(C, coreset_size=1024, **kw),
    "card": lambda C, **kw: Clusterer(C, seed=AFKMC2(), reduce=LWCS(1024),
                                      estep=PartialEStep(G=5), **kw),
    "var_kmeans_s": lambda C, **kw: presets.var_kmeans_s(C, **kw),
    "vc_gmm": lambda C, **kw: presets.vc_gmm(C, coreset_size=1024, **kw),
    "minibatch": lambda C, **kw: presets.minibatch(C, batch_size=256, max_passes=2, **kw),
}


@pytest.mark.parametrize("name", list(COMPOSITIONS))
@pytest.mark.parametrize("seed", [0, 1])
def test_breathing_never_returns_worse_centres(blobs, name, seed):
    X = blobs
    plain = COMPOSITIONS[name](40, random_state=seed).fit(X)
    refined = COMPOSITIONS[name](40, random_state=seed, refine=Breathing(m=3)).fit(X)
    log = refined.refinement_log_
    assert log and all(r["kept"] == (r["objective"] < r["objective_before"] * (1 - 1e-4))
                       for r in log)
    # each round starts from the best so far: the kept objectives only go down
    kept = [r["objective"] for r in log if r["kept"]]
    assert kept == sorted(kept, reverse=True)
    current = log[0]["objective_before"]
    for r in log:
        assert r["objective_before"] == current
        current = r["objective"] if r["kept"] else current
    if name in ("lloyd", "elkan", "var_kmeans_s", "minibatch"):  # the fit's data are X
        # the same seeds: breathing started from the plain fit's centres
        np.testing.assert_allclose(log[0]["objective_before"], plain.inertia_, rtol=1e-9)
        assert refined.inertia_ <= plain.inertia_ * (1 + 1e-12)
        np.testing.assert_allclose(refined.inertia_,
                                   min([plain.inertia_] + kept), rtol=1e-9)
    assert refined.cost_["refinement"] > 0 and "refinement" not in plain.cost_
    assert refined.seconds_["refinement"] > 0 and "refinement" not in plain.seconds_


def test_breathing_escapes_a_poor_local_minimum(blobs):
    X = blobs
    start = X[np.argsort(X[:, 0])[:40]]  # every seed in one corner
    plain = presets.lloyd(40, seed=start).fit(X)
    refined = presets.lloyd(40, seed=start, refine=Breathing(), random_state=0).fit(X)
    assert refined.inertia_ < 0.8 * plain.inertia_
    kmeans = KMeans(40, n_init=1, random_state=0).fit(X)
    assert refined.inertia_ <= 1.01 * kmeans.inertia_


def test_history_is_the_path_to_the_returned_centres(blobs):
    X = blobs
    model = presets.lloyd(40, random_state=0, refine=Breathing(m=3)).fit(X)
    rounds = [h.get("refinement_round", 0) for h in model.history_]
    kept = {r["round"] for r in model.refinement_log_ if r["kept"]}
    assert rounds == sorted(rounds) and rounds[0] == 0
    assert set(rounds) - {0} <= kept and max(rounds) == max(kept, default=0)
    assert model.n_iter_ == model.n_steps_ == len(model.history_)
    # the kept iterations end at a fixed point: their last labels are the final ones
    assert model.history_[-1]["n_changed"] == 0
    np.testing.assert_array_equal(model.labels_, model.predict(X))
    np.testing.assert_allclose(model.inertia_, quantization_error(X, model.cluster_centers_),
                               rtol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_weights_equal_repetition(blobs, dtype):
    X = blobs[:997].astype(dtype)
    counts = np.random.RandomState(0).randint(1, 4, X.shape[0])
    start = X[:25].copy()
    weighted = presets.lloyd(25, seed=start, random_state=0, refine=Breathing(m=2))
    weighted.fit(X, sample_weight=counts.astype(dtype))
    repeated = presets.lloyd(25, seed=start, random_state=0, refine=Breathing(m=2))
    repeated.fit(np.repeat(X, counts, axis=0))
    assert weighted.cluster_centers_.dtype == dtype
    assert [r["kept"] for r in weighted.refinement_log_] == [
        r["kept"] for r in repeated.refinement_log_]
    rtol = 1e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(weighted.cluster_centers_, repeated.cluster_centers_,
                               rtol=rtol, atol=rtol)
    np.testing.assert_allclose(weighted.inertia_, repeated.inertia_, rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_cluster_statistics_match_numpy(blobs, dtype, n_threads):
    X = np.ascontiguousarray(blobs[:501], dtype=dtype)
    w = np.linspace(0.5, 2.0, 501).astype(dtype)
    centers = np.ascontiguousarray(X[::71][:7])
    state = FitState(n_clusters=7, n_features=4, random_state=np.random.RandomState(0),
                     n_threads=n_threads)
    error, utility, weight, objective = cluster_statistics(X, w, centers, state)
    d2 = ((X[:, None, :].astype(np.float64) - centers[None]) ** 2).sum(-1)
    nearest, two = d2.argmin(1), np.sort(d2, 1)
    rtol = 1e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(error, np.bincount(nearest, w * two[:, 0], 7), rtol=rtol,
                               atol=rtol * two[:, 0].max())
    np.testing.assert_allclose(utility, np.bincount(nearest, w * (two[:, 1] - two[:, 0]), 7),
                               rtol=rtol, atol=rtol * two[:, 1].max())
    np.testing.assert_allclose(weight, np.bincount(nearest, w, 7), rtol=1e-6)
    np.testing.assert_allclose(objective, (w * two[:, 0]).sum(), rtol=rtol)
    assert state.meter.cost["refinement"] == 501 * 7


def test_n_init_keeps_the_refinement_log_of_the_kept_run(blobs):
    model = presets.lloyd(40, n_init=3, random_state=0, refine=Breathing(m=2)).fit(blobs)
    log = model.refinement_log_
    final = min([log[0]["objective_before"]] + [r["objective"] for r in log if r["kept"]])
    np.testing.assert_allclose(model.inertia_, final, rtol=1e-9)


def test_a_run_ended_by_max_iter_is_not_refined(blobs):
    with pytest.warns(Warning, match="did not converge"):
        model = presets.lloyd(40, max_iter=1, random_state=0, refine=Breathing()).fit(blobs)
    assert model.refinement_log_ == [] and "refinement" not in model.cost_


def test_no_refinement_is_the_default_and_changes_nothing(blobs):
    plain = presets.lloyd(40, random_state=0).fit(blobs)
    none = presets.lloyd(40, random_state=0, refine=NoRefinement()).fit(blobs)
    np.testing.assert_array_equal(plain.cluster_centers_, none.cluster_centers_)
    assert not hasattr(none, "refinement_log_") and plain.cost_ == none.cost_


def test_shortcut_and_composition_record(blobs):
    model = Clusterer(40, refine="breathing", random_state=0)
    assert model._strategies(blobs, blobs.mean(0)).refine == Breathing()
    assert Clusterer(4, refine="none")._strategies(blobs, blobs.mean(0)).refine == NoRefinement()


@pytest.mark.parametrize("params, match", [
    ({"m": 0}, r"^Breathing: m must be an integer >= 1; got 0\.$"),
    ({"m": 1.5}, r"^Breathing: m must be an integer >= 1; got 1\.5\.$"),
    ({"max_rounds": 0}, r"^Breathing: max_rounds must be None or an integer >= 1; got 0\.$"),
    ({"tol": -0.1}, r"^Breathing: tol must be a number in \[0, 1\); got -0\.1\.$"),
    ({"tol": 1.0}, r"^Breathing: tol must be a number in \[0, 1\); got 1\.0\.$"),
    ({"tol": "a"}, r"^Breathing: tol must be a number in \[0, 1\); got 'a'\.$")])
def test_bad_parameters_are_refused(blobs, params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        presets.lloyd(4, refine=Breathing(**params)).fit(blobs[:100])


def test_refused_compositions(blobs):
    with pytest.raises(ValueError, match="Unknown refine"):
        Clusterer(4, refine="split").fit(blobs[:100])
    with pytest.raises(TypeError, match="refine must be"):
        Clusterer(4, refine=3).fit(blobs[:100])
    with pytest.raises(ValueError, match="cannot refine the Laplacian K-modes"):
        presets.slk_bo(4, refine=Breathing(), graph=None).fit(blobs[:100])
    with pytest.raises(AttributeError) as error:
        presets.lloyd(4, refine=Breathing()).partial_fit(blobs[:100])
    assert "partial_fit cannot refine" in str(error.value.__cause__)
    with pytest.raises(ValueError, match="off the unit sphere"):
        presets.spherical_kmeans(4, refine=Breathing()).fit(blobs[:100])
    with pytest.raises(TypeError, match="Breathing cannot take sparse"):
        presets.lloyd(4, refine=Breathing()).fit(sp.csr_matrix(blobs[:100]))


def test_a_refiner_returning_another_run_is_refused(blobs):
    from clusterkit import Run

    class Stranger(Refiner):
        def refine(self, X, sample_weight, run, iterate, state):
            return Run(run.centers.shape[0], X.shape[0])

    with pytest.raises(ValueError, match="neither the run it was given"):
        presets.lloyd(4, refine=Stranger()).fit(blobs[:100])


def test_a_refiner_written_for_centres_is_told_of_the_run(blobs):
    """A refiner of the contract before runs were objects (centres in, centres out) fails
    with a message that names the change, whatever it does with its argument first."""
    class Jitter(Refiner):
        def refine(self, X, sample_weight, centers, iterate, state):
            return iterate(centers + 0.3)

    class Counts(Refiner):
        def refine(self, X, sample_weight, centers, iterate, state):
            m = centers.shape[0] // 2
            return iterate(np.roll(centers, m, axis=0))

    class Echo(Refiner):
        def refine(self, X, sample_weight, centers, iterate, state):
            return np.asarray(centers)

    for refiner in (Jitter(), Counts(), Echo()):
        with pytest.raises((TypeError, AttributeError), match="receives and returns a Run"):
            presets.lloyd(4, refine=refiner).fit(blobs[:100])


def test_a_refiner_may_return_an_earlier_iterate_result(blobs):
    X = blobs

    class KeepFirst(Refiner):
        """Two rounds from jittered centres; returns the first round's result."""

        def refine(self, X, sample_weight, run, iterate, state):
            first = iterate(run.centers + 0.3)
            iterate(run.centers - 0.3)
            state.run.refinement_log += [{"round": 1, "objective": 0.0, "kept": True},
                                         {"round": 2, "objective": 0.0, "kept": False}]
            return first

    model = presets.lloyd(40, random_state=0, refine=KeepFirst()).fit(X)
    assert {h.get("refinement_round", 0) for h in model.history_} == {0, 1}
    # the labels and objective are those of the first round's iterations
    np.testing.assert_array_equal(model.labels_, model.predict(X))
    assert model.history_[-1]["n_changed"] == 0


def test_fitted_seeder_runs_the_pilot_on_the_fit_data(blobs):
    pilot = presets.lwcs_lloyd(3, coreset_size=512, refine=Breathing(m=2))
    model = presets.elkan(40, seed=FittedSeeder(pilot), random_state=0).fit(blobs)
    again = presets.elkan(40, seed=FittedSeeder(pilot), random_state=0).fit(blobs)
    np.testing.assert_array_equal(model.cluster_centers_, again.cluster_centers_)
    assert model.cost_["seeding"] > 0 and pilot.get_params()["n_clusters"] == 3  # cloned
    # a scikit-learn pilot works too (its work is not counted)
    sk = presets.lloyd(40, seed=FittedSeeder(KMeans(2, n_init=1)), random_state=0).fit(blobs)
    assert sk.cost_["seeding"] == 0 and sk.cluster_centers_.shape == (40, 4)
    with pytest.raises(TypeError, match="n_clusters parameter"):
        presets.lloyd(4, seed=FittedSeeder("kmeans")).fit(blobs[:100])


def test_best_quality_beats_restarted_lloyd(blobs):
    X = blobs
    best = presets.best_quality(40, random_state=0).fit(X)
    restarts = KMeans(40, n_init=10, random_state=0).fit(X)
    assert best.inertia_ <= restarts.inertia_ * (1 + 1e-6)
    assert best.refinement_log_ and best.cost_["seeding"] > 0


def test_check_estimator_with_breathing():
    from sklearn.utils.estimator_checks import check_estimator
    reason = "the random seeding depends on the number of rows, not only on the weights"
    check_estimator(Clusterer(refine="breathing"), expected_failed_checks={
        "check_sample_weight_equivalence_on_dense_data": reason})


def test_a_callback_stop_during_refinement_ends_the_fit_with_the_runs_centres(blobs):
    plain = presets.lloyd(40, random_state=0).fit(blobs)
    n_steps = len(plain.history_)

    def stop_in_the_first_round(info):
        return info["iteration"] == 2 and len(calls) > n_steps

    calls = []
    model = presets.lloyd(40, random_state=0, refine=Breathing(),
                          callback=lambda info: calls.append(info) or
                          stop_in_the_first_round(info)).fit(blobs)
    assert not model.converged_ and len(calls) == n_steps + 2
    np.testing.assert_array_equal(model.cluster_centers_, plain.cluster_centers_)
    assert len(model.history_) == n_steps


def _rounds(model):
    return [(r["moved"], r["objective"], r["kept"]) for r in model.refinement_log_]


def test_breathing_budget_counts_distance_evaluations_so_results_repeat(blobs):
    def fit(**kw):
        return presets.lloyd(40, random_state=0, refine=Breathing(m=4, tol=0, **kw)).fit(blobs)

    full = fit(max_rounds=12)
    log = full.refinement_log_
    assert len(log) > 3
    # the log records the fit's evaluations and seconds after each round
    evals = [r["distance_evals"] for r in log]
    assert evals == sorted(evals) and evals[0] > 0
    assert [r["seconds"] for r in log] == sorted(r["seconds"] for r in log)
    # a budget's rounds are a prefix of the unlimited rounds, the same on every fit
    before = log[0]["distance_evals"] - (log[1]["distance_evals"] - log[0]["distance_evals"])
    budget = (log[2]["distance_evals"] - before) / before
    small = fit(max_rounds=12, budget=budget)
    again = fit(max_rounds=12, budget=budget)
    assert 0 < len(small.refinement_log_) < len(log)
    assert _rounds(small) == _rounds(full)[:len(small.refinement_log_)] == _rounds(again)
    np.testing.assert_array_equal(small.cluster_centers_, again.cluster_centers_)
    spent = small.refinement_log_[-1]["distance_evals"]
    first = small.refinement_log_[0]["distance_evals"]
    # no round started that the last round's cost said would pass the budget
    assert len(small.refinement_log_) == 1 or spent - first <= budget * evals[0]
    # max_rounds gives the same prefix
    assert _rounds(fit(max_rounds=2)) == _rounds(full)[:2]


def test_breathing_zero_budgets_start_no_round(blobs):
    plain = presets.lloyd(40, random_state=0).fit(blobs)
    for kw in ({"budget": 0}, {"time_budget": 0}):
        model = presets.lloyd(40, random_state=0, refine=Breathing(**kw)).fit(blobs)
        assert model.refinement_log_ == []
        np.testing.assert_array_equal(model.cluster_centers_, plain.cluster_centers_)


def test_a_budget_continues_past_the_first_cycle_in_randomised_cycles(blobs):
    def fit(**kw):
        return presets.lloyd(40, random_state=0, refine=Breathing(m=3, tol=0, **kw)).fit(blobs)

    unlimited = fit()  # without a budget the rounds end with the first cycle (m = 0)
    first = _rounds(unlimited)
    last = unlimited.refinement_log_[-1]
    assert last["moved"] == 1 and not last["kept"]
    generous = fit(budget=1e9, max_rounds=len(first) + 12)
    log = generous.refinement_log_
    # the same first cycle, then a new one from m = 3 again, up to max_rounds
    assert _rounds(generous)[:len(first)] == first
    assert len(log) == len(first) + 12 and log[len(first)]["moved"] == 3
    for before, after in zip(log, log[1:]):  # every cycle follows the same schedule
        assert after["moved"] == (before["moved"] if before["kept"]
                                  else fewer_moves(before["moved"]) or 3)
    assert generous.inertia_ <= unlimited.inertia_
    assert all(r["objective"] <= r["objective_before"] for r in log if r["kept"])
    # the later cycles draw their moves from the fit's random state: a refit repeats them
    again = fit(budget=1e9, max_rounds=len(first) + 12)
    assert _rounds(again) == _rounds(generous)
    np.testing.assert_array_equal(again.cluster_centers_, generous.cluster_centers_)


def test_more_budget_never_ends_at_a_higher_error(blobs):
    def fit(budget):
        return presets.lloyd(40, random_state=1, refine=Breathing(
            m=4, tol=0, budget=budget, max_rounds=None)).fit(blobs)

    fits = [fit(budget) for budget in (0.5, 1.0, 2.0, 4.0)]
    for small, large in zip(fits, fits[1:]):
        # a larger budget runs the smaller one's rounds, then more
        assert _rounds(large)[:len(small.refinement_log_)] == _rounds(small)
        assert large.inertia_ <= small.inertia_
    assert len(fits[-1].refinement_log_) > len(fits[0].refinement_log_)


def test_randomised_cycles_pair_moved_centres_with_partners_by_error():
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(20, 3))
    error = np.r_[np.zeros(10), np.arange(1.0, 11.0)]
    utility = np.arange(20.0)
    moved, partners = Breathing._pairs(centers, error, utility, 3)
    assert set(partners) == {19, 18, 17} and len(moved) <= 3
    for seed in range(20):
        moved, partners = Breathing._pairs(centers, error, utility, 3,
                                           np.random.default_rng(seed))
        assert set(moved) <= set(range(6))  # among the 2 m least useful
        assert set(partners) <= set(range(10, 20))  # only clusters with an error
        assert not set(moved) & set(partners) and len(set(partners)) == len(partners)


@pytest.mark.parametrize("kw, error", [({"budget": -1.0}, ValueError),
                                       ({"time_budget": -0.5}, ValueError),
                                       ({"budget": "x"}, TypeError)])
def test_breathing_refuses_bad_budgets(blobs, kw, error):
    with pytest.raises(error, match="budget must be None or a number >= 0"):
        presets.lloyd(4, refine=Breathing(**kw)).fit(blobs[:200])


def test_a_rejected_round_halves_the_moves_down_to_five_then_counts_down(blobs):
    assert [fewer_moves(m) for m in (50, 25, 12, 11, 10, 9, 5, 1)] == [25, 12, 6, 5, 5, 8, 4, 0]
    model = presets.lloyd(40, random_state=0, refine=Breathing(m=16, tol=0.5)).fit(blobs)
    moved = [r["moved"] for r in model.refinement_log_]  # tol=0.5: every round rejected
    assert not any(r["kept"] for r in model.refinement_log_)
    assert moved == [16, 8, 7, 6, 5, 4, 3, 2, 1]
    kept = presets.lloyd(40, random_state=0, refine=Breathing(m=16, tol=0)).fit(blobs)
    log = kept.refinement_log_
    for before, after in zip(log, log[1:]):  # a kept round's count is moved again
        assert after["moved"] == (before["moved"] if before["kept"]
                                  else fewer_moves(before["moved"]))


def test_breathing_polish_runs_the_kept_centres_to_a_tighter_tolerance():
    X = np.random.RandomState(0).uniform(size=(3000, 2))  # slow to converge

    def fit(**kw):
        return presets.lloyd(40, random_state=0, tol=1e-2,
                             refine=Breathing(m=4, tol=0, max_rounds=6, **kw)).fit(X)

    plain, polished = fit(), fit(polish_tol=0.0)
    # the same rounds, then one more run from the kept centres, logged as moving none
    assert _rounds(polished)[:-1] == _rounds(plain)
    last = polished.refinement_log_[-1]
    assert last["moved"] == 0 and last["kept"]
    log = plain.refinement_log_
    assert last["objective"] <= last["objective_before"] == min(
        [r["objective"] for r in log if r["kept"]], default=log[0]["objective_before"])
    assert polished.inertia_ < plain.inertia_
    # tol=0: it ran until no label changed, past the fit's tol=1e-2
    steps = [h for h in polished.history_ if h.get("refinement_round") == last["round"]]
    assert len(steps) > 1 and steps[-1]["n_changed"] == 0
    np.testing.assert_array_equal(polished.labels_, polished.predict(X))
    with pytest.raises(ValueError, match="polish_tol must be None or a number in"):
        fit(polish_tol=1.5)


def test_best_quality_defaults_follow_n_clusters_and_the_budget(blobs):
    assert presets.best_quality(40).refine.get_params() == {
        "m": 5, "tol": 0, "max_rounds": None, "budget": 0.75, "time_budget": None,
        "carry": True, "polish_tol": None}
    assert presets.best_quality(1000).refine.m == 100
    assert isinstance(presets.best_quality(40).estep, YinyangEStep)
    refine = presets.best_quality(40, budget=None, time_budget=3.0, max_rounds=7, m=2).refine
    assert (refine.budget, refine.time_budget, refine.max_rounds, refine.m) == (None, 3.0, 7, 2)
    model = presets.best_quality(40, coreset_size=1024, random_state=0, budget=0.5).fit(blobs)
    again = presets.best_quality(40, coreset_size=1024, random_state=0, budget=0.5).fit(blobs)
    np.testing.assert_array_equal(model.cluster_centers_, again.cluster_centers_)
    assert _rounds(model) == _rounds(again)


def test_n_init_refines_every_run_before_the_runs_compete():
    """With ``n_init > 1`` each run is refined, then the runs compete on their final
    objective: the fit is no worse than its first run refined, and that run no worse than
    itself unrefined. The rounds draw from the fit's random state, so the second run starts
    elsewhere than without a refiner (here the unrefined fit's second run is the better)."""
    X = np.random.RandomState(0).normal(size=(120, 40)).astype(np.float32)

    def fit(refine, n_init):
        return Clusterer(2, estep="elkan", refine=refine, n_init=n_init,
                         random_state=0).fit(X)

    refined, refined_first = fit(Breathing(m=1), 2), fit(Breathing(m=1), 1)
    plain_first = fit(None, 1)
    assert refined.objective_ <= refined_first.objective_
    assert quantization_error(X, refined_first.cluster_centers_) <= quantization_error(
        X, plain_first.cluster_centers_) * (1 + 1e-6)
