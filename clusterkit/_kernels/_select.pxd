from cython cimport floating


cdef inline void _insert_sorted(floating* vals, int* idx, Py_ssize_t size, floating v,
                                int j) noexcept nogil:
    """Insert (v, j) into the ascending list ``vals[:size]`` of fixed capacity ``size``.

    The caller only calls this when ``v < vals[size - 1]``; the largest entry falls off. Equal
    values keep their order, so ties go to the earlier (lower) index.
    """
    cdef Py_ssize_t p = size - 1
    while p > 0 and vals[p - 1] > v:
        vals[p] = vals[p - 1]
        idx[p] = idx[p - 1]
        p -= 1
    vals[p] = v
    idx[p] = j
