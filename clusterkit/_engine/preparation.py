"""A fit's data, prepared once before its runs: the first pass over data in row chunks, the
reduction, the schedule's order of the rows, the centring and the precision limits, and the
:class:`~clusterkit._engine.steps.Steps` that run on the result (the one place that asks
whether the data are in row chunks)."""
import numpy as np

from .._data.chunked import ChunkedData
from .._data.checks import check_n_clusters, check_representable, squared_diagonal
from .._data.nearest import centred_copy
from .mapreduce import ChunkedSteps, full_data_chunks, seeding_rows_of_chunks
from .state import variance_floor
from .steps import MemorySteps
from .strategy import strategy_array

__all__ = ["Prepared", "prepare"]


class Prepared:
    """What :func:`prepare` leaves for the runs.

    Attributes
    ----------
    steps : Steps
        The steps on the fit's rows (its ``X`` and ``sample_weight``).
    composition : Composition
        The composition, its seeder's given centres moved into the fit's frame if a first
        pass over row chunks found it.
    x_mean : ndarray of shape (n_features,)
        The fit's centring.
    """

    def __init__(self, steps, composition, x_mean):
        self.steps, self.composition, self.x_mean = steps, composition, x_mean


def prepare(X, sample_weight, x_mean, box, composition, state, n_clusters, say):
    """Reduce (once), then centre (a copy), in the schedule's order of the rows if it has
    one (``state.order``); or, for a fit on all the rows of data in row chunks, put the
    chunks in the fit's frame.

    ``X`` is an ndarray or CSR matrix (validated; ``x_mean`` its centring, ``box`` the
    bounding box the range check found, ``(low, high)``) or
    :class:`~clusterkit._data.chunked.ChunkedData` (``sample_weight``, ``x_mean`` and
    ``box`` ``None``: the first pass finds them). Sets the seeding's rows and the fit's
    precision limits (``state.config.sigma2_floor``, ``state.config.qe_resolution``); ``say(level,
    line)`` reports. Returns a :class:`Prepared`.
    """
    reducer, schedule = composition.reduce, composition.schedule
    chunked = isinstance(X, ChunkedData)
    if chunked:
        x_mean, box = _scan(X, state, say)
        composition = composition._replace(seed=composition.seed.in_frame(x_mean))
    diagonal2 = squared_diagonal(*box)
    if full_data_chunks(X, reducer):  # every step reads all the rows, where they are
        return Prepared(_chunk_steps(X, x_mean, diagonal2, composition, state, n_clusters),
                        composition, x_mean)
    X_given = X
    # Coreset construction (Hirschberger et al., Alg. 1 line 1); identity by default.
    with state.meter.timed("reduction"):
        if chunked:  # only the reduced set reaches this process
            X, sample_weight = reducer.reduce_chunked(X, state)
        else:
            X, sample_weight = reducer.reduce(X, sample_weight, state)
    reduced = X is not X_given
    if reduced:
        X = strategy_array(X, reducer, "data", (None, X_given.shape[1]), X_given.dtype)
        sample_weight = strategy_array(sample_weight, reducer, "weights", (X.shape[0],),
                                       X.dtype)
        if np.any(sample_weight < 0) or not np.any(sample_weight > 0):
            raise ValueError(f"{type(reducer).__name__} returned negative or all-zero "
                             "weights.")
        if chunked:  # the fit's weighted sums run over the reduced set only
            check_representable(X, sample_weight=sample_weight)
        say(1, f"Reduction: {X_given.shape[0]} samples to {X.shape[0]} weighted samples, "
               f"{state.meter.cost['reduction']} distance evaluations, "
               f"{state.meter.seconds_by_phase['reduction']:.3g} s")
    check_n_clusters(n_clusters, X.shape[0])
    # the schedule sizes the seeding: what a seeding is worth depends on the iterations
    n_samples, n_features = X.shape
    state.configure(seeding_rows=int(schedule.seeding_rows(n_samples, n_clusters,
                                                           n_features)))
    # Only the data the fit runs on is centred (a copy), so a coreset fit never copies the
    # full data; centring keeps float32 distances accurate far from the origin. The same
    # pass puts the rows in the schedule's order (nested prefixes become views).
    state.order = schedule.order(X.shape[0], state)
    if state.order is not None:
        state.order = strategy_array(state.order, schedule, "order", (X.shape[0],), np.intp)
        if not np.array_equal(np.sort(state.order), np.arange(X.shape[0])):
            raise ValueError(f"{type(schedule).__name__}.order returned no permutation of "
                             "the rows.")
        sample_weight = sample_weight[state.order]
    # (sparse data are not centred: their frame's mean is zero, see data_mean)
    centred, sum_of_squares = centred_copy(X, x_mean, state.config.n_threads, state.order)
    # the bounding box of all the given rows (zero weights included), as the range check
    # found it
    set_precision(state, centred, float(sample_weight.sum(dtype=np.float64)),
                  sum_of_squares, diagonal2)
    return Prepared(MemorySteps(centred, sample_weight, composition, state, reduced),
                    composition, x_mean)


def _scan(data, state, say):
    """The first pass over data in row chunks (``ChunkedData.scan``): validates them and
    returns their mean as the fit's centring, in their dtype (the unweighted mean, as for
    data in memory: the same rows give the same fit on every container), and their
    bounding box."""
    with state.meter.timed("scan"):
        moments = data.scan(
            progress=lambda done, total: state.meter.progress("scan", done, total, "rows"))
    # (a spherical model's frame is the origin, as in memory)
    x_mean = np.zeros_like(moments.row_mean) if data.unit_rows else moments.row_mean
    say(1, f"Scan: {data.shape[0]} samples in {data.n_chunks} chunks, "
           f"{state.meter.seconds_by_phase['scan']:.3g} s")
    return x_mean, (moments.low, moments.high)


def _chunk_steps(data, x_mean, diagonal2, composition, state, n_clusters):
    """The steps of a fit on all the rows of data in chunks: the data in the fit's frame,
    the seeding's rows (a sample: :func:`seeding_rows_of_chunks`), the precision limits
    from the first pass, and the map-reduce that runs the steps."""
    check_n_clusters(n_clusters, data.shape[0])
    n_samples, n_features = data.shape
    state.configure(seeding_rows=seeding_rows_of_chunks(
        int(composition.schedule.seeding_rows(n_samples, n_clusters, n_features)), data))
    moments = data.scan()
    framed = data.in_frame(x_mean)
    # (the first pass's weighted spread about the weighted mean stands for the centred
    # rows' sum of squares: the same for unit weights, up to rounding)
    set_precision(state, framed, moments.total_weight,
                  moments.spread * n_samples / moments.total_weight, diagonal2)
    return ChunkedSteps(framed, composition, state)


def set_precision(state, X, total_weight, sum_of_squares, diagonal2):
    """The fit's precision limits from the centred data it runs on (their total weight and
    sum of squares) and the squared diagonal ``diagonal2`` of the given data's bounding box
    (see :func:`~clusterkit._engine.state.variance_floor`)."""
    n_samples, n_features = X.shape
    variance = sum_of_squares / (n_samples * n_features)  # mean per-feature variance
    per_weight = float(np.finfo(X.dtype).eps) * variance * n_features
    state.configure(sigma2_floor=variance_floor(diagonal2, n_features, X.dtype),
                    qe_resolution=per_weight * total_weight,
                    qe_resolution_per_weight=per_weight)
