# The group machinery of the pruned greedy k-means++ (_kmeanspp.pyx): samples kept in groups
# by nearest centre, sorted by decreasing D^2; each group's list of neighbour groups; the gain
# of a candidate over one group; the two-level D^2 sampler.
from cython cimport floating
from libc.math cimport sqrt
from libc.stdlib cimport free, realloc

from ._dist cimport _sqdist_wide_below, ck_prefetch_row


# Rows per block of the two-level D^2 sampler: the block sums are kept up to date as D^2
# changes, so a draw costs n_samples / SAMPLER_BLOCK + SAMPLER_BLOCK additions.
cdef enum:
    SAMPLER_BLOCK = 64


# Rows ahead whose cache lines are requested while scanning a group's members in X.
cdef enum:
    PREFETCH_AHEAD = 4


# Rows of up to this many bytes (32 float32 or 16 float64 features) kmeanspp keeps in group
# order next to the members: streaming that copy beats gathering such short rows from X
# (float32 with 20-32 features: seeding 1.6-2 times faster), while longer rows are scored
# faster group by group from X (64 float64 features: 1.7 times).
cdef enum:
    INLINE_MAX_ROW_BYTES = 128


cdef inline void _copy_row(const floating* src, floating* dst,
                           Py_ssize_t n_features) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n_features):
        dst[k] = src[k]


