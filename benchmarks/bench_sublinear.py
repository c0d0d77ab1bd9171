"""var-k-means and var-GMM on the BIRCH grid: Forster & Lücke (2018), Table 2, and wall time.

Two parts, each run in this one process with every library pinned to ``--n-threads`` threads:

``table2``
    The BIRCH rows of Table 2 of Forster & Lücke (2018): for C=2025 (N=202,500) and C=4096
    (N=409,600), 5 seeds, AFK-MC² seeding (chain length 2) shared by every algorithm of a seed,
    k-means (clusterkit's Lloyd) against var-k-means-S and var-GMM-S with G=2+1 and G=5+1.
    Per variant: distance evaluations per iteration relative to k-means (whose full E-step
    makes N C per iteration, as does a full GMM E-step), quantization error relative to
    k-means, iterations and seconds.
``wall``
    Wall time on C=4096: scikit-learn's ``KMeans(init="k-means++", n_init=1)`` against
    var-k-means-S (G=5+1, seeding included) with several seeders, each stopped as soon as its
    quantization error reaches scikit-learn's final one. Reports the time ratio.

Run ``python benchmarks/bench_sublinear.py --help`` for the options. Benchmarks must run with
the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_sublinear.py --write
"""
import argparse
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from clusterkit import AFKMC2, FitState, KMeansPlusPlus, SampledSeeder, Seeder
from clusterkit import presets
from clusterkit.datasets import make_birch_grid
from clusterkit.metrics import quantization_error

from _common import (RESULTS_PATH, write_results, format_machine_info, format_table,
                     machine_info, warn_openblas_overrides)

PARTS = ("table2", "wall")

# Forster & Lücke (2018), Table 2, BIRCH rows: (C, G) -> (var-k-means-S speed-up, q.err,
# var-GMM-S theoretical / measured speed-up, q.err); q.err relative to k-means in percent.
PAPER = {
    (2025, 2): ("675x", "-2.8%", "405x / 458x", "-4.6%"),
    (2025, 5): ("338x", "-4.3%", "78x / 143x", "-9.1%"),
    (4096, 2): ("1365x", "-3.7%", "819x / 927x", "-4.4%"),
    (4096, 5): ("683x", "-4.0%", "158x / 287x", "-11.7%"),
}
# Acceptance targets for G=5+1: minimum speed-up per iteration; the error must be <= k-means'.
TARGET_SPEEDUP = {"var-k-means-S": 300, "var-GMM-S": 75}
TARGET_WALL_RATIO = 50


def _sizes(text, n):
    values = tuple(int(v) for v in text.split(","))
    if len(values) != n:
        raise argparse.ArgumentTypeError(f"expected {n} comma-separated integers, got {text!r}")
    return values


class _TimedSeeder(Seeder):
    """Wraps a seeder and records how long its ``seed`` call took (benchmark bookkeeping)."""

    def __init__(self, seeder):
        self.seeder = seeder
        self.seconds = None

    def _validate(self, X, n_clusters):
        self.seeder._validate(X, n_clusters)

    def seed(self, X, sample_weight, n_clusters, state):
        t0 = time.perf_counter()
        centers = self.seeder.seed(X, sample_weight, n_clusters, state)
        self.seconds = time.perf_counter() - t0
        return centers


def _afkmc2_seeds(X, n_clusters, seed, n_threads):
    """AFK-MC² (chain length 2) centres for one seed, with their time and distance count."""
    state = FitState(n_clusters=n_clusters, n_features=X.shape[1],
                     random_state=np.random.RandomState(seed), n_threads=n_threads)
    t0 = time.perf_counter()
    centers = AFKMC2(chain_length=2, n_candidates=1).seed(X, np.ones(X.shape[0], dtype=X.dtype), n_clusters,
                                           state)
    return centers, time.perf_counter() - t0, state.meter.cost["seeding"]


def _timed_fit(est, X):
    cpu0, t0 = time.process_time(), time.perf_counter()
    est.fit(X)
    wall = time.perf_counter() - t0
    return est, wall, (time.process_time() - cpu0) / wall


def _mean(values):
    return statistics.fmean(values)


def _pct(x):
    return f"{100 * x:+.1f}%"


# -- part 1: Table 2 -----------------------------------------------------------------------------

VARIANTS = (("var-k-means-S", presets.var_kmeans_s), ("var-GMM-S", presets.var_gmm_s))


