"""YinyangEStep and BoundedEStep: Lloyd's iterates from the same start, fewer distances,
memory that does not grow with C, and the rule that chooses between Elkan and Yinyang."""
import numpy as np
import pytest

from clusterkit import (LWCS, BoundedEStep, Clusterer, ElkanEStep, FullEStep, MiniBatch,
                        NestedDoubling, Schedule, YinyangEStep, presets, yinyang_groups)
from clusterkit.estep.exact import _ElkanBounds
from clusterkit.estep.yinyang import _YinyangBounds, yinyang_memory

from ._helpers import composition, fixed_iterations


def _blobs(n, d, c, dtype=np.float64, seed=0, spread=20.0):
    rng = np.random.RandomState(seed)
    means = rng.uniform(-spread, spread, size=(c, d))
    return (means[rng.randint(c, size=n)] + rng.normal(size=(n, d))).astype(dtype)


def _fit(X, init, estep, w=None, **kwargs):
    centers = []
    params = dict(seed=init, estep=estep, tol=0, max_iter=200,
                  callback=lambda info: centers.append(info["centers"].copy()))
    km = Clusterer(init.shape[0], **{**params, **kwargs}).fit(X, sample_weight=w)
    return km, centers


@pytest.mark.parametrize("n_groups", [1, 4, "auto", 30])
@pytest.mark.parametrize("weighted", [False, True])
def test_lloyds_iterates_exactly_in_float64(n_groups, weighted):
    """Every iteration's centres, the labels, n_iter_ and the changes per step are Lloyd's,
    bit for bit, with fewer distance evaluations (t = 1 is Hamerly's bound, t = C Elkan's)."""
    X = _blobs(3001, 5, 25, seed=3)
    w = np.random.RandomState(4).uniform(0.5, 2, len(X)) if weighted else None
    init = X[np.random.RandomState(5).choice(len(X), 30, replace=False)]
    lloyd, lloyd_centers = _fit(X, init, FullEStep(), w)
    yy, yy_centers = _fit(X, init, YinyangEStep(n_groups=n_groups), w)
    assert yy.n_iter_ == lloyd.n_iter_ and yy.converged_
    assert [h["n_changed"] for h in yy.history_] == [h["n_changed"] for h in lloyd.history_]
    for a, b in zip(yy_centers, lloyd_centers):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(yy.labels_, lloyd.labels_)
    assert yy.inertia_ == lloyd.inertia_
    assert yy.n_distance_evals_ < 0.5 * lloyd.n_distance_evals_


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n_groups", [1, 5])
def test_lloyds_iterates_in_float32(n_threads, n_groups):
    """float32: the same iterations; centres equal up to float32 rounding (the labels are
    those of the same direct distances, so in practice bit-identical)."""
    X = _blobs(2001, 19, 17, np.float32, seed=1)  # odd sizes, gemm path for Lloyd
    init = X[np.random.RandomState(2).choice(len(X), 23, replace=False)]
    lloyd, lloyd_centers = _fit(X, init, FullEStep(), n_threads=n_threads)
    yy, yy_centers = _fit(X, init, YinyangEStep(n_groups=n_groups), n_threads=n_threads)
    assert yy.n_iter_ == lloyd.n_iter_
    for a, b in zip(yy_centers, lloyd_centers):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(yy.labels_, lloyd.labels_)
    assert yy.cluster_centers_.dtype == np.float32
    assert yy.n_distance_evals_ < 0.5 * lloyd.n_distance_evals_


def test_results_do_not_depend_on_threads():
    X = _blobs(5003, 7, 40, seed=8)
    init = X[:50]
    fits = [_fit(X, init, YinyangEStep(n_groups=5), n_threads=t)[0] for t in (1, 2)]
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    assert fits[0].n_distance_evals_ == fits[1].n_distance_evals_


def test_empty_clusters_relocate_like_lloyd():
    X = _blobs(800, 2, 5, seed=7)
    init = np.vstack([X[:6], X[:2]])  # two duplicated centres: empty clusters at once
    fits = [Clusterer(8, seed=init, estep=e, tol=0, max_iter=100).fit(X)
            for e in (FullEStep(), YinyangEStep(n_groups=2))]
    assert fits[0].n_iter_ == fits[1].n_iter_
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)


