"""The command line end to end on small files, and the ablation API with its plots."""
import subprocess
import sys

import numpy as np
import pytest

from clusterkit import ablate, plot_history, plot_tradeoff, presets
from clusterkit import __main__ as cli
from clusterkit.datasets import make_birch_grid


@pytest.fixture(scope="module")
def data():
    X, _, _ = make_birch_grid(n_side=4, n_per_cluster=30, random_state=0)
    return X


@pytest.fixture
def files(tmp_path, data):
    np.save(tmp_path / "X.npy", data)
    np.savez(tmp_path / "X.npz", X=data.astype(np.float32))
    np.savetxt(tmp_path / "X.csv", data, delimiter=",")
    (tmp_path / "bad.csv").write_text("1,2\n3,oops\n")
    np.savez(tmp_path / "noX.npz", Y=data)
    np.save(tmp_path / "flat.npy", data[:, 0])
    return tmp_path


def _run(argv, capsys):
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("name", ["X.npy", "X.npz", "X.csv"])
def test_fit_then_predict_reproduces_the_estimator(files, data, name, capsys):
    model = files / f"{name}.model.npz"
    status, out, err = _run(["fit", str(files / name), "-k", "16", "--preset", "lloyd",
                             "--param", "random_state=3", "--param", "max_iter=50",
                             "--out", str(model)], capsys)
    assert status == 0 and err == "" and "16 clusters" in out
    X = cli.load_data(files / name)
    expected = presets.lloyd(16, random_state=3, max_iter=50).fit(X)
    labels_file = files / "labels.npy"
    status, _, err = _run(["predict", str(model), str(files / name), "--out",
                           str(labels_file)], capsys)
    assert status == 0 and err == ""
    np.testing.assert_array_equal(np.load(labels_file), expected.predict(X))
    np.testing.assert_array_equal(cli.load_model(model).cluster_centers_,
                                  expected.cluster_centers_)
    status, out, _ = _run(["predict", str(model), str(files / name)], capsys)
    assert status == 0
    np.testing.assert_array_equal(np.array(out.split(), dtype=int), expected.predict(X))


def test_model_file_holds_no_code(files, capsys):
    model = files / "m.npz"
    assert _run(["fit", str(files / "X.npy"), "-k", "4", "--out", str(model)], capsys)[0] == 0
    with np.load(model, allow_pickle=False) as archive:  # loads without pickle
        assert {"cluster_centers", "x_mean", "config"} <= set(archive.files)


@pytest.mark.parametrize("argv,message", [
    (["fit", "{d}/missing.npy", "-k", "3", "--out", "{d}/m.npz"], "missing.npy: no such file"),
    (["fit", "{d}/bad.csv", "-k", "3", "--out", "{d}/m.npz"], "bad.csv: cannot read it"),
    (["fit", "{d}/noX.npz", "-k", "3", "--out", "{d}/m.npz"], "has no array 'X'"),
    (["fit", "{d}/flat.npy", "-k", "3", "--out", "{d}/m.npz"], "expected a 2-D numeric array"),
    (["fit", "{d}/X.npy", "-k", "3", "--preset", "nope", "--out", "{d}/m.npz"],
     "unknown preset 'nope'"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "bogus=1", "--out", "{d}/m.npz"],
     "--param bogus: not a parameter of preset lloyd"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "novalue", "--out", "{d}/m.npz"],
     "expected key=value"),
    (["fit", "{d}/X.npy", "-k", "100000", "--out", "{d}/m.npz"], "must be <= n_samples"),
    (["predict", "{d}/missing.npz", "{d}/X.npy"], "missing.npz: no such file"),
    (["predict", "{d}/X.npy", "{d}/X.npy"], "not a clusterkit model"),
    (["ablate", "{d}/X.npy", "-k", "3", "--presets", "lloyd,nope"], "unknown preset 'nope'"),
])
def test_errors_are_one_line_with_status_2(files, argv, message, capsys):
    status, out, err = _run([a.format(d=files) for a in argv], capsys)
    assert status == 2
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_predict_refuses_other_feature_counts(files, capsys):
    model = files / "m.npz"
    _run(["fit", str(files / "X.npy"), "-k", "3", "--out", str(model)], capsys)
    np.save(files / "three.npy", np.zeros((5, 3)))
    status, _, err = _run(["predict", str(model), str(files / "three.npy")], capsys)
    assert status == 2 and "3 features, the model has 2" in err


