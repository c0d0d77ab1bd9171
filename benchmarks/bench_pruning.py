"""How much exact dimension pruning could save in the exact E-steps.

After a PCA rotation (distances unchanged), the squared distance of a row ``x`` to a centre
``c`` is at least ``||x_p - c_p||^2 + (||x_r|| - ||c_r||)^2`` (``p`` the first dimensions,
``r`` the rest; the triangle inequality on the rest). A centre whose bound exceeds the
distance to the row's best centre so far cannot win and needs no more work. This script
measures, on the embedding-like rows of ``bench_embeddings.py``, which fraction of the
candidate centres survives that test, by prefix length and Lloyd iteration:

* Lloyd: every pair is a candidate; the threshold is the distance to the previous label's
  centre (what a kernel computes first), and the row's own minimum (no order can do better).
* Elkan: the candidates are the pairs its bounds do not rule out (simulated on a sample of
  rows: each bound stored exactly, the threshold ``u`` not tightened during the scan, so
  slightly more candidates than the kernel computes).
* Yinyang: the centres of the groups its group filter does not rule out (``C / 10`` groups
  made by k-means of the first centres; no local filter, so again a superset).

With ``--fits`` it times whole fits instead: ``FullEStep()`` against ``FullEStep(prune=p)``
(``p`` = ``"auto"``'s choice, half and twice it) from the same initial centres for a fixed
number of iterations, in the same process, alternating, median of ``--repeats``.

Without it, it estimates what a pruned pass would cost on this machine: the blocked gemm kernel
(``assign_full``) on the first ``p`` dimensions only, plus the survivors' remaining
``D - p`` dimensions at the measured rate of direct distances (``elkan_assign`` with every
bound at zero), against ``assign_full`` on all dimensions. The statistics come from a random
sample of rows (they are per-row fractions); the Lloyd iterates from all rows.
"""
import argparse
import json
import os
import statistics
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from _common import warn_openblas_overrides
from bench_embeddings import make_embeddings
from clusterkit._kernels import _assign, _elkan
from clusterkit._kernels._openmp import effective_n_threads

PREFIXES = (16, 32, 64, 96, 128, 192, 256, 384, 512)


def _median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def pca_rotation(X, n_sample, rng):
    """Orthogonal ``D x D`` matrix whose columns are the principal axes of a row sample, by
    decreasing variance, and the sample mean."""
    sample = X[rng.choice(X.shape[0], min(n_sample, X.shape[0]), replace=False)]
    sample = sample.astype(np.float64)
    mean = sample.mean(axis=0)
    cov = np.cov(sample - mean, rowvar=False)
    values, vectors = np.linalg.eigh(cov)
    return vectors[:, ::-1].copy(), mean


def lloyd_update(X, labels, centers):
    """The hard M-step (empty clusters keep their centre)."""
    n_clusters = centers.shape[0]
    counts = np.bincount(labels, minlength=n_clusters)
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(n_clusters))
    sums = np.add.reduceat(X[order].astype(np.float64), starts, axis=0)
    new = centers.astype(np.float64).copy()
    full = counts > 0
    # reduceat gives a row for an empty cluster too (the next one's first row): skip them
    new[full] = sums[full] / counts[full, None]
    return new.astype(X.dtype)


class PairStats:
    """Per-pair partial distances of the sample rows to the centres, in float64."""

    def __init__(self, Xs, centers, prefixes):
        D = Xs.shape[1]
        self.prefixes = [p for p in prefixes if p < D]
        x_cum = np.cumsum(Xs * Xs, axis=1)
        c_cum = np.cumsum(centers * centers, axis=1)
        x_tot, c_tot = x_cum[:, -1], c_cum[:, -1]
        self.d2 = np.maximum(x_tot[:, None] + c_tot[None, :] - 2 * Xs @ centers.T, 0)
        self.lb = {}
        edges = [0] + self.prefixes
        part = np.zeros_like(self.d2)
        for lo, hi in zip(edges[:-1], edges[1:]):
            part += ((x_cum[:, hi - 1] - (x_cum[:, lo - 1] if lo else 0))[:, None]
                     + (c_cum[:, hi - 1] - (c_cum[:, lo - 1] if lo else 0))[None, :]
                     - 2 * Xs[:, lo:hi] @ centers[:, lo:hi].T)
            xr = np.sqrt(np.maximum(x_tot - x_cum[:, hi - 1], 0))
            cr = np.sqrt(np.maximum(c_tot - c_cum[:, hi - 1], 0))
            self.lb[hi] = np.maximum(part, 0) + (xr[:, None] - cr[None, :]) ** 2


