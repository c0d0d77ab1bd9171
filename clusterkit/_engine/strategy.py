"""What every strategy object shares (:class:`_Strategy`: scikit-learn parameters, a readable
``repr``, equality by parameters, declared parameter constraints, the ``_validate`` and
``fitted_attributes`` hooks) and what the strategies that run with a fit's iterations share
(:class:`_RunStrategy`: per-run state). The contracts built on them are in
:mod:`clusterkit._engine.contracts`.

Strategies are configuration objects and scikit-learn parameter objects: ``__init__`` only
stores its arguments, so ``get_params``/``set_params`` (also nested, as
``Clusterer.set_params(estep__G=3)``), ``clone`` and pickling work, and nothing is kept on
``self`` between fits. Whatever an E-step, M-step or schedule must carry from one step to the
next (bounds, winners, neighbourhoods, running sums, a smoothed objective) is its own per-run
state: an object its optional ``init_state`` hook returns, which the driver keeps for it in the
run (``state.run.estep_state``, ``state.run.mstep_state``, ``state.run.schedule_state``, see
:class:`~clusterkit.Run`) and no other strategy reads. A strategy whose model has more to
report than centres and labels (soft assignments, modes as training rows, a kernel bandwidth)
returns it from ``fitted_attributes``, and the estimator gets those attributes.

What every strategy receives and how it reports:

Sparse data (scipy.sparse, as CSR) reach only strategies that declare ``accepts_sparse`` (each
of the six must): the composition check refuses any other composition when ``fit`` starts,
before any work (:mod:`clusterkit._estimator.composition`). Such a strategy receives ``X`` (and
batches of its rows) as a ``scipy.sparse.csr_matrix`` with int32 indices, not centred (its
frame's mean is zero), and returns dense centres.

Data in row chunks (a ``dask.array``, a NumPy memmap) reach a reducer that declares
:attr:`~clusterkit.DataReducer.chunked`, the other strategies then seeing its reduced set; or,
without one, strategies that declare they can run on them (:attr:`~clusterkit.EStep.chunks`,
:attr:`~clusterkit.MStep.chunk_rules`, :attr:`~clusterkit.Schedule.chunk_batches`): the
E-step and the M-step's statistics on one chunk at a time, where it is, or on a mini-batch
read from the chunks (:mod:`clusterkit._engine.mapreduce`); a seeder on a sample, or where
the rows are (:attr:`~clusterkit.Seeder.reads_chunks`). Their ``_validate`` hooks get an object with
the data's ``shape`` and ``dtype``.

The driver checks what a strategy returns like user input (:func:`strategy_array`).

Every array a strategy receives is C-contiguous (or, for a batch that is a slice of rows, a
view of C-contiguous rows, or CSR, see above) and of one floating dtype (float32 or float64);
``sample_weight`` always is an array of that dtype (ones when the user gave none, times the
coreset weights after a reduction). Strategies add the distance evaluations they perform to
``state.meter.cost`` (see :meth:`~clusterkit.Meter.count`).

Strategies never print. A verbose fit shows which phase runs (the driver times reduction,
seeding, set-up, E-step, M-step and labels) and, at least every few seconds, how far it got: a
strategy with a natural unit of work reports it with ``state.meter.progress(phase, done, total,
unit)`` (a seeder its centres, a reducer its rows, a graph its stages), after each unit or, for
one long kernel call, once before it with a one-element counter the kernel updates
(:meth:`~clusterkit.Meter.progress`); a strategy's own long stage inside a phase may be marked
with ``state.meter.timed(name)`` (timed, as SLK's ``"graph"``) or ``state.meter.phase(name)``
(shown only).
"""
import functools
import inspect

import numpy as np
from sklearn.base import BaseEstimator

from .constraints import check_parameters

__all__ = ["_RunStrategy", "_Strategy", "strategy_array"]