def test_weight_two_equals_a_duplicated_row():
    X = _blobs(600, 3, 6, seed=9)
    init = X[:6]
    w = np.ones(len(X))
    w[:50] = 2.0
    doubled = np.vstack([X, X[:50]])
    a = Clusterer(6, seed=init, estep=YinyangEStep(2), tol=0).fit(X, sample_weight=w)
    b = Clusterer(6, seed=init, estep=YinyangEStep(2), tol=0).fit(doubled)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-12)
    assert a.n_iter_ == b.n_iter_


@fixed_iterations
@pytest.mark.parametrize("n_features", [4, 12])  # first visits direct / in gemm tiles
@pytest.mark.parametrize("make_schedule", [lambda: MiniBatch(batch_size=300, max_passes=4),
                                           lambda: NestedDoubling(initial_batch=500)])
def test_mini_batch_schedules_give_elkans_iterates(make_schedule, n_features):
    """Under mini-batches (running sums, batches drawn with replacement that mix first visits
    and revisits) and nested prefixes, the bounds of samples outside a batch stay valid: the
    same labels and centres as Elkan's E-step at every step."""
    X = _blobs(4000, n_features, 20, seed=11)
    fits = []
    for estep in (ElkanEStep(), YinyangEStep(n_groups=4)):
        fits.append(_fit(X, X[:20], estep, schedule=make_schedule(), random_state=0,
                         max_iter=30))
    (elkan, elkan_centers), (yy, yy_centers) = fits
    assert len(yy_centers) == len(elkan_centers) > 3
    for a, b in zip(yy_centers, elkan_centers):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(yy.labels_, elkan.labels_)


class _Random(Schedule):
    def batches(self, n_samples, state):
        for _ in range(12):
            yield np.sort(state.random_state.choice(n_samples, 250, replace=False))

    def should_stop(self, state, tol):
        return False


class _CheckedYinyang(YinyangEStep):
    """Checks after every E-step that every group bound is below the exact distances."""

    def assign(self, X, sample_weight, centers, state):
        assignment = super().assign(X, sample_weight, centers, state)
        b = state.run.estep_state
        rows = np.arange(state.run.n_samples)[state.run.rows]
        d = np.sqrt(((X[:, None, :] - centers[None]) ** 2).sum(-1))
        d[np.arange(len(rows)), assignment.labels] = np.inf
        for g in range(b.n_groups):
            members = b.members[b.group_starts[g]:b.group_starts[g + 1]]
            assert np.all(b.lower[rows, g] - b.group_shift_sum[g]
                          <= d[:, members].min(1) * (1 + 1e-9))
        return assignment


@fixed_iterations
@pytest.mark.parametrize("schedule", ["full", _Random()])
def test_bounds_are_never_violated_during_a_fit(schedule):
    X = _blobs(1500, 3, 12, np.float32, seed=2)
    Clusterer(20, estep=_CheckedYinyang(n_groups=3), schedule=schedule, random_state=0,
              tol=0, max_iter=40).fit(X)


def test_float64_data_near_float32_range_is_rescaled():
    X = _blobs(400, 3, 5, seed=4) * 1e35
    init = X[:8]
    lloyd = Clusterer(8, seed=init, estep=FullEStep(), tol=0).fit(X)
    yy = Clusterer(8, seed=init, estep=YinyangEStep(n_groups=2), tol=0).fit(X)
    np.testing.assert_array_equal(yy.labels_, lloyd.labels_)
    np.testing.assert_allclose(yy.cluster_centers_, lloyd.cluster_centers_, rtol=1e-12)
    assert yy.n_iter_ == lloyd.n_iter_


def test_partial_fit_streams():
    X = _blobs(1200, 3, 6, seed=5)
    a, b = Clusterer(6, seed=X[:6], estep=FullEStep()), Clusterer(6, seed=X[:6],
                                                                   estep=YinyangEStep())
    for batch in np.array_split(X, 4):
        a.partial_fit(batch)
        b.partial_fit(batch)
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-12)


