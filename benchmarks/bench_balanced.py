"""Balanced clusters: ``BalancedEStep`` against k-means-constrained, at scale, and for an index.

Three parts, each its own RESULTS.md section (``--part``):

``peer`` (default)
    Mixtures of 30 Gaussians (``make_gaussian_blobs``, random_state = the seed): 20,000 x 16
    float32, C = 100, clusters of 150 to 250 rows (seeds 0, 1, 2), and 50,000 x 32, C = 200,
    200 to 300 rows (seed 0: k-means-constrained takes minutes per fit); ``n_init = 1``. ``BalancedEStep`` alone and with ``Breathing`` against
    k-means-constrained (when importable) in the same run, with scikit-learn's ``KMeans``
    and clusterkit's Lloyd as yardsticks without bounds: time, error (quantization error of
    the labels, which hold the bounds for the bounded fits), sizes, iterations.
``scale``
    1,000,000 rows of 16 and of 64 float32 features (a mixture of 100 Gaussians), C = 1,000,
    ``size_max = 1.1 N / C``: the bounded fits against the default fit (Lloyd), time and error
    as ratios, the largest cluster.
``index``
    200,000 x 384 embedding-like unit rows (``bench_embeddings.make_embeddings``), C = 2,000,
    ``size_max = 1.5 N / C``: recall@10 of an IVF index at 1 % of the lists probed, each row
    in its labels' list, for the bounded fits and the default fit; list lengths.

Usage::

    python benchmarks/bench_balanced.py [--part peer|scale|index] [--seeds 0 1 2]
        [--large-seeds 0] [--n-threads 2] [--no-peer] [--features 16 64] [--shrink 1]
        [--breathing] [--write]

``--shrink K`` divides the rows and C by K, for a quick look; ``scale`` and ``index``
measure the preset's default (``BalancedEStep`` alone) unless ``--breathing`` adds the fits
with ``Breathing`` rounds;
``--write`` puts the part's table into RESULTS.md.
"""
import argparse
import sys
import time

import numpy as np

from _common import command_note, format_table, machine_info, publish

from clusterkit import BalancedEStep, Breathing, Clusterer
from clusterkit.datasets import make_gaussian_blobs

TITLES = {
    "peer": "Balanced clusters: BalancedEStep against k-means-constrained (bench_balanced.py)",
    "scale": "Balanced clusters at scale: against the default fit (bench_balanced.py --part "
             "scale)",
    "index": "Balanced clusters for an index: IVF recall and list lengths (bench_balanced.py "
             "--part index)",
}

#: ``peer``'s data sets: rows, features, C, size_min, size_max, and which seeds they take.
PEER_ROWS = ((20000, 16, 100, 150, 250, "seeds"), (50000, 32, 200, 200, 300, "large_seeds"))


def error(X, labels, centers):
    """Quantization error of ``labels`` (float64 sums)."""
    error = 0.0
    for start in range(0, X.shape[0], 65536):
        block = slice(start, start + 65536)
        diff = X[block].astype(np.float64) - centers.astype(np.float64)[labels[block]]
        error += float(np.einsum("ij,ij->", diff, diff))
    return error


def timed(fit):
    start = time.perf_counter()
    model = fit()
    return time.perf_counter() - start, model


def bounded_fits(C, size_min, size_max, seed, n_threads, breathing=True):
    """The bounded fits a part measures, by name: ``BalancedEStep`` alone (the preset's
    default) and, with ``breathing``, with ``Breathing`` rounds."""
    common = dict(n_threads=n_threads, random_state=seed)
    fits = {"BalancedEStep": lambda X: Clusterer(
        C, estep=BalancedEStep(size_min, size_max), **common).fit(X)}
    if breathing:
        fits["BalancedEStep, Breathing"] = lambda X: Clusterer(
            C, estep=BalancedEStep(size_min, size_max), refine=Breathing(), **common).fit(X)
    return fits


