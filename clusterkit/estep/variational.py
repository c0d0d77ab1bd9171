"""The partial variational E-step of var-k-means and var-GMM (Forster & Lücke 2018)."""
from numbers import Integral

import numpy as np

from .._engine.constraints import Interval, Options
from .._engine.contracts import EStep
from .._engine.warn import warn
from .._kernels import _partial
from .exact import MIXTURE_OBJECTIVES, top_winners, winners_assignment
from .neighbourhood_sums import choose_neighbourhoods, combine_pair_sums, pair_sums
from .rows import batch_rows

__all__ = ["PartialEStep"]


def _distinct_random(random_state, n_rows, n_values, n_draws):
    """``n_draws`` distinct uniform integers from ``range(n_values)`` per row, int32.

    Floyd's sampling algorithm, vectorised over rows: every row is a uniformly random subset
    (its order is not uniformly random, which no caller needs). ``O(n_rows n_draws^2)``.
    """
    out = np.empty((n_rows, n_draws), dtype=np.int32)
    for col, top in enumerate(range(n_values - n_draws, n_values)):
        draw = random_state.randint(0, top + 1, size=n_rows).astype(np.int32)
        taken = (out[:, :col] == draw[:, None]).any(axis=1)
        out[:, col] = np.where(taken, top, draw)
    return out


class _PartialState:
    """Per-fit state of :class:`PartialEStep` (``state.run.estep_state``).

    Attributes
    ----------
    n_winners : int
        ``C'`` after resolving the default and clamping to ``n_clusters``.
    G : int
        Neighbourhood size after clamping to ``n_clusters``.
    exact : bool
        The search space covers all clusters (``G >= C`` or ``C' G + n_explore >= C``): every
        call runs the exact truncated E-step instead and the arrays below are ``None``.
    winners : ndarray of shape (n_samples, n_winners), dtype=int32
        ``K(n)``: distinct clusters per row, ascending by distance after each search.
    neighbourhoods : ndarray of shape (n_clusters, G), dtype=int32
        ``G_c``: distinct clusters, ``c`` first.
    neighbourhood_centers : ndarray of shape (n_clusters, n_features) or None
        The centres exhaustive neighbourhoods were last computed from (they are recomputed
        only when the centres changed, e.g. not between initial E-steps).
    cand, cand_dist2, n_cand : ndarray
        Scratch of :func:`~clusterkit._kernels._partial.partial_search`, allocated once:
        ``(n_samples, max_cand)`` candidates and their squared distances, ``(n_samples,)``
        counts, ``max_cand = min(C, C' G + n_explore)``.
    entry_cluster, entry_dist2 : ndarray or None
        Scratch of :func:`~clusterkit._kernels._partial.neighbourhoods_estimated`, at least
        ``n_cand.sum()`` long; grown when ``S(n)`` grows.
    calls : int
        Searches so far: the counter of the run's row stream for the ``n_explore`` random
        clusters (:meth:`FitState.row_integers <clusterkit.FitState.row_integers>`).
    chunked, pair_sums :
        Whether the rows are a row chunk's (whose ``G_c`` come from all chunks), and the
        chunk's sums of eq. 8 from its last search (see :meth:`PartialEStep.chunk_summary`).
    """

    def __init__(self, n_winners, G, exact):
        self.n_winners = n_winners
        self.G = G
        self.exact = exact
        self.winners = None
        self.neighbourhoods = None
        self.neighbourhood_centers = None
        self.cand = None
        self.cand_dist2 = None
        self.n_cand = None
        self.entry_cluster = None
        self.entry_dist2 = None
        self.calls = 0
        self.chunked = False
        self.pair_sums = None


