"""Better clusters: seeding and refinement against scikit-learn's restarts, breathing k-means and FLS++.

Per data set and seed, in one process on ``--n-threads`` threads, every fit is timed whole
(seeding and final labels included) and its error is the quantization error of all rows to
their nearest centre (:func:`clusterkit.metrics.quantization_error`, the same for everyone):

* peers, each with its defaults: scikit-learn ``KMeans(n_init=1)`` and ``KMeans(n_init=10)``
  (greedy k-means++, Lloyd), ``bkmeans.BKMeans`` (breathing k-means, Fritzke 2020),
  ``flspp.FLSpp`` (k-means++ with local-search swaps, Conrads et al. 2024) and fuel's
  Hartigan-Wong k-means (``fuel.cluster.kmeans(variant="hartigan_wong")`` from its
  k-means++, package ``pyfuel``; on ``RAYON_NUM_THREADS = --n-threads`` threads). FLS++ and
  fuel read float64: they get a float64 copy made before their clocks start. A peer that
  is not installed is skipped (said on stderr and in the notes);
* the design card ``Clusterer(C, seed=AFKMC2(), reduce=LWCS(2**15), estep=PartialEStep(G=5))``,
  ``presets.vc_gmm(C)`` and ``presets.lwcs_lloyd(C)``, each alone and with
  ``refine=Breathing()``;
* ``presets.best_quality(C)`` (its default budget), the same followed by single-point moves
  (``refine=(Breathing(...), SinglePointMoves())``, the D-local polish), and
  ``presets.best_quality(C, budget=None, time_budget=T)`` with ``T`` half of bkmeans'
  seconds on the same data and seed (without bkmeans: five times scikit-learn
  ``n_init=1``'s), whose curve gives the error against time.

The time axis: for every fit with a breathing refiner the error of the centres it holds after
each round (all rows, computed after the fit, outside its clock) at the fit's seconds when
the round ended: what a fit given that time would return; for the peers their final points
at a few budgets (``KMeans(n_init=3)``, ``FLSpp(local_search_iterations=5 and 50)``, plot
only). The plot has one panel per data set:
every method's error against seconds, relative to scikit-learn ``n_init=1`` of the same seed.

Data sets. Fast (``--seeds`` seeds, five by default): a 200-Gaussian mixture (60,000 x 32,
C = 200), well-separated blobs (50,000 x 16, C = 250) and 300 anisotropic Gaussians of
unequal weight (60,000 x 20, C = 300, :func:`make_anisotropic`), a new draw per seed. Slow
(``--slow-seeds``, one by default; labelled so in the table): MNIST and cod_rna (C = 500, from
``--data``/``CLUSTERKIT_DATA``, skipped when absent), the 500-Gaussian mixture in 32-D with
Dirichlet(1) weights and spreads in [0.5, 3] (300,000 rows), blobs (200,000 x 16,
C = 1,000), the BIRCH grid (32 x 32 Gaussians, 102,400 rows, C = 1,024) and 600
anisotropic Gaussians (150,000 x 20, C = 600). All float32. Run
with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_quality.py --write

The seconds and errors of every fit (and the curves) go to ``bench_quality.json`` (after each
data set); ``--write`` replaces the RESULTS.md section, ``docs/quality_table.inc`` and the
plot, and ``--replot bench_quality.json --write`` does so from saved measurements.
"""
import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from clusterkit import (AFKMC2, LWCS, Breathing, Clusterer, PartialEStep, SinglePointMoves,
                        presets)
from clusterkit.datasets import load_benchmark, make_birch_grid, make_gaussian_blobs
from clusterkit.metrics import quantization_error

from _common import (command_note, data_home, format_table, machine_info, publish,
                     rst_list_table, warn_openblas_overrides)
from bench_defaults import make_mixture

