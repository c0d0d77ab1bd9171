"""Mini-batch schedules (MiniBatch, NestedDoubling), their M-step rules and partial_fit."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

from clusterkit import (LWCS, Clusterer, ElkanEStep, HardMStep, MiniBatch, NestedDoubling,
                        PartialEStep, Schedule, presets)

from .test_elkan import _CheckedElkan


@pytest.fixture(scope="module")
def blobs():
    X, _ = make_blobs(4000, 3, centers=12, cluster_std=1.5, random_state=0)
    return X


class _VoteChecker(HardMStep):
    """After every update: the running sums are those recomputed from the current labels of
    the visited rows (one sample, one vote)."""

    def __init__(self, checks=None):
        self.checks = checks

    def update(self, X, sample_weight, assignment, centers, state):
        centers_new = super().update(X, sample_weight, assignment, centers, state)
        sums = state.run.mstep_state
        rows = np.arange(state.run.n_samples)[state.run.rows]
        labels = state.run.labels.copy()
        labels[rows] = assignment.labels
        visited = labels >= 0
        # the run works in the schedule's order of the rows
        Xall, wall = self.checks["X"][state.order], self.checks["w"][state.order]
        C = centers.shape[0]
        expected = np.zeros((C, Xall.shape[1]))
        np.add.at(expected, labels[visited], wall[visited, None] * Xall[visited])
        weight = np.bincount(labels[visited], wall[visited], minlength=C)
        np.testing.assert_allclose(sums.sums, expected, rtol=1e-9, atol=1e-8)
        np.testing.assert_allclose(sums.weight, weight, rtol=1e-12, atol=1e-9)
        sse = np.bincount(labels[visited], wall[visited] * sums.last_dist2[visited],
                          minlength=C)
        np.testing.assert_allclose(sums.sse, sse, rtol=1e-9, atol=1e-6)
        self.checks["n"] += 1
        return centers_new


def test_nmbatch_running_sums_are_one_vote_per_sample(blobs):
    w = np.random.RandomState(1).uniform(0.5, 2, len(blobs))
    # the driver centres the data: check against the centred copy it clusters
    checks = {"X": blobs - blobs.mean(axis=0), "w": w, "n": 0}
    km = Clusterer(12, estep=ElkanEStep(), mstep=_VoteChecker(checks),
                   schedule=NestedDoubling(initial_batch=500, rho=10.0), random_state=0,
                   max_iter=60)
    km.fit(blobs, sample_weight=w)
    assert checks["n"] == km.n_iter_ >= 5


def test_elkan_bounds_stay_valid_under_nested_batches(blobs):
    runs = []
    Clusterer(12, estep=_CheckedElkan(checks=runs), schedule=NestedDoubling(300, rho=5.0),
              random_state=0, max_iter=40).fit(blobs)
    assert len(runs) >= 5 and min(runs) < len(blobs)


@pytest.mark.filterwarnings("ignore:The fit did not converge")
def test_rho_infinity_never_doubles_and_rho_zero_doubles_every_step(blobs):
    never = Clusterer(12, schedule=NestedDoubling(400, rho=np.inf), estep="elkan", tol=0,
                      random_state=0, max_iter=15).fit(blobs)
    assert {h["batch_size"] for h in never.history_} == {400}
    always = presets.nmbatch(12, initial_batch=250, rho=0.0, random_state=0, tol=0,
                             max_iter=500).fit(blobs)
    sizes = [h["batch_size"] for h in always.history_]
    assert sizes[:5] == [250, 500, 1000, 2000, 4000]
    # it ends at a fixed point of Lloyd's algorithm: a Lloyd step changes nothing
    assert always.converged_ and always.history_[-1]["n_changed"] == 0
    with pytest.warns(ConvergenceWarning, match="did not converge"):  # one step only
        lloyd = Clusterer(12, seed=always.cluster_centers_, tol=0, max_iter=1).fit(blobs)
    np.testing.assert_array_equal(lloyd.labels_, always.labels_)
    np.testing.assert_allclose(lloyd.cluster_centers_, always.cluster_centers_, rtol=1e-9)


def test_the_doubling_rule_follows_eq_4(blobs):
    """Every doubling happens exactly when min_j sigma_C(j) / p(j) > rho, with sigma_C the
    centre's standard error (eq. 4) or the cluster's deviation (sqrt(v) times larger)."""
    for spread in ("standard_error", "deviation"):
        decisions = []

        class Recorder(NestedDoubling):
            def _should_double(self, state):
                double = super()._should_double(state)
                channel = state.run.channel
                v, sse, p = channel.cluster_weight, channel.cluster_sse, state.run.center_shift
                moved = (p >= 1e-10) & (v > 1)
                sigma = np.sqrt(sse[moved] / (v[moved] - 1))
                if spread == "standard_error":
                    sigma /= np.sqrt(v[moved])
                expected = not moved.any() or (sigma / p[moved]).min() > self.rho
                decisions.append((double, expected))
                return double

        km = Clusterer(12, estep="elkan", schedule=Recorder(200, rho=2.0, spread=spread),
                       random_state=0, tol=0, max_iter=300).fit(blobs)
        assert km.converged_ and any(double for double, _ in decisions)
        assert all(double == expected for double, expected in decisions)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_partial_fit_equals_minibatch_over_the_same_batches(blobs, dtype, weighted):
    X = blobs.astype(dtype)
    w = np.random.RandomState(2).uniform(0.5, 2, len(X)).astype(dtype) if weighted else None
    batches = [np.arange(i, min(i + 512, len(X))) for i in range(0, len(X), 512)]

    class Given(Schedule):
        center_update = "running"

        def batches(self, n_samples, state):
            yield from batches

        def should_stop(self, state, tol):
            return False

    init = X[:12].copy()
    fitted = Clusterer(12, seed=init, schedule=Given()).fit(X, sample_weight=w)
    streamed = Clusterer(12, seed=init)
    for rows in batches:
        streamed.partial_fit(X[rows], sample_weight=None if w is None else w[rows])
    assert streamed.cluster_centers_.dtype == dtype and streamed.n_iter_ == len(batches)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(streamed.cluster_centers_, fitted.cluster_centers_, rtol=tol,
                               atol=tol)
    assert streamed.labels_.shape == (len(batches[-1]),)
    assert streamed.cost_["estep"] == fitted.cost_["estep"]


class _GivenMiniBatch(MiniBatch):
    """A MiniBatch whose fit steps on given rows, in order, and never stops early: the fit
    a stream of those batches should equal."""

    def __init__(self, rows=(), learning_rate="count", reassignment_ratio=0.01):
        super().__init__(learning_rate=learning_rate, reassignment_ratio=reassignment_ratio)
        self.rows = rows

    def batches(self, n_samples, state):
        yield from self.rows

    def should_stop(self, state, tol):
        return False


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_partial_fit_runs_the_schedules_learning_rate(blobs, dtype):
    """partial_fit streams with the estimator's own MiniBatch: "adaptive" differs from
    "count", and equals a fit whose schedule steps on the same batches in the same order."""
    X = blobs.astype(dtype)
    batches = [np.arange(i, min(i + 300, len(X))) for i in range(0, len(X), 300)]
    init = X[:12].copy()

    def stream(learning_rate):
        km = Clusterer(12, seed=init, schedule=MiniBatch(learning_rate=learning_rate),
                       random_state=0)
        for rows in batches:
            km.partial_fit(X[rows])
        return km

    adaptive, count = stream("adaptive"), stream("count")
    fitted = Clusterer(12, seed=init, random_state=0, max_iter=1000,
                       schedule=_GivenMiniBatch(batches, "adaptive")).fit(X)
    assert fitted.n_steps_ == adaptive.n_iter_ == len(batches)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(adaptive.cluster_centers_, fitted.cluster_centers_, rtol=tol,
                               atol=tol)
    assert np.abs(adaptive.cluster_centers_ - count.cluster_centers_).max() > 1e-2
    assert [h["n_relocated"] for h in adaptive.history_] == [
        h["n_relocated"] for h in fitted.history_]


def test_partial_fit_adaptive_steps_by_hand():
    """Two batches of the adaptive rule computed by hand: each centre moves towards its
    batch mean by sqrt(W_j / W)."""
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [20.0], [21.0], [12.0]])
    w = np.array([1.0, 2.0, 1.0, 1.0, 3.0, 1.0, 1.0, 4.0])
    centers = np.array([[0.0], [10.0]])
    km = Clusterer(2, seed=centers.copy(), schedule=MiniBatch(learning_rate="adaptive"))
    for rows in (slice(0, 5), slice(5, 8)):
        km.partial_fit(X[rows], sample_weight=w[rows])
        labels = np.argmin(np.abs(X[rows] - centers.T), axis=1)
        for j in range(2):
            mine = labels == j
            if mine.any():
                rate = np.sqrt(w[rows][mine].sum() / w[rows].sum())
                mean = np.average(X[rows][mine, 0], weights=w[rows][mine])
                centers[j] = (1 - rate) * centers[j] + rate * mean
        np.testing.assert_allclose(km.cluster_centers_, centers, rtol=1e-12)


def test_partial_fit_honours_reassignment_ratio(blobs):
    """Starved centres move by the estimator's reassignment_ratio, not a default's."""
    def relocations(ratio):
        km = Clusterer(12, seed=blobs[:12].copy(), random_state=0,
                       schedule=MiniBatch(reassignment_ratio=ratio))
        for i in range(0, len(blobs), 200):
            km.partial_fit(blobs[i:i + 200])
        return sum(h["n_relocated"] for h in km.history_)

    assert relocations(0.0) < relocations(0.5)


def test_partial_fit_streams_full_batches_as_minibatch(blobs):
    """schedule="full" (the default) streams as MiniBatch() with its defaults."""
    def stream(schedule):
        km = Clusterer(12, seed=blobs[:12].copy(), schedule=schedule, random_state=0)
        for i in range(0, len(blobs), 500):
            km.partial_fit(blobs[i:i + 500])
        return km.cluster_centers_

    np.testing.assert_array_equal(stream("full"), stream(MiniBatch()))


@pytest.mark.parametrize("learning_rate", ["count", "adaptive"])
def test_partial_fit_steps_through_a_call_in_batches_of_batch_size(blobs, learning_rate):
    """One call of 3.5 batch_size rows runs the four steps that four calls would."""
    X = blobs[:700]
    schedule = MiniBatch(batch_size=200, learning_rate=learning_rate)
    whole = Clusterer(12, seed=X[:12].copy(), schedule=schedule, random_state=0)
    whole.partial_fit(X)
    parts = Clusterer(12, seed=X[:12].copy(), schedule=schedule, random_state=0)
    for i in range(0, 700, 200):
        parts.partial_fit(X[i:i + 200])
    assert whole.n_iter_ == parts.n_iter_ == 4
    assert [h["batch_size"] for h in whole.history_] == [200, 200, 200, 100]
    np.testing.assert_allclose(whole.cluster_centers_, parts.cluster_centers_, rtol=1e-12,
                               atol=1e-12)


def test_partial_fit_reports_the_schedules_stopping_rule_in_converged_(blobs):
    """center_tol and max_no_improvement do not end a stream; converged_ says whether a fit
    would have stopped at the call's last step."""
    def stream(schedule):
        km = Clusterer(12, seed=blobs[:12].copy(), schedule=schedule, random_state=0)
        flags = []
        for _ in range(3):
            for i in range(0, len(blobs), 500):
                flags.append(km.partial_fit(blobs[i:i + 500]).converged_)
        return flags

    assert stream(MiniBatch(center_tol=1e6))[-1]  # every step settles at once
    assert not any(stream(MiniBatch(center_tol=0.0, max_no_improvement=None)))
    patient, impatient = stream(MiniBatch(max_no_improvement=1000)), stream(
        MiniBatch(max_no_improvement=1))
    assert not any(patient) and any(impatient)


