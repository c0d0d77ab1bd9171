"""How many rows a full-batch seeding is worth: rows per centre against final error and time.

The exact and mixture presets seed with greedy k-means++ on ``max(8192, r C)`` rows
(:meth:`clusterkit.FullBatch.seeding_rows`, ``r`` from 64 rows per centre at up to 32
features down to 8 from 256 on). For each data set this script fits the preset with the
seeding on ``r C`` rows for several ``r`` (``SampledSeeder(KMeansPlusPlus(), size=r C,
float32=True)``; "all" is every row), one seed, and reports the whole ``fit`` time, the
seeding's share of it, the final energy (``inertia_`` per sample) relative to the fit seeded
on all rows, and the iterations; the default's ``r`` is marked. On the two 384-feature sets
it also fits ``large_scale(2000)`` in the same run, for the spherical preset's target (a
third of its time at no worse cosine dissimilarity).

Data: the 2000-Gaussian mixture and MNIST of ``bench_minibatch.py --defaults``; unit-norm
embeddings of ``bench_embeddings.py`` (``make_embeddings``) at 384 and 128 features; and
3,000 tight directions in 384 features (unit rows, noise 0.04 per coordinate), 100,000 rows,
where the seeding is nearly the whole fit. Run with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_seeding_rows.py --write
"""
import argparse
import sys
import time
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from clusterkit import KMeansPlusPlus, SampledSeeder, presets
from clusterkit.schedules.schedules import FullBatch

from _common import command_note, data_home, format_table, machine_info, publish, \
    warn_openblas_overrides
from bench_embeddings import make_embeddings
from bench_minibatch import large_k_datasets

TITLE = "Seeding rows per centre: final error and time (bench_seeding_rows.py)"


def tight_directions(n_samples=100_000, n_features=384, n_directions=3000, noise=0.04):
    """Unit rows around ``n_directions`` random directions (separated, tight clusters)."""
    rng = np.random.RandomState(0)
    directions = rng.normal(size=(n_directions, n_features)).astype(np.float32)
    X = directions[rng.randint(n_directions, size=n_samples)]
    X += noise * rng.normal(size=(n_samples, n_features)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def cases(folder):
    """``(name, X, preset, C, rows per centre to try)``; ``None`` in the list is all rows."""
    found = dict(large_k_datasets(folder))
    out = [("mixture 300,000 x 32", found["2000 Gaussians 300000x32"], "lloyd", 1024,
            [None, 64, 32, 16, 8])]
    if "MNIST 70000x784" in found:
        out.append(("MNIST 70,000 x 784", found["MNIST 70000x784"], "lloyd", 1024,
                    [None, 32, 16, 8, 4]))
    out += [("embeddings 100,000 x 384", make_embeddings(100_000, 384), "spherical_kmeans",
             2000, [None, 16, 8, 4]),
            ("embeddings 100,000 x 128", make_embeddings(100_000, 128), "lloyd", 1000,
             [None, 32, 16, 8]),
            ("tight directions 100,000 x 384", tight_directions(), "spherical_kmeans", 2000,
             [None, 16, 8, 4])]
    return out


def fit(X, preset, C, seed):
    """``(seconds, energy per sample, seeding seconds, iterations, model)`` of one fit."""
    model = getattr(presets, preset)(C, random_state=0, **seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        begin = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - begin
    return seconds, model.inertia_ / X.shape[0], model.seconds_["seeding"], model.n_iter_, model


def cosine_dissimilarity(X, centers):
    """Mean ``1 - cos`` of every unit row to its most similar centre."""
    centers = centers / np.linalg.norm(centers, axis=1, keepdims=True)
    best = np.concatenate([(X[s:s + 10_000] @ centers.T).max(axis=1)
                           for s in range(0, X.shape[0], 10_000)])
    return float(np.mean(1.0 - best))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=data_home(), help="folder with mnist.npz")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--only", help="run the data sets whose name contains this")
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    warn_openblas_overrides()
    table, notes = [], []
    with threadpool_limits(limits=args.n_threads):
        for name, X, preset, C, per_centre in cases(args.data):
            if args.only is not None and args.only.lower() not in name.lower():
                continue
            default = FullBatch().seeding_rows(X.shape[0], C, X.shape[1]) // C
            reference = None
            for r in per_centre:
                seed = ({"seed": KMeansPlusPlus()} if r is None else
                        {"seed": SampledSeeder(KMeansPlusPlus(), size=r * C, float32=True)})
                seconds, energy, seeding, n_iter, model = fit(X, preset, C, seed)
                reference = reference or energy
                if r == default:
                    kept = seconds, model
                label = "all" if r is None else f"{r}" + (" (default)" if r == default else "")
                table.append([name, f"{preset}({C})", label, f"{seconds:.1f}",
                              f"{seeding / seconds:.2f}", f"{energy / reference:.4f}",
                              n_iter])
                print(table[-1], file=sys.stderr, flush=True)
            if preset == "spherical_kmeans":
                seconds, model = kept
                spherical = cosine_dissimilarity(X, model.cluster_centers_)
                seconds_ls, _, _, _, big = fit(X, "large_scale", C, {})
                notes.append(
                    f"{name}: large_scale({C}) took {seconds_ls:.1f} s at cosine dissimilarity "
                    f"{cosine_dissimilarity(X, big.cluster_centers_):.5f}; the default "
                    f"spherical_kmeans({C}) {seconds / seconds_ls:.2f} x its time at "
                    f"{spherical:.5f}.")
    notes += [
        f"One seed (random_state=0), {args.n_threads} threads, every row of a data set in the "
        "same run. Rows per centre: the seeding is greedy k-means++ on a uniform sample of "
        "that many rows per centre (float32 copy), 'all' on every row "
        "(`seed=KMeansPlusPlus()`); '(default)' marks the preset's default. Seeding share: "
        "`seconds_['seeding']` over the whole fit. Energy: `inertia_` per sample over the "
        "'all' row's.",
        command_note()]
    headers = ["data", "preset", "rows per centre", "seconds", "seeding share",
               "energy / all rows'", "iterations"]
    publish(TITLE, format_table(headers, table), notes, args.write,
            machine_info(args.n_threads))


if __name__ == "__main__":
    main()
