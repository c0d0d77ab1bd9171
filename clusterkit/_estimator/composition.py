"""Which compositions may run: one check of what the six strategies declare, against each
other and against the way the data come (sparse rows, row chunks, a ``partial_fit`` stream).

:func:`check_composition` is called once when a fit or a stream starts, before any work, and
runs every rule in one order: the data's kind, the stream, each strategy's own
``_validate`` hook, then the declarations between strategies. :func:`stream_refusal` answers
from the strategy classes alone, so that ``partial_fit`` is absent (with the reason) from an
estimator that cannot stream.
"""
from .._data.chunked import ChunkedData
from .._data.sparse import kernels_for
from .._engine.contracts import SHARED_STATE_HOOKS, EStep
from .guide import SPARSE_PRESETS
from .registry import sparse_seeds

__all__ = ["STREAM_PARAMETERS", "check_composition", "stream_refusal"]

#: The parameters whose strategies decide whether a composition can stream.
STREAM_PARAMETERS = ("mstep", "reduce", "estep", "schedule", "refine")


def check_composition(composition, X, n_clusters, streaming=False):
    """The composition that runs on ``X``, or the error that says why none can.

    Parameters
    ----------
    composition : Composition
        The six resolved strategies.
    X : ndarray, sparse matrix or ChunkedData
        The training data (or a stream's first batch).
    n_clusters : int
    streaming : bool, default=False
        A ``partial_fit`` stream: the schedule is replaced by its
        :meth:`~clusterkit.Schedule.stream_schedule`.

    Returns
    -------
    composition : Composition

    Raises
    ------
    TypeError
        Sparse ``X`` for a strategy that does not declare ``accepts_sparse``.
    ValueError
        Row chunks for a reducer that cannot read them (or a spherical M-step), a stream for
        a composition that cannot stream, a strategy's own parameters (its ``_validate``),
        or declarations that do not fit together.
    """
    _check_kind(composition, kernels_for(X))
    if isinstance(X, ChunkedData):
        _check_chunked(composition)
    if streaming:
        reason = stream_refusal(*(type(getattr(composition, name))
                                  for name in STREAM_PARAMETERS))
        if reason:
            raise ValueError(reason)
        composition = composition._replace(schedule=composition.schedule.stream_schedule())
    for strategy in composition:
        strategy._validate(X, n_clusters, composition)
    _check_declarations(composition)
    return composition


def _check_kind(composition, kind):
    """Refuse rows of a ``kind`` (:func:`~clusterkit._data.sparse.kernels_for`) that a
    strategy of the composition cannot take: sparse input for a strategy that does not
    declare ``accepts_sparse``, a ``TypeError`` naming those strategies by parameter and what
    takes sparse input instead, derived from the registry (the presets the guide lists as
    taking it, the seeding shortcuts that do), so that it never goes stale."""
    refused = [(name, strategy) for name, strategy in zip(composition._fields, composition)
               if kind.refuses(strategy)]
    if not refused:
        return
    names = ", ".join(f"{name}={type(strategy).__name__}" for name, strategy in refused)
    presets = [f"presets.{name}" for name in SPARSE_PRESETS]
    presets = ", ".join(presets[:-1]) + f" or {presets[-1]}" if len(presets) > 1 else presets[0]
    seeds = ", ".join(repr(seed) for seed in sparse_seeds())
    if [name for name, _ in refused] == ["seed"]:
        raise TypeError(f"{names} cannot take sparse X. Sparse input is taken by {presets} "
                        f"(and by the rest of this composition with seed= one of {seeds} or "
                        "initial centres; presets take seed= too); or pass X.toarray().")
    raise TypeError(f"{names} cannot take sparse X. Sparse input is taken by {presets} "
                    f"(or a Clusterer whose six strategies all declare accepts_sparse, "
                    f"seeded by one of {seeds} or initial centres); or pass X.toarray().")