def test_partial_fit_refuses_a_fraction_of_a_pass(blobs):
    with pytest.raises(ValueError, match="max_passes=0.5 stops a fit within its first pass"):
        Clusterer(5, schedule=MiniBatch(max_passes=0.5)).partial_fit(blobs)
    Clusterer(5, schedule=MiniBatch(max_passes=1)).partial_fit(blobs)  # a stream visits once


def test_partial_fit_refuses_weighted_sampling(blobs):
    with pytest.raises(ValueError, match="sampling='weighted' draws each batch's rows in "
                                         "proportion to their weight from all the data; a "
                                         "partial_fit stream takes the caller's rows"):
        Clusterer(5, schedule=MiniBatch(sampling="weighted")).partial_fit(blobs)


@pytest.mark.parametrize("make", [lambda: presets.minibatch(8, random_state=0),
                                  lambda: presets.lloyd(8, random_state=0),
                                  lambda: presets.elkan(8, random_state=0)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_partial_fit_after_fit_takes_any_batch_size(blobs, make, dtype):
    """A fitted model, and a stream that has centres, take batches smaller than n_clusters
    (scikit-learn's MiniBatchKMeans does); only a stream's first, seeding batch needs
    n_clusters rows."""
    X = blobs.astype(dtype)
    km = make().fit(X)
    for size in (3, 1, 2):
        km.partial_fit(X[:size])
        assert km.labels_.shape == (size,) and km.cluster_centers_.dtype == dtype
    stream = make().partial_fit(X[:100])
    stream.partial_fit(X[100:101])
    assert stream.n_iter_ == 2 and stream.labels_.shape == (1,)


def test_partial_fit_errors(blobs):
    km = Clusterer(5).partial_fit(blobs[:100])
    with pytest.raises(ValueError, match="X has 2 features, but Clusterer is expecting 3"):
        km.partial_fit(blobs[:10, :2])
    with pytest.raises(ValueError, match=r"^The first partial_fit batch has 3 rows, fewer "
                                         r"than n_clusters=5: a stream seeds its centres on "
                                         r"its first batch, which needs at least n_clusters "
                                         r"rows \(later batches may have any number of rows"):
        Clusterer(5).partial_fit(blobs[:3])
    stream = Clusterer(5).partial_fit(blobs[:5])
    stream.partial_fit(blobs[5:8])  # only the first batch needs n_clusters rows
    assert stream.labels_.shape == (3,)
    with pytest.raises(AttributeError) as info:
        Clusterer(5, mstep="soft").partial_fit(blobs)
    assert "partial_fit keeps running means" in str(info.value.__cause__)
    with pytest.raises(AttributeError, match="partial_fit needs an exact E-step"):
        Clusterer(5, estep=PartialEStep(G=2)).partial_fit(blobs)
    with pytest.raises(AttributeError, match="LWCS summarises a whole data set. Use fit, or "
                                             "reduce=None"):
        Clusterer(5, reduce=LWCS(1000)).partial_fit(blobs)
    for schedule in ("nmbatch", "sbe"):
        with pytest.raises(AttributeError, match="chooses its own batches from all the data. "
                                                 "Use fit, or schedule='minibatch'"):
            Clusterer(5, schedule=schedule).partial_fit(blobs)
    # fit starts afresh
    km.fit(blobs)
    assert km.n_iter_ == len(km.history_) and not hasattr(km, "_stream")


def _stream(n_batches, size, seed):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-10, 10, size=(30, 8))
    return [means[rng.randint(30, size=size)] + rng.normal(size=(size, 8))
            for _ in range(n_batches)]


@pytest.mark.parametrize("seed", [0, 1])
def test_partial_fit_matches_scikit_learn_on_the_same_stream(seed):
    from sklearn.cluster import MiniBatchKMeans
    batches = _stream(40, 500, seed)
    X = np.vstack(batches)
    init = batches[0][:20].copy()
    ours = Clusterer(20, seed=init, random_state=0)
    theirs = MiniBatchKMeans(20, init=init, n_init=1, random_state=0)
    for batch in batches:
        ours.partial_fit(batch)
        theirs.partial_fit(batch)
    ours_error, theirs_error = -ours.score(X), -theirs.score(X)
    # the same running means; the rules for starved centres differ (ours moved one on seed 1)
    assert ours_error <= 1.01 * theirs_error
    if not any(h["n_relocated"] for h in ours.history_):
        assert ours_error == pytest.approx(theirs_error, rel=1e-9)


@pytest.mark.parametrize("make", [lambda: presets.lloyd(20, random_state=0),
                                  lambda: presets.minibatch(20, batch_size=500, random_state=0),
                                  lambda: presets.lwcs_lloyd(20, coreset_size=2000,
                                                             random_state=0)])
def test_partial_fit_after_fit_continues_from_the_fitted_model(make):
    batches = _stream(30, 500, 3)
    X = np.vstack(batches)
    km = make().fit(X[:5000])
    before = -km.score(X)
    fitted_centers = km.cluster_centers_.copy()
    if km.reduce is not None:  # a reducer summarises a data set: streams refuse it
        km.set_params(reduce=None)
    for batch in batches[10:]:
        km.partial_fit(batch)
    # more evidence refines the fit: no worse on all the data, and the centres stayed close
    assert -km.score(X) <= before * (1 + 1e-3)
    moved = np.linalg.norm(km.cluster_centers_ - fitted_centers, axis=1)
    assert np.median(moved) < 0.5
    assert km.n_iter_ == 20 and km.labels_.shape == (500,)


@pytest.mark.parametrize("make", [
    lambda: presets.minibatch(12, batch_size=300, max_passes=2, random_state=0),
    lambda: presets.nmbatch(12, initial_batch=300, random_state=0),
])
def test_results_do_not_depend_on_threads(blobs, make):
    one = make().set_params(n_threads=1).fit(blobs)
    two = make().set_params(n_threads=2).fit(blobs)
    np.testing.assert_array_equal(one.cluster_centers_, two.cluster_centers_)
    np.testing.assert_array_equal(one.labels_, two.labels_)
    assert one.n_distance_evals_ == two.n_distance_evals_


def test_minibatch_runs_its_budget_in_passes(blobs):
    km = Clusterer(12, schedule=MiniBatch(batch_size=400, max_passes=3,
                                          max_no_improvement=None), random_state=0).fit(blobs)
    assert km.converged_ and km.n_iter_ == 3 and km.n_steps_ == 30
    assert km.history_[-1]["passes"] == pytest.approx(3.0)
    assert km.cost_["estep"] == 30 * 400 * 12
    lloyd = presets.lloyd(12, random_state=0).fit(blobs)
    assert km.inertia_ <= 1.05 * lloyd.inertia_


@pytest.mark.parametrize("schedule", [MiniBatch(batch_size=64, max_passes=3),
                                      NestedDoubling(initial_batch=64, rho=100.0)])
def test_starved_centres_are_moved(schedule):
    """All seeds in one blob of 20 well-separated blobs: the mini-batch fits still end with
    every cluster in use."""
    rng = np.random.RandomState(0)
    means = np.arange(20)[:, None] * np.array([[50.0, 0.0]])
    X = means[rng.randint(20, size=2000)] + rng.normal(size=(2000, 2))
    init = X[np.flatnonzero(np.abs(X[:, 0]) < 5)[:20]]
    km = Clusterer(20, seed=init, schedule=schedule, max_iter=2000, random_state=0).fit(X)
    assert len(np.unique(km.labels_)) == 20


@pytest.mark.parametrize("schedule,error,match", [
    (MiniBatch(batch_size=0), ValueError,
     r"^MiniBatch: batch_size must be an integer >= 1; got 0\.$"),
    (MiniBatch(batch_size=2.5), TypeError, r"batch_size must be an integer"),
    (MiniBatch(max_passes=0), ValueError,
     r"^MiniBatch: max_passes must be a number > 0; got 0\.$"),
    (NestedDoubling(initial_batch=0), ValueError,
     r"^NestedDoubling: initial_batch must be an integer >= 1 or 'auto'; got 0\.$"),
    (NestedDoubling(rho=-1.0), ValueError,
     r"^NestedDoubling: rho must be a number >= 0; got -1\.0\.$"),
    (NestedDoubling(spread="sd"), ValueError,
     r"^NestedDoubling: spread must be 'deviation' or 'standard_error'; got 'sd'\.$"),
])
def test_bad_parameters(blobs, schedule, error, match):
    with pytest.raises(error, match=match):
        Clusterer(4, schedule=schedule).fit(blobs)


@pytest.mark.parametrize("schedule", ["minibatch", "nmbatch", "sbe"])
def test_mini_batch_schedules_compose_with_the_partial_estep(blobs, schedule):
    """K(n) is kept per row and searched for the batch's rows: close to the exact fit."""
    exact = Clusterer(12, schedule=schedule, random_state=0, max_iter=300).fit(blobs)
    partial = Clusterer(12, schedule=schedule, estep=PartialEStep(G=4), random_state=0,
                        max_iter=300).fit(blobs)
    assert partial.inertia_ <= 1.05 * exact.inertia_
    assert partial.cost_["estep"] < 0.8 * exact.cost_["estep"]


def test_incompatible_compositions_are_refused(blobs):
    with pytest.raises(ValueError, match=r"batch by batch \(the rule 'running'\); use "
                                         r"schedule='full' \(reduce='lwcs' makes each pass "
                                         r"cheap\), or mstep='hard' for mini-batch k-means"):
        Clusterer(4, schedule="minibatch", mstep="soft").fit(blobs)


# -- stopping, budgets, sampling and starved centres of MiniBatch -----------------------------

def _fake_run(schedule, objectives, tol=0.0, n_samples=1000):
    """Feed ``schedule.should_stop`` a run whose batches have these objectives (unit total
    weight each, centres moving by their norm); returns the 1-based step it stopped at, or
    None."""
    from clusterkit._engine.state import FitState
    state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0))
    state.new_run(n_samples)
    X = np.zeros((n_samples, 2))
    state.run.schedule_state = schedule.init_state(X, np.ones(n_samples), X[:3], state)
    state.run.center_norm, state.run.center_shift = 1.0, np.ones(3) / np.sqrt(3)
    for step, objective in enumerate(objectives, 1):
        state.run.history.append({"objective": objective, "weight": 1.0})
        if schedule.should_stop(state, tol):
            return step
    return None