class PartialEStep(EStep):
    """Partial variational E-step over cluster neighbourhoods (var-k-means, var-GMM).

    Forster & Lücke (2018), Algs. 1 and 2. Each sample keeps a set ``K(n)`` of ``C'``
    clusters across iterations; each cluster a neighbourhood ``G_c`` of ``G`` clusters (itself
    first). One call searches, for every sample, only
    ``S(n) = union_{c in K(n)} G_c`` plus ``n_explore`` uniformly random clusters, computes
    those distances and makes the ``C'`` nearest of them the new ``K(n)``. The responsibilities
    are the truncated posterior over ``K(n)`` (eq. 5), the objective the truncated free energy
    (eq. 10). With a hard M-step and ``C' = 1`` this is var-k-means, with a soft M-step and
    ``C' = G`` var-GMM; ``neighbourhoods="exhaustive"`` gives the ``-X`` variants (Alg. 1),
    ``"estimated"`` the ``-S`` variants (Alg. 2).

    Parameters
    ----------
    G : int, default=5
        Neighbourhood size ``|G_c|`` (including ``c``). Clamped to ``n_clusters`` with a warning.
    n_winners : int or None, default=None
        ``C' = |K(n)|``; ``None`` means 1 with a hard M-step (var-k-means) and ``G`` with a soft
        one (var-GMM). Must satisfy ``1 <= n_winners <= n_clusters``; ``n_winners > G`` is
        allowed (the search space then has up to ``C' G`` clusters).
    neighbourhoods : {"estimated", "exhaustive"}, default="estimated"
        ``"exhaustive"``: before the data loop, ``G_c`` = ``c`` and its ``G - 1`` nearest
        centres from all ``C^2`` centre distances (Alg. 1; counted as ``C^2`` evaluations).
        ``"estimated"``: after the data loop, ``G_c`` = ``c`` and the ``G - 1`` clusters with
        the smallest mean distance to the samples whose best cluster is ``c``, over the
        distances already computed (eq. 8, Alg. 2; no extra evaluation).
    n_explore : int, default=1
        Uniformly random clusters added to each ``S(n)`` per call (the "+1" of the paper's
        large-scale experiments, e.g. ``G = 2+1``).
    n_init_esteps : int, default=0
        Searches run once before the first M-step, updating ``K(n)`` and ``G_c`` only (the
        paper's "initial E-steps"; its reference code uses 5 for large data).
    neighbour_stat : {"sqdist", "dist"}, default="sqdist"
        Statistic averaged in eq. 8: the squared distance (as in both authors' public
        implementations, which produced the papers' numbers) or the plain distance (the
        formula as printed).
    init : {"auto", "random", "exact"}, default="auto"
        How ``K(n)`` and ``G_c`` start. ``"auto"``: from the seeder's nearest-seed labels
        when it provides them, else from one exact truncated E-step (see below);
        ``"exact"``: always from the exact E-step; ``"random"``: uniformly at random, the
        papers' setting.

    Notes
    -----
    Randomness: the ``n_explore`` random clusters of a row come from the run's row stream
    (:meth:`FitState.row_integers <clusterkit.FitState.row_integers>`): a function of the
    fit's seed, the row's number and the search's, so that a row draws the same clusters
    in memory and in any row chunk (``init="random"`` draws from ``state.random_state``).

    Cost per call: ``sum_n |S(n)| <= N (C' G + n_explore)`` distance evaluations (fewer when the
    neighbourhoods of ``K(n)`` overlap), plus ``C^2`` with exhaustive neighbourhoods;
    bookkeeping ``O(N C' G)``, never ``O(N C)`` or, for estimated neighbourhoods, ``O(C^2)``.
    Memory: ``K(n)`` ``O(N C')``, ``G_c`` ``O(C G)``, the computed distances
    ``O(N (C' G + n_explore))`` and one ``n_clusters``-long stamp array per thread.

    State (``state.run.estep_state``, created by :meth:`init_state`): ``winners`` ``K(n)`` and
    ``neighbourhoods`` ``G_c``. Reads ``state.config.needs_resp``, ``state.run.sigma2``, the
    row stream and (``init="random"``) ``state.random_state``; on the first soft call the
    variance is set from the best distances found (vc-GMM eq. 12).

    Guarantee (Prop. 1): ``c`` is in ``G_c``, so every old member of ``K(n)`` is re-evaluated
    and for fixed centres no sample's best distance increases and the truncated free energy
    never decreases; the M-step increases it in turn.

    Initialisation (``init``): the paper starts from ``C'`` distinct uniformly random clusters
    per sample and ``G_c`` = ``c`` plus ``G - 1`` distinct uniformly random others, and
    ``n_init_esteps`` repair this before the first M-step (``init="random"``). A random
    ``K(n)`` is far from the sample's clusters: the first searches find distances far above
    the seeds' own, a soft fit's first variance (eq. 12) is inflated, and the fit can settle
    far above k-means (the var-GMM and vc-GMM pages of the documentation have the
    measurements). So by default (``"auto"``) ``K(n)`` starts at each sample's nearest seed:

    * k-means++ seeding (:class:`~clusterkit.KMeansPlusPlus` on the data the fit runs on)
      knows each sample's nearest seed as a by-product (``state.run.seed_labels``). ``G_c``
      starts as the exact neighbourhoods of the seeds (one pass over the ``C^2`` centre
      distances, counted) and ``K(n)`` as the sample's nearest seed and that seed's
      ``C' - 1`` nearest centres.
    * Otherwise one exact truncated E-step finds the ``C'`` nearest seeds (``N C``
      distances, counted, once; the cost of one Lloyd iteration, at gemm speed with many
      features) plus the ``C^2`` centre distances for ``G_c``. On a coreset this is cheap;
      on all the data it is one iteration of the ``N C`` work the method avoids, against the
      tens of iterations a fit makes.

    ``init="exact"`` uses the exact E-step even after k-means++ seeding (it then also gives
    ``C' > 1`` winners their exact order).

    Deviations and choices:

    * If ``G >= C`` or ``C' G + n_explore >= C`` the search space can be as large as all
      clusters, and each call runs the exact truncated E-step (:class:`TruncatedEStep` with
      ``C'`` winners, ``N C`` evaluations) instead; initial E-steps are then skipped.
    * Eq. 8 averages squared distances by default (see ``neighbour_stat``), over the samples
      whose best cluster is ``c`` counted once each (the papers' Alg. 2), not weighted;
      zero-weight samples are left out, so they are as if absent.
    * When fewer than ``G - 1`` clusters were evaluated together with ``c``, ``G_c`` keeps old
      entries to fill up; clusters that are no sample's best keep their ``G_c``.
    * Ties in distance go to the lower cluster index.
    * Under a mini-batch schedule each call searches and keeps ``K(n)`` of the batch's rows
      (``state.run.rows``; a row's ``K(n)`` waits for its next visit) and estimates ``G_c`` from
      the batch's distances.

    References
    ----------
    .. [1] D. Forster and J. Lücke, "Can clustering scale sublinearly with its clusters? A
       variational EM acceleration of GMMs and k-means", AISTATS 2018, Algs. 1-2, eqs. 5, 8,
       10, Prop. 1.
    .. [2] F. Hirschberger, D. Forster and J. Lücke, "Accelerated training of large-scale
       Gaussian mixtures by a merger of sublinear approaches" (vc-GMM), eq. 12.

    Examples
    --------
    >>> import numpy as np
    >>> from clusterkit import Clusterer
    >>> from clusterkit import PartialEStep
    >>> rng = np.random.RandomState(0)
    >>> grid = 6.0 * np.array([[i, j] for i in range(4) for j in range(4)])
    >>> X = np.repeat(grid, 20, axis=0) + rng.normal(size=(320, 2))
    >>> km = Clusterer(16, seed=grid, estep=PartialEStep(G=3), random_state=0).fit(X)
    >>> np.bincount(km.labels_).tolist() == [20] * 16
    True
    """

    objectives = MIXTURE_OBJECTIVES
    row_stream = True  # (a row's random candidates do not depend on who holds it)
    shares_state = True  # (the estimated G_c of all chunks' rows)

    @property
    def chunks(self):
        """Runs chunk by chunk, each chunk with its rows' ``K(n)`` (see the class notes),
        unless it starts at random or (estimated neighbourhoods) with initial E-steps:
        :attr:`chunks_refusal` says why."""
        return self.init != "random" and (self.neighbourhoods == "exhaustive"
                                          or int(self.n_init_esteps) == 0)

    @property
    def chunks_refusal(self):
        """Why this E-step cannot run on row chunks (empty if it can)."""
        if self.init == "random":
            return "init='random' draws K(n) and G_c in the order of the rows"
        return "" if self.chunks else ("its initial E-steps would estimate G_c from each "
                                       "chunk alone; use n_init_esteps=0")

    def use_shared(self, estep_state, shared):
        """On row chunks: search with the ``G_c`` all chunks' last searches estimated
        (:meth:`shared_state`), and leave the estimate to them."""
        estep_state.chunked = True
        if shared is not None:
            estep_state.neighbourhoods = shared.copy()

    def chunk_summary(self, estep_state):
        """A chunk's sums of eq. 8 and the ``G_c`` it searched with (estimated
        neighbourhoods; ``None`` otherwise)."""
        summary, estep_state.pair_sums = estep_state.pair_sums, None
        return None if summary is None else (*summary, estep_state.neighbourhoods)

    def combine_summaries(self, summaries):
        """The sums of eq. 8 of neighbouring chunks, added in chunk order."""
        return (*combine_pair_sums([summary[:3] for summary in summaries]), summaries[0][3])

    def shared_state(self, summary):
        """The ``G_c`` of eq. 8 from all chunks' sums."""
        return choose_neighbourhoods(*summary)
    _parameter_constraints = {
        "G": [Interval(Integral, 1)],
        "n_winners": [Interval(Integral, 1), None],
        "neighbourhoods": [Options("estimated", "exhaustive")],
        "n_explore": [Interval(Integral, 0)],
        "n_init_esteps": [Interval(Integral, 0)],
        "neighbour_stat": [Options("sqdist", "dist")],
        "init": [Options("auto", "random", "exact")],
    }

    def __init__(self, G=5, n_winners=None, neighbourhoods="estimated", n_explore=1,
                 n_init_esteps=0, neighbour_stat="sqdist", init="auto"):
        self.G = G
        self.n_winners = n_winners
        self.neighbourhoods = neighbourhoods
        self.n_explore = n_explore
        self.n_init_esteps = n_init_esteps
        self.neighbour_stat = neighbour_stat
        self.init = init

    def _validate(self, X, n_clusters, composition):
        """Check the hyper-parameters; warn if ``G > n_clusters`` (``G`` is then clamped).

        Raises
        ------
        TypeError
            If ``G``, ``n_winners``, ``n_explore`` or ``n_init_esteps`` is not an integer
            (``n_winners`` may be ``None``), or an option is not a string.
        ValueError
            If ``G < 1``, ``n_winners`` is outside ``[1, n_clusters]``, ``n_explore < 0``,
            ``n_init_esteps < 0`` or an option is unknown.
        """
        G = int(self.G)
        if self.n_winners is not None and self.n_winners > n_clusters:
            raise ValueError(f"n_winners={self.n_winners} must be <= n_clusters={n_clusters}.")
        if G > n_clusters:
            warn(f"G={G} > n_clusters={n_clusters}; using G=n_clusters.",
                 RuntimeWarning)
        elif G == 1 and self.n_explore == 0 and n_clusters > 1 and (
                self.n_winners is None or self.n_winners < n_clusters):
            warn("G=1 with n_explore=0: the search space S(n) is K(n) itself, so "
                 "no sample can ever change its clusters; use G >= 2 or "
                 "n_explore >= 1.", RuntimeWarning)

    def winners_per_sample(self, n_clusters, composition):
        """``C' = n_winners``; by default ``G`` for a soft M-step, 1 for a hard one."""
        if self.n_winners is not None:
            return min(int(self.n_winners), n_clusters)
        return min(int(self.G), n_clusters) if composition.mstep.needs_resp else 1

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Per sample: ``K(n)`` (and a copy) with its distances and responsibilities
        (``C'``), the candidates and their distances (``C' G + n_explore``, at most ``C``),
        the explored clusters, and with estimated neighbourhoods the pairs they are
        estimated from (at most one per candidate)."""
        G = min(int(self.G), n_clusters)
        n_winners = self.winners_per_sample(n_clusters, composition)
        n_cand = n_winners * G + int(self.n_explore)
        itemsize = dtype.itemsize
        per_sample = n_winners * (8 + 2 * itemsize) + 4 + itemsize
        if G >= n_clusters or n_cand >= n_clusters:  # the exact search keeps no candidates
            return n_samples * per_sample
        pairs = n_cand if self.neighbourhoods == "estimated" else 0
        return n_samples * ((n_cand + pairs) * (4 + itemsize) + 8 * int(self.n_explore) + 8
                            + per_sample)

    def init_state(self, X, sample_weight, centers, state):
        """Initial ``K(n)`` and ``G_c`` (see ``init``), then the initial E-steps.

        Returns the state object kept as ``state.run.estep_state``; initial E-steps count their
        distance evaluations under ``"estep"``.
        """
        n_samples, n_clusters = X.shape[0], centers.shape[0]
        G = min(int(self.G), n_clusters)
        if self.n_winners is None:
            n_winners = G if state.config.needs_resp else 1
        else:
            n_winners = min(int(self.n_winners), n_clusters)
        exact = G >= n_clusters or n_winners * G + int(self.n_explore) >= n_clusters
        st = _PartialState(n_winners, G, exact)
        if exact:
            return st
        seed_labels = state.run.seed_labels
        from_seeding = (self.init == "auto" and seed_labels is not None
                        and len(seed_labels) == n_samples)
        if self.init != "random":
            # one pass over the C^2 centre distances gives G_c and, as K(n) may be wider
            # (C' > G), each seed's C' nearest centres
            nearest = np.empty((n_clusters, max(G, n_winners)), dtype=np.int32)
            state.meter.count_per_chunk("estep", _partial.neighbourhoods_exhaustive(
                centers, nearest, state.config.n_threads))
            st.neighbourhoods = np.ascontiguousarray(nearest[:, :G])
            st.neighbourhood_centers = centers.copy()
            if from_seeding:
                st.winners = np.ascontiguousarray(nearest[seed_labels, :n_winners])
            else:
                st.winners, _ = top_winners(X, centers, n_winners, state)
        else:
            # Forster & Lücke (2018), Sec. 4: uniformly random K(n) and G_c
            rng = state.random_state
            st.winners = _distinct_random(rng, n_samples, n_clusters, n_winners)
            others = _distinct_random(rng, n_clusters, n_clusters - 1, G - 1)
            own = np.arange(n_clusters, dtype=np.int32)[:, None]
            st.neighbourhoods = np.hstack([own, others + (others >= own)]).astype(np.int32)
        max_cand = min(n_clusters, n_winners * G + int(self.n_explore))
        st.cand = np.empty((n_samples, max_cand), dtype=np.int32)
        st.cand_dist2 = np.empty((n_samples, max_cand), dtype=X.dtype)
        st.n_cand = np.empty(n_samples, dtype=np.int32)
        for _ in range(int(self.n_init_esteps)):
            self._search(X, sample_weight, centers, state, st, slice(None))
        return st

    def _search(self, X, sample_weight, centers, state, st, rows):
        """One search over ``S(n)`` of the fit data's ``rows`` (the batch ``X``) plus the
        neighbourhood update; returns the winners' squared distances (a fresh array)."""
        n_samples, n_clusters = X.shape[0], centers.shape[0]
        # K(n) of the batch: a view of the rows of a slice (updated in place), else a copy
        winners = st.winners[rows]
        cand, cand_dist2 = st.cand[:n_samples], st.cand_dist2[:n_samples]
        n_cand = st.n_cand[:n_samples]
        if self.neighbourhoods == "exhaustive" and not (
                st.neighbourhood_centers is not None
                and np.array_equal(st.neighbourhood_centers, centers)):
            # Alg. 1, first block: exact neighbourhoods from all C^2 centre distances
            state.meter.count_per_chunk("estep", _partial.neighbourhoods_exhaustive(
                centers, st.neighbourhoods, state.config.n_threads))
            st.neighbourhood_centers = centers.copy()
        # the same candidates for a row whoever holds it (the run's row stream)
        explore = state.row_integers(np.arange(st.winners.shape[0])[rows],
                                     int(self.n_explore), n_clusters, st.calls)
        st.calls += 1
        win_dist2 = np.empty((n_samples, st.n_winners), dtype=X.dtype)
        # Alg. 1/2, data loop: distances to S(n), new K(n) = the C' nearest of S(n)
        state.meter.count("estep", _partial.partial_search(
            X, centers, st.neighbourhoods, explore, winners, win_dist2, cand, cand_dist2,
            n_cand, state.config.n_threads))
        if self.neighbourhoods == "estimated":
            # Alg. 2: G_c from the distances just computed (eq. 8), no new evaluation;
            # zero-weight samples are not data (they are in no I_c)
            labels = winners[:, 0].copy()
            labels[~(sample_weight > 0)] = -1
            if st.chunked:  # (the sums of the chunk's rows; G_c from all chunks' sums)
                st.pair_sums = pair_sums(labels, cand, cand_dist2, n_cand, n_clusters,
                                         self.neighbour_stat == "dist")
            else:
                n_entries = int(n_cand.sum())
                if st.entry_cluster is None or st.entry_cluster.shape[0] < n_entries:
                    # kept between calls: fresh memory would be paged in at every call; the
                    # headroom spares a reallocation each time S(n) grows a little
                    size = min(st.cand.size, n_entries + n_entries // 4)
                    st.entry_cluster = np.empty(size, dtype=np.int32)
                    st.entry_dist2 = np.empty(size, dtype=X.dtype)
                _partial.neighbourhoods_estimated(
                    labels, cand, cand_dist2, n_cand, st.neighbourhoods,
                    self.neighbour_stat == "dist", state.config.n_threads, st.entry_cluster,
                    st.entry_dist2)
        if not isinstance(rows, slice):
            st.winners[rows] = winners
        return win_dist2

    def assign(self, X, sample_weight, centers, state):
        """Partial E-step: update ``K(n)`` (and ``G_c``), return the truncated assignment.

        See :meth:`EStep.assign`. ``winners`` of the result is a copy of ``K(n)`` sorted by
        increasing distance; ``labels`` its first column.
        """
        st = state.run.estep_state
        if not isinstance(st, _PartialState):  # called without init_state
            st = state.run.estep_state = self.init_state(X, sample_weight, centers, state)
        if st.exact:
            winners, win_dist2 = top_winners(X, centers, st.n_winners, state)
        else:
            rows = batch_rows(state, X.shape[0], st.winners.shape[0])
            win_dist2 = self._search(X, sample_weight, centers, state, st, rows)
            winners = st.winners[rows].copy()
        return winners_assignment(X, sample_weight, centers, state, winners, win_dist2)
