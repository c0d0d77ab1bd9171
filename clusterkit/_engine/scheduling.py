"""The schedule's contract (:class:`Schedule`), one of the six of
:mod:`clusterkit._engine.contracts`, which re-exports it."""
from abc import ABC, abstractmethod

from .assignment import QUANTIZATION_ERROR
from .strategy import _RunStrategy

__all__ = ["Schedule"]


class Schedule(_RunStrategy, ABC):
    """Decides which rows each step works on and when to stop.

    Attributes
    ----------
    full_batch : bool
        Class attribute: ``True`` if every batch is all rows (strategies that keep one state
        per sample but cannot skip samples can require it).
    center_update : str
        Class attribute (or a property, if it depends on parameters): how an M-step combines
        a batch with what came before (``state.config.center_update``), one of the M-step's
        :attr:`MStep.update_rules`. ``"replace"`` (Lloyd; the default): the batch's weighted
        means; ``"running"`` (Sculley) or ``"latest"`` (nested mini-batches): running sums
        over every visit or each sample's latest; ``"adaptive"``: a step towards the batch's
        means; ``"backward_euler"``: an implicit step whose size the schedule sets in
        ``state.run.channel``.
    streams : bool
        Class attribute: ``True`` if ``Clusterer.partial_fit`` may run with this schedule (one
        whose ``fit`` means the same model on the caller's batches: full batches, uniform
        mini-batches; see :meth:`stream_schedule`). ``False`` by default.
    chunk_batches : bool
        Class attribute (or a property): ``True`` if the schedule can run on data in row
        chunks: it keeps the data's order (no :meth:`order`), draws its batches without
        reading the data or the weights of all rows, and weighs a batch by its rows' own
        weights (:meth:`batch_weight`'s default), so that a batch can be read from the
        chunks that hold its rows; or its batches are :attr:`nested`. ``False`` by default.
    nested : bool
        Class attribute: ``True`` if every batch is a prefix ``slice(0, b)`` of an order of
        the rows given row by row (:meth:`row_order`), each prefix holding the last one.
        On data in row chunks each step then runs where the rows are, as a full batch does:
        every chunk visits its rows in the prefix, and keeps the per-sample state of those
        it visited (:mod:`clusterkit._engine.mapreduce`). ``False`` by default.
    """

    full_batch = False
    center_update = "replace"
    streams = False
    chunk_batches = False
    nested = False

    def seeding_rows(self, n_samples, n_clusters, n_features):
        """How many of the ``n_samples`` rows a seeding is worth for this schedule (all by
        default), passed on as ``state.config.seeding_rows``; :class:`~clusterkit.SampledSeeder`
        with ``size="schedule"`` seeds on that many (the first ones if :meth:`order` shuffled
        them)."""
        return n_samples

    def stream_schedule(self):
        """The schedule a ``partial_fit`` stream runs for this one (only asked if
        :attr:`streams`): itself by default. It must combine batches by a running rule;
        its :meth:`init_state` sees ``state.config.streaming`` set and the first call's rows as the
        data; :meth:`stream_batches` cuts each call's rows into its steps, and
        :meth:`should_stop` after each step tells the caller whether a fit would have stopped
        there (the estimator's ``converged_``; the caller decides when the stream ends);
        ``batches`` is not called. ``ValueError`` for a parameter a stream cannot honour.
        """
        return self

    def stream_batches(self, n_rows):
        """The steps of one ``partial_fit`` call with ``n_rows`` rows: a list of slices of
        them, taken in the caller's order. One step on all of them by default."""
        return [slice(0, n_rows)]

    def order(self, n_samples, state):
        """The order of the rows for the run, or ``None`` to keep the data's.

        A schedule whose batches are prefixes of a random order (nested mini-batches)
        returns that order: the driver then makes its centred copy of the data in it (no
        second copy), so that every prefix is a slice, a view without copying. Everything
        the strategies see (seeding, per-sample state, ``state.run.labels``, row indices of
        batches) then refers to positions in this order; the driver maps the final labels
        back. Called once per fit, before seeding; every run works in this order.

        Parameters
        ----------
        n_samples : int
        state : FitState
            Reads ``random_state``.

        Returns
        -------
        order : ndarray of shape (n_samples,), dtype=intp, or None
            A permutation of the rows. The default is :meth:`row_order`'s rows sorted by
            position, or ``None`` (the data's order) if it has none.
        """
        row_order = self.row_order(n_samples, state)
        return None if row_order is None else row_order.permutation()

    def row_order(self, n_samples, state):
        """The order of the rows for the run as each row's position in it, or ``None``.

        What a :attr:`nested` schedule gives instead of :meth:`order`, so that whoever holds
        some rows (a row chunk, on any worker) finds their positions from their numbers,
        without the order of all the rows: its prefix ``slice(0, b)`` is then the rows of
        position below ``b``. Called once per fit, before seeding (by :meth:`order` in
        memory).

        Parameters
        ----------
        n_samples : int
        state : FitState
            Reads ``random_state`` (the order's key).

        Returns
        -------
        row_order : object or None
            Small and picklable, with ``positions(rows)`` (the positions, int64, of the row
            numbers ``rows``) and ``permutation()`` (all rows sorted by position), as
            :class:`~clusterkit.schedules.order.KeyedOrder`. ``None`` by default.
        """
        return None

    @abstractmethod
    def batches(self, n_samples, state):
        """Yield, once per step, the rows that step works on.

        The run ends when the generator is exhausted (a budget, e.g. in passes over the data:
        ``state.run.n_passes`` counts them), after ``max_iter`` steps or when
        :meth:`should_stop` says so. The generator runs between steps, so it may read what
        the last step recorded (``state.run.history``, ``state.run.n_changed``), and may add entries
        to the next step's history record (``state.run.step_info``, emptied before it runs).

        A step may consist of several inner steps (a ``list`` of batches, as
        :class:`~clusterkit.SBEDecay`'s fixed-point iterations): an E-step and an M-step on
        each in order (``state.run.inner_step`` of ``state.run.n_inner_steps``), recorded once with
        the first inner batch's objective, at the parameters the step started from.

        Parameters
        ----------
        n_samples : int
            Rows of the (reduced) data.
        state : FitState
            Reads ``random_state`` for random batches.

        Yields
        ------
        rows : slice, ndarray of shape (n_batch,), dtype=intp, or list of them
            Rows of the fit data: a slice (a view, no copy; ``slice(0, n_samples)`` is all
            rows, a prefix ``slice(0, b)`` nested batches) or an array of row indices; a
            list of such batches for a step of inner steps.
        """

    def batch_weight(self, sample_weight, rows, state):
        """The weights the E-step and M-step of a batch see: ``sample_weight[rows]`` by
        default. A schedule that draws rows in proportion to their weight returns equal
        weights instead, so that the weights are not counted twice.

        Parameters
        ----------
        sample_weight : ndarray of shape (n_samples,)
            The weights of all rows of the fit data.
        rows : slice or ndarray of int
            One batch, as :meth:`batches` yielded it.
        state : FitState

        Returns
        -------
        batch_weight : ndarray of shape (n_batch,), dtype of ``sample_weight``
        """
        return sample_weight[rows]

    def n_iter(self, state):
        """Iterations so far, in the unit of the estimator's ``max_iter`` and ``n_iter_``:
        steps by default (``len(state.run.history)``). A mini-batch schedule counts passes over
        the data instead, as scikit-learn's ``MiniBatchKMeans`` counts ``max_iter`` in
        epochs. The driver ends the run once this reaches ``max_iter``; ``n_iter_`` is it
        rounded up.

        Returns
        -------
        n_iter : float
        """
        return len(state.run.history)

    def should_stop(self, state, tol):
        """Decide after each step whether the fit has converged.

        The default is the rule of the papers for full-batch EM: stop when the relative change
        of the objective between the last two steps is at most ``tol``. Before it, exact hard
        fits (``state.config.strict_convergence``, see :attr:`EStep.exact`) stop as soon as a step
        over all rows changed no label, as scikit-learn's ``KMeans`` does. A quantization error
        (:data:`QUANTIZATION_ERROR`) counts as at least ``state.config.qe_resolution`` here, and two
        errors both at most it count as equal, so a fit with more clusters than distinct points
        stops once the error is down to rounding noise, whichever E-step rounded it.

        Parameters
        ----------
        state : FitState
            Reads ``state.run.history``, ``state.config.objective`` and
            ``state.config.qe_resolution`` (``state.run.centers`` holds the centres the step
            just made).
        tol : float
            The estimator's tolerance.

        Returns
        -------
        stop : bool
        """
        history = state.run.history
        if state.at_fixed_point:
            return True  # the same labels as the step before: the same centres again
        if len(history) < 2:
            return False
        f_new, f_old = history[-1]["objective"], history[-2]["objective"]
        scale = abs(f_new)
        if state.config.objective == QUANTIZATION_ERROR:
            # At rounding level (more clusters than distinct points) the quantization error
            # counts as zero: its changes are noise, which can cycle forever, and differ
            # between E-steps that round distances differently (an expanded distance of a row
            # on its centre is a few eps times its norm, a direct one is 0), so two errors
            # both at most the resolution are equal, whatever their difference.
            if max(f_new, f_old) <= state.config.qe_resolution:
                return True
            scale = max(scale, state.config.qe_resolution)
        return abs(f_new - f_old) <= tol * scale