def survive(stats, mask, threshold):
    """Fraction of the candidate pairs (``mask``) each prefix's bound does not rule out."""
    n = mask.sum()
    return {p: float((mask & (stats.lb[p] <= threshold[:, None])).sum() / max(n, 1))
            for p in stats.prefixes}


class ElkanSim:
    def __init__(self, n_rows, n_clusters):
        self.lower = None

    def step(self, stats, centers, prev_centers, prev_labels):
        d = np.sqrt(stats.d2)
        n, C = d.shape
        rows = np.arange(n)
        cn = (centers * centers).sum(1)
        half = 0.5 * np.sqrt(np.maximum(cn[:, None] + cn[None, :] - 2 * centers @ centers.T, 0))
        np.fill_diagonal(half, np.inf)
        half_min = half.min(axis=1)
        if self.lower is None:  # first visit: gemm tiles in the kernel, all pairs
            self.lower = d.copy()
            return np.ones_like(d, dtype=bool)
        shift = np.sqrt(((centers - prev_centers) ** 2).sum(1))
        self.lower = np.maximum(self.lower - shift[None, :], 0)
        u = d[rows, prev_labels]
        active = half_min[prev_labels] <= u
        mask = (half[prev_labels] <= u[:, None]) & (self.lower <= u[:, None]) & active[:, None]
        mask[rows, prev_labels] = False
        self.lower[mask] = d[mask]
        self.lower[rows, prev_labels] = u
        return mask


class YinyangSim:
    def __init__(self, centers, n_groups, rng):
        C = centers.shape[0]
        g = centers[rng.choice(C, n_groups, replace=False)].astype(np.float64)
        for _ in range(5):
            lab = np.argmin((g * g).sum(1)[None, :] - 2 * centers @ g.T, axis=1)
            for k in range(n_groups):
                if np.any(lab == k):
                    g[k] = centers[lab == k].mean(0)
        self.group = lab
        self.n_groups = n_groups
        self.lower = None

    def step(self, stats, centers, prev_centers, prev_labels):
        d = np.sqrt(stats.d2)
        n, C = d.shape
        rows = np.arange(n)
        G = self.n_groups
        onehot = np.zeros((C, G), dtype=bool)
        onehot[np.arange(C), self.group] = True
        if self.lower is None:
            self.lower = self._group_min(d, prev_labels)
            return np.ones_like(d, dtype=bool)
        shift = np.sqrt(((centers - prev_centers) ** 2).sum(1))
        gshift = np.array([shift[self.group == k].max() if np.any(self.group == k) else 0
                           for k in range(G)])
        self.lower = np.maximum(self.lower - gshift[None, :], 0)
        u = d[rows, prev_labels]
        open_g = self.lower <= u[:, None]            # n x G
        mask = open_g[:, self.group]                  # n x C
        mask[rows, prev_labels] = False
        labels = np.argmin(d, axis=1)
        fresh = self._group_min(d, labels)
        self.lower = np.where(open_g, fresh, self.lower)
        return mask

    def _group_min(self, d, labels):
        n = d.shape[0]
        dd = d.copy()
        dd[np.arange(n), labels] = np.inf
        out = np.full((n, self.n_groups), np.inf)
        for k in range(self.n_groups):
            cols = np.flatnonzero(self.group == k)
            if cols.size:
                out[:, k] = dd[:, cols].min(axis=1)
        return out