def _check_chunked(composition):
    """Data in row chunks reach either a reducer that reads them (the fit then runs on its
    reduced set; not yet for a model on the unit sphere), or a
    composition that runs on all the rows where they are (:mod:`clusterkit._engine.mapreduce`):
    an E-step that runs chunk by chunk (:attr:`EStep.chunks`), a schedule whose batches can
    be read from the chunks (:attr:`Schedule.chunk_batches`; full and nested batches, which
    run where the rows are, need an M-step rule for statistics summed over the chunks,
    :attr:`MStep.chunk_rules`), no refiner or
    one that refines chunks (:attr:`Refiner.chunks`). The refusal says why each strategy
    cannot (its ``chunks_refusal``)."""
    reducer = composition.reduce
    if reducer.chunked:
        if composition.mstep.spherical:
            raise ValueError("Clusterer.fit with a spherical M-step (SphericalMStep) runs "
                             "on all the rows of data in row chunks, not on a coreset of "
                             "them; use reduce=None (as presets.spherical_kmeans does), or "
                             "pass X.compute().")
        return
    estep, mstep, schedule = composition.estep, composition.mstep, composition.schedule
    mapped = schedule.full_batch or schedule.nested  # (each step runs where the rows are)
    refused = [(f"{name}={type(strategy).__name__}", why) for name, strategy, ok, why in (
        ("estep", estep, estep.chunks and (mapped or not estep.per_sample_state),
         estep.chunks_refusal if not estep.chunks else
         "its per-sample state (bounds) would have to follow the mini-batches, which run "
         "in this process"),
        ("mstep", mstep, not mapped or schedule.center_update in mstep.chunk_rules,
         mstep.chunks_refusal),
        ("schedule", schedule, schedule.chunk_batches, schedule.chunks_refusal),
        ("refine", composition.refine,
         not composition.refine.refines or composition.refine.chunks,
         composition.refine.chunks_refusal)) if not ok]
    if refused:
        reasons = "; ".join(f"{name}: {why}" for name, why in refused if why)
        raise ValueError(
            f"Clusterer.fit on data in row chunks (a dask array, or a memmap larger than "
            f"memory) runs on all the rows with FullEStep, TruncatedEStep, "
            f"PartialEStep (or a bounded E-step on full or nested batches), a HardMStep, "
            f"SoftMStep or SphericalMStep, full batches, nested batches (with a HardMStep) "
            f"or uniform mini-batches and no refiner or Breathing (presets.lloyd, "
            f"presets.elkan, presets.nmbatch, presets.gmm, presets.spherical_kmeans, "
            f"presets.minibatch, presets.var_kmeans_s, presets.var_gmm_s, "
            f"presets.best_quality, presets.large_scale), or on a coreset with a "
            f"reducer that works on row chunks, reduce=LWCS(...) (presets.lwcs_lloyd, "
            f"presets.vc_gmm), with any other strategy; "
            f"{', '.join(name for name, _ in refused)} cannot run chunk by chunk yet"
            + (f" ({reasons})." if reasons else "."))


def _check_declarations(composition):
    """Check what the six strategies declare against each other (see
    :mod:`clusterkit._engine.contracts`): objectives and batch rules; ``ValueError`` naming
    the strategies and what to use instead."""
    estep, mstep, schedule = composition.estep, composition.mstep, composition.schedule
    if estep.objectives is not None and mstep.objective not in estep.objectives:
        raise ValueError(f"{type(estep).__name__} cannot compute the {mstep.objective.name} "
                         f"that {type(mstep).__name__} optimises; choose an E-step that "
                         "does (see the E-steps' objectives).")
    own = [hook for hook in SHARED_STATE_HOOKS
           if getattr(type(estep), hook) is not getattr(EStep, hook)]
    if len(own) not in (0, len(SHARED_STATE_HOOKS)) or bool(own) != estep.shares_state:
        declared = "declares" if estep.shares_state else "does not declare"
        raise ValueError(
            f"{type(estep).__name__} {declared} shares_state and implements "
            f"{len(own)} of the four hooks that share a state among row chunks "
            f"({', '.join(SHARED_STATE_HOOKS)}: {', '.join(own) or 'none'}). They only work "
            "together: implement all four and set shares_state = True, or none of them.")
    refiner = composition.refine
    if refiner.objectives is not None and mstep.objective not in refiner.objectives:
        raise ValueError(f"{type(refiner).__name__} cannot refine the {mstep.objective.name} "
                         f"that {type(mstep).__name__} optimises; use refine=None.")
    if schedule.center_update not in mstep.update_rules and mstep.update_rules == ("replace",):
        raise ValueError(f"{type(mstep).__name__} re-estimates the model from whole passes over "
                         f"the data only, but {type(schedule).__name__} updates it batch by "
                         f"batch (the rule {schedule.center_update!r}); use schedule='full' "
                         "(reduce='lwcs' makes each pass cheap), or mstep='hard' for "
                         "mini-batch k-means.")
    if schedule.center_update not in mstep.update_rules:
        rules = " or ".join(repr(rule) for rule in mstep.update_rules)
        raise ValueError(f"{type(schedule).__name__} combines batches by the rule "
                         f"{schedule.center_update!r}, which {type(mstep).__name__} does not "
                         f"implement (it implements {rules}); use a schedule with full "
                         "batches (schedule='full'), or a hard M-step (mstep='hard') for "
                         "mini-batches.")


def stream_refusal(mstep, reduce, estep, schedule, refine):
    """Why a composition of these strategy classes cannot run ``partial_fit`` (one sentence
    saying what to use instead), from what they declare, or ``None`` if it can; a ``None``
    class (a value that names no strategy) declares nothing."""
    if mstep is not None and mstep.needs_resp:
        return ("partial_fit keeps running means of hard assignments; this Clusterer's "
                "M-step needs responsibilities (a Gaussian mixture).")
    if reduce is not None and reduce.reduces:
        return (f"partial_fit clusters each batch as it comes; {reduce.__name__} summarises a "
                "whole data set. Use fit, or reduce=None for a stream.")
    if estep is not None and not estep.exact:
        return (f"partial_fit needs an exact E-step (FullEStep, ElkanEStep or TruncatedEStep), "
                f"not {estep.__name__}: per-sample search state cannot follow a stream of new "
                "samples.")
    if schedule is not None and not schedule.streams:
        return (f"partial_fit steps on the caller's batches; {schedule.__name__} chooses its "
                "own batches from all the data. Use fit, or schedule='minibatch' (or 'full') "
                "for a stream.")
    if refine is not None and refine.refines:
        return (f"partial_fit cannot refine: {refine.__name__} restarts the iterations on all "
                "the data, which a stream never holds; use fit, or refine=None for a stream.")
    return None
