"""The refiner's contract (:class:`Refiner`), the sixth of the strategy contracts of
:mod:`clusterkit._engine.contracts`, which re-exports it."""
from abc import ABC, abstractmethod

from .strategy import _Strategy

__all__ = ["Refiner"]


class Refiner(_Strategy, ABC):
    """Improves the centres of a run that ended on its own (converged, or its schedule's
    batches ran out).

    Attributes
    ----------
    objectives : tuple of Objective or None
        Class attribute: the M-step objectives (:attr:`MStep.objective`) it can refine; the
        driver refuses any other M-step. ``None`` declares nothing (a refiner that changes
        nothing).
    refines : bool
        Class attribute: whether :meth:`refine` may change a run (``True`` by default);
        :class:`~clusterkit.NoRefinement` declares ``False``, and a fit then has no
        refinement phase (and may stream).
    chunks : bool
        Class attribute: whether :meth:`refine` can refine a fit on all the rows of data in
        row chunks (a dask array, a memmap larger than memory): ``X`` is then a
        :class:`~clusterkit._data.chunked.ChunkedData` in the fit's frame and
        ``sample_weight`` is ``None``; the refiner reads the rows only through its
        ``map_chunks`` (sums per chunk, added in chunk order), and ``iterate`` runs the
        iterations chunk by chunk as the fit does. ``False`` by default.

    Notes
    -----
    The refiner sees the fit's data as the run did (reduced and centred) and the run itself
    (a :class:`~clusterkit.Run`: its final centres are ``run.centers``, its objective
    ``run.objective_value``). ``iterate(centers)`` runs the composition's iterations from
    ``centers`` as a new run would after seeding: fresh per-run states, the same stopping
    rules, ``max_iter`` per call. It returns that new run (its centres, labels, history and
    strategies' states); with a mini-batch schedule each call spends the schedule's whole
    budget again. ``iterate(centers, carry=True)`` lets the E-step continue the per-run state
    of the last call's run (of ``run`` at the first call) where it can
    (:meth:`EStep.carry_state`; the bounded E-steps keep their bounds: the same iterates at
    fewer distances); that run then no longer holds it. ``iterate(centers, tol=t)`` stops
    that call's iterations at the tolerance ``t`` instead of the fit's ``tol``. A run whose
    ``max_iter`` or callback ended it is not refined; a callback that stops the fit during a
    round ends the refinement, and the fit keeps the run it was refining.

    :meth:`refine` returns either the run it was given or a run one of its ``iterate`` calls
    returned, never one with a worse objective on the fit's data than the run it was given.
    A refiner that changes the partition itself, row by row, rather than through
    ``iterate`` (:class:`~clusterkit.SinglePointMoves`) ends that run at its new partition
    with :meth:`Run.replace_partition <clusterkit.Run.replace_partition>` and returns it.
    It counts its own distance evaluations under ``state.meter.count("refinement", n)`` (the
    iterations count theirs in their phases) and records what it did in
    ``state.run.refinement_log`` (the estimator's ``refinement_log_``): one dict per
    ``iterate`` call with at least ``"round"``, ``"objective"`` and ``"kept"`` (whether the
    round's run was kept; the entries with a ``"round"`` are matched to the calls in order,
    so that the kept rounds' steps make the fit's ``history_``), and any entries of its own
    without a ``"round"`` (:class:`~clusterkit.SinglePointMoves` logs its passes). Outside
    its ``iterate`` calls ``state.run`` is the run the fit's refinement started from, whose
    log this is.

    Refiners compose in turn: ``Clusterer(refine=(a, b))`` is
    :class:`~clusterkit.RefinerSequence` ``((a, b))``, which hands the run ``a`` returns to
    ``b`` (sharing one ``iterate`` and one log) and declares what both can serve; since
    each returns a run no worse than the one it got, so does the sequence.
    """

    objectives = None
    refines = True
    chunks = False

    def fitted_attributes(self, state):
        """``refinement_log_``: the kept run's rounds (``state.run.refinement_log``)."""
        return {"refinement_log_": list(state.run.refinement_log)}

    @abstractmethod
    def refine(self, X, sample_weight, run, iterate, state):
        """Return the refined run.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The data the run fitted (after reduction, centred).
        sample_weight : ndarray of shape (n_samples,)
        run : Run
            The run to refine; ``run.centers`` are its final centres.
        iterate : callable
            ``iterate(centers, carry=False, tol=None) -> Run``: the composition's
            iterations from ``centers`` (see the class notes for ``carry`` and ``tol``).
        state : FitState

        Returns
        -------
        run : Run
            ``run`` itself or the run one ``iterate`` call returned.
        """
