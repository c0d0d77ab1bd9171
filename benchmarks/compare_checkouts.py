"""Same-run speed A/B of two built checkouts of clusterkit on the same fits.

Each round runs the workloads in a fresh process for the old checkout, then for the new one
(alternating, so a drift of the machine's speed hits both); the table gives the median
seconds of each and the median and range of the per-round ratios new/old. Build both first
(``python -m pip install --no-deps -e .`` in each, which builds in place; the new one last,
to keep it installed); MNIST is read from ``CLUSTERKIT_DATA`` (or ``--data``) and skipped
when absent::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python benchmarks/compare_checkouts.py OLD_CHECKOUT NEW_CHECKOUT --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

from _common import command_note, publish

#: The fits: Lloyd at 64 features (gemm path), Lloyd and Elkan on the BIRCH grid (2
#: features, C = 1024), Lloyd and vc-GMM on MNIST (784 features), fixed starts, no tolerance;
#: mini-batch k-means as a user runs it (defaults, seeding included); and Lloyd on a dask
#: array on a 2-worker LocalCluster (if distributed is installed).
WORKLOADS = r"""
import json, os, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
from clusterkit import presets
from clusterkit.datasets import make_birch_grid
rng = np.random.RandomState(0)
means = rng.uniform(-10, 10, (100, 64))
X64 = means[rng.randint(100, size=100_000)] + rng.normal(size=(100_000, 64))
B, _, _ = make_birch_grid(n_side=32, random_state=0)
B0 = B[::len(B) // 1024][:1024].copy()
fits = {
    "lloyd, 100,000 x 64, C = 100": lambda: presets.lloyd(100, seed=X64[:100].copy(), max_iter=20, tol=0).fit(X64),
    "lloyd, BIRCH grid, C = 1024": lambda: presets.lloyd(1024, seed=B0, max_iter=20, tol=0).fit(B),
    "elkan, BIRCH grid, C = 1024": lambda: presets.elkan(1024, seed=B0, max_iter=40, tol=0).fit(B),
    "minibatch (defaults), 100,000 x 64, C = 100": lambda: presets.minibatch(100, random_state=0).fit(X64),
}
path = os.path.join(sys.argv[1], "mnist.npz")
if os.path.exists(path):
    M = np.load(path)["X"]
    fits["lloyd, MNIST, C = 50"] = lambda: presets.lloyd(50, seed=M[:50].copy(), max_iter=10, tol=0).fit(M)
    fits["vc_gmm, MNIST, C = 500"] = lambda: presets.vc_gmm(500, random_state=0, coreset_size=2**14).fit(M)
out = {}
for name, fit in fits.items():
    start = time.perf_counter()
    fit()
    out[name] = time.perf_counter() - start
try:  # a dask fit: lloyd on all the rows of a dask array on a 2-worker LocalCluster
    import dask.array as da
    from distributed import Client, LocalCluster, wait
except ImportError:
    pass
else:
    X16 = means[rng.randint(100, size=1_000_000), :16].astype(np.float32) + rng.normal(
        size=(1_000_000, 16)).astype(np.float32)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        Xd = da.from_array(X16, chunks=(100_000, 16)).persist()
        wait(Xd)
        presets.lloyd(64, seed=X16[:64].copy(), max_iter=1).fit(Xd)  # (workers import)
        start = time.perf_counter()
        float(presets.lloyd(64, seed=X16[:64].copy(), max_iter=10, tol=0).fit(Xd).inertia_)
        out["lloyd on a dask array, 1,000,000 x 16 in 10 chunks, 2 workers, C = 64"] = (
            time.perf_counter() - start)
print(json.dumps(out))
"""


def run(checkout, data):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
    done = subprocess.run([sys.executable, "-c", WORKLOADS, data], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the old checkout (built in place)")
    parser.add_argument("new", help="the new checkout (built in place)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", default=os.environ.get("CLUSTERKIT_DATA", ""))
    parser.add_argument("--note", action="append", default=[],
                        help="a note for the results (e.g. which commits were compared)")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    rounds = [(run(args.old, args.data), run(args.new, args.data)) for _ in range(args.rounds)]
    lines = ["| fit | old s | new s | new/old (median, range) |", "|---|---|---|---|"]
    for name in rounds[0][0]:
        old = [r[0][name] for r in rounds]
        new = [r[1][name] for r in rounds]
        ratios = [n / o for o, n in zip(old, new)]
        lines.append(f"| {name} | {statistics.median(old):.3f} | {statistics.median(new):.3f} "
                     f"| {statistics.median(ratios):.3f} ({min(ratios):.3f} .. "
                     f"{max(ratios):.3f}) |")
    notes = [f"{args.rounds} alternating rounds, one process per checkout and round; "
             "n_threads = 2, float64 except MNIST (float32); seconds are medians.",
             *args.note, command_note()]
    publish("Two checkouts, same fits (compare_checkouts.py)", "\n".join(lines), notes,
            args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