TITLE = "Better clusters: seeding and refinement against restarts and breathing k-means (bench_quality.py)"
ROOT = Path(__file__).resolve().parent.parent
PLOT = ROOT / "docs" / "images" / "bench_quality.png"
INCLUDE = ROOT / "docs" / "quality_table.inc"
CURVES = ROOT / "docs" / "quality_curves.inc"
SAVED = Path(__file__).with_name("bench_quality.json")

#: the centres a traced refiner held after each round of the running fit (see TracedBreathing)
TRACE = []


class TracedBreathing(Breathing):
    """:class:`~clusterkit.Breathing` that keeps a copy of the centres of every round's run
    (in :data:`TRACE`, in the fit's frame) for the error-against-time curves; it refines
    exactly as ``Breathing`` with the same parameters."""

    def refine(self, X, sample_weight, run, iterate, state):
        TRACE.append(("start", state.meter.seconds, run.centers.copy()))

        def traced(centers, **kwargs):
            new = iterate(centers, **kwargs)
            TRACE.append(("round", None, new.centers.copy()))
            return new

        return super().refine(X, sample_weight, run, traced, state)


def traced(refiner):
    """The traced twin of a ``Breathing`` refiner (same parameters)."""
    return TracedBreathing(**refiner.get_params())


def _card(C, **kw):
    return Clusterer(C, seed=AFKMC2(), reduce=LWCS(2**15), estep=PartialEStep(G=5), **kw)


def _bkmeans(C, random_state, n_threads):
    from bkmeans import BKMeans
    return BKMeans(n_clusters=C, random_state=random_state)


def _flspp(local_search_iterations=None):
    def build(C, random_state, n_threads):
        from flspp import FLSpp
        kw = {} if local_search_iterations is None else {
            "local_search_iterations": local_search_iterations}
        return FLSpp(C, random_state=random_state, **kw)
    return build


def _best_quality(C, **kw):
    model = presets.best_quality(C, **kw)
    model.refine = traced(model.refine)
    return model


#: the seconds of the fits of the running seed so far, by label (see _best_quality_timed)
SEED_SECONDS = {}


def _best_quality_timed(C, **kw):
    """``best_quality(C, budget=None, time_budget=T)``: T is half of bkmeans' seconds on the
    same data and seed (measured just before; without bkmeans, 5 times scikit-learn
    n_init=1's), so its curve holds the error at half of bkmeans' time."""
    bkmeans = SEED_SECONDS.get("bkmeans")
    seconds = 0.5 * bkmeans if bkmeans else 5 * SEED_SECONDS[REFERENCE]
    return _best_quality(C, budget=None, time_budget=seconds, **kw)


def _best_quality_moves(C, **kw):
    """``best_quality(C)`` whose breathing rounds are followed by single-point moves (not
    traced: no curve)."""
    model = presets.best_quality(C, **kw)
    model.refine = (model.refine, SinglePointMoves())
    return model


class _FuelHartiganWong:
    """fuel's Hartigan-Wong k-means (``fuel.cluster.kmeans(variant="hartigan_wong")``, its
    own k-means++ seeding) behind ``fit`` and ``cluster_centers_``."""

    def __init__(self, C, random_state):
        self.C, self.random_state = C, random_state

    def fit(self, X):
        from fuel.cluster import kmeans
        result = kmeans(X, k=self.C, variant="hartigan_wong", init="kmeans++",
                        seed=self.random_state)
        self.cluster_centers_ = np.asarray(result.centers)
        return self


def _kmeans(n_init):
    return lambda C, random_state, n_threads: KMeans(C, n_init=n_init, random_state=random_state)