def part_peer(args):
    try:
        if args.no_peer:
            raise ImportError
        from k_means_constrained import KMeansConstrained
    except ImportError:
        KMeansConstrained = None
        print("k-means-constrained is left out or not importable: no bounded peer.\n")
    from sklearn.cluster import KMeans
    from threadpoolctl import threadpool_limits

    table = []
    for n, d, C, size_min, size_max, seeds in PEER_ROWS:
        n, C = n // args.shrink, C // args.shrink
        for seed in getattr(args, seeds):
            X = make_gaussian_blobs(n, d, 30, dtype=np.float32, random_state=seed)[0]
            fits = {}
            for name, fit in bounded_fits(C, size_min, size_max, seed,
                                          args.n_threads).items():
                seconds, model = timed(lambda: fit(X))
                fits[name] = (seconds, model.labels_, model.cluster_centers_,
                              len(model.history_))
            seconds, model = timed(lambda: Clusterer(C, n_threads=args.n_threads,
                                                     random_state=seed).fit(X))
            fits["clusterkit Lloyd (no bounds)"] = (seconds, model.labels_,
                                                    model.cluster_centers_,
                                                    len(model.history_))
            with threadpool_limits(args.n_threads):
                seconds, model = timed(lambda: KMeans(C, n_init=1, random_state=seed).fit(X))
                fits["sklearn KMeans (no bounds)"] = (seconds, model.labels_,
                                                      model.cluster_centers_, model.n_iter_)
                if KMeansConstrained is not None:
                    # (n_jobs parallelises its n_init runs only; with more than one, joblib
                    # hands it the data read-only, which it refuses)
                    seconds, model = timed(lambda: KMeansConstrained(
                        C, size_min=int(size_min), size_max=int(size_max), n_init=1,
                        random_state=seed, n_jobs=1).fit(X))
                    fits["k-means-constrained"] = (seconds, model.labels_,
                                                   model.cluster_centers_, model.n_iter_)
            errors = {name: error(X, labels, centers)
                      for name, (_, labels, centers, _) in fits.items()}
            peer = fits.get("k-means-constrained")
            for name, (seconds, labels, _, n_iter) in fits.items():
                sizes = np.bincount(labels, minlength=C)
                versus = (f"{errors[name] / errors['k-means-constrained']:.4f}, "
                          f"{seconds / peer[0]:.4f}" if peer else "")
                table.append([f"{n:,} x {d}, C = {C}, {size_min}-{size_max}", seed, name,
                              f"{seconds:.2f}", f"{errors[name]:.6g}",
                              f"{errors[name] / errors['sklearn KMeans (no bounds)']:.4f}",
                              versus, f"{sizes.min()}-{sizes.max()}", n_iter])
                print(table[-1], file=sys.stderr, flush=True)
    headers = ["data, bounds", "seed", "method", "seconds", "error", "error / sklearn's",
               "error, time / k-means-constrained's", "sizes", "iterations"]
    notes = ["Mixtures of 30 Gaussians (`make_gaussian_blobs`, float32, random_state = the "
             f"seed), n_init = 1, {args.n_threads} threads (k-means-constrained with "
             "n_jobs=1: with more, joblib hands it read-only data, which it refuses); error: "
             "the quantization error of the labels, which hold the bounds for the bounded "
             "fits.", command_note()]
    return headers, table, notes


