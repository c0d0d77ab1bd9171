# Selection of the C' smallest (value, index) pairs, ties to the lower index: a small sorted
# list for a few winners offered one at a time (partial E-step), a heap for any number of
# winners out of a full row of distances (exact top-C').
from cython cimport floating


cdef inline bint _before(floating a, int i, floating b, int j) noexcept nogil:
    """Whether ``(a, i)`` comes before ``(b, j)``: smaller value, ties to the smaller index."""
    return a < b or (a == b and i < j)


cdef inline void _push(floating* vals, int* idx, Py_ssize_t* n_filled, Py_ssize_t capacity,
                       floating v, int j) noexcept nogil:
    """Offer ``(v, j)`` to the ascending list ``vals[:n_filled]`` that keeps the ``capacity``
    smallest entries seen so far.

    Entries are compared by value, then by index, so the result does not depend on the order
    in which they are offered (indices are distinct). Insertion is linear in ``capacity``,
    which is small here (``C'`` or ``G - 1``); most offers are rejected by one comparison.
    """
    cdef Py_ssize_t p = n_filled[0]
    if capacity == 0:
        return
    if p == capacity:
        if not _before(v, j, vals[capacity - 1], idx[capacity - 1]):
            return
        p = capacity - 1
    else:
        n_filled[0] = p + 1
    while p > 0 and _before(v, j, vals[p - 1], idx[p - 1]):
        vals[p] = vals[p - 1]
        idx[p] = idx[p - 1]
        p -= 1
    vals[p] = v
    idx[p] = j


cdef inline bint _after(floating a, int i, floating b, int j) noexcept nogil:
    """Whether ``(a, i)`` comes after ``(b, j)``: larger value, ties to the larger index."""
    return a > b or (a == b and i > j)


cdef inline void _sift_down(floating* vals, int* idx, Py_ssize_t size,
                     Py_ssize_t p) noexcept nogil:
    """Restore the max-heap order (by value, then index) below position ``p``."""
    cdef Py_ssize_t child
    cdef floating v = vals[p]
    cdef int j = idx[p]
    while True:
        child = 2 * p + 1
        if child >= size:
            break
        if child + 1 < size and _after(vals[child + 1], idx[child + 1], vals[child], idx[child]):
            child += 1
        if not _after(vals[child], idx[child], v, j):
            break
        vals[p] = vals[child]
        idx[p] = idx[child]
        p = child
    vals[p] = v
    idx[p] = j


cdef inline void _select_row(const floating* row,       # IN  (n_clusters,)
                      Py_ssize_t n_clusters,
                      Py_ssize_t n_winners,
                      floating* vals,            # OUT (n_winners,) ascending
                      int* idx) noexcept nogil:  # OUT (n_winners,)
    """The ``n_winners`` smallest entries of ``row``, sorted ascending, ties to the lower index.

    A max-heap of the current best ``n_winners`` (root = the worst of them) rejects most
    entries with one comparison and costs ``O(log n_winners)`` per accepted one, so even
    ``n_winners = n_clusters`` is ``O(C log C)`` per row. A final heap sort orders the winners.
    """
    cdef Py_ssize_t j, p, size
    cdef floating v
    cdef int t
    for j in range(n_winners):
        vals[j] = row[j]
        idx[j] = <int> j
    p = n_winners // 2
    while p > 0:
        p -= 1
        _sift_down(vals, idx, n_winners, p)
    for j in range(n_winners, n_clusters):
        v = row[j]
        # (v, j) with j larger than every index in the heap: it only enters if strictly smaller
        if v < vals[0]:
            vals[0] = v
            idx[0] = <int> j
            _sift_down(vals, idx, n_winners, 0)
    size = n_winners
    while size > 1:
        size -= 1
        v = vals[0]
        t = idx[0]
        vals[0] = vals[size]
        idx[0] = idx[size]
        vals[size] = v
        idx[size] = t
        _sift_down(vals, idx, size, 0)
