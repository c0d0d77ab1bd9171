"""Whole labels for the rows a fractional transport optimum splits between clusters
(:func:`round_splits`), at no more cost: the last stage of
:func:`~clusterkit.estep.transport.balanced_assignment` under unequal weights."""
import numpy as np

__all__ = ["round_splits"]


def round_splits(rows, clusters, masses, d2, weight):
    """Whole labels for the rows a fractional optimum splits, at no more cost.

    The split entries form a bipartite graph of rows and clusters. While it has an edge,
    take a cycle, or a path between two clusters of one entry each, and shift mass along it
    alternately (every row keeps its weight, every inner cluster its total) in the
    direction that does not raise the cost, until an entry empties or fills its row. Only a
    path's two end clusters change total, each while it holds one split entry: from that
    entry's mass to 0 or to the row's weight, so each cluster's total moves by less than
    the weight of one split row.

    Returns
    -------
    rows, clusters : ndarray
        Each split row once, and the cluster it goes to.
    """
    entry = {}  # (row, cluster) -> [mass, d2]
    for row, cluster, mass, dist in zip(rows.tolist(), clusters.tolist(), masses, d2):
        entry[row, cluster] = [float(mass), float(dist)]
    by_row, by_cluster = {}, {}
    for row, cluster in entry:
        by_row.setdefault(row, set()).add(cluster)
        by_cluster.setdefault(cluster, set()).add(row)
    full = {}

    def drop(row, cluster):
        del entry[row, cluster]
        by_row[row].discard(cluster)
        by_cluster[cluster].discard(row)
        if len(by_row[row]) == 1:  # the row is whole again
            (last,) = by_row[row]
            full[row] = last
            del entry[row, last]
            by_row[row].clear()
            by_cluster[last].discard(row)

    while entry:
        leaves = [c for c, held in by_cluster.items() if len(held) == 1]
        start = leaves[0] if leaves else next(c for c, held in by_cluster.items() if held)
        # walk cluster -> row -> cluster ..., never back along the edge just taken
        walk, seen = [("c", start)], {("c", start): 0}
        came = None
        while True:
            kind, node = walk[-1]
            if kind == "c":
                options = [r for r in by_cluster[node] if r != came]
                if not options:  # a leaf cluster: the path ends here
                    break
                nxt = ("r", min(options))
            else:
                nxt = ("c", min(c for c in by_row[node] if c != came))
            if nxt in seen:  # a cycle: make it start and end at a cluster
                walk = walk[seen[nxt]:] + [nxt]
                if walk[0][0] == "r":
                    walk = walk[1:] + [walk[1]]
                break
            came = node
            seen[nxt] = len(walk)
            walk.append(nxt)
        # edges (row, from cluster, to cluster): mass moves from -> to along the walk
        edges = [(walk[j][1], walk[j - 1][1], walk[j + 1][1])
                 for j in range(1, len(walk) - 1, 2)]
        gain = sum(entry[r, b][1] - entry[r, a][1] for r, a, b in edges)
        if gain > 0:  # the other way round costs less
            edges = [(r, b, a) for r, a, b in edges]
        delta = min(entry[r, a][0] for r, a, _ in edges)
        for r, a, b in edges:
            entry[r, a][0] -= delta
            entry[r, b][0] += delta
        for r, a, b in edges:
            if (r, a) in entry and entry[r, a][0] <= 1e-12 * weight[r]:
                drop(r, a)
    return (np.fromiter(full.keys(), dtype=np.intp, count=len(full)),
            np.fromiter(full.values(), dtype=np.int32, count=len(full)))
