"""Embeddings at scale: float32 vectors of 128 to 1,024 features, thousands of clusters, vs faiss.

The workload of inverted-file index training and topic discovery: float32 rows of unit norm,
``C`` in the thousands. Every fit of a row runs in one process on ``--n-threads`` threads, is
timed whole (seeding and sampling included) and is scored by the same error, the quantization
error of *all* rows to their nearest centre (:func:`clusterkit.metrics.quantization_error`),
reported relative to the best fit of the row:

* peers: ``faiss.Kmeans`` with its defaults (25 iterations on at most 256 rows per centre:
  all rows here; a second run on all rows is made only where the defaults subsample),
  ``faiss.SuperKMeans`` with its defaults (dimension pruning on top of the matrix product);
* clusterkit, with the presets' defaults (exact dimension pruning where it pays):
  ``presets.lloyd(C)`` (exact Lloyd iterations to its default stop),
  ``presets.large_scale(C)`` (var-k-means-S on all rows as the start, then exact Lloyd
  iterations) and ``presets.vc_gmm(C)`` (var-GMM-S on a lightweight coreset of
  ``max(2^15, 32 C)`` draws, the data themselves where that is not smaller);
* Lloyd per iteration: the median time of ``lloyd``'s and ``large_scale``'s Lloyd
  iterations (after its pilot) against the median of the iteration times faiss reports for
  its ``Kmeans`` run, which computes all ``N C`` distances (pruning skips most of them from
  64 features on).

Data (:func:`make_embeddings`): a mixture of 1,000 topics whose means and within-topic noise
share a power-law spectrum in a random basis (variance of direction ``i`` proportional to
``1 / i``), Dirichlet(1) topic weights and within-topic spreads in [0.4, 0.8], every row
scaled to unit norm. Rows (``--rows``; about 45 minutes for all three on 2 cores, most of it
faiss's)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_embeddings.py --write

The measurements go to ``bench_embeddings.json`` after each row; ``--write`` replaces the
RESULTS.md section, ``docs/embeddings_table.inc`` and the plot, and ``--replot
bench_embeddings.json --write`` does so from saved measurements.

``--index`` measures index training and the presets at index sizes instead (rows
:data:`INDEX_ROWS`, ``C = 4 sqrt(N)``, and a row at ``C = 10,000`` when named), all with
their defaults (exact pruning ``"auto"``): ``presets.lloyd`` with ``tol=0`` (Lloyd's fixed
point, the reference) and with its default stop, ``presets.large_scale``,
:class:`~clusterkit.IndexTraining` (256 rows per centroid, the held-out stop rule) and,
where faiss is installed, ``faiss.Kmeans`` and ``faiss.SuperKMeans`` with their defaults,
on the same data in the same run. For every fit: the wall time, the error of all rows, the
recall@10 of an IVF index on its centroids at ``--nprobe`` lists (``_ivf.py``; 5,000
queries, further rows of the same distribution), and for clusterkit's fits, from the
centres after each iteration, the time to reach the reference's recall within 0.005, its
error within 0.3 % and SuperKMeans' error within 0.3 % (``time-to-recall`` next to
``time-to-objective``). They go to ``bench_index.json``; ``--index-table`` prints them.

``--recipe`` measures the documentation's index-training recipe exactly as written,
``Clusterer(C, schedule=IndexTraining())`` (its default seeding, labels of all rows
included; ``random_state`` set), against ``faiss.Kmeans`` with its defaults, on
:data:`RECIPE_ROW` in the same run: seconds, error and recall@10 (``--nprobe``, 5,000
queries); ``--write`` replaces its RESULTS.md section and ``docs/embeddings_recipe_table.inc``.
"""
import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from clusterkit import presets
from clusterkit.metrics import quantization_error

from _common import (command_note, format_table, median_time, publish, rst_list_table,
                     warn_openblas_overrides)

TITLE = "Embeddings at scale: float32, C in the thousands, against faiss (bench_embeddings.py)"
HERE = Path(__file__).resolve().parent
SAVED = HERE / "bench_embeddings.json"
PLOT = HERE.parent / "docs" / "images" / "bench_embeddings.png"
INCLUDE = HERE.parent / "docs" / "embeddings_table.inc"
#: name: (rows, features, clusters)
ROWS = {"500k x 128, C=4096": (500_000, 128, 4096),
        "200k x 768, C=4096": (200_000, 768, 4096),
        "250k x 128, C=16384": (250_000, 128, 16384)}