def test_early_stop_follows_the_smoothed_objective():
    # batch_size >= N: the smoothed objective is the newest batch's
    schedule = MiniBatch(batch_size=1000, max_no_improvement=3)
    # the first step (at the seeds) is left out; then 3 steps without a new low stop
    assert _fake_run(schedule, [9.0, 5.0, 4.0, 4.0, 4.5, 4.2, 3.0]) == 6
    assert _fake_run(schedule, [9.0] + list(np.linspace(5, 1, 30))) is None
    # tol: an improvement must be larger than tol times the lowest value so far
    assert _fake_run(schedule, [9.0, 5.0, 4.9, 4.8, 4.7, 4.0], tol=0.1) == 5
    assert _fake_run(schedule, [9.0, 5.0, 4.9, 4.8, 4.7, 4.0], tol=0.0) is None
    assert _fake_run(MiniBatch(max_no_improvement=None), [1.0] * 50) is None
    # the smoothing: weight 2 b / (N + 1) ~ 0.1 on the newest batch, so one bad batch
    # moves the smoothed value by a tenth of its excess
    smooth = MiniBatch(batch_size=50, max_no_improvement=2)
    assert _fake_run(smooth, [9.0, 5.0, 5.0, 6.0, 6.0, 6.0]) == 4
    assert _fake_run(smooth, [9.0, 5.0, 4.0, 3.0, 5.0, 2.0, 2.0]) is None