#: the label of best_quality given half of bkmeans' time
TIMED = "best_quality, half bkmeans' time"
#: the label of best_quality with the D-local polish after its rounds
MOVES = "best_quality + SinglePointMoves()"
#: label -> builder(C, random_state, n_threads); the peers first
METHODS = {
    "scikit-learn n_init=1": _kmeans(1),
    "scikit-learn n_init=10": _kmeans(10),
    "bkmeans": _bkmeans,
    "FLS++": _flspp(),
    "fuel Hartigan-Wong": lambda C, random_state, n_threads: _FuelHartiganWong(C, random_state),
    "design card": lambda C, **kw: _card(C, **kw),
    "design card + Breathing()": lambda C, **kw: _card(C, refine=TracedBreathing(), **kw),
    "lwcs_lloyd": lambda C, **kw: presets.lwcs_lloyd(C, **kw),
    "lwcs_lloyd + Breathing()": lambda C, **kw: presets.lwcs_lloyd(
        C, refine=TracedBreathing(), **kw),
    "vc_gmm": lambda C, **kw: presets.vc_gmm(C, **kw),
    "vc_gmm + Breathing()": lambda C, **kw: presets.vc_gmm(C, refine=TracedBreathing(), **kw),
    "best_quality": _best_quality,
    MOVES: _best_quality_moves,
    TIMED: _best_quality_timed,
}
#: the peers' further budgets, on the plot only: label -> (builder, the curve it belongs to)
BUDGETS = {
    "scikit-learn n_init=3": (_kmeans(3), "scikit-learn"),
    "FLS++ 5 swaps": (_flspp(5), "FLS++"),
    "FLS++ 50 swaps": (_flspp(50), "FLS++"),
}
CURVE = {"scikit-learn n_init=1": "scikit-learn", "scikit-learn n_init=10": "scikit-learn",
         "FLS++": "FLS++", "best_quality": "best_quality", TIMED: TIMED}
PEERS = ("scikit-learn n_init=1", "scikit-learn n_init=10", "bkmeans", "FLS++",
         "fuel Hartigan-Wong")
MODULES = {"bkmeans": "bkmeans", "FLS++": "flspp", "FLS++ 5 swaps": "flspp",
           "FLS++ 50 swaps": "flspp", "fuel Hartigan-Wong": "fuel"}
#: rows given as float64 (converted before the clock starts): what these peers read
FLOAT64 = ("FLSpp", "_FuelHartiganWong")
#: errors within 0.01 % of each other count as equal ("at or below")
TIE = 1 + 1e-4
REFERENCE = "scikit-learn n_init=1"
FAST = ("mixture-60k", "blobs-50k", "aniso-60k")


def make_anisotropic(seed, n_samples=150_000, n_features=20, n_components=600):
    """Anisotropic Gaussians of unequal weight, float32: means uniform in [-10, 10]^D, each
    component a random linear map of a standard normal (entries N(0, 1 / D), scaled by a
    factor uniform in [0.5, 3]), Dirichlet(1) weights."""
    rng = np.random.default_rng(seed)
    means = rng.uniform(-10, 10, (n_components, n_features))
    counts = rng.multinomial(n_samples, rng.dirichlet(np.ones(n_components)))
    X = np.empty((n_samples, n_features))
    start = 0
    for mean, count in zip(means, counts):
        shape = (rng.standard_normal((n_features, n_features)) / np.sqrt(n_features)
                 * rng.uniform(0.5, 3.0))
        X[start:start + count] = mean + rng.standard_normal((count, n_features)) @ shape.T
        start += count
    return X[rng.permutation(n_samples)].astype(np.float32)


def installed(label):
    """Whether the peer ``label`` needs a module that is missing (then it is skipped)."""
    module = MODULES.get(label)
    return module is None or importlib.util.find_spec(module) is not None


