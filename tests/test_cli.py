"""The command line end to end on small files, and the ablation API with its plots."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clusterkit import (AFKMC2, MiniBatch, __main__ as cli, ablate, plot_history, plot_tradeoff,
                        presets)
from clusterkit._estimator.guide import GUIDE_FIELDS
from clusterkit._estimator.registry import resolve
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
    (tmp_path / "blank.csv").write_text("\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "empty.npy").write_text("")
    (tmp_path / "X.txt").write_text("1 2\n")
    (tmp_path / "text.npy").write_text("1,2\n3,4\n")
    (tmp_path / "zip.npz").write_bytes(b"PK\x03\x04 not a zip archive")
    np.save(tmp_path / "objects.npy", np.array([{}], dtype=object), allow_pickle=True)
    np.savez(tmp_path / "noX.npz", Y=data)
    np.save(tmp_path / "flat.npy", data[:, 0])
    np.save(tmp_path / "three.npy", np.zeros((5, 3)))
    np.save(tmp_path / "nan.npy", np.where(np.arange(data.size).reshape(data.shape) == 7,
                                           np.nan, data))
    # an archive whose member X fails its checksum
    content = bytearray((tmp_path / "X.npz").read_bytes())
    start = content.index(b"\x93NUMPY") + 200
    content[start:start + 16] = bytes(16)
    (tmp_path / "member.npz").write_bytes(bytes(content))
    return tmp_path


@pytest.fixture
def model(files):
    """A model file of lloyd with 3 clusters on X.npy."""
    path = files / "model.npz"
    estimator = presets.lloyd(3, random_state=0).fit(np.load(files / "X.npy"))
    cli.save_model(path, estimator, "lloyd", {"random_state": 0})
    return path


def _run(argv, capsys):
    try:
        status = cli.main(argv)
    except SystemExit as done:  # argparse: --help and errors in the arguments
        status = done.code
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


def _assert_user_error(status, out, err, message):
    """Status 2, nothing on standard output, and one line on standard error naming it."""
    assert status == 2, err
    assert out == "" and err.count("\n") == 1 and err.endswith("\n"), err
    assert message in err and "Traceback" not in err, err


@pytest.mark.parametrize("argv,message", [
    # arguments
    ([], "clusterkit: error: the following arguments are required: command"),
    (["nope"], "invalid choice: 'nope'"),
    (["fti"], "Did you mean 'fit'? (see 'clusterkit --help')"),
    (["fit", "{d}/X.npy", "-k", "3", "--out", "{d}/m.npz", "-v", "barr"],
     "invalid choice: 'barr'"),
    (["fit", "{d}/X.npy", "-k", "3", "--out", "{d}/m.npz", "-v", "barr"],
     "Did you mean 'bar'?"),
    (["fit", "{d}/X.npy", "-k", "three", "--out", "{d}/m.npz"],
     "clusterkit fit: error: argument -k: invalid int value: 'three'"),
    (["fit", "{d}/X.npy", "--out", "{d}/m.npz"], "required: -k"),
    (["fit", "{d}/X.npy", "-k", "3", "--preset", "nope", "--out", "{d}/m.npz"],
     "unknown preset 'nope'"),
    (["fit", "{d}/X.npy", "-k", "3", "--preset", "llyod", "--out", "{d}/m.npz"],
     "unknown preset 'llyod'; the presets are lloyd, elkan, minibatch"),
    (["fit", "{d}/X.npy", "-k", "3", "--preset", "llyod", "--out", "{d}/m.npz"],
     f"{presets.PRESETS[-1]}. Did you mean 'lloyd'?"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "seed=kmeans++", "--out", "{d}/m.npz"],
     "instance of Seeder. Did you mean 'k-means++'?"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "bogus=1", "--out", "{d}/m.npz"],
     "--param bogus: not a parameter of preset lloyd; its parameters are callback"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "max_iters=5", "--out", "{d}/m.npz"],
     "did you mean max_iter?"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "init=random", "--out", "{d}/m.npz"],
     "--param init: not a parameter of preset lloyd (it is scikit-learn's); pass seed= "),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "novalue", "--out", "{d}/m.npz"],
     "expected key=value"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "=3", "--out", "{d}/m.npz"],
     "expected key=value"),
    # values the estimator refuses when it fits
    (["fit", "{d}/X.npy", "-k", "0", "--out", "{d}/m.npz"], "n_clusters=0 must be >= 1"),
    (["fit", "{d}/X.npy", "-k", "100000", "--out", "{d}/m.npz"], "must be <= n_samples"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "max_iter=-1", "--out", "{d}/m.npz"],
     "max_iter=-1 must be >= 1"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "schedule=3", "--out", "{d}/m.npz"],
     "schedule must be an instance of Schedule"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "seed=nope", "--out", "{d}/m.npz"],
     "--param seed: Unknown seed='nope'; expected one of 'k-means++'"),
    (["fit", "{d}/X.npy", "-k", "3", "--preset", "vc_gmm", "--param", "reduce=none", "--out",
      "{d}/m.npz"], "--param reduce: preset vc_gmm sets reduce itself, to LWCS(size=None), as "
                   "part of what vc_gmm is; choose a preset with the reduce you want"),
    (["fit", "{d}/X.npy", "-k", "3", "--param", "n_threads=0", "--out", "{d}/m.npz"],
     "n_threads=0 must be"),
    (["fit", "{d}/nan.npy", "-k", "3", "--out", "{d}/m.npz"], "Input X contains NaN"),
    # data files
    (["fit", "{d}/missing.npy", "-k", "3", "--out", "{d}/m.npz"], "missing.npy: no such file"),
    (["fit", "{d}", "-k", "3", "--out", "{d}/m.npz"], "is a folder, not a data file"),
    (["fit", "{d}/X.txt", "-k", "3", "--out", "{d}/m.npz"], "unknown file type"),
    (["fit", "{d}/empty.csv", "-k", "3", "--out", "{d}/m.npz"], "empty.csv: the file is empty"),
    (["fit", "{d}/empty.npy", "-k", "3", "--out", "{d}/m.npz"], "empty.npy: the file is empty"),
    (["fit", "{d}/blank.csv", "-k", "3", "--out", "{d}/m.npz"], "blank.csv: holds no data"),
    (["fit", "{d}/bad.csv", "-k", "3", "--out", "{d}/m.npz"],
     "bad.csv: not a CSV file of numbers: could not convert string 'oops'"),
    (["fit", "{d}/text.npy", "-k", "3", "--out", "{d}/m.npz"],
     "text.npy: not a valid .npy array: no .npy header"),
    (["fit", "{d}/objects.npy", "-k", "3", "--out", "{d}/m.npz"], "holds Python objects"),
    (["fit", "{d}/zip.npz", "-k", "3", "--out", "{d}/m.npz"],
     "zip.npz: not a valid .npz archive of arrays"),
    (["fit", "{d}/member.npz", "-k", "3", "--out", "{d}/m.npz"],
     "member.npz: not a valid .npz archive of arrays: Bad CRC-32"),
    (["fit", "{d}/noX.npz", "-k", "3", "--out", "{d}/m.npz"], "has no array 'X'"),
    (["fit", "{d}/flat.npy", "-k", "3", "--out", "{d}/m.npz"], "expected a 2-D numeric array"),
    # outputs that cannot be written: refused before fitting
    (["fit", "{d}/X.npy", "-k", "3", "--out", "{d}/X.npy/m.npz"],
     "m.npz: cannot write it: {d}/X.npy is not a folder"),
    (["fit", "{d}/X.npy", "-k", "3", "--out", "{d}/no/m.npz"], "{d}/no does not exist"),
    (["fit", "{d}/X.npy", "-k", "3", "--out", "{d}"], "is a folder; give a file name"),
    (["predict", "{d}/model.npz", "{d}/X.npy", "--out", "{d}/X.npy/labels.npy"],
     "labels.npy: cannot write it"),
    (["ablate", "{d}/X.npy", "-k", "3", "--presets", "lloyd", "--out", "{d}/X.npy/abl"],
     "abl: cannot create this folder"),
    # predict
    (["predict", "{d}/missing.npz", "{d}/X.npy"], "missing.npz: no such file"),
    (["predict", "{d}/X.npy", "{d}/X.npy"], "X.npy: not a clusterkit model: not an .npz"),
    (["predict", "{d}/zip.npz", "{d}/X.npy"], "zip.npz: not a clusterkit model"),
    (["predict", "{d}/model.npz", "{d}/three.npy"], "3 features, the model has 2"),
    (["predict", "{d}/model.npz", "{d}/nan.npy"], "Input X contains NaN"),
    # ablate
    (["ablate", "{d}/X.npy", "-k", "3", "--presets", "lloyd,nope"], "unknown preset 'nope'"),
    (["ablate", "{d}/X.npy", "-k", "3", "--presets", "lloyd,var_kmeans"],
     "Did you mean 'var_kmeans_x' or 'var_kmeans_s'?"),
    (["ablate", "{d}/X.npy", "-k", "3", "--presets", ","], "name at least one preset"),
    (["ablate", "{d}/X.npy", "-k", "3", "--presets", "lloyd", "--seeds", "0"],
     "seeds must name at least one seed"),
    (["ablate", "{d}/X.npy", "-k", "100000", "--presets", "lloyd"], "must be <= n_samples"),
])
def test_errors_are_one_line_with_status_2(files, model, argv, message, capsys):
    status, out, err = _run([a.format(d=files) for a in argv], capsys)
    _assert_user_error(status, out, err, message.format(d=files))


def test_unwritable_folder(files, data, capsys):
    if os.geteuid() == 0:  # root writes anywhere; /proc refuses new files even to root
        if not Path("/proc/self").exists():
            pytest.skip("running as root without /proc")
        target = "/proc/clusterkit-model.npz"
    else:
        (files / "read-only").mkdir()
        (files / "read-only").chmod(0o500)
        target = str(files / "read-only" / "m.npz")
    status, out, err = _run(["fit", str(files / "X.npy"), "-k", "3", "--out", target], capsys)
    _assert_user_error(status, out, err, f"{target}: cannot write it")


def _tamper(source, target, settings=(), **arrays):
    """A copy of the model file ``source`` with keys of its JSON config replaced, then arrays
    replaced (``None`` removes a key or an array)."""
    with np.load(source, allow_pickle=False) as archive:
        content = dict(archive)
    config = json.loads(str(content["config"]))
    config.update(dict(settings))
    config = {key: value for key, value in config.items() if value is not None}
    content["config"] = np.array(json.dumps(config))
    content.update(arrays)
    np.savez(target, **{key: value for key, value in content.items() if value is not None})
    return target


@pytest.mark.parametrize("change,message", [
    (dict(config=np.array("[1, 2]")), "its config is a list, not a JSON object"),
    (dict(config=np.array("{oops")), "its config is not JSON"),
    (dict(config=None), "not a clusterkit model: no array config"),
    (dict(cluster_centers=None), "no array cluster_centers"),
    (dict(x_mean=None), "no array x_mean"),
    (dict(settings={"format": None}), "invalid model: its config has no 'format'"),
    (dict(settings={"n_clusters": None}), "its config has no 'n_clusters'"),
    (dict(settings={"format": 99}), "invalid model: format 99; this clusterkit reads format 1"),
    (dict(settings={"n_clusters": 4}), "n_clusters=4 but cluster_centers has 3 rows"),
    (dict(cluster_centers=np.zeros(3)), "cluster_centers must be a non-empty 2-D"),
    (dict(cluster_centers=np.zeros((0, 2))), "cluster_centers must be a non-empty 2-D"),
    (dict(cluster_centers=np.array([["a", "b"]] * 3)), "dtype <U1"),
    (dict(cluster_centers=np.full((3, 2), np.inf)), "cluster_centers has non-finite values"),
    (dict(cluster_centers=np.full((3, 2), np.nan)), "cluster_centers has non-finite values"),
    (dict(x_mean=np.zeros(3)), "x_mean must be 2 finite floats, got shape (3,)"),
    (dict(x_mean=np.array([np.nan, 0.0])), "x_mean must be 2 finite floats"),
])
def test_tampered_model_files_are_refused(files, model, change, message, capsys):
    tampered = _tamper(model, files / "tampered.npz", **change)
    status, out, err = _run(["predict", str(tampered), str(files / "X.npy")], capsys)
    _assert_user_error(status, out, err, f"{tampered}: ")
    assert message in err
    with pytest.raises(cli.CommandError, match="tampered.npz"):
        cli.load_model(tampered)


# a valid shortcut for every strategy parameter
SHORTCUT = {"seed": "k-means++", "reduce": "none", "estep": "full", "mstep": "hard",
            "schedule": "full"}


@pytest.mark.parametrize("preset", presets.PRESETS)
def test_param_refuses_a_preset_strategy_exactly_when_python_does(files, preset, capsys):
    # an output folder that does not exist: a --param that is accepted fails there, before
    # any fit, and one that is refused fails before it
    for name, value in SHORTCUT.items():
        try:
            getattr(presets, preset)(3, **{name: value})
            refused = False
        except TypeError:
            refused = True
        status, out, err = _run(["fit", str(files / "X.npy"), "-k", "3", "--preset", preset,
                                 "--param", f"{name}={value}", "--out",
                                 str(files / "no" / "m.npz")], capsys)
        expected = f"--param {name}: preset {preset} sets {name} itself" if refused else \
            f"{files / 'no'} does not exist"
        _assert_user_error(status, out, err, expected)


def _config(path):
    with np.load(path, allow_pickle=False) as archive:
        return json.loads(str(archive["config"]))


def _reprs(estimator):
    """Every strategy's one-line repr, shortcuts and None resolved to their strategy."""
    return {name: " ".join(repr(resolve(name, getattr(estimator, name))).split())
            for name in ("seed", "reduce", "estep", "mstep", "schedule", "refine")}