class _Strategy(BaseEstimator):
    """Shared behaviour: scikit-learn parameters, a readable ``repr``, equality by parameters,
    and a check run when ``fit`` starts.

    Checking parameters: a strategy declares what each constructor argument may be in the
    class attribute ``_parameter_constraints``, a dict from the argument's name to a list of
    constraints from :mod:`clusterkit._engine.constraints` (``Interval(Integral, 1)``,
    ``Interval(Real, 0, 1, closed="right")``, ``Options("auto", "all")``,
    ``InstanceOf(Seeder)``, ``Satisfies(test, description)``, or ``None`` to allow ``None``);
    a value must satisfy one of them. A subclass that adds arguments extends its parent's
    dict (``{**Parent._parameter_constraints, "x": [...]}``). Whenever ``_validate`` is
    called, the declared constraints are checked first, for every subclass, with one message
    (``"MiniBatch: batch_size must be an integer >= 1; got 0."``): ``TypeError`` if no
    constraint takes a value of its type, ``ValueError`` otherwise; a parameter that is a
    strategy has its own declared constraints checked too, whether or not the fit will use
    it (the branch of :class:`~clusterkit.ByDimension` that the data do not choose). A
    subclass's own ``_validate`` then holds only the rules that involve more than one value:
    between its parameters, against the data and ``n_clusters``, and against the other
    strategies.
    """

    #: Class attribute: parameter name -> list of constraints its value must satisfy one of
    #: (see above). Parameters not listed are not checked.
    _parameter_constraints = {}

    #: Class attribute: ``True`` if the strategy takes sparse data (a
    #: ``scipy.sparse.csr_matrix`` with int32 indices, never centred) wherever it receives
    #: ``X``, and still returns dense centres. A fit on sparse data needs all six strategies
    #: to declare it; any other composition is refused with a ``TypeError`` when ``fit``
    #: starts. ``False`` by default.
    accepts_sparse = False

    #: Class attribute: why the strategy cannot run on all the rows of data in row chunks (a
    #: clause, ``"its ... "``), which the refusal of such a fit shows; empty when it can
    #: (:attr:`EStep.chunks <clusterkit.EStep.chunks>`, :attr:`Schedule.chunk_batches
    #: <clusterkit.Schedule.chunk_batches>`, ...) or says nothing.
    chunks_refusal = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("_validate")
        if own is not None:
            # the declared constraints come first, so the class's own rules may assume them
            @functools.wraps(own)
            def _validate(self, *args, **kwargs):
                self._check_parameters()
                return own(self, *args, **kwargs)
            cls._validate = _validate

    def _check_parameters(self):
        """Raise unless every parameter satisfies its declared constraints
        (``_parameter_constraints``), and so do the parameters of every strategy among them
        (checked whatever the data: a composite such as :class:`~clusterkit.ByDimension`
        runs only one of its parts on given data, but a bad value is refused in any)."""
        constraints = type(self)._parameter_constraints
        check_parameters(self, constraints)
        for name in constraints:
            value = getattr(self, name)
            if isinstance(value, _Strategy):
                value._check_parameters()

    def _validate(self, X, n_clusters, composition):
        """Check hyper-parameters against the data and the other strategies.

        Called by the driver once per fit, before any work is done; raises ``ValueError``
        (or ``TypeError``) with a message naming the parameter if they cannot work. The
        declared constraints (``_parameter_constraints``) are checked first, also when a
        subclass overrides this method; the default then accepts everything.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            The training data, as given to ``fit``.
        n_clusters : int
        composition : Composition
            The six strategies of the fit (``seed``, ``reduce``, ``estep``, ``mstep``,
            ``schedule``, ``refine``), for rules between strategies.
        """
        self._check_parameters()

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """Bytes of the large buffers this strategy allocates in a fit: its part of the
        fit's memory estimate (``Clusterer.estimate_memory``), checked against the fit's
        budget (``memory_limit``) before any work.

        Count what grows with the data or the clusters (per-sample state, ``N x C``
        arrays, copies of rows, neighbour lists), at its largest; leave out what is
        ``O(n_clusters * n_features)`` (centres) or smaller. Which phase the bytes belong to
        follows from the strategy's kind: a reducer's live during the reduction, a seeder's
        during the seeding (the seeding's result, ``n_clusters`` centres, not counted), an
        E-step's, M-step's, schedule's and refiner's during the iterations (their per-run
        state and scratch) and the final labelling. The default, ``0``, is right for a
        strategy whose buffers are that small.

        Parameters
        ----------
        n_samples : int
            The rows the strategy works on: the rows given to ``fit`` for a reducer, the rows
            the fit runs on (at most :meth:`DataReducer.max_rows` of them) for the others.
        n_features : int
        n_clusters : int
        dtype : numpy.dtype
            The fit's dtype (float32 or float64).
        composition : Composition
            The six strategies of the fit, for buffers that depend on another strategy (a
            soft M-step's responsibilities, the schedule's batch size).

        Returns
        -------
        n_bytes : int
        """
        return 0

    def fitted_attributes(self, state):
        """Extra fitted attributes of the estimator, from the kept run's state.

        Called once after the kept run; the driver sets each item on the estimator (names
        end in ``_``, e.g. ``soft_labels_``) and removes them again when it is refitted with
        other strategies. The default adds none.

        Parameters
        ----------
        state : FitState
            The kept run's state (its strategies' states as the last step left them).

        Returns
        -------
        attributes : dict
        """
        return {}

    def __repr__(self):
        # every parameter, in the order of the signature (scikit-learn's repr sorts them and
        # leaves defaults out)
        params = self.get_params(deep=False)
        names = [name for name in inspect.signature(type(self).__init__).parameters
                 if name in params]
        return f"{type(self).__name__}({', '.join(f'{k}={params[k]!r}' for k in names)})"

    def __eq__(self, other):
        return (type(self) is type(other)
                and self.get_params(deep=False) == other.get_params(deep=False))

    def __hash__(self):
        return hash(type(self).__name__)


