"""Refiners in turn: :class:`RefinerSequence` runs each of its refiners on the run the one
before it kept (``Clusterer(refine=(Breathing(), SinglePointMoves()))``)."""
from .._engine.constraints import Satisfies
from .._engine.contracts import Refiner

__all__ = ["RefinerSequence"]


def _refiners(value):
    return (isinstance(value, (tuple, list)) and len(value) > 0
            and all(isinstance(refiner, Refiner) for refiner in value))


class RefinerSequence(Refiner):
    """Several refiners, one after another: each refines the run the one before returned.

    ``Clusterer(refine=(a, b))`` is ``Clusterer(refine=RefinerSequence((a, b)))``: breathing
    rounds, say, then single-point moves on the centres they kept
    (``refine=(Breathing(), SinglePointMoves())``). Each refiner keeps the contract of
    :class:`~clusterkit.Refiner` (never worse than the run it gets), so the sequence does too.

    Parameters
    ----------
    refiners : tuple of Refiner
        At least one; run in this order.

    Notes
    -----
    What the sequence declares follows from its refiners: it refines the M-step objectives
    all of them can (:attr:`objectives`), runs on row chunks if all of them do
    (:attr:`chunks`), and changes a run if one of them does (:attr:`refines`). Each refiner's
    own rules (``_validate``) are checked when the fit starts, and a refusal names it. Every
    entry a refiner adds to ``refinement_log_`` names it (``"refiner"``); the entries with a
    ``"round"`` (one per ``iterate`` call, as :class:`~clusterkit.Breathing` logs them) judge
    the rounds of all the refiners in the order they ran.

    Examples
    --------
    >>> from clusterkit import Breathing, Clusterer, SinglePointMoves
    >>> from clusterkit.datasets import make_birch_grid
    >>> X, _, _ = make_birch_grid(n_side=3, n_per_cluster=40, random_state=0)
    >>> model = Clusterer(9, seed="random", refine=(Breathing(m=2), SinglePointMoves()),
    ...                   random_state=0).fit(X)
    >>> sorted({entry["refiner"] for entry in model.refinement_log_})
    ['Breathing', 'SinglePointMoves']
    """

    _parameter_constraints = {"refiners": [Satisfies(_refiners,
                                                     "a non-empty tuple of Refiner")]}

    def __init__(self, refiners):
        self.refiners = refiners

    @property
    def objectives(self):
        """The objectives every refiner that declares some can refine (``None``: none
        declares any)."""
        declared = [refiner.objectives for refiner in self.refiners
                    if refiner.objectives is not None]
        if not declared:
            return None
        return tuple(objective for objective in declared[0]
                     if all(objective in others for others in declared[1:]))

    @property
    def refines(self):
        """Whether one of the refiners may change a run."""
        return any(refiner.refines for refiner in self.refiners)

    @property
    def chunks(self):
        """Whether every refiner that changes a run can refine one on row chunks."""
        return all(refiner.chunks or not refiner.refines for refiner in self.refiners)

    @property
    def chunks_refusal(self):
        return "; ".join(f"{type(refiner).__name__}: {refiner.chunks_refusal}"
                         for refiner in self.refiners
                         if refiner.refines and not refiner.chunks and refiner.chunks_refusal)

    def _validate(self, X, n_clusters, composition):
        mstep = composition.mstep
        for refiner in self.refiners:
            refiner._validate(X, n_clusters, composition)
            if refiner.objectives is not None and mstep.objective not in refiner.objectives:
                raise ValueError(f"{type(refiner).__name__} cannot refine the "
                                 f"{mstep.objective.name} that {type(mstep).__name__} "
                                 "optimises; leave it out of refine.")

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The largest of the refiners' (they run one after another)."""
        return max(refiner.buffer_bytes(n_samples, n_features, n_clusters, dtype,
                                        composition) for refiner in self.refiners)

    def fitted_attributes(self, state):
        attributes = {}
        for refiner in self.refiners:
            attributes.update(refiner.fitted_attributes(state))
        return attributes

    def refine(self, X, sample_weight, run, iterate, state):
        log = state.run.refinement_log
        for refiner in self.refiners:
            if not refiner.refines:
                continue
            first = len(log)
            run = refiner.refine(X, sample_weight, run, iterate, state)
            for entry in log[first:]:
                entry.setdefault("refiner", type(refiner).__name__)
        return run
