"""The rule that chooses an exact bounded E-step for a fit (:class:`BoundedEStep`): Elkan's
bounds, Yinyang's groups, or Hamerly's single bound with a neighbour search, by the data's
dimension, the number of clusters and the memory the bounds may take."""
from .._data.sparse import kernels_for
from .._engine.assignment import QUANTIZATION_ERROR
from .._engine.contracts import EStep
from .bounds import Bounds, bounds_budget
from .rows import run_rows
from .exact import ElkanEStep, elkan_memory
from .yinyang import SEPARATION_MAX_FEATURES, YinyangEStep

__all__ = ["BoundedEStep"]

#: At low dimension (at most ``SEPARATION_MAX_FEATURES`` features), up to this many clusters
#: the rule takes Hamerly's single bound with the neighbour search, above it Yinyang's groups
#: (``benchmarks/bench_lowd.py``: Hamerly's as fast as Yinyang's or faster at C = 100 and
#: 500, 1.3x slower at C = 1,024, where each step's neighbour lists cost most).
LOW_DIMENSION_MAX_CLUSTERS = 512


class BoundedEStep(EStep):
    """Exact bounded E-step chosen by dimension and memory: the recommended exact E-step.

    The rule, applied when ``fit`` starts (to the rows the fit runs on, a coreset's if the
    data are reduced):

    * at low dimension (dense data of at most 8 features), :class:`YinyangEStep`: with one
      group (Hamerly's bound, searched through each centre's nearest centres) up to
      ``C = 512``, with ``n_groups`` groups above. There Elkan's ``C`` bounds per sample cost
      more to read than the few distances they save: on BIRCH (100,000 x 2, C = 100) Elkan
      took 1.04 s, Yinyang 0.73 s (before the neighbour search), Lloyd 0.97 s;
    * :class:`ElkanEStep` (``4 N C`` bytes of bounds, the fewest distances) when
      :func:`~clusterkit.estep.exact.elkan_memory` is at most the budget, and always for sparse
      data (only Elkan's kernel takes CSR rows);
    * :class:`YinyangEStep` with ``n_groups`` groups (``4 N t`` bytes, ``t`` at most
      ``C / 10`` and within the budget) otherwise.

    Both give Lloyd's iterates, so the rule changes the time and memory of a fit, never its
    result. This is the E-step of :func:`~clusterkit.presets.elkan`.

    The choice is made once per fit, when ``fit`` starts, for the rows and the budget the
    chosen E-step is checked with; the fit's runs (and each ``partial_fit`` batch, checked
    when its call starts) run that E-step.

    Parameters
    ----------
    max_bounds_bytes : int or None, default=None
        The budget of the bounds, for the choice and for the chosen E-step. ``None``: half
        the memory available when ``fit`` starts, no limit where that is not known
        (:func:`~clusterkit.estep.bounds.bounds_budget`, the budget of :class:`ElkanEStep`
        and :class:`YinyangEStep` too).
    n_groups : int or "auto", default="auto"
        Yinyang's groups, when it is chosen (see :class:`YinyangEStep`).
    prune : int, "auto" or None, default="auto"
        Exact dimension pruning in the chosen E-step (see :class:`ElkanEStep`); dense data
        only.

    Notes
    -----
    Cost, memory and state are those of the chosen E-step (``state.run.estep_state`` is its
    state). ``benchmarks/bench_exact.py --yinyang`` measures Elkan and Yinyang side by side,
    ``benchmarks/bench_lowd.py`` the low-dimension choices against geokmeans; the
    documentation's page on exact k-means has the numbers and why, above low dimension,
    memory, not speed, decides.

    Examples
    --------
    >>> from clusterkit import BoundedEStep
    >>> BoundedEStep(max_bounds_bytes=10**6).chosen(1000, 100)
    ElkanEStep(max_bounds_bytes=1000000, prune='auto')
    >>> BoundedEStep(max_bounds_bytes=10**6).chosen(10**5, 100)
    YinyangEStep(n_groups='auto', max_bounds_bytes=1000000, prune='auto')
    >>> BoundedEStep().chosen(10**5, 100, n_features=2)
    YinyangEStep(n_groups=1, max_bounds_bytes=None, prune='auto')
    """

    _parameter_constraints = YinyangEStep._parameter_constraints  # (with prune)

    exact = True
    objectives = (QUANTIZATION_ERROR,)
    chunks = True  # (each chunk chooses for its rows, in its worker's memory)
    accepts_sparse = True  # sparse data always go to ElkanEStep

    def __init__(self, max_bounds_bytes=None, n_groups="auto", prune="auto"):
        self.max_bounds_bytes = max_bounds_bytes
        self.n_groups = n_groups
        self.prune = prune

    def chosen(self, n_samples, n_clusters, sparse=False, n_features=None):
        """The E-step the rule picks for a fit on ``n_samples`` rows (see the class notes),
        in the budget of ``max_bounds_bytes`` now.

        Parameters
        ----------
        n_samples, n_clusters : int
        sparse : bool, default=False
            Whether the data are sparse.
        n_features : int or None, default=None
            The data's dimension; ``None`` leaves out the low-dimension part of the rule.

        Returns
        -------
        estep : ElkanEStep or YinyangEStep
        """
        return self._rule(n_samples, n_clusters, sparse, n_features,
                          bounds_budget(self.max_bounds_bytes))

    def _rule(self, n_rows, n_clusters, sparse, n_features, budget):
        """The rule of the class notes, for ``n_rows`` rows in ``budget`` bytes (``None``: no
        limit); ``sparse``: rows that YinyangEStep refuses, which ElkanEStep's CSR kernels
        take (unpruned)."""
        prune = getattr(self, "prune", None)
        if sparse:
            return ElkanEStep(self.max_bounds_bytes, prune=None)
        elkan = ElkanEStep(self.max_bounds_bytes, prune)
        if n_features is not None and n_features <= SEPARATION_MAX_FEATURES:
            one_group = self.n_groups == "auto" and n_clusters <= LOW_DIMENSION_MAX_CLUSTERS
            return YinyangEStep(1 if one_group else self.n_groups, self.max_bounds_bytes,
                                prune)
        if budget is None or elkan_memory(n_rows, n_clusters) <= budget:
            return elkan
        return YinyangEStep(self.n_groups, self.max_bounds_bytes, prune)

    def _validate(self, X, n_clusters, composition):
        """Check the E-step the rule picks for the most rows the reducer may return, by its
        own rules, in the same budget: every run then chooses by the same rule for the rows
        it has (at most those), so it needs no more memory than was checked.

        Raises
        ------
        TypeError, ValueError
            As :class:`ElkanEStep` and :class:`YinyangEStep`.
        """
        n_rows = run_rows(X, n_clusters, composition)
        budget = bounds_budget(self.max_bounds_bytes)
        estep = self._rule(n_rows, n_clusters, kernels_for(X).refuses(YinyangEStep),
                           X.shape[1], budget)
        estep._check_fit(X, n_clusters, composition, budget)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Those of the E-step the rule picks for ``n_samples`` rows in the budget."""
        return self._rule(n_samples, n_clusters, False, n_features,
                          bounds_budget(self.max_bounds_bytes)).buffer_bytes(
            n_samples, n_features, n_clusters, dtype, composition)

    def init_state(self, X, sample_weight, centers, state):
        """The state of the E-step the rule picks for this run's rows (:meth:`chosen`); it
        names that E-step, which :meth:`assign`, :meth:`final_labels` and
        :meth:`labelling_rows` follow, so a run never mixes the two."""
        estep = self.chosen(X.shape[0], centers.shape[0],
                            kernels_for(X).refuses(YinyangEStep), X.shape[1])
        return estep.init_state(X, sample_weight, centers, state)

    def _running(self, X, sample_weight, centers, state):
        """The chosen E-step, from its state (made now if :meth:`init_state` was not
        called)."""
        if not isinstance(state.run.estep_state, Bounds):
            state.run.estep_state = self.init_state(X, sample_weight, centers, state)
        return state.run.estep_state.estep

    def carry_state(self, estep_state, state):
        """The chosen E-step's (see :meth:`EStep.carry_state`)."""
        if isinstance(estep_state, Bounds):
            return estep_state.estep.carry_state(estep_state, state)
        return None

    def assign(self, X, sample_weight, centers, state):
        """Return the chosen E-step's assignment (see :meth:`EStep.assign`)."""
        return self._running(X, sample_weight, centers, state).assign(X, sample_weight,
                                                                      centers, state)

    def final_labels(self, state):
        """The chosen E-step's (see :meth:`EStep.final_labels`)."""
        bounds = state.run.estep_state
        return bounds.estep.final_labels(state) if isinstance(bounds, Bounds) else None

    def labelling_rows(self, X, state):
        """The chosen E-step's (see :meth:`EStep.labelling_rows`)."""
        bounds = state.run.estep_state
        return bounds.estep.labelling_rows(X, state) if isinstance(bounds, Bounds) else None
