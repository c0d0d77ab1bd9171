"""Every preset against scikit-learn's k-means: the measured columns of "Choosing a preset".

Every preset of ``clusterkit.presets`` runs with its defaults (``balanced_kmeans`` with
``size_max = ceil(1.1 N / C)``, its one bound: ``_common.preset_keywords``) and is compared,
seed by seed, with scikit-learn's ``KMeans(C, n_init=1, random_state=seed)`` fitted on the
same rows in the same process (inside ``threadpool_limits(n_threads)``; clusterkit gets
``n_threads``). Per preset and data kind: the fit time over scikit-learn's and the
quantization error over scikit-learn's, medians over the seeds. The error is the same for every preset, mixtures and
SLK included: the squared distance of every row to its nearest centre, summed over all rows
(:func:`clusterkit.metrics.quantization_error`, for scikit-learn's centres too); times are
whole ``fit`` calls, seeding, coreset, SLK's kNN graph and final labels included.

Spherical k-means (``spherical_kmeans``) clusters the rows' directions, so the quantization
error of the raw rows measures something it does not optimise: it and scikit-learn's k-means
run on the rows scaled to unit norm, and both are scored by the quantization error of those
unit rows to unit centres (scikit-learn's centres scaled to unit norm), twice the cosine
dissimilarity that spherical k-means minimises.

Data kinds (float32):

* ``mixture``: 300,000 x 32 draws of 500 Gaussians with uniform random means in
  [-10, 10]^32, Dirichlet(1) weights and standard deviations uniform in [0.5, 3] (a new
  mixture per seed, as in ``bench_defaults.py``), C = 500;
* ``mnist``: MNIST, 70,000 x 784 raw pixels, C = 100, from ``--data``/``CLUSTERKIT_DATA``
  (skipped when absent);
* ``grid``: the BIRCH grid of 16 x 16 Gaussians in 2-D (25,600 points), C = 256.

Presets whose cost grows with ``N·C`` beyond the others run on a random subset of the rows
(the same for every preset of that seed, and scikit-learn is fitted on it too); the tables
say so. With ``--write``: the RESULTS.md section, the table of the documentation's page
"Choosing a preset" (``docs/presets_table.inc``) and the README's table between
``<!-- presets:start -->`` and ``<!-- presets:end -->``; with ``--presets`` too, only those
presets' rows and cells are replaced, the others kept as the previous ``--write`` left them
(the section's notes say which rows came from which run). ``--quick``: tiny sizes and one
seed, to check the script end to end. Run with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_presets.py --write
"""
import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from clusterkit import knn_graph, presets
from clusterkit.slk.graph import EXACT_BELOW
from clusterkit.datasets import load_benchmark, make_birch_grid
from clusterkit.metrics import quantization_error
from clusterkit.presets import GUIDE, PRESETS

from _common import (RESULTS_PATH, command_note, data_home, format_table, machine_info,
                     preset_keywords, publish, warn_openblas_overrides)
from _presets_tables import (markdown_table, merge_columns, read_rst_columns,
                             replace_between_markers, rst_table)
from bench_defaults import make_mixture, timed_fit

TITLE = "Every preset against scikit-learn's k-means (bench_presets.py)"
ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "docs" / "presets_table.inc"
README = ROOT / "README.md"
#: The presets compared with scikit-learn's k-means: all of them.
COMPARED = list(PRESETS)
#: The header of the RESULTS.md table (one row per data kind and preset).
HEADERS = ["data", "preset", "rows x features", "time / scikit-learn's", "range",
           "error / scikit-learn's", "range", "fit s", "graph s", "scikit-learn s",
           "iterations"]


def spherical(name):
    """Whether ``name`` fits a spherical model (compared on unit rows, see the notes)."""
    return GUIDE[name].model == "spherical k-means"


def unit(A):
    """The rows of ``A`` scaled to unit Euclidean norm (float32 kept)."""
    return A / np.linalg.norm(A, axis=1, keepdims=True).astype(A.dtype)


@dataclass
class Kind:
    """A data kind: its rows for a seed, its number of clusters, and the presets that run on
    a subset of its rows (``{preset: n_rows}``)."""

    name: str
    n_clusters: int
    data: object  # seed -> X
    subset: dict = field(default_factory=dict)

    def describe(self, shape):
        n, d = shape
        return f"{self.name}, {n:,} x {d}, C = {self.n_clusters}"


