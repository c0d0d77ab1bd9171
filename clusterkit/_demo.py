"""``python -m clusterkit demo``: scikit-learn's ``KMeans`` and our fastest and best fits on a
BIRCH grid, one table.

Every variant is fitted on the same float32 data with the same ``random_state`` and the same
number of threads; the first row is scikit-learn's ``KMeans(n_init=1)`` (greedy k-means++ and
Lloyd's iterations), the reference of the time and error columns. The table reports the
wall-clock seconds of ``fit``, the speed-up over scikit-learn, the quantization error of the
fitted centres (every sample to its nearest centre) relative to scikit-learn's and to that of
the true means, and the distance evaluations our fits counted (seeding, reduction, E-steps,
refinement, final labels; scikit-learn does not count them). Warnings the fits raise are
listed after the table.
"""
import argparse
import platform
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from . import AFKMC2, LWCS, Breathing, Clusterer, PartialEStep, presets
from ._kernels import _openmp
from .datasets import birch_grid_quantization_error, make_birch_grid
from .metrics import quantization_error
from .presets import default_coreset_size

__all__ = ["main"]

COLUMNS = ("variant", "seconds", "speed-up", "error vs sklearn", "error / truth",
           "distance evals")
REFERENCE = "scikit-learn KMeans(n_init=1)"
CARD = "AFKMC2 + LWCS + PartialEStep(G=5) + Breathing"


def _build_parser(prog="python -m clusterkit demo", parser_class=argparse.ArgumentParser):
    parser = parser_class(
        prog=prog,
        description="Fit scikit-learn's KMeans and clusterkit's presets on a BIRCH grid "
                    "(Forster & Lücke 2018, §4) and print one table: seconds, speed-up over "
                    "scikit-learn, quantization error relative to scikit-learn's and to the "
                    "true means', and distance evaluations per variant.")
    parser.add_argument("--n-side", type=int, default=32,
                        help="clusters per side of the grid: C = n_side**2 clusters, "
                             "N = 100 C samples (default: %(default)s)")
    parser.add_argument("--random-state", type=int, default=0,
                        help="seed for the data and every fit (default: %(default)s)")
    parser.add_argument("--n-threads", type=int, default=None,
                        help="OpenMP threads (default: all available cores)")
    return parser


