"""Seconds per iteration against the number of clusters: full E-step against partial E-step.

At fixed N and D (default N=200,000, D=16, Gaussian blobs), one fit per number of clusters
C (default 256, 1024, 4096, 16384) of

* Lloyd's k-means (``FullEStep`` + ``HardMStep``): ``N C`` distance evaluations per iteration,
  so its time per iteration should grow about linearly in C;
* var-k-means-S (``PartialEStep(G=5)`` with one exploratory cluster + ``HardMStep``, preset
  ``var_kmeans_s``): at most ``N (G + 1)`` distance evaluations per iteration whatever C,
  so its time per iteration should stay nearly flat (Forster & Lücke 2018, Table 1).

Both start from the same random rows of the data (``seed="random"``; seeding is not part of
what is measured) and run with ``tol=0`` for a few iterations only. Seconds per iteration are
the median of the differences between consecutive ``history_[i]["seconds"]``, so seeding,
initialisation and the first iteration are excluded. Prints a Markdown table; with
``--write`` saves it as ``scaling.md`` and a log-log plot as ``scaling.png`` next to this script
(or in ``--out``) and appends it to ``RESULTS.md``.

Run ``python benchmarks/bench_scaling.py --help`` for the options. Benchmarks must run with the
OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_scaling.py --write
"""
import argparse
import shlex
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from clusterkit import EStep, presets
from clusterkit.datasets import make_gaussian_blobs

from _common import (RESULTS_PATH, write_results, format_machine_info, format_table,
                     machine_info, warn_openblas_overrides)

HERE = Path(__file__).resolve().parent

# The clusterkit fits here run max_iter iterations on purpose (tol=0).
warnings.filterwarnings("ignore", message="The fit did not converge",
                        category=ConvergenceWarning)

# Acceptance: the partial E-step's time per iteration stays within this factor of its value at
# the smallest C.
PARTIAL_MAX_GROWTH = 2.0


class _TimedEStep(EStep):
    """Wraps an E-step and records the wall time of every ``assign`` call (bookkeeping)."""

    def __init__(self, estep):
        self.estep = estep
        self.seconds = []

    def _validate(self, X, n_clusters):
        self.estep._validate(X, n_clusters)

    def init_state(self, X, sample_weight, centers, state):
        return self.estep.init_state(X, sample_weight, centers, state)

    def assign(self, X, sample_weight, centers, state):
        t0 = time.perf_counter()
        assignment = self.estep.assign(X, sample_weight, centers, state)
        self.seconds.append(time.perf_counter() - t0)
        return assignment


def _seconds_per_iteration(est):
    """Median time between consecutive iterations of a fitted estimator."""
    seconds = [h["seconds"] for h in est.history_]
    return statistics.median(np.diff(seconds)), len(seconds) - 1


def _fit(make, X, max_iter, n_threads):
    est = make(max_iter=max_iter, tol=0, seed="random", random_state=0, n_threads=n_threads,
               compute_labels=False)
    timed = _TimedEStep(est.estep)
    est.set_params(estep=timed)
    cpu0, t0 = time.process_time(), time.perf_counter()
    est.fit(X)
    busy = (time.process_time() - cpu0) / (time.perf_counter() - t0)
    per_iter, n_diffs = _seconds_per_iteration(est)
    # the E-step's share, over the same iterations (the first one excluded)
    estep = statistics.median(timed.seconds[1:]) if len(timed.seconds) > 1 else np.nan
    return dict(per_iter=per_iter, n_diffs=n_diffs, busy=busy, estep=estep,
                evals=est.cost_["estep"] / est.n_iter_, n_iter=est.n_iter_)


