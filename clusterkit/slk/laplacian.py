"""Scalable Laplacian K-modes (Ziko, Granger & Ben Ayed 2018): the soft assignments over a
kNN graph (:class:`LaplacianEStep`) and the modes (:class:`ModeMStep`)."""
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from .._data import blocks
from .._data.memory import check_memory
from .._data.moments import weighted_sum
from .._data.nearest import all_dist2
from .._engine.assignment import Assignment, Objective
from .._engine.constraints import Interval, Options, Satisfies
from .._engine.contracts import EStep, MStep
from .._data.checks import check_bandwidth
from .._kernels import _laplacian
from .graph import knn_graph, knn_graph_bytes

__all__ = ["LaplacianEStep", "ModeMStep", "SLK_ENERGY"]


#: The discrete Laplacian K-modes energy (Ziko et al. 2018, eq. 1), minimised.
SLK_ENERGY = Objective("Laplacian K-modes energy", maximize=False)


#: Members of a cluster that the first SLK-BO modes are chosen among and estimated from.


class _LaplacianState:
    """:class:`LaplacianEStep`'s per-run state: the graph in CSR arrays, the kernel's squared
    bandwidth, and the soft assignments and labels of the last step that kept every
    cluster."""

    def __init__(self, indptr, indices, weights, locality, sigma2):
        # the graph with its rows and columns in the order ``locality`` of the fit's rows
        self.indptr, self.indices, self.weights = indptr, indices, weights
        self.locality = locality
        self.sigma2 = sigma2
        self.z = self.labels = None
        self.trivial = False


def _check_graph_weights(graph, dtype):
    """Refuse a precomputed graph whose weights ``w_pq`` are not numbers, or not finite and
    non-negative in the data's ``dtype`` (a NaN would make the bound and the energy NaN from
    the first z-update; a negative affinity rewards cutting the edge)."""
    weights = graph.tocsr().data
    if np.dtype(weights.dtype).kind not in "biuf":
        raise TypeError(f"graph must hold numeric weights, got dtype {weights.dtype}.")
    with np.errstate(over="ignore"):
        cast = weights.astype(dtype)
    problems = [(np.count_nonzero(~np.isfinite(weights)), "non-finite {}"),
                (np.count_nonzero(weights < 0), "negative {}"),
                (np.count_nonzero(np.isfinite(weights) & ~np.isfinite(cast)),
                 f"{{}} beyond the range of {np.dtype(dtype).name}, the data's dtype")]
    for count, what in problems:
        if count:
            noun = "weights" if count > 1 else "weight"
            raise ValueError(f"graph has {count} {what.format(noun)}; the graph's weights "
                             "w_pq must be finite and non-negative.")