def test_center_tol_stops_when_the_centres_settle():
    # the fake run moves the centres by exactly their norm
    assert _fake_run(MiniBatch(max_no_improvement=None, center_tol=1.0), [5.0, 4.0]) == 1
    assert _fake_run(MiniBatch(max_no_improvement=None, center_tol=0.99), [5.0] * 9) is None


def test_minibatch_stops_early_by_default_and_runs_its_budget_without(blobs):
    budget = dict(batch_size=100, max_passes=20)
    early = Clusterer(12, schedule=MiniBatch(**budget), random_state=0).fit(blobs)
    full = Clusterer(12, schedule=MiniBatch(**budget, max_no_improvement=None),
                     random_state=0).fit(blobs)
    assert early.converged_ and full.converged_
    assert early.n_steps_ < 0.5 * full.n_steps_ and early.n_iter_ < 20
    assert full.n_iter_ == 20 and full.n_steps_ == 20 * 40
    assert early.inertia_ <= 1.05 * full.inertia_
    assert [h["iteration"] for h in early.history_] == list(range(1, early.n_steps_ + 1))


@pytest.mark.parametrize("schedule", [
    MiniBatch(batch_size=64, max_passes=np.inf, max_no_improvement=None),
    MiniBatch(batch_size=64, max_passes=np.inf),
    NestedDoubling(initial_batch=64, rho=np.inf),
])
def test_no_budget_hangs(blobs, schedule):
    """An infinite budget ends by the early stop or max_iter (passes for MiniBatch); on
    constant data the objective is zero at once and the early stop ends the run."""
    def bounded(info):
        assert info["iteration"] < 10_000, "the run does not end"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        km = Clusterer(12, schedule=schedule, max_iter=3, tol=0, random_state=0,
                       callback=bounded).fit(blobs)
    assert km.n_iter_ <= 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (fewer distinct points than clusters)
        km = Clusterer(4, schedule=MiniBatch(batch_size=50, max_passes=np.inf),
                       callback=bounded, random_state=0).fit(np.ones((500, 2)))
    assert km.converged_ and km.n_steps_ <= 20