def part_scale(args):
    table = []
    n, C, seed = 1_000_000 // args.shrink, 1000 // args.shrink, args.seeds[0]
    size_max = 1.1 * n / C
    for d in args.features:
        X = make_gaussian_blobs(n, d, 100, dtype=np.float32, random_state=seed)[0]
        seconds, model = timed(lambda: Clusterer(C, n_threads=args.n_threads,
                                                 random_state=seed).fit(X))
        base = (seconds, error(X, model.labels_, model.cluster_centers_))
        table.append([f"{n:,} x {d}", "default fit (Lloyd, no bounds)", f"{seconds:.1f}",
                      "1", "1", int(np.bincount(model.labels_).max()), len(model.history_),
                      f"{model.cost_['estep'] / (n * C):.1f}"])
        print(table[-1], file=sys.stderr, flush=True)
        for name, fit in bounded_fits(C, None, size_max, seed, args.n_threads,
                                      args.breathing).items():
            seconds, model = timed(lambda: fit(X))
            err = error(X, model.labels_, model.cluster_centers_)
            table.append([f"{n:,} x {d}", name, f"{seconds:.1f}", f"{seconds / base[0]:.2f}",
                          f"{err / base[1]:.4f}", int(np.bincount(model.labels_).max()),
                          len(model.history_), f"{model.cost_['estep'] / (n * C):.1f}"])
            print(table[-1], file=sys.stderr, flush=True)
    headers = ["data", "fit", "seconds", "time / default fit's", "error / default fit's",
               "largest cluster", "iterations", "E-step evaluations / (N C)"]
    notes = [f"A mixture of 100 Gaussians (`make_gaussian_blobs`, float32, random_state = "
             f"{seed}), C = {C:,}, size_max = 1.1 N / C = {size_max:g} (the default fit's "
             f"mean cluster: {n // C:,} rows); n_init = 1, {args.n_threads} threads, "
             "seeding included. Target: the bound held in at most 3x the default fit's "
             "time, at most 5 % above its error. The last column counts the E-steps' "
             "distance evaluations in units of one full pass over all N C pairs. Where the "
             "time goes, what was tried and the decision: the docs page on balanced "
             "clusters, 'At scale'.", command_note()]
    return headers, table, notes


def part_index(args):
    from _ivf import ground_truth, recall
    from bench_embeddings import make_embeddings

    n, d, C, seed = 200_000 // args.shrink, 384, 2000 // args.shrink, args.seeds[0]
    n_queries, nprobe = 1000, max(1, C // 100)
    size_max = 1.5 * n / C
    data = make_embeddings(n + n_queries, d, random_state=seed)
    X, Q = data[:n], data[n:]
    truth = ground_truth(X, Q)
    fits = {"default fit (Lloyd, no bounds)": lambda X: Clusterer(
        C, n_threads=args.n_threads, random_state=seed).fit(X)}
    fits.update(bounded_fits(C, None, size_max, seed, args.n_threads, args.breathing))
    table = []
    for name, fit in fits.items():
        seconds, model = timed(lambda: fit(X))
        sizes = np.bincount(model.labels_, minlength=C)
        found = recall(X, model.cluster_centers_, Q, truth, nprobe, args.n_threads,
                       cells=model.labels_)
        table.append([name, f"{seconds:.1f}", f"{found:.4f}", int(sizes.max()),
                      f"{np.sort(sizes)[-C // 100:].sum() / n:.4f}",
                      f"{error(X, model.labels_, model.cluster_centers_) / n:.5f}"])
        print(table[-1], file=sys.stderr, flush=True)
    headers = ["fit", "seconds", f"recall@10, {nprobe} lists", "largest list",
               "rows in the largest 1 % of lists", "error per row"]
    notes = [f"{n:,} x {d} unit float32 rows (`bench_embeddings.make_embeddings`, seed "
             f"{seed}), {n_queries} held-out queries, C = {C:,}, size_max = 1.5 N / C = "
             f"{size_max:g}; each row in its labels' list (the bounded labels for the "
             f"bounded fits), {nprobe} lists probed (1 %); {args.n_threads} threads. Target: "
             "recall within 0.01 of the default fit's, the largest list within the bound.",
             command_note()]
    return headers, table, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=sorted(TITLES), default="peer")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--large-seeds", type=int, nargs="*", default=[0],
                        help="seeds of peer's 50,000-row data set")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--no-peer", action="store_true",
                        help="leave k-means-constrained out (minutes per fit)")
    parser.add_argument("--features", type=int, nargs="+", default=[16, 64],
                        help="scale: the data sets' numbers of features")
    parser.add_argument("--shrink", type=int, default=1)
    parser.add_argument("--breathing", action="store_true",
                        help="scale and index: also the fits with Breathing (peer has them "
                             "always; at scale they cost several times the fit)")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    part = {"peer": part_peer, "scale": part_scale, "index": part_index}[args.part]
    headers, table, notes = part(args)
    publish(TITLES[args.part], format_table(headers, table), notes, args.write,
            info=machine_info(n_threads=args.n_threads))


if __name__ == "__main__":
    main()
