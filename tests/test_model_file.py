"""save_model and load_model: every preset round-trips, and files that are no model are
refused with a message naming the file and what a model file is."""
import io
import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.exceptions import NotFittedError

from clusterkit import Clusterer, load_model, presets, save_model
from clusterkit.datasets import make_birch_grid


@pytest.fixture(scope="module")
def data():
    X, _, _ = make_birch_grid(n_side=3, n_per_cluster=30, random_state=0)
    return X


@pytest.mark.parametrize("preset", presets.PRESETS)
def test_every_preset_round_trips(tmp_path, data, preset):
    """Predictions, distances and scores of the loaded model equal the fitted one's; a
    mixture's probabilities and log-likelihoods too, and only a mixture has them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few iterations: convergence warnings
        model = presets.build_preset(preset, 9, random_state=0, max_iter=10).fit(data)
    path = tmp_path / "model.npz"
    save_model(model, path)
    loaded = load_model(path)
    Y = data[::3] * 1.1 + 0.2
    np.testing.assert_array_equal(loaded.predict(Y), model.predict(Y))
    np.testing.assert_array_equal(loaded.transform(Y), model.transform(Y))
    assert loaded.score(Y) == model.score(Y)
    assert loaded.n_iter_ == model.n_iter_ and loaded.cost_ == model.cost_
    assert hasattr(loaded, "predict_proba") == hasattr(model, "predict_proba")
    if hasattr(model, "predict_proba"):
        np.testing.assert_array_equal(loaded.predict_proba(Y), model.predict_proba(Y))
        np.testing.assert_array_equal(loaded.score_samples(Y), model.score_samples(Y))
        assert loaded.sigma2_ == model.sigma2_


def test_float32_composed_model_and_file_objects(tmp_path, data):
    """A composition of one's own, float32 kept; a path is written as given (no suffix
    added), a file object works, and a loaded model saves again."""
    X = data.astype(np.float32)
    model = Clusterer(4, estep="elkan", random_state=0).fit(X)
    path = tmp_path / "model.clusters"
    save_model(model, path)
    assert path.exists() and not (tmp_path / "model.clusters.npz").exists()
    loaded = load_model(path)
    assert loaded.cluster_centers_.dtype == np.float32
    buffer = io.BytesIO()
    save_model(loaded, buffer)
    (tmp_path / "again.npz").write_bytes(buffer.getvalue())
    again = load_model(tmp_path / "again.npz")
    np.testing.assert_array_equal(again.cluster_centers_, model.cluster_centers_)
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    assert again.inertia_ == pytest.approx(model.inertia_)


def test_save_model_refuses_what_is_no_fitted_clusterer(tmp_path):
    with pytest.raises(TypeError, match="model must be a fitted Clusterer, got KMeans"):
        save_model(KMeans(2), tmp_path / "m.npz")
    with pytest.raises(NotFittedError):
        save_model(Clusterer(2), tmp_path / "m.npz")


WHAT = (r"a clusterkit model is the \.npz archive of arrays and JSON that "
        r"clusterkit\.save_model or 'clusterkit fit --out' writes\.")


@pytest.mark.parametrize("name,write,problem", [
    ("arrays.npz", lambda p: np.savez(p, X=np.zeros((3, 2))),
     r"no array cluster_centers, config, x_mean \(it has X\)"),
    ("objects.npy", lambda p: np.save(p, np.array([{}], dtype=object), allow_pickle=True),
     r"not an \.npz archive but one \.npy array"),
    ("objects.npz", lambda p: np.savez(p, config=np.array([{}], dtype=object),
                                       cluster_centers=np.zeros((2, 2)), x_mean=np.zeros(2)),
     r"its array 'config' holds pickled Python objects, which clusterkit never loads"),
    ("notes.txt", lambda p: p.write_text("centres: 1, 2\n"),
     r"not an \.npz archive \(a zip file of \.npy arrays\)"),
    ("broken.npz", lambda p: p.write_bytes(b"PK\x03\x04 not a zip archive"),
     "File is not a zip file"),
])
def test_load_model_names_the_file_and_what_a_model_is(tmp_path, name, write, problem):
    path = tmp_path / name
    write(path)
    with pytest.raises(ValueError, match=f"{name}: not a clusterkit model: {problem}; "
                                         f"{WHAT}") as raised:
        load_model(path)
    assert "allow_pickle" not in str(raised.value) and "unsafe" not in str(raised.value)


def test_load_model_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"nope.npz: no such file; {WHAT}"):
        load_model(tmp_path / "nope.npz")
