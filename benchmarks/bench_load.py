"""Fits on a busy machine: every preset alone and next to an identical twin process.

Each fit runs in a worker process (``--worker``), which builds the data, fits once to warm up
and then times ``--repeats`` fits (median). The parent runs the worker alone, then two
identical workers at the same time, and reports the slowdown ``time with twin / time alone``
(two processes that share 2 cores cannot do better than 2x). scikit-learn's ``KMeans`` is
measured the same way. A second part times a ``GridSearchCV`` over ``estep__G`` with
``n_jobs=2`` against ``n_jobs=1``.

Data: "small", the BIRCH grid with 10,000 points (C = 100); "medium", Gaussian blobs
100,000 x 16 (C = 200). Run with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_load.py --write
"""
import argparse
import json
import subprocess
import sys
import time
import warnings

import numpy as np

from _common import (RESULTS_PATH, command_note, format_table, machine_info,
                     warn_openblas_overrides, write_results)

TITLE = "Under load: alone and with a twin process (bench_load.py)"
PRESETS = ("lloyd", "elkan", "gmm", "var_kmeans_x", "var_kmeans_s", "var_gmm_x", "var_gmm_s",
           "lwcs_lloyd", "vc_gmm")
DATASETS = {"small": 100, "medium": 200}


def make_data(name):
    from sklearn.datasets import make_blobs

    from clusterkit.datasets import make_birch_grid
    if name == "small":
        X, _, _ = make_birch_grid(n_side=10, n_per_cluster=100, random_state=0)
    else:
        X, _ = make_blobs(100_000, 16, centers=200, random_state=0)
    return X


def make_estimator(method, n_clusters):
    from sklearn.cluster import KMeans

    from clusterkit import presets
    if method == "sklearn KMeans":
        return KMeans(n_clusters, n_init=1, random_state=0)
    kwargs = {"coreset_size": 2 ** 13} if method in ("lwcs_lloyd", "vc_gmm") else {}
    return getattr(presets, method)(n_clusters, random_state=0, **kwargs)


def worker(data, method, repeats):
    """Print the median seconds of ``repeats`` fits (after one warm-up fit) as JSON."""
    warnings.simplefilter("ignore")
    X = make_data(data)
    estimator = make_estimator(method, DATASETS[data])
    estimator.fit(X)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        estimator.fit(X)
        times.append(time.perf_counter() - start)
    print(json.dumps({"median": float(np.median(times))}))


def _spawn(data, method, repeats):
    return subprocess.Popen([sys.executable, __file__, "--worker", data, method,
                             str(repeats)], stdout=subprocess.PIPE, text=True)


def _median(process):
    out, _ = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"worker failed with status {process.returncode}")
    return json.loads(out)["median"]


def alone_and_twin(data, method, repeats):
    alone = _median(_spawn(data, method, repeats))
    twins = [_spawn(data, method, repeats) for _ in range(2)]
    twin = max(_median(p) for p in twins)
    return alone, twin


def grid_search_seconds(n_jobs):
    """A GridSearchCV over the partial E-step's G on the medium data."""
    from sklearn.model_selection import GridSearchCV

    from clusterkit import presets
    X = make_data("medium")
    search = GridSearchCV(presets.var_kmeans_s(200, random_state=0),
                          {"estep__G": [3, 5, 8, 12]}, cv=2, n_jobs=n_jobs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X)
    return time.perf_counter() - start


def run(args):
    rows = []
    for data in DATASETS:
        for method in PRESETS + ("sklearn KMeans",):
            alone, twin = alone_and_twin(data, method, args.repeats)
            rows.append((data, method, alone, twin))
            print(f"{data:7s} {method:15s} alone {alone:8.4f} s  with twin {twin:8.4f} s  "
                  f"slowdown {twin / alone:5.2f}", flush=True)
    sk = {data: (alone, twin) for data, method, alone, twin in rows if method == "sklearn KMeans"}
    table = []
    for data, method, alone, twin in rows:
        sk_alone, sk_twin = sk[data]
        table.append([data, method, f"{alone:.4f}", f"{twin:.4f}", f"{twin / alone:.2f}",
                      "-" if method == "sklearn KMeans" else f"{twin / sk_twin:.2f}"])
    grid = {n_jobs: grid_search_seconds(n_jobs) for n_jobs in (1, 2)}
    print(f"GridSearchCV n_jobs=1 {grid[1]:.2f} s, n_jobs=2 {grid[2]:.2f} s", flush=True)
    markdown = format_table(["data", "method", "alone s", "with twin s", "slowdown",
                             "with twin / sklearn with twin"], table)
    markdown += ("\n\n### GridSearchCV over `estep__G` (var_kmeans_s, medium data, 4 values, "
                 "cv=2)\n\n" + format_table(
                     ["n_jobs=1 s", "n_jobs=2 s", "ratio (target <= 1.5)"],
                     [[f"{grid[1]:.2f}", f"{grid[2]:.2f}", f"{grid[2] / grid[1]:.2f}"]]))
    notes = [
        f"Each time is the median of {args.repeats} fits after a warm-up fit, in a worker "
        "process; 'with twin' is the slower of two identical workers started together. "
        "Targets: clusterkit slowdown <= 3 (2 is ideal: two processes share 2 cores), and "
        "with a twin no slower than scikit-learn's KMeans with a twin where it is faster "
        "alone.",
        "Data: small = BIRCH grid 10,000 x 2, C = 100; medium = make_blobs(100000, 16, "
        "centers=200), C = 200; presets with their defaults, random_state=0, coreset "
        "presets with coreset_size=2**13; scikit-learn KMeans(n_init=1, random_state=0).",
        "Cause and remedy (docs: install.rst, 'Threads on a busy machine'): with libgomp's "
        "default spinning, threads that wait at the end of a parallel loop keep their core "
        "busy and take the twin's time slices; before the remedy a twin made `lloyd` on the "
        "small data 290x slower and `var_kmeans_x` 270x. clusterkit now loads libgomp with "
        "`GOMP_SPINCOUNT=2000` (unless the user set a waiting policy) and runs greedy "
        "k-means++'s small per-step loops on one thread. scikit-learn's own libgomp keeps "
        "its defaults in its worker processes here.",
        command_note(),
    ]
    return markdown, notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    parser.add_argument("--worker", nargs=3, metavar=("DATA", "METHOD", "REPEATS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        data, method, repeats = args.worker
        worker(data, method, int(repeats))
        return
    warn_openblas_overrides()
    markdown, notes = run(args)
    print(markdown)
    if args.write:
        write_results(RESULTS_PATH, TITLE, markdown, notes, machine_info(2))


if __name__ == "__main__":
    main()