@fixed_iterations
def test_memory_does_not_grow_with_clusters():
    """The bounds take 4 N t + 12 N bytes; with n_groups='auto' t = min(ceil(C / 10),
    (budget - 12 N) / 4N), whatever C."""
    assert yinyang_groups(100_000, 1000) == 100
    assert yinyang_groups(100_000, 5) == 1
    assert yinyang_groups(1_000_000, 4096, max_bounds_bytes=2 ** 30) == 265
    assert yinyang_groups(1_000_000, 4096, max_bounds_bytes=10) == 1
    assert yinyang_memory(1_000_000, 265) <= 2 ** 30
    X = _blobs(2000, 2, 10)
    budget = yinyang_memory(2000, 3)
    for n_clusters in (40, 400):
        km = Clusterer(n_clusters, estep=YinyangEStep(max_bounds_bytes=budget), random_state=0,
                       max_iter=3, tol=0).fit(X)
        assert km.n_iter_ == 3 and yinyang_groups(2000, n_clusters, budget) == 3
    estep = YinyangEStep(n_groups=3)
    from clusterkit import FitState
    state = FitState(n_clusters=400, n_features=2, random_state=np.random.RandomState(0))
    state.new_run(2000)
    bounds = estep.init_state(X, np.ones(2000), X[:400].copy(), state)
    assert bounds.lower.nbytes == 4 * 2000 * 3 and bounds.n_groups == 3


def test_validation_messages():
    X = _blobs(1000, 2, 4)
    with pytest.raises(ValueError, match=r"n_groups=11 must be <= n_clusters=10\."):
        Clusterer(10, estep=YinyangEStep(n_groups=11)).fit(X)
    allowed = r"^YinyangEStep: n_groups must be 'auto' or an integer >= 1; got "
    with pytest.raises(ValueError, match=allowed + r"'many'\.$"):
        Clusterer(10, estep=YinyangEStep(n_groups="many")).fit(X)
    with pytest.raises(ValueError, match=allowed + r"0\.$"):
        Clusterer(10, estep=YinyangEStep(n_groups=0)).fit(X)
    with pytest.raises(TypeError, match=allowed + r"1\.5\.$"):
        Clusterer(10, estep=YinyangEStep(n_groups=1.5)).fit(X)
    with pytest.raises(ValueError, match=r"YinyangEStep needs .* GiB of bounds for 1000 samples"
                                         r" and n_groups=5, above max_bounds_bytes=1000 .*"
                                         r"FullEStep"):
        Clusterer(10, estep=YinyangEStep(n_groups=5, max_bounds_bytes=1000)).fit(X)
    with pytest.raises(ValueError, match="YinyangEStep assigns hard labels; SoftMStep needs"):
        Clusterer(3, estep=YinyangEStep(), mstep="soft").fit(X)
    with pytest.raises(TypeError, match="sparse"):
        import scipy.sparse as sp
        Clusterer(3, estep=YinyangEStep()).fit(sp.csr_matrix(X))
    # a coreset's size, not the data's, is what the bounds need
    YinyangEStep(n_groups=5, max_bounds_bytes=4 * 300 * 5 + 12 * 300)._validate(
        X, 10, composition(reduce=LWCS(300), estep=YinyangEStep()))


def test_bounded_estep_chooses_by_memory():
    """Elkan's bounds while 4 N C fits the budget, Yinyang's above it: the same iterates."""
    X = _blobs(2000, 9, 12, seed=6)  # above the low dimensions the rule sends to Yinyang
    init = X[:12]
    elkan_bytes = 4 * 2000 * 12 + 16 * 2000 + 8 * 12 * 12
    runs = {}
    for budget, kind in [(elkan_bytes, _ElkanBounds), (elkan_bytes - 1, _YinyangBounds)]:
        seen = []
        estep = BoundedEStep(max_bounds_bytes=budget)

        class _Spy(Schedule):
            def batches(self, n_samples, state):
                while True:
                    seen.append(type(state.run.estep_state))
                    yield slice(0, n_samples)

        km = Clusterer(12, seed=init, estep=estep, schedule=_Spy(), tol=0, max_iter=20)
        km.fit(X)
        assert set(seen) == {kind}
        runs[kind] = km
    np.testing.assert_array_equal(runs[_ElkanBounds].cluster_centers_,
                                  runs[_YinyangBounds].cluster_centers_)
    assert presets.elkan(5).estep == BoundedEStep()


