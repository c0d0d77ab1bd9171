"""Command line: ``clusterkit <command>`` (or ``python -m clusterkit <command>``).

Commands: ``fit``, ``predict``, ``ablate``, ``presets`` and ``demo``; ``--help`` on each.
Every error is one line on standard error and exit status 2.
"""
import argparse
import ast
import json
import sys
from pathlib import Path

import numpy as np

__all__ = ["main"]

#: The model file's format version, stored in it.
MODEL_FORMAT = 1


class CommandError(Exception):
    """An error the command line reports as one line, with exit status 2."""


def load_data(path):
    """``X`` from a ``.npy`` file, a ``.npz`` archive (array ``X``) or a ``.csv`` file (numbers
    only, comma-separated, no header)."""
    path = Path(path)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        if path.suffix == ".npy":
            X = np.load(path, allow_pickle=False)
        elif path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                if "X" not in archive:
                    raise CommandError(f"{path}: the archive has no array 'X' (it has "
                                       f"{', '.join(archive.files) or 'none'})")
                X = archive["X"]
        elif path.suffix == ".csv":
            X = np.loadtxt(path, delimiter=",", ndmin=2)
        else:
            raise CommandError(f"{path}: unknown file type; use .npy, .npz or .csv")
    except CommandError:
        raise
    except Exception as error:  # numpy's many ways of saying "malformed"
        raise CommandError(f"{path}: cannot read it: {error}") from None
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise CommandError(f"{path}: expected a 2-D numeric array, got shape {X.shape} and "
                           f"dtype {X.dtype}")
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    return X


def _parse_params(pairs):
    """``["key=value", ...]`` to a dict; values are Python literals where they parse so."""
    params = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CommandError(f"--param {pair!r}: expected key=value")
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[key] = value
    return params


def _build(preset, n_clusters, params):
    from . import presets
    if preset not in presets.PRESETS:
        raise CommandError(f"unknown preset {preset!r}; the presets are "
                           f"{', '.join(presets.PRESETS)}")
    estimator = getattr(presets, preset)(n_clusters)
    known = estimator.get_params(deep=True)
    for key in params:
        if key not in known:
            raise CommandError(f"--param {key}: not a parameter of preset {preset} (e.g. "
                               "max_iter, tol, n_init, random_state, estep__G)")
    try:
        return estimator.set_params(**params)
    except (TypeError, ValueError) as error:
        raise CommandError(f"preset {preset}: {error}") from None


def _fit(estimator, X):
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return estimator.fit(X)
    except (TypeError, ValueError) as error:
        raise CommandError(str(error).splitlines()[0]) from None


def save_model(path, estimator, preset, params):
    """Write a fitted estimator's centres, configuration and history to ``path`` (``.npz``):
    arrays and one JSON string, so that loading it never executes code."""
    history = [{k: float(v) for k, v in h.items()} for h in estimator.history_]
    config = {"format": MODEL_FORMAT, "preset": preset, "params": params,
              "n_clusters": int(estimator.n_clusters), "history": history,
              "n_iter": int(estimator.n_iter_), "inertia": float(estimator.inertia_),
              "cost": {k: int(v) for k, v in estimator.cost_.items()}}
    arrays = {"cluster_centers": estimator.cluster_centers_, "x_mean": estimator._x_mean,
              "config": np.array(json.dumps(config))}
    if getattr(estimator, "sigma2_", None) is not None:
        arrays["sigma2"] = np.array(estimator.sigma2_)
    with open(path, "wb") as file:
        np.savez(file, **arrays)


def load_model(path):
    """The estimator saved by :func:`save_model`, ready to ``predict``."""
    from ._clusterer import Clusterer
    path = Path(path)
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            config = json.loads(str(archive["config"]))
            centers, x_mean = archive["cluster_centers"], archive["x_mean"]
    except Exception as error:
        raise CommandError(f"{path}: not a clusterkit model: {error}") from None
    if config.get("format") != MODEL_FORMAT:
        raise CommandError(f"{path}: unknown model format {config.get('format')!r}")
    model = Clusterer(config["n_clusters"])
    model.cluster_centers_ = centers
    model._x_mean = x_mean
    model.n_features_in_ = centers.shape[1]
    return model


def _command_fit(args):
    X = load_data(args.data)
    params = _parse_params(args.param)
    estimator = _fit(_build(args.preset, args.k, params), X)
    save_model(args.out, estimator, args.preset, params)
    print(f"{args.preset}: {X.shape[0]} samples, {args.k} clusters, {estimator.n_iter_} "
          f"iterations, inertia {estimator.inertia_:.6g}, "
          f"{estimator.n_distance_evals_} distance evaluations -> {args.out}")
    return 0


