"""SinglePointMoves: never worse than the run it polishes, ends at a D-local optimum (no
single move of a row lowers the k-means error, checked by brute force), exact objective
accounting, weights as repetition, both dtypes, the compositions it refuses; refiners in
turn (RefinerSequence, refine=(a, b))."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from clusterkit import (LWCS, BalancedEStep, Breathing, Clusterer, NoRefinement,
                        RefinerSequence, SinglePointMoves, presets)
from clusterkit.datasets import make_gaussian_blobs
from clusterkit.metrics import quantization_error


@pytest.fixture(scope="module")
def blobs():
    # overlapping blobs and many clusters: Lloyd's fixed points leave rows to move
    return make_gaussian_blobs(2000, 3, 25, cluster_std=2.0, random_state=0)[0]


def _means(X, w, labels, n_clusters):
    weight = np.bincount(labels, w, n_clusters)
    sums = np.zeros((n_clusters, X.shape[1]))
    np.add.at(sums, labels, w[:, None] * X)
    return sums / weight[:, None], weight


def best_single_move(X, w, labels, n_clusters):
    """The largest drop of the weighted k-means error by moving one row of positive weight
    (not the last of its cluster) to another cluster, by brute force over all rows and
    clusters; and the error."""
    X = np.asarray(X, dtype=np.float64)
    centers, weight = _means(X, w, labels, n_clusters)
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    rows = np.arange(len(X))
    counts = np.bincount(labels[w > 0], minlength=n_clusters)
    movable = (w > 0) & (counts[labels] > 1)
    wa = weight[labels]
    rem = np.where(movable, w * wa / np.where(movable, wa - w, 1.0) * d2[rows, labels], 0.0)
    add = w[:, None] * weight[None] / (weight[None] + w[:, None]) * d2
    add[rows, labels] = np.inf
    gain = np.where(movable, rem - add.min(1), -np.inf)
    return float(gain.max()), float((w * d2[rows, labels]).sum())


def _d_local_check(model, X, w=None):
    w = np.ones(len(X)) if w is None else np.asarray(w, dtype=np.float64)
    gain, error = best_single_move(X, w, model.labels_, model.n_clusters)
    assert gain <= 1e-9 * error, f"a single move still lowers the error by {gain}"
    return error


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_polished_lloyd_is_a_d_local_optimum_and_not_worse(blobs, seed):
    X = blobs
    plain = presets.lloyd(25, tol=0, random_state=seed).fit(X)
    gain, _ = best_single_move(X, np.ones(len(X)), plain.labels_, 25)
    assert gain > 0  # Lloyd's fixed point is not one here
    model = presets.lloyd(25, tol=0, random_state=seed, refine=SinglePointMoves()).fit(X)
    error = _d_local_check(model, X)
    assert model.inertia_ < plain.inertia_
    np.testing.assert_allclose(error, model.inertia_, rtol=1e-9)
    log = model.refinement_log_
    # one entry per pass, the objective tracked by the moves' exact changes never goes up
    assert [entry["pass"] for entry in log] == list(range(1, len(log) + 1))
    assert all(e["objective"] <= e["objective_before"] for e in log)
    assert all(a["objective"] == b["objective_before"] for a, b in zip(log, log[1:]))
    assert log[-1]["rows_moved"] == 0 and all(e["kept"] for e in log)
    assert log[0]["objective_before"] <= plain.inertia_ * (1 + 1e-12)
    # and agrees with the objective recomputed from the final centres and labels
    np.testing.assert_allclose(log[-1]["objective_recomputed"], log[-1]["objective"],
                               rtol=1e-10)
    np.testing.assert_allclose(model.inertia_, quantization_error(X, model.cluster_centers_),
                               rtol=1e-9)
    # the history ends with the polish: the plain run's steps, then one entry
    assert len(model.history_) == len(plain.history_) + 1
    last = model.history_[-1]
    assert last["polish_passes"] == len(log) and last["n_changed"] > 0
    np.testing.assert_allclose(last["objective"], model.inertia_, rtol=1e-9)
    assert model.objective_ == last["objective"]
    np.testing.assert_array_equal(model.labels_, model.predict(X))
    assert model.cost_["refinement"] > 0


@pytest.mark.parametrize("make", [
    lambda **kw: presets.elkan(25, **kw),
    lambda **kw: presets.minibatch(25, batch_size=256, max_passes=2, **kw),
    lambda **kw: presets.lwcs_lloyd(25, coreset_size=512, **kw),
    lambda **kw: presets.var_kmeans_s(25, **kw),
    lambda **kw: Clusterer(25, estep="yinyang", n_init=2, **kw),
], ids=["elkan", "minibatch", "lwcs_lloyd", "var_kmeans_s", "yinyang_n_init"])
def test_never_worse_than_the_run_it_polishes(blobs, make):
    plain = make(random_state=0).fit(blobs)
    model = make(random_state=0, refine=SinglePointMoves()).fit(blobs)
    log = model.refinement_log_
    assert log and all(e["objective"] <= e["objective_before"] for e in log)
    if not any(e["kept"] for e in log):  # nothing gained: the run as it was
        np.testing.assert_array_equal(model.cluster_centers_, plain.cluster_centers_)
    if "lwcs" not in str(make.__code__.co_consts):  # (a coreset fit polishes the coreset)
        assert model.inertia_ <= plain.inertia_ * (1 + 1e-9)


def test_the_result_does_not_depend_on_the_candidates_or_threads(blobs):
    """The bounds only save distances: every number of candidates (one: nearly every row
    checked in full; all clusters: none) and thread count moves the same rows."""
    X = blobs
    fits = [presets.lloyd(25, tol=0, random_state=0, n_threads=t,
                          refine=SinglePointMoves(n_candidates=k)).fit(X)
            for k, t in [(4, 1), (1, 1), (2, 2), (25, 2), (40, 1)]]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.labels_, fits[0].labels_)
        np.testing.assert_array_equal(other.cluster_centers_, fits[0].cluster_centers_)
        assert [e["rows_moved"] for e in other.refinement_log_] == [
            e["rows_moved"] for e in fits[0].refinement_log_]
    full = [sum(e["full_checks"] for e in f.refinement_log_) for f in fits]
    assert full[1] > full[0] and full[3] == full[4] == 0
    assert fits[0].cost_["refinement"] < fits[1].cost_["refinement"]


def test_dtypes_are_kept_and_agree(blobs, dtype):
    X = blobs.astype(dtype)
    model = presets.lloyd(25, tol=0, random_state=0, refine=SinglePointMoves()).fit(X)
    assert model.cluster_centers_.dtype == dtype
    _d_local_check(model, X)
    log = model.refinement_log_
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(log[-1]["objective_recomputed"], log[-1]["objective"],
                               rtol=rtol)


def test_weights(blobs, dtype):
    """Weighted rows move as a whole: the result is a D-local optimum of the weighted error;
    unit weights are no weights, and scaling all weights changes nothing. (Weights are not
    repetitions here: three copies of a row can move one at a time, a row of weight three
    only at once.)"""
    X = blobs[:997].astype(dtype)
    w = np.random.RandomState(0).randint(1, 4, X.shape[0]).astype(dtype)
    start = X[:25].copy()

    def fit(sample_weight):
        return presets.lloyd(25, seed=start, tol=0, refine=SinglePointMoves()).fit(
            X, sample_weight=sample_weight)

    weighted = fit(w)
    assert any(e["kept"] for e in weighted.refinement_log_)
    _d_local_check(weighted, X, w)
    scaled = fit(w * dtype(2.5))
    np.testing.assert_array_equal(scaled.labels_, weighted.labels_)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(scaled.cluster_centers_, weighted.cluster_centers_, rtol=rtol,
                               atol=rtol)
    unit, none = fit(np.ones(len(X), dtype=dtype)), fit(None)
    np.testing.assert_array_equal(unit.cluster_centers_, none.cluster_centers_)
    np.testing.assert_array_equal(unit.labels_, none.labels_)


def test_zero_weights_and_a_single_cluster(blobs):
    X = blobs[:500]
    w = np.ones(500)
    w[::5] = 0
    model = presets.lloyd(10, tol=0, random_state=0, refine=SinglePointMoves()).fit(
        X, sample_weight=w)
    _d_local_check(model, X, w)
    one = presets.lloyd(1, random_state=0, refine=SinglePointMoves()).fit(X)
    plain = presets.lloyd(1, random_state=0).fit(X)
    np.testing.assert_array_equal(one.cluster_centers_, plain.cluster_centers_)
    assert one.refinement_log_ == []


def test_max_passes_ends_early_and_a_fixed_point_polish_changes_nothing(blobs):
    X = blobs
    once = presets.lloyd(25, tol=0, random_state=0, refine=SinglePointMoves(max_passes=1))
    once.fit(X)
    assert len(once.refinement_log_) == 1 and once.refinement_log_[0]["rows_moved"] > 0
    polished = presets.lloyd(25, tol=0, random_state=0, refine=SinglePointMoves()).fit(X)
    assert polished.inertia_ <= once.inertia_
    # polishing a polished fit moves nothing: the run comes back as it was
    again = presets.lloyd(25, seed=polished.cluster_centers_, tol=0,
                          refine=SinglePointMoves()).fit(X)
    start = presets.lloyd(25, seed=polished.cluster_centers_, tol=0).fit(X)
    assert [e["rows_moved"] for e in again.refinement_log_] == [0]
    assert not again.refinement_log_[0]["kept"]
    np.testing.assert_array_equal(again.cluster_centers_, start.cluster_centers_)
    assert len(again.history_) == len(start.history_)


def test_refused_compositions(blobs):
    X = blobs[:300]
    with pytest.raises(ValueError, match="SinglePointMoves cannot refine the free energy"):
        presets.gmm(4, refine=SinglePointMoves()).fit(X)
    with pytest.raises(ValueError, match="puts on the unit sphere"):
        presets.spherical_kmeans(4, refine=SinglePointMoves()).fit(X)
    with pytest.raises(ValueError, match="would break the constraint of BalancedEStep"):
        Clusterer(4, estep=BalancedEStep(), refine=SinglePointMoves()).fit(X)
    with pytest.raises(TypeError, match="SinglePointMoves cannot take sparse"):
        presets.lloyd(4, refine=SinglePointMoves()).fit(sp.csr_matrix(X))
    with pytest.raises(AttributeError) as error:
        presets.lloyd(4, refine=SinglePointMoves()).partial_fit(X)
    assert "partial_fit cannot refine" in str(error.value.__cause__)
    for params, match in [({"max_passes": 0}, "max_passes must be an integer >= 1; got 0"),
                          ({"n_candidates": 0}, "n_candidates must be an integer >= 1")]:
        with pytest.raises(ValueError, match=match):
            presets.lloyd(4, refine=SinglePointMoves(**params)).fit(X)


def test_row_chunks_are_refused(blobs):
    da = pytest.importorskip("dask.array")
    Xd = da.from_array(blobs[:400], chunks=(100, 3))
    with pytest.raises(ValueError, match=r"refine=SinglePointMoves cannot run chunk by chunk "
                                         r"yet \(refine=SinglePointMoves: its moves visit"):
        presets.lloyd(4, refine=SinglePointMoves()).fit(Xd)
    with pytest.raises(ValueError, match=r"refine=RefinerSequence cannot run chunk by chunk "
                                         r"yet \(refine=RefinerSequence: SinglePointMoves: "):
        presets.lloyd(4, refine=(Breathing(), SinglePointMoves())).fit(Xd)


# -- refiners in turn ----------------------------------------------------------------------

def test_a_tuple_of_refiners_runs_them_in_turn(blobs):
    X = blobs
    model = presets.lloyd(25, random_state=0, refine=(Breathing(m=2), SinglePointMoves()))
    assert model._strategies(X, X.mean(0)).refine == RefinerSequence(
        (Breathing(m=2), SinglePointMoves()))
    model.fit(X)
    breathing = presets.lloyd(25, random_state=0, refine=Breathing(m=2)).fit(X)
    log = model.refinement_log_
    names = [entry["refiner"] for entry in log]
    n_rounds = len(breathing.refinement_log_)
    assert names == ["Breathing"] * n_rounds + ["SinglePointMoves"] * (len(log) - n_rounds)
    # the breathing rounds are those of breathing alone; the moves polish what they kept
    assert [e["objective"] for e in log[:n_rounds]] == [
        e["objective"] for e in breathing.refinement_log_]
    assert model.inertia_ <= breathing.inertia_ * (1 + 1e-12)
    _d_local_check(model, X)
    # the history is the path to the centres: the kept rounds, then the moves if kept
    kept_rounds = {e["round"] for e in log if "round" in e and e["kept"]}
    rounds = {h.get("refinement_round", 0) for h in model.history_} - {0}
    assert rounds <= kept_rounds
    polished = any(e["kept"] for e in log[n_rounds:])
    assert ("polish_passes" in model.history_[-1]) == polished


def test_moves_before_breathing_keep_the_rounds_aligned(blobs):
    """A refiner's own log entries (the passes, without a "round") do not shift which entry
    judges which round: the history holds the kept rounds' steps only."""
    X = blobs
    model = presets.lloyd(25, tol=0, random_state=0,
                          refine=(SinglePointMoves(), Breathing(m=2, tol=0))).fit(X)
    log = model.refinement_log_
    rounds = [e for e in log if "round" in e]
    assert rounds and log[0]["refiner"] == "SinglePointMoves" and "round" not in log[0]
    kept = {e["round"] for e in rounds if e["kept"]}
    in_history = [h.get("refinement_round", 0) for h in model.history_]
    assert set(in_history) - {0} <= kept
    assert max(in_history) == max(kept, default=0)
    # the moves' entry is in the history before the rounds
    polish = [i for i, h in enumerate(model.history_) if "polish_passes" in h]
    assert len(polish) == 1 and in_history[polish[0]] == 0