OURS = {"lloyd": presets.lloyd, "large_scale": presets.large_scale, "vc_gmm": presets.vc_gmm}
#: ``--index`` rows: name: (rows, features, clusters), C = 4 sqrt(N) but the last
INDEX_ROWS = {"60k x 384, C=980": (60_000, 384, 980),
              "60k x 768, C=980": (60_000, 768, 980),
              "60k x 1024, C=980": (60_000, 1024, 980),
              "100k x 768, C=10000": (100_000, 768, 10_000)}
INDEX_SAVED = HERE / "bench_index.json"
#: ``--recipe``'s data: (rows, features, clusters)
RECIPE_ROW = (200_000, 384, 2000)
RECIPE_TITLE = ("The index-training recipe as the documentation writes it, against faiss "
                "(bench_embeddings.py --recipe)")
RECIPE_INCLUDE = HERE.parent / "docs" / "embeddings_recipe_table.inc"
INDEX_INCLUDE = HERE.parent / "docs" / "embeddings_index_table.inc"
#: ``--index``'s reference: Lloyd's iterations to the fixed point (the preset, tol=0)
REFERENCE = "lloyd(tol=0)"
#: the ``--index`` fits that are presets with their defaults (index training is not one)
INDEX_PRESETS = ("lloyd", "large_scale", REFERENCE)
INDEX_TITLE = ("Index training and the presets at index sizes against faiss "
               "(bench_embeddings.py --index)")
#: rows saved before they recorded their date
EARLIER_RUN = "2026-11-26, before dimension pruning was the default, without lloyd"
#: the composition the acceptance check is made for
BEST = "large_scale"
FAISS_SUBSAMPLE = 256  # faiss.Kmeans' default max_points_per_centroid


def make_embeddings(n_samples, n_features, n_topics=1000, random_state=0):
    """Unit-norm float32 rows from a mixture of topics with a power-law spectrum (see the
    module notes)."""
    rng = np.random.default_rng(random_state)
    basis = np.linalg.qr(rng.standard_normal((n_features, n_features)))[0]
    mix = ((np.arange(1, n_features + 1) ** -0.5)[:, None] * basis.T).astype(np.float32)
    topics = rng.standard_normal((n_topics, n_features), dtype=np.float32) @ mix
    weights = rng.dirichlet(np.ones(n_topics))
    spread = rng.uniform(0.4, 0.8, n_topics).astype(np.float32)
    labels = rng.choice(n_topics, n_samples, p=weights)
    X = rng.standard_normal((n_samples, n_features), dtype=np.float32) @ mix
    X *= spread[labels, None]
    X += topics[labels]
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def _faiss_centroids(centroids, n_clusters, n_features):
    if not isinstance(centroids, np.ndarray):  # SuperKMeans keeps a faiss vector
        import faiss
        centroids = faiss.vector_to_array(centroids)
    return np.asarray(centroids, dtype=np.float32).reshape(n_clusters, n_features)


def fit_faiss(X, n_clusters, n_threads, kind):
    """(centres, per-iteration seconds) of a faiss fit with its defaults; ``kind`` is
    ``"kmeans"``, ``"kmeans-all"`` (every row, no subsampling) or ``"superkmeans"``."""
    import faiss
    faiss.omp_set_num_threads(n_threads)
    n_features = X.shape[1]
    if kind == "superkmeans":
        km = faiss.SuperKMeans(n_features, n_clusters)
        km.train(X)
        stats = km.iteration_stats
        per_iteration = [stats.at(i).time for i in range(stats.size())]
    else:
        extra = {"max_points_per_centroid": len(X)} if kind == "kmeans-all" else {}
        km = faiss.Kmeans(n_features, n_clusters, **extra)
        km.train(X)
        per_iteration = list(np.diff([0.0] + [s["time"] for s in km.iteration_stats]))
    return _faiss_centroids(km.centroids, n_clusters, n_features), per_iteration


