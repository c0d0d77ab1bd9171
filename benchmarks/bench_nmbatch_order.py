"""Final error of nmbatch (defaults, seeding included) over many seeds, to compare two
checkouts whose nmbatch draws its random order differently (same-seed fits are not paired:
a new order changes every draw after it).

Run once per checkout (from its root, or with ``PYTHONPATH`` set to it), then compare::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python benchmarks/bench_nmbatch_order.py --seeds 30 --out old.json   # old checkout
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
        python benchmarks/bench_nmbatch_order.py --seeds 30 --out new.json --compare old.json

The data: scikit-learn's ``make_blobs`` with overlapping clusters (60,000 x 10, 50 centres,
``cluster_std=4``; k = 50), and, from ``$CLUSTERKIT_DATA`` when set, birch3 (k = 100) and
cod-rna (k = 50). ``--compare`` prints, per data set, the mean and standard error over the
seeds of the relative change of the final error (``inertia_``), new against old.
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
from sklearn.datasets import make_blobs

sys.path.insert(0, ".")  # the checkout's own clusterkit, when run from its root
from _common import data_home  # noqa: E402
from clusterkit.presets import nmbatch  # noqa: E402


def data_sets():
    X, _ = make_blobs(60_000, 10, centers=50, cluster_std=4.0, random_state=0)
    sets = {"blobs_overlap": (X, 50)}
    home = data_home()
    for name, k in (("birch3", 100), ("cod_rna_trn_tst", 50)):
        if home is not None and os.path.exists(os.path.join(home, f"{name}.npz")):
            sets[name] = (np.load(os.path.join(home, f"{name}.npz"))["X"], k)
    return sets


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--out", required=True)
    parser.add_argument("--compare", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    errors = {name: [float(nmbatch(k, random_state=seed).fit(X).inertia_)
                     for seed in range(args.seeds)]
              for name, (X, k) in data_sets().items()}
    with open(args.out, "w") as file:
        json.dump(errors, file)
    if args.compare:
        with open(args.compare) as file:
            old = json.load(file)
        for name, new in errors.items():
            change = 100 * (np.array(new) / np.array(old[name]) - 1)
            error = change.std(ddof=1) / np.sqrt(change.size)
            spread = 100 * np.std(old[name], ddof=1) / np.mean(old[name])
            print(f"{name}: {change.mean():+.2f} % +- {error:.2f} % (seed-to-seed sd "
                  f"{spread:.2f} %)")


if __name__ == "__main__":
    main()
