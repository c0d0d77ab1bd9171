"""k-means on sparse (CSR) data against scikit-learn: Lloyd, Elkan and mini-batch.

The data stay a ``scipy.sparse.csr_matrix`` on both sides, float64:

``tfidf``
    A generated TF-IDF-like matrix (:func:`tfidf_like`; by default 100,000 documents x 20,000
    terms, about 0.4 % non-zeros): Zipf term frequencies, topics with their own frequent
    terms, ``tf * idf`` weights and l2-normalised rows, as ``TfidfVectorizer`` makes them.
``mnist``
    MNIST's 60,000 training images as CSR (about 19 % non-zeros), when ``--data`` (default
    ``$CLUSTERKIT_DATA``) holds ``mnist.npz``.

For each data set and each ``C`` in ``--clusters`` (default 100 and 1,000), from the same
initial centres (``C`` distinct rows drawn with ``random_state=0``) and with ``n_threads``
threads on both sides:

* ``lloyd``: ``presets.lloyd`` against ``KMeans(algorithm="lloyd")``, ``--max-iter``
  iterations (``tol=0``; both stop earlier only at a fixed point);
* ``elkan``: ``presets.elkan`` against ``KMeans(algorithm="elkan")``, the same;
* ``minibatch``: ``presets.minibatch``'s composition (:class:`~clusterkit.MiniBatch`)
  against ``MiniBatchKMeans``, batches of 1,024 for ``--passes`` passes, no early stop on
  either side.

Each time is the median of ``--repeats`` complete fits (validation and the final labelling
pass included) in this one process; the ratio is clusterkit's time over scikit-learn's (the
target for Lloyd is at most 1.5), and the inertia ratio is clusterkit's final ``inertia_``
over scikit-learn's. Run with the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_sparse.py --write
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from clusterkit import Clusterer, MiniBatch, presets
from clusterkit.datasets import load_benchmark

from _common import (RESULTS_PATH, command_note, data_home, format_table, machine_info,
                     median_time, publish, warn_openblas_overrides)

TITLE = "Sparse (CSR) k-means: clusterkit vs scikit-learn"
ALGORITHMS = ("lloyd", "elkan", "minibatch")
BATCH_SIZE = 1024

# The fits here run a fixed number of iterations on purpose (tol=0).
warnings.filterwarnings("ignore", category=ConvergenceWarning)


def tfidf_like(n_docs=100_000, n_terms=20_000, n_topics=50, doc_length=120, topic_share=0.5,
               zipf=1.1, seed=0):
    """A TF-IDF-like CSR matrix of shape (n_docs, n_terms) and each document's topic.

    Every document draws a Poisson(``doc_length``) number of tokens; each token is, with
    probability ``topic_share``, one of its topic's 400 own terms (Zipf-distributed among
    them), else a term of the whole vocabulary (Zipf-distributed by rank). Counts become
    ``tf * idf`` with scikit-learn's smoothed ``idf = log((1 + n) / (1 + df)) + 1``, and rows
    are l2-normalised.
    """
    rng = np.random.default_rng(seed)
    vocabulary = np.cumsum(np.arange(1, n_terms + 1) ** -zipf)
    own_terms = np.stack([rng.permutation(n_terms)[:400] for _ in range(n_topics)])
    own = np.cumsum(np.arange(1, 401) ** -zipf)
    topics = rng.integers(0, n_topics, n_docs)
    docs = np.repeat(np.arange(n_docs), rng.poisson(doc_length, n_docs) + 1)
    terms = np.minimum(np.searchsorted(vocabulary, rng.random(docs.size) * vocabulary[-1]),
                       n_terms - 1)
    from_topic = rng.random(docs.size) < topic_share
    rank = np.minimum(np.searchsorted(own, rng.random(docs.size) * own[-1]), 399)
    terms[from_topic] = own_terms[topics[docs[from_topic]], rank[from_topic]]
    counts = sp.csr_matrix((np.ones(docs.size), (docs, terms)), shape=(n_docs, n_terms))
    counts.sum_duplicates()
    df = np.bincount(counts.indices, minlength=n_terms)
    X = counts.multiply(np.log((1 + n_docs) / (1 + df)) + 1).tocsr()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / norms) @ X), topics


def _fit(algorithm, library, X, init, args):
    """One complete fit; returns the fitted estimator."""
    n_clusters = init.shape[0]
    if library == "clusterkit":
        if algorithm == "minibatch":
            km = Clusterer(n_clusters, seed=init, schedule=MiniBatch(
                BATCH_SIZE, max_passes=args.passes, max_no_improvement=None),
                random_state=0, n_threads=args.n_threads)  # presets.minibatch, no early stop
        else:
            km = getattr(presets, algorithm)(n_clusters, seed=init, max_iter=args.max_iter,
                                             tol=0, n_threads=args.n_threads)
        return km.fit(X)
    if algorithm == "minibatch":
        km = MiniBatchKMeans(n_clusters, init=init, n_init=1, batch_size=BATCH_SIZE,
                             max_iter=int(args.passes), max_no_improvement=None, tol=0,
                             random_state=0)
    else:
        km = KMeans(n_clusters, init=init, n_init=1, max_iter=args.max_iter, tol=0,
                    algorithm=algorithm)
    # threadpool_limits sets the OpenMP runtime scikit-learn reads its thread count from
    with threadpool_limits(limits=args.n_threads):
        return km.fit(X)


def _datasets(args):
    """``(name, X)`` of the data sets to run."""
    if "tfidf" in args.datasets:
        X, _ = tfidf_like(args.docs, args.terms)
        yield "tfidf", X
    if "mnist" in args.datasets:
        if args.data is None:
            print("mnist: no --data (or $CLUSTERKIT_DATA); skipped", flush=True)
            return
        X, _ = load_benchmark("mnist", args.data)
        yield "mnist", sp.csr_matrix(np.asarray(X, dtype=np.float64))


def run(args):
    """Time every algorithm on every data set and C; returns the table and notes."""
    rows, notes = [], []
    for name, X in _datasets(args):
        density = X.nnz / (X.shape[0] * X.shape[1])
        notes.append(f"{name}: {X.shape[0]:,} x {X.shape[1]:,}, {X.nnz:,} non-zeros "
                     f"({100 * density:.2f} %), float64 CSR.")
        for n_clusters in args.clusters:
            rng = np.random.RandomState(0)
            init = X[rng.choice(X.shape[0], n_clusters, replace=False)].toarray()
            for algorithm in args.algorithms:
                times, fits = {}, {}
                for library in ("clusterkit", "scikit-learn"):
                    print(f"[{name} C={n_clusters}] {algorithm}: {library} ...", flush=True)
                    times[library], _, fits[library] = median_time(
                        lambda: _fit(algorithm, library, X, init, args), args.repeats)
                ck, sk = fits["clusterkit"], fits["scikit-learn"]
                ratio = times["clusterkit"] / times["scikit-learn"]
                print(f"    {times['clusterkit']:.2f} s vs {times['scikit-learn']:.2f} s "
                      f"({ratio:.2f}x)", flush=True)
                iterations = (f"{args.passes:g} passes" if algorithm == "minibatch"
                              else f"{ck.n_iter_} / {sk.n_iter_}")
                rows.append([name, n_clusters, algorithm, iterations,
                             f"{times['clusterkit']:.2f}", f"{times['scikit-learn']:.2f}",
                             f"{ratio:.2f}", f"{ck.inertia_ / sk.inertia_:.5f}"])
    return rows, notes


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python "
               "benchmarks/bench_sparse.py --write",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data", default=data_home(),
                        help="folder with mnist.npz (default: $CLUSTERKIT_DATA)")
    parser.add_argument("--datasets", nargs="+", choices=("tfidf", "mnist"),
                        default=["tfidf", "mnist"])
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS,
                        default=list(ALGORITHMS))
    parser.add_argument("--clusters", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--docs", type=int, default=100_000, help="documents of 'tfidf'")
    parser.add_argument("--terms", type=int, default=20_000, help="terms of 'tfidf'")
    parser.add_argument("--max-iter", type=int, default=2,
                        help="iterations of the Lloyd and Elkan fits")
    parser.add_argument("--passes", type=float, default=1.0,
                        help="passes of the mini-batch fits")
    parser.add_argument("--repeats", type=int, default=2,
                        help="timed fits per measurement; the median is reported")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--write", action="store_true",
                        help=f"write the section of {RESULTS_PATH.name}")
    args = parser.parse_args(argv)

    warn_openblas_overrides()
    rows, notes = run(args)
    table = format_table(["data", "C", "algorithm", "iterations (ck / sk)", "clusterkit s",
                          "scikit-learn s", "time ratio", "inertia ratio"], rows)
    notes = [command_note(),
             f"Times: median of {args.repeats} complete fits in one process (validation and "
             "the final labelling pass included), float64, the same initial centres on both "
             f"sides (C rows drawn with random_state=0); {args.n_threads} threads "
             "(clusterkit's n_threads; scikit-learn inside threadpoolctl's "
             f"threadpool_limits({args.n_threads})). 'time ratio' is clusterkit / "
             "scikit-learn (below 1: clusterkit faster); 'inertia ratio' clusterkit's final "
             "inertia_ over scikit-learn's.",
             "Lloyd and Elkan: the same iterations from the same start; their inertias differ "
             "only where a cluster emptied and the two libraries relocated it by their own "
             "rules. Mini-batch: batches of "
             f"{BATCH_SIZE} drawn independently by each library, no early stop "
             "(max_no_improvement=None), so the inertia ratio compares two random runs.",
             *notes]
    # one section per data set selection, so that a run on MNIST does not replace the other
    title = f"{TITLE} ({', '.join(args.datasets)})"
    publish(title, table, notes, args.write, machine_info(args.n_threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