def datasets(args):
    """``(name, C, data for a seed, seeds)`` of every requested data set that is available."""
    for name in args.datasets:
        seeds = args.seeds if name in FAST else args.slow_seeds
        if name in ("mnist", "cod_rna"):
            try:
                X, _ = load_benchmark("cod_rna_trn_tst" if name == "cod_rna" else name,
                                      args.data)
            except FileNotFoundError as error:
                print(f"{name} skipped: {error}", file=sys.stderr)
                continue
            X = np.ascontiguousarray(X, dtype=np.float32)
            yield name, 500, (lambda seed, X=X: X), seeds
        elif name == "mixture-60k":
            yield name, 200, (lambda seed: make_mixture(seed, 60_000, 32, 200)), seeds
        elif name == "blobs-50k":
            yield name, 250, (lambda seed: make_gaussian_blobs(
                50_000, 16, 250, random_state=seed)[0].astype(np.float32)), seeds
        elif name == "aniso-60k":
            yield name, 300, (lambda seed: make_anisotropic(seed, 60_000, 20, 300)), seeds
        elif name == "aniso":
            yield name, 600, make_anisotropic, seeds
        elif name == "mixture":
            yield name, 500, make_mixture, seeds
        elif name == "blobs":
            yield name, 1000, (lambda seed: make_gaussian_blobs(
                200_000, 16, 1000, random_state=seed)[0].astype(np.float32)), seeds
        elif name == "grid":
            yield name, 1024, (lambda seed: make_birch_grid(
                n_side=32, random_state=seed, dtype=np.float32)[0]), seeds


def fit(build, C, X, seed, n_threads):
    """Seconds of the whole fit, the quantization error of its centres on all rows, and the
    curve ``[(seconds, error), ...]`` of a traced refiner's rounds (empty otherwise)."""
    model = build(C, random_state=seed, n_threads=n_threads)
    if type(model).__name__ in FLOAT64:
        X_fit = X.astype(np.float64)
    else:
        X_fit = X
    TRACE.clear()
    with warnings.catch_warnings(), threadpool_limits(n_threads):
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model.fit(X_fit)
        seconds = time.perf_counter() - start
    centers = np.asarray(model.cluster_centers_, dtype=X.dtype)
    error = quantization_error(X, centers, n_threads=n_threads)
    return seconds, error, curve(model, X, centers, n_threads)


def curve(model, X, centers, n_threads):
    """A traced fit's error after each breathing round (the centres kept so far) at the
    fit's seconds then; ``[]`` for a fit without a traced refiner."""
    log = getattr(model, "refinement_log_", None)
    if not TRACE or log is None:
        return []
    starts = [i for i, entry in enumerate(TRACE) if entry[0] == "start"]
    trace = TRACE[starts[-1]:]  # the kept run's refinement (n_init runs refine each)
    rounds = [c for kind, _, c in trace[1:] if kind == "round"][:len(log)]
    kept, last = trace[0][2], None
    held = []
    for entry, centres in zip(log, rounds):
        if entry["kept"]:
            kept = centres
        held.append(kept)
    # the fit's frame differs from the user's by a shift (the centring): the final centres
    final = held[-1] if held else kept
    shift = (centers.astype(np.float64) - final).mean(axis=0)
    points = [(trace[0][1], None, trace[0][2])] + [
        (entry["seconds"], None, c) for entry, c in zip(log, held)]
    out = []
    for seconds, _, c in points:
        if c is not last:
            err = quantization_error(X, (c + shift).astype(X.dtype), n_threads=n_threads)
        out.append((seconds, err))
        last = c
    return out


def run_dataset(name, C, data, n_seeds, args, saved_runs):
    """Per method, one ``(seconds, error, curve)`` per seed (a skipped peer: none);
    ``saved_runs``: the data set's measurements this run is merged into (their seconds stand
    in for the methods this run leaves out, for the time budget of :data:`TIMED`)."""
    labels = [label for label in args.methods if installed(label)]
    budgets = [label for label in (args.budget_points or BUDGETS) if args.budgets
               and installed(label) and label not in labels]
    runs = {label: [] for label in labels + budgets}
    for seed in range(n_seeds):
        X = data(seed)
        SEED_SECONDS.clear()
        SEED_SECONDS.update({label: rows[seed][0] for label, rows in saved_runs.items()
                             if len(rows) > seed})
        for label in labels + budgets:
            build = METHODS[label] if label in METHODS else BUDGETS[label][0]
            seconds, error, points = fit(build, C, X, seed, args.n_threads)
            runs[label].append((seconds, error, points))
            SEED_SECONDS[label] = seconds
            ref = runs[REFERENCE][-1]
            print(f"{name} seed {seed} {label}: {seconds:.2f} s ({ref[0] / seconds:.2f}x), "
                  f"error {error:.6g} ({100 * (error / ref[1] - 1):+.2f} %)", flush=True)
    return runs


