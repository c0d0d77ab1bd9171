"""Nested mini-batches (:class:`NestedDoubling`): nested prefixes of one random order of the
rows, doubled when the centres have settled."""
from numbers import Integral, Real

import numpy as np

from .._engine.constraints import Interval, Options
from .._engine.contracts import Schedule
from .order import KeyedOrder
from .schedules import FullBatch

__all__ = ["NestedDoubling"]


class NestedDoubling(Schedule):
    """Nested mini-batch k-means (nmbatch; Newling & Fleuret 2016, Alg. 5).

    Batches are nested prefixes of one random order of the rows. Each step visits the whole
    current prefix: a revisited sample withdraws its previous vote before it votes again
    (``center_update = "latest"``, one sample, one vote, §3.1), and with :class:`ElkanEStep`
    its bounds from the last visit skip most distances. The prefix doubles (up to all rows)
    when every centre moved less than ``1 / rho`` of its spread ``sigma_C(j)``, ``min_j
    sigma_C(j) / p(j) > rho``, and stays the same otherwise. Once the prefix is all rows the
    fit is Lloyd's with bounds, and stops as a full-batch fit does: at a fixed point (no
    label changed; the paper's stop, all that ``tol=0`` accepts) or when the objective's
    relative change is at most ``tol``.

    Parameters
    ----------
    initial_batch : int or "auto", default="auto"
        Rows of the first prefix (clamped to the data). ``"auto"``: ``max(5000, 20
        n_clusters)``: the paper's 5000 (its experiments have ``k = 50``, 100 rows per
        centre), but at least 20 rows per centre, since a first prefix with a few rows per
        centre settles in a poor local minimum that later prefixes keep (measured on the
        documentation's nmbatch page).
    rho : float, default=10.0
        Doubling threshold, ``>= 0``: ``inf`` never doubles, 0 doubles after every step. The
        paper uses 100 and reports that values from 10 to 1000 make little difference; 10
        doubles sooner (see the documentation's nmbatch page).
    spread : {"deviation", "standard_error"}, default="deviation"
        The ``sigma_C(j)`` of the rule, from the ``v(j)`` votes of centre ``j`` and their
        squared distances ``sse(j)``. ``"deviation"``: ``sqrt(sse(j) / (v(j) - 1))``, the
        spread of the cluster itself, as the authors' code computes it.
        ``"standard_error"``: ``sqrt(sse(j) / (v(j) (v(j) - 1)))``, the standard error of
        the centre, as the paper writes it (eq. 4, Alg. 5), ``sqrt(v(j))`` times smaller.
        With it and ``rho = 100`` one sample changing cluster moves a centre by about
        ``sigma / v(j)``, more than the threshold ``sigma / (100 sqrt(v(j)))`` until
        clusters hold about 10,000 samples: each prefix is in effect run to its own fixed
        point, which costs time and buys no lower energy (see the documentation's nmbatch
        page for the measured difference).

    Notes
    -----
    Conventions where eq. 4 is undefined (as the paper's reference code): a centre that did
    not move (``p(j) < 1e-10``) or has at most one vote gives the ratio ``+inf``; a centre
    with ``sse(j) = 0`` that moved gives 0. Weighted samples count by weight in ``v`` and
    ``sse``, in units of the mean weight of the prefix's rows: with unit weights ``v(j)``
    counts samples, and only the ratios of the weights matter (weights scaled by a power of
    two take the same prefixes, bit for bit). The random order is given row by row
    (:meth:`row_order`, a keyed permutation,
    :class:`~clusterkit.schedules.order.KeyedOrder`): in memory the driver's centred copy of
    the data is made in that order, so every prefix is a view; on data in row chunks (a dask
    array, a memmap) each step runs where the rows are, every chunk visiting its rows of
    position below the prefix's end and keeping their bounds, labels and distances, and only
    per-cluster sums come back (:mod:`clusterkit._engine.mapreduce`). Both see the same
    prefixes, so from the same centres they end at the same centres, up to rounding. With
    ``n_init > 1`` all runs share the order. A centre without a vote keeps its position
    while the prefix is not all rows (a longer prefix may bring it votes: a seed outside the
    first prefix); then, a cluster left without a vote moves as in a full batch, onto the
    row farthest from its centre (see :class:`~clusterkit.HardMStep`).

    Examples
    --------
    >>> from clusterkit import NestedDoubling
    >>> NestedDoubling(initial_batch=1000, rho=100.0)
    NestedDoubling(initial_batch=1000, rho=100.0, spread='deviation')
    """

    center_update = "latest"
    chunk_batches = True
    nested = True
    _parameter_constraints = {
        "initial_batch": [Interval(Integral, 1), Options("auto")],
        # inf never doubles; NaN fails the comparison
        "rho": [Interval(Real, 0)],
        "spread": [Options("deviation", "standard_error")],
    }

    def __init__(self, initial_batch="auto", rho=10.0, spread="deviation"):
        self.initial_batch = initial_batch
        self.rho = rho
        self.spread = spread

    def row_order(self, n_samples, state):
        """One random order of the rows, a keyed permutation drawn from the fit's random
        stream: in memory the driver runs in it, so prefixes are views; on row chunks each
        chunk finds its rows' positions in it."""
        return KeyedOrder(n_samples, state.random_state.randint(0, 2**63 - 1, dtype=np.int64))

    def _initial(self, n_samples, n_clusters):
        """Rows of the first prefix."""
        size = (max(5000, 20 * n_clusters) if self.initial_batch == "auto"
                else int(self.initial_batch))
        return min(size, n_samples)

    def seeding_rows(self, n_samples, n_clusters, n_features):
        """The first prefix, the rows the first steps see (the paper seeds on it), extended
        to a full batch's seeding rows (:meth:`FullBatch.seeding_rows`, 64 per centre up to
        32 features) when it has fewer: at 32 features seeds on 20 rows per centre leave the
        fit several percent above Lloyd's, which later prefixes do not repair (the defaults
        page has the numbers); a full batch's rows alone if the first prefix is all rows. The
        rows are a prefix of the run's shuffled order (no copy)."""
        full = FullBatch().seeding_rows(n_samples, n_clusters, n_features)
        first = self._initial(n_samples, n_clusters)
        return full if first >= n_samples else max(first, full)

    def buffer_bytes(self, n_samples, n_features, n_clusters, dtype, composition):
        """The random order of the rows (intp) and the weights in that order."""
        return n_samples * (8 + dtype.itemsize)

    def batches(self, n_samples, state):
        """Nested prefixes ``slice(0, b)`` of the run's order, doubled by the rule above."""
        size = self._initial(n_samples, state.config.n_clusters)
        while True:
            yield slice(0, size)
            if size < n_samples and self._should_double(state):
                size = min(2 * size, n_samples)

    def _should_double(self, state):
        channel = state.run.channel
        if channel.cluster_weight is None:
            return False
        v, sse, p = channel.cluster_weight, channel.cluster_sse, state.run.center_shift
        # votes in units of the prefix's mean weight (see the Notes): unit weights count
        # samples, and weights scaled by any factor give the same ratios
        total = float(np.sum(v, dtype=np.float64))
        if total > 0:
            unit = total / len(range(state.run.n_samples)[state.run.rows])
            v, sse = v / unit, sse / unit
        with np.errstate(divide="ignore", invalid="ignore"):
            votes = v * (v - 1) if self.spread == "standard_error" else v - 1
            sigma = np.sqrt(np.maximum(sse, 0) / votes)
            ratio = np.where((p < 1e-10) | (v <= 1), np.inf, sigma / p)
        return bool(ratio.min() > self.rho)

    def should_stop(self, state, tol):
        """Once the prefix is all rows, the rule of full batches (:meth:`Schedule.should_stop`:
        a fixed point, where no label changed, or the objective's relative change at most
        ``tol``; ``tol=0`` waits for the fixed point, the paper's stop); never before."""
        full = [entry["batch_size"] == state.run.n_samples for entry in state.run.history[-2:]]
        return state.at_fixed_point or (len(full) == 2 and all(full)
                                        and super().should_stop(state, tol))
