"""``python -m clusterkit demo``: a few clustering variants on a BIRCH grid, one table.

Every variant is fitted on the same data with the same ``random_state`` through the public
estimator API; the table reports wall-clock seconds of ``fit``, the quantization error of the
fitted centres (also relative to the true means), the distance evaluations the fit counted
(seeding, reduction, E-steps, final labels) and the number of iterations. Warnings the fits
raise are listed after the table.
"""
import platform
import time
import warnings

import numpy as np

from . import AFKMC2, Clusterer, FullEStep, HardMStep, KMeansPlusPlus, SoftMStep, presets
from ._kernels import _openmp
from .datasets import birch_grid_quantization_error, make_birch_grid
from .metrics import quantization_error

__all__ = ["main"]

COLUMNS = ("variant", "seconds", "quant. error", "QE / truth", "distance evals", "iterations")


def _build_parser(prog="python -m clusterkit demo"):
    from .__main__ import _ArgumentParser  # the command line's one-line errors
    parser = _ArgumentParser(
        prog=prog,
        description="Fit k-means and GMM variants on a BIRCH grid (Forster & Lücke 2018, §4) "
                    "and print one table: seconds, quantization error, distance evaluations "
                    "and iterations per variant.")
    parser.add_argument("--n-side", type=int, default=16,
                        help="clusters per side of the grid: C = n_side**2 clusters, "
                             "N = 100 C samples (default: %(default)s)")
    parser.add_argument("--random-state", type=int, default=0,
                        help="seed for the data and every fit (default: %(default)s)")
    parser.add_argument("--n-threads", type=int, default=None,
                        help="OpenMP threads (default: all available cores)")
    return parser


def _core_variants(n_clusters, common):
    """The variants every installation has: (row label, unfitted estimator)."""
    common = {key: common[key] for key in ("random_state", "n_threads")}
    return [
        ("k-means++ + Lloyd", Clusterer(n_clusters, seed=KMeansPlusPlus(), estep=FullEStep(),
                                        mstep=HardMStep(), **common)),
        ("AFK-MC² + Lloyd", Clusterer(n_clusters, seed=AFKMC2(), estep=FullEStep(),
                                      mstep=HardMStep(), **common)),
        ("soft EM (isotropic GMM)", Clusterer(n_clusters, seed=AFKMC2(), estep=FullEStep(),
                                              mstep=SoftMStep(), **common)),
    ]


def _preset_variants(n_clusters, common):
    """The papers' presets with their defaults, on a coreset of ``common["coreset_size"]``
    where they build one: (row label, unfitted estimator)."""
    size = common["coreset_size"]
    common = {key: common[key] for key in ("random_state", "n_threads")}
    return [
        ("preset var_kmeans_s", presets.var_kmeans_s(n_clusters, **common)),
        ("preset var_gmm_s", presets.var_gmm_s(n_clusters, **common)),
        ("preset lwcs_lloyd", presets.lwcs_lloyd(n_clusters, coreset_size=size, **common)),
        ("preset vc_gmm", presets.vc_gmm(n_clusters, coreset_size=size, **common)),
    ]


def _fit_row(label, estimator, X, reference_error):
    """The table row of one fit, and the messages of the warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(X)
        seconds = time.perf_counter() - start
    error = quantization_error(X, estimator.cluster_centers_, n_threads=estimator.n_threads)
    row = (label, f"{seconds:.2f}", f"{error:,.1f}", f"{error / reference_error:.3f}",
           f"{estimator.n_distance_evals_:,}", f"{estimator.n_iter_}")
    return row, [str(warning.message) for warning in caught]


def _format_row(row, widths):
    cells = [row[0].ljust(widths[0])]
    cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
    return "  ".join(cells).rstrip()


def main(argv=None):
    """Run the demo and print its table to standard output.

    Parameters
    ----------
    argv : list of str or None, default=None
        Command-line options (``--n-side``, ``--random-state``, ``--n-threads``); ``None``
        reads ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success (argument errors exit through :mod:`argparse`).
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    if args.n_side < 1:
        parser.error(f"argument --n-side: must be >= 1, got {args.n_side}")
    if not 0 <= args.random_state < 2 ** 32:
        parser.error(f"argument --random-state: must be in [0, 2**32), got {args.random_state}")
    try:
        n_threads = _openmp.effective_n_threads(args.n_threads)
    except ValueError as error:
        parser.error(f"argument --n-threads: {error}")
    X, _, true_centers = make_birch_grid(n_side=args.n_side, random_state=args.random_state)
    n_samples, n_clusters = X.shape[0], true_centers.shape[0]
    reference_error = quantization_error(X, true_centers, n_threads=n_threads)

    print(f"clusterkit demo: BIRCH grid {args.n_side} x {args.n_side} (C={n_clusters:,} "
          f"clusters, N={n_samples:,} samples, D=2, float64), random_state={args.random_state}")
    print(f"machine: Python {platform.python_version()}, numpy {np.__version__}, OpenMP "
          f"{'on' if _openmp.openmp_enabled() else 'off'}, {n_threads} "
          f"thread{'s' if n_threads != 1 else ''}")
    expected = birch_grid_quantization_error(n_side=args.n_side)
    print(f"truth: quantization error of the true means {reference_error:,.1f} "
          f"(expected N*D*variance = {expected:,.0f})")
    print(flush=True)

    # a coreset of an eighth of the data, for the presets that build one
    common = dict(random_state=args.random_state, n_threads=n_threads,
                  coreset_size=max(n_clusters, n_samples // 8))
    variants = _core_variants(n_clusters, common) + _preset_variants(n_clusters, common)
    # rows are printed as the fits finish, so the column widths are fixed up front
    widths = [max(len(COLUMNS[0]), *(len(label) for label, _ in variants))]
    widths += [max(len(name), 12) for name in COLUMNS[1:]]
    print(_format_row(COLUMNS, widths))
    print("  ".join("-" * width for width in widths), flush=True)
    notes = []
    for label, estimator in variants:
        row, messages = _fit_row(label, estimator, X, reference_error)
        print(_format_row(row, widths), flush=True)
        notes += [f"{label}: {message}" for message in messages]
    if notes:  # after the table, so that they do not break it up
        print("\nwarnings:")
        for note in notes:
            print(f"  {note}")
    return 0