def relative(runs, label, index):
    """Per seed: the method's time (0) or error (1) over scikit-learn n_init=1's."""
    return [mine[index] / ref[index] for mine, ref in zip(runs[label], runs[REFERENCE])]


def summary_rows(name, runs):
    rows = []
    for label, results in runs.items():
        if label in BUDGETS or not results:
            continue
        error = relative(runs, label, 1)
        seconds = [r[0] for r in results]
        time_ratio = relative(runs, label, 0)
        rows.append([name if not rows else "", label,
                     f"{100 * (statistics.median(error) - 1):+.2f} %",
                     f"{100 * (min(error) - 1):+.2f} / {100 * (max(error) - 1):+.2f} %",
                     f"{statistics.median(seconds):.2f}",
                     f"{statistics.median(time_ratio):.2f}"])
    return rows


def at_time(points, seconds):
    """The error a curve holds at ``seconds`` (its last point not later), or ``None``."""
    held = [error for s, error in points if s <= seconds]
    return held[-1] if held else None


#: the times of the curve table, in multiples of scikit-learn n_init=1's seconds
CURVE_TIMES = (0.5, 1, 2, 4, 8)


def curve_row(name, runs):
    """best_quality's error against time on one data set (the curve of :data:`TIMED`):
    the error it held at each of :data:`CURVE_TIMES` and at half of bkmeans' seconds,
    median over the seeds, relative to scikit-learn n_init=1; ``None`` without the curve."""
    if not runs.get(TIMED):
        return None

    def held(seconds_of):
        errors = []
        for seed, (mine, ref) in enumerate(zip(runs[TIMED], runs[REFERENCE])):
            error = at_time(mine[2], seconds_of(seed, ref))
            errors.append(None if error is None else error / ref[1])
        if any(e is None for e in errors):
            return "-"
        if all(seconds_of(seed, ref) > mine[0] for seed, (mine, ref) in enumerate(
                zip(runs[TIMED], runs[REFERENCE]))):
            return f"({100 * (statistics.median(errors) - 1):+.2f} %)"  # (the run had ended)
        return f"{100 * (statistics.median(errors) - 1):+.2f} %"

    cells = [held(lambda seed, ref, f=f: f * ref[0]) for f in CURVE_TIMES]
    if runs.get("bkmeans"):
        bk = runs["bkmeans"]
        cells.append(held(lambda seed, ref: 0.5 * bk[seed][0]))
        cells.append(f"{100 * (statistics.median(relative(runs, 'bkmeans', 1)) - 1):+.2f} % in "
                     f"{statistics.median(relative(runs, 'bkmeans', 0)):.1f}x")
    else:
        cells += ["-", "-"]
    return [name, *cells]