def chunk_union(stats, threshold, labels, p, rows_per_block):
    """Fraction of the centres a block of rows of one label must complete together (the
    union of their survivors): a gemm over those centres keeps the blocked layout."""
    keep = stats.lb[p] <= threshold[:, None]
    order = np.argsort(labels, kind="stable")
    fr = []
    for lo in range(0, len(order), rows_per_block):
        fr.append(keep[order[lo:lo + rows_per_block]].any(axis=0).mean())
    return float(np.mean(fr))


def timings(X, centers, prefixes, n_threads, repeats):
    """Seconds for the blocked gemm E-step on all dimensions and on each prefix, and per
    direct distance of all ``D`` dimensions (Elkan's candidate distance)."""
    with threadpool_limits(1, user_api="blas"):  # as the driver: gemm inside prange
        return _timings(X, centers, prefixes, n_threads, repeats)


def _timings(X, centers, prefixes, n_threads, repeats):
    n, D = X.shape
    C = centers.shape[0]
    labels = np.empty(n, dtype=np.int32)
    dist2 = np.empty(n, dtype=X.dtype)
    out = {"full": _median_time(lambda: _assign.assign_full(X, centers, labels, dist2,
                                                            n_threads), repeats)}
    for p in prefixes:
        if p >= D:
            continue
        Xp, Cp = np.ascontiguousarray(X[:, :p]), np.ascontiguousarray(centers[:, :p])
        out[p] = _median_time(lambda: _assign.assign_full(Xp, Cp, labels, dist2, n_threads),
                              repeats)
    # direct distances: Elkan's kernel with every bound at 0 computes all C per row
    m = min(n, 20_000)
    Xm = np.ascontiguousarray(X[:m])
    lower = np.zeros((m, C), dtype=np.float32)
    zeros_cc = np.zeros((C, C))
    prev = np.zeros(m, dtype=np.int32)
    last = np.zeros(m, dtype=X.dtype)
    visit = np.full(m, -1.0)
    lab = np.empty(m, dtype=np.int32)
    md = np.empty(m, dtype=X.dtype)

    def run():
        lower[:] = 0
        visit[:] = -1.0
        _elkan.elkan_assign(Xm, np.ones(m, X.dtype), np.arange(m, dtype=np.intp), centers,
                            zeros_cc, np.zeros(C), np.zeros(C), lower, prev, last, visit,
                            lab, md, None, None, 0.0, n_threads)
    out["direct_per_pair"] = _median_time(run, repeats) / (m * C)
    return out


