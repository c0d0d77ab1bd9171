"""k-nearest-neighbour affinity graphs (the sparse ``W`` of Laplacian K-modes)."""
import threading

import numpy as np
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_array

from .._data.checks import check_int
from .._kernels._openmp import effective_n_threads

__all__ = ["knn_graph", "knn_graph_bytes", "EXACT_BELOW"]

#: Below this many samples :func:`knn_graph` finds the neighbours exactly (brute force, about
#: ``N^2 D / 2`` flops, under a second); from it on approximately with pynndescent.
EXACT_BELOW = 10_000


def interruptible(func, *args, **kwargs):
    """``func(*args, **kwargs)``, run in a worker thread while this thread waits for it in
    short slices, so that Ctrl-C, which Python delivers to the main thread, ends the wait at
    once even when ``func`` runs compiled code that never checks for it. After an interrupt
    the worker finishes in the background and its result is dropped."""
    if threading.current_thread() is not threading.main_thread():
        return func(*args, **kwargs)  # only the main thread receives Ctrl-C
    outcome = {}

    def work():
        try:
            outcome["value"] = func(*args, **kwargs)
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=work, name="clusterkit-interruptible", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.05)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def knn_graph(X, n_neighbors=5, *, exact=None, random_state=None, n_threads=None):
    """The binary k-nearest-neighbour graph of the rows of ``X``, as a sparse matrix.

    ``W[p, q] = 1`` if ``q`` is one of the ``n_neighbors`` nearest neighbours of ``p``
    (Euclidean distance, ``p`` itself excluded), else 0: each row has ``n_neighbors`` ones,
    the matrix is not symmetrised and its diagonal is zero (Ziko, Granger & Ben Ayed 2018,
    §4.2). Never a dense ``N x N`` matrix: memory ``O(N n_neighbors)``.

    Build it once and pass it to :class:`~clusterkit.LaplacianEStep` (``graph=``) to fit
    several models on the same data, for example a sweep over ``lam``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_neighbors : int, default=5
        ``rho`` of the paper, ``1 <= n_neighbors < n_samples``.
    exact : bool or None, default=None
        ``True``: exact neighbours by brute force (scikit-learn); ``False``: approximate
        neighbours by nearest-neighbour descent (pynndescent, whose first call in a process
        compiles with numba for tens of seconds); ``None``: exact below
        :data:`EXACT_BELOW` samples.
    random_state : int, RandomState or None, default=None
        Seed of pynndescent's random projections and initial graph.
    n_threads : int or None, default=None
        Threads of the exact search (``None``: as for every clusterkit kernel). The
        approximate search always runs on one thread: see Notes.

    Returns
    -------
    W : scipy.sparse.csr_matrix of shape (n_samples, n_samples), dtype=float64

    Raises
    ------
    ValueError
        If ``n_neighbors >= n_samples`` or ``X`` is not a finite 2-D array.

    Notes
    -----
    The graph does not depend on ``n_threads``. pynndescent's parallel descent updates the
    neighbour heaps in an order that depends on its threads, so with 2 threads it finds a
    different approximate graph than with 1 (and SLK then different clusters); it is
    therefore always run with ``n_jobs=1``, a fixed seed and its default ``low_memory``
    mode, which is deterministic. On 2 cores this is also the faster setting
    (``benchmarks/RESULTS.md``). pynndescent's compiled stages never check for Ctrl-C, so the
    approximate search runs in a worker thread that this one waits for: Ctrl-C stops the
    wait at once (the worker then finishes in the background and its result is dropped).
    The exact search, below :data:`EXACT_BELOW` samples, takes under a second.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import knn_graph
    >>> X = np.array([[0.0], [1.0], [3.0], [7.0]])
    >>> knn_graph(X, n_neighbors=1).toarray()
    array([[0., 1., 0., 0.],
           [1., 0., 0., 0.],
           [0., 1., 0., 0.],
           [0., 0., 1., 0.]])
    """
    X = check_array(X, dtype=[np.float64, np.float32], order="C")
    n_samples = X.shape[0]
    n_neighbors = check_int(n_neighbors, "n_neighbors", minimum=1)
    if n_neighbors >= n_samples:
        raise ValueError(f"n_neighbors={n_neighbors} must be < n_samples={n_samples}.")
    n_threads = effective_n_threads(n_threads)
    if exact is None:
        exact = n_samples < EXACT_BELOW
    if exact:
        search = NearestNeighbors(n_neighbors=n_neighbors, algorithm="brute",
                                  n_jobs=n_threads).fit(X)
        neighbours = search.kneighbors(return_distance=False)  # p itself left out
    else:
        from pynndescent import NNDescent
        seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
        # one thread: pynndescent's parallel descent depends on its thread count (Notes)
        found, _ = interruptible(lambda: NNDescent(X, n_neighbors=n_neighbors + 1,
                                                   random_state=seed, n_jobs=1).neighbor_graph)
        neighbours = _without_self(found, n_neighbors)
    rows = np.repeat(np.arange(n_samples), n_neighbors)
    return sp.csr_matrix((np.ones(rows.size), (rows, neighbours.ravel())),
                         shape=(n_samples, n_samples))


def knn_graph_bytes(n_samples, n_features, n_neighbors, dtype):
    """Bytes :func:`knn_graph`'s search allocates at its peak, for ``n_samples`` x
    ``n_features`` rows of ``dtype`` (its result, the sparse graph, not included).

    With ``k = n_neighbors + 1`` (the row itself is found too): below :data:`EXACT_BELOW`
    rows, scikit-learn's exact search keeps a heap of indices (intp) and distances
    (float64) per row, ``16 N k``. From it on, pynndescent's (with its defaults): its rows
    in float32 (a copy, ``4 N D``, unless they are float32 already); the graph's heap,
    indices, distances (4 bytes each) and flags (1), ``9 N k``; the new and the old
    candidates of each row, indices and priorities, ``16 N min(60, k)``; its random
    projection forest's leaves, ``t = max(3, min(12, round(2 log10 N)))`` trees whose
    leaves hold at most ``l = max(60, min(256, 5 k))`` rows and are at least half full,
    ``8 N t`` as int32; and the neighbours and distances it returns, ``8 N k``.
    """
    k = n_neighbors + 1
    if n_samples < EXACT_BELOW:
        return 16 * n_samples * k
    n_trees = max(3, min(12, int(round(2.0 * np.log10(n_samples)))))
    copy = 0 if np.dtype(dtype) == np.float32 else 4 * n_samples * n_features
    return copy + n_samples * (9 * k + 16 * min(60, k) + 8 * n_trees + 8 * k)


def _without_self(found, n_neighbors):
    """The first ``n_neighbors`` entries of each row that are not the row itself (an
    approximate search may miss the point itself, or return it twice among duplicates)."""
    own = found == np.arange(found.shape[0])[:, None]
    order = np.argsort(own, axis=1, kind="stable")  # the others first, in their order
    return np.take_along_axis(found, order, axis=1)[:, :n_neighbors]