def _fit_ours(model, X):
    """(centres, per-iteration seconds of the fit's own iterations)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X)
    seconds = [entry["seconds"] for entry in model.history_]
    return model.cluster_centers_, list(np.diff(seconds))


def measure_row(name, args):
    n, d, c = ROWS[name]
    n, c = n // args.shrink, c // args.shrink
    X = make_embeddings(n, d, random_state=args.seed)
    print(f"{name}: data made", file=sys.stderr, flush=True)
    kinds = ["kmeans", "superkmeans"] + (["kmeans-all"] if n > FAISS_SUBSAMPLE * c else [])
    fits = {}

    def record(method, fn):
        seconds, _, (centers, per_iteration) = median_time(fn, 1)
        error = quantization_error(X, centers, n_threads=args.n_threads) / n
        fits[method] = {"seconds": seconds, "error": error,
                        "per_iteration": float(np.median(per_iteration))
                        if per_iteration else None}
        print(f"{name} {method}: {seconds:.1f} s, error {error:.6g}", file=sys.stderr,
              flush=True)

    for kind in kinds:
        record(f"faiss {kind}", lambda: fit_faiss(X, c, args.n_threads, kind))
    for method, make in OURS.items():
        record(method, lambda: _fit_ours(make(c, random_state=args.seed,
                                              n_threads=args.n_threads), X))
    return {"rows": n, "features": d, "clusters": c, "fits": fits,
            "measured": time.strftime("%Y-%m-%d", time.gmtime())}


def _tracked(model, X):
    """Fit ``model`` keeping the centres and the time after every iteration; returns
    ``(seconds, [(seconds, centres)], model)``."""
    steps = []
    model.set_params(callback=lambda info: steps.append(
        (info["seconds"], np.array(info["centers"], dtype=np.float32))))
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X)
    return time.perf_counter() - t0, steps, model


def _evaluated(steps):
    """The iterations whose centres are scored: 1-6, then about every 25 %, and the last."""
    marks, i = [], 1
    while i <= len(steps):
        marks.append(i)
        i = i + 1 if i < 6 else max(i + 1, int(i * 1.25))
    if len(steps) not in marks:
        marks.append(len(steps))
    return marks


def measure_index_row(name, args):
    """One ``--index`` row: every side's fit, error, recall@10 and, for clusterkit's, the
    time to the reference's recall and error."""
    from clusterkit import Clusterer, IndexTraining
    from _ivf import ground_truth, recall as ivf_recall
    n, d, c = INDEX_ROWS[name]
    n, c = n // args.shrink, c // args.shrink
    data = make_embeddings(n + args.queries, d, random_state=args.seed)
    X, Q = data[:n], data[n:]
    truth = ground_truth(X, Q)
    print(f"{name}: data made", file=sys.stderr, flush=True)

    def score(centers):
        error = quantization_error(X, centers, n_threads=args.n_threads) / n
        return error, ivf_recall(X, centers, Q, truth, args.nprobe, args.n_threads)

    common = dict(random_state=args.seed, n_threads=args.n_threads, compute_labels=False)
    ours = {  # the presets with their defaults (exact pruning "auto"), and index training
        REFERENCE: presets.lloyd(c, tol=0, max_iter=500, **common),
        "lloyd": presets.lloyd(c, **common),
        "large_scale": presets.large_scale(c, **common),
        # Clusterer's default seeding: greedy k-means++ on the schedule's seeding rows
        "IndexTraining": Clusterer(c, schedule=IndexTraining(), tol=0, max_iter=25,
                                   **common),
        # a tenth of the rows or so, as the SuperKMeans authors' sampling tables suggest
        f"IndexTraining(ppc={args.small_ppc})": Clusterer(
            c, schedule=IndexTraining(points_per_centroid=args.small_ppc), tol=0,
            max_iter=25, **common),
    }
    fits = {}
    for method, model in ours.items():
        seconds, steps, model = _tracked(model, X)
        scored = {i: (steps[i - 1][0], *score(steps[i - 1][1])) for i in _evaluated(steps)}
        error, recall = scored[len(steps)][1:]
        # the fraction of rows that changed cell at each step (held-out rows, or the rows
        # of the step), next to the recall and error it reached: the stop rule's evidence
        changed = [h.get("heldout_changed", h["n_changed"] / h["batch_size"])
                   for h in model.history_]
        for i, (t, e, r) in scored.items():
            print(f"  {method} iteration {i}: {t:.1f} s, changed "
                  f"{changed[i - 1] if changed[i - 1] is not None else float('nan'):.4f}, "
                  f"error {e:.6g}, recall {r:.4f}", file=sys.stderr, flush=True)
        fits[method] = {"seconds": seconds, "error": error, "recall": recall,
                        "n_iter": len(steps), "curve": scored, "changed": changed}
        print(f"{name} {method}: {seconds:.1f} s, {len(steps)} it, error {error:.6g}, "
              f"recall {recall:.4f}", file=sys.stderr, flush=True)
    try:
        import faiss  # noqa: F401
        kinds = ["kmeans", "superkmeans"]
    except ImportError:
        kinds = []
        print("faiss is not installed: no faiss rows", file=sys.stderr, flush=True)
    for kind in kinds:
        seconds, _, (centers, _) = median_time(lambda: fit_faiss(X, c, args.n_threads, kind),
                                               1)
        error, recall = score(centers)
        fits[f"faiss {kind}"] = {"seconds": seconds, "error": error, "recall": recall}
        print(f"{name} faiss {kind}: {seconds:.1f} s, error {error:.6g}, recall "
              f"{recall:.4f}", file=sys.stderr, flush=True)
    reference = fits[REFERENCE]
    superkmeans = fits.get("faiss superkmeans")
    for f in fits.values():
        def first(reached, curve=f.get("curve", {})):
            """Seconds at the first scored iteration whose (error, recall) ``reached``."""
            return next((t for t, e, r in curve.values() if reached(e, r)), None)

        f["time_to_recall"] = first(lambda e, r: r >= reference["recall"] - 0.005)
        f["time_to_error"] = first(lambda e, r: e <= 1.003 * reference["error"])
        if superkmeans is not None:
            f["time_to_superkmeans"] = first(lambda e, r: e <= 1.003 * superkmeans["error"])
    return {"rows": n, "features": d, "clusters": c, "nprobe": args.nprobe, "fits": fits}