def _plot(path, clusters, full, partial, partial_estep, n_samples, n_features, n_threads):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.loglog(clusters, full, "o-", label="full E-step (Lloyd)")
    ax.loglog(clusters, partial, "s-", label="var-k-means-S (partial E-step, G=5+1)")
    ax.loglog(clusters, partial_estep, "^-", label="its partial E-step alone")
    c = np.asarray(clusters, dtype=float)
    ax.loglog(c, full[0] * c / c[0], ":", color="grey", label="linear in C (from C=%d)" % c[0])
    ax.loglog(c, np.full_like(c, PARTIAL_MAX_GROWTH * partial[0]), "--", color="grey",
              label="%g x var-k-means-S at C=%d" % (PARTIAL_MAX_GROWTH, c[0]))
    ax.set_xlabel("number of clusters C")
    ax.set_ylabel("seconds per iteration")
    ax.set_xticks(c)
    ax.set_xticklabels([str(int(v)) for v in c])
    ax.set_title(f"N={n_samples:,}, D={n_features}, {n_threads} threads")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python "
               "benchmarks/bench_scaling.py --write",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--n-threads", type=int, default=2, help="OpenMP threads")
    parser.add_argument("--n-samples", type=int, default=200_000)
    parser.add_argument("--n-features", type=int, default=16)
    parser.add_argument("--clusters", type=int, nargs="+", default=[256, 1024, 4096, 16384])
    parser.add_argument("--full-iter", type=int, default=4,
                        help="iterations of the full E-step fits (the largest C runs one less)")
    parser.add_argument("--partial-iter", type=int, default=12,
                        help="iterations of the partial E-step fits")
    parser.add_argument("--G", type=int, default=5,
                        help="neighbourhood size of the partial E-step")
    parser.add_argument("--out", type=Path, default=HERE,
                        help="folder for scaling.md and scaling.png (written with --write)")
    parser.add_argument("--write", action="store_true",
                        help=f"write scaling.md and scaling.png and append the table to "
                             f"{RESULTS_PATH.name}")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH,
                        help="results file used by --write")
    args = parser.parse_args(argv)

    warn_openblas_overrides()
    info = machine_info(args.n_threads)
    print(format_machine_info(info), flush=True)
    n, d = args.n_samples, args.n_features
    clusters = sorted(args.clusters)
    full, partial = [], []
    for C in clusters:
        X, _, _ = make_gaussian_blobs(n, d, C, random_state=0)
        full_iter = args.full_iter - (1 if C == clusters[-1] and len(clusters) > 1 else 0)
        # at least two iterations: the first one is not timed
        full_iter, partial_iter = max(full_iter, 2), max(args.partial_iter, 2)
        print(f"[scaling] C={C}: full E-step, {full_iter} iterations ...", flush=True)
        full.append(_fit(lambda **kw: presets.lloyd(C, **kw), X, full_iter, args.n_threads))
        print(f"[scaling] C={C}: partial E-step, {partial_iter} iterations ...", flush=True)
        partial.append(_fit(lambda **kw: presets.var_kmeans_s(C, G=args.G, n_explore=1, **kw),
                            X, partial_iter, args.n_threads))
    f0, p0 = full[0]["per_iter"], partial[0]["per_iter"]
    rows = []
    for C, f, p in zip(clusters, full, partial):
        rows.append([C, f"{f['per_iter']:.4f}", f"{f['per_iter'] / f0:.2f}x",
                     f"{C / clusters[0]:.0f}x", f"{f['evals'] / n:.0f} N",
                     f"{p['per_iter']:.4f}", f"{p['per_iter'] / p0:.2f}x",
                     f"{p['estep']:.4f} ({p['estep'] / partial[0]['estep']:.2f}x)",
                     f"{p['evals'] / n:.2f} N", f"{f['per_iter'] / p['per_iter']:.1f}x",
                     f"{f['busy']:.2f} / {p['busy']:.2f}"])
    headers = ["C", "full s/iter", "full vs first C", "C vs first C", "full d-evals/iter",
               "partial s/iter", "partial vs first C", "partial: E-step alone s (vs first C)",
               "partial d-evals/iter",
               "full / partial time", "CPU/wall full / partial"]
    table = format_table(headers, rows)
    growth = max(p["per_iter"] for p in partial) / p0
    full_growth = full[-1]["per_iter"] / f0
    c_growth = clusters[-1] / clusters[0]
    ok = growth <= PARTIAL_MAX_GROWTH
    shown = Path("benchmarks") if args.out.resolve() == HERE else args.out  # as in the repo
    notes = [
        "Command: `" + " ".join(shlex.quote(a) for a in ["python", *sys.argv]) + "`",
        f"Data: `make_gaussian_blobs({n}, {d}, C, random_state=0)` (centres uniform in "
        "[-10, 10]^D, unit variance), float64; a new data set per C. Both algorithms start from "
        "`seed='random'` (C random rows, `random_state=0`), `tol=0`, "
        f"`n_threads={args.n_threads}`, `compute_labels=False`.",
        "Seconds per iteration: median of the differences between consecutive "
        "`history_[i]['seconds']` of one fit (E-step + M-step + bookkeeping; seeding, the "
        "partial E-step's initialisation and the first iteration excluded). Iterations timed "
        "(differences): full " + ", ".join(f"C={C}: {f['n_diffs']}" for C, f in
                                         zip(clusters, full))
        + "; partial " + ", ".join(f"C={C}: {p['n_diffs']}" for C, p in zip(clusters, partial))
        + ". 'E-step alone' is the median wall time of the partial E-step's `assign` calls "
        "(iterations 2 on), measured by a thin wrapper; the rest of an iteration is the M-step "
        "(with the relocation of empty clusters) and the driver's bookkeeping. 'd-evals/iter' "
        "is `cost_['estep'] / n_iter_`.",
        f"Full E-step: time per iteration grew {full_growth:.1f}x while C grew {c_growth:.0f}x "
        "(linear would be equal).",
        f"Partial E-step (G={args.G}+1): largest time per iteration / value at C={clusters[0]} "
        f"= {growth:.2f} (target <= {PARTIAL_MAX_GROWTH:g}): {'MET' if ok else 'MISSED'}.",
        "The partial E-step's `assign` alone: largest time / value at C="
        f"{clusters[0]} = {max(p['estep'] for p in partial) / partial[0]['estep']:.2f}.",
        f"Plot: `{shown / 'scaling.png'}`; table: `{shown / 'scaling.md'}`.",
    ]
    title = (f"### Seconds per iteration against C, N={n:,}, D={d}: full vs partial E-step\n\n")
    print("\n" + title + table + "\n")
    print("\n".join(f"- {x}" for x in notes))
    if args.write:
        args.out.mkdir(parents=True, exist_ok=True)
        _plot(args.out / "scaling.png", clusters, [f["per_iter"] for f in full],
              [p["per_iter"] for p in partial], [p["estep"] for p in partial], n, d,
              args.n_threads)
        (args.out / "scaling.md").write_text(
            title + table + "\n\n" + "\n".join(f"- {x}" for x in notes) + "\n\n"
            + format_machine_info(info) + "\n", encoding="utf-8")
        write_results(args.results, "Scaling in C: full against partial E-step",
                       title + table, notes, info)
        print(f"\nWrote {args.out / 'scaling.md'}, {args.out / 'scaling.png'} and appended "
              f"to {args.results}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
