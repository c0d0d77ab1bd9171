"""Estimated neighbourhoods (Forster & Lücke 2018, eq. 8) from the sums of row chunks.

On data in row chunks every chunk's partial E-step sums, for each pair ``(c, j)`` of a
cluster ``c`` and a cluster ``j`` its rows ``I_c`` evaluated, the statistic of the distances
and how many there were (:func:`pair_sums`); the sums of neighbouring chunks are added where
the chunks ran, in a tree fixed by the chunking (:func:`combine_pair_sums`), and every ``G_c``
is chosen from the sums of all chunks by the rule of
:func:`~clusterkit._kernels._partial.neighbourhoods_estimated` (:func:`choose_neighbourhoods`):
only the ``C x G`` neighbourhoods reach the client.
The sums of one chunk are those of the kernel, term by term and in its order (the rows in
order, each row's candidates in order), so that on data in one chunk the neighbourhoods
are the kernel's bit for bit; on several chunks they differ by the rounding of the partial
sums only.
"""
import numpy as np

__all__ = ["choose_neighbourhoods", "combine_pair_sums", "pair_sums"]


def pair_sums(labels, cand, cand_dist2, n_cand, n_clusters, use_dist):
    """The sums of eq. 8 over one chunk's rows.

    Parameters
    ----------
    labels : ndarray of shape (n_rows,), dtype=int32
        Each row's best cluster, ``-1`` for rows in no ``I_c`` (zero weight).
    cand, cand_dist2, n_cand : ndarray
        The search spaces ``S(n)`` and their squared distances, as
        :func:`~clusterkit._kernels._partial.partial_search` wrote them.
    n_clusters : int
    use_dist : bool
        Sum the distances instead of the squared distances.

    Returns
    -------
    keys : ndarray of shape (n_pairs,), dtype=int64
        ``c * n_clusters + j`` of every pair with ``j != c``, increasing.
    sums : ndarray of shape (n_pairs,), dtype=float64
    counts : ndarray of shape (n_pairs,), dtype=int64
    """
    valid = ((np.arange(cand.shape[1])[None, :] < n_cand[:, None])
             & (labels[:, None] >= 0) & (cand != labels[:, None]))
    c = np.broadcast_to(labels[:, None], cand.shape)[valid].astype(np.int64)
    d = cand_dist2[valid].astype(np.float64)
    if use_dist:
        d = np.sqrt(d)
    keys, inverse = np.unique(c * n_clusters + cand[valid], return_inverse=True)
    # (bincount adds in the order of its input: the kernel's order)
    return keys, np.bincount(inverse, d, len(keys)), np.bincount(inverse, None, len(keys))


def combine_pair_sums(parts):
    """The sums of neighbouring chunks (or of neighbouring groups of them), ``(keys, sums,
    counts)`` as :func:`pair_sums` returns them, from theirs in chunk order (each pair's
    partial sums added in that order)."""
    keys, inverse = np.unique(np.concatenate([p[0] for p in parts]), return_inverse=True)
    sums = np.bincount(inverse, np.concatenate([p[1] for p in parts]), len(keys))
    counts = np.bincount(inverse, np.concatenate([p[2] for p in parts]), len(keys))
    return keys, sums, counts.astype(np.int64)


def choose_neighbourhoods(keys, sums, counts, old):
    """New neighbourhoods from the sums of all the rows: ``G_c`` is ``c`` and the ``G - 1``
    clusters of smallest mean (ties to the lower index); a cluster with fewer evaluated
    pairs keeps old entries in their order to fill up, one without any keeps its row.

    Parameters
    ----------
    keys, sums, counts : ndarray
        As :func:`combine_pair_sums` returns them.
    old : ndarray of shape (n_clusters, G), dtype=int32
        The neighbourhoods of the search.

    Returns
    -------
    neighbourhoods : ndarray of shape (n_clusters, G), dtype=int32
    """
    n_clusters, G = old.shape
    new = old.copy()
    if G == 1 or len(keys) == 0:
        return new
    c, j = keys // n_clusters, keys % n_clusters
    order = np.lexsort((j, sums / counts, c))
    c, j = c[order], j[order]
    rank = np.arange(len(c)) - np.searchsorted(c, c)
    take = rank < G - 1
    new[c[take], 1 + rank[take]] = j[take]
    n_filled = np.bincount(c[take], minlength=n_clusters)
    # (few clusters: those with fewer than G - 1 evaluated neighbours)
    for cluster in np.flatnonzero((n_filled > 0) & (n_filled < G - 1)):
        chosen = new[cluster, 1:1 + n_filled[cluster]]
        rest = [k for k in old[cluster, 1:] if k != cluster and k not in chosen]
        new[cluster, 1 + n_filled[cluster]:] = rest[:G - 1 - n_filled[cluster]]
    return new
