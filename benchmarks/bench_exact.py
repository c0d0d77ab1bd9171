"""Exact k-means to convergence: our Lloyd and Elkan against scikit-learn's, same start.

For every data set one k-means++ start (scikit-learn's ``kmeans_plusplus``, fixed seed) is
given to four fits that all stop at the first iteration that changes no label (``tol=0``, the
strict convergence of scikit-learn's ``KMeans``), so all four follow the same iterates:
clusterkit ``presets.lloyd`` (``FullEStep``) and ``presets.elkan`` (``ElkanEStep``), and
scikit-learn ``KMeans(algorithm="lloyd")`` and ``KMeans(algorithm="elkan")``. Reported per
row: iterations, distance evaluations of the iterations (ours count them; scikit-learn's Lloyd
computes ``N C`` per iteration, its Elkan does not say), median wall time and the time ratios,
and the final inertia relative to scikit-learn's Lloyd.

Rows: the BIRCH grid with C = 400 and C = 1024 (100 points per cluster), Gaussian blobs
(N = 200,000, D = 64, C = 256) and, if ``$CLUSTERKIT_DATA`` (or ``--data``) holds
``mnist.npz``, MNIST's 60,000 training images with C = 50 and C = 500. Run with the OpenBLAS
override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_exact.py --write
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from threadpoolctl import threadpool_limits

from clusterkit import presets
from clusterkit.datasets import load_benchmark, make_birch_grid

from _common import (EXACT_TARGETS_NOTE, RESULTS_PATH, command_note, data_home,
                     format_table, machine_info, median_time, warn_openblas_overrides,
                     write_results)

TITLE = "Exact k-means to convergence: Lloyd and Elkan (bench_exact.py)"
METHODS = ("ours lloyd", "ours elkan", "sklearn lloyd", "sklearn elkan")


def datasets(folder, quick):
    """(name, X, n_clusters) of every row; MNIST only when its file is there."""
    rows = []
    for n_side in (20, 32):
        X, _, _ = make_birch_grid(n_side=n_side, n_per_cluster=100, random_state=0)
        rows.append((f"BIRCH grid C={n_side ** 2}", X, n_side ** 2))
    n_blobs = 50_000 if quick else 200_000
    X, _ = make_blobs(n_blobs, 64, centers=256, cluster_std=4.0, random_state=0)
    rows.append((f"blobs N={n_blobs} D=64 C=256", X, 256))
    try:
        X, _ = load_benchmark("mnist", folder)
    except FileNotFoundError as error:
        print(f"MNIST skipped: {error}", file=sys.stderr)
    else:
        X = np.ascontiguousarray(X[:60_000], dtype=np.float64)
        for n_clusters in (50, 500):
            rows.append((f"MNIST C={n_clusters}", X, n_clusters))
    return rows


def fit(method, X, init, n_threads, max_iter):
    n_clusters = init.shape[0]
    if method.startswith("ours"):
        make = presets.lloyd if method == "ours lloyd" else presets.elkan
        km = make(n_clusters, seed=init, tol=0, max_iter=max_iter, n_threads=n_threads)
    else:
        km = KMeans(n_clusters, init=init, n_init=1, tol=0, max_iter=max_iter,
                    algorithm=method.split()[1])
    with threadpool_limits(limits=n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return km.fit(X)


def run(args):
    table, notes = [], []
    for name, X, n_clusters in datasets(args.data, args.quick):
        if args.only and not any(part in name for part in args.only):
            continue
        init, _ = kmeans_plusplus(X, n_clusters, random_state=0)
        results = {}
        for method in METHODS:
            repeats = 1 if method == "sklearn elkan" and X.shape[1] > 100 else args.repeats
            seconds, _, km = median_time(lambda: fit(method, X, init, args.n_threads,
                                                     args.max_iter), repeats)
            evals = (km.cost_["estep"] if method.startswith("ours")
                     else X.shape[0] * n_clusters * km.n_iter_ if method == "sklearn lloyd"
                     else None)
            results[method] = (seconds, km.n_iter_, evals, km.inertia_)
            print(f"{name:28s} {method:14s} {seconds:8.3f} s  {km.n_iter_:4d} iterations  "
                  f"evals {evals}", flush=True)
        t = {m: r[0] for m, r in results.items()}
        ref_inertia = results["sklearn lloyd"][3]
        best_sklearn = min(t["sklearn lloyd"], t["sklearn elkan"])
        lloyd_evals = results["ours lloyd"][2]
        table.append([
            name, f"{X.shape[0]}x{X.shape[1]}",
            " / ".join(str(results[m][1]) for m in METHODS),
            f"{lloyd_evals:.3g}", f"{results['ours elkan'][2]:.3g}",
            f"{results['ours elkan'][2] / lloyd_evals:.1%}",
            " / ".join(f"{t[m]:.3g}" for m in METHODS),
            f"{t['ours elkan'] / t['sklearn elkan']:.2f}",
            f"{min(t['ours lloyd'], t['ours elkan']) / best_sklearn:.2f}",
            f"{t['ours elkan'] / t['ours lloyd']:.2f}",
            " / ".join(f"{results[m][3] / ref_inertia - 1:+.1e}" for m in METHODS[:2]),
        ])
    headers = ["data", "N x D", "iterations (ours L / E, sk L / E)", "evals Lloyd",
               "evals Elkan", "Elkan/Lloyd evals", "seconds (ours L / E, sk L / E)",
               "ours E / sk E", "our best / sk best", "ours E / ours L",
               "inertia vs sk Lloyd (ours L / E)"]
    notes.append(
        "Same k-means++ start for all four fits (scikit-learn `kmeans_plusplus`, "
        f"random_state=0); `tol=0`, `max_iter={args.max_iter}`: every fit stops at the first "
        "iteration that changes no label, so all follow the same iterates. Distance "
        "evaluations are those of the iterations (clusterkit's `cost_['estep']`; for Elkan "
        "the centre-centre distances are included). Times are medians of "
        f"{args.repeats} fits (1 for scikit-learn's Elkan on MNIST), {args.n_threads} threads "
        "for both libraries.")
    notes.append(EXACT_TARGETS_NOTE)
    notes.append(command_note())
    return format_table(headers, table), notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=data_home(),
                        help="folder with mnist.npz (default: $CLUSTERKIT_DATA)")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="smaller blobs (a smoke run)")
    parser.add_argument("--only", nargs="*", default=[],
                        help="run only the rows whose name contains one of these strings")
    parser.add_argument("--write", action="store_true",
                        help=f"write the section of {Path(RESULTS_PATH).name}")
    args = parser.parse_args()
    warn_openblas_overrides()
    markdown, notes = run(args)
    print(markdown)
    if args.write:
        write_results(RESULTS_PATH, TITLE, markdown, notes, machine_info(args.n_threads))


if __name__ == "__main__":
    main()
