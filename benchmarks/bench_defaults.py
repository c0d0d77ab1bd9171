"""Fast and good by default: the accelerated compositions against scikit-learn's k-means.

Every composition runs with its default parameters and is compared, seed by seed, with
scikit-learn's ``KMeans(n_clusters, init="k-means++", n_init=1, random_state=seed)`` fitted
on the same data in the same process (inside ``threadpool_limits(n_threads)``):

* the design card's ``Clusterer(C, seed=AFKMC2(), reduce=LWCS(2**15),
  estep=PartialEStep(G=5))``, ``presets.vc_gmm(C)`` and ``presets.lwcs_lloyd(C)``: target
  error ``eta <= +10 %`` at ``>= 30x`` less wall time;
* ``presets.var_kmeans_s(C)`` on all the data: ``eta <= +1 %`` at ``>= 8x``;
* on MNIST also ``presets.vc_gmm(500, coreset_size=2**14, G=5)``: ``eta <= +7 %`` at
  ``>= 40x``;
* references without a target, to explain misses: the design card with Lloyd's exact E-step
  on its coreset, and Lloyd on all the data from ``AFKMC2()`` seeds (cod_rna, mixtures);
  ``var_kmeans_s`` from greedy k-means++ seeds on a sample (MNIST, where its default seeds
  with AFK-MC²).

``eta`` is the relative excess of the fit's ``inertia_`` (the exact quantization error of
all the data, computed by every fit) over scikit-learn's; wall times are whole ``fit`` calls,
seeding and final labels included. Data: MNIST (C = 500) and cod_rna (C = 500) from
``--data``/``CLUSTERKIT_DATA`` (skipped when absent); mixtures of 500 Gaussians in 32-D
generated here, a new one per seed, with Dirichlet(1) weights and standard deviations
uniform in [0.5, 3] (N = 300,000); the BIRCH grid with C = 4096 (64 x 64 Gaussians, 409,600
points; only ``var_kmeans_s``, as a coreset of ``2^15`` holds 8 points per cluster). All
float32. Run with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_defaults.py --write
"""
import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from clusterkit import (AFKMC2, LWCS, Clusterer, KMeansPlusPlus, PartialEStep,
                        SampledSeeder, presets)
from clusterkit.datasets import load_benchmark, make_birch_grid

from _common import (command_note, data_home, format_table, machine_info, publish,
                     warn_openblas_overrides)

TITLE = ("Fast and good by default: clusterkit's compositions against scikit-learn "
         "(bench_defaults.py)")
PLOT = Path(__file__).with_name("bench_defaults.png")

# (label, builder, target eta, target speed-up)
CARD = ("design card", lambda C, **kw: Clusterer(C, seed=AFKMC2(), reduce=LWCS(2**15),
                                                 estep=PartialEStep(G=5), **kw), 0.10, 30)
VC_GMM = ("vc_gmm(C)", lambda C, **kw: presets.vc_gmm(C, **kw), 0.10, 30)
LWCS_LLOYD = ("lwcs_lloyd(C)", lambda C, **kw: presets.lwcs_lloyd(C, **kw), 0.10, 30)
VAR_KMEANS = ("var_kmeans_s(C)", lambda C, **kw: presets.var_kmeans_s(C, **kw), 0.01, 8)
VC_GMM_14 = ("vc_gmm(C, coreset_size=2**14, G=5)",
             lambda C, **kw: presets.vc_gmm(C, coreset_size=2**14, G=5, **kw), 0.07, 40)
# references without a target, for the misses: the design card's seeding without its
# accelerations, and var-k-means from greedy seeds where the default is AFK-MC²
LLOYD_AFKMC2 = ("reference: lloyd(C, seed=AFKMC2())",
                lambda C, **kw: presets.lloyd(C, seed=AFKMC2(), **kw), None, None)
CARD_LLOYD = ("reference: the design card with Lloyd's E-step",
              lambda C, **kw: Clusterer(C, seed=AFKMC2(), reduce=LWCS(2**15), **kw), None, None)
VAR_KMEANS_SAMPLED = ("reference: var_kmeans_s(C, seed=SampledSeeder(KMeansPlusPlus(15)))",
                      lambda C, **kw: presets.var_kmeans_s(
                          C, seed=SampledSeeder(KMeansPlusPlus(15)), **kw), None, None)


