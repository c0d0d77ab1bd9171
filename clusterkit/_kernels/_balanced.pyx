"""Capacitated assignment on a sparse candidate graph: successive shortest paths.

The transport problem: row ``i`` holds mass ``m_i``, which goes to clusters among its
candidates at cost ``d_ic`` per unit; cluster ``c`` must hold between ``lower_c`` and
``upper_c``. As a minimum-cost flow: rows -> clusters -> one sink ``t``, with the edge
``c -> t`` carrying ``f_c`` in ``[lower_c, upper_c]``. The residual graph is searched on the
``C + 1`` nodes {clusters, t} only: a cluster-to-cluster edge moves (part of) one row, and
its reduced cost is the best over the rows the cluster holds. Potentials are the clusters'
prices ``p_c`` (a row belongs to a candidate minimising ``d_ic - p_c``) and the sink's
``theta`` (``p_c > theta`` only for a cluster at its lower bound, ``p_c < theta`` only at its
upper bound), so any prices are a valid start: a warm start is only faster.
"""
from libc.math cimport INFINITY, fabs
from libc.stdlib cimport calloc, free, malloc, realloc

import numpy as np


cdef struct _Pool:
    # entries: (row, cluster, mass, distance); a row holds one entry per cluster it is in
    Py_ssize_t cap, free_head
    int* row
    int* clu
    double* mass
    double* d2
    Py_ssize_t* next      # next entry of the same cluster (or the free list)
    Py_ssize_t* prev      # previous entry of the same cluster
    Py_ssize_t* rnext     # next entry of the same row


cdef int _resize(void** block, size_t nbytes) noexcept nogil:
    """``realloc`` of ``block[0]`` to ``nbytes``: -1 (and the block as it was) if it fails."""
    cdef void* p = realloc(block[0], nbytes)
    if p == NULL:
        return -1
    block[0] = p
    return 0


cdef int _pool_grow(_Pool* pool, Py_ssize_t new) noexcept nogil:
    """Room for ``new`` entries in all (more than ``pool.cap``); the new ones free."""
    cdef Py_ssize_t old = pool.cap, e
    if (_resize(<void**> &pool.row, new * sizeof(int))
            or _resize(<void**> &pool.clu, new * sizeof(int))
            or _resize(<void**> &pool.mass, new * sizeof(double))
            or _resize(<void**> &pool.d2, new * sizeof(double))
            or _resize(<void**> &pool.next, new * sizeof(Py_ssize_t))
            or _resize(<void**> &pool.prev, new * sizeof(Py_ssize_t))
            or _resize(<void**> &pool.rnext, new * sizeof(Py_ssize_t))):
        return -1
    for e in range(old, new):
        pool.next[e] = e + 1 if e + 1 < new else pool.free_head
    pool.free_head = old
    pool.cap = new
    return 0


cdef void _pool_free(_Pool* pool) noexcept nogil:
    free(pool.row)
    free(pool.clu)
    free(pool.mass)
    free(pool.d2)
    free(pool.next)
    free(pool.prev)
    free(pool.rnext)


cdef Py_ssize_t _new_entry(_Pool* pool, Py_ssize_t* clu_head, Py_ssize_t* row_head, int i,
                           int c, double mass, double d2) noexcept nogil:
    """Add row ``i``'s entry in cluster ``c`` (-1 if memory ran out)."""
    cdef Py_ssize_t e
    if pool.free_head < 0 or pool.free_head >= pool.cap:
        if _pool_grow(pool, 2 * pool.cap + 16) != 0:
            return -1
    e = pool.free_head
    pool.free_head = pool.next[e]
    pool.row[e], pool.clu[e], pool.mass[e], pool.d2[e] = i, c, mass, d2
    pool.prev[e] = -1
    pool.next[e] = clu_head[c]
    if clu_head[c] >= 0:
        pool.prev[clu_head[c]] = e
    clu_head[c] = e
    pool.rnext[e] = row_head[i]
    row_head[i] = e
    return e