def measure(n_samples, n_features, n_clusters, n_iter, n_sample_rows, n_threads, repeats,
            seed):
    rng = np.random.default_rng(seed)
    X = make_embeddings(n_samples, n_features, random_state=seed)
    R, mean = pca_rotation(X, 20_000, rng)
    Xr = ((X.astype(np.float64) - mean) @ R).astype(np.float32)
    var = np.var(Xr[:20_000].astype(np.float64), axis=0)
    share = {p: float(var[:p].sum() / var.sum()) for p in PREFIXES if p < n_features}
    centers = Xr[rng.choice(n_samples, n_clusters, replace=False)].copy()
    sample = rng.choice(n_samples, n_sample_rows, replace=False)
    Xs = Xr[sample].astype(np.float64)
    labels = np.empty(n_samples, dtype=np.int32)
    dist2 = np.empty(n_samples, dtype=np.float32)
    elkan = ElkanSim(n_sample_rows, n_clusters)
    yinyang = YinyangSim(centers.astype(np.float64), max(1, n_clusters // 10), rng)
    prev_centers, prev_labels = None, None
    iters = []
    tm = None
    for it in range(n_iter):
        if it == 2:  # centres of a settling run, for the timings
            tm = timings(Xr, centers, PREFIXES, n_threads, repeats)
        with threadpool_limits(1, user_api="blas"):
            _assign.assign_full(Xr, centers, labels, dist2, n_threads)
        stats = PairStats(Xs, centers.astype(np.float64), PREFIXES)
        best = stats.d2.min(axis=1)
        row = {"iter": it, "objective": float(dist2.astype(np.float64).sum())}
        if prev_labels is not None:
            thr = stats.d2[np.arange(n_sample_rows), prev_labels]
            allpairs = np.ones_like(stats.d2, dtype=bool)
            row["lloyd_prev"] = survive(stats, allpairs, thr)
            row["lloyd_best"] = survive(stats, allpairs, best)
            row["lloyd_union256_p128"] = chunk_union(stats, thr, prev_labels,
                                                     min(128, stats.prefixes[-1]), 256)
            mask = elkan.step(stats, centers, prev_centers, prev_labels)
            row["elkan_cand"] = float(mask.mean())
            row["elkan_prev"] = survive(stats, mask, thr)
            mask = yinyang.step(stats, centers, prev_centers, prev_labels)
            row["yinyang_cand"] = float(mask.mean())
            row["yinyang_prev"] = survive(stats, mask, thr)
        else:
            elkan.step(stats, centers, None, None)
            yinyang.step(stats, centers, None, np.argmin(stats.d2, axis=1))
        iters.append(row)
        prev_centers, prev_labels = centers, labels[sample].copy()
        centers = lloyd_update(Xr, labels, centers)
        print(json.dumps({k: (v if not isinstance(v, dict) else
                              {p: round(f, 4) for p, f in v.items()})
                          for k, v in row.items()}), flush=True)
    return {"n_samples": n_samples, "n_features": n_features, "n_clusters": n_clusters,
            "variance_share": share, "iterations": iters, "timings": tm}


def estimate(result):
    """Seconds of a pruned Lloyd pass per prefix (prefix gemm + completion of survivors)."""
    tm = result["timings"]
    N, D, C = result["n_samples"], result["n_features"], result["n_clusters"]
    per_dim = tm["direct_per_pair"] / D
    last = result["iterations"][-1]
    out = {}
    for p, s in last["lloyd_prev"].items():
        p = int(p)
        out[p] = {"prefix_pass": tm[p], "completion": N * C * s * (D - p) * per_dim,
                  "pruned_total": tm[p] + N * C * s * (D - p) * per_dim, "full": tm["full"]}
    elkan = {p: last["elkan_cand"] * N * C * per_dim * (int(p) + s * (D - int(p)))
             for p, s in last["elkan_prev"].items()}
    elkan["unpruned"] = last["elkan_cand"] * N * C * D * per_dim
    return out, elkan


FIT_ROWS = {  # name: (n_samples, n_features, n_clusters); data from make_embeddings or MNIST
    "emb 120k x 16, C=1400": (120_000, 16, 1400),
    "emb 120k x 64, C=1400": (120_000, 64, 1400),
    "emb 120k x 128, C=1400": (120_000, 128, 1400),
    "emb 120k x 256, C=1400": (120_000, 256, 1400),
    "emb 120k x 384, C=1400": (120_000, 384, 1400),
    "emb 120k x 768, C=1400": (120_000, 768, 1400),
    "emb 120k x 1024, C=1400": (120_000, 1024, 1400),
    "mnist 70k x 784, C=50": (None, 784, 50),
    "mnist 70k x 784, C=500": (None, 784, 500),
}


#: ``--estep``: the E-step timed with and without pruning
ESTEPS = {"lloyd": "FullEStep", "elkan": "ElkanEStep", "yinyang": "YinyangEStep",
          "bounded": "BoundedEStep"}


def fit_rows(names, n_iter, n_threads, repeats, seed, prefixes=None, estep="lloyd",
             n_samples=None, forced=False):
    """Seconds and ``cost_["estep"]`` of fits with ``estep`` with and without pruning
    (``n_samples``: the first rows only)."""
    import clusterkit
    from clusterkit import Clusterer
    from clusterkit.estep.pruning import auto_projections
    from _common import data_home
    make_estep = getattr(clusterkit, ESTEPS[estep])
    out = {}
    for name in names:
        n, D, C = FIT_ROWS[name]
        if n is not None and n_samples is not None:
            n = min(n, n_samples)
        if n is None:
            X = np.load(os.path.join(data_home() or "../shared/data", "mnist.npz"))["X"]
            X = X[:n_samples] if n_samples is not None else X
        else:
            X = make_embeddings(n, D, random_state=seed)
        init = X[np.random.default_rng(seed).choice(X.shape[0], C, replace=False)]
        auto = auto_projections(D)
        # (forced: "auto"'s number of axes whatever the E-step's own rule, to measure where
        # the rule should prune)
        variants = {"off": None, "auto": min(auto, D) if forced else "auto"}
        extra = {max(8, auto // 2), min(D, 2 * auto)} if prefixes is None else prefixes
        for p in sorted(extra):
            if p < D:
                variants[f"p={p}"] = p
        times = {k: [] for k in variants}
        row = {}
        for repeat in range(repeats):
            # every other repeat in reverse order: no variant always runs first
            for label, prune in (list(variants.items())[::-1] if repeat % 2
                                 else variants.items()):
                km = Clusterer(C, seed=init, estep=make_estep(prune=prune), tol=0,
                               max_iter=n_iter, n_threads=n_threads, compute_labels=False)
                t0 = time.perf_counter()
                with warnings.catch_warnings():  # a fixed number of iterations, on purpose
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    km.fit(X)
                times[label].append(time.perf_counter() - t0)
                row[label] = {"estep_evals": int(km.cost_["estep"]),
                              "inertia": float(km.history_[-1]["objective"])}
        for label in variants:
            row[label]["seconds"] = statistics.median(times[label])
        off = row["off"]
        print(f"{name} ({estep}): " + ", ".join(
            f"{k} {v['seconds']:.2f} s ({v['seconds'] / off['seconds']:.2f}x, work "
            f"{v['estep_evals'] / off['estep_evals']:.3f})" for k, v in row.items()),
            flush=True)
        out[name] = row
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-samples", type=int, default=120_000)
    parser.add_argument("--features", type=int, nargs="+", default=[768])
    parser.add_argument("--n-clusters", type=int, default=1400)
    parser.add_argument("--n-iter", type=int, default=8)
    parser.add_argument("--sample-rows", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the raw numbers to this JSON file")
    parser.add_argument("--fits", nargs="*", default=None, choices=sorted(FIT_ROWS),
                        help="time whole fits on these rows (all of them if none is named)")
    parser.add_argument("--prefixes", type=int, nargs="*", default=None,
                        help="with --fits: the numbers of axes to prune by besides 'auto' "
                             "(default: half and twice 'auto''s)")
    parser.add_argument("--estep", choices=sorted(ESTEPS), default="lloyd",
                        help="with --fits: the E-step timed with and without pruning")
    parser.add_argument("--fit-samples", type=int, default=None,
                        help="with --fits: at most this many rows per data set")
    parser.add_argument("--forced", action="store_true",
                        help="with --fits: prune by 'auto''s number of axes even where the "
                             "E-step's 'auto' would not")
    args = parser.parse_args()
    warn_openblas_overrides()
    n_threads = effective_n_threads(args.threads)
    if args.fits is not None:
        rows = fit_rows(args.fits or list(FIT_ROWS), args.n_iter, n_threads, args.repeats,
                        args.seed, args.prefixes, args.estep, args.fit_samples,
                        args.forced)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(rows, f, indent=1)
        return
    results = []
    for D in args.features:
        print(f"== {args.n_samples} x {D}, C = {args.n_clusters}, {n_threads} threads",
              flush=True)
        res = measure(args.n_samples, D, args.n_clusters, args.n_iter, args.sample_rows,
                      n_threads, args.repeats, args.seed)
        lloyd, elkan = estimate(res)
        res["estimate_lloyd"], res["estimate_elkan"] = lloyd, elkan
        print("variance share of the prefix:",
              {p: round(v, 3) for p, v in res["variance_share"].items()})
        print("timings:", {k: round(v, 4) if k != "direct_per_pair" else f"{v * 1e9:.1f} ns"
                           for k, v in res["timings"].items()})
        for p, e in lloyd.items():
            print(f"  Lloyd p={p}: prefix pass {e['prefix_pass']:.2f} s + completion "
                  f"{e['completion']:.2f} s = {e['pruned_total']:.2f} s vs full {e['full']:.2f} s")
        print("  Elkan candidate work (s):", {k: round(v, 2) for k, v in elkan.items()})
        results.append(res)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