def test_help_of_every_command():
    for command in ([], ["fit"], ["predict"], ["ablate"], ["presets"], ["demo"]):
        result = subprocess.run([sys.executable, "-m", "clusterkit", *command, "--help"],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0 and "usage:" in result.stdout, command


def test_presets_lists_every_preset(capsys):
    status, out, _ = _run(["presets"], capsys)
    assert status == 0
    assert [line.split()[0] for line in out.splitlines()] == list(presets.PRESETS)


def test_ablate_prints_the_table_and_writes_csv_and_plots(files, capsys):
    pytest.importorskip("matplotlib")
    out_dir = files / "ablation"
    status, out, err = _run(["ablate", str(files / "X.npy"), "-k", "16", "--presets",
                             "lloyd,lwcs_lloyd", "--seeds", "2", "--out", str(out_dir)], capsys)
    assert status == 0 and err == ""  # no progress bar when not on a terminal
    assert out.splitlines()[1].startswith("lloyd") and "±" in out
    lines = (out_dir / "ablation.csv").read_text().splitlines()
    assert lines[0].startswith("variant,seed,seconds") and len(lines) == 5
    assert (out_dir / "history.png").stat().st_size > 0
    assert (out_dir / "tradeoff.png").stat().st_size > 0


def test_ablate_table(data):
    table = ablate(data, 16, {"lloyd": "lloyd", "elkan": presets.elkan(16),
                              "gmm": "gmm"}, seeds=[0, 1], verbose=0)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert [(r["variant"], r["seed"]) for r in rows] == [
        (v, s) for v in ("lloyd", "elkan", "gmm") for s in (0, 1)]
    by = {(r["variant"], r["seed"]): r for r in rows}
    for seed in (0, 1):
        # Elkan follows Lloyd's iterates from the same seed: the same error, eta 0
        assert by[("lloyd", seed)]["eta"] == 0
        assert abs(by[("elkan", seed)]["eta"]) < 1e-9
        lloyd = presets.lloyd(16, random_state=seed).fit(data)
        assert by[("lloyd", seed)]["n_distance_evals"] == lloyd.n_distance_evals_
        assert by[("lloyd", seed)]["qe"] == pytest.approx(lloyd.inertia_, rel=1e-9)
    for r in rows:
        assert r["seconds"] >= r["seconds_iterations"] > 0 and r["n_iter"] == len(r["history"])
    held_out = ablate(data, 16, {"lloyd": "lloyd"}, seeds=1, X_test=data[:50], verbose=0)
    rows = held_out.to_dict("records") if hasattr(held_out, "to_dict") else held_out
    centers = presets.lloyd(16, random_state=0).fit(data).cluster_centers_
    d2 = ((data[:50, None] - centers[None]) ** 2).sum(-1).min(1)
    assert rows[0]["qe"] == pytest.approx(d2.sum(), rel=1e-9)


@pytest.mark.parametrize("variants,error", [({}, ValueError), ({"a": 3}, TypeError),
                                            ({"a": "nope"}, ValueError)])
def test_ablate_refuses_bad_variants(data, variants, error):
    with pytest.raises(error):
        ablate(data, 4, variants, seeds=1, verbose=0)


def test_plots_show_one_curve_per_variant(data):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    table = ablate(data, 16, {"lloyd": "lloyd", "lwcs": "lwcs_lloyd"}, seeds=2, verbose=0)
    figure = plot_history(table)
    left, right = figure.axes
    assert [line.get_label() for line in left.get_lines()] == ["lloyd", "lwcs"]
    assert left.get_xlabel() == "seconds" and right.get_xlabel() == "distance evaluations"
    assert left.get_ylabel() == "objective"
    figure = plot_tradeoff(table)
    (axis,) = figure.axes
    assert axis.get_xlabel().startswith("relative error") and "speed-up" in axis.get_ylabel()
    assert [t.get_text() for t in axis.get_legend().get_texts()] == ["lloyd", "lwcs"]