cdef void _drop_entry(_Pool* pool, Py_ssize_t* clu_head, Py_ssize_t* row_head,
                      Py_ssize_t e) noexcept nogil:
    cdef int c = pool.clu[e], i = pool.row[e]
    cdef Py_ssize_t f
    if pool.prev[e] >= 0:
        pool.next[pool.prev[e]] = pool.next[e]
    else:
        clu_head[c] = pool.next[e]
    if pool.next[e] >= 0:
        pool.prev[pool.next[e]] = pool.prev[e]
    if row_head[i] == e:
        row_head[i] = pool.rnext[e]
    else:
        f = row_head[i]
        while pool.rnext[f] != e:
            f = pool.rnext[f]
        pool.rnext[f] = pool.rnext[e]
    pool.clu[e] = -1  # (a search's path may still name it: see pred_row)
    pool.next[e] = pool.free_head
    pool.free_head = e


cdef Py_ssize_t _row_entry(_Pool* pool, Py_ssize_t* row_head, int i, int c) noexcept nogil:
    cdef Py_ssize_t e = row_head[i]
    while e >= 0:
        if pool.clu[e] == c:
            return e
        e = pool.rnext[e]
    return -1


cdef struct _Edges:
    # per cluster u: the other clusters its rows can move to, each with the least
    # d_ic' - d_iu over u's rows (its entry, and d_ic') and the second least (entry -1:
    # not known), kept as rows leave and join the cluster
    Py_ssize_t* count
    Py_ssize_t* cap
    int** to
    double** key
    Py_ssize_t** entry
    double** d2
    double** key2
    Py_ssize_t** entry2
    double** d2b
    Py_ssize_t scanned


cdef int _edges_reserve(_Edges* edges, Py_ssize_t u, Py_ssize_t n) noexcept nogil:
    """Room for ``n`` edges of cluster ``u``."""
    if n <= edges.cap[u]:
        return 0
    if (_resize(<void**> &edges.to[u], n * sizeof(int))
            or _resize(<void**> &edges.key[u], n * sizeof(double))
            or _resize(<void**> &edges.entry[u], n * sizeof(Py_ssize_t))
            or _resize(<void**> &edges.d2[u], n * sizeof(double))
            or _resize(<void**> &edges.key2[u], n * sizeof(double))
            or _resize(<void**> &edges.entry2[u], n * sizeof(Py_ssize_t))
            or _resize(<void**> &edges.d2b[u], n * sizeof(double))):
        return -1
    edges.cap[u] = n
    return 0


cdef int _rebuild_edges(_Edges* edges, Py_ssize_t u, _Pool* pool, Py_ssize_t* clu_head,
                        const long long[::1] cand_ptr, const int[::1] cand_idx,
                        const double[::1] cand_d2, double* scratch_key,
                        Py_ssize_t* scratch_entry, double* scratch_d2,
                        double* scratch_key2, Py_ssize_t* scratch_entry2,
                        double* scratch_d2b, Py_ssize_t* touched) noexcept nogil:
    """Rebuild cluster ``u``'s edges from the rows it holds (the scratch entries are -1
    on entry and left so). Room for twice the edges found, so that joining rows rarely
    force another rebuild."""
    cdef Py_ssize_t e = clu_head[u], i, k, c2, n_touched = 0, j
    cdef double key
    edges.scanned = 0
    while e >= 0:
        i = pool.row[e]
        for k in range(cand_ptr[i], cand_ptr[i + 1]):
            c2 = cand_idx[k]
            if c2 == u:
                continue
            key = cand_d2[k] - pool.d2[e]
            if scratch_entry[c2] < 0:
                touched[n_touched] = c2
                n_touched += 1
                scratch_key[c2], scratch_entry[c2], scratch_d2[c2] = key, e, cand_d2[k]
            elif key < scratch_key[c2]:
                scratch_key2[c2], scratch_entry2[c2], scratch_d2b[c2] = (
                    scratch_key[c2], scratch_entry[c2], scratch_d2[c2])
                scratch_key[c2], scratch_entry[c2], scratch_d2[c2] = key, e, cand_d2[k]
            elif scratch_entry2[c2] < 0 or key < scratch_key2[c2]:
                scratch_key2[c2], scratch_entry2[c2], scratch_d2b[c2] = key, e, cand_d2[k]
        edges.scanned += cand_ptr[i + 1] - cand_ptr[i]
        e = pool.next[e]
    if _edges_reserve(edges, u, 2 * n_touched + 4) != 0:
        return -1
    for j in range(n_touched):
        c2 = touched[j]
        edges.to[u][j] = <int> c2
        edges.key[u][j] = scratch_key[c2]
        edges.entry[u][j] = scratch_entry[c2]
        edges.d2[u][j] = scratch_d2[c2]
        edges.key2[u][j] = scratch_key2[c2]
        edges.entry2[u][j] = scratch_entry2[c2]
        edges.d2b[u][j] = scratch_d2b[c2]
        scratch_entry[c2] = -1
        scratch_entry2[c2] = -1
    edges.count[u] = n_touched
    return 0


