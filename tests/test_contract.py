"""The strategy contract hosts what the built-in strategies do not: small pure-NumPy strategies
plugged into the unchanged driver."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from clusterkit import (Assignment, Clusterer, EStep, FitState, HardMStep, MStep, Objective,
                        PartialEStep, Schedule, Seeder)

from ._helpers import fixed_iterations


def _blobs(n=600, d=3, c=6, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.uniform(-20, 20, size=(c, d))
    return means[rng.integers(c, size=n)] + rng.normal(size=(n, d))


def _nearest(X, centers):
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    labels = d2.argmin(1).astype(np.int32)
    return labels, d2[np.arange(len(X)), labels], d2


class NumpyNearest(EStep):
    """Exact nearest centre in NumPy; records what the contract tells it at every call."""

    def __init__(self, log=None):
        self.log = log

    def assign(self, X, sample_weight, centers, state):
        labels, dist2, d2 = _nearest(X, centers)
        state.meter.count("estep", d2.size)
        if self.log is not None:
            previous = state.run.labels[state.run.rows]  # the driver updates them after this call
            self.log.append({"rows": np.arange(state.run.n_samples)[state.run.rows],
                             "centers": centers.copy(), "shift": state.run.center_shift.copy(),
                             "changed": int(np.count_nonzero(previous != labels)),
                             "state": state})
        qe = float(sample_weight @ dist2)
        return Assignment(labels=labels, dist2=dist2, objective=qe, qe=qe)


class RandomBatches(Schedule):
    """Uniform mini-batches without replacement, until ``max_passes`` passes over the data."""

    def __init__(self, batch_size=50, max_passes=3.0):
        self.batch_size = batch_size
        self.max_passes = max_passes

    def batches(self, n_samples, state):
        while state.run.n_passes < self.max_passes:
            yield state.random_state.choice(n_samples, self.batch_size, replace=False)

    def should_stop(self, state, tol):
        return False  # the budget in passes ends the run


class OneVoteMeans(MStep):
    """Running weighted means in which every sample votes once, with its latest label: a
    revisited sample first withdraws the vote of its previous visit (nested mini-batch
    k-means' rule), read from the row identities the driver exposes."""

    def init_state(self, X, sample_weight, centers, state):
        return {"sums": np.zeros(centers.shape), "weights": np.zeros(centers.shape[0])}

    def update(self, X, sample_weight, assignment, centers, state):
        sums, weights = state.run.mstep_state["sums"], state.run.mstep_state["weights"]
        previous = state.run.labels[state.run.rows]
        seen = previous >= 0
        np.subtract.at(sums, previous[seen], sample_weight[seen, None] * X[seen])
        np.subtract.at(weights, previous[seen], sample_weight[seen])
        np.add.at(sums, assignment.labels, sample_weight[:, None] * X)
        np.add.at(weights, assignment.labels, sample_weight)
        centers_new = centers.copy()
        has = weights > 1e-12
        centers_new[has] = sums[has] / weights[has, None]
        return centers_new


def test_running_means_under_mini_batches_vote_once_per_row():
    X = _blobs()
    w = np.random.default_rng(1).uniform(0.5, 2.0, len(X))
    log = []
    km = Clusterer(6, estep=NumpyNearest(log), mstep=OneVoteMeans(),
                   schedule=RandomBatches(batch_size=50, max_passes=3.0), random_state=0,
                   max_iter=1000).fit(X, sample_weight=w)
    # the budget in passes ended the run: 3 passes of 600 rows in batches of 50
    assert km.n_iter_ == 36 and km.converged_
    assert [h["passes"] for h in km.history_] == pytest.approx(np.arange(1, 37) / 12)
    assert all(h["batch_size"] == 50 for h in km.history_)
    # one sample, one vote: the running sums equal those of every visited row's last label
    state = log[-1]["state"]
    visited = state.run.labels >= 0
    Xc = X - X.mean(0)
    expected = np.zeros((6, 3))
    np.add.at(expected, state.run.labels[visited], w[visited, None] * Xc[visited])
    np.testing.assert_allclose(state.run.mstep_state["sums"], expected, atol=1e-9)
    np.testing.assert_allclose(state.run.mstep_state["weights"],
                               np.bincount(state.run.labels[visited], w[visited], minlength=6))
    assert km.cost_["estep"] == 36 * 50 * 6


def test_estep_sees_centre_shifts_and_the_driver_counts_changed_labels():
    X = _blobs()
    log = []
    km = Clusterer(6, estep=NumpyNearest(log), seed="random", tol=0, max_iter=100,
                   random_state=3).fit(X)
    assert km.n_iter_ == len(log) >= 3
    np.testing.assert_array_equal(log[0]["shift"], 0)
    assert log[0]["changed"] == km.history_[0]["n_changed"] == len(X)  # first visits
    for before, after, entry, previous in zip(log, log[1:], km.history_[1:], km.history_):
        moved = np.sqrt(((after["centers"] - before["centers"]) ** 2).sum(1))
        np.testing.assert_allclose(after["shift"], moved, rtol=1e-12, atol=1e-12)
        assert previous["max_center_shift"] == pytest.approx(moved.max(), abs=1e-12)
        assert entry["n_changed"] == after["changed"]
    assert km.history_[-1]["n_changed"] == 0  # tol=0 ran Lloyd to its fixed point


class FuzzyMemberships(EStep):
    """Fuzzy c-means memberships ``u_nc ~ d_nc^(-2/(m-1))``: responsibilities without a
    Gaussian model; the objective ``J = sum_n w_n sum_c u_nc^m d2_nc`` is minimised."""

    def __init__(self, m=2.0):
        self.m = m

    def assign(self, X, sample_weight, centers, state):
        labels, dist2, d2 = _nearest(X, centers)
        state.meter.count("estep", d2.size)
        inv = np.maximum(d2, 1e-12) ** (-1.0 / (self.m - 1.0))
        resp = inv / inv.sum(1, keepdims=True)
        objective = float(sample_weight @ ((resp ** self.m) * d2).sum(1))
        return Assignment(labels=labels, dist2=dist2, objective=objective,
                          qe=float(sample_weight @ dist2), resp=resp)


class FuzzyMeans(MStep):
    needs_resp = True
    objective = Objective("fuzzy c-means objective", maximize=False)

    def __init__(self, m=2.0):
        self.m = m

    def update(self, X, sample_weight, assignment, centers, state):
        u = sample_weight[:, None] * assignment.resp ** self.m
        return (u.T @ X) / u.sum(0)[:, None]


@fixed_iterations
def test_responsibilities_with_a_minimised_objective():
    X = _blobs(c=4)
    fits = [Clusterer(4, estep=FuzzyMemberships(), mstep=FuzzyMeans(), seed="random",
                      tol=0, max_iter=15, random_state=s).fit(X) for s in range(3)]
    for km in fits:
        J = np.array([h["objective"] for h in km.history_])
        assert np.all(np.diff(J) <= 1e-9 * J[:-1])  # fuzzy c-means never increases J
        assert not hasattr(km, "sigma2_") and "sigma2" not in km.history_[-1]
    # n_init keeps the run with the LOWEST objective, as the M-step declares
    runs = []
    best = Clusterer(4, estep=FuzzyMemberships(), mstep=FuzzyMeans(), seed="random", tol=0,
                     max_iter=2, n_init=4, random_state=0,  # two steps: the runs differ
                     callback=lambda info: runs.append([]) if info["iteration"] == 1 else
                     runs[-1].append(info["objective"])).fit(X)
    finals = [run[-1] for run in runs]
    assert len(finals) == 4 and len(set(finals)) > 1
    assert best.objective_ == min(finals)


def test_incompatible_composition_is_refused_before_any_work():
    class Untouchable(Seeder):
        def seed(self, X, sample_weight, n_clusters, state):
            raise AssertionError("fit did work before refusing the composition")

    X = _blobs()
    with pytest.raises(ValueError, match="SoftMStep re-estimates the model from whole passes "
                                         "over the data only, but MiniBatch updates it batch "
                                         "by batch"):
        Clusterer(6, seed=Untouchable(), mstep="soft", schedule="minibatch").fit(X)

    class RunningOnly(HardMStep):
        update_rules = ("replace", "running")

    with pytest.raises(ValueError, match="NestedDoubling combines batches by the rule "
                                         "'latest', which RunningOnly does not implement"):
        Clusterer(6, seed=Untouchable(), mstep=RunningOnly(), schedule="nmbatch").fit(X)


def test_shared_state_hooks_are_one_capability():
    """An E-step that implements some of the hooks that share a state among row chunks, or
    declares the capability without them, is refused before any work: a hook alone would
    lose what the chunks add up without an error."""
    class SummaryOnly(NumpyNearest):
        def chunk_summary(self, estep_state):
            return 1.0

    class DeclaredOnly(NumpyNearest):
        shares_state = True

    X = _blobs()
    with pytest.raises(ValueError, match=r"SummaryOnly does not declare shares_state and "
                                         r"implements 1 of the four hooks .*chunk_summary\)"):
        Clusterer(6, estep=SummaryOnly(), random_state=0).fit(X)
    with pytest.raises(ValueError, match="DeclaredOnly declares shares_state and implements "
                                         "0 of the four hooks"):
        Clusterer(6, estep=DeclaredOnly(), random_state=0).fit(X)
    assert PartialEStep.shares_state  # (the built-in one that shares: all four, declared)
    Clusterer(6, estep=PartialEStep(), random_state=0).fit(X)


def test_final_labels_hook_replaces_the_nearest_centre():
    class LabelsByRowParity(NumpyNearest):
        def final_labels(self, state):
            return (np.arange(state.run.n_samples) % 2).astype(np.int32)

    X = _blobs()
    km = Clusterer(2, estep=LabelsByRowParity(), random_state=0).fit(X)
    np.testing.assert_array_equal(km.labels_, np.arange(len(X)) % 2)
    centers = km.cluster_centers_
    expected = ((X - centers[km.labels_]) ** 2).sum()
    assert km.inertia_ == pytest.approx(expected, rel=1e-10)
    assert km.cost_["labels"] == len(X)


def test_strategies_are_nested_parameters():
    km = Clusterer(8, estep=PartialEStep(G=5))
    assert km.get_params()["estep__G"] == 5
    km.set_params(estep__G=3, estep__n_explore=0)
    assert km.estep == PartialEStep(G=3, n_explore=0)
    assert repr(km.estep).startswith("PartialEStep(G=3, n_winners=None,")
    copy = clone(km)
    assert copy.estep == km.estep and copy.estep is not km.estep


def test_grid_search_over_a_strategy_parameter():
    X = _blobs(n=900, c=12)
    search = GridSearchCV(Clusterer(12, estep=PartialEStep(), random_state=0),
                          {"estep__G": [2, 3, 5]}, cv=3).fit(X)
    assert [p["estep__G"] for p in search.cv_results_["params"]] == [2, 3, 5]
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert search.best_estimator_.estep.G == search.best_params_["estep__G"]
    assert search.estimator.estep.G == 5  # the template is cloned, never changed


def test_the_fit_state_names_the_part_a_flat_name_moved_to():
    """A strategy written for the flat names of an earlier contract is told where each name
    is; nothing can be set on the state beside its parts."""
    state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0),
                     n_samples=10)
    for name, part in (("n_threads", "config"), ("count", "meter"), ("labels", "run")):
        with pytest.raises(AttributeError, match=rf"state\.{part}\.{name}"):
            getattr(state, name)
    with pytest.raises(AttributeError, match=r"reads_batch_sums"):
        state.fuse_sums = True
    with pytest.raises(AttributeError, match=r"set state\.run\.labels"):
        state.labels = np.zeros(10, dtype=np.int32)
    with pytest.raises(AttributeError, match="no attribute 'anything' to set"):
        state.anything = 1
    state.run.labels = np.zeros(10, dtype=np.int32)  # (the parts are written directly)
    assert state.run.labels.shape == (10,)