def _coreset_size(n_samples, n_clusters):
    """The presets' default coreset size, at most a third of the data (small grids)."""
    return max(n_clusters, min(default_coreset_size(n_clusters), n_samples // 3))


def _variants(n_clusters, random_state, n_threads, coreset_size):
    """(row label, unfitted estimator) of every row, scikit-learn's reference first."""
    from sklearn.cluster import KMeans
    common = dict(random_state=random_state, n_threads=n_threads)
    return [
        (REFERENCE, KMeans(n_clusters, n_init=1, random_state=random_state)),
        ("preset lloyd", presets.lloyd(n_clusters, **common)),
        ("preset lwcs_lloyd", presets.lwcs_lloyd(n_clusters, coreset_size=coreset_size,
                                                 **common)),
        ("preset vc_gmm", presets.vc_gmm(n_clusters, coreset_size=coreset_size, **common)),
        (CARD, Clusterer(n_clusters, seed=AFKMC2(), reduce=LWCS(coreset_size),
                         estep=PartialEStep(G=5), refine=Breathing(), **common)),
        ("preset best_quality", presets.best_quality(n_clusters, coreset_size=coreset_size,
                                                     **common)),
    ]


def _fit(estimator, X, n_threads):
    """Seconds of ``fit``, the quantization error of its centres and the warnings' messages."""
    with warnings.catch_warnings(record=True) as caught, threadpool_limits(n_threads):
        warnings.simplefilter("always")
        start = time.perf_counter()
        estimator.fit(X)
        seconds = time.perf_counter() - start
    centers = np.asarray(estimator.cluster_centers_, dtype=X.dtype)
    error = quantization_error(X, centers, n_threads=n_threads)
    return seconds, error, [str(warning.message) for warning in caught]


def _row(label, estimator, seconds, error, reference, truth):
    ref_seconds, ref_error = reference
    evals = getattr(estimator, "n_distance_evals_", None)
    return (label, f"{seconds:.2f}", f"{ref_seconds / seconds:.1f}x",
            f"{100 * (error / ref_error - 1):+.1f} %", f"{error / truth:.3f}",
            "-" if evals is None else f"{evals:,}")


def _format_row(row, widths):
    cells = [row[0].ljust(widths[0])]
    cells += [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
    return "  ".join(cells).rstrip()


def main(argv=None, parser_class=argparse.ArgumentParser):
    """Run the demo and print its table to standard output.

    Parameters
    ----------
    argv : list of str or None, default=None
        Command-line options (``--n-side``, ``--random-state``, ``--n-threads``); ``None``
        reads ``sys.argv[1:]``.
    parser_class : type, default=argparse.ArgumentParser
        The parser; the command line passes its own (one-line errors).

    Returns
    -------
    status : int
        0 on success (argument errors exit through :mod:`argparse`).
    """
    parser = _build_parser(parser_class=parser_class)
    args = parser.parse_args(argv)
    if args.n_side < 1:
        parser.error(f"argument --n-side: must be >= 1, got {args.n_side}")
    if not 0 <= args.random_state < 2 ** 32:
        parser.error(f"argument --random-state: must be in [0, 2**32), got {args.random_state}")
    try:
        n_threads = _openmp.effective_n_threads(args.n_threads)
    except ValueError as error:
        parser.error(f"argument --n-threads: {error}")
    X, _, true_centers = make_birch_grid(n_side=args.n_side, random_state=args.random_state,
                                         dtype=np.float32)
    n_samples, n_clusters = X.shape[0], true_centers.shape[0]
    truth = quantization_error(X, true_centers, n_threads=n_threads)
    coreset_size = _coreset_size(n_samples, n_clusters)

    print(f"clusterkit demo: BIRCH grid {args.n_side} x {args.n_side} (C={n_clusters:,} "
          f"clusters, N={n_samples:,} samples, D=2, float32), random_state={args.random_state}")
    print(f"machine: Python {platform.python_version()}, numpy {np.__version__}, OpenMP "
          f"{'on' if _openmp.openmp_enabled() else 'off'}, {n_threads} "
          f"thread{'s' if n_threads != 1 else ''}")
    expected = birch_grid_quantization_error(n_side=args.n_side)
    print(f"truth: quantization error of the true means {truth:,.1f} "
          f"(expected N*D*variance = {expected:,.0f}); coresets of {coreset_size:,} draws")
    print(flush=True)

    variants = _variants(n_clusters, args.random_state, n_threads, coreset_size)
    # rows are printed as the fits finish, so the column widths are fixed up front
    widths = [max(len(COLUMNS[0]), *(len(label) for label, _ in variants))]
    widths += [max(len(name), 8) for name in COLUMNS[1:]]
    widths[-1] = max(widths[-1], 13)
    print(_format_row(COLUMNS, widths))
    print("  ".join("-" * width for width in widths), flush=True)
    notes, reference, results = [], None, {}
    for label, estimator in variants:
        seconds, error, messages = _fit(estimator, X, n_threads)
        reference = reference or (seconds, error)
        results[label] = (seconds, error)
        print(_format_row(_row(label, estimator, seconds, error, reference, truth), widths),
              flush=True)
        notes += [f"{label}: {message}" for message in messages]
    print("\nspeed-up: scikit-learn's seconds over the variant's; error: quantization error of "
          "all samples to their\nnearest centre (the same function for every row), against "
          "scikit-learn's and against the true means'.")
    fastest = min((label for label in results if label != REFERENCE),
                  key=lambda label: results[label][0])
    best = min((label for label in results if label != REFERENCE),
               key=lambda label: (results[label][1], results[label][0]))
    for what, label in (("fastest", fastest), ("lowest error", best)):
        seconds, error = results[label]
        print(f"{what}: {label}, {reference[0] / seconds:.1f}x faster than scikit-learn at "
              f"{100 * (error / reference[1] - 1):+.1f} % error")
    if notes:  # after the table, so that they do not break it up
        print("\nwarnings:")
        for note in notes:
            print(f"  {note}")
    return 0
