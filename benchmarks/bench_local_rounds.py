"""Local breathing rounds: fresh against continued E-step state (``Breathing(carry=...)``).

On the fast data sets of ``bench_quality.py`` (the 200-Gaussian mixture, 60,000 x 32, C = 200,
and blobs, 50,000 x 16, C = 250; float32), per seed: scikit-learn ``KMeans(n_init=1)``,
``best_quality`` with Lloyd's E-step (nothing to carry) and with a bounded E-step
(``ElkanEStep``, ``BoundedEStep``; its default is ``YinyangEStep``) whose rounds start
afresh or continue the bounds, and the
design card with ``refine=Breathing()`` (``PartialEStep``: afresh either way). Prints per fit
the seconds, the error relative to scikit-learn's (same seed, same process), the refinement's
rounds, its E-step distance evaluations and seconds per round, and whether the continued
fit's centres equal the fresh one's bit for bit. Counts are noise-free; seconds are medians
of ``--repeats`` on a shared machine::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_local_rounds.py
"""
import argparse
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

sys.path.insert(0, ".")
from clusterkit import (AFKMC2, LWCS, BoundedEStep, Breathing, Clusterer,  # noqa: E402
                        ElkanEStep, FullEStep, PartialEStep, presets)
from clusterkit.datasets import make_gaussian_blobs  # noqa: E402
from clusterkit.metrics import quantization_error  # noqa: E402

sys.path.insert(0, "benchmarks")
from bench_quality import make_mixture  # noqa: E402


def best_quality(estep, carry, **kw):
    def build(C, seed):
        model = presets.best_quality(C, random_state=seed, n_threads=1, **kw)
        return model.set_params(estep=estep, refine=model.refine.set_params(carry=carry))
    return build


def card(carry):
    return lambda C, seed: Clusterer(C, seed=AFKMC2(), reduce=LWCS(2**15),
                                     estep=PartialEStep(G=5), refine=Breathing(carry=carry),
                                     random_state=seed, n_threads=1)


#: the default budget (whole fits), then 12 rounds without a budget (the same rounds fresh
#: and carried: their centres are compared bit for bit)
FIXED = {"budget": None, "max_rounds": 12}
METHODS = {
    "best_quality (Lloyd)": best_quality(FullEStep(), True),
    "best_quality Elkan carried": best_quality(ElkanEStep(), True),
    "best_quality Bounded carried": best_quality(BoundedEStep(), True),
    "12 rounds Lloyd": best_quality(FullEStep(), True, **FIXED),
    "12 rounds Elkan fresh": best_quality(ElkanEStep(), False, **FIXED),
    "12 rounds Elkan carried": best_quality(ElkanEStep(), True, **FIXED),
    "12 rounds Bounded fresh": best_quality(BoundedEStep(), False, **FIXED),
    "12 rounds Bounded carried": best_quality(BoundedEStep(), True, **FIXED),
    "card + Breathing() fresh": card(False),
    "card + Breathing() carried": card(True),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--data", nargs="*", default=["mixture-60k", "blobs-50k"])
    args = parser.parse_args()
    data = {"mixture-60k": (200, lambda s: make_mixture(s, 60_000, 32, 200)),
            "blobs-50k": (250, lambda s: make_gaussian_blobs(
                50_000, 16, 250, random_state=s)[0].astype(np.float32))}
    for name in args.data:
        C, make = data[name]
        for seed in range(args.seeds):
            X = make(seed)
            rows, centres = {}, {}
            for label, build in [("scikit-learn n_init=1", None)] + list(METHODS.items()):
                times = []
                for _ in range(args.repeats):
                    model = (KMeans(C, n_init=1, random_state=seed) if build is None
                             else build(C, seed))
                    with warnings.catch_warnings(), threadpool_limits(1):
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        model.fit(X)
                        times.append(time.perf_counter() - start)
                error = quantization_error(X, model.cluster_centers_.astype(X.dtype))
                centres[label] = model.cluster_centers_
                row = {"s": statistics.median(times), "err": error}
                if build is not None:
                    row["estep"] = model.cost_["estep"]
                    row["rounds"] = len(model.refinement_log_)
                    row["log"] = [(r["distance_evals"], r["seconds"]) for r in
                                  model.refinement_log_]
                    row["fit_evals"] = sum(model.cost_.values())
                rows[label] = row
            ref = rows["scikit-learn n_init=1"]
            print(f"== {name} seed {seed}: scikit-learn n_init=1 {ref['s']:.2f} s")
            for label, row in rows.items():
                if label.startswith("scikit"):
                    continue
                log = row["log"]
                seconds = [b[1] - a[1] for a, b in zip(log, log[1:])]
                evals = [b[0] - a[0] for a, b in zip(log, log[1:])]
                same = ""
                if label.endswith("carried") and label.replace("carried", "fresh") in centres:
                    same = " same centres as fresh: " + str(np.array_equal(
                        centres[label], centres[label.replace("carried", "fresh")]))
                print(f"{label:28s} {row['s']:6.2f} s ({ref['s'] / row['s']:5.2f}x faster than "
                      f"sklearn) err/sklearn {row['err'] / ref['err']:.4f} rounds "
                      f"{row['rounds']:3d} E-step evals {row['estep'] / 1e6:7.1f}M "
                      f"all {row['fit_evals'] / 1e6:7.1f}M "
                      f"per round: evals {statistics.median(evals) / 1e6 if evals else 0:6.2f}M "
                      f"s {statistics.median(seconds) if seconds else 0:.3f}{same}",
                      flush=True)


if __name__ == "__main__":
    main()