def part_table2(args, notes):
    out = []
    checks = []
    for n_side in args.sides:
        X, _, true_means = make_birch_grid(n_side=n_side, n_per_cluster=100, random_state=0)
        n_samples, n_clusters = X.shape[0], n_side ** 2
        full = n_samples * n_clusters  # distance evaluations of one full E-step
        qe_true = quantization_error(X, true_means, n_threads=args.n_threads)
        print(f"[table2] make_birch_grid(n_side={n_side}, random_state=0): N={n_samples}, "
              f"C={n_clusters}", flush=True)
        runs = {}  # name -> list of per-seed dicts
        seed_times = []
        for s in range(args.seeds):
            centers, t_seed, seed_evals = _afkmc2_seeds(X, n_clusters, s, args.n_threads)
            seed_times.append(t_seed)
            common = dict(seed=centers, random_state=s, n_threads=args.n_threads,
                          max_iter=args.max_iter, compute_labels=False)
            print(f"[table2] C={n_clusters} seed {s}: k-means ...", flush=True)
            km, wall, busy = _timed_fit(presets.lloyd(n_clusters, **common), X)
            qe_km = quantization_error(X, km.cluster_centers_, n_threads=args.n_threads)
            runs.setdefault("k-means", []).append(dict(
                qe=qe_km, iters=km.n_iter_, evals=km.cost_["estep"], esteps=km.n_iter_,
                seconds=wall, busy=busy))
            for name, preset in VARIANTS:
                for G in args.G:
                    for nie in args.n_init_esteps:
                        label = f"{name} {G}+1" + (f", {nie} init. E-steps" if nie else "")
                        print(f"[table2] C={n_clusters} seed {s}: {label} ...", flush=True)
                        est, wall, busy = _timed_fit(
                            preset(n_clusters, G=G, n_explore=1, n_init_esteps=nie,
                                   init="random", **common), X)
                        qe = quantization_error(X, est.cluster_centers_, n_threads=args.n_threads)
                        runs.setdefault((name, G, nie), []).append(dict(
                            qe=qe, iters=est.n_iter_, evals=est.cost_["estep"],
                            esteps=est.n_iter_ + nie, seconds=wall, busy=busy, qe_km=qe_km))
        km_runs = runs.pop("k-means")
        qe_km_mean = _mean([r["qe"] for r in km_runs])
        rows = [["k-means (Lloyd)", "-", "N C", "1x", "1x", f"{qe_km_mean / qe_true:.3f}",
                 "0 (reference)", "-",
                 f"{_mean([r['iters'] for r in km_runs]):.1f}",
                 f"{_mean([r['seconds'] for r in km_runs]):.2f}", "-", "-"]]
        for (name, G, nie), rs in runs.items():
            per_iter = _mean([r["evals"] / r["iters"] for r in rs])
            per_estep = _mean([r["evals"] / r["esteps"] for r in rs])
            rel = _mean([r["qe"] for r in rs]) / qe_km_mean - 1
            n_worse = sum(r["qe"] > r["qe_km"] for r in rs)
            paper = PAPER.get((n_clusters, G))
            paper_cells = ["-", "-"]
            if paper is not None:
                paper_cells = ([paper[0], paper[1]] if name == "var-k-means-S"
                               else [paper[2], paper[3]])
            theory = n_clusters / (G + 1 if name == "var-k-means-S" else G * G + 1)
            rows.append([
                name, f"{G}+1, {nie}", f"{per_iter / n_samples:.2f} N",
                f"{full / per_iter:.0f}x", f"{full / per_estep:.0f}x (theory {theory:.0f}x)",
                f"{_mean([r['qe'] for r in rs]) / qe_true:.3f}", _pct(rel),
                f"{n_worse}/{len(rs)}", f"{_mean([r['iters'] for r in rs]):.1f}",
                f"{_mean([r['seconds'] for r in rs]):.2f}", *paper_cells])
            if G == 5 and name in TARGET_SPEEDUP:
                ok = full / per_iter >= TARGET_SPEEDUP[name] and rel <= 0
                checks.append(
                    f"C={n_clusters}, {name} 5+1 with {nie} initial E-steps: "
                    f"{full / per_iter:.0f}x fewer distance evaluations per iteration "
                    f"({full / per_estep:.0f}x per E-step), error {_pct(rel)} vs k-means "
                    f"(target >= {TARGET_SPEEDUP[name]}x and <= 0): "
                    f"{'MET' if ok else 'MISSED'}")
        headers = ["algorithm", "G, init. E-steps", "d-evals / iteration",
                   "speed-up / iteration", "speed-up / E-step", "QE / QE(true means)",
                   "QE vs k-means", "seeds worse than k-means", "iterations", "fit s",
                   "paper speed-up", "paper QE vs k-means"]
        out.append(f"#### C={n_clusters}, N={n_samples} (make_birch_grid(n_side={n_side}), "
                   f"{args.seeds} seeds)\n\n" + format_table(headers, rows))
        busy = _mean([r["busy"] for rs in [km_runs, *runs.values()] for r in rs])
        notes.append(
            f"C={n_clusters}: AFK-MC² seeding (chain length 2) took {_mean(seed_times):.3f} s "
            f"on average ({seed_evals:,} distance evaluations) and is excluded from 'fit s'; "
            f"mean CPU/wall of the fits {busy:.2f}. QE(true means) = {qe_true:,.0f} "
            f"(quantization error of the generating means on this draw).")
    notes[:0] = checks
    return ("### 1. Forster & Lücke (2018), Table 2, BIRCH rows\n\n" + "\n\n".join(out)), checks


