"""Seeding many clusters: the default seeding against greedy k-means++, two-level k-means++ and
k-means||.

Greedy k-means++ takes ``C`` steps over its seeding sample, each for ``2 + ln C`` candidates:
``r C^2 (2 + ln C)`` distances on ``r C`` rows, most of a default fit at ``C >= 4,096``. This
script fits the same data from

* greedy k-means++ on the rows the default sampled before k-means|| became the default at many
  clusters (``r = 64 (32 / D)^1.5`` rows per centre, between 8 and 64, at least 8,192 rows;
  ``SampledSeeder(KMeansPlusPlus(), size=r C, float32=True)``): the reference;
* the default, ``seed="auto"`` (``SampledSeeder(ByClusters(), size="schedule",
  float32=True)``: from 1,000 clusters on, k-means|| with ``l = C / 2`` per round, 5 rounds,
  then weighted greedy k-means++ on the candidates, on at least 32 rows per centre);
* two-level k-means++ (``HierarchicalKMeansPlusPlus()``) and two-level k-means++ whose ``2 C``
  centres are merged by weighted greedy k-means++ (``HierarchicalKMeansPlusPlus(
  oversampling=2)``), on the default's rows,

then runs Lloyd (``estep="bounded"``) to convergence from the seeds, and reports the seeding's
seconds and distance evaluations (the machine is shared: the counts do not depend on it), its
share of the whole fit, the iterations, and the final error (``inertia_``) over the reference's,
each a median over the seeds (``random_state``).

Data: a mixture of ``C`` Gaussians in 32 features (``clusterkit.datasets.make_gaussian_blobs``,
unit spread, centres in a box of side 20), and unit-norm embeddings with a power-law spectrum
(``bench_embeddings.make_embeddings``) in 128 and 384 features, 32 rows per centre.

``--large`` fits the default ``lloyd``, ``elkan``, ``minibatch`` and ``large_scale`` on
1,000,000 x 24 rows with ``C = 16,384`` (a mixture of 2,000 overlapping Gaussians of unequal
weights and spreads, as ``bench_minibatch.py``'s, in float32) next to faiss ``Kmeans`` with
its defaults, in the same run: seconds, seeding seconds and the error of every row to its
nearest centre.

``--variational`` fits ``presets.var_kmeans_s`` instead, with its default seeding (from 1,000
clusters on the exact presets', k-means||) and with the one it used before at every ``C``
(greedy k-means++ with 15 candidates on all rows up to 16 features, on ``max(20 C, 10000)``
rows up to 64, AFK-MC² with chains of 200 above), on a mixture, embeddings and MNIST
(``--data`` or ``CLUSTERKIT_DATA``; skipped if absent). Run with the OpenBLAS override
variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_seeding.py --write
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_seeding.py \
        --variational --data "$CLUSTERKIT_DATA" --write
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_seeding.py --large --write
"""
import argparse
import os
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from clusterkit import (AFKMC2, ByDimension, Clusterer, HierarchicalKMeansPlusPlus,
                        KMeansPlusPlus, SampledSeeder, presets)
from clusterkit.datasets import make_gaussian_blobs
from clusterkit.schedules.schedules import FullBatch

from _common import command_note, format_table, machine_info, publish, warn_openblas_overrides
from bench_embeddings import make_embeddings

TITLE = "Seeding many clusters: the default against greedy k-means++ (bench_seeding.py)"
LARGE_TITLE = ("Seeding many clusters: default fits at 1,000,000 x 24, C = 16,384, against faiss "
               "(bench_seeding.py --large)")
VARIATIONAL_TITLE = ("Seeding many clusters: var_kmeans_s, its seeding before and now "
                     "(bench_seeding.py --variational)")

REFERENCE = "greedy k-means++, r C rows (before)"


def before_rows(n_samples, n_clusters, n_features):
    """The rows the default seeded on before k-means|| at many clusters: ``max(8192, r C)``,
    ``r = 64 (32 / D)^1.5`` between 8 and 64, all rows for ``N C D <= 2^27``."""
    if n_samples * n_clusters * n_features <= 2**27:
        return n_samples
    per_centre = min(64, max(8, int(64 * (32 / n_features) ** 1.5)))
    return min(n_samples, max(8192, per_centre * n_clusters))


def seeders(n_samples, n_clusters, n_features):
    """``(label, seed)`` of every row, the reference first."""
    def on_schedule_rows(seeder):
        return SampledSeeder(seeder, size="schedule", float32=True)
    return [(REFERENCE, SampledSeeder(KMeansPlusPlus(), float32=True,
                                      size=before_rows(n_samples, n_clusters, n_features))),
            ("default (seed=\"auto\")", "auto"),
            ("two-level", on_schedule_rows(HierarchicalKMeansPlusPlus())),
            ("two-level, 2C merged",
             on_schedule_rows(HierarchicalKMeansPlusPlus(oversampling=2.0)))]