cdef void _edges_leave(_Edges* edges, Py_ssize_t u, Py_ssize_t e, char* dirty) noexcept nogil:
    """Entry ``e`` leaves cluster ``u``: where it was the least, the second takes its
    place; where no second is known, the cluster is rebuilt at its next search."""
    cdef Py_ssize_t j
    if dirty[u]:
        return
    for j in range(edges.count[u]):
        if edges.entry[u][j] == e:
            if edges.entry2[u][j] < 0:
                dirty[u] = 1
                return
            edges.key[u][j] = edges.key2[u][j]
            edges.entry[u][j] = edges.entry2[u][j]
            edges.d2[u][j] = edges.d2b[u][j]
            edges.entry2[u][j] = -1
        elif edges.entry2[u][j] == e:
            edges.entry2[u][j] = -1


cdef void _edges_join(_Edges* edges, Py_ssize_t v, Py_ssize_t e, Py_ssize_t i, double d2,
                      const long long[::1] cand_ptr, const int[::1] cand_idx,
                      const double[::1] cand_d2, char* dirty) noexcept nogil:
    """Row ``i`` joins cluster ``v`` as entry ``e`` at squared distance ``d2``: each of
    its other candidates' edges takes it where it is less than the least (or than a known
    second)."""
    cdef Py_ssize_t k, c2, j, n
    cdef double key
    if dirty[v]:
        return
    for k in range(cand_ptr[i], cand_ptr[i + 1]):
        c2 = cand_idx[k]
        if c2 == v:
            continue
        key = cand_d2[k] - d2
        n = edges.count[v]
        for j in range(n):
            if edges.to[v][j] == c2:
                break
        else:
            if n == edges.cap[v]:
                dirty[v] = 1
                return
            edges.to[v][n] = <int> c2
            edges.key[v][n], edges.entry[v][n], edges.d2[v][n] = key, e, cand_d2[k]
            edges.entry2[v][n] = -1
            edges.count[v] = n + 1
            continue
        if key < edges.key[v][j]:
            edges.key2[v][j] = edges.key[v][j]
            edges.entry2[v][j] = edges.entry[v][j]
            edges.d2b[v][j] = edges.d2[v][j]
            edges.key[v][j], edges.entry[v][j], edges.d2[v][j] = key, e, cand_d2[k]
        elif edges.entry2[v][j] >= 0 and key < edges.key2[v][j]:
            edges.key2[v][j], edges.entry2[v][j], edges.d2b[v][j] = key, e, cand_d2[k]


cdef struct _Heap:
    # a binary min-heap of (distance, node), stale entries skipped when popped
    Py_ssize_t size, cap
    double* key
    Py_ssize_t* node


cdef int _heap_push(_Heap* heap, double key, Py_ssize_t node) noexcept nogil:
    cdef Py_ssize_t i, parent
    cdef void* p
    if heap.size == heap.cap:
        p = realloc(heap.key, (2 * heap.cap + 16) * sizeof(double))
        if p == NULL:
            return -1
        heap.key = <double*> p
        p = realloc(heap.node, (2 * heap.cap + 16) * sizeof(Py_ssize_t))
        if p == NULL:
            return -1
        heap.node = <Py_ssize_t*> p
        heap.cap = 2 * heap.cap + 16
    i = heap.size
    heap.size += 1
    while i > 0:
        parent = (i - 1) // 2
        if heap.key[parent] <= key:
            break
        heap.key[i], heap.node[i] = heap.key[parent], heap.node[parent]
        i = parent
    heap.key[i], heap.node[i] = key, node
    return 0