def test_weighted_sampling_equals_repetition_in_distribution():
    """Rows drawn in proportion to integer weights are drawn as often as the copies of a
    repeated data set are; each counts with the mean weight."""
    from scipy.stats import chisquare

    from clusterkit._engine.state import FitState
    weights = np.array([1, 2, 3, 4, 10], dtype=np.float64)
    X = np.arange(5, dtype=np.float64)[:, None]
    schedule = MiniBatch(batch_size=4, sampling="weighted")
    state = FitState(n_clusters=1, n_features=1, random_state=np.random.RandomState(0))
    state.new_run(5)
    state.run.schedule_state = schedule.init_state(X, weights, X[:1], state)
    batches = schedule.batches(5, state)
    counts = np.zeros(5)
    for _ in range(5000):
        rows = next(batches)
        counts += np.bincount(rows, minlength=5)
        np.testing.assert_array_equal(schedule.batch_weight(weights, rows, state),
                                      np.full(4, weights.mean()))
    expected = counts.sum() * weights / weights.sum()
    assert chisquare(counts, expected).pvalue > 1e-3
    # uniform sampling of the repeated data gives the same frequencies per distinct row
    repeated = np.repeat(np.arange(5), weights.astype(int))
    uniform = MiniBatch(batch_size=4)
    state = FitState(n_clusters=1, n_features=1, random_state=np.random.RandomState(1))
    state.new_run(repeated.size)
    state.run.schedule_state = uniform.init_state(X[repeated], np.ones(repeated.size),
                                                  X[:1], state)
    batches = uniform.batches(repeated.size, state)
    counts_repeated = np.zeros(5)
    for _ in range(5000):
        counts_repeated += np.bincount(repeated[next(batches)], minlength=5)
    assert chisquare(counts_repeated, expected).pvalue > 1e-3