def make_mixture(seed, n_samples=300_000, n_features=32, n_clusters=500):
    """Gaussians with uniform random means in [-10, 10]^D, Dirichlet(1) weights and standard
    deviations uniform in [0.5, 3], float32."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(-10, 10, size=(n_clusters, n_features))
    weights = rng.dirichlet(np.ones(n_clusters))
    std = rng.uniform(0.5, 3.0, size=n_clusters)
    y = rng.choice(n_clusters, size=n_samples, p=weights)
    X = means[y] + rng.standard_normal((n_samples, n_features)) * std[y, None]
    return X.astype(np.float32)


def datasets(args):
    """``(name, C, data for a seed, compositions)`` of every data set that is available."""
    for name in ("mnist", "cod_rna"):
        if name not in args.datasets:
            continue
        try:
            X, _ = load_benchmark("cod_rna_trn_tst" if name == "cod_rna" else name, args.data)
        except FileNotFoundError as error:
            print(f"{name} skipped: {error}", file=sys.stderr)
            continue
        comps = [CARD, VC_GMM, LWCS_LLOYD, VAR_KMEANS] + (
            [VC_GMM_14, VAR_KMEANS_SAMPLED] if name == "mnist" else [CARD_LLOYD, LLOYD_AFKMC2])
        yield name, 500, (lambda seed, X=X: X), comps
    if "mixture" in args.datasets:
        yield "mixture", 500, make_mixture, [CARD, VC_GMM, LWCS_LLOYD, VAR_KMEANS, CARD_LLOYD,
                                          LLOYD_AFKMC2]
    if "grid" in args.datasets:
        yield ("grid", 4096, lambda seed: make_birch_grid(n_side=64, random_state=seed,
                                                          dtype=np.float32)[0], [VAR_KMEANS])


def timed_fit(model, X):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    return model, time.perf_counter() - start


def run_dataset(name, C, data, comps, args):
    """Per composition: eta, speed-up, distance evaluations and iterations of every seed."""
    runs = {label: [] for label, *_ in comps}
    for seed in range(args.seeds):
        X = data(seed)
        with threadpool_limits(args.n_threads):
            ref, t_ref = timed_fit(KMeans(C, n_init=1, random_state=seed), X)
        print(f"{name} seed {seed}: scikit-learn {t_ref:.1f} s, {ref.n_iter_} iterations",
              flush=True)
        for label, build, *_ in comps:
            model, t = timed_fit(build(C, random_state=seed, n_threads=args.n_threads), X)
            runs[label].append(dict(eta=model.inertia_ / ref.inertia_ - 1, speedup=t_ref / t,
                                    seconds=t, t_ref=t_ref, evals=model.n_distance_evals_,
                                    iters=model.n_iter_, seeding=model.seconds_["seeding"]))
            print(f"  {label}: {t:.2f} s ({t_ref / t:.1f}x), eta "
                  f"{100 * runs[label][-1]['eta']:+.2f} %, {model.n_iter_} iterations",
                  flush=True)
    return runs


def summarise(name, comps, runs):
    rows, verdicts = [], []
    for label, _, eta_max, speedup_min in comps:
        r = runs[label]
        eta = statistics.median(x["eta"] for x in r)
        speedup = statistics.median(x["speedup"] for x in r)
        if eta_max is None:
            target = "-"
        else:
            met = eta <= eta_max and speedup >= speedup_min
            target = (f"<= +{100 * eta_max:g} %, >= {speedup_min}x: "
                      + ("**met**" if met else "**missed**"))
            verdicts.append((name, label, met))
        rows.append([name, label, f"{100 * eta:+.2f} %",
                     f"{100 * min(x['eta'] for x in r):+.1f} .. "
                     f"{100 * max(x['eta'] for x in r):+.1f} %",
                     f"{speedup:.1f}x",
                     f"{min(x['speedup'] for x in r):.1f} .. {max(x['speedup'] for x in r):.1f}x",
                     f"{statistics.median(x['seconds'] for x in r):.2f}",
                     f"{statistics.median(x['seeding'] for x in r):.2f}",
                     f"{statistics.median(x['t_ref'] for x in r):.1f}",
                     f"{statistics.median(x['evals'] for x in r):.3g}",
                     f"{statistics.median(x['iters'] for x in r):g}", target])
    return rows, verdicts


def plot(results):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.8), squeeze=False)
    for ax, (name, comps, runs) in zip(axes[0], results):
        for label, _, eta_max, speedup_min in comps:
            r = runs[label]
            line = ax.scatter([x["speedup"] for x in r], [100 * x["eta"] for x in r], s=18,
                              label=label)
            if eta_max is None:
                continue
            ax.add_patch(matplotlib.patches.Rectangle(
                (speedup_min, -100), 1e4, 100 + 100 * eta_max, fill=False, ls="--",
                ec=line.get_facecolor()[0]))
        etas = [100 * x["eta"] for label, *_ in comps for x in runs[label]]
        ax.set_ylim(min(-1, min(etas) - 1), max(11, max(etas) + 2))
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("speed-up over scikit-learn")
        ax.set_ylabel("eta (%)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)
    return PLOT.name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz, "
                        "cod_rna_trn_tst.npz")
    parser.add_argument("--datasets", nargs="+", default=["mnist", "cod_rna", "mixture", "grid"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    warn_openblas_overrides()
    table, verdicts, results = [], [], []
    for name, C, data, comps in datasets(args):
        runs = run_dataset(name, C, data, comps, args)
        rows, more = summarise(name, comps, runs)
        table += rows
        verdicts += more
        results.append((name, comps, runs))
    markdown = format_table(["data", "composition", "eta (median)", "eta range",
                             "speed-up (median)", "speed-up range", "fit s", "seeding s",
                             "scikit-learn s", "distance evals", "iterations", "target"], table)
    image = plot(results) if args.write else None
    if image:
        markdown += f"\n\n![eta against speed-up per seed]({image})"
    notes = [
        f"{args.seeds} seeds per data set; medians over the seeds (ranges: smallest and "
        "largest). eta: inertia_ over scikit-learn's KMeans(n_init=1) with the same seed, "
        "minus 1; speed-up: scikit-learn's fit time over the composition's, same seed, same "
        f"process; n_threads={args.n_threads} for both. 'distance evals': n_distance_evals_, "
        "seeding, coreset and final labels included; 'iterations': n_iter_.",
        "Missed: " + (", ".join(f"{n}: {label}" for n, label, met in verdicts if not met)
                      or "none") + ".",
        command_note(),
    ]
    publish(TITLE, markdown, notes, args.write, machine_info(args.n_threads))


if __name__ == "__main__":
    main()
