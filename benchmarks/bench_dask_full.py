"""Full-data Lloyd (or Elkan) on a dask array against the same fit in memory.

Generates ``--n-samples`` x ``--n-features`` float32 points (a Gaussian mixture of
``--n-clusters`` components), persists them as a dask array in ``--n-chunks`` row chunks on a
``LocalCluster`` of ``--workers`` worker processes with one thread each, and times
``presets.lloyd`` (``--preset elkan``: ``presets.elkan``) from the same given centres on the
dask array (iterations as a map-reduce on the workers, ``inertia_`` computed) and in memory
(``n_threads`` = the number of workers), the median of ``--repeats`` alternating runs; then
once each from the presets' seeding. Prints the seconds, the ratio, the E-step's distance
evaluations and how far the two fits' inertia differ; it does not write RESULTS.md.

Run with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` on a quiet machine::

    python benchmarks/bench_dask_full.py --n-samples 1500000 --n-clusters 64
"""
import argparse
import sys
import time

import numpy as np

sys.path.insert(0, ".")  # the checkout's own clusterkit, when run from its root
from clusterkit.datasets import make_gaussian_blobs  # noqa: E402
from clusterkit import presets  # noqa: E402


def _timed(fit):
    start = time.perf_counter()
    model = fit()
    inertia = float(model.inertia_)  # (lazy on a dask array: computed here)
    return time.perf_counter() - start, model, inertia


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_500_000)
    parser.add_argument("--n-features", type=int, default=16)
    parser.add_argument("--n-clusters", type=int, default=64)
    parser.add_argument("--n-chunks", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--preset", choices=["lloyd", "elkan"], default="lloyd")
    args = parser.parse_args()
    preset = getattr(presets, args.preset)
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    n, d, c = args.n_samples, args.n_features, args.n_clusters
    X, _, _ = make_gaussian_blobs(n, d, c, dtype="float32", random_state=0)
    X = np.ascontiguousarray(X)
    init = X[np.random.RandomState(1).choice(n, c, replace=False)]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        Xd = da.from_array(X, chunks=(-(-n // args.n_chunks), d)).persist()
        wait(Xd)
        preset(c, seed=init, max_iter=2).fit(Xd)  # the workers import clusterkit
        memory, chunked = [], []
        for _ in range(args.repeats):
            seconds, km, inertia_memory = _timed(lambda: preset(
                c, seed=init, max_iter=args.max_iter, n_threads=args.workers).fit(X))
            memory.append(seconds)
            seconds, kd, inertia_chunked = _timed(lambda: preset(
                c, seed=init, max_iter=args.max_iter).fit(Xd))
            chunked.append(seconds)
        print(f"{args.preset}: {n} x {d} float32, C = {c}, {args.n_chunks} chunks, {args.workers} workers "
              f"x 1 thread; from given centres: {km.n_iter_} iterations in memory, "
              f"{kd.n_iter_} on the chunks; E-step distances {km.cost_['estep']} and "
              f"{kd.cost_['estep']}")
        print(f"  in memory ({args.workers} threads): median {np.median(memory):.2f} s "
              f"of {[round(s, 2) for s in memory]}")
        print(f"  dask, map-reduce: median {np.median(chunked):.2f} s "
              f"of {[round(s, 2) for s in chunked]}; ratio "
              f"{np.median(chunked) / np.median(memory):.2f}")
        print(f"  inertia relative difference "
              f"{abs(inertia_chunked - inertia_memory) / inertia_memory:.1e}")
        seconds_memory, km, inertia_memory = _timed(
            lambda: preset(c, random_state=0, n_threads=args.workers).fit(X))
        seconds_chunked, kd, inertia_chunked = _timed(lambda: preset(c, random_state=0).fit(Xd))
        print(f"  presets' seeding: in memory {seconds_memory:.2f} s ({km.n_iter_} "
              f"iterations), dask {seconds_chunked:.2f} s ({kd.n_iter_}); inertia relative "
              f"difference {abs(inertia_chunked - inertia_memory) / inertia_memory:.1e}")


if __name__ == "__main__":
    main()
