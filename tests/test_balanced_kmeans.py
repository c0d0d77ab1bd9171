"""Balanced clusters from the user's side: the ``balanced_kmeans`` preset, ``predict`` with
``BalancedEStep(predict="bounded")`` (the fit's bounds scaled to a new batch), and the
refusal of data in row chunks (a dask array, a memmap read in row chunks)."""
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from clusterkit import BalancedEStep, Breathing, Clusterer, presets
from clusterkit._data import chunked


def _blobs(n=900, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) + 6 * rng.integers(0, 3, size=(n, 1))
    return X.astype(dtype)


def _nearest(X, centers):
    return np.argmin(((X[:, None, :] - centers[None]) ** 2).sum(-1), axis=1)


# --- predict="bounded" --------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [1, 7, 300, 2000])
def test_bounded_predict_holds_the_fits_bounds_scaled_to_the_batch(dtype, m):
    X = _blobs(dtype=dtype)
    km = Clusterer(7, estep=BalancedEStep(110, 140, predict="bounded"),
                   random_state=0).fit(X)
    batch = _blobs(m, seed=1, dtype=dtype)
    labels = km.predict(batch)
    assert labels.dtype == np.int32 and labels.shape == (m,)
    sizes = np.bincount(labels, minlength=7)
    assert sizes.min() >= np.floor(110 * m / 900) and sizes.max() <= np.ceil(140 * m / 900)
    if m >= 300:  # the bounds bind: not the nearest centres
        assert not np.array_equal(labels, _nearest(batch, km.cluster_centers_))


def test_bounded_predict_scales_by_the_fits_weight():
    """After a weighted fit the bounds are in weight: a batch (unit rows) gets the same
    share of its rows as the bounds are of the fit's total weight."""
    X = _blobs(600, seed=2)
    weight = np.random.default_rng(2).uniform(0.5, 2.0, 600)
    total = weight.sum()
    km = Clusterer(5, estep=BalancedEStep(0.18 * total, 0.22 * total, predict="bounded"),
                   random_state=0).fit(X, sample_weight=weight)
    sizes = np.bincount(km.predict(_blobs(500, seed=3)), minlength=5)
    assert sizes.min() >= 90 and sizes.max() <= 110


def test_bounded_predict_is_the_nearest_centre_when_the_bounds_are_loose():
    X = _blobs()
    km = Clusterer(7, estep=BalancedEStep(size_max=900, predict="bounded"),
                   random_state=0).fit(X)
    batch = _blobs(400, seed=4)
    assert np.array_equal(km.predict(batch), _nearest(batch, km.cluster_centers_))


def test_bounded_predict_of_the_training_rows_is_labels_():
    X = _blobs()
    km = Clusterer(7, estep=BalancedEStep(110, 140, predict="bounded"),
                   random_state=0).fit(X)
    assert np.array_equal(km.predict(X), km.labels_)
    unlabelled = Clusterer(7, estep=BalancedEStep(110, 140, predict="bounded"),
                           random_state=0, compute_labels=False)
    assert np.array_equal(unlabelled.fit_predict(X), km.labels_)
    assert not hasattr(unlabelled, "labels_")


def test_nearest_predict_is_the_default_and_survives_clone_and_pickle():
    X = _blobs()
    km = Clusterer(7, estep=BalancedEStep(110, 140), random_state=0).fit(X)
    assert km.estep.predict == "nearest"
    assert np.array_equal(km.predict(X), _nearest(X, km.cluster_centers_))
    bounded = km.set_params(estep__predict="bounded")
    assert bounded.get_params()["estep__predict"] == "bounded"
    assert clone(bounded).estep == BalancedEStep(110, 140, predict="bounded")
    labels = bounded.predict(X)
    assert np.array_equal(pickle.loads(pickle.dumps(bounded)).predict(X), labels)
    # the E-step keeps nothing from the fit: its parameters are all it holds
    assert vars(bounded.estep) == {"size_min": 110, "size_max": 140, "predict": "bounded"}


def test_bounded_predict_refuses_a_dask_array_and_sparse_rows():
    da = pytest.importorskip("dask.array")
    X = _blobs()
    km = Clusterer(7, estep=BalancedEStep(110, 140, predict="bounded"),
                   random_state=0).fit(X)
    with pytest.raises(ValueError, match=r"predict with estep=BalancedEStep\(.*"
                                         r"predict='bounded'\) labels a batch as a whole, "
                                         r"which needs all its rows at once, but X is a dask "
                                         r"array .*pass X\.compute\(\)"):
        km.predict(da.from_array(X, chunks=300))
    with pytest.raises(TypeError, match=r"labels a batch of dense rows as a whole; pass "
                                        r"X\.toarray\(\)"):
        km.predict(sp.csr_matrix(X))
    # nearest centres go chunk by chunk
    nearest = km.set_params(estep__predict="nearest").predict(da.from_array(X, chunks=300))
    assert np.array_equal(nearest.compute(), _nearest(X, km.cluster_centers_))