def measure_recipe(args):
    """``--recipe``: the documented ``Clusterer(C, schedule=IndexTraining())`` and faiss
    ``Kmeans`` with their defaults on :data:`RECIPE_ROW` (divided by ``--shrink``), one
    after the other in this process; ``{fit: {seconds, error, recall, ...}}``."""
    from clusterkit import Clusterer, IndexTraining
    from _ivf import ground_truth, recall as ivf_recall
    n, d, c = RECIPE_ROW
    n, c = n // args.shrink, c // args.shrink
    data = make_embeddings(n + args.queries, d, random_state=args.seed)
    X, Q = data[:n], data[n:]
    truth = ground_truth(X, Q)
    print(f"{n:,} x {d}, C = {c:,}: data made", file=sys.stderr, flush=True)
    fits = {}

    def record(method, fit):
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        centers, extra = fit()
        seconds = time.perf_counter() - t0
        fits[method] = {"seconds": seconds,
                        "error": quantization_error(X, centers, n_threads=args.n_threads) / n,
                        "recall": ivf_recall(X, centers, Q, truth, args.nprobe,
                                             args.n_threads), "load": load, **extra}
        print(f"{method}: {fits[method]}", file=sys.stderr, flush=True)

    def recipe():
        model = Clusterer(c, schedule=IndexTraining(), random_state=args.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X)
        return model.cluster_centers_, {"seeding": model.seconds_["seeding"],
                                        "n_iter": model.n_iter_}

    record("Clusterer(C, schedule=IndexTraining())", recipe)
    record("faiss Kmeans", lambda: (fit_faiss(X, c, args.n_threads, "kmeans")[0],
                                    {"n_iter": 25}))
    return {"rows": n, "features": d, "clusters": c, "fits": fits}