@pytest.mark.parametrize("n_clusters,n_groups", [(12, 1), (600, "auto")])
def test_bounded_estep_at_low_dimension(n_clusters, n_groups):
    """Up to 8 features Yinyang's bounds whatever the budget: one group (Hamerly's bound
    with the neighbour search) up to 512 clusters, the automatic groups above."""
    expected = YinyangEStep(n_groups=n_groups)
    assert BoundedEStep().chosen(10**5, n_clusters, n_features=8) == expected
    assert BoundedEStep(n_groups=3).chosen(10**5, 12, n_features=2) == YinyangEStep(3)
    assert BoundedEStep().chosen(10**5, n_clusters, n_features=9) != expected
    X = _blobs(1500, 2, 10, seed=6)
    km = Clusterer(12, seed=X[:12], estep=BoundedEStep(max_bounds_bytes=10**9), tol=0,
                   max_iter=100).fit(X)
    lloyd = Clusterer(12, seed=X[:12], estep=FullEStep(), tol=0, max_iter=100).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, lloyd.cluster_centers_)
    np.testing.assert_array_equal(km.labels_, lloyd.labels_)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n_groups", [1, 3])
def test_low_dimension_lloyds_iterates(dtype, n_threads, n_groups):
    """Two features, many clusters (the separation test, and with one group the neighbour
    search, both on): every iteration's centres and the labels are Lloyd's; fewer distances.
    Integer coordinates make exact ties between centres, which go to the lower index."""
    rng = np.random.RandomState(7)
    X = np.vstack([_blobs(2999, 2, 40, seed=8), rng.randint(-5, 6, size=(300, 2))])
    X = X.astype(dtype)
    init = X[rng.choice(len(X), 90, replace=False)]
    lloyd, lloyd_centers = _fit(X, init, FullEStep(), n_threads=n_threads)
    yy, yy_centers = _fit(X, init, YinyangEStep(n_groups=n_groups), n_threads=n_threads)
    assert yy.n_iter_ == lloyd.n_iter_
    assert [h["n_changed"] for h in yy.history_] == [h["n_changed"] for h in lloyd.history_]
    for a, b in zip(yy_centers, lloyd_centers):
        if dtype == np.float64:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(yy.labels_, lloyd.labels_)
    assert yy.cluster_centers_.dtype == dtype
    assert yy.n_distance_evals_ < 0.5 * lloyd.n_distance_evals_


def test_bounded_estep_sends_sparse_data_to_elkan():
    import scipy.sparse as sp
    X = sp.random(300, 20, density=0.2, format="csr", random_state=0)
    # (sparse rows are never pruned: the choice says so)
    assert (BoundedEStep(max_bounds_bytes=0).chosen(300, 5, sparse=True)
            == ElkanEStep(0, prune=None))
    km = Clusterer(5, estep=BoundedEStep(), random_state=0).fit(X)
    lloyd = Clusterer(5, estep=FullEStep(), random_state=0).fit(X)
    np.testing.assert_array_equal(km.labels_, lloyd.labels_)


def test_shortcuts():
    X = _blobs(300, 3, 4)
    for name, cls in (("yinyang", YinyangEStep), ("bounded", BoundedEStep)):
        km = Clusterer(4, estep=name, random_state=0).fit(X)
        assert isinstance(km.estep, str) or isinstance(km.estep, cls)
        lloyd = Clusterer(4, estep="full", random_state=0).fit(X)
        np.testing.assert_array_equal(km.labels_, lloyd.labels_)


def test_breathing_refinement_runs_lloyds_iterates():
    """Each breathing round is a new run: the groups are formed again from its start, and
    the rounds follow Lloyd's."""
    from clusterkit import Breathing
    X = _blobs(1500, 3, 16, seed=12)
    fits = [Clusterer(16, seed="random", estep=e, refine=Breathing(m=2), random_state=0).fit(X)
            for e in (FullEStep(), YinyangEStep(n_groups=3))]
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