def test_predict_option_is_checked():
    with pytest.raises(ValueError, match="predict"):
        Clusterer(3, estep=BalancedEStep(predict="exact"), random_state=0).fit(_blobs(60))


# --- row chunks ---------------------------------------------------------------------------

CHUNKS_REFUSED = (r"estep=BalancedEStep: its bounds tie all the rows into one transport "
                  r"problem, solved with a candidate graph of about 200 bytes per row for all "
                  r"the rows at once, so it cannot run chunk by chunk; for data that fit in "
                  r"memory, pass np\.asarray\(X\)")


def test_a_dask_array_is_refused_with_the_reason_and_the_recipe():
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match=CHUNKS_REFUSED):
        presets.balanced_kmeans(3, size_max=250, random_state=0).fit(
            da.from_array(_blobs(600), chunks=200))


def test_a_memmap_read_in_row_chunks_is_refused_and_a_loaded_one_fits(tmp_path, monkeypatch):
    np.save(tmp_path / "X.npy", _blobs(600))
    X_mm = np.load(tmp_path / "X.npy", mmap_mode="r")
    model = presets.balanced_kmeans(3, size_min=180, size_max=220, random_state=0)
    with monkeypatch.context() as patch:  # a memmap whose copy exceeds the memory budget
        patch.setattr(chunked, "exceeds_budget", lambda X: True)
        with pytest.raises(ValueError, match=CHUNKS_REFUSED):
            model.fit(X_mm)
    # the recipe: rows in memory
    sizes = np.bincount(model.fit(np.asarray(X_mm)).labels_)
    assert sizes.min() >= 180 and sizes.max() <= 220


# --- the preset ---------------------------------------------------------------------------

def test_preset_is_the_bounded_estep_without_rounds_unless_asked():
    km = presets.balanced_kmeans(10, size_min=5, size_max=20)
    assert km.estep == BalancedEStep(5, 20) and km.refine is None
    assert presets.balanced_kmeans(10, size_max=20, refine="breathing").refine == "breathing"
    with pytest.raises(TypeError, match="This preset sets estep itself"):
        presets.balanced_kmeans(10, estep="full")


@pytest.mark.parametrize("refine", [None, Breathing(max_rounds=3)])
def test_preset_fit_holds_the_bounds(refine):
    X = _blobs()
    km = presets.balanced_kmeans(7, size_min=110, size_max=140, refine=refine,
                                 random_state=0).fit(X)
    sizes = np.bincount(km.labels_, minlength=7)
    assert sizes.min() >= 110 and sizes.max() <= 140
    assert hasattr(km, "refinement_log_") == (refine is not None)


def test_preset_memory_estimate_counts_the_candidate_graph():
    n = 100_000
    bounded = presets.balanced_kmeans(500, size_max=220).estimate_memory((n, 32), "float32")
    lloyd = presets.lloyd(500).estimate_memory((n, 32), "float32")
    assert bounded.phases["estep"] - lloyd.phases["estep"] >= 150 * n


def test_balanced_is_no_shortcut_and_says_what_to_pass():
    with pytest.raises(ValueError, match=r"estep='balanced' is not a shortcut: a shortcut "
                                         r"builds its E-step with the defaults, and "
                                         r"BalancedEStep's bounds have none; pass "
                                         r"estep=BalancedEStep\(size_min=\.\.\., "
                                         r"size_max=\.\.\.\), or presets\.balanced_kmeans"):
        Clusterer(3, estep="balanced").fit(_blobs(60))


def test_a_loaded_model_predicts_nearest_centres_and_cannot_scale_bounds(tmp_path):
    from clusterkit import load_model, save_model
    X = _blobs()
    km = Clusterer(7, estep=BalancedEStep(110, 140, predict="bounded"),
                   random_state=0).fit(X)
    save_model(km, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert np.array_equal(loaded.predict(X), _nearest(X, km.cluster_centers_))
    loaded.set_params(estep=BalancedEStep(110, 140, predict="bounded"))
    with pytest.raises(ValueError, match=r"This model does not know the weight of the rows "
                                         r"it was fitted on .*refit it"):
        loaded.predict(X)