def publish_recipe(row, args):
    """Print ``--recipe``'s table and notes; with ``--write`` replace its RESULTS.md section
    and ``docs/embeddings_recipe_table.inc``."""
    fits = row["fits"]
    faiss_s = fits["faiss Kmeans"]["seconds"]
    best = min(f["error"] for f in fits.values())
    headers = ["fit", "seconds (seeding)", "/ faiss Kmeans' time", "iterations",
               "error vs faiss Kmeans'", "recall@10"]
    table = [[method, f"{f['seconds']:.1f}" + (f" ({f['seeding']:.1f})" if "seeding" in f
                                                else ""),
              f"{f['seconds'] / faiss_s:.2f}", str(f["n_iter"]),
              f"{100 * (f['error'] / fits['faiss Kmeans']['error'] - 1):+.2f} %",
              f"{f['recall']:.4f}"] for method, f in fits.items()]
    ours = fits["Clusterer(C, schedule=IndexTraining())"]
    notes = [
        f"{row['rows']:,} x {row['features']} embedding-like rows (make_embeddings), "
        f"C = {row['clusters']:,}; one process on {args.n_threads} threads, one run each, "
        "timed whole: clusterkit's fit includes its default seeding (greedy k-means++ on the "
        "rows IndexTraining's schedule says a seeding is worth) and its labels of all rows; "
        "faiss Kmeans with its defaults (25 iterations from random rows on at most 256 rows "
        "per centre).",
        f"At most faiss Kmeans' time: {'yes' if ours['seconds'] <= faiss_s else 'NO'}; "
        f"lowest error: {'clusterkit' if ours['error'] == best else 'faiss'}. Load average "
        "(1 min) at the start of each fit: " + ", ".join(
            f"{method} {f['load']:.1f}" for method, f in fits.items()) + ".",
        "Error: quantization error of all rows; recall@10 of an IVF index (exact distances "
        f"within the probed lists) on the fit's centroids, {args.queries:,} queries from the "
        f"same distribution, nprobe = {args.nprobe}.",
        command_note()]
    publish(RECIPE_TITLE, format_table(headers, table), notes, args.write)
    if args.write:
        RECIPE_INCLUDE.write_text(rst_list_table(headers, table,
                                                 "bench_embeddings.py --recipe"),
                                  encoding="utf-8")


def index_rows(saved):
    """The ``--index`` rows: ``(headers, rows)`` of the table."""
    def seconds(value):
        return "" if value is None else f"{value:.1f}"

    rows = []
    for name, row in saved.items():
        ref = row["fits"][REFERENCE]
        superkmeans = row["fits"].get("faiss superkmeans")
        for method, f in row["fits"].items():
            versus = ([f"{f['seconds'] / superkmeans['seconds']:.2f}",
                       f"{f['error'] / superkmeans['error']:.4f}"]
                      if superkmeans else ["", ""])
            rows.append([name, method, seconds(f["seconds"]), str(f.get("n_iter", "")),
                         f"{100 * (f['error'] / ref['error'] - 1):+.2f} %",
                         f"{f['recall']:.4f}", *versus,
                         seconds(f.get("time_to_recall")), seconds(f.get("time_to_error")),
                         seconds(f.get("time_to_superkmeans"))])
    headers = ["data", "fit", "seconds", "iterations", "error vs fixed point", "recall@10",
               "time / SuperKMeans'", "error / SuperKMeans'", "s to recall -0.005",
               "s to error +0.3 %", "s to SuperKMeans' error +0.3 %"]
    return headers, rows


def index_checks(saved):
    """Per ``--index`` row: the fastest preset whose whole fit ends within 0.3 % of
    SuperKMeans' error and of the fixed point's, and index training's recall, each against
    SuperKMeans' time."""
    notes = []
    for name, row in saved.items():
        fits, ref = row["fits"], row["fits"][REFERENCE]
        sk = fits.get("faiss superkmeans")
        if sk is None:
            continue

        def fastest(bar):
            ok = [(fits[m]["seconds"], m) for m in INDEX_PRESETS
                  if fits[m]["error"] <= 1.003 * bar]
            return min(ok) if ok else (float("nan"), "none")

        t_sk, m_sk = fastest(sk["error"])
        t_fp, m_fp = fastest(ref["error"])
        index = fits["IndexTraining"]
        notes.append(
            f"{name}: SuperKMeans {sk['seconds']:.1f} s. Fastest preset ending within 0.3 % of "
            f"SuperKMeans' error: {m_sk}, {t_sk / sk['seconds']:.2f}x its time; of the fixed "
            f"point's: {m_fp}, {t_fp / sk['seconds']:.2f}x. IndexTraining: recall "
            f"{index['recall']:.4f} against the fixed point's {ref['recall']:.4f} "
            f"({index['recall'] - ref['recall']:+.4f}) in {index['seconds'] / sk['seconds']:.2f}x "
            "SuperKMeans' time.")
    return notes


