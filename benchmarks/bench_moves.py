"""Single-point moves: what ``SinglePointMoves`` gains after Lloyd and after breathing, and
what it costs, against fuel's Hartigan-Wong (when importable) from the same starts.

Every fit of a seed starts from the same k-means++ seeds (scikit-learn's
``kmeans_plusplus``). clusterkit: Lloyd at the default ``tol=1e-4`` and at ``tol=0`` (a
fixed point), breathing, each with and without the moves; fuel's ``hartigan_wong`` from the
seeds, and from Lloyd's fixed point (its centres as the start). Error: the quantization
error of the final centres (nearest centres, float64); seconds of the fit, and of the
refinement alone (``seconds_["refinement"]``).

Usage::

    python benchmarks/bench_moves.py [--n 50000] [--d 20] [--clusters 200]
        [--seeds 0 1] [--data FOLDER] [--mnist-rows 20000] [--n-threads 2] [--write]

``--data`` (default ``$CLUSTERKIT_DATA``) is a folder with ``mnist.npz`` (keys ``X``,
``y``): MNIST's first ``--mnist-rows`` rows then join the blobs, with the first seed.
``--write`` puts the table into RESULTS.md.
"""
import argparse
import os
import time

import numpy as np

from _common import command_note, data_home, format_table, machine_info, publish

from clusterkit import Breathing, SinglePointMoves, presets
from clusterkit.datasets import make_gaussian_blobs
from clusterkit.metrics import quantization_error

TITLE = "Single-point moves after Lloyd and breathing (bench_moves.py)"


def data_sets(args):
    for seed in args.seeds:
        X = make_gaussian_blobs(args.n, args.d, args.clusters, dtype=np.float32,
                                random_state=seed)[0]
        yield f"blobs {args.n}x{args.d}", seed, X
    if args.data and os.path.exists(os.path.join(args.data, "mnist.npz")):
        X = np.load(os.path.join(args.data, "mnist.npz"))["X"][:args.mnist_rows]
        yield f"mnist {args.mnist_rows}x784", args.seeds[0], np.ascontiguousarray(X, np.float32)


def clusterkit_fits(X, seeds, C, n_threads, seed):
    """(name, model) of every clusterkit composition, in the order of the table."""
    common = dict(seed=seeds, n_threads=n_threads, random_state=seed, max_iter=500)
    for name, kw in [("Lloyd tol=1e-4", {}), ("Lloyd tol=0", {"tol": 0}),
                     ("Breathing", {"refine": Breathing()})]:
        plain = presets.lloyd(C, **common, **kw)
        refine = kw.get("refine")
        moves = (SinglePointMoves() if refine is None else (refine, SinglePointMoves()))
        polished = presets.lloyd(C, **common, **dict(kw, refine=moves))
        yield name, plain
        yield name + " + moves", polished


def timed(fit):
    start = time.perf_counter()
    result = fit()
    return result, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--clusters", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz")
    parser.add_argument("--mnist-rows", type=int, default=20000)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    from sklearn.cluster import kmeans_plusplus
    from threadpoolctl import threadpool_limits
    try:
        from fuel.cluster import kmeans as fuel_kmeans
    except ImportError:
        fuel_kmeans = None
        print("fuel is not importable: no Hartigan-Wong peer.\n")
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.n_threads))
    rows = []
    for data, seed, X in data_sets(args):
        C = args.clusters
        with threadpool_limits(args.n_threads):
            seeds = kmeans_plusplus(X, C, random_state=seed)[0]
        fits = {}
        for name, model in clusterkit_fits(X, seeds, C, args.n_threads, seed):
            model, seconds = timed(lambda: model.fit(X))
            passes = [e for e in getattr(model, "refinement_log_", []) if "pass" in e]
            moved = sum(e["rows_moved"] for e in passes if e["kept"]) if passes else ""
            fits[name] = (float(model.inertia_), seconds,
                          model.seconds_.get("refinement", 0.0), moved,
                          model.cluster_centers_)
        if fuel_kmeans is not None:
            starts = [("fuel Hartigan-Wong from Lloyd tol=0", fits["Lloyd tol=0"][4])]
            if X.shape[1] <= 64:  # (from the seeds it runs many passes: minutes on MNIST)
                starts.insert(0, ("fuel Hartigan-Wong from the seeds", seeds))
            for name, start in starts:
                result, seconds = timed(lambda: fuel_kmeans(
                    X, k=C, variant="hartigan_wong", init=np.array(start, dtype=X.dtype),
                    max_iter=500, tol=0))
                # (whether it returned its start as the centres: it did on the blobs)
                same = bool(np.array_equal(result.centers, np.asarray(start, X.dtype)))
                fits[name] = (quantization_error(X, result.centers), seconds, 0.0,
                              "centres = start" if same else "", result.centers)
        base = fits["Lloyd tol=1e-4"][0]
        for name, (err, seconds, refinement, moved, _) in fits.items():
            rows.append([data, seed, name, f"{err:.7g}", f"{err / base:.5f}",
                         f"{seconds:.2f}", f"{refinement:.3f}" if refinement else "",
                         moved])
    headers = ["data", "seed", "fit", "error", "error / Lloyd tol=1e-4's", "seconds",
               "refinement seconds", "rows moved"]
    notes = [f"float32; C = {args.clusters}; blobs: `make_gaussian_blobs(n, d, C, "
             "random_state=seed)`; every fit of a seed from the same k-means++ seeds "
             "(scikit-learn's `kmeans_plusplus`), max_iter = 500; error: quantization error "
             "of the final centres; refinement seconds: `seconds_[\"refinement\"]` (breathing's "
             "rounds included where it runs). fuel's Hartigan-Wong with tol=0 from Lloyd tol=0's "
             "centres, and from the seeds on the blobs (up to 64 features).", command_note()]
    publish(TITLE, format_table(headers, rows), notes, args.write,
            info=machine_info(n_threads=args.n_threads))


if __name__ == "__main__":
    main()