def criteria(name, runs):
    """The quality targets, per data set: (check, held)."""
    med = statistics.median
    checks = []

    def err(label):
        return med(relative(runs, label, 1))

    def speedup(label, peer=REFERENCE):
        return med([p[0] / m[0] for m, p in zip(runs[label], runs[peer])])

    def time_ratio(label):
        return med(relative(runs, label, 0))

    if runs.get("design card"):
        checks.append((f"design card within +3 % at >= 30x faster ({100 * (err('design card') - 1):+.2f} %, "
                       f"{speedup('design card'):.1f}x)",
                       err("design card") <= 1.03 and speedup("design card") >= 30))
    for base in ("design card", "vc_gmm", "lwcs_lloyd"):
        refined = f"{base} + Breathing()"
        if runs.get(base) and runs.get(refined):
            left = err(refined) - 1
            # (the unrefined composition's speed-up: the most the refined one can reach)
            checks.append((f"{refined} within +3 % ({100 * left:+.2f} %) at >= 20x faster "
                           f"({speedup(refined):.1f}x faster; {base} alone "
                           f"{speedup(base):.1f}x)", left <= 0.03 and speedup(refined) >= 20))
    if runs.get("best_quality") and runs.get("scikit-learn n_init=10"):
        best, restarts = err("best_quality"), err("scikit-learn n_init=10")
        checks.append((f"best_quality (default) at or below scikit-learn n_init=10's error "
                       f"({100 * (best - 1):+.2f} % vs {100 * (restarts - 1):+.2f} %) in at "
                       f"most 2.5x n_init=1's time ({time_ratio('best_quality'):.2f}x)",
                       best <= restarts * TIE and time_ratio("best_quality") <= 2.5))
    curved = TIMED if runs.get(TIMED) else "best_quality" if runs.get("best_quality") else None
    if curved is None:
        return [[name, text, "yes" if held else "**no**"] for text, held in checks]

    def held_at(peer, share=1.0):
        """best_quality's error (relative to the reference) when ``share`` of the peer's
        seconds had passed, median over the seeds; None where its curve starts later."""
        held = [at_time(m[2], share * p[0]) for m, p in zip(runs[curved], runs[peer])]
        if any(h is None for h in held):
            return None
        return med([h / r[1] for h, r in zip(held, runs[REFERENCE])])

    if runs.get("bkmeans"):
        mine = held_at("bkmeans", 0.5)
        checks.append((f"{curved} at half of bkmeans' time at or below bkmeans' error "
                       f"({'-' if mine is None else f'{100 * (mine - 1):+.2f} %'} vs "
                       f"{100 * (err('bkmeans') - 1):+.2f} %)",
                       mine is not None and mine <= err("bkmeans") * TIE))
    early = held_at(REFERENCE)
    fast_peers = [p for p in PEERS if runs.get(p) and time_ratio(p) <= 1]
    checks.append((f"{curved} at n_init=1's time below every peer that ended by then "
                   f"({', '.join(fast_peers)}; error "
                   f"{'-' if early is None else f'{100 * (early - 1):+.2f} %'})",
                   early is not None and all(early < err(p) for p in fast_peers)))
    return [[name, text, "yes" if held else "**no**"] for text, held in checks]


#: errors above this (%) are drawn at the panel's top edge, so that they do not squash the rest
OFF_SCALE = 12.0


