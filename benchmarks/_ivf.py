"""Recall of an inverted-file (IVF) index built on given centroids, for the index-training rows
of ``bench_embeddings.py --index`` and ``bench_balanced.py --part index``: every row goes to
the list of its nearest centroid (or to the list its labels name, for balanced lists); a
query scans the ``nprobe`` lists of its nearest centroids and returns the 10 nearest rows it
finds; recall@10 is the fraction of the exact 10 nearest rows (brute force) returned.

A true neighbour in a scanned list is always returned (it is nearer than every other row
the query sees), and one in another list never is, so recall@10 is the fraction of the true
10 nearest rows that lie in the scanned lists: no search is run. The same for every side's
centroids.
"""
import numpy as np

from clusterkit._kernels import _assign


def nearest(A, B, n_threads):
    """The nearest row of ``B`` for every row of ``A`` (clusterkit's exact kernel)."""
    labels = np.empty(A.shape[0], dtype=np.int32)
    _assign.assign_full(np.ascontiguousarray(A, dtype=np.float32),
                        np.ascontiguousarray(B, dtype=np.float32), labels,
                        np.empty(A.shape[0], dtype=np.float32), n_threads)
    return labels


def _top(Q, X, k):
    """Indices of the ``k`` nearest rows of ``X`` for every row of ``Q`` (squared L2), in
    no particular order."""
    d2 = (X * X).sum(1)[None, :] - 2.0 * Q @ X.T
    k = min(k, X.shape[0])
    return np.argpartition(d2, k - 1, axis=1)[:, :k]


def ground_truth(X, Q, k=10, block=512):
    """The exact ``k`` nearest rows of ``X`` for every query: ``(n_queries, k)`` ids."""
    return np.concatenate([_top(Q[s:s + block], X, k) for s in range(0, len(Q), block)])


def recall(X, centroids, Q, truth, nprobe, n_threads, cells=None):
    """Recall@k (``k = truth.shape[1]``) of an IVF index of ``X`` on ``centroids`` for the
    queries ``Q`` at ``nprobe`` lists; ``cells``: each row's list (``None``: its nearest
    centroid's; balanced lists give their bounded labels)."""
    if cells is None:
        cells = nearest(X, centroids, n_threads)
    probes = _top(Q, np.asarray(centroids, dtype=np.float32), nprobe)
    found = (cells[truth][:, :, None] == probes[:, None, :]).any(axis=2)
    return float(found.mean())