def test_weighted_sampling_fits_like_the_repeated_data(blobs):
    rng = np.random.RandomState(0)
    X = blobs[:1000]
    weights = rng.randint(1, 5, size=1000)
    repeated = np.repeat(X, weights, axis=0)
    errors = {"weighted": [], "repeated": []}
    for seed in range(8):
        init = X[rng.choice(1000, 12, replace=False)]
        weighted = Clusterer(12, seed=init, random_state=seed, schedule=MiniBatch(
            batch_size=100, sampling="weighted")).fit(X, sample_weight=weights)
        plain = Clusterer(12, seed=init, random_state=seed,
                          schedule=MiniBatch(batch_size=100)).fit(repeated)
        errors["weighted"].append(-weighted.score(repeated))
        errors["repeated"].append(-plain.score(repeated))
    assert np.mean(errors["weighted"]) == pytest.approx(np.mean(errors["repeated"]), rel=0.05)


@pytest.mark.parametrize("learning_rate", ["count", "adaptive"])
def test_starved_rule_keeps_every_centre_alive_near_the_number_of_distinct_points(
        learning_rate):
    """60 distinct points, 56 clusters, seeds on duplicates of a few points: every cluster
    ends with samples of its own."""
    rng = np.random.RandomState(0)
    points = rng.uniform(-10, 10, size=(60, 2))
    X = points[rng.randint(60, size=6000)]
    init = np.repeat(points[:8], 7, axis=0)  # 56 seeds on 8 distinct points
    km = Clusterer(56, seed=init, random_state=0, schedule=MiniBatch(
        batch_size=200, learning_rate=learning_rate)).fit(X)
    assert np.unique(km.labels_).size == 56
    assert len(np.unique(km.cluster_centers_, axis=0)) == 56
    assert sum(h["n_relocated"] for h in km.history_) > 0