def plot(results, path):
    """One panel per data set: every method's error against seconds (relative to
    scikit-learn n_init=1 of the same seed); curves for traced fits and for the peers'
    budgets, seed 0 as lines, the other seeds' final points as dots."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ncols = min(4, len(results))
    nrows = -(-len(results) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 4.0 * nrows + 0.8),
                             squeeze=False)
    for ax in axes.flat[len(results):]:
        ax.set_visible(False)
    colours, palette = {}, plt.get_cmap("tab20")
    for ax, (name, runs) in zip(axes.flat, results.items()):
        ref = runs[REFERENCE]
        peer_curves = {}
        for label, rows in runs.items():
            if not rows:
                continue
            group = BUDGETS[label][1] if label in BUDGETS else CURVE.get(label)
            colour = colours.setdefault(group or label, palette(len(colours) % 20))
            peer = (group or label) in ("scikit-learn", "FLS++", "bkmeans",
                                        "fuel Hartigan-Wong")
            t = [r[0] / f[0] for r, f in zip(rows, ref)]
            e = [100 * (r[1] / f[1] - 1) for r, f in zip(rows, ref)]
            if min(e) > OFF_SCALE:  # (drawn at the top edge, its median written beside)
                ax.annotate(f"{statistics.median(e):+.0f} %", (statistics.median(t), OFF_SCALE),
                            fontsize=7, color=colour, ha="center", va="top")
                e = [OFF_SCALE] * len(e)
            ax.scatter(t, e, s=14, color=colour, marker="s" if peer else "o",
                       label=None if group and label not in CURVE else label)
            if group:
                peer_curves.setdefault(group, []).append((statistics.median(t),
                                                          statistics.median(e)))
            points = rows[0][2]
            if points:
                ax.plot([s / ref[0][0] for s, _ in points],
                        [100 * (error / ref[0][1] - 1) for _, error in points],
                        color=colour, lw=0.9, drawstyle="steps-post")
        for group, points in peer_curves.items():
            points.sort()
            ax.plot(*zip(*points), color=colours[group], lw=0.9, ls="--")
        ax.set_xscale("log")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_title(name)
        ax.set_xlabel("seconds / scikit-learn n_init=1's")
        ax.set_ylabel("error vs scikit-learn n_init=1 (%)")
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=6, fontsize=7)
    fig.tight_layout(rect=(0, 0.9 / (4.0 * nrows + 0.8), 1, 1))
    fig.savefig(path, dpi=110)


def publish_results(saved, write):
    """The tables, checks and plot of saved measurements (see :func:`measure`)."""
    results, table, checks, curves = {}, [], [], []
    for name, entry in saved["datasets"].items():
        # (measurements saved before the curves were recorded have none)
        runs = {label: [(*r[:2], r[2] if len(r) > 2 else []) for r in rows]
                for label, rows in entry["runs"].items()}
        n = len(runs[REFERENCE])
        title = f"{name}, C = {entry['C']}, {n} seed{'s' if n > 1 else ''}"
        results[title] = runs
        table += summary_rows(title, runs)
        held = criteria(name, runs)
        checks.append([name, "; ".join(t for _, t, h in held if h == "yes") or "-",
                       "; ".join(t for _, t, h in held if h != "yes") or "-"])
        if curve_row(title, runs):
            curves.append(curve_row(title, runs))
    headers = ["data", "method", "error vs scikit-learn n_init=1 (median)", "range",
               "fit s (median)", "time / scikit-learn n_init=1 (median)"]
    curve_headers = ["data", *[f"at {f}x" for f in CURVE_TIMES], "at half of bkmeans' time",
                     "bkmeans"]
    markdown = (format_table(headers, table) + "\n\n"
                + "best_quality(budget=None, time_budget=T): its error against time (the "
                "error it held at each multiple of scikit-learn n_init=1's seconds; in "
                "brackets where the fit had ended earlier), median over the seeds\n\n"
                + format_table(curve_headers, curves) + "\n\n"
                + format_table(["data", "checks held", "checks missed"], checks))
    skipped = saved.get("skipped") or []
    notes = [
        "Seeds per data set in the first column; medians over the seeds, ranges the smallest "
        "and largest. Error: quantization error of all rows to the fit's centres, computed "
        "the same way for every method; time: the whole fit (seeding, reduction, "
        f"iterations, refinement, final labels). n_threads={saved['n_threads']} "
        "(scikit-learn inside threadpool_limits, clusterkit's OpenMP kernels); bkmeans "
        "runs scikit-learn's KMeans inside, limited the same way; FLS++ is given float64 "
        "rows (converted before its clock starts).",
        "The per-seed seconds, errors and error-against-time curves (also the peers' "
        "further budgets, on the plot) are in "
        "benchmarks/bench_quality.json (`python benchmarks/bench_quality.py --replot "
        "benchmarks/bench_quality.json --write` rewrites this section, the docs table and "
        "the plot from them).",
        "Checks marked no are the targets missed; the documentation's quality page "
        "(section 'Targets missed, and what we decided') gives the evidence and the "
        "decisions.",
        saved["command"],
    ] + ([f"Not installed, skipped: {', '.join(skipped)}."] if skipped else []) + list(
        saved.get("notes", []))  # (what a run adds by hand: measurements outside the table)
    publish(TITLE, markdown, notes, write, machine_info(saved["n_threads"]))
    if write:
        plot(results, PLOT)
        INCLUDE.write_text(rst_list_table(headers, table, "bench_quality.py"),
                           encoding="utf-8")
        CURVES.write_text(rst_list_table(curve_headers, curves, "bench_quality.py"),
                          encoding="utf-8")
        print(f"wrote {PLOT.relative_to(ROOT)}, {INCLUDE.relative_to(ROOT)} and "
              f"{CURVES.relative_to(ROOT)}")


def measure(args):
    """Fit every method on every data set; the seconds, errors and curves, saved to
    ``args.save`` after each data set."""
    skipped = sorted({MODULES[label] for label in [*args.methods, *BUDGETS]
                      if not installed(label)})
    for module in skipped:
        print(f"{module} is not installed: its methods are skipped", file=sys.stderr)
    saved = {"n_threads": args.n_threads, "command": command_note(), "skipped": skipped,
             "datasets": {}}
    if args.merge:  # add this run's methods to saved measurements (their reference kept)
        saved = json.loads(Path(args.merge).read_text(encoding="utf-8"))
        saved["command"] += "; then " + command_note().removeprefix("Command: ")
    for name, C, data, n_seeds in datasets(args):
        runs = run_dataset(name, C, data, n_seeds, args,
                           saved["datasets"].get(name, {}).get("runs", {}) if args.merge
                           else {})
        if args.merge and name in saved["datasets"]:
            runs = {**runs, **saved["datasets"][name]["runs"], **{
                label: rows for label, rows in runs.items() if label != REFERENCE}}
        saved["datasets"][name] = {"C": C, "runs": runs}
        Path(args.save).write_text(json.dumps(saved, indent=1), encoding="utf-8")
    return saved


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = ["mixture-60k", "blobs-50k", "aniso-60k", "mnist", "cod_rna", "mixture", "blobs",
             "grid", "aniso"]
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz and "
                        "cod_rna_trn_tst.npz (default: $CLUSTERKIT_DATA)")
    parser.add_argument("--datasets", nargs="+", default=names, choices=names)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS),
                        help=f"a subset (always with {REFERENCE!r}, the reference)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the fast data sets")
    parser.add_argument("--slow-seeds", type=int, default=1,
                        help="seeds of the others (MNIST, cod_rna, the large mixture, "
                        "blobs and grid)")
    parser.add_argument("--no-budgets", dest="budgets", action="store_false",
                        help="leave out the further budgets (plot points)")
    parser.add_argument("--budget-points", nargs="+", choices=list(BUDGETS),
                        help="only these further budgets (default: all)")
    parser.add_argument("--merge", metavar="JSON",
                        help="add this run's methods to saved measurements (their "
                        f"{REFERENCE!r} runs stay the reference)")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--save", default=str(SAVED),
                        help="where the measurements go (JSON, after each data set)")
    parser.add_argument("--replot", metavar="JSON",
                        help="publish saved measurements instead of measuring")
    parser.add_argument("--write", action="store_true",
                        help="write the RESULTS.md section, docs/quality_table.inc and the plot")
    args = parser.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.n_threads))  # (fuel's threads)
    if args.replot:
        saved = json.loads(Path(args.replot).read_text(encoding="utf-8"))
    else:
        if REFERENCE not in args.methods:
            args.methods.insert(0, REFERENCE)
        warn_openblas_overrides()
        saved = measure(args)
    publish_results(saved, args.write)


if __name__ == "__main__":
    main()