def publish_index(saved, write):
    """Print the ``--index`` table, its checks and notes; with ``write`` replace its
    RESULTS.md section and ``docs/embeddings_index_table.inc``."""
    notes = index_checks(saved) + [
        "Every fit in one process on 2 threads, one after the other, one run each, timed "
        "whole (seeding included). Error: quantization error of all rows; recall@10 of an "
        "IVF index (exact distances within the probed lists) on the fit's centroids, 5,000 "
        "queries from the same distribution, nprobe = 2.",
        "clusterkit's presets with their defaults (exact dimension pruning \"auto\"); "
        "lloyd(tol=0) runs to the fixed point (the reference); IndexTraining: "
        "Clusterer(C, schedule=IndexTraining()) with its default seeding, greedy k-means++ on "
        "8 rows per centre; "
        "faiss Kmeans and SuperKMeans with their defaults.",
        "The 's to ...' columns: the first iteration whose centres reach that recall or "
        "error, from the fit's own iterations (time since the fit started).",
        "What holds against SuperKMeans and what does not, with the evidence: "
        "docs/embeddings.rst, section \"What holds, and what does not\".",
        "Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python "
        "benchmarks/bench_embeddings.py --index <rows> --write`; `--index-table --write` "
        "publishes from bench_index.json."]
    headers, rows = index_rows(saved)
    publish(INDEX_TITLE, format_table(headers, rows), notes, write)
    if write:
        INDEX_INCLUDE.write_text(rst_list_table(headers, rows, "bench_embeddings.py --index"),
                                 encoding="utf-8")


def _cells(row):
    fits = row["fits"]
    best = min(f["error"] for f in fits.values() if "error" in f)
    faiss_s = fits["faiss kmeans"]["seconds"]
    out = []
    for method, f in fits.items():
        if "error" not in f:
            continue
        out.append([method, f"{f['seconds']:.1f}", f"{f['seconds'] / faiss_s:.2f}",
                    f"{100 * (f['error'] / best - 1):+.2f} %",
                    f"{f['per_iteration']:.2f}" if f["per_iteration"] else ""])
    return out


def check(row):
    """Whether :data:`BEST` reaches every faiss fit's error in at most half its time, and
    whether exact Lloyd's iteration is at most faiss Kmeans'."""
    fits = row["fits"]
    ours = fits[BEST]
    peers = [m for m in fits if m.startswith("faiss")]
    reached = all(ours["error"] <= fits[m]["error"] and ours["seconds"] <= fits[m]["seconds"] / 2
                  for m in peers)
    ours_s, faiss_s = fits[BEST]["per_iteration"], fits["faiss kmeans"]["per_iteration"]
    return reached, ours_s / faiss_s if ours_s and faiss_s else float("nan")