@pytest.mark.parametrize("preset, params, in_python, changed", [
    ("lloyd", [], lambda: presets.lloyd(16), []),
    # vc-GMM with the exhaustive neighbourhoods of the -X variants
    ("vc_gmm", ["estep__neighbourhoods='exhaustive'"],
     lambda: presets.vc_gmm(16).set_params(estep__neighbourhoods="exhaustive"), ["estep"]),
    # lloyd turned into mini-batch k-means
    ("lloyd", ["schedule=minibatch"], lambda: presets.lloyd(16, schedule=MiniBatch()),
     ["schedule"]),
    # a shortcut, then its parameter
    ("gmm", ["seed=afkmc2", "seed__chain_length=5"],
     lambda: presets.gmm(16, seed=AFKMC2(chain_length=5)), ["seed"]),
])
def test_fit_records_the_composition_it_fitted(files, data, preset, params, in_python,
                                               changed, capsys):
    model = files / "m.npz"
    argv = ["fit", str(files / "X.npy"), "-k", "16", "--preset", preset, "--param",
            "random_state=0"]
    for param in params:
        argv += ["--param", param]
    status, out, err = _run(argv + ["--out", str(model)], capsys)
    assert status == 0 and err == ""
    expected = in_python().set_params(random_state=0).fit(data)
    config = _config(model)
    assert config["preset"] == preset and config["changed"] == changed
    assert config["composition"] == _reprs(expected)
    np.testing.assert_array_equal(cli.load_model(model).cluster_centers_,
                                  expected.cluster_centers_)
    # the printed summary says the same
    lines = out.splitlines()
    title = preset + (f" with {' and '.join(changed)} changed by --param" if changed else "")
    assert lines[0].startswith(f"{title}: 480 samples, 16 clusters")
    shown = dict(line.split(None, 1) for line in lines[1:])
    assert {name: text.removesuffix("  (changed)") for name, text in shown.items()} == \
        _reprs(expected)
    assert sorted(n for n, text in shown.items() if text.endswith("(changed)")) == \
        sorted(changed)


