"""Greedy against plain AFK-MC² seeding, in the coreset compositions, against scikit-learn.

For every data set and seed, scikit-learn's ``KMeans(n_clusters, n_init=1,
random_state=seed)`` is fitted on all the rows (inside ``threadpool_limits(n_threads)``),
then, in the same process, each composition with ``random_state=seed``:

* the design card ``Clusterer(C, seed=S, reduce=LWCS(2**15), estep=PartialEStep(G=5))``
  with ``S`` = plain AFK-MC² (``AFKMC2(n_candidates=1)``: chains of 200, the paper's
  algorithm), greedy AFK-MC² (``AFKMC2()``), greedy AFK-MC² estimating the potential on the
  whole coreset (``potential_sample="all"``) and, for reference, greedy k-means++ on the
  coreset (``KMeansPlusPlus()``);
* ``presets.vc_gmm(C, seed=S)`` and ``presets.lwcs_lloyd(C, seed=S)`` with plain and greedy
  AFK-MC².

Reported per composition (medians over the seeds): ``eta``, the relative excess of
``inertia_`` (the exact quantization error of all the rows) over scikit-learn's; the
speed-up over scikit-learn's fit; the seeding time (``seconds_["seeding"]``) and the fit
time relative to the same composition with plain AFK-MC² seeds. Data: (a) 200,000 x 16
well-separated Gaussian blobs with C = 1000 (:func:`clusterkit.datasets.make_gaussian_blobs`),
(b) the 500-Gaussian 32-D mixture of ``bench_defaults.py`` (300,000 points), (c) MNIST
with C = 500 (from ``--data``/``CLUSTERKIT_DATA``; skipped when absent). All float32. Run
with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_afkmc2.py --write
"""
import argparse
import statistics
import sys

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from clusterkit import AFKMC2, LWCS, Clusterer, KMeansPlusPlus, PartialEStep, presets
from clusterkit.datasets import load_benchmark, make_gaussian_blobs

from _common import (command_note, data_home, format_table, machine_info, publish,
                     warn_openblas_overrides)
from bench_defaults import make_mixture, timed_fit

TITLE = "Greedy AFK-MC² seeding against plain AFK-MC² and scikit-learn (bench_afkmc2.py)"

PLAIN, GREEDY = AFKMC2(n_candidates=1), AFKMC2()


def card(seed):
    return lambda C, **kw: Clusterer(C, seed=seed, reduce=LWCS(2**15),
                                     estep=PartialEStep(G=5), **kw)


# (label, builder, label of the same composition with plain AFK-MC² seeds)
COMPOSITIONS = [
    ("card, plain AFK-MC²", card(PLAIN), None),
    ("card, greedy AFK-MC²", card(GREEDY), "card, plain AFK-MC²"),
    ("card, greedy AFK-MC², potential on all", card(AFKMC2(potential_sample="all")),
     "card, plain AFK-MC²"),
    ("card, greedy k-means++", card(KMeansPlusPlus()), "card, plain AFK-MC²"),
    ("vc_gmm, plain AFK-MC²", lambda C, **kw: presets.vc_gmm(C, seed=PLAIN, **kw), None),
    ("vc_gmm, greedy AFK-MC²", lambda C, **kw: presets.vc_gmm(C, seed=GREEDY, **kw),
     "vc_gmm, plain AFK-MC²"),
    ("lwcs_lloyd, plain AFK-MC²", lambda C, **kw: presets.lwcs_lloyd(C, seed=PLAIN, **kw),
     None),
    ("lwcs_lloyd, greedy AFK-MC²", lambda C, **kw: presets.lwcs_lloyd(C, seed=GREEDY, **kw),
     "lwcs_lloyd, plain AFK-MC²"),
]