def plot(saved, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(saved), figsize=(4.2 * len(saved), 3.6), squeeze=False)
    methods = sorted({m for row in saved.values() for m in row["fits"]})
    color = {m: f"C{i}" for i, m in enumerate(methods)}  # (one colour per fit in every panel)
    for ax, (name, row) in zip(axes[0], saved.items()):
        fits = {m: f for m, f in row["fits"].items() if "error" in f}
        best = min(f["error"] for f in fits.values())
        for method, f in fits.items():
            marker = "s" if method.startswith("faiss") else "o"
            ax.scatter(f["seconds"], 100 * (f["error"] / best - 1), marker=marker,
                       color=color[method])
            # faiss' two fits often end at the same error: one label above, one below
            below = method == "faiss superkmeans"
            ax.annotate(method, (f["seconds"], 100 * (f["error"] / best - 1)), fontsize=7,
                        xytext=(3, -9 if below else 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.xaxis.set_major_formatter(plt.FormatStrFormatter("%g"))
        ax.set_xlabel("seconds (log)")
        ax.set_title(name, fontsize=9)
    axes[0][0].set_ylabel("error above the row's best (%)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def publish_results(saved, write):
    table, checks = [], []
    for name, row in saved.items():
        table += [[name] + cells for cells in _cells(row)]
        reached, ratio = check(row)
        checks.append(f"{name}: {BEST} reaches every faiss fit's error in at most half its "
                      f"time: {'yes' if reached else 'NO'}; exact Lloyd's iteration / faiss "
                      f"Kmeans' iteration: {ratio:.2f}.")
    headers = ["data", "fit", "seconds", "/ faiss Kmeans", "error vs best", "s / iteration"]
    notes = checks + [
        "Error: quantization error of all rows, relative to the row's best fit; seconds: the "
        "whole fit, one run (faiss and clusterkit in the same process, one after the other).",
        "faiss Kmeans' defaults keep all rows on every row here (at most 256 per centre); "
        "faiss kmeans-all appears only where they would subsample.",
        "s / iteration: median over the fit's iterations: faiss's own iteration times; for "
        "lloyd and large_scale their exact Lloyd iterations (after large_scale's pilot; "
        "dimension pruning from 64 features skips most of the N C distances a faiss Kmeans "
        "iteration computes); the coreset presets' iterations run on the coreset.",
        "Measured: " + "; ".join(f"{name}: {row.get('measured', EARLIER_RUN)}"
                                 for name, row in saved.items()) + ".",
        "What holds against SuperKMeans and what does not, with the evidence: "
        "docs/embeddings.rst, section \"What holds, and what does not\".",
        f"Plot: `docs/images/{PLOT.name}`.", command_note()]
    publish(TITLE, format_table(headers, table), notes, write)
    if write:
        plot(saved, PLOT)
        INCLUDE.write_text(rst_list_table(headers, table, "bench_embeddings.py"),
                           encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", nargs="+", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shrink", type=int, default=1,
                        help="divide rows and clusters by this (a quick check of the script)")
    parser.add_argument("--save", default=str(SAVED))
    parser.add_argument("--replot", metavar="JSON")
    parser.add_argument("--write", action="store_true",
                        help="write the RESULTS.md section and the plot")
    parser.add_argument("--index", nargs="*", default=None, choices=list(INDEX_ROWS),
                        help="measure index training on these rows (the three C = 4 sqrt(N) "
                             "rows if none is named)")
    parser.add_argument("--nprobe", type=int, default=2)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--small-ppc", type=int, default=8,
                        help="--index: rows per centroid of the second IndexTraining fit")
    parser.add_argument("--index-table", action="store_true",
                        help="print (and with --write publish) the saved --index rows")
    parser.add_argument("--recipe", action="store_true",
                        help="measure the documented Clusterer(C, schedule=IndexTraining()) "
                        "against faiss Kmeans on 200,000 x 384, C = 2,000")
    args = parser.parse_args()
    if args.recipe:
        warn_openblas_overrides()
        publish_recipe(measure_recipe(args), args)
        return
    if args.index is not None or args.index_table:
        saved = (json.loads(INDEX_SAVED.read_text(encoding="utf-8"))
                 if INDEX_SAVED.exists() else {})
        if args.index is not None:
            warn_openblas_overrides()
            for name in args.index or list(INDEX_ROWS)[:3]:
                saved[name] = measure_index_row(name, args)
                INDEX_SAVED.write_text(json.dumps(saved, indent=1), encoding="utf-8")
        publish_index(saved, args.write)
        return
    if args.replot:
        saved = json.loads(Path(args.replot).read_text(encoding="utf-8"))
    else:
        warn_openblas_overrides()
        path = Path(args.save)
        saved = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        for name in args.rows:
            saved[name] = measure_row(name, args)
            path.write_text(json.dumps(saved, indent=1), encoding="utf-8")
    publish_results(saved, args.write)


if __name__ == "__main__":
    main()