def test_sequence_parameters_and_refusals(blobs):
    X = blobs[:300]
    sequence = RefinerSequence((Breathing(m=1), "breathing"))
    with pytest.raises(TypeError, match=r"RefinerSequence: refiners must be a non-empty "
                                        r"tuple of Refiner"):
        presets.lloyd(4, refine=sequence).fit(X)
    with pytest.raises(TypeError, match="non-empty tuple of Refiner"):
        presets.lloyd(4, refine=RefinerSequence(())).fit(X)
    with pytest.raises(ValueError, match="Breathing: m must be an integer >= 1; got 0"):
        presets.lloyd(4, refine=(SinglePointMoves(), Breathing(m=0))).fit(X)
    with pytest.raises(ValueError, match=r"SinglePointMoves cannot refine the free energy "
                                         r"that SoftMStep optimises; leave it out of refine"):
        presets.gmm(4, refine=(Breathing(), SinglePointMoves())).fit(X)
    # strings name refiners inside the tuple too; the sequence declares what all declare
    resolved = Clusterer(4, refine=("breathing", "none"))._strategies(X, X.mean(0)).refine
    assert resolved == RefinerSequence((Breathing(), NoRefinement()))
    assert resolved.refines and resolved.chunks and resolved.objectives == Breathing.objectives
    assert not RefinerSequence((NoRefinement(),)).refines
    assert RefinerSequence((Breathing(), SinglePointMoves())).objectives == (
        SinglePointMoves.objectives)
    model = Clusterer(4, refine=(Breathing(), SinglePointMoves(max_passes=3)))
    assert clone(model).refine == model.refine and clone(model).refine[1] is not model.refine[1]
    assert "SinglePointMoves(max_passes=3" in repr(model)


def test_check_estimator_with_single_point_moves():
    from sklearn.utils.estimator_checks import check_estimator
    reason = "the random seeding depends on the number of rows, not only on the weights"
    for refine in (SinglePointMoves(), (Breathing(), SinglePointMoves())):
        check_estimator(Clusterer(refine=refine), expected_failed_checks={
            "check_sample_weight_equivalence_on_dense_data": reason})


def test_lwcs_polishes_the_coreset(blobs):
    model = Clusterer(25, reduce=LWCS(512), random_state=0, refine=SinglePointMoves())
    model.fit(blobs)
    assert model.refinement_log_[0]["objective_before"] >= model.refinement_log_[-1]["objective"]