def _command_predict(args):
    model = load_model(args.model)
    X = load_data(args.data)
    if X.shape[1] != model.n_features_in_:
        raise CommandError(f"{args.data}: {X.shape[1]} features, the model has "
                           f"{model.n_features_in_}")
    labels = model.predict(X.astype(model.cluster_centers_.dtype, copy=False))
    if args.out:
        np.save(args.out, labels)
    else:
        np.savetxt(sys.stdout, labels, fmt="%d")
    return 0


def _command_ablate(args):
    from .ablation import ablate, plot_history, plot_tradeoff
    X = load_data(args.data)
    names = [name for name in args.presets.split(",") if name]
    if not names:
        raise CommandError("--presets: name at least one preset")
    variants = {name: _build(name, args.k, {}) for name in names}
    try:
        table = ablate(X, args.k, variants, seeds=args.seeds, verbose=1)
    except (TypeError, ValueError) as error:
        raise CommandError(str(error).splitlines()[0]) from None
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    columns = ("seconds", "qe", "eta", "n_distance_evals", "n_iter")
    print(f"{'variant':16s}" + "".join(f"{c:>26s}" for c in columns))
    for name in names:
        mine = [r for r in rows if r["variant"] == name]
        cells = []
        for c in columns:
            values = np.array([r[c] for r in mine], dtype=float)
            cells.append(f"{values.mean():.4g} ± {values.std():.2g}")
        print(f"{name:16s}" + "".join(f"{cell:>26s}" for cell in cells))
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        keep = [c for c in rows[0] if c != "history"]
        with open(out / "ablation.csv", "w") as file:
            file.write(",".join(keep) + "\n")
            for r in rows:
                file.write(",".join(str(r[c]) for c in keep) + "\n")
        try:
            import matplotlib
            matplotlib.use("Agg")
            plot_history(rows).savefig(out / "history.png", dpi=120)
            plot_tradeoff(rows).savefig(out / "tradeoff.png", dpi=120)
            written = "ablation.csv, history.png, tradeoff.png"
        except ImportError:
            written = "ablation.csv (no plots: pip install 'clusterkit[plot]')"
        print(f"wrote {written} to {out}")
    return 0


def _command_presets(args):
    from . import presets
    for name in presets.PRESETS:
        summary = getattr(presets, name).__doc__.strip().splitlines()[0]
        print(f"{name:14s} {summary}")
    return 0


def _parser():
    parser = argparse.ArgumentParser(prog="clusterkit", description="clusterkit command line.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    commands.add_parser("demo", add_help=False,
                        help="fit k-means and GMM variants on a BIRCH grid and print a table "
                             "(see 'clusterkit demo --help')")
    fit = commands.add_parser("fit", help="fit a preset to a data file and save the model",
                              description="Fit a preset to DATA and save the model.")
    fit.add_argument("data", help="a .npy, .npz (array X) or .csv (numbers only) file")
    fit.add_argument("-k", type=int, required=True, help="number of clusters")
    fit.add_argument("--preset", default="lloyd", help="see 'clusterkit presets' "
                                                       "(default: %(default)s)")
    fit.add_argument("--param", action="append", metavar="KEY=VALUE",
                     help="an estimator parameter, e.g. max_iter=50 or estep__G=3 (repeat)")
    fit.add_argument("--out", required=True, help="the model file to write (.npz)")
    predict = commands.add_parser("predict", help="label a data file with a saved model",
                                  description="Print (or save) the nearest centre of every "
                                              "row of DATA.")
    predict.add_argument("model", help="a model written by 'clusterkit fit'")
    predict.add_argument("data", help="a .npy, .npz or .csv file")
    predict.add_argument("--out", help="write the labels to this .npy file instead of "
                                       "printing them")
    ablate = commands.add_parser("ablate", help="compare presets over several seeds",
                                 description="Fit each preset with the same seeds; print "
                                             "mean ± sd per preset; write a CSV and plots.")
    ablate.add_argument("data", help="a .npy, .npz or .csv file")
    ablate.add_argument("-k", type=int, required=True, help="number of clusters")
    ablate.add_argument("--presets", required=True, help="comma-separated preset names; the "
                                                         "first is the reference")
    ablate.add_argument("--seeds", type=int, default=5, help="seeds (default: %(default)s)")
    ablate.add_argument("--out", help="folder for ablation.csv, history.png, tradeoff.png")
    commands.add_parser("presets", help="list the presets")
    return parser


def main(argv=None):
    """Run ``clusterkit <command> [options]``; returns the exit status.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success, 2 on an error (reported as one line on standard error).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["demo"]:  # the demo parses its own options, so its --help lists them
        from . import _demo
        return _demo.main(argv[1:])
    args = _parser().parse_args(argv)
    handlers = {"fit": _command_fit, "predict": _command_predict, "ablate": _command_ablate,
                "presets": _command_presets}
    try:
        return handlers[args.command](args)
    except CommandError as error:
        message = " ".join(str(error).split())  # always one line
        print(f"clusterkit {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