# -- part 2: wall time against scikit-learn ------------------------------------------------------

def _reach_cell(runs, threshold):
    """'k/n: mean s, ratio lo-hi' over the runs that reached ``threshold`` times sk's QE."""
    reached = [r for r in runs if r["reach"][threshold] is not None]
    if not reached:
        return f"0/{len(runs)}"
    ratios = sorted(r["t_sk"] / r["reach"][threshold] for r in reached)
    mean_s = _mean([r["reach"][threshold] for r in reached])
    return (f"{len(reached)}/{len(runs)}: {mean_s:.2f} s, "
            f"ratio {ratios[0]:.3g}x-{ratios[-1]:.3g}x")


def _parse_seeder(spec, n_clusters):
    """``afkmc2:M``, ``kpp:L`` (greedy k-means++ with L trials, 0 = default rule),
    ``sample:K:L`` (the same on a uniform sample of K * n_clusters rows) or ``default`` (the
    presets' default)."""
    parts = spec.split(":")
    if parts[0] == "default":
        return presets._default_seed(), "preset default: " + repr(presets._default_seed())
    if parts[0] == "afkmc2" and len(parts) == 2:
        seeder = AFKMC2(chain_length=int(parts[1]), n_candidates=1)
        return seeder, repr(seeder)
    if parts[0] == "kpp" and len(parts) == 2:
        seeder = KMeansPlusPlus(n_local_trials=int(parts[1]) or None)
        return seeder, repr(seeder)
    if parts[0] == "sample" and len(parts) == 3:
        k, n_trials = int(parts[1]), int(parts[2])
        inner = KMeansPlusPlus(n_local_trials=n_trials or None)
        return (SampledSeeder(inner, size=k * n_clusters),
                f"SampledSeeder({inner!r}, size={k} C)")
    raise argparse.ArgumentTypeError(f"Unknown seeder spec {spec!r}.")


def _parse_run(text):
    seeder, _, nie = text.partition("/")
    return seeder, int(nie or 0)