def cases(scale):
    """``(name, make X, C, seeds)``: the ``C = 1,000`` cases with three seeds, then the
    larger ones with one (``scale`` multiplies the rows)."""
    def mixture(n_samples, n_clusters):
        return lambda: make_gaussian_blobs(int(scale * n_samples), 32, n_clusters,
                                           dtype=np.float32, random_state=0)[0]

    def embeddings(n_samples, n_features):
        return lambda: make_embeddings(int(scale * n_samples), n_features)

    return [("mixture {:,} x 32", mixture(32_768, 1024), 1024, (0, 1, 2)),
            ("embeddings {:,} x 128", embeddings(32_768, 128), 1024, (0, 1, 2)),
            ("embeddings {:,} x 384", embeddings(32_768, 384), 1024, (0, 1, 2)),
            ("mixture {:,} x 32", mixture(131_072, 4096), 4096, (0,)),
            ("embeddings {:,} x 128", embeddings(131_072, 128), 4096, (0,))]


def fit(X, n_clusters, seed, random_state, n_threads):
    """``(seeding seconds, fit seconds, seeding evaluations, error, iterations)``."""
    model = Clusterer(n_clusters, seed=seed, estep="bounded", n_threads=n_threads,
                      random_state=random_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    return (model.seconds_["seeding"], model.seconds_["total"], model.cost_["seeding"],
            model.inertia_, model.n_iter_)


def large_mixture(n_samples, n_features, n_components=2000, random_state=1):
    """Overlapping Gaussians of unequal weights and spreads (``bench_minibatch.py``'s
    recipe), float32."""
    rng = np.random.RandomState(random_state)
    means = rng.normal(size=(n_components, n_features))
    weights = rng.lognormal(sigma=1.0, size=n_components)
    component = rng.choice(n_components, size=n_samples, p=weights / weights.sum())
    spreads = rng.uniform(0.1, 0.4, size=n_components).astype(np.float32)
    X = rng.standard_normal((n_samples, n_features)).astype(np.float32)
    X *= spreads[component, None]
    X += means[component].astype(np.float32)
    return X


def large(args):
    """``--large``: default fits against faiss Kmeans at low D, large C."""
    from clusterkit.metrics import quantization_error
    from bench_embeddings import fit_faiss
    n_samples, n_features, n_clusters = int(args.scale * 1_000_000), 24, args.clusters
    X = large_mixture(n_samples, n_features)
    results = []
    for name in ("lloyd", "elkan", "minibatch", "large_scale"):
        model = getattr(presets, name)(n_clusters, random_state=args.seed,
                                       n_threads=args.n_threads, compute_labels=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)
        error = quantization_error(X, model.cluster_centers_, n_threads=args.n_threads)
        results.append([f"{name} (default)", model.seconds_["total"], model.seconds_["seeding"],
                        model.n_iter_, error])
        print(results[-1], file=sys.stderr, flush=True)
    try:
        import time
        start = time.perf_counter()
        centers, _ = fit_faiss(X, n_clusters, args.n_threads, "kmeans")
        seconds = time.perf_counter() - start
        error = quantization_error(X, centers, n_threads=args.n_threads)
        results.append(["faiss Kmeans (defaults)", seconds, None, None, error])
    except ImportError:
        print("faiss is not installed: no faiss row", file=sys.stderr)
    faiss = results[-1] if results[-1][0].startswith("faiss") else None
    headers = ["fit", "seconds", "seeding s", "iterations", "error / faiss'", "time / faiss'"]
    table = [[name, f"{t:.1f}", "" if s is None else f"{s:.1f}", "" if n is None else f"{n}",
              f"{e / faiss[4]:.4f}" if faiss else "", f"{t / faiss[1]:.2f}" if faiss else ""]
             for name, t, s, n, e in results]
    notes = [f"{n_samples:,} x {n_features} float32 rows, C = {n_clusters:,}, "
             f"{args.n_threads} threads, `random_state={args.seed}`, one run each in one "
             "process, timed whole (seeding included); error: quantization error of every "
             "row to its nearest centre.", command_note()]
    publish(LARGE_TITLE, format_table(headers, table), notes, args.write,
            machine_info(args.n_threads))


def variational_seeding_before():
    """``var_kmeans_s``'s seeding before k-means|| at many clusters."""
    return ByDimension(low=KMeansPlusPlus(n_local_trials=15),
                       high=ByDimension(low=SampledSeeder(KMeansPlusPlus(15)),
                                        high=AFKMC2(chain_length=200, n_candidates=1),
                                        max_features=64))


def variational(args):
    """``--variational``: ``var_kmeans_s`` with its seeding before and now, one seed."""
    cases = [("mixture {:,} x 32", lambda: make_gaussian_blobs(
                 50_000, 32, 5000, dtype=np.float32, random_state=0)[0], 5000),
             ("embeddings {:,} x 128", lambda: make_embeddings(65_536, 128), 2048)]
    mnist = Path(args.data or os.environ.get("CLUSTERKIT_DATA", "")) / "mnist.npz"
    if mnist.exists():
        cases.append(("MNIST {:,} x 784",
                      lambda: np.ascontiguousarray(np.load(mnist)["X"], dtype=np.float32), 2048))
    else:
        print(f"{mnist} not found: no MNIST row", file=sys.stderr)
    headers = ["data", "C", "seeding", "fit s", "seeding s", "iterations", "error / before"]
    table = []
    for name, make, n_clusters in cases:
        X = make()
        runs = {}
        for label, seed in (("before", variational_seeding_before()), ("now", None)):
            kwargs = {} if seed is None else {"seed": seed}
            model = presets.var_kmeans_s(n_clusters, random_state=args.seed,
                                         n_threads=args.n_threads, **kwargs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X)
            runs[label] = model
        for label, model in runs.items():
            table.append([name.format(X.shape[0]), f"{n_clusters:,}", label,
                          f"{model.seconds_['total']:.1f}", f"{model.seconds_['seeding']:.1f}",
                          f"{model.n_iter_}",
                          f"{model.inertia_ / runs['before'].inertia_:.4f}"])
            print(table[-1], file=sys.stderr, flush=True)
    notes = [f"{args.n_threads} threads, float32 data, `random_state={args.seed}`, "
             "`presets.var_kmeans_s(C)` with its default seeding (now: from 1,000 clusters on "
             "the exact presets', k-means|| on the schedule's seeding rows where the data have "
             "32 rows per cluster, greedy k-means++ with 2 + ln C candidates otherwise, as on "
             "the mixture's 10) and with the one "
             "it used before (greedy k-means++ with 15 candidates on all rows up to 16 features, "
             "on max(20 C, 10000) rows up to 64, AFK-MC² with chains of 200 above); error: "
             "`inertia_` over the fit's before.", command_note()]
    publish(VARIATIONAL_TITLE, format_table(headers, table), notes, args.write,
            machine_info(args.n_threads))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every data set's rows")
    parser.add_argument("--max-clusters", type=int, default=4096,
                        help="skip the cases with more clusters")
    parser.add_argument("--write", action="store_true",
                        help="write the RESULTS.md section (after every case)")
    parser.add_argument("--large", action="store_true",
                        help="default fits at 1,000,000 x 24, C = 16,384, and faiss Kmeans")
    parser.add_argument("--clusters", type=int, default=16_384, help="C of --large")
    parser.add_argument("--variational", action="store_true",
                        help="fit var_kmeans_s with its seeding before and now")
    parser.add_argument("--data", default=None, help="folder of mnist.npz (--variational)")
    parser.add_argument("--seed", type=int, default=0, help="random_state (--variational)")
    args = parser.parse_args()
    warn_openblas_overrides()
    if args.variational:
        variational(args)
        return
    if args.large:
        large(args)
        return
    headers = ["data", "C", "seeding rows before / now", "seeder", "seeding s", "share of fit",
               "seeding distances", "error / before", "iterations"]
    table, case_notes = [], []
    notes = [
        f"{args.n_threads} threads, float32 data. The reference seeds on the rows the default "
        "sampled before (`seeding rows`, before), the others on the rows `FullBatch.seeding_rows` "
        "gives now (at least 32 per centre from 1,000 clusters on); then Lloyd "
        "(`estep=\"bounded\"`, tol 1e-4) to "
        "convergence from the seeds. Medians over the seeds listed (`random_state`); the error "
        "is `inertia_` over the reference's (greedy k-means++ on the rows the default sampled "
        "before) with the same `random_state`, median of those ratios. Distances: "
        "`cost_[\"seeding\"]` (both levels and the merge; k-means||'s passes count one per row "
        "and candidate, at matrix-product speed).",
        command_note()]
    with threadpool_limits(limits=args.n_threads):
        for name, make, n_clusters, seeds in cases(args.scale):
            if n_clusters > args.max_clusters:
                continue
            X = make()
            rows = (f"{before_rows(X.shape[0], n_clusters, X.shape[1]):,} / "
                    f"{FullBatch().seeding_rows(X.shape[0], n_clusters, X.shape[1]):,}")
            runs = {label: [fit(X, n_clusters, seed, s, args.n_threads) for s in seeds]
                    for label, seed in seeders(X.shape[0], n_clusters, X.shape[1])}
            reference = [run[3] for run in runs[REFERENCE]]
            for label, results in runs.items():
                seeding, total, evals, error, n_iter = zip(*results)
                table.append([
                    name.format(X.shape[0]), f"{n_clusters:,}", rows,
                    label, f"{statistics.median(seeding):.2f}",
                    f"{statistics.median(s / t for s, t in zip(seeding, total)):.2f}",
                    f"{statistics.median(evals):.3g}",
                    f"{statistics.median(e / r for e, r in zip(error, reference)):.4f}",
                    f"{statistics.median(n_iter):g}"])
                print(table[-1], file=sys.stderr, flush=True)
            case_notes.append(f"{name.format(X.shape[0])}, C = "
                              f"{n_clusters:,}: random_state {', '.join(map(str, seeds))}.")
            publish(TITLE, format_table(headers, table), notes[:1] + case_notes + notes[1:],
                    args.write, machine_info(args.n_threads))


if __name__ == "__main__":
    main()
