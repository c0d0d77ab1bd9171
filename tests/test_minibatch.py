"""Mini-batch schedules (MiniBatch, NestedDoubling), their M-step rules and partial_fit."""
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
        sums = state.mstep_state
        rows = np.arange(state.n_samples)[state.rows]
        labels = state.labels.copy()
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
                channel = state.channel
                v, sse, p = channel.cluster_weight, channel.cluster_sse, state.center_shift
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


def test_partial_fit_errors(blobs):
    km = Clusterer(5).partial_fit(blobs[:100])
    with pytest.raises(ValueError, match="X has 2 features, but Clusterer is expecting 3"):
        km.partial_fit(blobs[:10, :2])
    with pytest.raises(ValueError, match="n_clusters=5 must be <= n_samples=3"):
        Clusterer(5).partial_fit(blobs[:3])
    with pytest.raises(AttributeError) as info:
        Clusterer(5, mstep="soft").partial_fit(blobs)
    assert "partial_fit keeps running means" in str(info.value.__cause__)
    with pytest.raises(ValueError, match="partial_fit needs an exact E-step"):
        Clusterer(5, estep=PartialEStep(G=2)).partial_fit(blobs)
    with pytest.raises(ValueError, match="LWCS summarises a whole data set. Use fit, or "
                                         "reduce=None"):
        Clusterer(5, reduce=LWCS(1000)).partial_fit(blobs)
    for schedule in ("nmbatch", "sbe"):
        with pytest.raises(ValueError, match="chooses its own batches from all the data. Use "
                                             "fit, or schedule='minibatch'"):
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
    assert abs(ours_error - theirs_error) <= 0.01 * theirs_error


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
    km = presets.minibatch(12, batch_size=400, max_passes=3, random_state=0).fit(blobs)
    assert km.converged_ and km.n_iter_ == 30
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
    (MiniBatch(batch_size=0), ValueError, r"batch_size=0 must be >= 1"),
    (MiniBatch(batch_size=2.5), TypeError, r"batch_size must be an integer"),
    (MiniBatch(max_passes=0), ValueError, r"max_passes=0 must be a positive number"),
    (NestedDoubling(initial_batch=0), ValueError, r"initial_batch=0 must be >= 1"),
    (NestedDoubling(rho=-1.0), ValueError, r"rho=-1.0 must be a number >= 0"),
    (NestedDoubling(spread="sd"), ValueError, r"Unknown spread='sd'"),
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
    with pytest.raises(ValueError, match=r"MiniBatch combines batches by the rule 'running', "
                                         r"which SoftMStep does not implement \(it implements "
                                         r"'replace'\); use a schedule with full batches"):
        Clusterer(4, schedule="minibatch", mstep="soft").fit(blobs)