class LaplacianEStep(EStep):
    """Soft assignments of Scalable Laplacian K-modes by bound optimisation (Ziko, Granger &
    Ben Ayed 2018, eqs. 5-8).

    With the modes ``m_l`` (the current centres) fixed, minimises the concave-convex
    relaxation ``sum_p z_p^T log z_p - sum_pl z_pl a_pl - lam sum_pq w_pq z_p^T z_q`` of the
    Laplacian K-modes energy over the soft assignments ``z_p`` (rows of the simplex), where
    ``a_pl = k(x_p, m_l) = exp(-||x_p - m_l||^2 / (2 sigma^2))`` and ``w`` is a sparse
    k-nearest-neighbour graph. The run's first step only labels every sample with its
    nearest seed (``z_p`` one-hot), so that the M-step finds the first modes from the seeds'
    clusters (Alg. 1, as the authors' code). Every later step starts from
    ``z_p = softmax(a_p)``, and each inner iteration
    replaces every ``z_p`` at once by the minimiser of the bound (eq. 5), ``softmax(a_p + lam
    b_p)`` with ``b_p = sum_q w_pq z_q`` (eq. 8, one Cython pass over the graph's rows), until
    the bound's relative change is at most ``tol_inner``. Labels are ``argmax_l z_pl``.

    Parameters
    ----------
    n_neighbors : int, default=5
        ``rho``: neighbours per sample in the graph built from the fit data
        (:func:`~clusterkit.knn_graph`; exact below
        :data:`~clusterkit.slk.graph.EXACT_BELOW` samples, pynndescent above).
    lam : float, default=1.0
        Weight ``lambda >= 0`` of the Laplacian term (0: K-modes without the graph).
    sigma : float or None, default=None
        Kernel bandwidth ``> 0``; ``None`` estimates ``sigma^2`` as the mean squared distance
        of the samples to their graph neighbours (§4.2).
    graph : sparse matrix of shape (n_samples, n_samples) or None, default=None
        A precomputed graph of the training data (e.g. from :func:`~clusterkit.knn_graph`),
        reused instead of building one; its entries are the weights ``w_pq``.
        ``n_neighbors`` is then not used.
    max_inner : int, default=1000
        Most z-updates per E-step (the authors' current code; their code of 2018: 200, which
        on MNIST ends at a clearly lower NMI, see the SLK page of the documentation).
    tol_inner : float, default=1e-6
        Relative change of the bound that ends the z-updates (2018 code: 1e-4).

    Notes
    -----
    Cost per E-step: ``N L`` kernel evaluations (counted as distance evaluations) plus
    ``O(N rho L)`` per z-update (their number is ``"z_updates"`` in ``history_``); memory
    ``O(N rho + N L)``. The objective reported to the
    driver is the discrete energy of eq. 1 at the labels, ``-sum_p w_p k(x_p, m_{l_p}) + lam
    sum_pq w_pq [l_p != l_q]`` (minimised; ``w_p`` the sample weights in units of their
    mean, so that unit weights count as given and only the weights' ratios matter: the
    graph term does not scale with them). The E-step keeps
    the squared bandwidth ``sigma^2`` in its state and hands it to
    :class:`~clusterkit.ModeMStep` with every assignment (``Assignment.kernel_sigma2``). If a
    z-update leaves a cluster with no sample, the
    step reverts to the previous step's assignments and flags the fit
    (``trivial_solution_``), as the authors' code does; the modes then stay and the fit
    stops. The graph is built on the data the fit runs on, so a
    :class:`~clusterkit.DataReducer` other than :class:`~clusterkit.NoReduction` is refused.
    Needs an M-step with responsibilities (:class:`~clusterkit.ModeMStep`) and full batches.

    Fitted attributes added to the estimator: ``soft_labels_`` (``N x L``, the last ``z``),
    ``kernel_sigma2_`` (the kernel's ``sigma^2``) and ``trivial_solution_``.

    Examples
    --------
    >>> from clusterkit import LaplacianEStep
    >>> LaplacianEStep(lam=2.0)  # doctest: +NORMALIZE_WHITESPACE
    LaplacianEStep(n_neighbors=5, lam=2.0, sigma=None, graph=None, max_inner=1000,
                   tol_inner=1e-06)
    """

    objectives = (SLK_ENERGY,)
    chunks_refusal = "it needs the kNN graph of all the data"
    _parameter_constraints = {
        "n_neighbors": [Interval(Integral, 1)],
        "lam": [Interval(Real, 0)],
        "sigma": [Interval(Real, 0, closed="neither"), None],
        "graph": [Satisfies(sp.issparse, "a scipy.sparse matrix"), None],
        "max_inner": [Interval(Integral, 1)],
        "tol_inner": [Interval(Real, 0)],
    }

    def __init__(self, n_neighbors=5, lam=1.0, sigma=None, graph=None, max_inner=1000,
                 tol_inner=1e-6):
        self.n_neighbors = n_neighbors
        self.lam = lam
        self.sigma = sigma
        self.graph = graph
        self.max_inner = max_inner
        self.tol_inner = tol_inner

    def _validate(self, X, n_clusters, composition):
        """The neighbours or the graph against the data, full batches, no reduction."""
        n_samples = X.shape[0]
        if self.graph is None:
            if self.n_neighbors >= n_samples:
                raise ValueError(f"n_neighbors={self.n_neighbors} must be < "
                                 f"n_samples={n_samples}.")
        elif self.graph.shape != (n_samples, n_samples):
            raise ValueError(f"graph must be a sparse matrix of shape ({n_samples}, "
                             f"{n_samples}) for these data, got {type(self.graph).__name__} "
                             f"of shape {self.graph.shape}.")
        else:
            _check_graph_weights(self.graph, X.dtype)
        if composition.reduce.reduces:
            raise ValueError("LaplacianEStep builds its graph on the training samples; a "
                             f"{type(composition.reduce).__name__} is not supported.")
        if not composition.schedule.full_batch:
            raise ValueError("LaplacianEStep updates every sample from its graph neighbours: "
                             "it needs a full-batch schedule, got "
                             f"{type(composition.schedule).__name__}.")
        # distances, kernel values and their copy in the graph's order, two z buffers and
        # the previous step's z: N x L each
        check_memory(6 * n_samples * n_clusters * X.dtype.itemsize,
                     f"LaplacianEStep's soft assignments for {n_samples} samples and "
                     f"n_clusters={n_clusters}", "Use fewer clusters or fewer samples.")

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The larger of the graph's construction and the iterations, which follow it.

        With ``E = N n_neighbors`` edges: the construction is the search
        (:func:`~clusterkit.slk.graph.knn_graph_bytes`, none for a given ``graph``) or,
        if larger, the graph's sparse copies while it is built and ordered (``32 E``: COO
        rows and values, 8 bytes each, and columns, 4, beside a CSR copy, 12). The
        iterations keep the ordered graph (``E (8 + itemsize) + 12 N``: int32 indptr and
        indices, the weights, the rows' order) and the soft assignments: six ``N x C``
        arrays (distances, kernel values and their copy in the graph's order, two z buffers
        and the previous step's z), as checked when ``fit`` starts."""
        n_edges = n_samples * (int(self.n_neighbors) if self.graph is None
                               else max(1, self.graph.nnz // max(1, n_samples)))
        build = 32 * n_edges
        if self.graph is None:
            build = max(build, knn_graph_bytes(n_samples, n_features, int(self.n_neighbors),
                                               dtype))
        kept = n_edges * (8 + dtype.itemsize) + 12 * n_samples
        return max(build, kept + 6 * n_samples * n_clusters * dtype.itemsize)

    def init_state(self, X, sample_weight, centers, state):
        """The graph (built unless given) and the kernel's squared bandwidth."""
        graph = self.graph
        # progress in the three stages: the search, the bandwidth, the rows' locality order
        if graph is None:  # timed as its own phase, "graph" in seconds_
            with state.meter.timed("graph"):
                state.meter.progress("graph", 0, 3, "stages")
                graph = knn_graph(X, self.n_neighbors, random_state=state.random_state,
                                  n_threads=state.config.n_threads)
        state.meter.progress("graph", 1, 3, "stages")
        graph = sp.csr_matrix(graph)
        if state.order is not None:  # the run's order of the rows
            graph = graph[state.order][:, state.order].tocsr()
        graph.sort_indices()
        if self.sigma is None:  # mean squared distance to the graph neighbours (§4.2)
            total = _laplacian.graph_sqdist_sum(X, graph.indptr.astype(np.int32),
                                                graph.indices.astype(np.int32),
                                                state.config.n_threads)
            sigma2 = total / max(graph.nnz, 1)
        else:
            sigma2 = float(self.sigma) ** 2
        if not sigma2 > 0:
            raise ValueError("The kernel bandwidth is zero: every sample coincides with its "
                             "graph neighbours. Pass sigma > 0.")
        check_bandwidth(sigma2, X.dtype)
        state.meter.progress("graph", 2, 3, "stages")
        # The z-updates run over the rows in reverse Cuthill-McKee order, in which graph
        # neighbours sit close together: their rows of z are then mostly in cache (on MNIST
        # a z-update is about three times faster than in the data's order).
        locality = reverse_cuthill_mckee(graph, symmetric_mode=False).astype(np.intp)
        graph = graph[locality][:, locality].tocsr()
        graph.sort_indices()
        state.meter.progress("graph", 3, 3, "stages")
        return _LaplacianState(graph.indptr.astype(np.int32), graph.indices.astype(np.int32),
                               graph.data.astype(X.dtype), locality, sigma2)

    def assign(self, X, sample_weight, centers, state):
        """z-updates with the current modes; the labels, their discrete energy (eq. 1).

        The run's first step only labels every sample with its nearest seed: Alg. 1 starts
        from the seeds' clusters, whose modes the M-step then finds (as the authors' code).
        """
        st = state.run.estep_state
        n_samples, n_clusters = X.shape[0], centers.shape[0]
        dist2 = all_dist2(X, centers, state.config.n_threads)
        state.meter.count("estep", n_samples * n_clusters)
        a = np.exp(dist2 / (-2 * st.sigma2)).astype(X.dtype)
        n_updates = 0
        if st.labels is None:
            labels = dist2.argmin(axis=1).astype(np.int32)
            z = np.zeros_like(a)
            z[np.arange(n_samples), labels] = 1
        else:
            a_local = a[st.locality]  # the rows in the graph's order
            z = np.exp(a_local - a_local.max(axis=1, keepdims=True))  # softmax(a) (Alg. 1)
            z /= z.sum(axis=1, keepdims=True)
            z_new = np.empty_like(z)
            bound = None
            while n_updates < self.max_inner:
                previous = bound
                bound = _laplacian.z_update(a_local, st.indptr, st.indices, st.weights, z,
                                            float(self.lam), z_new, state.config.n_threads)
                z, z_new = z_new, z
                n_updates += 1
                if (previous is not None
                        and abs(bound - previous) <= self.tol_inner * abs(previous)):
                    break
            z_new[st.locality] = z  # back to the fit's order of the rows
            z = z_new
            labels = z.argmax(axis=1).astype(np.int32)
        state.run.step_info["z_updates"] = n_updates
        if st.labels is not None and np.unique(labels).size < min(n_clusters, n_samples):
            # a cluster vanished: back to the last assignments that kept every cluster
            st.trivial = True
            state.run.step_info["trivial_solution"] = True
            z, labels = st.z, st.labels
        st.z, st.labels = z, labels
        best = dist2[np.arange(n_samples), labels]
        kernel = a[np.arange(n_samples), labels].astype(np.float64)
        local = labels[st.locality]
        cut = np.repeat(local, np.diff(st.indptr)) != local[st.indices]
        # the sample weights in units of their mean: the graph term does not scale with them
        mean_weight = float(sample_weight.sum(dtype=np.float64)) / n_samples
        energy = (-float(np.dot(sample_weight, kernel)) / mean_weight
                  + float(self.lam) * float(st.weights[cut].sum(dtype=np.float64)))
        return Assignment(labels=labels, dist2=best, objective=energy,
                          qe=weighted_sum(best, sample_weight), resp=z, kernel_sigma2=st.sigma2)

    def final_labels(self, state):
        """``argmax_l z_pl`` of the kept run (SLK labels by assignment, not nearest mode)."""
        return state.run.estep_state.labels

    def fitted_attributes(self, state):
        """``soft_labels_`` (in the order of the training rows), ``kernel_sigma2_`` and
        ``trivial_solution_``."""
        st = state.run.estep_state
        return {"soft_labels_": state.in_data_order(st.z), "kernel_sigma2_": st.sigma2,
                "trivial_solution_": st.trivial}


#: Members of a cluster that the first SLK-BO modes are chosen among and estimated from.
MODE_SAMPLE = 2000


def _kernel_modes(X, labels, n_clusters, sigma2, random_state):
    """Each cluster's discrete kernel mode, ``argmax_p sum_q k(x_p, x_q)`` over its members
    (the mode definition of eq. 1 for hard clusters), estimated on at most
    :data:`MODE_SAMPLE` members drawn at random; a cluster without members gets a random
    row."""
    rows = np.empty(n_clusters, dtype=np.intp)
    for cluster in range(n_clusters):
        members = np.flatnonzero(labels == cluster)
        if members.size == 0:
            rows[cluster] = random_state.randint(X.shape[0])
            continue
        if members.size > MODE_SAMPLE:
            members = np.sort(random_state.choice(members, MODE_SAMPLE, replace=False))
        Xc = X[members].astype(np.float64)
        sqnorm = np.einsum("ij,ij->i", Xc, Xc)
        density = np.empty(members.size)
        for block in blocks.row_slices(members.size, blocks.MODE_BLOCK_ROWS):
            dist2 = np.maximum(sqnorm[block, None] - 2 * Xc[block] @ Xc.T + sqnorm, 0)
            density[block] = np.exp(dist2 / (-2 * sigma2)).sum(axis=1)
        rows[cluster] = members[density.argmax()]
    return rows


class _Modes:
    """:class:`ModeMStep`'s state: the training rows that are the modes (SLK-BO)."""

    rows = None


class ModeMStep(MStep):
    """The modes of Scalable Laplacian K-modes (Ziko, Granger & Ben Ayed 2018).

    Reads the soft assignments ``z`` of :class:`~clusterkit.LaplacianEStep` and the kernel's
    squared bandwidth that comes with them (``assignment.kernel_sigma2``); its objective,
    :data:`SLK_ENERGY`, is one only that E-step computes.

    * ``method="bo"`` (SLK-BO, eq. 11): ``m_l = x_p`` with ``p = argmax_q z_ql``: modes are
      training samples, found in ``O(N L)``. The first modes are the clusters' discrete
      kernel modes instead (§4.2: "the starting mode ... from the initial assignments by
      following the mode definition"), ``argmax_p sum_q k(x_p, x_q)`` over the members of
      each cluster of the nearest-seed labels that :class:`~clusterkit.LaplacianEStep`
      gives first, estimated on at most :data:`MODE_SAMPLE` random members
      (``O(MODE_SAMPLE^2 D)`` per cluster), as the authors' code.
    * ``method="ms"`` (SLK-MS, eq. 9): for each cluster, mean-shift from the current mode over
      the samples labelled ``l`` (hard members, as the authors' code; weighted by the sample
      weights), ``m <- sum_p v_p x_p / sum_p v_p`` with ``v_p = w_p exp(-||m - x_p||^2 / (2
      sigma^2))``, until the largest coordinate change is at most ``ms_tol`` times the
      largest coordinate of ``m``, or ``ms_max_iter`` iterations.

    The fit's objective is the discrete energy of eq. 1 (:data:`SLK_ENERGY`, minimised). A
    cluster without members keeps its mode. No distance evaluations are counted for the
    mean-shift's kernel sums (``O(iterations n_l D)`` per cluster).

    Parameters
    ----------
    method : {"bo", "ms"}, default="bo"
    ms_tol : float, default=1e-5
    ms_max_iter : int, default=1000

    Examples
    --------
    >>> from clusterkit import ModeMStep
    >>> ModeMStep("ms")
    ModeMStep(method='ms', ms_tol=1e-05, ms_max_iter=1000)
    """

    needs_resp = True
    objective = SLK_ENERGY
    _parameter_constraints = {"method": [Options("bo", "ms")],
                              "ms_tol": [Interval(Real, 0, closed="neither")],
                              "ms_max_iter": [Interval(Integral, 1)]}

    def __init__(self, method="bo", ms_tol=1e-5, ms_max_iter=1000):
        self.method = method
        self.ms_tol = ms_tol
        self.ms_max_iter = ms_max_iter

    def init_state(self, X, sample_weight, centers, state):
        return _Modes()

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """SLK-BO's first modes: at most ``m = min(MODE_SAMPLE, N)`` members of a cluster
        in float64 (``8 m (D + 1)``) and their kernel densities summed a block of ``b =
        min(MODE_BLOCK_ROWS, m)`` rows at a time (three ``b x m`` float64 temporaries, ``24 b
        m``). SLK-MS's mean-shift holds a cluster's rows and their differences to the mode,
        ``O(N D / C)`` on average, not counted."""
        if self.method != "bo":
            return 0
        sample = min(MODE_SAMPLE, n_samples)
        return 8 * sample * (n_features + 1 + 3 * min(blocks.MODE_BLOCK_ROWS, sample))

    def update(self, X, sample_weight, assignment, centers, state):
        if self.method == "bo":
            modes = state.run.mstep_state
            if not isinstance(modes, _Modes):  # called without init_state
                modes = state.run.mstep_state = _Modes()
            if modes.rows is None:  # the first modes: those of the clusters (§4.2)
                modes.rows = _kernel_modes(X, assignment.labels, centers.shape[0],
                                           assignment.kernel_sigma2, state.random_state)
            else:
                modes.rows = assignment.resp.argmax(axis=0)  # eq. 11
            return np.ascontiguousarray(X[modes.rows])
        centers_new = centers.copy()
        for cluster in range(centers.shape[0]):
            members = np.flatnonzero(assignment.labels == cluster)
            if members.size:
                centers_new[cluster] = self._mean_shift(X[members], sample_weight[members],
                                                        centers[cluster],
                                                        assignment.kernel_sigma2)
        return centers_new

    def _mean_shift(self, X, sample_weight, mode, sigma2):
        """Gaussian mean-shift of one mode over its cluster's members (eq. 9)."""
        mode = mode.astype(np.float64)
        for _ in range(int(self.ms_max_iter)):
            diff = X - mode
            v = sample_weight * np.exp(np.einsum("ij,ij->i", diff, diff) / (-2 * sigma2))
            if not v.sum() > 0:  # every member beyond the kernel's reach: keep the mode
                break
            new = (v @ X) / v.sum()
            done = np.abs(new - mode).max() <= self.ms_tol * np.abs(mode).max()
            mode = new
            if done:
                break
        return mode.astype(X.dtype)

    def fitted_attributes(self, state):
        """``modes_``: indices of the training rows that are the modes (SLK-BO only)."""
        if self.method != "bo" or not isinstance(state.run.mstep_state, _Modes):
            return {}
        rows = state.run.mstep_state.rows
        if state.order is not None:
            rows = state.order[rows]
        return {"modes_": np.asarray(rows, dtype=np.intp)}
