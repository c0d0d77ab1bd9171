"""Command line: ``clusterkit <command>`` (or ``python -m clusterkit <command>``).

Commands: ``fit``, ``predict``, ``ablate``, ``presets`` and ``demo``; ``--help`` on each.
Exit statuses: 0 on success; 2 on a user error (bad arguments, unreadable data, a file that
cannot be written, a value the estimator refuses), reported as one line on standard error;
130 on Ctrl-C; 141 (silently) when standard output is closed early, e.g. piped to ``head``.
Anything else is a bug and shows its traceback.
"""
import argparse
import ast
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np

from ._estimator import model_file as _model_file
from ._estimator.model_file import composition

__all__ = ["main"]

EXIT_STATUSES = """\
exit status: 0 success; 2 user error (one line on standard error: bad arguments or data, a
file that cannot be read or written, a parameter the estimator refuses); 130 interrupted
(Ctrl-C); 141 standard output closed early (e.g. piped to head)."""


class CommandError(Exception):
    """An error the command line reports as one line, with exit status 2."""


class _ArgumentParser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other user error (argparse itself
    prints the usage first), and the close names for an invalid choice (a command, say); it
    still exits with status 2 through ``SystemExit``."""

    def error(self, message):
        from ._estimator.registry import did_you_mean
        invalid = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if invalid:
            choices = [c.strip().strip("'") for c in invalid.group(2).split(",")]
            message += did_you_mean(invalid.group(1), choices)
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _csv_header(path, notes):
    """``(skiprows, usecols)`` for ``np.loadtxt`` on a CSV file: a first row that is not all
    numbers is a header and skipped (column names, as pandas' ``to_csv`` writes them), and
    if the header's first name is empty, the first column is pandas' unnamed index and
    skipped too; what was skipped is appended to ``notes``."""
    with open(path, encoding="utf-8-sig", errors="replace") as file:
        fields = [f.strip().strip('"').strip("'") for f in file.readline().split(",")]
    if all(_is_number(f) for f in fields):
        return 0, None
    names = ", ".join(f for f in fields if f)
    if len(fields) > 1 and not fields[0]:
        notes.append(f"{path}: skipped its header row ({names}) and its first column, which "
                     "has no name (pandas' index)")
        return 1, range(1, len(fields))
    notes.append(f"{path}: skipped its header row ({names})")
    return 1, None


def _read_array(path, notes):
    """The array stored in ``path`` (any shape or dtype); a malformed file is a user error.
    What was skipped of a CSV file is appended to ``notes``."""
    try:
        if path.stat().st_size == 0:
            raise CommandError(f"{path}: the file is empty")
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                if "X" not in archive:
                    raise CommandError(f"{path}: the archive has no array 'X' (it has "
                                       f"{', '.join(archive.files) or 'none'})")
                return archive["X"]
        skiprows, usecols = _csv_header(path, notes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a blank file: reported below as no data
            return np.loadtxt(path, delimiter=",", ndmin=2, skiprows=skiprows,
                              usecols=usecols)
    except CommandError:
        raise
    except OSError as error:
        raise CommandError(f"{path}: cannot read it: {error.strerror or error}") from None
    except Exception as error:  # numpy's, zipfile's and zlib's many ways of saying malformed
        detail = str(error)
        if "Object arrays" in detail:
            detail = "it holds Python objects, not numbers"
        elif "pickle" in detail:  # numpy's guess for any file without the .npy header
            detail = "no .npy header"
        kind = {".npy": "a valid .npy array", ".npz": "a valid .npz archive of arrays",
                ".csv": "a CSV file of numbers"}[path.suffix]
        raise CommandError(f"{path}: not {kind}: {detail}") from None


def _existing_file(path, what):
    """``path`` as a Path; a user error if it is a folder or missing."""
    path = Path(path)
    if path.is_dir():
        raise CommandError(f"{path}: is a folder, not {what}")
    if not path.exists():
        raise CommandError(f"{path}: no such file")
    return path


def load_data(path, verbose=False):
    """``X`` from a ``.npy`` file, a ``.npz`` archive (array ``X``) or a ``.csv`` file (numbers,
    comma-separated; a first row that is not all numbers is a header and is skipped, and so
    is a first column whose header is empty, pandas' unnamed index).

    Parameters
    ----------
    path : str or path-like
        The data file; its suffix says its format.
    verbose : bool, default=False
        Say on standard error what was skipped of a CSV file.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Floating point (integers and booleans become float64).

    Raises
    ------
    CommandError
        If the file is missing, unreadable, malformed, empty or not a 2-D numeric array; the
        message names the file.
    """
    path = _existing_file(path, "a data file")
    if path.suffix not in (".npy", ".npz", ".csv"):
        raise CommandError(f"{path}: unknown file type; use .npy, .npz or .csv")
    notes = []
    X = _read_array(path, notes)
    if verbose:
        for note in notes:
            print(note, file=sys.stderr)
    if X.ndim != 2 or X.dtype.kind not in "biuf":
        raise CommandError(f"{path}: expected a 2-D numeric array, got shape {X.shape} and "
                           f"dtype {X.dtype}")
    if X.size == 0:
        raise CommandError(f"{path}: holds no data (shape {X.shape})")
    if X.dtype.kind != "f":
        X = X.astype(np.float64)
    return X


def _check_output(path):
    """Refuse an output file that cannot be written, before any work is done."""
    path = Path(path)
    if path.is_dir():
        raise CommandError(f"{path}: is a folder; give a file name")
    parent = path.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise CommandError(f"{path}: cannot write it: {parent} {what}")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CommandError(f"{path}: cannot write it: permission denied")


def _write(path, write):
    """Call ``write(file)`` on ``path`` opened for writing; a failure to write (a read-only
    file system, a full disk) is reported as a user error."""
    try:
        with open(path, "wb") as file:
            write(file)
    except OSError as error:
        raise CommandError(f"{path}: cannot write it: {error.strerror or error}") from None


def _parse_params(pairs):
    """``["key=value", ...]`` to a dict; values are Python literals where they parse so."""
    params = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CommandError(f"--param {pair!r}: expected key=value")
        try:
            params[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            params[key] = value
    return params


def _unknown_parameter(key, preset, known):
    """The error for ``--param key=...`` that the preset does not take: scikit-learn's names
    with clusterkit's equivalent, a typo with the closest parameter (as the presets and
    ``Clusterer`` answer them, :func:`~clusterkit._estimator.registry.unknown_keyword`)."""
    from ._estimator.registry import SKLEARN_NAMES, close_name
    if key in SKLEARN_NAMES:
        return CommandError(f"--param {key}: not a parameter of preset {preset} (it is "
                            f"scikit-learn's); pass {SKLEARN_NAMES[key]} instead")
    close = close_name(key, known)
    nested = [k for k in known if "__" in k][:1]
    hint = f"did you mean {close}?" if close else "its parameters are " + \
        ", ".join(k for k in known if "__" not in k) + \
        "".join(f" and its strategies' such as {k}" for k in nested)
    return CommandError(f"--param {key}: not a parameter of preset {preset}; {hint}")


def _build(preset, n_clusters, params):
    """The preset's estimator with the ``--param`` settings.

    Top-level settings go to the preset function as keywords, as in Python, so a strategy
    that defines the preset (vc_gmm's ``reduce``, lloyd's ``estep``, ...) is refused the way
    ``presets.vc_gmm(C, reduce=...)`` refuses it; strategies' own parameters
    (``estep__G``) and the rest are then set with ``set_params``. What the settings make of
    the preset is recorded by :func:`composition`.
    """
    from ._estimator.guide import REGISTRY, unknown_preset
    from ._estimator.registry import SHORTCUTS, resolve
    from ._kernels._openmp import effective_n_threads
    from .presets import PRESETS, build_preset
    if preset not in PRESETS:
        raise CommandError(f"unknown preset {preset!r}; {unknown_preset(preset)}")
    default = build_preset(preset, n_clusters)
    known = default.get_params(deep=False)
    for key in params:
        if "__" not in key and key not in known:
            raise _unknown_parameter(key, preset, default.get_params(deep=True))
    n_threads = params.get("n_threads")
    if type(n_threads) is int and n_threads > 0:
        # threads beyond the cores gain nothing; OpenMP aborts on n_threads=10**9
        params = {**params, "n_threads": min(n_threads, effective_n_threads())}
    keywords = {k: v for k, v in params.items() if "__" not in k and k != "n_clusters"}
    for key in SHORTCUTS:
        if key not in keywords:
            continue
        if key in REGISTRY[preset].fixes:
            raise CommandError(
                f"--param {key}: preset {preset} sets {key} itself, to "
                f"{composition(default)[key]}, as part of what {preset} is; choose a preset "
                f"with the {key} you want (see 'clusterkit presets'), or compose a Clusterer "
                "in Python")
        if isinstance(keywords[key], str):  # the object, so that its parameters can be set
            try:
                keywords[key] = resolve(key, keywords[key])
            except ValueError as error:
                raise CommandError(f"--param {key}: {error}") from None
    estimator = build_preset(preset, n_clusters, **keywords)
    nested = {k: v for k, v in params.items() if k not in keywords}
    known = estimator.get_params(deep=True)
    for key in nested:
        if key not in known:
            raise _unknown_parameter(key, preset, known)
    try:
        return estimator.set_params(**nested)
    except (TypeError, ValueError) as error:
        raise CommandError(f"preset {preset}: {error}") from None


def _user_errors(action):
    """``action()``, with the estimator's ValueError or TypeError (a value it refuses)
    as a user error, and its warnings silenced (the command line reports what matters)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return action()
    except (TypeError, ValueError) as error:  # the first line says it; sklearn adds hints
        lines = str(error).strip().splitlines() or [type(error).__name__]
        raise CommandError(lines[0]) from None


def changed_strategies(estimator, preset):
    """The names of the strategies of ``estimator`` that differ from those of ``preset``
    with its defaults (``--param`` replaced them, or changed their parameters)."""
    from .presets import build_preset
    mine = composition(estimator)
    default = composition(build_preset(preset, estimator.n_clusters))
    return [name for name in mine if mine[name] != default[name]]


def save_model(path, estimator, preset, params):
    """Write the model file (:func:`clusterkit._estimator.model_file.write_model`, with the
    preset, the ``--param`` settings and the strategies they changed) to ``path``; a failure
    to write it is a user error."""
    changed = changed_strategies(estimator, preset)
    _write(path, lambda file: _model_file.write_model(file, estimator, preset, params,
                                                      changed))


def load_model(path):
    """The model in ``path`` (:func:`clusterkit.load_model`), ready to ``predict``; a missing,
    unreadable or invalid file is a user error whose message names it and the problem."""
    path = _existing_file(path, "a model file")
    try:
        return _model_file.load_model(path)
    except (OSError, ValueError) as error:
        raise CommandError(str(error)) from None


def _command_fit(args):
    X = load_data(args.data, verbose=args.verbose is not None)
    params = _parse_params(args.param)
    estimator = _build(args.preset, args.k, params)
    if args.verbose is not None:  # how the fit is shown, not part of the saved model
        estimator.set_params(verbose="bar" if args.verbose == "bar" else int(args.verbose))
    _check_output(args.out)
    estimator = _user_errors(lambda: estimator.fit(X))
    save_model(args.out, estimator, args.preset, params)
    inertia = getattr(estimator, "inertia_", None)
    error = "no final labels" if inertia is None else f"inertia {inertia:.6g}"
    changed = changed_strategies(estimator, args.preset)
    name = args.preset + (f" with {' and '.join(changed)} changed by --param" if changed
                          else "")
    print(f"{name}: {X.shape[0]} samples, {estimator.n_clusters} clusters, {estimator.n_iter_} "
          f"iterations, {error}, {estimator.n_distance_evals_} distance evaluations "
          f"-> {args.out}")
    for key, text in composition(estimator).items():
        print(f"  {key:9s}{text}{'  (changed)' if key in changed else ''}")
    return 0


def _command_predict(args):
    model = load_model(args.model)
    X = load_data(args.data)
    if X.shape[1] != model.n_features_in_:
        raise CommandError(f"{args.data}: {X.shape[1]} features, the model has "
                           f"{model.n_features_in_}")
    if args.out:
        _check_output(args.out)
    labels = _user_errors(lambda: model.predict(X.astype(model.cluster_centers_.dtype)))
    if args.out:
        _write(args.out, lambda file: np.save(file, labels))
    else:
        np.savetxt(sys.stdout, labels, fmt="%d")
    return 0


def _cell(values):
    """``mean ± sd`` of one column for one preset (just the mean when it is not finite, e.g.
    an infinite relative error against a reference with zero error)."""
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all():
        return f"{values.mean():.4g}"
    return f"{values.mean():.4g} ± {values.std():.2g}"


def _write_ablation(out, rows):
    """``ablation.csv`` and, with matplotlib, ``history.png`` and ``tradeoff.png`` in ``out``."""
    from .ablation import plot_history, plot_tradeoff
    keep = [c for c in rows[0] if c != "history"]
    lines = [",".join(keep)] + [",".join(str(r[c]) for c in keep) for r in rows]
    _write(out / "ablation.csv", lambda file: file.write(("\n".join(lines) + "\n").encode()))
    try:
        import matplotlib
    except ImportError:
        return "ablation.csv (no plots: pip install 'clusterkit[plot]')"
    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt
    for name, plot in (("history.png", plot_history), ("tradeoff.png", plot_tradeoff)):
        figure = plot(rows)
        _write(out / name, lambda file: figure.savefig(file, format="png", dpi=120))
        plt.close(figure)
    return "ablation.csv, history.png, tradeoff.png"


def _command_ablate(args):
    from .ablation import ablate
    X = load_data(args.data)
    names = list(dict.fromkeys(name for name in args.presets.split(",") if name))
    if not names:
        raise CommandError("--presets: name at least one preset")
    variants = {name: _build(name, args.k, {}) for name in names}
    if args.out:  # before the fits, so that a bad folder costs nothing
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CommandError(f"{out}: cannot create this folder: "
                               f"{error.strerror or error}") from None
    table = _user_errors(lambda: ablate(X, args.k, variants, seeds=args.seeds, verbose=1))
    rows = table.to_dict("records") if hasattr(table, "to_dict") else table
    columns = ("seconds", "qe", "eta", "n_distance_evals", "n_iter")
    print(f"{'variant':16s}" + "".join(f"{c:>26s}" for c in columns))
    for name in names:
        mine = [r for r in rows if r["variant"] == name]
        cells = [_cell([r[c] for r in mine]) for c in columns]
        print(f"{name:16s}" + "".join(f"{cell:>26s}" for cell in cells))
    if args.out:
        print(f"wrote {_write_ablation(out, rows)} to {out}")
    return 0


def _command_presets(args):
    """Every preset: the summary of its docstring without reST markup, then its guide
    (:data:`clusterkit.presets.GUIDE`), wrapped, nothing cut; where the measurements are."""
    import textwrap

    from . import presets
    from ._estimator.guide import GUIDE_FIELDS, GUIDE_SIZES

    def paragraph(text, indent="", first=None):
        return textwrap.fill(text, width=100, initial_indent=indent if first is None else first,
                             subsequent_indent=indent, break_on_hyphens=False)
    print(paragraph("The presets of clusterkit.presets ('clusterkit fit --preset NAME'): what "
                    "each is for, what it fits and what it costs. " + GUIDE_SIZES))
    label_width = max(map(len, GUIDE_FIELDS.values())) + 2
    for name in presets.PRESETS:
        summary = " ".join(getattr(presets, name).__doc__.strip().split("\n\n")[0].split())
        summary = re.sub(r":\w+:`~?([^`]+)`", r"\1", summary).replace("``", "")
        print(f"\n{name}")
        print(paragraph(summary, "    "))
        for field, title in GUIDE_FIELDS.items():
            print(paragraph(getattr(presets.GUIDE[name], field), " " * (4 + label_width),
                            first=f"    {title:{label_width}s}"))
    print("\n" + paragraph("Time and error of every preset against scikit-learn's KMeans, "
                           "measured: the documentation's page 'Choosing a preset' "
                           "(docs/choosing.rst) and benchmarks/RESULTS.md "
                           "(benchmarks/bench_presets.py)."))
    return 0


def _parser():
    parser = _ArgumentParser(prog="clusterkit", description="clusterkit command line.",
                             epilog=EXIT_STATUSES,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")

    def command(name, **kwargs):
        return commands.add_parser(name, epilog=EXIT_STATUSES,
                                   formatter_class=argparse.RawDescriptionHelpFormatter,
                                   **kwargs)
    commands.add_parser("demo", add_help=False,
                        help="fit scikit-learn's KMeans and clusterkit's presets on a BIRCH "
                             "grid and print their time and error side by side (see "
                             "'clusterkit demo --help')")
    fit = command("fit", help="fit a preset to a data file and save the model",
                  description="Fit a preset to DATA and save the model.")
    fit.add_argument("data", help="a .npy, .npz (array X) or .csv file of numbers; a CSV's "
                                  "first row that is not all numbers is a header and is "
                                  "skipped (with --verbose, said on standard error), and so "
                                  "is a first column with an empty name (pandas' index)")
    fit.add_argument("-k", type=int, required=True, help="number of clusters")
    fit.add_argument("--preset", default="lloyd", help="see 'clusterkit presets' "
                                                       "(default: %(default)s)")
    fit.add_argument("--param", action="append", metavar="KEY=VALUE",
                     help="an estimator parameter, e.g. max_iter=50 or estep__G=3 (repeat); "
                          "the strategies that define the preset cannot be replaced; "
                          "n_threads is capped at the available cores")
    fit.add_argument("--out", required=True, help="the model file to write (.npz; in Python "
                                                 "clusterkit.load_model(path) reads it back, "
                                                 "clusterkit.save_model writes one)")
    fit.add_argument("-v", "--verbose", nargs="?", const="1", choices=["1", "2", "bar"],
                     help="show progress while fitting: a line per phase and iteration, and "
                          "a line at least every 2 s in long phases (-v, or --verbose 1); "
                          "also each iteration's detail (2); progress bars (bar, needs tqdm: "
                          "pip install 'clusterkit[progress]')")
    predict = command("predict", help="label a data file with a saved model",
                      description="Print (or save) the nearest centre of every row of DATA.")
    predict.add_argument("model", help="a model written by 'clusterkit fit'")
    predict.add_argument("data", help="a .npy, .npz or .csv file (a CSV header row is "
                                      "skipped, as for fit)")
    predict.add_argument("--out", help="write the labels to this file (.npy format) instead "
                                       "of printing them")
    ablate = command("ablate", help="compare presets over several seeds",
                     description="Fit each preset with the same seeds; print mean ± sd per "
                                 "preset; write a CSV and plots.")
    ablate.add_argument("data", help="a .npy, .npz or .csv file (a CSV header row is "
                                     "skipped, as for fit)")
    ablate.add_argument("-k", type=int, required=True, help="number of clusters")
    ablate.add_argument("--presets", required=True, help="comma-separated preset names; the "
                                                         "first is the reference")
    ablate.add_argument("--seeds", type=int, default=5, help="seeds (default: %(default)s)")
    ablate.add_argument("--out", help="folder for ablation.csv, history.png, tradeoff.png "
                                      "(created if needed)")
    command("presets", help="list the presets")
    return parser


def _run(argv):
    if argv[:1] == ["demo"]:  # the demo parses its own options, so its --help lists them
        from . import _demo
        return _demo.main(argv[1:], _ArgumentParser)
    args = _parser().parse_args(argv)
    handlers = {"fit": _command_fit, "predict": _command_predict, "ablate": _command_ablate,
                "presets": _command_presets}
    return handlers[args.command](args)


def main(argv=None):
    """Run ``clusterkit <command> [options]``; returns the exit status.

    Parameters
    ----------
    argv : list of str or None, default=None
        The arguments after the program name; ``None`` reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success; 2 on a user error, reported as one line on standard error; 130 when
        interrupted (Ctrl-C); 141 when standard output was closed early (e.g. by ``head``).
        ``--help`` and errors in the arguments exit through :class:`SystemExit` (status 0
        and 2), as :mod:`argparse` does. Any other exception is a bug and propagates with
        its traceback.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    prog = " ".join(["clusterkit", *argv[:1]]) if argv[:1] and \
        argv[0] in ("fit", "predict", "ablate", "presets", "demo") else "clusterkit"
    try:
        return _run(argv)
    except CommandError as error:
        message = " ".join(str(error).split())  # always one line
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader left (e.g. head): stop quietly, and keep Python's final flush of
        # standard output from failing again at exit
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # standard output is not a real file (tests)
            pass
        return 141


if __name__ == "__main__":
    sys.exit(main())