cdef inline Py_ssize_t _invert_cumsum(const double* cumsum, Py_ssize_t n,
                               double value) noexcept nogil:
    """``searchsorted(cumsum, value, 'right')``, clamped to the last entry with positive mass
    (the first index whose cumulative sum reaches the total)."""
    cdef Py_ssize_t lo = 0, hi = n, mid, last_lo = 0, last_hi = n
    cdef double total = cumsum[n - 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if cumsum[mid] <= value:
            lo = mid + 1
        else:
            hi = mid
    while last_lo < last_hi:
        mid = (last_lo + last_hi) // 2
        if cumsum[mid] < total:
            last_lo = mid + 1
        else:
            last_hi = mid
    return lo if lo < last_lo else last_lo


cdef inline void _prefix_sums(const double* values, double* out, Py_ssize_t n) noexcept nogil:
    cdef double total = 0
    cdef Py_ssize_t i
    for i in range(n):
        total = total + values[i]
        out[i] = total


cdef inline double _block_mass(const floating* sample_weight, const floating* min_dist2,
                        Py_ssize_t start, Py_ssize_t end, double* cumsum) noexcept nogil:
    """Cumulative ``w D^2`` of rows ``start .. end - 1`` in double (the product is rounded to
    the data's dtype first); writes it to ``cumsum`` if given, returns the block's total."""
    cdef double total = 0
    cdef Py_ssize_t r
    cdef floating mass
    for r in range(start, end):
        mass = sample_weight[r] * min_dist2[r]
        total = total + <double> mass
        if cumsum != NULL:
            cumsum[r - start] = total
    return total


cdef inline bint _before(floating d2_a, int row_a, floating d2_b, int row_b) noexcept nogil:
    """Order of group members: decreasing D^2, then increasing row (a strict total order)."""
    return d2_a > d2_b or (d2_a == d2_b and row_a < row_b)


cdef inline void _sort_members(int* rows, floating* d2, Py_ssize_t n) noexcept nogil:
    """Sort the parallel arrays in place by ``_before``: quicksort with a median-of-three
    pivot, recursing into the smaller part (depth ``O(log n)``), insertion sort below 16."""
    cdef Py_ssize_t lo, hi, i, j, mid
    cdef floating pd, td
    cdef int pr, tr
    while n > 16:
        mid = n // 2
        # median of three to position 0 (the pivot)
        if _before(d2[mid], rows[mid], d2[0], rows[0]):
            d2[0], d2[mid] = d2[mid], d2[0]
            rows[0], rows[mid] = rows[mid], rows[0]
        if _before(d2[n - 1], rows[n - 1], d2[0], rows[0]):
            d2[0], d2[n - 1] = d2[n - 1], d2[0]
            rows[0], rows[n - 1] = rows[n - 1], rows[0]
        if _before(d2[n - 1], rows[n - 1], d2[mid], rows[mid]):
            d2[mid], d2[n - 1] = d2[n - 1], d2[mid]
            rows[mid], rows[n - 1] = rows[n - 1], rows[mid]
        d2[0], d2[mid] = d2[mid], d2[0]
        rows[0], rows[mid] = rows[mid], rows[0]
        pd, pr = d2[0], rows[0]
        i, j = 1, n - 1
        while True:
            while i <= j and _before(d2[i], rows[i], pd, pr):
                i += 1
            while i <= j and _before(pd, pr, d2[j], rows[j]):
                j -= 1
            if i >= j:
                break
            d2[i], d2[j] = d2[j], d2[i]
            rows[i], rows[j] = rows[j], rows[i]
            i += 1
            j -= 1
        # the pivot goes between the parts: [0, j) before it, [j + 1, n) after it
        d2[0], d2[j] = d2[j], d2[0]
        rows[0], rows[j] = rows[j], rows[0]
        if j < n - 1 - j:
            _sort_members(rows, d2, j)
            rows += j + 1
            d2 += j + 1
            n -= j + 1
        else:
            _sort_members(rows + j + 1, d2 + j + 1, n - j - 1)
            n = j
    for i in range(1, n):
        td, tr = d2[i], rows[i]
        j = i
        while j > 0 and _before(td, tr, d2[j - 1], rows[j - 1]):
            d2[j] = d2[j - 1]
            rows[j] = rows[j - 1]
            j -= 1
        d2[j], rows[j] = td, tr


cdef struct _Neighbours:
    # centres whose group may hold samples a point of this group's ball can take over
    int* index
    double* dist2    # squared distance between the two centres
    Py_ssize_t size
    Py_ssize_t capacity


cdef inline bint _push_neighbour(_Neighbours* nb, int j, double dist2) noexcept nogil:
    """Append ``(j, dist2)``; returns False if memory ran out."""
    cdef Py_ssize_t capacity
    cdef int* index
    cdef double* dists
    if nb.size == nb.capacity:
        capacity = max(8, 2 * nb.capacity)
        index = <int*> realloc(nb.index, capacity * sizeof(int))
        if index == NULL:
            return False
        nb.index = index
        dists = <double*> realloc(nb.dist2, capacity * sizeof(double))
        if dists == NULL:
            return False
        nb.dist2 = dists
        nb.capacity = capacity
    nb.index[nb.size] = j
    nb.dist2[nb.size] = dist2
    nb.size += 1
    return True


cdef inline int _push_neighbour_within(_Neighbours* nb, int j, double dist2,
                                      Py_ssize_t* n_capacity, Py_ssize_t limit) noexcept nogil:
    """:func:`_push_neighbour`, keeping ``n_capacity``, the entries all lists have room for,
    within ``limit`` (none if negative): 0 when pushed, 1 when growing the list would pass
    the limit (nothing changed), 2 when memory ran out."""
    cdef Py_ssize_t before = nb.capacity
    if (nb.size == nb.capacity and limit >= 0
            and n_capacity[0] + max(8, 2 * nb.capacity) - nb.capacity > limit):
        return 1
    if not _push_neighbour(nb, j, dist2):
        return 2
    n_capacity[0] += nb.capacity - before
    return 0


cdef inline void _drop_neighbours(_Neighbours* nb) noexcept nogil:
    """Free a list's entries; it is then empty."""
    free(nb.index)
    free(nb.dist2)
    nb.index = NULL
    nb.dist2 = NULL
    nb.size = 0
    nb.capacity = 0


cdef inline bint _may_overlap(double dist2, double r_a, double r_b) noexcept nogil:
    """Whether two groups with these largest ``D``, whose centres are ``sqrt(dist2)`` apart,
    can exchange samples: ``d < 2 (r_a + r_b)``, with a margin against rounding."""
    cdef double reach = 2 * (r_a + r_b) * (1 + 1e-6)
    return dist2 < reach * reach


cdef inline double _group_gain(const floating* X,            # IN  (n_samples, n_features)
                        Py_ssize_t n_features,
                        const floating* candidate,    # IN  (n_features,)
                        floating quarter,             # d(candidate, centre)^2 / 4
                        Py_ssize_t start,
                        Py_ssize_t stop,
                        const int* members,           # IN
                        const floating* member_d2,    # IN
                        const floating* member_w,     # IN
                        const floating* member_x,     # IN  (rows in member order, or NULL)
                        Py_ssize_t* n_evals) noexcept nogil:
    """Decrease of ``sum w D^2`` over one group's members if ``candidate`` became a centre.

    A member ``x`` of the group of centre ``c_j`` can only come closer to ``c`` than to ``c_j``
    if ``d(c, c_j)^2 / 4 < D^2(x)`` (triangle inequality); members are sorted by decreasing
    ``D^2``, so the scan stops at the first one that fails the test. The rows are read from
    ``member_x`` (short rows kept in member order: streamed, four members at a time) or, if it
    is NULL, gathered from ``X``.
    """
    cdef Py_ssize_t t = start, end = start, k
    cdef floating d0, d1, d2, d3, t0, t1, t2, t3, ck
    cdef const floating* x0
    cdef double delta, g0 = 0, g1 = 0, g2 = 0, g3 = 0
    while end < stop and quarter < member_d2[end]:
        end += 1
    n_evals[0] += end - start
    if member_x != NULL:
        # four members at a time: independent sums hide the latency of the additions
        while t + 4 <= end:
            x0 = member_x + t * n_features
            d0 = d1 = d2 = d3 = 0
            for k in range(n_features):
                ck = candidate[k]
                t0 = x0[k] - ck
                t1 = x0[n_features + k] - ck
                t2 = x0[2 * n_features + k] - ck
                t3 = x0[3 * n_features + k] - ck
                d0 += t0 * t0
                d1 += t1 * t1
                d2 += t2 * t2
                d3 += t3 * t3
            delta = <double> member_d2[t] - <double> d0
            g0 += <double> member_w[t] * (delta if delta > 0 else 0)
            delta = <double> member_d2[t + 1] - <double> d1
            g1 += <double> member_w[t + 1] * (delta if delta > 0 else 0)
            delta = <double> member_d2[t + 2] - <double> d2
            g2 += <double> member_w[t + 2] * (delta if delta > 0 else 0)
            delta = <double> member_d2[t + 3] - <double> d3
            g3 += <double> member_w[t + 3] * (delta if delta > 0 else 0)
            t += 4
    # (a distance at or above the member's D^2 gains nothing: its sums may stop there)
    while t < end:
        if member_x != NULL:
            d0 = _sqdist_wide_below(member_x + t * n_features, candidate, n_features,
                                    member_d2[t])
        else:
            if t + PREFETCH_AHEAD < end:
                ck_prefetch_row(X + members[t + PREFETCH_AHEAD] * n_features,
                                n_features * sizeof(floating))
            d0 = _sqdist_wide_below(X + members[t] * n_features, candidate, n_features,
                                    member_d2[t])
        delta = <double> member_d2[t] - <double> d0
        g0 += <double> member_w[t] * (delta if delta > 0 else 0)
        t += 1
    return (g0 + g1) + (g2 + g3)


cdef inline Py_ssize_t _group_entries(Py_ssize_t step,
                               const Py_ssize_t[::1] cand,
                               const int[::1] labels,
                               const _Neighbours* neighbours,
                               const floating* quarters,          # IN  (n_trials, stride)
                               Py_ssize_t stride,
                               const floating[::1] radius2,
                               int[::1] slot_stamp,               # TMP (n_clusters,)
                               Py_ssize_t[::1] slot_of_group,     # TMP (n_clusters,)
                               Py_ssize_t[::1] touched,           # OUT group of each slot
                               Py_ssize_t[::1] slot_start,        # OUT (n_touched + 1,)
                               Py_ssize_t[::1] slot_entries,      # OUT entries by slot
                               Py_ssize_t[::1] entry_cand,        # OUT
                               floating[::1] entry_q,             # OUT
                               Py_ssize_t[::1] trial_evals,       # OUT centre distances
                               Py_ssize_t* n_touched) noexcept nogil:
    """List the (group, candidate) pairs that pruning cannot rule out, grouped by group.

    Entry ``e`` is candidate ``entry_cand[e]`` with quarter squared distance ``entry_q[e]``
    to the group's centre; the entries of slot ``b`` (group ``touched[b]``) are
    ``slot_entries[slot_start[b]:slot_start[b + 1]]``. Returns the number of entries.
    """
    cdef Py_ssize_t l, t, j, g, b, e, n_entries = 0, n_slots = 0
    cdef const _Neighbours* nb
    for l in range(cand.shape[0]):
        g = labels[cand[l]]
        nb = &neighbours[g]
        trial_evals[l] = nb.size + 1
        for t in range(-1, nb.size):
            j = g if t < 0 else nb.index[t]
            if quarters[l * stride + t + 1] < radius2[j]:
                if slot_stamp[j] != step:
                    slot_stamp[j] = <int> step
                    slot_of_group[j] = n_slots
                    touched[n_slots] = j
                    slot_start[n_slots + 1] = 0
                    n_slots += 1
                slot_start[slot_of_group[j] + 1] += 1
                entry_cand[n_entries] = l
                entry_q[n_entries] = quarters[l * stride + t + 1]
                n_entries += 1
    slot_start[0] = 0
    for b in range(n_slots):
        slot_start[b + 1] += slot_start[b]
    # place the entries by slot, in entry order (the cursor of slot b is slot_start[b] plus
    # the entries placed so far, kept in slot_of_group of its group)
    for b in range(n_slots):
        slot_of_group[touched[b]] = slot_start[b]
    e = 0
    for l in range(cand.shape[0]):
        g = labels[cand[l]]
        nb = &neighbours[g]
        for t in range(-1, nb.size):
            j = g if t < 0 else nb.index[t]
            if quarters[l * stride + t + 1] < radius2[j]:
                slot_entries[slot_of_group[j]] = e
                slot_of_group[j] += 1
                e += 1
    n_touched[0] = n_slots
    return n_entries


cdef inline void _score_group(const floating* X,             # IN  (n_samples, n_features)
                              Py_ssize_t n_features,
                              const Py_ssize_t* cand,        # IN  candidate rows
                              Py_ssize_t start,
                              Py_ssize_t stop,
                              const int* members,
                              const floating* member_d2,
                              const floating* member_w,
                              const floating* member_x,      # IN  (or NULL)
                              const Py_ssize_t* entries,     # IN  this group's entries
                              Py_ssize_t n_group_entries,
                              const Py_ssize_t* entry_cand,
                              const floating* entry_q,
                              double* entry_gain,            # OUT
                              Py_ssize_t* entry_evals) noexcept nogil:  # OUT
    """Gains of several candidates over one group, one candidate after the other: the
    group's leading rows, read for the first candidate, are still in cache for the next."""
    cdef Py_ssize_t a, e
    for a in range(n_group_entries):
        e = entries[a]
        entry_evals[e] = 0
        entry_gain[e] = _group_gain(X, n_features, X + cand[entry_cand[e]] * n_features,
                                    entry_q[e], start, stop, members, member_d2, member_w,
                                    member_x, &entry_evals[e])
