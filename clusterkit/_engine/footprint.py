"""A fit's memory before it runs: the estimate of what each phase allocates
(:class:`MemoryEstimate`, from every strategy's
:meth:`~clusterkit._engine.strategy._Strategy.buffer_bytes`) and the one decision when
``fit`` starts (:func:`plan_memory`): run within the budget, or refuse before allocating with
what would fit.

The phases, and what they count beyond the data the caller holds:

* ``"data"``: the fit's own copies of the rows it runs on (validated, reduced, centred),
  their weights and per-sample records, for the whole fit; for data read in row chunks, the
  blocks read at a time;
* ``"reduction"``: the reducer's buffers, while it runs;
* ``"seeding"``: the seeder's, while it runs;
* ``"estep"``: the E-step's per-run state and scratch, during the iterations and the final
  labelling;
* ``"mstep"``: the M-step's, the schedule's and the refiner's, likewise;
* ``"labels"``: the final labelling's labels, distances and tiles.

The peak is ``data + max(reduction, seeding, runs x (estep + mstep) + labels)``, ``runs`` 2
when ``n_init > 1`` (the best run is kept while the next one runs), else 1.
"""
import functools

from .._data import blocks, memory
from .._data.memory import FitMemoryError, format_bytes

__all__ = ["MemoryEstimate", "PHASES", "estimate_memory", "plan_memory"]

#: The phases of a fit's memory estimate, in the order they run.
PHASES = ("data", "reduction", "seeding", "estep", "mstep", "labels")

#: What the fit allocates besides its arrays (small objects, scratch): a floor that
#: keeps estimates of tiny fits honest.
_OVERHEAD = 512 << 10


@functools.total_ordering
class MemoryEstimate:
    """Bytes a fit will allocate at its peak, beyond the data the caller holds, with their
    breakdown by phase: ``int(estimate)`` (or ``estimate.peak``) is the peak, and an estimate
    compares with numbers as its peak does.

    Attributes
    ----------
    peak : int
        Bytes at the fit's peak: ``data + max(reduction, seeding, runs x (estep + mstep) +
        labels)``, plus a small fixed overhead.
    phases : dict
        Bytes per phase: ``"data"`` (the fit's copies of the rows), ``"reduction"``,
        ``"seeding"``, ``"estep"``, ``"mstep"`` (with the schedule's and the refiner's
        state), ``"labels"``; see :meth:`Clusterer.estimate_memory`.
    runs : int
        How many runs' states coexist (2 when ``n_init > 1``, else 1).
    budget : int or None
        The fit's budget when it was estimated (``memory_limit``, or half the memory
        available), ``None`` if unknown.
    reserved : int
        What the fit sets aside before its E-step sizes its state by what is left (data,
        labels, M-step, the E-step's labels and distances; :func:`estimate_memory`).
    """

    def __init__(self, phases, runs=1, budget=None, reserved=0):
        self.phases, self.runs, self.budget = dict(phases), runs, budget
        self.reserved = reserved
        self.peak = int(_OVERHEAD + phases["data"] + max(
            phases["reduction"], phases["seeding"],
            runs * (phases["estep"] + phases["mstep"]) + phases["labels"]))

    def __int__(self):
        return self.peak

    __index__ = __int__

    def __eq__(self, other):
        return self.peak == int(other)

    def __lt__(self, other):
        return self.peak < int(other)

    def __hash__(self):
        return hash(self.peak)

    def __repr__(self):
        return f"MemoryEstimate({self.peak})"

    def __str__(self):
        parts = ", ".join(f"{name} {format_bytes(self.phases[name])}" for name in PHASES
                          if self.phases[name])
        limit = "unknown" if self.budget is None else format_bytes(self.budget)
        return f"{format_bytes(self.peak)} at the peak ({parts}); budget {limit}"

    @property
    def largest_phase(self):
        """The phase with the most bytes."""
        return max(PHASES, key=self.phases.__getitem__)


def _data_phase(n_given, n_fit, n_features, itemsize, copies_input, reduced, chunk_rows):
    """Bytes of the fit's own rows (see the module notes)."""
    if chunk_rows is not None:  # read a block at a time, its frame's copy beside it
        n_bytes = 2 * chunk_rows * n_features * itemsize + n_given * itemsize
        if not reduced:
            return n_bytes
    else:
        n_bytes = n_given * itemsize  # the weights (ones when none are given)
    if copies_input:
        n_bytes += n_given * n_features * itemsize
    if reduced:  # the reduced set and its weights, besides its centred copy
        n_bytes += n_fit * (n_features + 1) * itemsize
    # the centred copy and the run's labels
    return n_bytes + n_fit * (n_features * itemsize + 4)