def part_wall(args, notes):
    n_side = args.wall_side
    X, _, true_means = make_birch_grid(n_side=n_side, n_per_cluster=100, random_state=0)
    n_samples, n_clusters = X.shape[0], n_side ** 2
    qe_true = quantization_error(X, true_means, n_threads=args.n_threads)
    print(f"[wall] make_birch_grid(n_side={n_side}, random_state=0): N={n_samples}, "
          f"C={n_clusters}", flush=True)
    thresholds = (1.0, 1.02, 1.05)
    sk_rows, runs = [], {}
    for s in range(args.wall_seeds):
        print(f"[wall] seed {s}: scikit-learn KMeans ...", flush=True)
        with threadpool_limits(limits=args.n_threads):
            cpu0, t0 = time.process_time(), time.perf_counter()
            sk = KMeans(n_clusters, init="k-means++", n_init=1, random_state=s).fit(X)
            t_sk = time.perf_counter() - t0
            busy_sk = (time.process_time() - cpu0) / t_sk
        qe_sk = sk.inertia_
        sk_rows.append([s, f"{t_sk:.1f}", sk.n_iter_, f"{qe_sk / qe_true:.4f}",
                        f"{busy_sk:.2f}", getattr(sk, "_n_threads", "?")])
        for spec, nie in args.wall_runs:
            seeder, seeder_name = _parse_seeder(spec, n_clusters)
            timed = _TimedSeeder(seeder)
            trace = []

            def callback(info, trace=trace, qe_sk=qe_sk):
                trace.append((info["seconds"], info["qe"]))
                return info["qe"] <= qe_sk

            label = f"{seeder_name}, {nie} init. E-steps"
            print(f"[wall] seed {s}: var-k-means-S 5+1, {label} ...", flush=True)
            # k-means++ on all the data labels the samples and K(n) starts at their nearest
            # seed; other seeders leave the paper's random start
            init = "auto" if spec == "default" or spec.startswith("kpp") else "random"
            est = presets.var_kmeans_s(
                n_clusters, G=5, n_explore=1, n_init_esteps=nie, init=init, seed=timed,
                random_state=s,
                n_threads=args.n_threads, tol=0, max_iter=args.wall_max_iter,
                compute_labels=False, callback=callback)
            est, wall, busy = _timed_fit(est, X)
            reach = {th: next((sec for sec, qe in trace if qe <= th * qe_sk), None)
                     for th in thresholds}
            runs.setdefault(label, []).append(dict(
                t_sk=t_sk, reach=reach, t_seed=timed.seconds, wall=wall, busy=busy,
                best=min(qe for _, qe in trace) / qe_sk, iters=est.n_iter_,
                seed_evals=est.cost_["seeding"]))
    sk_table = format_table(["seed", "fit s", "iterations", "QE / QE(true means)",
                             "CPU/wall", "KMeans._n_threads"], sk_rows)
    rows, checks = [], []
    for label, rs in runs.items():
        cells = [_reach_cell(rs, th) for th in thresholds]
        n_reached = sum(r["reach"][1.0] is not None for r in rs)
        min_ratio = (min(r["t_sk"] / r["reach"][1.0] for r in rs) if n_reached == len(rs)
                     else 0.0)
        ok = n_reached == len(rs) and min_ratio >= TARGET_WALL_RATIO
        rows.append([label, f"{_mean([r['t_seed'] for r in rs]):.2f}",
                     f"{_mean([r['seed_evals'] for r in rs]):.3g}", *cells,
                     f"{_pct(min(r['best'] for r in rs) - 1)} to "
                     f"{_pct(max(r['best'] for r in rs) - 1)}",
                     f"{_mean([r['iters'] for r in rs]):.1f}",
                     f"{_mean([r['wall'] for r in rs]):.2f}",
                     f"{_mean([r['busy'] for r in rs]):.2f}"])
        reached = (f"reached scikit-learn's QE in every seed, at least {min_ratio:.3g}x sooner"
                   if n_reached == len(rs) else
                   f"reached scikit-learn's QE in {n_reached}/{len(rs)} seeds")
        checks.append(f"C={n_clusters}, var-k-means-S 5+1, {label}: {reached} (target >= "
                      f"{TARGET_WALL_RATIO}x in every seed): {'MET' if ok else 'MISSED'}")
    headers = ["seeding, initial E-steps", "seeding s", "seeding d-evals",
               "reach QE(sk): seeds, mean s, sk s / s",
               "reach 1.02 QE(sk)", "reach 1.05 QE(sk)", "lowest QE vs sk (range over seeds)",
               "iterations", "fit s", "CPU/wall"]
    notes.extend(checks)
    notes.append(
        f"Wall part: scikit-learn's `KMeans({n_clusters}, init='k-means++', n_init=1, "
        f"random_state=seed)` inside `threadpool_limits({args.n_threads})`; its final "
        "`inertia_` is the target QE. var-k-means-S runs with `tol=0`, "
        f"`max_iter={args.wall_max_iter}`, `compute_labels=False` and a callback that records "
        "(`info['seconds']`, `info['qe']`) per iteration and stops the fit once the QE is at "
        "or below the target. `info['seconds']` counts from the start of `fit`, so seeding "
        "and initial E-steps are included. `info['qe']` is the quantization error of the "
        "partial E-step's assignment for the centres before that iteration's M-step, an upper "
        "bound on their exact error, so the reach times are conservative. 'reach' cells: "
        "seeds that reached the threshold, their mean time, and the range of scikit-learn's "
        "fit time over ours.")
    return (f"### 2. Wall time, C={n_clusters}, N={n_samples}: var-k-means-S (G=5+1) against "
            "scikit-learn KMeans\n\n#### scikit-learn KMeans(init='k-means++', n_init=1)\n\n"
            + sk_table + "\n\n#### var-k-means-S 5+1 until it reaches scikit-learn's QE\n\n"
            + format_table(headers, rows)), checks


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python "
               "benchmarks/bench_sublinear.py --write",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--n-threads", type=int, default=2,
                        help="threads for every library (OpenMP and BLAS)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="which parts to run")
    parser.add_argument("--sides", type=int, nargs="+", default=[45, 64],
                        help="BIRCH grid sides of part 'table2' (C = side**2, N = 100 C)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of part 'table2'")
    parser.add_argument("--G", type=int, nargs="+", default=[2, 5],
                        help="neighbourhood sizes of part 'table2' (each with +1 exploration)")
    parser.add_argument("--n-init-esteps", type=int, nargs="+", default=[0, 5],
                        help="initial E-steps of the variational runs of part 'table2' (each "
                             "value is one set of rows)")
    parser.add_argument("--max-iter", type=int, default=200,
                        help="max_iter of part 'table2' (the paper allows 200 on BIRCH)")
    parser.add_argument("--wall-side", type=int, default=64,
                        help="BIRCH grid side of part 'wall'")
    parser.add_argument("--wall-seeds", type=int, default=5, help="seeds of part 'wall'")
    parser.add_argument("--wall-runs", type=_parse_run, nargs="+",
                        default=[("default", 0), ("kpp:0", 0), ("afkmc2:2", 0)],
                        metavar="SEEDER/INIT_ESTEPS",
                        help="var-k-means-S runs of part 'wall': seeder 'default', 'afkmc2:M', "
                             "'kpp:L' (greedy k-means++ with L trials, 0 = scikit-learn's "
                             "rule) or 'sample:K:L' (the same on a uniform sample of K*C "
                             "rows), then '/' and the number of initial E-steps")
    parser.add_argument("--wall-max-iter", type=int, default=200,
                        help="max_iter of the var-k-means-S runs of part 'wall'")
    parser.add_argument("--write", action="store_true",
                        help=f"append the tables to {RESULTS_PATH.name}")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH,
                        help="results file used by --write")
    args = parser.parse_args(argv)

    warn_openblas_overrides()
    info = machine_info(args.n_threads)
    print(format_machine_info(info), flush=True)
    notes = [
        "Command: `" + " ".join(shlex.quote(a) for a in ["python", *sys.argv]) + "`",
        f"Threads: clusterkit gets `n_threads={args.n_threads}`; scikit-learn runs inside "
        f"`threadpoolctl.threadpool_limits({args.n_threads})`. Data float64.",
    ]
    tables, checks = [], []
    if "table2" in args.parts:
        table, part_checks = part_table2(args, notes)
        tables.append(table)
        checks += part_checks
        notes.append(
            "Table 2 part: one AFK-MC² seeding (chain length 2, `random_state=seed`) per seed "
            "is shared by k-means and every variational run of that seed, as in the paper "
            "(k-means there is Lloyd from the same seeds). Presets `lloyd`, `var_kmeans_s` and "
            f"`var_gmm_s` with `max_iter={args.max_iter}`, default `tol=1e-4` (relative change "
            "of the objective: the QE for k-means and var-k-means, the truncated free energy "
            "for var-GMM) and `compute_labels=False`; the QE is computed afterwards with "
            "`clusterkit.metrics.quantization_error` from the final centres (exact nearest "
            "centres, outside the timing). 'QE vs k-means' compares the means over seeds, as "
            "the paper does; 'seeds worse' counts seeds whose QE is above k-means' QE of the "
            "same seed.")
        notes.append(
            "How distance evaluations are counted: 'd-evals / iteration' is `cost_['estep'] / "
            "n_iter_` averaged over seeds, where `cost_['estep']` includes the initial E-steps "
            "(each costs as much as an iteration's E-step) and `n_iter_` counts E-step plus "
            "M-step iterations only; 'speed-up / iteration' is N C divided by it. 'speed-up / "
            "E-step' divides by every E-step instead (`n_iter_` + initial E-steps), which is "
            "what the paper's per-iteration figures measure (its Fig. 3 counts initial E-steps "
            "as iterations). 'theory' is C / (G + 1) for var-k-means and C / (G^2 + 1) for "
            "var-GMM (no overlap between neighbourhoods). Seeding and the final exact QE are "
            "not counted.")
    if "wall" in args.parts:
        table, part_checks = part_wall(args, notes)
        tables.append(table)
        checks += part_checks
    markdown = "\n\n".join(tables)
    print("\n" + markdown + "\n")
    print("\n".join(f"- {n}" for n in notes))
    if args.write:
        write_results(args.results, "Sublinear clustering: var-k-means / var-GMM on BIRCH",
                       markdown, notes, info)
        print(f"\nAppended to {args.results}")
    return 0 if all(c.endswith("MET") for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