class _RunStrategy(_Strategy):
    """An E-step, M-step or schedule: a strategy with its own per-run state."""

    def init_state(self, X, sample_weight, centers, state):
        """Create the strategy's own per-run state.

        Called once per run after seeding, with all rows; the driver keeps the result as
        ``state.run.estep_state`` (E-steps), ``state.run.mstep_state`` (M-steps) or
        ``state.run.schedule_state`` (schedules), which no other strategy reads. Per-sample
        state is indexed by row of this ``X``. In a ``partial_fit`` stream an E-step's is
        created for every batch (its rows are new samples), an M-step's and a schedule's
        once, with the first batch. An M-step that reads the
        per-cluster sums an E-step can compute in its pass over the data
        (``Assignment.centers_sum``) sets ``state.config.fuse_sums = True`` here.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            All rows of the (reduced, centred) data the fit runs on.
        sample_weight : ndarray of shape (n_samples,)
        centers : ndarray of shape (n_clusters, n_features)
            The seeded centres.
        state : FitState

        Returns
        -------
        run_state : object or None
            The default keeps no state and returns ``None``.
        """
        return None


def strategy_array(value, strategy, what, shape, dtype):
    """What a strategy returned, as a C-contiguous ``dtype`` array of ``shape`` (``None``
    matches any length); ``TypeError``/``ValueError`` naming the strategy otherwise.

    User-written strategies plug into the driver, so their results are checked like user
    input: a wrong shape or a NaN would otherwise surface far away, or not at all.
    """
    name = f"{type(strategy).__name__} returned {what}"
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise TypeError(f"{name} as {type(value).__name__}; expected a numeric ndarray.")
    if value.ndim != len(shape) or any(n is not None and n != m
                                       for n, m in zip(shape, value.shape)):
        expected = tuple("any" if n is None else n for n in shape)
        raise ValueError(f"{name} of shape {value.shape}; expected {expected}.")
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{name} with NaN or infinite entries.")
    return np.ascontiguousarray(value, dtype=dtype)