def estimate_memory(composition, n_samples, n_features, n_clusters, dtype, *, n_init=1,
                    n_threads=1, copies_input=False, chunk_rows=None, compute_labels=True):
    """The :class:`MemoryEstimate` of a fit of ``composition`` on ``n_samples`` x
    ``n_features`` rows of ``dtype``.

    Parameters
    ----------
    composition : Composition
        The six resolved strategies.
    n_samples, n_features, n_clusters : int
    dtype : numpy.dtype
        The fit's dtype.
    n_init, n_threads : int, default=1
    copies_input : bool, default=False
        Whether validating the input copies it (another dtype or order than the fit's).
    chunk_rows : int or None, default=None
        Rows per chunk of data read in row chunks, ``None`` for data in memory.
    compute_labels : bool, default=True

    Returns
    -------
    estimate : MemoryEstimate
    """
    reducer = composition.reduce
    itemsize = dtype.itemsize
    chunked_steps = chunk_rows is not None and not reducer.chunked
    n_fit = n_samples if chunked_steps else min(n_samples,
                                               reducer.expected_rows(n_samples, n_clusters))
    # (a reducer that cannot return fewer rows returns the data as they are)
    reduced = (reducer.reduces and not chunked_steps
               and reducer.max_rows(n_samples, n_clusters) < n_samples)
    phases = dict.fromkeys(PHASES, 0)
    phases["data"] = _data_phase(n_samples, n_fit, n_features, itemsize, copies_input,
                                 reduced, chunk_rows)
    if compute_labels:
        phases["labels"] = (n_samples * (4 + itemsize)
                            + n_threads * blocks.TILE_ROWS * n_clusters * itemsize)
    args = (n_features, n_clusters, dtype, composition)
    if reduced:
        phases["reduction"] = reducer.buffer_bytes(n_samples, *args)
    phases["seeding"] = composition.seed.buffer_bytes(n_fit, *args)
    phases["mstep"] = sum(strategy.buffer_bytes(n_fit, *args) for strategy in
                          (composition.mstep, composition.schedule, composition.refine))
    runs = 2 if n_init > 1 else 1
    # (the bounded E-steps size their bounds by what the rest leaves, as when they run:
    # the fit sets the same aside, MemoryEstimate.reserved)
    reserved = (_OVERHEAD + phases["data"] + phases["labels"] + runs * phases["mstep"]
                + runs * n_fit * (4 + itemsize))
    with memory.reserve(reserved):
        phases["estep"] = composition.estep.buffer_bytes(n_fit, *args)
    return MemoryEstimate(phases, runs, memory.budget(), reserved)


def plan_memory(estimate, n_clusters, fits):
    """Refuse, before any large allocation, a fit whose ``estimate`` exceeds its budget.

    Parameters
    ----------
    estimate : MemoryEstimate
    n_clusters : int
    fits : callable
        ``fits(n_clusters)``: whether a fit with that many clusters would stay within the
        budget (the same estimate with another ``n_clusters``), to say what would fit.

    Raises
    ------
    FitMemoryError
        With what the fit would need, where, and what would fit instead.
    """
    budget = estimate.budget
    if budget is None or int(estimate) <= budget:
        return
    low, high = 0, n_clusters  # the most clusters that fit: fits(low), not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    phase = estimate.largest_phase
    advice = [f"n_clusters={low}" if low >= 1 else None,
              {"data": "data in row chunks (a numpy.memmap or a dask array: only blocks "
                       "are read, not copied)",
               "estep": "an E-step that keeps less per sample (presets.lloyd, "
                        "presets.minibatch)",
               "seeding": "a lighter seeding (seed='afkmc2' or a SampledSeeder)",
               "reduction": "a smaller coreset",
               "mstep": "a lighter schedule or M-step (presets.lloyd, presets.minibatch)",
               "labels": "compute_labels=False"}[phase],
              f"memory_limit >= {int(estimate)} ({format_bytes(int(estimate))})"]
    raise FitMemoryError(
        f"The fit would need about {format_bytes(int(estimate))} ({estimate}), above "
        f"{memory.describe_budget()}. What would fit: "
        + "; or ".join(item for item in advice if item) + ".")
