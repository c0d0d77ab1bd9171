"""Lloyd's k-means, k-means++/AFK-MC2 seeding and the assignment kernel against their peers.

Four parts, each timed in this one process (median of repeats, threads pinned):

``lloyd``
    20 Lloyd iterations on Gaussian blobs (N=200,000, D=64, C=256) from identical initial
    centres: clusterkit ``Clusterer(estep=FullEStep(), mstep=HardMStep())`` against
    scikit-learn's ``KMeans(algorithm="lloyd")`` (and faiss's ``Kmeans``, float32, if
    installed), float64 and float32, with a parity check of the final inertia and labels.
``birch``
    The same on the 2-D BIRCH grid with C=1024 (N=102,400), where few features and many
    clusters favour a direct distance loop over gemm.
``seeding``
    AFK-MC2 (chain length 200) and greedy k-means++ of clusterkit against scikit-learn's
    ``kmeans_plusplus`` on N=1,000,000, D=16, C=1,000: time and quantization error.
``cutoff``
    Distance evaluations per second of the exact assignment kernel for D = 1..16 (C=1024,
    N=100,000) on both sides of its direct-loop/gemm switch ``GEMM_MIN_FEATURES``.

Run ``python benchmarks/bench_lloyd.py --help`` for the options. Benchmarks must run with the
OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_lloyd.py --write
"""
import argparse
import re
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans, kmeans_plusplus
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

import clusterkit
from clusterkit import AFKMC2, Clusterer, FitState, FullEStep, HardMStep, KMeansPlusPlus
from clusterkit._kernels import _assign
from clusterkit.datasets import make_birch_grid
from clusterkit.metrics import quantization_error

from _common import (RESULTS_PATH, write_results, format_machine_info, format_table,
                     machine_info, median_time, warn_openblas_overrides)

try:
    import faiss
except ImportError:
    faiss = None

# The clusterkit fits here run max_iter iterations on purpose (tol=0).
warnings.filterwarnings("ignore", message="The fit did not converge",
                        category=ConvergenceWarning)

PARTS = ("lloyd", "birch", "seeding", "cutoff")
DEFAULT_PARTS = ("lloyd", "birch", "seeding")
DTYPES = (np.float64, np.float32)
PARITY_TOL = {np.float64: 1e-6, np.float32: 1e-4}
LABEL_AGREEMENT_TARGET = 0.9999


def _gemm_min_features():
    """``GEMM_MIN_FEATURES`` as written in clusterkit's ``_dist.pxd`` (None if not found)."""
    pxd = Path(clusterkit.__file__).with_name("_kernels") / "_dist.pxd"
    try:
        match = re.search(r"GEMM_MIN_FEATURES\s*=\s*(\d+)", pxd.read_text())
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _fmt_rate(evals_per_s):
    """Distance evaluations per second, in millions."""
    return f"{evals_per_s / 1e6:,.0f}" if evals_per_s >= 1e7 else f"{evals_per_s / 1e6:.2f}"


def _timed(fn, repeats):
    """Median wall time, median CPU/wall ratio (busy threads) and the last result of ``fn``."""
    cpu = []
    median, times, result = median_time(fn, repeats, cpu_times=cpu)
    busy = float(np.median([c / w for c, w in zip(cpu, times)]))
    return median, busy, result


def _faiss_blas():
    """Version and detected architecture of the BLAS bundled with faiss."""
    from threadpoolctl import threadpool_info
    for lib in threadpool_info():
        if lib["user_api"] == "blas" and "faiss" in lib["filepath"]:
            return (f"{lib['internal_api']} {lib.get('version')} with "
                    f"architecture={lib.get('architecture')} kernels")
    return "an unidentified BLAS"


# -- parts 1 and 2: Lloyd iterations -----------------------------------------------------------

def _fit_clusterkit(X, init, max_iter, n_threads):
    return Clusterer(init.shape[0], seed=init, estep=FullEStep(), mstep=HardMStep(),
                     max_iter=max_iter, tol=0, n_threads=n_threads).fit(X)


