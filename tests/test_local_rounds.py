"""Local breathing rounds: a refiner's round that continues the E-step's per-run state
(``iterate(centers, carry=True)``, ``EStep.carry_state``). The bounded E-steps keep their
bounds, with each centre's move added: the same iterates as fresh bounds, fewer distances;
every other E-step starts afresh, as before."""
import numpy as np
import pytest

from clusterkit import (AFKMC2, LWCS, BoundedEStep, Breathing, Clusterer, ElkanEStep, FitState,
                        FullEStep, MiniBatch, PartialEStep, YinyangEStep)
from clusterkit._engine.contracts import EStep


def _data(n_features, dtype, seed=0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-20, 20, size=(25, n_features))
    X = means[rng.randint(25, size=1501)] + rng.normal(size=(1501, n_features))
    return X.astype(dtype), rng.uniform(0.5, 2.0, size=1501).astype(dtype)


def _fit(X, weight, estep, carry, n_threads, **kw):
    return Clusterer(20, estep=estep, refine=Breathing(m=3, carry=carry, max_rounds=6),
                     n_threads=n_threads, random_state=1, **kw).fit(X, sample_weight=weight)


def _same_fits(a, b):
    """Everything the rounds decided and returned, bit for bit (the costs aside)."""
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_
    keys = ("objective", "qe", "n_changed", "max_center_shift", "batch_size")
    assert [[h[k] for k in keys] for h in a.history_] == [[h[k] for k in keys]
                                                          for h in b.history_]
    keys = ("moved", "objective_before", "objective", "kept")
    assert [[r[k] for k in keys] for r in a.refinement_log_] == [
        [r[k] for k in keys] for r in b.refinement_log_]


@pytest.mark.parametrize("estep", [ElkanEStep, YinyangEStep, BoundedEStep,
                                   lambda: ElkanEStep(prune=4)])
@pytest.mark.parametrize("n_features", [5, 24])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_bounded_esteps_continue_with_the_iterates_of_fresh_bounds(estep, n_features, dtype,
                                                                   n_threads, weighted):
    X, weight = _data(n_features, dtype)
    weight = weight if weighted else None
    fresh = _fit(X, weight, estep(), False, n_threads)
    carried = _fit(X, weight, estep(), True, n_threads)
    _same_fits(fresh, carried)
    assert len(fresh.refinement_log_) >= 2  # (rounds ran: some kept, some not)
    # a continued round computes distances only where the moved centres invalidate bounds
    assert carried.cost_["estep"] < fresh.cost_["estep"]
    assert carried.cost_["refinement"] == fresh.cost_["refinement"]


def test_bounded_esteps_continue_under_mini_batches():
    X, _ = _data(5, np.float64)
    schedule = MiniBatch(batch_size=256, max_no_improvement=3)
    fresh = _fit(X, None, ElkanEStep(), False, 1, schedule=schedule)
    carried = _fit(X, None, ElkanEStep(), True, 1, schedule=schedule)
    _same_fits(fresh, carried)


@pytest.mark.parametrize("make", [
    lambda: Clusterer(20, estep=FullEStep()),
    lambda: Clusterer(20, seed=AFKMC2(), reduce=LWCS(512), estep=PartialEStep(G=5)),
    lambda: Clusterer(20, estep=PartialEStep(G=5))])
def test_other_esteps_start_afresh_as_before(make):
    X, _ = _data(5, np.float64)
    fits = [make().set_params(refine=Breathing(m=3, carry=carry, max_rounds=4),
                              random_state=2).fit(X) for carry in (False, True)]
    _same_fits(*fits)
    assert fits[0].cost_ == fits[1].cost_


def test_the_default_carries_nothing_and_bounds_carry_only_their_own_rows():
    state = FitState(n_clusters=3, n_features=2, random_state=np.random.RandomState(0),
                     n_samples=10)
    assert EStep.carry_state(FullEStep(), object(), state) is None
    X = np.random.RandomState(0).normal(size=(10, 2))
    centers = X[:3].copy()
    for estep in (ElkanEStep(), YinyangEStep(), BoundedEStep()):
        assert estep.carry_state(None, state) is None
        bounds = estep.init_state(X, np.ones(10), centers, state)
        assert estep.carry_state(bounds, state) is bounds
        assert estep.carry_state(estep.init_state(X[:7], np.ones(7), centers, state),
                                 state) is None


def test_a_continued_run_takes_the_state_and_a_copy_of_the_labels():
    X, _ = _data(5, np.float64)
    seen = []

    class Watch(Breathing):
        def refine(self, X, sample_weight, run, iterate, state):
            state_before, labels_before = run.estep_state, run.labels.copy()
            new = iterate(run.centers + 1.0, carry=True)
            seen.append((new.estep_state is state_before, run.estep_state,
                         np.array_equal(run.labels, labels_before)))
            return run

    Clusterer(20, estep=ElkanEStep(), refine=Watch(), random_state=0).fit(X)
    assert seen == [(True, None, True)]


def test_carry_must_be_a_bool():
    X, _ = _data(5, np.float64)
    with pytest.raises(TypeError, match="carry"):
        Clusterer(4, refine=Breathing(carry="yes")).fit(X)
