"""Yinyang's grouped bounds against Lloyd and Elkan: speed from the same start, and memory.

Speed: on each data set one start (rows drawn at random, fixed seed) is given to
Lloyd (``FullEStep``), Elkan (``ElkanEStep``), Yinyang with the automatic number of groups
(``YinyangEStep()``, ``t = min(ceil(C / 10), budget / 4N)``) and Hamerly (``YinyangEStep(1)``),
each for the same ``--max-iter`` iterations (``tol=0``), so all follow the same iterates (the
script checks that the final centres are the same). Reported: seconds (median of
``--repeats``), distance evaluations relative to Lloyd's, and the bytes of bounds.

Memory: one Yinyang fit of ``max_iter=2`` on ``N = 1,000,000`` float32 rows of 128 features
from a mixture of 4,096 Gaussians, ``C = 4096``: the bounds' bytes and the peak resident
memory the fit added (``VmHWM`` reset before the fit, minus the resident memory then; the
data are made before), and the seconds of the second iteration. Elkan's bounds for it would
need ``4 N C`` = 16 GiB. Lloyd runs the same two iterations for comparison.

Both parts take about 6 minutes on 2 cores (``--skip-speed`` or ``--skip-memory`` for one)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_yinyang.py --write
"""
import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning

from clusterkit import Clusterer, ElkanEStep, FullEStep, YinyangEStep, yinyang_groups
from clusterkit.estep.exact import elkan_memory
from clusterkit.estep.yinyang import yinyang_memory
from clusterkit.datasets import load_benchmark

from _common import command_note, data_home, format_table, machine_info, median_time, publish

TITLE = "Exact k-means with memory that does not grow with C: Yinyang (bench_yinyang.py)"
METHODS = {"lloyd": FullEStep, "elkan": ElkanEStep, "yinyang": YinyangEStep,
           "hamerly": lambda: YinyangEStep(n_groups=1)}


def datasets(folder):
    """(name, X, n_clusters) of every row; MNIST only when its file is there."""
    rows = []
    X, _ = make_blobs(100_000, 2, centers=100, cluster_std=1.0, center_box=(-50, 50),
                      random_state=0)
    rows.append(("blobs 100,000 x 2", X, 100))
    X, _ = make_blobs(200_000, 16, centers=1000, cluster_std=2.0, random_state=0)
    rows.append(("blobs 200,000 x 16", X, 1000))
    try:
        X, _ = load_benchmark("mnist", folder)
    except FileNotFoundError as error:
        print(f"MNIST skipped: {error}", file=sys.stderr)
    else:
        X = np.ascontiguousarray(X[:20_000], dtype=np.float64)
        rows.append(("MNIST 20,000 x 784", X, 500))
    return rows


def fit(method, X, init, n_threads, max_iter):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Clusterer(init.shape[0], seed=init, estep=METHODS[method](), tol=0,
                         max_iter=max_iter, n_threads=n_threads).fit(X)


def speed(args):
    table = []
    for name, X, n_clusters in datasets(args.data):
        init = X[np.random.RandomState(0).choice(len(X), n_clusters, replace=False)]
        results = {}
        for method in METHODS:
            seconds, _, km = median_time(lambda: fit(method, X, init, args.n_threads,
                                                     args.max_iter), args.repeats)
            results[method] = seconds, km
            print(f"{name} {method}: {seconds:.2f} s", file=sys.stderr)
        lloyd_s, lloyd = results["lloyd"]
        groups = yinyang_groups(len(X), n_clusters)
        memory = {"lloyd": 0, "elkan": elkan_memory(len(X), n_clusters),
                  "yinyang": yinyang_memory(len(X), groups),
                  "hamerly": yinyang_memory(len(X), 1)}
        for method, (seconds, km) in results.items():
            same = np.array_equal(km.cluster_centers_, lloyd.cluster_centers_)
            label = method if method != "yinyang" else f"yinyang t={groups}"
            table.append([name, n_clusters, label,
                          km.n_iter_, f"{seconds:.2f}", f"{seconds / lloyd_s:.2f}",
                          f"{km.cost_['estep'] / lloyd.cost_['estep']:.1%}",
                          f"{memory[method] / 2**20:.1f}", "yes" if same else "NO"])
    headers = ["data", "C", "E-step", "iterations", "seconds", "/ Lloyd", "distances / Lloyd",
               "bounds MiB", "Lloyd's centres"]
    notes = [f"Same start (C rows drawn with seed 0) for every E-step, tol=0, max_iter="
             f"{args.max_iter}: all run the same iterations; float64; {args.n_threads} threads; "
             f"median of {args.repeats} fits.",
             "Distances: `cost_['estep']` (the iterations, grouping the centres included).",
             "bounds MiB: Elkan 4 N C + 16 N + 8 C^2, Yinyang 4 N t + 12 N bytes."]
    return format_table(headers, table), notes