def test_fit_without_final_labels(files, capsys):
    # compute_labels=False leaves no inertia_: the model is saved without it
    status, out, err = _run(["fit", str(files / "X.npy"), "-k", "3", "--param",
                             "compute_labels=False", "--out", str(files / "m.npz")], capsys)
    assert status == 0 and err == "" and "no final labels" in out
    status, out, _ = _run(["predict", str(files / "m.npz"), str(files / "X.npy")], capsys)
    assert status == 0 and len(out.split()) == 480


def test_too_many_threads_are_capped(files, capsys):
    # 10**9 OpenMP threads would abort the process (libgomp cannot allocate their stacks)
    status, out, err = _run(["fit", str(files / "X.npy"), "-k", "3", "--param",
                             f"n_threads={10 ** 9}", "--out", str(files / "m.npz")], capsys)
    assert status == 0 and err == ""


def test_interrupt_exits_130_and_bugs_keep_their_traceback(files, monkeypatch, capsys):
    def interrupted(path, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(cli, "load_data", interrupted)
    status, out, err = _run(["fit", str(files / "X.npy"), "-k", "3", "--out",
                             str(files / "m.npz")], capsys)
    assert status == 130 and err == "clusterkit fit: interrupted\n"

    def bug(path, **kwargs):
        raise RuntimeError("a bug")
    monkeypatch.setattr(cli, "load_data", bug)
    with pytest.raises(RuntimeError, match="a bug"):
        cli.main(["fit", str(files / "X.npy"), "-k", "3", "--out", str(files / "m.npz")])


def _subprocess(*argv, **kwargs):
    return subprocess.run([sys.executable, "-m", "clusterkit", *map(str, argv)],
                          capture_output=True, text=True, timeout=120, **kwargs)


@pytest.mark.parametrize("argv,message", [
    (["fit", "{d}/X.npy", "-k", "3", "--out", "{d}/X.npy/m.npz"], "cannot write it"),
    (["fit", "{d}/text.npy", "-k", "3", "--out", "{d}/m.npz"], "not a valid .npy array"),
])
def test_real_exit_status_without_traceback(files, argv, message):
    result = _subprocess(*[a.format(d=files) for a in argv])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr


def test_closed_pipe_ends_quietly(files, model):
    # more labels than a pipe buffers, so that the writer meets the closed pipe
    np.save(files / "many.npy", np.zeros((200_000, 2)))
    process = subprocess.Popen([sys.executable, "-m", "clusterkit", "predict", str(model),
                                str(files / "many.npy")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout.readline().strip().isdigit()
    process.stdout.close()  # as head does after its lines
    assert process.wait(timeout=120) == 141
    assert process.stderr.read() == b""
    process.stderr.close()


def test_help_of_every_command_documents_the_exit_statuses(capsys):
    for command in ([], ["fit"], ["predict"], ["ablate"], ["presets"]):
        status, out, _ = _run([*command, "--help"], capsys)
        assert status == 0, command
        assert out.startswith("usage: clusterkit") and "2 user error" in out, command
        assert "exit status: 0 success" in " ".join(out.split()), command
    status, out, _ = _run(["demo", "--help"], capsys)
    assert status == 0 and "--n-side" in out


def test_demo_argument_errors_are_one_line(capsys):
    status, out, err = _run(["demo", "--n-side", "x"], capsys)
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "argument --n-side: invalid int value: 'x'" in err


def test_presets_lists_every_preset(capsys):
    status, out, _ = _run(["presets"], capsys)
    assert status == 0
    lines = out.splitlines()
    names = [line for line in lines if line in presets.PRESETS]
    assert names == list(presets.PRESETS)
    assert max(map(len, lines)) <= 100 and "`" not in out
    # each summary whole, not its first line only
    text = " ".join(out.split())
    assert "sublinear in C per iteration" in text and "(eq. 9); the modes are then" in text
    # every preset's whole guide, under its name, before the next preset
    for name in presets.PRESETS:
        entry = " ".join(out.split(f"\n{name}\n", 1)[1].split("\n\n", 1)[0].split())
        for field in GUIDE_FIELDS:
            value = getattr(presets.GUIDE[name], field)
            assert " ".join(value.split()) in entry, (name, field)
    assert "docs/choosing.rst" in text and "benchmarks/RESULTS.md" in text


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
        assert r["objective_name"] == ("free energy" if r["variant"] == "gmm" else
                                       "quantization error")
    held_out = ablate(data, 16, {"lloyd": "lloyd"}, seeds=1, X_test=data[:50], verbose=0)
    rows = held_out.to_dict("records") if hasattr(held_out, "to_dict") else held_out
    centers = presets.lloyd(16, random_state=0).fit(data).cluster_centers_
    d2 = ((data[:50, None] - centers[None]) ** 2).sum(-1).min(1)
    assert rows[0]["qe"] == pytest.approx(d2.sum(), rel=1e-9)


@pytest.mark.parametrize("variants,error,message", [
    ({}, ValueError, None), ({"a": 3}, TypeError, "Variant 'a' must be a Clusterer"),
    ({"a": "nope"}, ValueError, r"Unknown preset 'nope' for variant 'a'; the presets are "
                                rf"lloyd, .*{presets.PRESETS[-1]}\.$"),
    ({"a": "llyod"}, ValueError, rf"{presets.PRESETS[-1]}\. Did you mean 'lloyd'\?$")])
def test_ablate_refuses_bad_variants(data, variants, error, message):
    with pytest.raises(error, match=message):
        ablate(data, 4, variants, seeds=1, verbose=0)


@pytest.mark.parametrize("name,suggestion", [
    ("llyod", " Did you mean 'lloyd'?"), ("vcgmm", " Did you mean 'vc_gmm'?"),
    ("var_gmm", " Did you mean 'var_gmm_x' or 'var_gmm_s'?"), ("qwerty", "")])
def test_an_unknown_preset_name_gets_the_close_ones(name, suggestion):
    with pytest.raises(ValueError) as raised:
        presets.build_preset(name, 3)
    assert str(raised.value).startswith(f"Unknown preset {name!r}; the presets are lloyd, ")
    assert str(raised.value).endswith(f"{presets.PRESETS[-1]}." + suggestion)


def test_plots_show_one_curve_per_variant(data):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    table = ablate(data, 16, {"lloyd": "lloyd", "lwcs": "lwcs_lloyd"}, seeds=2, verbose=0)
    figure = plot_history(table)
    left, right = figure.axes
    assert [line.get_label() for line in left.get_lines()] == ["lloyd", "lwcs"]
    assert left.get_xlabel() == "seconds" and right.get_xlabel() == "distance evaluations"
    assert left.get_ylabel() == "quantization error"
    figure = plot_tradeoff(table)
    (axis,) = figure.axes
    assert axis.get_xlabel().startswith("relative error") and "speed-up" in axis.get_ylabel()
    assert [t.get_text() for t in axis.get_legend().get_texts()] == ["lloyd", "lwcs"]


def test_history_plot_gives_each_kind_of_objective_its_own_row(data):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    # k-means minimises a quantization error, the mixture maximises a (negative) free
    # energy: on one axis the scales and directions would not compare
    table = ablate(data, 16, {"lloyd": "lloyd", "gmm": "gmm", "elkan": "elkan"}, seeds=1,
                   verbose=0)
    figure = plot_history(table)
    assert len(figure.axes) == 4
    (qe_left, qe_right), (fe_left, fe_right) = np.reshape(figure.axes, (2, 2))
    for axis in (qe_left, qe_right):
        assert axis.get_ylabel() == "quantization error"
        assert [line.get_label() for line in axis.get_lines()] == ["lloyd", "elkan"]
        assert axis.get_yscale() == "log"
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    gmm_objective = [h["objective"] for h in rows[1]["history"]]
    for axis in (fe_left, fe_right):
        assert axis.get_ylabel() == "free energy"
        (line,) = axis.get_lines()
        assert line.get_label() == "gmm"
        np.testing.assert_allclose(line.get_ydata(), gmm_objective)
    assert fe_left.get_yscale() == "linear" or min(gmm_objective) > 0
    # the quantization error every fit records is comparable: one row
    (left, right) = plot_history(table, objective="qe").axes
    assert left.get_ylabel() == "qe"
    assert [line.get_label() for line in left.get_lines()] == ["lloyd", "gmm", "elkan"]
    matplotlib.pyplot.close("all")


def test_eta_against_a_zero_reference_error(capsys):
    # as many clusters as distinct rows: the reference's error is exactly 0
    X = np.random.default_rng(0).normal(size=(60, 2))
    table = ablate(X, 60, {"lloyd": "lloyd", "elkan": "elkan", "half": presets.lloyd(30)},
                   seeds=1, verbose=0)
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    assert {r["variant"]: r["eta"] for r in rows} == {"lloyd": 0.0, "elkan": 0.0,
                                                      "half": math.inf}
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    plot_history(table)
    (axis,) = plot_tradeoff(table).axes
    assert [t.get_text() for t in axis.get_legend().get_texts()] == [
        "lloyd", "elkan", "half (η = ∞ for 1 of 1 seeds)"]


@pytest.mark.parametrize("index", [False, True])
def test_fit_takes_a_csv_with_a_header_row(files, data, index, capsys):
    """pandas' ``to_csv`` writes column names first (and, by default, an unnamed index
    column): the header row is skipped, the index column too, and -v says so."""
    path = files / "header.csv"
    rows = [(f"{i}," if index else "") + ",".join(repr(float(v)) for v in row)
            for i, row in enumerate(data)]
    path.write_text("\n".join([("," if index else "") + '"x",y'] + rows) + "\n")
    X = cli.load_data(path)
    np.testing.assert_array_equal(X, data)
    model = files / "header.model.npz"
    status, out, err = _run(["fit", str(path), "-k", "4", "--param", "random_state=0",
                             "--out", str(model)], capsys)
    assert status == 0 and err == "" and f"{len(data)} samples" in out
    status, _, err = _run(["fit", str(path), "-k", "4", "-v", "--out", str(model)], capsys)
    note = (f"{path}: skipped its header row (x, y) and its first column, which has no name "
            "(pandas' index)") if index else f"{path}: skipped its header row (x, y)"
    assert status == 0 and note + "\n" in err
    status, out, _ = _run(["predict", str(model), str(path)], capsys)
    assert status == 0 and len(out.split()) == len(data)


def test_a_csv_of_a_header_only_holds_no_data(files, capsys):
    (files / "names.csv").write_text("x,y\n")
    _assert_user_error(*_run(["fit", str(files / "names.csv"), "-k", "3", "--out",
                              str(files / "m.npz")], capsys), "names.csv: holds no data")


@pytest.mark.parametrize("preset", ["lloyd", "gmm", "spherical_kmeans", "vc_gmm"])
def test_load_model_round_trip_predicts_as_the_fitted_model(files, data, preset, capsys):
    """A model saved by the command line loads back with the public function: the same
    labels (for a spherical model: of rows it scales to unit norm), distances and, for a
    mixture, probabilities as the estimator fitted in Python."""
    from clusterkit import Clusterer, load_model
    model = files / f"{preset}.npz"
    status, _, err = _run(["fit", str(files / "X.npy"), "-k", "5", "--preset", preset,
                           "--param", "random_state=0", "--out", str(model)], capsys)
    assert status == 0 and err == ""
    expected = getattr(presets, preset)(5, random_state=0).fit(data)
    loaded = load_model(model)
    assert isinstance(loaded, Clusterer) and loaded.n_clusters == 5
    Y = data[::7] * 1.5 + 0.3
    np.testing.assert_array_equal(loaded.predict(Y), expected.predict(Y))
    np.testing.assert_allclose(loaded.transform(Y), expected.transform(Y), rtol=1e-12)
    assert loaded.score(Y) == pytest.approx(expected.score(Y), rel=1e-12)
    assert loaded.n_iter_ == expected.n_iter_ and loaded.cost_ == expected.cost_
    if hasattr(expected, "predict_proba"):
        np.testing.assert_allclose(loaded.predict_proba(Y), expected.predict_proba(Y),
                                   rtol=1e-10, atol=1e-300)
    else:
        assert not hasattr(loaded, "predict_proba")


def test_load_model_errors(files, model):
    from clusterkit import load_model
    with pytest.raises(FileNotFoundError, match=r"nope\.npz: no such file"):
        load_model(files / "nope.npz")
    with pytest.raises(ValueError, match=r"X\.npy: not a clusterkit model: not an \.npz "
                                         r"archive"):
        load_model(files / "X.npy")
    with pytest.raises(ValueError, match=r"invalid model: format 99; this clusterkit reads "
                                         r"format 1"):
        load_model(_tamper(model, files / "t.npz", settings={"format": 99}))
