"""Check that a change leaves fitted results bit-identical.

Fits every preset of ``clusterkit.presets`` (both dtypes, with and without sample weights, 1
and 2 threads), a dozen other compositions (truncated and partial E-steps with each start,
AFK-MC2, random and sampled seeds, n_init, given centres, the free-energy stopping rule; 2
threads) and a ``partial_fit`` stream on three small generated data sets, and records centres,
labels, cost_, n_iter_, objective_ and inertia_. Run it from the root of the checkout (it
imports that checkout's clusterkit) before the change with ``--save``, after it with
``--compare``::

    python benchmarks/check_same_results.py --save /tmp/before.npz
    python benchmarks/check_same_results.py --compare /tmp/before.npz

``--compare`` prints which configurations differ in what, and exits with status 1 if any does.
"""
import argparse
import sys
import warnings

import numpy as np

sys.path.insert(0, ".")  # the checkout's own clusterkit, when run from its root
from clusterkit import (AFKMC2, Clusterer, FullBatch, KMeansPlusPlus, PartialEStep,  # noqa: E402
                        RandomSeeder, SampledSeeder, TruncatedEStep, presets)
from clusterkit.datasets import make_birch_grid  # noqa: E402

PRESETS = list(presets.PRESETS)  # every preset


def data_sets():
    rng = np.random.RandomState(0)
    means = rng.uniform(-30, 30, size=(25, 5))
    A = means[rng.randint(25, size=3001)] + rng.normal(size=(3001, 5))
    B, _, _ = make_birch_grid(n_side=7, n_per_cluster=40, random_state=1)
    rng = np.random.RandomState(2)
    means = rng.normal(size=(40, 40)) * 4
    Cd = means[rng.randint(40, size=2003)] + rng.normal(size=(2003, 40))
    return {"blobs5": (A, 20), "birch": (B, 49), "blobs40": (Cd, 50)}


def configurations():
    for data in data_sets():
        for name in PRESETS:
            for dtype in ("float32", "float64"):
                for weighted in (False, True):
                    for n_threads in (1, 2):
                        yield (data, name, dtype, weighted, n_threads)
    extra = ["truncated3_hard", "truncated3_soft", "partial_random", "partial_exact",
             "partial_init2", "afkmc2", "random_seed", "sampled", "n_init3", "given",
             "free_energy_stop", "kpp_trials", "stream"]
    for data in data_sets():
        for name in extra:
            for dtype in ("float32", "float64"):
                for weighted in (False, True):
                    yield (data, name, dtype, weighted, 2)


def build(name, C, X):
    kw = dict(random_state=0, max_iter=60)
    if name in PRESETS:
        if name in ("lwcs_lloyd", "vc_gmm"):
            kw["coreset_size"] = 1024
        if name in ("minibatch", "nmbatch", "sbe"):
            kw.update(batch_size=256) if name != "nmbatch" else kw.update(initial_batch=256)
            kw["max_iter"] = 200
        if name == "sbe":
            kw["max_iter"] = 30
        return getattr(presets, name)(C, **kw)
    if name == "truncated3_hard":
        return Clusterer(C, estep=TruncatedEStep(3), **kw)
    if name == "truncated3_soft":
        return Clusterer(C, estep=TruncatedEStep(3), mstep="soft", **kw)
    if name == "partial_random":
        return Clusterer(C, estep=PartialEStep(G=4, init="random"), **kw)
    if name == "partial_exact":
        return Clusterer(C, estep=PartialEStep(G=4, init="exact"), mstep="soft", **kw)
    if name == "partial_init2":
        return Clusterer(C, seed=AFKMC2(chain_length=5), estep=PartialEStep(G=3, n_init_esteps=2),
                         **kw)
    if name == "afkmc2":
        return Clusterer(C, seed=AFKMC2(chain_length=20), **kw)
    if name == "random_seed":
        return Clusterer(C, seed=RandomSeeder(), mstep="soft", **kw)
    if name == "sampled":
        return Clusterer(C, seed=SampledSeeder(KMeansPlusPlus(n_local_trials=3), size=500), **kw)
    if name == "n_init3":
        return Clusterer(C, n_init=3, **kw)
    if name == "given":
        return Clusterer(C, seed=X[:C] * 1.01, **kw)
    if name == "free_energy_stop":
        return Clusterer(C, schedule=FullBatch(kmeans_objective="free_energy"), **kw)
    if name == "stream":  # partial_fit on four batches (see run)
        return Clusterer(C, **kw)
    if name == "kpp_trials":
        return Clusterer(C, seed=KMeansPlusPlus(n_local_trials=8), estep=PartialEStep(G=5),
                         **kw)
    raise ValueError(name)


def run():
    sets = data_sets()
    out = {}
    for data, name, dtype, weighted, n_threads in configurations():
        X, C = sets[data]
        X = X.astype(dtype)
        w = np.random.RandomState(5).uniform(0.5, 2.0, len(X)).astype(dtype) if weighted else None
        km = build(name, C, X).set_params(n_threads=n_threads)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name == "stream":
                for rows in np.array_split(np.arange(len(X)), 4):
                    km.partial_fit(X[rows], sample_weight=None if w is None else w[rows])
            else:
                km.fit(X, sample_weight=w)
        key = f"{data}|{name}|{dtype}|{'w' if weighted else '1'}|t{n_threads}"
        out[key + "|centers"] = km.cluster_centers_
        out[key + "|labels"] = km.labels_
        out[key + "|cost"] = np.array([km.cost_[k] for k in ("seeding", "reduction", "estep",
                                                                "labels")])
        out[key + "|n_iter"] = np.array(km.n_iter_)
        out[key + "|objective"] = np.array(km.objective_)
        out[key + "|inertia"] = np.array(km.inertia_)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--save", metavar="FILE", help="record the results to FILE (.npz)")
    group.add_argument("--compare", metavar="FILE", help="compare with the results in FILE")
    args = parser.parse_args()
    out = run()
    if args.save:
        np.savez(args.save, **out)
        print(len(out) // 6, "configurations saved")
        return 0
    ref = np.load(args.compare)
    configs = sorted({k.rsplit("|", 1)[0] for k in out})
    new = [c for c in configs if f"{c}|centers" not in ref]  # (a preset FILE did not have)
    configs = [c for c in configs if c not in new]
    differ = {}
    for c in configs:
        bad = [f for f in ("centers", "labels", "cost", "n_iter", "objective", "inertia")
               if not np.array_equal(out[f"{c}|{f}"], ref[f"{c}|{f}"])]
        if bad:
            differ[c] = bad
    print(f"{len(configs)} configurations: {len(configs) - len(differ)} identical, "
          f"{len(differ)} differ" + (f"; {len(new)} new (not in {args.compare})" if new
                                     else ""))
    for c, bad in differ.items():
        print("  ", c, bad)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