def test_starved_rule_waits_for_a_whole_window():
    """k larger than the batch: centres no batch reached yet are not starved. Checks come at
    the end of each window (min(100 k, N) rows, a pass here) and, on data without empty
    regions, move few centres (scikit-learn moves up to half a batch per step while some
    count is zero)."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(20000, 4))
    km = Clusterer(500, seed=X[:500].copy(), random_state=0,
                   schedule=MiniBatch(batch_size=100, max_passes=3,
                                      max_no_improvement=None)).fit(X)
    moved = np.array([h["n_relocated"] for h in km.history_])
    assert km.n_steps_ == 600
    assert set(np.flatnonzero(moved)) <= {199, 399, 599}  # the ends of the windows
    assert moved.sum() <= 25


def test_adaptive_learning_rate_moves_by_the_square_root_of_the_batch_share():
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    rows = [np.array([0, 1, 2, 3])]

    class Once(MiniBatch):
        def batches(self, n_samples, state):
            yield from rows

    km = Clusterer(2, seed=np.array([[0.0], [9.0]]), max_iter=10,
                   schedule=Once(learning_rate="adaptive", max_no_improvement=None)).fit(X)
    # cluster 0: three of four samples, mean 1, rate sqrt(3/4); cluster 1: mean 10, rate 1/2
    expected = [np.sqrt(0.75) * 1.0, 0.5 * 9.0 + 0.5 * 10.0]
    np.testing.assert_allclose(km.cluster_centers_[:, 0], expected)
    assert km.n_steps_ == 1


def test_minibatch_parameters_are_checked(blobs):
    for schedule, match in [
            (MiniBatch(max_no_improvement=0),
             r"^MiniBatch: max_no_improvement must be an integer >= 1 or None; got 0\.$"),
            (MiniBatch(center_tol=-1.0),
             r"^MiniBatch: center_tol must be a finite number >= 0 or None; got -1\.0\.$"),
            (MiniBatch(reassignment_ratio=-0.1),
             r"^MiniBatch: reassignment_ratio must be a finite number >= 0; got -0\.1\.$"),
            (MiniBatch(sampling="stratified"),
             r"^MiniBatch: sampling must be 'uniform' or 'weighted'; got 'stratified'\.$"),
            (MiniBatch(learning_rate="sgd"),
             r"^MiniBatch: learning_rate must be 'count' or 'adaptive'; got 'sgd'\.$"),
            (MiniBatch(max_passes=float("nan")),
             r"^MiniBatch: max_passes must be a number > 0; got nan\.$")]:
        with pytest.raises(ValueError, match=match):
            Clusterer(4, schedule=schedule).fit(blobs)


def test_nmbatch_first_prefix_is_auto_sized(blobs):
    """initial_batch="auto": max(5000, 20 k) rows, clamped to the data; nmbatch then ends
    at Lloyd's fixed point within tol."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(12000, 3))
    for k, first in [(10, 5000), (400, 8000), (700, 12000)]:
        km = Clusterer(k, estep="elkan", schedule=NestedDoubling(), random_state=0,
                       max_iter=5, tol=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            km.fit(X)
        assert km.history_[0]["batch_size"] == first
    with pytest.raises(TypeError, match=r"^NestedDoubling: initial_batch must be an integer "
                                        r">= 1 or 'auto'; got 2\.5\.$"):
        Clusterer(4, schedule=NestedDoubling(initial_batch=2.5)).fit(blobs)
    # a string is the option's type: an unknown option
    with pytest.raises(ValueError, match=r"^NestedDoubling: initial_batch must be an integer "
                                         r">= 1 or 'auto'; got 'big'\.$"):
        Clusterer(4, schedule=NestedDoubling(initial_batch="big")).fit(blobs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relocation_dedupes_rows_as_numpy_unique_does(dtype):
    """The starved rule's one centre per position: the first of each group of equal rows,
    the same set as ``np.unique(axis=0)`` (and -0.0 equal to 0.0)."""
    from clusterkit.mstep.batch_rules import _first_of_equal_rows
    rng = np.random.RandomState(0)
    rows = rng.randint(3, size=(200, 7)).astype(dtype)
    expected = np.unique(rows, axis=0, return_index=True)[1]
    assert np.array_equal(np.sort(_first_of_equal_rows(rows)), np.sort(expected))
    signed = np.array([[0.0, 1.0], [-0.0, 1.0]], dtype=dtype)
    assert np.array_equal(_first_of_equal_rows(signed), [0])
