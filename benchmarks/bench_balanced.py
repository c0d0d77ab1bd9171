"""Balanced clusters: ``BalancedEStep`` against k-means-constrained (when importable) and,
as a yardstick without bounds, scikit-learn's ``KMeans`` and clusterkit's Lloyd.

A mixture of 30 Gaussians (default 20,000 x 16 float32),
``C = 100`` clusters of 150 to 250 rows, ``n_init = 1``, seeds 0, 1, 2: time, error
(quantization error of the labels, which for the bounded fits hold the bounds), the
clusters' sizes, iterations, and the time of each step's solve (first, cold; then warm).

Usage::

    python benchmarks/bench_balanced.py [--n 20000] [--d 16] [--clusters 100]
        [--size-min 150] [--size-max 250] [--seeds 0 1 2] [--n-threads 2] [--no-peer]
        [--write]

``--write`` puts the table into RESULTS.md.
"""
import argparse
import time

import numpy as np

from _common import command_note, format_table, machine_info, publish

from clusterkit import BalancedEStep, Breathing, Clusterer
from clusterkit.datasets import make_gaussian_blobs

TITLE = "Balanced clusters: BalancedEStep against k-means-constrained (bench_balanced.py)"


def error(X, labels, centers):
    return float(((X.astype(np.float64) - centers.astype(np.float64)[labels]) ** 2).sum())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--d", type=int, default=16)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--size-min", type=float, default=150)
    parser.add_argument("--size-max", type=float, default=250)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--no-peer", action="store_true",
                        help="leave k-means-constrained out (minutes per fit)")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    try:
        if args.no_peer:
            raise ImportError
        from k_means_constrained import KMeansConstrained
    except ImportError:
        KMeansConstrained = None
        print("k-means-constrained is left out or not importable: no bounded peer; "
              "scikit-learn's KMeans and clusterkit's Lloyd (no bounds) are the "
              "yardsticks.\n")
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    rows = []
    for seed in args.seeds:
        X, _, _ = make_gaussian_blobs(args.n, args.d, 30, dtype=np.float32, random_state=seed)
        C = args.clusters
        fits = {}
        start = time.perf_counter()
        balanced = Clusterer(C, estep=BalancedEStep(args.size_min, args.size_max),
                             n_threads=args.n_threads, random_state=seed).fit(X)
        fits["clusterkit BalancedEStep"] = (time.perf_counter() - start, balanced.labels_,
                                            balanced.cluster_centers_,
                                            len(balanced.history_), balanced.history_)
        start = time.perf_counter()
        breathing = Clusterer(C, estep=BalancedEStep(args.size_min, args.size_max),
                              refine=Breathing(), n_threads=args.n_threads,
                              random_state=seed).fit(X)
        fits["clusterkit BalancedEStep, Breathing"] = (
            time.perf_counter() - start, breathing.labels_, breathing.cluster_centers_,
            len(breathing.history_), None)
        start = time.perf_counter()
        lloyd = Clusterer(C, n_threads=args.n_threads, random_state=seed).fit(X)
        fits["clusterkit Lloyd (no bounds)"] = (time.perf_counter() - start, lloyd.labels_,
                                                lloyd.cluster_centers_, len(lloyd.history_),
                                                None)
        with threadpool_limits(args.n_threads):
            start = time.perf_counter()
            km = KMeans(C, n_init=1, random_state=seed).fit(X)
            fits["sklearn KMeans (no bounds)"] = (time.perf_counter() - start, km.labels_,
                                                  km.cluster_centers_, km.n_iter_, None)
            if KMeansConstrained is not None:
                start = time.perf_counter()
                # (n_jobs parallelises its n_init runs only; with more than one, joblib
                # hands it the data read-only, which it refuses)
                kmc = KMeansConstrained(C, size_min=int(args.size_min),
                                        size_max=int(args.size_max), n_init=1,
                                        random_state=seed, n_jobs=1).fit(X)
                fits["k-means-constrained"] = (time.perf_counter() - start, kmc.labels_,
                                               kmc.cluster_centers_, kmc.n_iter_, None)
        for name, (seconds, labels, centers, n_iter, history) in fits.items():
            sizes = np.bincount(labels, minlength=C)
            rows.append((seed, name, seconds, error(X, labels, centers), sizes.min(),
                         sizes.max(), n_iter, history))
    reference = {seed: err for seed, name, _, err, *_ in rows
                 if name == "sklearn KMeans (no bounds)"}
    print(f"{args.n} x {args.d} float32, C = {args.clusters}, sizes {args.size_min:g} to "
          f"{args.size_max:g}, n_init = 1, {args.n_threads} threads\n")
    peer = {seed: (err, seconds) for seed, name, seconds, err, *_ in rows
            if name == "k-means-constrained"}
    table = [[seed, name, f"{seconds:.2f}", f"{err:.6g}", f"{err / reference[seed]:.4f}",
              f"{err / peer[seed][0]:.4f}, {seconds / peer[seed][1]:.4f}" if seed in peer
              else "", f"{low}-{high}", n_iter]
             for seed, name, seconds, err, low, high, n_iter, _ in rows]
    headers = ["seed", "method", "seconds", "error", "error / sklearn's",
               "error, time / k-means-constrained's", "sizes", "iterations"]
    notes = [f"{args.n:,} x {args.d} float32, a mixture of 30 Gaussians (`make_gaussian_blobs`, random_state = the seed); C = {args.clusters}, "
             f"clusters of {args.size_min:g} to {args.size_max:g} rows, n_init = 1, "
             f"{args.n_threads} threads (k-means-constrained with n_jobs=1: with more, "
             "joblib hands it read-only data, which it refuses); error: the quantization "
             "error of the labels, which hold the bounds for the bounded fits.",
             command_note()]
    publish(TITLE, format_table(headers, table), notes, args.write,
            info=machine_info(n_threads=args.n_threads))
    print("\nBalancedEStep's steps (seconds of E-step per iteration are not recorded; the "
          "solver's augmenting paths per step show the warm starts):")
    for seed, name, *_, history in rows:
        if history is not None:
            paths = [info.get("balanced_paths") for info in history]
            print(f"seed {seed}: paths per step {paths}")


if __name__ == "__main__":
    main()