def _fit_sklearn(X, init, max_iter, n_threads):
    # threadpool_limits sets every OpenMP runtime (KMeans reads omp_get_max_threads) and BLAS
    # to n_threads; KMeans itself limits BLAS to one thread around its Lloyd loop.
    with threadpool_limits(limits=n_threads):
        return KMeans(init.shape[0], init=init, n_init=1, max_iter=max_iter, tol=0,
                      algorithm="lloyd").fit(X)


def _fit_faiss(X, init, max_iter, n_threads):
    n_samples, n_features = X.shape
    n_clusters = init.shape[0]
    faiss.omp_set_num_threads(n_threads)
    # max_points_per_centroid large enough that faiss clusters all samples (no subsampling)
    km = faiss.Kmeans(n_features, n_clusters, niter=max_iter, seed=0, verbose=False,
                      max_points_per_centroid=n_samples // n_clusters + 1)
    with threadpool_limits(limits=n_threads):
        km.train(np.ascontiguousarray(X, dtype=np.float32),
                 init_centroids=np.ascontiguousarray(init, dtype=np.float32))
    return km


def _label_gaps(X, centers, labels_a, labels_b):
    """How far from a tie the samples with different labels are.

    Returns the number of samples whose labels differ and the median and largest relative gap
    ``|d_a - d_b| / max(d_a, d_b)`` between their squared distances to the centres of their
    two labels (``centers``, computed in float64); tiny gaps mean near-ties.
    """
    idx = np.flatnonzero(labels_a != labels_b)
    if idx.size == 0:
        return 0, 0.0, 0.0
    x, c = X[idx].astype(np.float64), centers.astype(np.float64)
    d_a = ((x - c[labels_a[idx]]) ** 2).sum(axis=1)
    d_b = ((x - c[labels_b[idx]]) ** 2).sum(axis=1)
    gap = np.abs(d_a - d_b) / np.maximum(np.maximum(d_a, d_b), np.finfo(np.float64).tiny)
    return idx.size, float(np.median(gap)), float(gap.max())


def _lloyd_rows(name, X64, init64, max_iter, args, notes, faiss_column):
    """Time clusterkit, scikit-learn (and faiss) for both dtypes; return table rows."""
    rows = []
    n_samples, n_features = X64.shape
    n_clusters = init64.shape[0]
    for dtype in DTYPES:
        X = X64.astype(dtype)
        init = init64.astype(dtype)
        dt = np.dtype(dtype).name
        print(f"[{name}] {dt}: clusterkit ...", flush=True)
        t_ck, busy_ck, ck = _timed(lambda: _fit_clusterkit(X, init, max_iter, args.n_threads),
                                   args.repeats)
        print(f"[{name}] {dt}: scikit-learn ...", flush=True)
        t_sk, busy_sk, sk = _timed(lambda: _fit_sklearn(X, init, max_iter, args.n_threads),
                                   args.repeats)
        # both run n_iter E-steps plus a final labelling pass (scikit-learn skips the pass
        # only after strict convergence, i.e. when it stopped early)
        evals_ck = ck.n_distance_evals_
        sk_passes = sk.n_iter_ + (1 if sk.n_iter_ == max_iter else 0)
        evals_sk = sk_passes * n_samples * n_clusters
        rel_inertia = abs(ck.inertia_ - sk.inertia_) / sk.inertia_
        agreement = float(np.mean(ck.labels_ == sk.labels_))
        ok = rel_inertia <= PARITY_TOL[dtype] and agreement >= LABEL_AGREEMENT_TARGET
        n_differ, gap_median, gap_max = _label_gaps(X, ck.cluster_centers_, ck.labels_,
                                                    sk.labels_)
        faiss_cell = "n/a (float32 only)" if faiss_column else None
        if faiss_column and faiss is None:
            faiss_cell = "not installed"
        elif faiss_column and dtype is np.float32:
            print(f"[{name}] {dt}: faiss ...", flush=True)
            t_fa, busy_fa, fa = _timed(lambda: _fit_faiss(X, init, max_iter, args.n_threads),
                                       args.repeats)
            evals_fa = len(fa.obj) * n_samples * n_clusters  # no final labelling pass
            faiss_cell = (f"{_fmt_rate(evals_fa / t_fa)} "
                          f"({t_fa:.2f} s, {len(fa.obj)} it.)")
            qe_fa = quantization_error(X, fa.centroids.astype(dtype), n_threads=args.n_threads)
            notes.append(
                f"{name}, float32, faiss: {len(fa.obj)} iterations in {t_fa:.3f} s, "
                f"CPU/wall {busy_fa:.2f}, faiss.omp_get_max_threads() = "
                f"{faiss.omp_get_max_threads()}; its final inertia differs from "
                f"scikit-learn's by {abs(qe_fa - sk.inertia_) / sk.inertia_:.1e} (relative; "
                "faiss computes in float32 and handles empty clusters its own way). "
                f"faiss's own OpenBLAS runs {_faiss_blas()}.")
        notes.append(
            f"{name}, {dt}: CPU/wall (busy threads) clusterkit {busy_ck:.2f}, "
            f"scikit-learn {busy_sk:.2f}; "
            f"scikit-learn's KMeans._n_threads = {getattr(sk, '_n_threads', '?')}; "
            f"{n_differ} labels differ" + (
                "" if not n_differ else
                f", relative gap between the squared distances to their two labels' centres "
                f"(clusterkit's final centres, float64) median {gap_median:.1e}, "
                f"max {gap_max:.1e}") + ".")
        rate_ck, rate_sk = evals_ck / t_ck, evals_sk / t_sk
        row = [name, dt, f"{ck.n_iter_} / {sk.n_iter_}", f"{t_ck:.3f}", f"{t_sk:.3f}",
               f"{t_ck / t_sk:.3f}", f"{t_sk / t_ck:.2f}x", _fmt_rate(rate_ck),
               _fmt_rate(rate_sk), f"{rate_ck / rate_sk:.2f}x"]
        if faiss_column:
            row.append(faiss_cell)
        row += [f"{rel_inertia:.1e}", f"{100 * agreement:.3f}% ({n_differ} differ)",
                "ok" if ok else "FAIL"]
        rows.append(row)
    return rows


LLOYD_HEADERS = ["data", "dtype", "iterations ck / sk", "clusterkit s", "sklearn s",
                 "ck/sk time", "speed-up sk/ck", "ck Meval/s", "sk Meval/s",
                 "throughput ck/sk"]
PARITY_HEADERS = ["rel. inertia diff", "label agreement", "parity"]


def part_lloyd(args, notes):
    n_samples, n_features, n_clusters = args.lloyd_size
    print(f"[lloyd] data: make_blobs({n_samples}, {n_features}, centers={n_clusters}, "
          "cluster_std=2.0, random_state=0)", flush=True)
    X, _ = make_blobs(n_samples, n_features, centers=n_clusters, cluster_std=2.0,
                      random_state=0)
    init, _ = kmeans_plusplus(X, n_clusters, random_state=0)
    rows = _lloyd_rows(f"blobs N={n_samples} D={n_features} C={n_clusters}", X, init, 20,
                       args, notes, faiss_column=True)
    headers = LLOYD_HEADERS + ["faiss Meval/s (float32)"] + PARITY_HEADERS
    return ("### 1. Lloyd, max_iter=20, tol=0, Gaussian blobs (target ck/sk time <= 1.0)\n\n"
            + format_table(headers, rows))


def part_birch(args, notes):
    n_side = args.birch_side
    X, _, _ = make_birch_grid(n_side=n_side, n_per_cluster=100, random_state=0)
    n_clusters = n_side ** 2
    print(f"[birch] data: make_birch_grid(n_side={n_side}, n_per_cluster=100, "
          f"random_state=0): N={X.shape[0]}, C={n_clusters}", flush=True)
    # A start of uniformly drawn samples: from a k-means++ start both libraries reach a fixed
    # point after about 14 iterations, from this one they run all 20.
    init = X[np.random.RandomState(0).choice(X.shape[0], n_clusters, replace=False)]
    rows = _lloyd_rows(f"BIRCH grid N={X.shape[0]} D=2 C={n_clusters}", X, init, 20, args,
                       notes, faiss_column=False)
    notes.append("BIRCH start: the same C rows drawn uniformly without replacement "
                 "(RandomState(0)) for both libraries, so that both run 20 iterations.")
    return ("### 2. Lloyd, max_iter=20, tol=0, BIRCH grid (target speed-up sk/ck >= 3x)\n\n"
            + format_table(LLOYD_HEADERS + PARITY_HEADERS, rows))


# -- part 3: seeding ---------------------------------------------------------------------------

def _seed_clusterkit(seeder, X, sample_weight, n_clusters, n_threads):
    state = FitState(n_clusters=n_clusters, n_features=X.shape[1],
                     random_state=np.random.RandomState(0), n_threads=n_threads)
    with threadpool_limits(limits=1, user_api="blas"):
        centers = seeder.seed(X, sample_weight, n_clusters, state)
    return centers, state.meter.cost["seeding"]


def _seed_sklearn(X, n_clusters, n_threads):
    with threadpool_limits(limits=n_threads):
        return kmeans_plusplus(X, n_clusters, random_state=0)[0]


def part_seeding(args, notes):
    """Seeding on two data sets: separated blobs (one per centre) and structureless noise."""
    n_samples, n_features, n_clusters = args.seeding_size
    sections = []
    for data_name in args.seeding_data:
        n_centers = n_clusters
        if data_name == "blobs":
            description = (f"make_blobs({n_samples}, {n_features}, centers={n_clusters}, "
                           "random_state=0)")
            X, _ = make_blobs(n_samples, n_features, centers=n_clusters, random_state=0)
        elif data_name == "birch":
            # the BIRCH grid with C = 2025, as in Forster & Lücke (2018), Table 2
            X, _, _ = make_birch_grid(n_side=45, n_per_cluster=100, random_state=0)
            n_centers = 45 ** 2
            description = "make_birch_grid(n_side=45, random_state=0), N=202500, D=2"
        else:
            description = f"standard normal ({n_samples}, {n_features}), seed 0"
            X = np.random.default_rng(0).standard_normal((n_samples, n_features))
        X = X.astype(args.seeding_dtype)
        print(f"[seeding] data: {description}, {X.dtype}", flush=True)
        sections.append(_seeding_table(X, description, n_centers, args, notes))
    notes.append(
        "Seeding data: on well-separated blobs with one blob per centre, any plain D^2 "
        "sampler (AFK-MC2 and plain k-means++ alike) misses some blobs and doubles some "
        "others, while greedy k-means++ almost never does; on data without that structure "
        "the three seedings are close. Both are reported.")
    notes.append(
        "clusterkit's KMeansPlusPlus prunes distances by the triangle inequality and computes "
        "the rest one by one; scikit-learn computes all candidate distances with gemm. So "
        "clusterkit wins where pruning removes most distances (clustered data, few features) "
        "and loses where it removes few and many features make gemm pay.")
    return "\n\n".join(sections)


def _seeding_table(X, description, n_clusters, args, notes):
    n_samples, n_features = X.shape
    w = np.ones(n_samples, dtype=X.dtype)
    n_trials = 2 + int(np.log(n_clusters))
    results = []
    print("[seeding] clusterkit AFKMC2 ...", flush=True)
    t, busy, (centers, evals) = _timed(
        lambda: _seed_clusterkit(AFKMC2(chain_length=200, n_candidates=1), X, w, n_clusters,
                                 args.n_threads),
        args.repeats)
    results.append(("clusterkit AFKMC2(chain_length=200)", args.repeats, t, busy, evals,
                    centers))
    for seeder, label in [(KMeansPlusPlus(), f"KMeansPlusPlus() (greedy, {n_trials} trials)"),
                          (KMeansPlusPlus(n_local_trials=1),
                           "KMeansPlusPlus(n_local_trials=1) (plain k-means++)")]:
        print(f"[seeding] clusterkit {label} ...", flush=True)
        t, busy, (centers, evals) = _timed(
            lambda: _seed_clusterkit(seeder, X, w, n_clusters, args.n_threads),
            args.context_repeats)
        results.append((f"clusterkit {label}", args.context_repeats, t, busy, evals, centers))
    print("[seeding] scikit-learn kmeans_plusplus ...", flush=True)
    t, busy, centers = _timed(lambda: _seed_sklearn(X, n_clusters, args.n_threads),
                              args.seeding_repeats)
    # first centre against all samples, then n_trials candidates per further centre
    evals = n_samples + (n_clusters - 1) * n_trials * n_samples
    results.append((f"sklearn kmeans_plusplus (greedy, {n_trials} trials)",
                    args.seeding_repeats, t, busy, evals, centers))
    t_sk = results[-1][2]
    qe_sk = quantization_error(X, results[-1][5], n_threads=args.n_threads)
    rows = []
    for name, repeats, t, busy, evals, centers in results:
        qe = quantization_error(X, centers, n_threads=args.n_threads)
        rows.append([name, repeats, f"{t:.3f}", f"{t_sk / t:.1f}x", f"{evals:.3g}",
                     _fmt_rate(evals / t), f"{busy:.2f}", f"{qe:.6g}", f"{qe / qe_sk:.3f}"])
    headers = ["seeder", "repeats", "seconds", "speed-up vs sklearn", "distance evals",
               "Meval/s", "CPU/wall", "quantization error", "QE / sklearn QE"]
    if notes and notes[-1].startswith("Seeding: clusterkit's seeders"):
        notes.pop()  # the same note for every data set
    notes.append(
        f"Seeding: clusterkit's seeders are called directly (`seeder.seed(X, w, C, state)` "
        f"with `FitState(..., random_state=np.random.RandomState(0), n_threads="
        f"{args.n_threads})`) inside `threadpool_limits(1, user_api='blas')`, on the raw "
        "(uncentred) data; scikit-learn's `kmeans_plusplus(X, C, random_state=0)` runs inside "
        f"`threadpool_limits({args.n_threads})`, its distances are BLAS gemm calls. The "
        "scikit-learn evaluation count is N + (C-1)·trials·N. Targets: AFKMC2 speed-up >= 10x, "
        "QE within 25% of scikit-learn's. AFK-MC2 approximates plain k-means++ sampling "
        "(Bachem et al., 2016), while scikit-learn's seeding is greedy (best of several "
        "candidates per centre); clusterkit's plain and greedy k-means++ rows are context "
        "for that comparison, timed with fewer repeats.")
    return (f"### 3. Seeding, {description}, C={n_clusters}, {X.dtype} "
            "(target AFKMC2 >= 10x faster, QE ratio within 1.25)\n\n"
            + format_table(headers, rows))


# -- part 4: direct loop vs gemm in the assignment kernel ------------------------------------

def _rate_of(cell):
    """The number in a rate cell such as ``'~1,234'`` or ``'56 (padded to D=9)'``."""
    return float(cell.lstrip("~").split()[0].replace(",", ""))


def _cutoff_rows(dtype, data, center_rows, cutoff, args):
    """Rows of the cut-off table for one dtype."""
    n_samples, max_features = data.shape
    n_evals = n_samples * len(center_rows)
    labels = np.empty(n_samples, dtype=np.int32)
    min_dist2 = np.empty(n_samples, dtype=dtype)

    def rate(X, C):
        t, _, _ = median_time(lambda: _assign.assign_full(X, C, labels, min_dist2,
                                                          args.n_threads), args.repeats)
        return n_evals / t

    rows, per_eval_direct = [], {}
    for n_features in range(1, max_features + 1):
        X = np.ascontiguousarray(data[:, :n_features], dtype=dtype)
        C = np.ascontiguousarray(X[center_rows])
        direct_cell = gemm_cell = "-"
        if cutoff is None:
            direct_cell = _fmt_rate(rate(X, C)) + " (path unknown)"
        elif n_features >= cutoff:
            gemm_cell = _fmt_rate(rate(X, C))
            if len(per_eval_direct) >= 2:  # least-squares line through the measured D
                d = np.array(sorted(per_eval_direct))
                slope, intercept = np.polyfit(d, [per_eval_direct[k] for k in d], 1)
                if slope > 0:  # otherwise the timings were too noisy to show a trend
                    direct_cell = "~" + _fmt_rate(1 / (intercept + slope * n_features))
        else:
            r = rate(X, C)
            direct_cell = _fmt_rate(r)
            per_eval_direct[n_features] = 1 / r
            # zero columns up to the cut-off: the same distances, computed by the gemm path
            Xp = np.zeros((n_samples, cutoff), dtype=dtype)
            Xp[:, :n_features] = X
            gemm_cell = f"{_fmt_rate(rate(Xp, np.ascontiguousarray(Xp[center_rows])))} " \
                        f"(padded to D={cutoff})"
        faster = "-"
        if "-" not in (direct_cell, gemm_cell):
            faster = "direct" if _rate_of(direct_cell) > _rate_of(gemm_cell) else "gemm"
            if direct_cell.startswith("~"):
                faster += " (extrapolated)"
        path = "?" if cutoff is None else "gemm" if n_features >= cutoff else "direct"
        rows.append([np.dtype(dtype).name, n_features, path, direct_cell, gemm_cell, faster])
    return rows


def part_cutoff(args, notes):
    n_samples, n_clusters, max_features = args.cutoff_size
    cutoff = _gemm_min_features()
    rng = np.random.RandomState(0)
    data = rng.standard_normal((n_samples, max_features))
    center_rows = rng.choice(n_samples, n_clusters, replace=False)
    rows = []
    # the kernel calls gemm inside its OpenMP threads: BLAS itself must be single-threaded,
    # as Clusterer.fit arranges
    with threadpool_limits(limits=1, user_api="blas"):
        for dtype in DTYPES:
            print(f"[cutoff] {np.dtype(dtype).name} ...", flush=True)
            rows += _cutoff_rows(dtype, data, center_rows, cutoff, args)
    notes.append(
        f"Cut-off: `_assign.assign_full` on standard-normal data, N={n_samples}, "
        f"C={n_clusters} (centres are rows of X), {args.n_threads} threads, BLAS limited to 1 "
        f"thread, median of {args.repeats}; the kernel uses its direct loop for "
        f"D < GEMM_MIN_FEATURES = {cutoff} (read from `_dist.pxd`) and gemm from there on. "
        "Below the cut-off the gemm column times the same kernel on X and centres padded with "
        f"zero columns up to D={cutoff} (identical distances through the gemm path; slightly "
        "pessimistic for gemm, which also multiplies the zero columns). Above the cut-off the "
        "direct loop cannot be run without rebuilding; its '~' rates are extrapolated from a "
        "least-squares line through the measured per-evaluation times of D = 1.."
        f"{cutoff - 1 if cutoff else '?'} and only indicate a trend.")
    headers = ["dtype", "D", "kernel path", "direct Meval/s", "gemm Meval/s", "faster"]
    return (f"### 4. Assignment kernel: direct loop vs gemm (N={n_samples}, C={n_clusters})"
            "\n\n" + format_table(headers, rows))


def _sizes(text, n):
    values = tuple(int(v.replace("_", "")) for v in text.split(","))
    if len(values) != n:
        raise argparse.ArgumentTypeError(f"expected {n} comma-separated integers, got {text!r}")
    return values


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python "
               "benchmarks/bench_lloyd.py --cutoff --write",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--n-threads", type=int, default=2,
                        help="threads for every library (OpenMP and BLAS)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed calls per measurement; the median is reported")
    parser.add_argument("--seeding-repeats", type=int, default=3,
                        help="timed calls for the slow k-means++ seeders of part 'seeding'")
    parser.add_argument("--context-repeats", type=int, default=1,
                        help="timed calls for clusterkit's k-means++ seeders, which part "
                             "'seeding' shows for context only")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(DEFAULT_PARTS),
                        help="which parts to run")
    parser.add_argument("--cutoff", action="store_true",
                        help="also run part 'cutoff' (the gemm cut-off micro-benchmark)")
    parser.add_argument("--write", action="store_true",
                        help=f"append the tables to {RESULTS_PATH.name}")
    parser.add_argument("--results", type=Path, default=RESULTS_PATH,
                        help="results file used by --write")
    parser.add_argument("--lloyd-size", type=lambda s: _sizes(s, 3), default=(200_000, 64, 256),
                        metavar="N,D,C", help="sizes of part 'lloyd'")
    parser.add_argument("--birch-side", type=int, default=32,
                        help="BIRCH grid side of part 'birch' (C = side**2, N = 100 C)")
    parser.add_argument("--seeding-data", nargs="+", choices=("blobs", "normal", "birch"),
                        default=["blobs", "normal"],
                        help="data sets of part 'seeding': blobs and normal of --seeding-size, "
                             "birch the BIRCH grid with C=2025 (default: blobs and normal)")
    parser.add_argument("--seeding-size", type=lambda s: _sizes(s, 3),
                        default=(1_000_000, 16, 1_000), metavar="N,D,C",
                        help="sizes of part 'seeding'")
    parser.add_argument("--seeding-dtype", choices=("float64", "float32"), default="float64",
                        help="dtype of the data of part 'seeding'")
    parser.add_argument("--cutoff-size", type=lambda s: _sizes(s, 3),
                        default=(100_000, 1024, 16), metavar="N,C,MAX_D",
                        help="sizes of part 'cutoff' (D = 1..MAX_D)")
    args = parser.parse_args(argv)
    parts = [p for p in PARTS if p in args.parts or (p == "cutoff" and args.cutoff)]

    warn_openblas_overrides()
    info = machine_info(args.n_threads)
    print(format_machine_info(info), flush=True)
    notes = [
        "Command: `" + " ".join(shlex.quote(a) for a in ["python", *sys.argv]) + "`",
        f"Times are the median of {args.repeats} calls in one process (part 'seeding': "
        f"{args.seeding_repeats} for scikit-learn, {args.context_repeats} for clusterkit's "
        "k-means++ context rows), each call a complete fit "
        "including input validation. 'CPU/wall' is the process CPU time divided by the wall "
        f"time: about {args.n_threads} when {args.n_threads} threads were busy throughout, "
        "lower on a loaded machine; above it would mean a library ignored the thread limit.",
        f"Threads: clusterkit gets `n_threads={args.n_threads}` (its kernels' OpenMP teams; it "
        "limits BLAS to 1 thread itself during fit); scikit-learn runs inside "
        f"`threadpoolctl.threadpool_limits({args.n_threads})`, which sets every loaded OpenMP "
        "runtime and BLAS; KMeans takes its OpenMP thread count from it (reported as "
        "`KMeans._n_threads` below) and limits BLAS to 1 thread in its Lloyd loop; faiss gets "
        f"`faiss.omp_set_num_threads({args.n_threads})` plus the same threadpool limit.",
        "Lloyd parts: identical initial centres (`kmeans_plusplus(X, C, random_state=0)` on the "
        "float64 data, cast for float32), tol=0, max_iter=20. With tol=0 both stop early only "
        "at a fixed point: scikit-learn when the labels did not change (it then skips its "
        "final labelling pass), clusterkit when the objective did not change, which it sees "
        "one iteration later. Otherwise both run 20 E-steps plus one final labelling pass, "
        "21·N·C distance evaluations (clusterkit reports its own `n_distance_evals_`; "
        "faiss does 20·N·C, no final pass). 'ck/sk time' is clusterkit's wall time over "
        "scikit-learn's, 'speed-up sk/ck' its inverse, 'throughput ck/sk' the ratio of "
        "distance evaluations per second (the fair comparison when the iteration counts "
        "differ). Parity compares clusterkit's `inertia_` and `labels_` with scikit-learn's; "
        "targets: relative inertia difference <= 1e-6 (float64) / 1e-4 (float32) and label "
        "agreement >= 99.99%.",
    ]
    tables = []
    start = time.perf_counter()
    for part in parts:
        table = globals()[f"part_{part}"](args, notes)
        print("\n" + table + "\n", flush=True)
        tables.append(table)
    print(f"Total time: {time.perf_counter() - start:.0f} s")
    print("\nNotes:\n" + "\n".join(f"- {n}" for n in notes))
    if args.write:
        write_results(args.results, "bench_lloyd.py: " + ", ".join(parts),
                       "\n\n".join(tables), notes, info=info)
        print(f"Appended to {args.results}")


if __name__ == "__main__":
    main()