def kinds(args):
    """The data kinds to run, full size or (``--quick``) tiny."""
    quick = args.quick
    if "mixture" in args.kinds:
        n = 20_000 if quick else 300_000
        C = 50 if quick else 500
        # SLK's soft assignments and z-updates cost N x C: a tenth of the rows
        yield Kind("mixture", C, lambda seed: make_mixture(seed, n_samples=n, n_clusters=C),
                   {"slk_bo": n // 10, "slk_ms": n // 10})
    if "mnist" in args.kinds:
        try:
            X, _ = load_benchmark("mnist", args.data)
        except FileNotFoundError as error:
            print(f"mnist skipped: {error}", file=sys.stderr)
        else:
            X = np.ascontiguousarray(X[:5000] if quick else X, dtype=np.float32)
            # SLK: a fifth of the rows
            yield Kind("mnist", 20 if quick else 100, lambda seed: X,
                       {"slk_bo": len(X) // 5, "slk_ms": len(X) // 5})
    if "grid" in args.kinds:
        side = 6 if quick else 16
        # SLK: 10,000 of the rows
        yield Kind("grid", side * side, lambda seed: make_birch_grid(
            n_side=side, random_state=seed, dtype=np.float32)[0],
            {"slk_bo": 1000 if quick else 10_000, "slk_ms": 1000 if quick else 10_000})


def rows_for(kind, preset, X, rng_seed):
    """The rows ``preset`` runs on: all of ``X`` or a random subset, the same for every
    preset and scikit-learn with this seed."""
    n = kind.subset.get(preset)
    if n is None or n >= X.shape[0]:
        return X
    rng = np.random.default_rng(rng_seed)
    return X[np.sort(rng.choice(X.shape[0], n, replace=False))]


def warm_up_graph():
    """Build one approximate kNN graph untimed: pynndescent's first call in a process
    compiles its numba code, a one-off cost no SLK fit should carry."""
    X = np.random.default_rng(0).standard_normal((EXACT_BELOW, 8)).astype(np.float32)
    start = time.perf_counter()
    knn_graph(X, exact=False, random_state=0)
    return time.perf_counter() - start


def run_kind(kind, args):
    """``{preset: [run per seed]}`` and the description of the rows of each preset."""
    runs = {name: [] for name in args.presets}
    shapes = {}
    for seed in range(args.seeds):
        X_all = kind.data(seed)
        refs = {}  # scikit-learn's fit per number of rows
        for name in args.presets:
            X = rows_for(kind, name, X_all, seed)
            shapes[name] = X.shape
            key = (X.shape[0], spherical(name))
            if key not in refs:
                X_ref = unit(X) if spherical(name) else X
                with threadpool_limits(args.n_threads):
                    ref, t_ref = timed_fit(KMeans(kind.n_clusters, n_init=1,
                                                  random_state=seed), X_ref)
                centers = ref.cluster_centers_
                qe_ref = quantization_error(X_ref, unit(centers) if spherical(name) else
                                            centers, n_threads=args.n_threads)
                refs[key] = (t_ref, qe_ref)
                print(f"{kind.describe(X.shape)}{', unit rows' if spherical(name) else ''}, "
                      f"seed {seed}: scikit-learn {t_ref:.2f} s, {ref.n_iter_} iterations",
                      flush=True)
            t_ref, qe_ref = refs[key]
            build = getattr(presets, name)
            model, t = timed_fit(build(kind.n_clusters, random_state=seed,
                                       n_threads=args.n_threads,
                                       **preset_keywords(name, X.shape[0], kind.n_clusters)),
                                 X)
            # a spherical model's centres are unit: the error of the unit rows
            qe = quantization_error(unit(X) if spherical(name) else X, model.cluster_centers_,
                                    n_threads=args.n_threads)
            runs[name].append(dict(time=t / t_ref, error=qe / qe_ref, seconds=t,
                                   t_ref=t_ref, iters=model.n_iter_,
                                   graph=model.seconds_.get("graph", 0.0)))
            print(f"  {name}: {t:.2f} s ({t / t_ref:.3g} of scikit-learn's), error "
                  f"{qe / qe_ref:.4f} of scikit-learn's, {model.n_iter_} iterations",
                  flush=True)
    return runs, shapes


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def time_ratio(value):
    """Two significant digits, without an exponent."""
    return f"{value:.2g}" if value < 100 else f"{value:.0f}"


def ratio_cell(runs, shape, full_shape):
    """``time / error`` ratios (medians), and the rows when a preset ran on a subset."""
    cell = f"{time_ratio(median(runs, 'time'))} / {median(runs, 'error'):.3f}"
    if shape[0] != full_shape[0]:
        cell += f" (N = {shape[0]:,})"
    return cell


def results_rows(kind, runs, shapes, full_shape):
    rows = []
    for name in runs:
        r = runs[name]
        rows.append([kind.name, name, f"{shapes[name][0]:,} x {shapes[name][1]}",
                     f"{median(r, 'time'):.3g}",
                     f"{min(x['time'] for x in r):.3g} .. {max(x['time'] for x in r):.3g}",
                     f"{median(r, 'error'):.4f}",
                     f"{min(x['error'] for x in r):.4f} .. {max(x['error'] for x in r):.4f}",
                     f"{median(r, 'seconds'):.2f}",
                     f"{median(r, 'graph'):.2f}" if median(r, 'graph') else "",
                     f"{median(r, 't_ref'):.2f}", f"{median(r, 'iters'):g}"])
    return rows


def previous_section():
    """The date, table rows and notes of this benchmark's RESULTS.md section as the last
    ``--write`` left it."""
    text = RESULTS_PATH.read_text(encoding="utf-8")
    section = text.split(f"\n## {TITLE} (", 1)[1].split("\n## ", 1)[0]
    stamp = section.split(")", 1)[0]
    lines = section.splitlines()
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines
            if line.startswith("| ") and not line.startswith("| data ")]
    notes = [line[2:] for line in section.split("**Notes**", 1)[1].splitlines()
             if line.startswith("- ")]
    return stamp, rows, notes


def merge_previous(table, notes, measured):
    """The rows of ``table`` (this run, presets ``measured``) merged with the previous
    section's rows of the other presets, in the order of the data kinds and
    :data:`PRESETS`; the notes of both runs, saying which rows come from which."""
    stamp, old_rows, old_notes = previous_section()
    kept = [row for row in old_rows if row[1] not in measured]
    kinds_order = ["mixture", "mnist", "grid"]
    merged = sorted(kept + table, key=lambda row: (kinds_order.index(row[0]),
                                                   PRESETS.index(row[1])))
    generic = len(notes) - 1  # this run's notes up to its command
    names = ", ".join(measured)
    return merged, [*notes[:generic], f"Rows of {names}: this run, on the machine above; "
                    f"{notes[-1]}. The other rows were kept from the section as written "
                    f"on {stamp}, whose notes follow.",
                    *(note for note in old_notes[2:]
                      if not note.startswith(("spherical_", "balanced_kmeans:")))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz "
                        "(default: $CLUSTERKIT_DATA)")
    parser.add_argument("--kinds", nargs="+", default=["mixture", "mnist", "grid"],
                        choices=["mixture", "mnist", "grid"])
    parser.add_argument("--presets", nargs="+", default=COMPARED, choices=COMPARED,
                        help="a subset of the presets (with --write: replace only their "
                        "rows and cells)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true",
                        help="tiny data and one seed, to check the script end to end")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section, "
                        "docs/presets_table.inc and the README's table")
    args = parser.parse_args()
    if args.quick:
        args.seeds = 1
    if args.write and list(args.kinds) != ["mixture", "mnist", "grid"]:
        parser.error("--write needs every data kind; leave out --kinds")
    warn_openblas_overrides()
    compile_seconds = None
    if any(name.startswith("slk") for name in args.presets):
        compile_seconds = warm_up_graph()
        print(f"pynndescent warmed up in {compile_seconds:.1f} s", flush=True)
    table, columns = [], []
    for kind in kinds(args):
        runs, shapes = run_kind(kind, args)
        full_shape = max(shapes.values())
        table += results_rows(kind, runs, shapes, full_shape)
        columns.append((kind.describe(full_shape),
                        {name: ratio_cell(runs[name], shapes[name], full_shape)
                         for name in runs}))
    notes = [
        f"{args.seeds} seed(s) per data kind; medians over the seeds (ranges: smallest and "
        "largest). time: the preset's whole fit over scikit-learn's KMeans(n_init=1) with "
        "the same seed on the same rows, same process; error: quantization error (every "
        "row to its nearest centre, clusterkit.metrics.quantization_error) over "
        f"scikit-learn's; n_threads={args.n_threads} for both. 'fit s' and 'scikit-learn "
        "s': seconds (medians); 'graph s': the part of SLK's fit that built its kNN graph; "
        "'iterations': n_iter_.",
        "Presets whose rows x features differ from the others' ran on a random subset of "
        "the rows (scikit-learn too): SLK's N x C soft assignments and z-updates would cost "
        "far more than every other fit.",
        "balanced_kmeans: with size_max = ceil(1.1 N / C), clusters at most 10 % above "
        "the mean size; its error is that of every row to its nearest centre, as for the "
        "others, not of its bounded labels_.",
        "spherical_kmeans: it and scikit-learn ran on the rows scaled to unit norm; both "
        "errors are those of the unit rows to unit centres (scikit-learn's scaled to unit "
        "norm), twice the cosine dissimilarity spherical k-means minimises.",
        command_note(),
    ]
    if compile_seconds is not None:
        notes.insert(3, "pynndescent compiles its numba code at its first call in a process: "
                     f"{compile_seconds:.0f} s in this run, spent before the timed fits.")
    if args.write and list(args.presets) != COMPARED:
        # a subset run: the other presets' rows, notes and cells as the last --write left them
        table, notes = merge_previous(table, notes, args.presets)
        columns = merge_columns(read_rst_columns(INCLUDE.read_text(encoding="utf-8")),
                                columns)
    publish(TITLE, format_table(HEADERS, table), notes, args.write,
            machine_info(args.n_threads))
    if args.write:
        INCLUDE.write_text(rst_table(columns, args.seeds, args.n_threads), encoding="utf-8")
        block = markdown_table(columns, args.seeds, args.n_threads)
        README.write_text(replace_between_markers(README.read_text(encoding="utf-8"), block),
                          encoding="utf-8")
        print(f"wrote {INCLUDE.relative_to(ROOT)} and the table in {README.name}")


if __name__ == "__main__":
    main()
