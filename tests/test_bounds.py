"""The bounded E-steps' family: one memory budget (the same meaning of max_bounds_bytes=None
for ElkanEStep, YinyangEStep and BoundedEStep), one refusal, and BoundedEStep running the
E-step it checked when fit started."""
import numpy as np
import pytest

from clusterkit import (BoundedEStep, Clusterer, DataReducer, ElkanEStep, FullEStep, KMeansPlusPlus,
                        YinyangEStep, yinyang_groups)
from clusterkit._data import memory as _memory
from clusterkit.estep.bounds import bounds_budget
from clusterkit.estep.exact import elkan_memory
from clusterkit.estep.yinyang import yinyang_memory

from ._helpers import composition

N, C, D = 2000, 12, 9  # above the low dimensions BoundedEStep sends to Yinyang


def _blobs(n=N, d=D, c=C, seed=0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-20, 20, size=(c, d))
    return means[rng.randint(c, size=n)] + rng.normal(size=(n, d))


@pytest.fixture
def memory(monkeypatch):
    """Set the memory the system says is available (None: not known)."""
    def set_available(n_bytes):
        monkeypatch.setattr(_memory, "_system_available", lambda: n_bytes)
    return set_available


def test_none_is_half_the_available_memory_for_all_three(memory):
    elkan_need = elkan_memory(N, C)
    X = _blobs()
    # the same two machines for all three: the bounds just fit half, or just do not
    for available, fits in [(2 * elkan_need, True), (2 * elkan_need - 2, False)]:
        memory(available)
        assert bounds_budget(None) == available // 2
        assert bounds_budget(123) == 123  # a given budget is the budget, whatever the memory
        # Elkan: refused above the budget
        if fits:
            ElkanEStep()._validate(X, C, composition(estep=ElkanEStep()))
        else:
            with pytest.raises(ValueError, match=r"ElkanEStep needs .* GiB of bounds for 2000 "
                                                 r"samples and n_clusters=12, above the "
                                                 r"default budget, half the memory available"):
                ElkanEStep()._validate(X, C, composition(estep=ElkanEStep()))
        # BoundedEStep: Elkan where it fits that budget, else Yinyang
        assert type(BoundedEStep().chosen(N, C, n_features=D)) is (ElkanEStep if fits
                                                                 else YinyangEStep)
    # Yinyang: given groups refused above it, "auto" groups capped by it
    t = 3
    memory(2 * yinyang_memory(N, t))
    YinyangEStep(n_groups=t)._validate(X, 40, composition(estep=YinyangEStep()))
    assert yinyang_groups(N, 40) == t == yinyang_groups(N, 40, yinyang_memory(N, t))
    memory(2 * yinyang_memory(N, t) - 2)
    with pytest.raises(ValueError, match=r"YinyangEStep needs .* above the default budget"):
        YinyangEStep(n_groups=t)._validate(X, 40, composition(estep=YinyangEStep()))
    assert yinyang_groups(N, 40) == t - 1


def test_none_is_no_limit_where_the_memory_is_not_known(memory):
    memory(None)
    assert bounds_budget(None) is None
    assert yinyang_groups(10**7, 4096) == 410  # C / 10, not capped
    assert type(BoundedEStep().chosen(10**7, 4096, n_features=D)) is ElkanEStep
    X = _blobs()
    ElkanEStep()._validate(X, C, composition(estep=ElkanEStep()))
    YinyangEStep(n_groups=C)._validate(X, C, composition(estep=YinyangEStep()))


def test_one_refusal_for_both_and_one_group_above_the_budget_is_refused():
    X = _blobs(1000, 2, 4)
    for estep, layout in [(ElkanEStep(1000), "n_clusters=10"),
                          (YinyangEStep("auto", 1000), "n_groups=1")]:
        with pytest.raises(ValueError, match=rf"{type(estep).__name__} needs 0\.00 GiB of "
                                             rf"bounds for 1000 samples and {layout}, above "
                                             r"max_bounds_bytes=1000 \(0\.00 GiB\)\. Raise "
                                             r"max_bounds_bytes, .*FullEStep"):
            Clusterer(10, estep=estep).fit(X)
    with pytest.raises(TypeError, match="max_bounds_bytes must be an integer"):
        Clusterer(10, estep=BoundedEStep(max_bounds_bytes=1.5)).fit(X)


class _Halving(DataReducer):
    """Keeps the first half of the rows, but says it may keep them all (as a coreset whose
    draws coincide returns fewer rows than its size)."""

    def reduce(self, X, sample_weight, state):
        half = X.shape[0] // 2
        return X[:half].copy(), sample_weight[:half].copy()


class _Spy(BoundedEStep):
    """Records the E-step whose state each run makes."""

    def __init__(self, max_bounds_bytes=None, n_groups="auto", seen=None):
        super().__init__(max_bounds_bytes, n_groups)
        self.seen = seen

    def init_state(self, X, sample_weight, centers, state):
        bounds = super().init_state(X, sample_weight, centers, state)
        self.seen.append(bounds.estep)
        return bounds


def test_bounded_estep_chooses_for_the_rows_each_run_has():
    """Checked for all the rows the reducer may return (Elkan's bounds too large: Yinyang),
    each run has half of them, where Elkan's fit: the run takes Elkan, by the same rule, in
    less memory than was checked; the result is Lloyd's either way; nothing is kept on the
    strategy between fits."""
    X = _blobs()
    budget = elkan_memory(N // 2, C)  # fits half the rows, not all
    estep = BoundedEStep(budget)
    assert estep.chosen(N, C, n_features=D) == YinyangEStep("auto", budget)
    assert estep.chosen(N // 2, C, n_features=D) == ElkanEStep(budget)
    seen = []
    km = Clusterer(C, reduce=_Halving(), estep=_Spy(budget, seen=seen), n_init=2,
                   random_state=0).fit(X)
    assert seen == [ElkanEStep(budget)] * 2
    assert set(vars(km.estep)) == {"max_bounds_bytes", "n_groups", "prune", "seen"}
    lloyd = Clusterer(C, reduce=_Halving(), estep=FullEStep(), n_init=2, random_state=0).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, lloyd.cluster_centers_)


def test_bounded_estep_chooses_in_the_memory_the_run_finds(memory):
    """The memory available falls between the check and the run: the run takes the E-step
    that fits the budget it finds (Yinyang), with Lloyd's result."""
    X = _blobs()
    need = elkan_memory(N, C)
    memory(None)
    estimate = Clusterer(C, estep=BoundedEStep(), random_state=0).estimate_memory(X)
    # what the fit sets aside for its data and labels before the E-step sizes its bounds
    reserved = estimate.phases["data"] + estimate.phases["labels"]

    class _Squeezing(KMeansPlusPlus):
        def seed(self, X, sample_weight, n_clusters, state):
            # half of it, less the fit's data, no longer holds Elkan's bounds
            memory(2 * (reserved + need) - 2)
            return super().seed(X, sample_weight, n_clusters, state)

    memory(4 * (int(estimate) + need))
    assert BoundedEStep().chosen(N, C, n_features=D) == ElkanEStep()
    seen = []
    km = Clusterer(C, seed=_Squeezing(), estep=_Spy(seen=seen), random_state=0).fit(X)
    assert [type(estep) for estep in seen] == [YinyangEStep]
    memory(None)
    lloyd = Clusterer(C, seed=KMeansPlusPlus(), estep=FullEStep(), random_state=0).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, lloyd.cluster_centers_)
