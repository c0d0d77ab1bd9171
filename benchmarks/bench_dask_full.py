"""Full-data Lloyd (or Elkan) on a dask array against the same fit in memory.

Generates ``--n-samples`` x ``--n-features`` float32 points (a Gaussian mixture of
``--n-clusters`` components), persists them as a dask array in ``--n-chunks`` row chunks on a
``LocalCluster`` of ``--workers`` worker processes with one thread each, and times
``presets.lloyd`` (``--preset elkan``: ``presets.elkan``) from the same given centres on the
dask array (iterations as a map-reduce on the workers, ``inertia_`` computed) and in memory
(``n_threads`` = the number of workers), the median of ``--repeats`` alternating runs; then
once each from the presets' seeding. Reports the seconds, their ratio, the passes over the
chunks (each one round trip: the client sends one graph and waits for its result) per step,
the E-step's distance evaluations and how far the two fits' inertia differ; ``--write``
puts the table into RESULTS.md.

Run with ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`` on a quiet machine::

    python benchmarks/bench_dask_full.py --write
"""
import argparse
import sys
import time

import numpy as np

from _common import command_note, format_table, machine_info, publish  # noqa: E402

sys.path.insert(0, ".")  # the checkout's own clusterkit, when run from its root
from clusterkit import presets  # noqa: E402
from clusterkit._data.chunked import ChunkedData  # noqa: E402
from clusterkit.datasets import make_gaussian_blobs  # noqa: E402

TITLE = ("Dask: one step, one path -- full-data Lloyd on a 2-worker LocalCluster against the "
         "same fit in memory (bench_dask_full.py)")


class _Passes:
    """Counts the passes over the chunks (``map_chunks`` and ``map_chunks_with_state``
    calls): each is one round trip between the client and the cluster."""

    def __init__(self):
        self.count = 0
        self._originals = (ChunkedData.map_chunks, ChunkedData.map_chunks_with_state)
        counter = self

        def counted(original):
            def wrapper(self, *args, **kwargs):
                counter.count += 1
                return original(self, *args, **kwargs)
            return wrapper
        ChunkedData.map_chunks = counted(self._originals[0])
        ChunkedData.map_chunks_with_state = counted(self._originals[1])


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
    parser.add_argument("--n-chunks", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=300)
    parser.add_argument("--preset", choices=["lloyd", "elkan"], default="lloyd")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    preset = getattr(presets, args.preset)
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    n, d, c = args.n_samples, args.n_features, args.n_clusters
    X, _, _ = make_gaussian_blobs(n, d, c, dtype="float32", random_state=0)
    X = np.ascontiguousarray(X)
    init = X[np.random.RandomState(1).choice(n, c, replace=False)]
    passes = _Passes()
    rows = []
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        Xd = da.from_array(X, chunks=(-(-n // args.n_chunks), d)).persist()
        wait(Xd)
        preset(c, seed=init, max_iter=2).fit(Xd)  # the workers import clusterkit
        for name, kwargs in (("from the same given centres", dict(seed=init)),
                             ("the preset's seeding (random_state=0)", dict(random_state=0))):
            memory, chunked, inertia = [], [], []
            for _ in range(args.repeats if "given" in name else 1):
                seconds, km, inertia_memory = _timed(lambda: preset(
                    c, max_iter=args.max_iter, n_threads=args.workers, **kwargs).fit(X))
                memory.append(seconds)
                passes.count = 0
                seconds, kd, inertia_chunked = _timed(lambda: preset(
                    c, max_iter=args.max_iter, **kwargs).fit(Xd))
                chunked.append(seconds)
                inertia.append(abs(inertia_chunked - inertia_memory) / inertia_memory)
            ratios = [b / a for a, b in zip(memory, chunked)]
            rows.append([name, f"{km.n_iter_} / {kd.n_iter_}",
                         f"{np.median(memory):.2f}", f"{np.median(chunked):.2f}",
                         f"{np.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})",
                         f"{passes.count} for {kd.n_iter_} steps",
                         f"{max(inertia):.1e}"])
            print(rows[-1], flush=True)
    headers = ["fit", "iterations (memory / dask)", "in memory, s (median)",
               "dask, s (median)", "dask / memory: median (range)",
               "passes over the chunks (round trips)", "inertia: relative difference"]
    notes = [
        f"Data: {n:,} x {d} float32, a mixture of {c} Gaussians "
        f"(`make_gaussian_blobs`, random_state=0), C = {c}, `presets.{args.preset}`, "
        f"default tol; {args.repeats} alternating repeats from the given centres, one from "
        "the seeding; seconds include `inertia_` (computed on the dask array).",
        f"Dask: `da.from_array(X, chunks={-(-n // args.n_chunks)} rows)` persisted on a "
        f"LocalCluster of {args.workers} worker processes with one thread each; in memory: "
        f"the same fit with n_threads={args.workers}.",
        "Passes: every call that maps the chunks (a step's map-reduce, the first pass that "
        "validates the data, a relocation's pass, an eager labelling) is one round trip: the "
        "client sends one graph and waits for its result; a step is one pass. The lazy "
        "`labels_` and `inertia_` are one more compute, when asked for.",
        command_note()]
    publish(TITLE, format_table(headers, rows), notes, args.write,
            info=machine_info(n_threads=args.workers))


if __name__ == "__main__":
    main()