def datasets(args):
    """``(name, C, data for a seed)`` of every data set that is available."""
    if "blobs" in args.datasets:
        yield "blobs", 1000, lambda seed: make_gaussian_blobs(
            200_000, 16, 1000, random_state=seed, dtype=np.float32)[0]
    if "mixture" in args.datasets:
        yield "mixture", 500, make_mixture
    if "mnist" in args.datasets:
        try:
            X, _ = load_benchmark("mnist", args.data)
        except FileNotFoundError as error:
            print(f"mnist skipped: {error}", file=sys.stderr)
            return
        X = X.astype(np.float32)
        yield "mnist", 500, lambda seed, X=X: X


def run_dataset(name, C, data, args):
    runs = {label: [] for label, *_ in COMPOSITIONS}
    for seed in range(args.seeds):
        X = data(seed)
        with threadpool_limits(args.n_threads):
            ref, t_ref = timed_fit(KMeans(C, n_init=1, random_state=seed), X)
        print(f"{name} seed {seed}: scikit-learn {t_ref:.1f} s", flush=True)
        for label, build, _ in COMPOSITIONS:
            model, t = timed_fit(build(C, random_state=seed, n_threads=args.n_threads), X)
            runs[label].append(dict(eta=model.inertia_ / ref.inertia_ - 1, seconds=t,
                                    t_ref=t_ref, seeding=model.seconds_["seeding"],
                                    seed_evals=model.cost_["seeding"], iters=model.n_iter_))
            print(f"  {label}: {t:.2f} s (seeding {model.seconds_['seeding']:.2f} s), eta "
                  f"{100 * runs[label][-1]['eta']:+.2f} %, {model.n_iter_} iterations",
                  flush=True)
    return runs


def summarise(name, runs):
    rows = []
    for label, _, plain in COMPOSITIONS:
        r = runs[label]

        def ratio(key):
            if plain is None:
                return "-"
            return f"{statistics.median(a[key] / b[key] for a, b in zip(r, runs[plain])):.2f}"

        rows.append([name, label, f"{100 * statistics.median(x['eta'] for x in r):+.2f} %",
                     f"{100 * min(x['eta'] for x in r):+.1f} .. "
                     f"{100 * max(x['eta'] for x in r):+.1f} %",
                     f"{statistics.median(x['t_ref'] / x['seconds'] for x in r):.1f}x",
                     f"{statistics.median(x['seconds'] for x in r):.2f}",
                     f"{statistics.median(x['seeding'] for x in r):.2f}",
                     ratio("seeding"), ratio("seconds"),
                     f"{statistics.median(x['seed_evals'] for x in r):.3g}",
                     f"{statistics.median(x['iters'] for x in r):g}",
                     f"{statistics.median(x['t_ref'] for x in r):.1f}"])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz")
    parser.add_argument("--datasets", nargs="+", default=["blobs", "mixture", "mnist"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    warn_openblas_overrides()
    table = []
    for name, C, data in datasets(args):
        table += summarise(name, run_dataset(name, C, data, args))
    markdown = format_table(
        ["data", "composition", "eta (median)", "eta range", "speed-up over scikit-learn",
         "fit s", "seeding s", "seeding / plain", "fit / plain", "seeding distance evals",
         "iterations", "scikit-learn s"], table)
    notes = [
        f"{args.seeds} seeds per data set; medians over the seeds. eta: inertia_ over "
        "scikit-learn's KMeans(n_init=1) with the same seed on all the rows, minus 1; "
        "'seeding / plain' and 'fit / plain': median over the seeds of the time relative to "
        f"the same composition with plain AFK-MC² seeds; n_threads={args.n_threads} for all.",
        "card: Clusterer(C, seed=..., reduce=LWCS(2**15), estep=PartialEStep(G=5)); plain "
        "AFK-MC²: AFKMC2(n_candidates=1) (chains of 200); greedy AFK-MC²: AFKMC2() "
        "(2 + ln C chains of 200 // (2 + ln C), potential on max(8 C, 4096) draws).",
        command_note(),
    ]
    publish(TITLE, markdown, notes, args.write, machine_info(args.n_threads))


if __name__ == "__main__":
    main()
