"""Mini-batch k-means: time-energy curves of nmbatch, mbatch, Lloyd, Elkan and scikit-learn.

For every data set and seed the rows are shuffled; the last ``--n-val`` rows are held out
and the first ``k`` rows of the rest are the initial centres of every method (as in Newling &
Fleuret 2016, §4). Methods: clusterkit ``lloyd`` and ``elkan`` (to convergence, ``tol=0``),
``minibatch`` (b = 5000, ``--passes`` passes, early stop off), ``nmbatch`` (b0 = 5000, rho = 100, to
convergence) and scikit-learn ``MiniBatchKMeans`` (b = 5000, its ``partial_fit`` on the same
kind of uniform batches, as many as ours). The centres after every step are kept (at most
``--snapshots`` per run) and their energy on the held-out rows, ``E = mean ||x - c_a(x)||^2``,
is computed after the fit, outside the timings.

Reported per data set (medians over the seeds): the time and the distance evaluations each
method needs to come within 2 % of ``E*`` (the lowest held-out energy any method reached from
the seed's start), its final energy and total time relative to Lloyd's, and when it
comes within 2 % of Lloyd's final energy. nmbatch runs with both ``spread`` rules. Targets:
nmbatch within 2 % of ``E*`` at least 10 times sooner than our minibatch and sooner than
scikit-learn's; nmbatch's final energy within 2 % of Lloyd's in at most 20 % of Lloyd's
time.

``--defaults`` instead times default ``fit`` calls at large k (``--large-k``, 1024 and 4096)
on a 2000-Gaussian mixture and MNIST, seeding included: the ``lloyd``, ``elkan``,
``minibatch`` and ``nmbatch`` presets and scikit-learn's ``MiniBatchKMeans`` with their
defaults, ``lloyd`` seeded with greedy k-means++ on all rows (the former default),
and, labelled "given start", the same defaults from one k-means++ start per seed (not timed).
Targets: minibatch within 2 % of scikit-learn's energy in no more of its time; nmbatch within
1 % of lloyd's energy in at most 40 % of lloyd's time; the exact fits' seeding at most a
quarter of their time, their energy within 0.5 % of lloyd seeded on all rows. ``--options``
measures the mini-batch options at the same k (early stop, starved-centre rule, weighted
sampling, adaptive learning rate) against scikit-learn on the mixture. Run with the OpenBLAS
override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_minibatch.py --write
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_minibatch.py \
        --defaults --seeds-per-k 2 1 --write
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_minibatch.py \
        --options --seeds-per-k 3 1 --write
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import MiniBatchKMeans
from threadpoolctl import threadpool_limits

from clusterkit import presets
from clusterkit.datasets import load_benchmark, make_birch_grid
from clusterkit.metrics import quantization_error

from _common import (command_note, data_home, format_table, machine_info, publish,
                     warn_openblas_overrides)

TITLE = "Mini-batch k-means: time to energy (bench_minibatch.py)"
METHODS = ("lloyd", "elkan", "minibatch", "nmbatch", "nmbatch deviation", "sklearn MBK")
BATCH = 5000
PLOT_PATH = Path(__file__).resolve().parent / "bench_minibatch.png"


def datasets(folder):
    rng = np.random.RandomState(0)
    # 50 well-separated Gaussians, as many as centres: a first-k-rows start leaves some
    # Gaussians without a centre, and fixed-point methods stay in that local minimum
    means = rng.normal(scale=3.0, size=(50, 32))
    X = means[rng.randint(50, size=400_000)] + rng.normal(size=(400_000, 32))
    rows = [("50 Gaussians 400000x32", X)]
    # 500 overlapping Gaussians of unequal weights and spreads: k = 50 quantizes them, as on
    # the paper's real data sets
    means = rng.normal(scale=1.0, size=(500, 32))
    weights = rng.lognormal(sigma=1.0, size=500)
    component = rng.choice(500, size=400_000, p=weights / weights.sum())
    spreads = rng.uniform(0.1, 0.4, size=500)
    X = means[component] + spreads[component, None] * rng.normal(size=(400_000, 32))
    rows.append(("500 Gaussians 400000x32", X))
    X, _, _ = make_birch_grid(n_side=10, n_per_cluster=1000, random_state=0)
    rows.append(("BIRCH grid 100000x2", X))
    try:
        X, _ = load_benchmark("mnist", folder)
    except FileNotFoundError as error:
        print(f"MNIST skipped: {error}", file=sys.stderr)
    else:
        rows.append(("MNIST 70000x784", np.asarray(X, dtype=np.float64)))
    return rows


def _thin(trace, limit):
    """At most about ``limit`` snapshots, spaced evenly in log(step) (the early steps, where
    the energy falls fastest, at full resolution), always the first and the last."""
    if len(trace) <= limit:
        return trace
    keep = np.unique(np.geomspace(1, len(trace), limit).round().astype(int) - 1)
    return [trace[i] for i in keep]


def run_ours(method, X, init, args):
    """Snapshots ``(seconds, centres, distance evaluations)`` after every step."""
    trace = []
    common = dict(seed=init, n_threads=args.n_threads,
                  callback=lambda info: trace.append((info["seconds"], info["centers"].copy(),
                                                      info["distance_evals"])))
    k = init.shape[0]
    if method == "lloyd":
        km = presets.lloyd(k, tol=0, max_iter=args.max_iter, **common)
    elif method == "elkan":
        km = presets.elkan(k, tol=0, max_iter=args.max_iter, **common)
    elif method == "minibatch":
        km = presets.minibatch(k, batch_size=BATCH, max_passes=args.passes, random_state=0,
                               compute_labels=False, **common)
        km.set_params(schedule__max_no_improvement=None)  # the protocol: a fixed budget
    else:
        spread = "deviation" if method.endswith("deviation") else "standard_error"
        km = presets.nmbatch(k, initial_batch=BATCH, rho=100.0, spread=spread, tol=0,
                             random_state=0, max_iter=args.max_iter, **common)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        km.fit(X)
    return trace


def run_sklearn(X, init, args, seed):
    n_steps = int(np.ceil(args.passes * X.shape[0] / BATCH))
    mbk = MiniBatchKMeans(init.shape[0], init=init, n_init=1, batch_size=BATCH,
                          random_state=seed)
    rng = np.random.RandomState(seed)
    trace, elapsed = [], 0.0
    with threadpool_limits(limits=args.n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(1, n_steps + 1):
            start = time.perf_counter()
            mbk.partial_fit(X[rng.choice(X.shape[0], BATCH, replace=False)])
            elapsed += time.perf_counter() - start
            trace.append((elapsed, mbk.cluster_centers_.copy(), step * BATCH * init.shape[0]))
    return trace


def energy_curve(trace, X_val, limit):
    """``(seconds, held-out energy, distance evaluations)`` of the kept snapshots."""
    return [(seconds, quantization_error(X_val, centers) / X_val.shape[0], evals)
            for seconds, centers, evals in _thin(trace, limit)]


def first_within(curve, target, column=0):
    """Seconds (``column=0``) or distance evaluations (2) at the first snapshot with an
    energy at most ``target``; ``inf`` if none."""
    return next((point[column] for point in curve if point[1] <= target), np.inf)


def _warm_up_memory(nbytes):
    """Touch and free ``nbytes`` once, so that no timed fit pays the process's first page
    faults of that size (on this machine up to 0.4 s for MNIST's 400 MB, then 0.02 s)."""
    np.ones(nbytes // 8)


def _verdicts(name, label, med):
    nm, mb, sk = med[label], med["minibatch"], med["sklearn MBK"]
    reached = np.isfinite(nm["t2"])

    def sooner(other):
        return f"{other / nm['t2']:.1f}x" if reached else "never (it did not get there)"
    return (
        f"{name}, {label}: reaches 2 % of E* {sooner(mb['t2'])} sooner than minibatch "
        f"(target >= 10: {'ok' if reached and mb['t2'] >= 10 * nm['t2'] else 'MISSED'}"
        + (f"; {mb['e2'] / nm['e2']:.1f}x fewer distance evaluations" if reached else "")
        + f") and {sooner(sk['t2'])} "
        f"sooner than scikit-learn's MiniBatchKMeans (target > 1: "
        f"{'ok' if reached and sk['t2'] > nm['t2'] else 'MISSED'}); it ends at "
        f"{nm['final']:.4f} x Lloyd's energy in {nm['time']:.3f} x Lloyd's time (target "
        f"<= 1.02 in <= 0.2: {'ok' if nm['final'] <= 1.02 and nm['time'] <= 0.2 else 'MISSED'}"
        f"); it is within 2 % of Lloyd's final energy after {nm['t_lloyd']:.3f} x Lloyd's "
        f"time.")


def run(args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sets = [(name, X) for name, X in datasets(args.data)
            if args.only is None or args.only.lower() in name.lower()]
    figure, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 4), squeeze=False)
    table, notes = [], []
    for (name, X), axis in zip(sets, axes[0]):
        _warm_up_memory(2 * X.nbytes)
        per_seed = []
        for seed in range(args.seeds):
            order = np.random.RandomState(seed).permutation(X.shape[0])
            train = np.ascontiguousarray(X[order[:-args.n_val]])
            val = np.ascontiguousarray(X[order[-args.n_val:]])
            init = train[:args.k].copy()
            curves = {}
            for method in METHODS:
                trace = (run_sklearn(train, init, args, seed) if method == "sklearn MBK"
                         else run_ours(method, train, init, args))
                curves[method] = energy_curve(trace, val, args.snapshots)
            per_seed.append(curves)
            print(f"{name} seed {seed}: " + ", ".join(
                f"{m} {c[-1][1]:.5g} in {c[-1][0]:.2f} s" for m, c in curves.items()),
                flush=True)
        # E* per seed: the lowest held-out energy of any method from that seed's start (the
        # paper takes it over all runs, but here the start alone moves it by more than 2 %)
        bests = [min(e for c in curves.values() for _, e, _ in c) for curves in per_seed]
        stats = {m: {key: [] for key in ("t2", "e2", "final", "time", "t_lloyd")}
                 for m in METHODS}
        for curves, best in zip(per_seed, bests):
            lloyd_energy, lloyd_time = curves["lloyd"][-1][1], curves["lloyd"][-1][0]
            for m, c in curves.items():
                stats[m]["t2"].append(first_within(c, 1.02 * best))
                stats[m]["e2"].append(first_within(c, 1.02 * best, column=2))
                stats[m]["final"].append(c[-1][1] / lloyd_energy)
                stats[m]["time"].append(c[-1][0] / lloyd_time)
                stats[m]["t_lloyd"].append(first_within(c, 1.02 * lloyd_energy) / lloyd_time)
        med = {m: {key: float(np.median(v)) for key, v in s.items()} for m, s in stats.items()}
        for m in METHODS:
            table.append([name, m, f"{med[m]['t2']:.3g}", f"{med[m]['e2']:.3g}",
                          f"{med[m]['final']:.4f}", f"{med[m]['time']:.3f}",
                          f"{med[m]['t_lloyd']:.3f}"])
        notes.append(f"{name}: E* over the seeds from {min(bests):.6g} to {max(bests):.6g} "
                     f"({max(bests) / min(bests) - 1:.1%} apart).")
        notes += [_verdicts(name, label, med) for label in ("nmbatch", "nmbatch deviation")]
        # the plot: median energy over the seeds against median time, per method
        for m in METHODS:
            length = min(len(curves[m]) for curves in per_seed)
            seconds = np.median([[c[m][i][0] for i in range(length)] for c in per_seed], 0)
            excess = np.median([[c[m][i][1] / best - 1 for i in range(length)]
                                for c, best in zip(per_seed, bests)], 0)
            axis.plot(seconds, excess, label=m)
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.axhline(0.02, color="grey", linestyle=":", linewidth=1)
        axis.set_title(name)
        axis.set_xlabel("seconds")
        axis.set_ylabel("(held-out energy - E*) / E*")
        axis.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(PLOT_PATH, dpi=100)
    headers = ["data", "method", "seconds to 2 % of E*", "distance evals to 2 % of E*",
               "final energy / Lloyd's", "total time / Lloyd's",
               "time to 2 % of Lloyd's final / Lloyd's time"]
    notes += [
        f"k = {args.k}, {args.seeds} seeds (medians over the seeds), {args.n_val} held-out "
        f"rows, {args.n_threads} threads; E* is the lowest held-out energy any method reached "
        f"from the seed's start (the paper's Figure 2 takes the lowest over all runs). "
        f"minibatch and scikit-learn run "
        f"{args.passes} passes of b = {BATCH}; Lloyd, Elkan and both nmbatch variants run to "
        f"their fixed point (tol=0, max_iter={args.max_iter}). nmbatch: b0 = {BATCH}, rho = "
        "100, spread 'standard_error' (the paper's eq. 4); 'nmbatch deviation': "
        "spread 'deviation' (the authors' code). Times are each fit's own clock at the step "
        "(clusterkit's `history_` seconds, which start after input validation; "
        "scikit-learn's summed `partial_fit` calls); energies are computed afterwards. "
        "scikit-learn's distance evaluations are counted as b x k per step.",
        f"Plot: `benchmarks/{PLOT_PATH.name}` (median over the seeds; the dotted line is 2 %).",
        command_note(),
    ]
    return format_table(headers, table) + f"\n\n![time to energy]({PLOT_PATH.name})", notes


# -- default fits at large k (--defaults) ---------------------------------------------------

DEFAULTS_TITLE = "Mini-batch k-means: default fits at large k (bench_minibatch.py --defaults)"
DEFAULT_METHODS = ("lloyd", "elkan", "sklearn MBK", "minibatch", "nmbatch")
#: The former default: greedy k-means++ on all rows (the baseline of the exact
#: fits' final error), and the given-start rows (one k-means++ start per seed, not timed).
BASELINE_METHODS = ("lloyd, all-rows seeding",)
GIVEN_METHODS = ("lloyd, given start", "sklearn MBK, given start", "minibatch, given start",
                 "nmbatch, given start")


def large_k_datasets(folder):
    """A mixture in the regime of the paper (many overlapping clusters of unequal weights and
    spreads, N >> k) and MNIST, as shipped (float32)."""
    rng = np.random.RandomState(1)
    means = rng.normal(scale=1.0, size=(2000, 32))
    weights = rng.lognormal(sigma=1.0, size=2000)
    component = rng.choice(2000, size=300_000, p=weights / weights.sum())
    spreads = rng.uniform(0.1, 0.4, size=2000)
    X = means[component] + spreads[component, None] * rng.normal(size=(300_000, 32))
    rows = [("2000 Gaussians 300000x32", X)]
    try:
        X, _ = load_benchmark("mnist", folder)
    except FileNotFoundError as error:
        print(f"MNIST skipped: {error}", file=sys.stderr)
    else:
        rows.append(("MNIST 70000x784", np.ascontiguousarray(X)))
    return rows


def default_fit(method, X, k, seed, n_threads, init=None):
    """One default fit, seeding included unless the method starts from ``init``:
    ``(seconds, energy per sample, steps, seeding seconds)``."""
    from clusterkit import KMeansPlusPlus
    base = method.split(",")[0]
    start = {} if init is None else {"seed": init}
    if base == "sklearn MBK":
        model = MiniBatchKMeans(k, random_state=seed, **({} if init is None
                                                          else {"init": init, "n_init": 1}))
    else:
        if method == "lloyd, all-rows seeding":
            start = {"seed": KMeansPlusPlus()}
        model = getattr(presets, base)(k, random_state=seed, n_threads=n_threads, **start)
    with threadpool_limits(limits=n_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        begin = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - begin
    steps = getattr(model, "n_steps_", model.n_iter_)
    seeding = getattr(model, "seconds_", {}).get("seeding", float("nan"))
    return seconds, model.inertia_ / X.shape[0], steps, seeding


def run_defaults(args):
    """Default fits of every method, seeding included, per seed in the same run; then the
    given-start rows from one k-means++ start per seed."""
    from clusterkit import KMeansPlusPlus
    from clusterkit._engine.state import FitState
    methods = DEFAULT_METHODS + (() if args.no_baseline else BASELINE_METHODS)
    methods += () if args.no_given else GIVEN_METHODS
    seeds_per_k = dict(zip(args.large_k, args.seeds_per_k or [args.seeds] * len(args.large_k)))
    table, verdicts = [], []
    for name, X in large_k_datasets(args.data):
        if args.only is not None and args.only.lower() not in name.lower():
            continue
        _warm_up_memory(2 * X.nbytes)
        for k in args.large_k:
            runs = {m: [] for m in methods}
            for seed in range(seeds_per_k[k]):
                init = None
                for method in methods:
                    if "given start" in method and init is None:
                        state = FitState(n_clusters=k, n_features=X.shape[1],
                                         random_state=np.random.RandomState(seed),
                                         n_threads=args.n_threads)
                        init = KMeansPlusPlus().seed(X, np.ones(X.shape[0], X.dtype), k,
                                                     state)
                    runs[method].append(default_fit(
                        method, X, k, seed, args.n_threads,
                        init if "given start" in method else None))
                print(f"{name} k={k} seed {seed}: " + ", ".join(
                    f"{m} {r[-1][1]:.5g} in {r[-1][0]:.1f} s (seeding {r[-1][3]:.1f} s)"
                    for m, r in runs.items()), flush=True)

            def median_ratio(rs, refs, column):
                return float(np.median([r[column] / f[column] for r, f in zip(rs, refs)]))

            refs = [m for m in ("lloyd", "sklearn MBK", "lloyd, all-rows seeding") if m in runs]
            ratio = {m: {(ref, what): median_ratio(rs, runs[ref], column)
                         for ref in refs for what, column in (("time", 0), ("energy", 1))}
                     for m, rs in runs.items()}
            for m, rs in runs.items():
                r = ratio[m]
                seeding = np.median([x[3] / x[0] for x in rs])
                table.append([name, str(k), m, f"{np.median([x[0] for x in rs]):.3g}",
                              "-" if np.isnan(seeding) else f"{seeding:.2f}",
                              f"{np.median([x[1] for x in rs]):.5g}",
                              f"{np.median([x[2] for x in rs]):.0f}",
                              f"{r['lloyd', 'energy']:.4f}", f"{r['lloyd', 'time']:.3f}",
                              f"{r['sklearn MBK', 'energy']:.4f}",
                              f"{r['sklearn MBK', 'time']:.3f}"])
            mb, nm = ratio["minibatch"], ratio["nmbatch"]
            mb_ok = mb["sklearn MBK", "energy"] <= 1.02 and mb["sklearn MBK", "time"] <= 1
            nm_ok = nm["lloyd", "energy"] <= 1.01 and nm["lloyd", "time"] <= 0.4
            verdicts.append(
                f"{name}, k = {k}: minibatch ends at {mb['sklearn MBK', 'energy']:.4f} x "
                f"scikit-learn's energy in {mb['sklearn MBK', 'time']:.3f} x its time (target "
                f"<= 1.02 in <= 1: {'ok' if mb_ok else 'MISSED'}); nmbatch ends at "
                f"{nm['lloyd', 'energy']:.4f} x lloyd's energy in {nm['lloyd', 'time']:.3f} x "
                f"its time (target <= 1.01 in <= 0.4: {'ok' if nm_ok else 'MISSED'}).")
            for m in ("lloyd", "elkan"):
                share = np.median([x[3] / x[0] for x in runs[m]])
                line = f"{name}, k = {k}: {m}'s seeding takes {share:.2f} of its fit"
                if "lloyd, all-rows seeding" in runs:
                    line += (f"; its energy is {ratio[m]['lloyd, all-rows seeding', 'energy']:.4f}"
                             " x that of lloyd seeded on all rows (the former default) in "
                             f"{ratio[m]['lloyd, all-rows seeding', 'time']:.3f} x its time")
                verdicts.append(line + " (targets <= 0.25 and <= 1.005).")
    headers = ["data", "k", "method", "seconds", "seeding share", "energy", "steps",
               "energy / lloyd's", "time / lloyd's", "energy / sklearn MBK's",
               "time / sklearn MBK's"]
    notes = verdicts + [
        "Default `fit` calls, seeding included, seeds per k: "
        + ", ".join(f"k = {k}: {n}" for k, n in seeds_per_k.items())
        + f" (medians; ratios are medians of the per-seed ratios), {args.n_threads} threads, "
        "every method in the same run per seed. Energy: the fit's `inertia_` (every sample's "
        "nearest final centre) per sample, on all the data. Time: the whole `fit` call, "
        "seeding and final labelling included (both libraries label by default); seeding "
        "share: `seconds_['seeding']` over it. lloyd, elkan, minibatch, nmbatch: "
        "`presets.<name>(k, random_state=seed)`; sklearn MBK: `MiniBatchKMeans(k, "
        "random_state=seed)`; lloyd, all-rows seeding: `presets.lloyd(k, "
        "seed=KMeansPlusPlus())`, the former default. Rows 'given start': the same "
        "defaults from one greedy k-means++ seeding on all rows per seed (not timed; "
        "scikit-learn with `init=start, n_init=1`). Steps: batches for the mini-batch "
        "methods (`n_steps_`), iterations otherwise.",
        command_note(),
    ]
    return format_table(headers, table), notes


# -- the mini-batch options at large k (--options) ---------------------------------------------

OPTIONS_TITLE = "Mini-batch k-means: options at large k (bench_minibatch.py --options)"
OPTIONS = {  # label: (data, parameters); data "full" or "coreset"; None: scikit-learn's
    "sklearn MBK": ("full", {}),
    "sklearn MBK, early stop off, 10 passes": ("full", {"max_no_improvement": None,
                                                        "max_iter": 10}),
    "minibatch (defaults)": ("full", None),
    "early stop off (10 passes)": ("full", {"max_no_improvement": None}),
    "reassignment_ratio=0": ("full", {"reassignment_ratio": 0.0}),
    "learning_rate='adaptive'": ("full", {"learning_rate": "adaptive"}),
    "sklearn MBK, coreset": ("coreset", {}),
    "coreset, sampling='uniform'": ("coreset", None),
    "coreset, sampling='weighted'": ("coreset", {"sampling": "weighted"}),
}


def _sklearn_reassignments(model, X, sample_weight):
    """Centres scikit-learn's MiniBatchKMeans moves in this fit (from its verbose output, in
    a second, untimed fit)."""
    import contextlib
    import io
    import re
    from sklearn.base import clone
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clone(model).set_params(verbose=1).fit(X, sample_weight=sample_weight)
    return sum(int(n) for n in re.findall(r"Reassigning (\d+) cluster centers", out.getvalue()))


def run_options(args):
    """The mini-batch options on the 2000-Gaussian mixture at each ``--large-k``, one k-means++
    start per seed; the weighted rows run on an LWCS coreset of it (unequal weights)."""
    from clusterkit import LWCS, Clusterer, FullEStep, HardMStep, KMeansPlusPlus, MiniBatch
    from clusterkit._engine.state import FitState
    name, X = large_k_datasets(args.data)[0]
    _warm_up_memory(2 * X.nbytes)
    Xc, wc = LWCS(2**15).reduce(X, np.ones(X.shape[0]), FitState(
        n_clusters=1, n_features=X.shape[1], random_state=np.random.RandomState(0)))
    seeds_per_k = dict(zip(args.large_k, args.seeds_per_k or [args.seeds] * len(args.large_k)))
    table = []
    for k, n_seeds in seeds_per_k.items():
        rows = {label: [] for label in OPTIONS}
        for seed in range(n_seeds):
            state = FitState(n_clusters=k, n_features=X.shape[1],
                             random_state=np.random.RandomState(seed), n_threads=args.n_threads)
            init = KMeansPlusPlus().seed(X, np.ones(X.shape[0]), k, state)
            stops = {}  # the data's scikit-learn stop time
            for label, (data, params) in OPTIONS.items():
                Xf, wf = (X, None) if data == "full" else (Xc, wc)
                ours = not label.startswith("sklearn")
                at_stop = {}  # our centres when scikit-learn's default fit had stopped

                def keep(info, at_stop=at_stop, limit=stops.get(data, 0.0)):
                    if info["seconds"] <= limit:
                        at_stop["centers"] = info["centers"].copy()

                if ours:
                    model = Clusterer(k, seed=init, estep=FullEStep(), mstep=HardMStep(),
                                      schedule=MiniBatch(**(params or {})), random_state=seed,
                                      n_threads=args.n_threads, callback=keep)
                else:
                    model = MiniBatchKMeans(k, init=init, n_init=1, random_state=seed,
                                            **params)
                with threadpool_limits(limits=args.n_threads), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(Xf, sample_weight=wf)
                    seconds = time.perf_counter() - start
                if label in ("sklearn MBK", "sklearn MBK, coreset"):
                    stops[data] = seconds
                energy = quantization_error(X, model.cluster_centers_) / X.shape[0]
                early = (quantization_error(X, at_stop["centers"]) / X.shape[0]
                         if "centers" in at_stop else np.nan)
                moved = (sum(h["n_relocated"] for h in model.history_) if ours
                         else _sklearn_reassignments(model, Xf, wf))
                rows[label].append((seconds, energy, model.n_steps_, moved, early))
            print(f"k = {k}, seed {seed}: " + ", ".join(
                f"{m} {r[-1][1]:.5g} in {r[-1][0]:.1f} s" for m, r in rows.items()), flush=True)
        for label, rs in rows.items():
            reference = rows["sklearn MBK, coreset" if "coreset" in label else "sklearn MBK"]
            table.append([str(k), label]
                         + [f"{np.median([r[i] for r in rs]):.4g}" for i in range(4)]
                         + [f"{np.median([r[1] / f[1] for r, f in zip(rs, reference)]):.4f}",
                            f"{np.median([r[0] / f[0] for r, f in zip(rs, reference)]):.3f}",
                            "—" if label.startswith("sklearn") else
                            f"{np.median([r[4] / f[1] for r, f in zip(rs, reference)]):.4f}"])
    headers = ["k", "method", "seconds", "energy (all data)", "steps", "centres moved",
               "energy / sklearn's", "time / sklearn's",
               "energy when sklearn stopped / sklearn's final"]
    notes = [
        f"{name}, seeds per k: " + ", ".join(f"k = {k}: {n}" for k, n in seeds_per_k.items())
        + f" (medians), {args.n_threads} threads, one k-means++ start per seed given to every "
        "fit; 'sklearn' is scikit-learn's MiniBatchKMeans with its defaults unless the row "
        "says otherwise; the other rows are clusterkit's MiniBatch (batch 1024, like "
        "scikit-learn's) with the row's setting. Energy: mean squared distance of all 300,000 "
        "rows to their nearest final centre. Centres moved: our starved-centre relocations "
        "(history `n_relocated`), scikit-learn's reassignments (counted from its verbose "
        "output in a second, untimed fit). Last column: the energy of our centres at the "
        "last step that ended before scikit-learn's default fit had (its wall time), over "
        "scikit-learn's final energy. The coreset rows fit an LWCS coreset of "
        f"{Xc.shape[0]} weighted rows (weights from {wc.min():.3g} to {wc.max():.3g}), "
        "compared with scikit-learn's MiniBatchKMeans on the same coreset and weights "
        "(which draws its batches in proportion to the weights).",
        command_note(),
    ]
    return format_table(headers, table), notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz")
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--n-val", type=int, default=5000)
    parser.add_argument("--passes", type=float, default=20.0)
    parser.add_argument("--max-iter", type=int, default=500)
    parser.add_argument("--snapshots", type=int, default=40)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--only", help="run the data sets whose name contains this")
    parser.add_argument("--defaults", action="store_true",
                        help="default fits at large k against Lloyd and scikit-learn instead")
    parser.add_argument("--no-baseline", action="store_true",
                        help="--defaults without lloyd seeded on all rows (the old default)")
    parser.add_argument("--no-given", action="store_true",
                        help="--defaults without the rows from a given start")
    parser.add_argument("--large-k", type=int, nargs="+", default=[1024, 4096],
                        help="k of the --defaults and --options rows")
    parser.add_argument("--options", action="store_true",
                        help="the mini-batch options at large k against scikit-learn instead")
    parser.add_argument("--seeds-per-k", type=int, nargs="+",
                        help="seeds of each --large-k row (default: --seeds)")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    warn_openblas_overrides()
    if args.defaults:
        markdown, notes = run_defaults(args)
        publish(DEFAULTS_TITLE, markdown, notes, args.write, machine_info(args.n_threads))
    elif args.options:
        markdown, notes = run_options(args)
        publish(OPTIONS_TITLE, markdown, notes, args.write, machine_info(args.n_threads))
    else:
        markdown, notes = run(args)
        publish(TITLE, markdown, notes, args.write, machine_info(args.n_threads))


if __name__ == "__main__":
    main()