def _status(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak():
    """Reset VmHWM to the current resident memory (Linux; ignored where it cannot)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
    except OSError:
        pass


def memory(args):
    n, d, c = args.n_samples, 128, 4096
    rng = np.random.RandomState(0)
    means = rng.uniform(-10, 10, size=(c, d)).astype(np.float32)
    X = means[rng.randint(c, size=n)]
    X += rng.standard_normal(size=X.shape).astype(np.float32)
    init = X[rng.choice(n, c, replace=False)].copy()
    rows = []
    for method in ("yinyang", "lloyd"):
        _reset_peak()
        before = _status("VmRSS")
        start = time.perf_counter()
        km = fit(method, X, init, args.n_threads, 2)
        seconds = time.perf_counter() - start
        peak = _status("VmHWM") - before
        groups = yinyang_groups(n, c) if method == "yinyang" else 0
        bounds = yinyang_memory(n, groups) if method == "yinyang" else 0
        second = km.history_[-1]["seconds"] - km.history_[-2]["seconds"]
        rows.append([f"{n:,} x {d}", c, method if method == "lloyd" else f"yinyang t={groups}",
                     km.n_iter_, f"{seconds:.1f}", f"{second:.1f}", f"{bounds / 2**30:.2f}",
                     f"{peak / 2**30:.2f}", f"{km.cost_['estep']:.3g}"])
        print(rows[-1], file=sys.stderr)
        del km
    headers = ["data", "C", "E-step", "iterations", "seconds", "2nd iteration s", "bounds GiB",
               "peak RSS added GiB", "distances"]
    notes = [f"float32, a mixture of {c} Gaussians (means uniform in [-10, 10]^{d}, unit "
             f"variance), C random rows as the start, max_iter=2, {args.n_threads} threads.",
             f"The data take {X.nbytes / 2**30:.2f} GiB; the fit's centred copy of them is in "
             "the added peak (Lloyd's too).",
             f"Elkan's bounds would need {elkan_memory(n, c) / 2**30:.1f} GiB."]
    return format_table(headers, rows), notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-speed", action="store_true", help="only the memory run")
    parser.add_argument("--skip-memory", action="store_true",
                        help="no memory run at N = 1,000,000, C = 4096")
    parser.add_argument("--n-samples", type=int, default=1_000_000,
                        help="rows of the memory run")
    parser.add_argument("--max-iter", type=int, default=10, help="iterations of the speed runs")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--data", default=data_home(), help="folder holding mnist.npz")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md's section")
    args = parser.parse_args(argv)
    tables, notes = [], []
    if not args.skip_speed:
        table, speed_notes = speed(args)
        tables.append("**Speed, same iterations**\n\n" + table)
        notes += speed_notes
    if not args.skip_memory:
        table, memory_notes = memory(args)
        tables.append("**Memory at N = 1,000,000, C = 4096**\n\n" + table)
        notes += memory_notes
    notes.append(command_note())
    publish(TITLE, "\n\n".join(tables), notes, args.write, machine_info(args.n_threads))


if __name__ == "__main__":
    main()
