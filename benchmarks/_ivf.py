"""Recall of an inverted-file (IVF) index built on given centroids, for the index-training rows
of ``bench_embeddings.py --index``: every row goes to the list of its nearest centroid; a
query scans the ``nprobe`` lists of its nearest centroids and returns the 10 nearest rows it
finds; recall@10 is the fraction of the exact 10 nearest rows (brute force) returned.
Plain NumPy, the same for every side's centroids."""
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
    """Indices of the ``k`` nearest rows of ``X`` for every row of ``Q`` (squared L2)."""
    d2 = (Q * Q).sum(1)[:, None] - 2.0 * Q @ X.T + (X * X).sum(1)[None, :]
    k = min(k, X.shape[0])
    part = np.argpartition(d2, k - 1, axis=1)[:, :k]
    return part


def ground_truth(X, Q, k=10, block=256):
    """The exact ``k`` nearest rows of ``X`` for every query, as sets."""
    out = []
    for start in range(0, Q.shape[0], block):
        out.extend(set(row) for row in _top(Q[start:start + block], X, k))
    return out


class IVF:
    """An IVF index on ``centroids``: each row of ``X`` in the list of its nearest one."""

    def __init__(self, X, centroids, n_threads):
        self.X, self.centroids = X, np.ascontiguousarray(centroids, dtype=np.float32)
        assign = nearest(X, self.centroids, n_threads)
        order = np.argsort(assign, kind="stable")
        self.ids = order
        self.starts = np.searchsorted(assign[order], np.arange(len(self.centroids) + 1))

    def recall(self, Q, truth, nprobe, k=10):
        """Mean recall@k of the queries ``Q`` at ``nprobe`` lists."""
        probes = _top(Q, self.centroids, nprobe)
        hits = 0
        for q, lists in enumerate(probes):
            ids = np.concatenate([self.ids[self.starts[c]:self.starts[c + 1]] for c in lists])
            if ids.size == 0:
                continue
            found = ids[_top(Q[q:q + 1], self.X[ids], k)[0]]
            hits += len(truth[q].intersection(found.tolist()))
        return hits / (k * len(Q))