cdef Py_ssize_t _heap_pop(_Heap* heap) noexcept nogil:
    """The node of least distance, removed (-1 if empty)."""
    cdef Py_ssize_t top, i, child, last_node
    cdef double last_key
    if heap.size == 0:
        return -1
    top = heap.node[0]
    heap.size -= 1
    last_key, last_node = heap.key[heap.size], heap.node[heap.size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= heap.size:
            break
        if child + 1 < heap.size and heap.key[child + 1] < heap.key[child]:
            child += 1
        if heap.key[child] >= last_key:
            break
        heap.key[i], heap.node[i] = heap.key[child], heap.node[child]
        i = child
    if heap.size > 0:
        heap.key[i], heap.node[i] = last_key, last_node
    return top


def transport(const long long[::1] cand_ptr,   # IN  (n_rows + 1,)
              const int[::1] cand_idx,         # IN  (n_cand,) candidate clusters of each row
              const double[::1] cand_d2,       # IN  (n_cand,) their squared distances
              const double[::1] mass,          # IN  (n_rows,) > 0
              const double[::1] lower,         # IN  (n_clusters,)
              const double[::1] upper,         # IN  (n_clusters,)
              double[::1] prices,              # IN/OUT (n_clusters + 1,): p_c, then theta
              int[::1] labels,                 # OUT (n_rows,) the cluster of most of the row
              double[::1] label_d2,            # OUT (n_rows,) its squared distance
              double tol,
              double snap=1e-9,
              Py_ssize_t stop_after=16,
              bint all_sources=True):
    """Solve the transport problem on the candidate graph (see the module notes).

    Parameters
    ----------
    cand_ptr, cand_idx, cand_d2
        The candidates of row ``i`` are ``cand_idx[cand_ptr[i]:cand_ptr[i + 1]]``, at
        squared distances ``cand_d2[...]``; at least one each, no cluster twice.
    mass : ndarray of shape (n_rows,)
        Each row's supply (1 for a bound in rows).
    lower, upper : ndarray of shape (n_clusters,)
        The bounds, ``lower <= upper``, with ``sum(lower) <= sum(mass) <= sum(upper)``.
    prices : ndarray of shape (n_clusters + 1,)
        The start's prices and sink potential (any values; zeros for a cold start);
        overwritten with the optimum's, which are optimal duals on the candidate graph.
    labels, label_d2 : ndarray of shape (n_rows,)
        Output: for each row the cluster holding most of its mass, and the distance to it.
    tol : float
        Excess below which a node counts as balanced (0 for integral masses and bounds,
        whose arithmetic is exact in float64).
    snap : float, default=1e-9
        A start's price within ``snap`` (relative) of the sink's is set to it.
    stop_after : int, default=16
        A search ends once it settled this many nodes with a deficit (or all of them).
    all_sources : bool, default=True
        Search from every node with excess at once, unless a single node has a deficit
        (one path per search then, whatever the sources); ``False``: always from one at a
        time, in turn (it settles only the clusters nearer than its nearest deficits,
        where all sources settle every source first, but finds fewer paths per search:
        fits of 20,000 and 100,000 rows measured the same or slower).

    Returns
    -------
    status : int
        0: solved; 1: some excess cannot reach a deficit along candidate edges (the
        candidates must widen; ``prices`` then still hold valid duals to restart from); 2:
        out of memory.
    splits : tuple of ndarray
        ``(rows, clusters, masses, d2)`` of every entry of the rows held by more than one
        cluster (none when masses and bounds are integers).
    n_paths, n_searches, n_scanned : int
        Augmenting paths moved along, searches, and row candidates the searches scanned
        (the work).

    Notes
    -----
    Each round runs Dijkstra from the nodes with excess until it settled ``stop_after``
    deficits (or all of them), raises every potential by its distance capped at the last
    settled one's (reduced costs stay non-negative, and the settled part of the
    shortest-path tree's become zero), then moves the
    bottleneck along the tree's path to every deficit it reached, nearest first, skipping
    a path whose row an earlier one moved: any path of zero reduced cost keeps
    complementary slackness, so one search serves many paths. A row moves only along a
    zero reduced cost, so each row stays at a candidate of least ``d - p``: the result
    satisfies complementary slackness on the candidate graph. With integral masses and
    bounds every quantity is an integer, so no row is ever split. A search relaxes each
    cluster's edges: per other cluster, its row of least ``d_ic' - d_iu`` (which prices do
    not change), kept from search to search with the second least: a row that joins updates
    them, one that leaves hands its place to the second, and the cluster is rebuilt from
    its rows only when no second is known; a round costs the edges of the clusters it
    settles and the rows of the few rebuilt.
    """
    cdef Py_ssize_t n_rows = mass.shape[0], n_clusters = lower.shape[0]
    cdef Py_ssize_t n_nodes = n_clusters + 1, t = n_clusters
    cdef Py_ssize_t i, k, c, c2, v, u, e, e2, e3, best_k, target, source
    cdef double best, val, d, nd, rc, delta, moved, total = 0.0, theta, D
    cdef long long n_paths = 0, n_scanned = 0, n_searches = 0
    cdef Py_ssize_t n, n_settled
    cdef Py_ssize_t reached, n_deficits, cursor = 0
    cdef int status = 0
    cdef _Pool pool
    # the solve's work arrays, in three blocks by type (one allocation, one check, one
    # free each): per cluster, per node (the clusters and the sink) and per row
    cdef Py_ssize_t* indices = <Py_ssize_t*> malloc(
        (4 * n_clusters + 4 * n_nodes + n_rows) * sizeof(Py_ssize_t))
    cdef double* values = <double*> malloc((6 * n_clusters + 3 * n_nodes) * sizeof(double))
    cdef char* flags = <char*> malloc(n_clusters + n_nodes)
    cdef Py_ssize_t *clu_head, *scratch_entry, *scratch_entry2, *touched
    cdef Py_ssize_t *pred, *pred_entry, *pred_row, *order, *row_head
    cdef double *size, *flow, *scratch_key, *scratch_d2, *scratch_key2, *scratch_d2b
    cdef double *excess, *dist, *pred_d2
    cdef char *dirty, *settled
    clu_head, scratch_entry = indices, indices + n_clusters
    scratch_entry2, touched = indices + 2 * n_clusters, indices + 3 * n_clusters
    pred = indices + 4 * n_clusters
    pred_entry, pred_row, order = pred + n_nodes, pred + 2 * n_nodes, pred + 3 * n_nodes
    row_head = pred + 4 * n_nodes
    size, flow, scratch_key = values, values + n_clusters, values + 2 * n_clusters
    scratch_d2 = values + 3 * n_clusters
    scratch_key2, scratch_d2b = values + 4 * n_clusters, values + 5 * n_clusters
    excess = values + 6 * n_clusters
    dist, pred_d2 = excess + n_nodes, excess + 2 * n_nodes
    dirty, settled = flags, flags + n_clusters
    cdef _Edges edges
    cdef _Heap heap
    heap.size = heap.cap = 0
    heap.key = NULL
    heap.node = NULL
    cdef Py_ssize_t j
    edges.count = <Py_ssize_t*> calloc(n_clusters, sizeof(Py_ssize_t))
    edges.cap = <Py_ssize_t*> calloc(n_clusters, sizeof(Py_ssize_t))
    edges.to = <int**> calloc(n_clusters, sizeof(int*))
    edges.key = <double**> calloc(n_clusters, sizeof(double*))
    edges.entry = <Py_ssize_t**> calloc(n_clusters, sizeof(Py_ssize_t*))
    edges.d2 = <double**> calloc(n_clusters, sizeof(double*))
    edges.key2 = <double**> calloc(n_clusters, sizeof(double*))
    edges.entry2 = <Py_ssize_t**> calloc(n_clusters, sizeof(Py_ssize_t*))
    edges.d2b = <double**> calloc(n_clusters, sizeof(double*))
    pool.cap = 0
    pool.free_head = -1
    pool.row = pool.clu = NULL
    pool.mass = pool.d2 = NULL
    pool.next = pool.prev = pool.rnext = NULL
    if (indices == NULL or values == NULL or flags == NULL or edges.count == NULL
            or edges.key2 == NULL or edges.entry2 == NULL or edges.d2b == NULL
            or edges.cap == NULL or edges.to == NULL or edges.key == NULL
            or edges.entry == NULL or edges.d2 == NULL):
        status = 2
    with nogil:
        if status == 0:
            if _pool_grow(&pool, n_rows + n_clusters + 16) != 0:
                status = 2
        if status == 0:
            for c in range(n_clusters):
                clu_head[c] = -1
                size[c] = 0.0
                dirty[c] = 1
                scratch_entry[c] = -1
                scratch_entry2[c] = -1
            # every row at a candidate of least d - p
            for i in range(n_rows):
                row_head[i] = -1
                best_k = cand_ptr[i]
                best = cand_d2[best_k] - prices[cand_idx[best_k]]
                for k in range(cand_ptr[i] + 1, cand_ptr[i + 1]):
                    val = cand_d2[k] - prices[cand_idx[k]]
                    if val < best:
                        best, best_k = val, k
                c = cand_idx[best_k]
                if _new_entry(&pool, clu_head, row_head, <int> i, <int> c, mass[i],
                              cand_d2[best_k]) < 0:
                    status = 2
                    break
                size[c] += mass[i]
                total += mass[i]
        if status == 0:
            # the sink's edges as complementary slackness allows at these prices
            theta = prices[t]
            excess[t] = -total
            for c in range(n_clusters):
                # a price a rounding away from the sink's is the sink's: the warm start of
                # a cluster that was strictly between its bounds (a path's potentials
                # round differently)
                if fabs(prices[c] - theta) <= snap * (fabs(theta) + 1.0):
                    prices[c] = theta
                if prices[c] > theta:
                    flow[c] = lower[c]
                elif prices[c] < theta:
                    flow[c] = upper[c]
                else:
                    flow[c] = min(max(size[c], lower[c]), upper[c])
                excess[c] = size[c] - flow[c]
                excess[t] += flow[c]
        while status == 0:
            # Dijkstra from all the excess over every node it reaches
            # from every node with excess or (not all_sources, or when one path per search is
            # all there is: a single deficit) the next one in turn
            source = -1
            n_deficits = 0
            for v in range(n_nodes):
                settled[v] = 0
                pred[v] = -1
                dist[v] = INFINITY
                if excess[v] < -tol:
                    n_deficits += 1
            heap.size = 0
            for j in range(n_nodes):
                v = (cursor + j) % n_nodes
                if excess[v] > tol:
                    source = v
                    dist[v] = 0.0
                    if _heap_push(&heap, 0.0, v) != 0:
                        status = 2
                    if not all_sources or n_deficits == 1:
                        break
            if source < 0:
                break
            cursor = source + 1
            n_settled = 0
            reached = 0
            while status == 0:
                u = _heap_pop(&heap)
                if u < 0:
                    break
                if settled[u]:  # (a stale entry: the node was settled at a shorter one)
                    continue
                settled[u] = 1
                order[n_settled] = u
                n_settled += 1
                if excess[u] < -tol:
                    reached += 1
                    if reached >= stop_after or reached == n_deficits:
                        break
                d = dist[u]
                theta = prices[t]
                if u == t:
                    for c in range(n_clusters):
                        if not settled[c] and flow[c] > lower[c] + tol:
                            rc = theta - prices[c]
                            nd = d + (rc if rc > 0 else 0.0)
                            if nd < dist[c]:
                                dist[c], pred[c], pred_entry[c] = nd, t, -1
                                if _heap_push(&heap, nd, c) != 0:
                                    status = 2
                    continue
                if not settled[t] and flow[u] < upper[u] - tol:
                    rc = prices[u] - theta
                    nd = d + (rc if rc > 0 else 0.0)
                    if nd < dist[t]:
                        dist[t], pred[t], pred_entry[t] = nd, u, -1
                        if _heap_push(&heap, nd, t) != 0:
                            status = 2
                # the cluster's edges: per other cluster, its row of least d_ic' - d_iu
                # (the same at any prices), rebuilt only after its rows changed
                if dirty[u]:
                    if _rebuild_edges(&edges, u, &pool, clu_head, cand_ptr, cand_idx,
                                      cand_d2, scratch_key, scratch_entry, scratch_d2,
                                      scratch_key2, scratch_entry2, scratch_d2b,
                                      touched) != 0:
                        status = 2
                        break
                    dirty[u] = 0
                    n_scanned += edges.scanned
                for j in range(edges.count[u]):
                    c2 = edges.to[u][j]
                    if settled[c2]:
                        continue
                    rc = edges.key[u][j] + prices[u] - prices[c2]
                    nd = d + (rc if rc > 0 else 0.0)
                    if nd < dist[c2]:
                        e = edges.entry[u][j]
                        dist[c2], pred[c2], pred_entry[c2], pred_d2[c2] = (
                            nd, u, e, edges.d2[u][j])
                        pred_row[c2] = pool.row[e]
                        if _heap_push(&heap, nd, c2) != 0:
                            status = 2
                n_scanned += edges.count[u]
            if status != 0:
                break
            if not reached:
                status = 1
                break
            # potentials: each node's distance (the farthest settled for the others), so
            # every edge of the shortest-path tree has a zero reduced cost, and any path
            # along the tree keeps complementary slackness
            D = dist[order[n_settled - 1]]
            for v in range(n_nodes):
                prices[v] += dist[v] if settled[v] else D
            # move along the tree to every deficit it reached, nearest first, while the
            # path's rows are still where the search found them
            for n in range(n_settled):
                target = order[n]
                if excess[target] >= -tol:
                    continue
                delta = -excess[target]
                v = target
                while pred[v] >= 0:
                    u = pred[v]
                    if u == t:
                        delta = min(delta, flow[v] - lower[v])
                    elif v == t:
                        delta = min(delta, upper[u] - flow[u])
                    else:
                        e = pred_entry[v]
                        if pool.row[e] != pred_row[v] or pool.clu[e] != u:
                            delta = 0.0  # (its row moved on an earlier path)
                            break
                        delta = min(delta, pool.mass[e])
                    v = u
                if delta <= tol:
                    continue
                source = v
                delta = min(delta, excess[source])
                if delta <= tol:
                    continue
                v = target
                while pred[v] >= 0:
                    u = pred[v]
                    if u == t:
                        flow[v] -= delta
                        excess[v] += delta
                        excess[t] -= delta
                    elif v == t:
                        flow[u] += delta
                        excess[u] -= delta
                        excess[t] += delta
                    else:
                        e = pred_entry[v]
                        i = pool.row[e]
                        e2 = _row_entry(&pool, row_head, <int> i, <int> v)
                        moved = delta
                        if pool.mass[e] - delta > tol:  # (the row stays in u too)
                            pool.mass[e] -= delta
                            if e2 >= 0:
                                pool.mass[e2] += delta
                            else:
                                e3 = _new_entry(&pool, clu_head, row_head, <int> i, <int> v,
                                                delta, pred_d2[v])
                                if e3 < 0:
                                    status = 2
                                    break
                                _edges_join(&edges, v, e3, i, pred_d2[v], cand_ptr,
                                            cand_idx, cand_d2, dirty)
                        else:  # all of the entry moves (with a remainder below tol)
                            moved = pool.mass[e]
                            _edges_leave(&edges, u, e, dirty)
                            _drop_entry(&pool, clu_head, row_head, e)
                            if e2 >= 0:
                                pool.mass[e2] += moved
                            else:
                                e3 = _new_entry(&pool, clu_head, row_head, <int> i, <int> v,
                                                moved, pred_d2[v])  # (the entry just freed)
                                _edges_join(&edges, v, e3, i, pred_d2[v], cand_ptr,
                                            cand_idx, cand_d2, dirty)
                        size[u] -= moved
                        size[v] += moved
                        excess[u] -= moved
                        excess[v] += moved
                    v = u
                if status != 0:
                    break
                n_paths += 1
            n_searches += 1
        # the outputs
        if status == 0:
            for i in range(n_rows):
                e = row_head[i]
                labels[i], label_d2[i] = pool.clu[e], pool.d2[e]
                best = pool.mass[e]
                e = pool.rnext[e]
                while e >= 0:
                    if pool.mass[e] > best:
                        labels[i], label_d2[i], best = pool.clu[e], pool.d2[e], pool.mass[e]
                    e = pool.rnext[e]
    rows, clusters, masses, d2s = [], [], [], []
    if status == 0:
        for i in range(n_rows):
            e = row_head[i]
            if pool.rnext[e] < 0:
                continue
            while e >= 0:
                rows.append(i)
                clusters.append(pool.clu[e])
                masses.append(pool.mass[e])
                d2s.append(pool.d2[e])
                e = pool.rnext[e]
    _pool_free(&pool)
    free(indices)
    free(values)
    free(flags)
    if (edges.to != NULL and edges.key != NULL and edges.entry != NULL and edges.d2 != NULL
            and edges.key2 != NULL and edges.entry2 != NULL and edges.d2b != NULL):
        for j in range(n_clusters):
            free(edges.to[j])
            free(edges.key[j])
            free(edges.entry[j])
            free(edges.d2[j])
            free(edges.key2[j])
            free(edges.entry2[j])
            free(edges.d2b[j])
    free(heap.key)
    free(heap.node)
    free(edges.count)
    free(edges.cap)
    free(edges.to)
    free(edges.key)
    free(edges.entry)
    free(edges.d2)
    free(edges.key2)
    free(edges.entry2)
    free(edges.d2b)
    splits = (np.asarray(rows, dtype=np.intp), np.asarray(clusters, dtype=np.int32),
              np.asarray(masses, dtype=np.float64), np.asarray(d2s, dtype=np.float64))
    return status, splits, n_paths, n_searches, n_scanned
