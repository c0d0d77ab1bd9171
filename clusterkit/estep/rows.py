"""Which rows an E-step's per-sample state covers: as many as a run may hold
(:func:`run_rows`), and the rows of the fit data a batch holds (:func:`batch_rows`), by which
the state (bounds, winners, projections) is indexed. Shared by the exact, bounded, pruned and
variational E-steps."""
from .._data.chunked import ChunkedData

__all__ = ["batch_rows", "run_rows"]


def run_rows(X, n_clusters, composition):
    """The most rows whose per-sample state one E-step state covers: the rows the reducer
    may return, or, for data in row chunks that the fit reads where they are, the largest
    chunk's (each chunk keeps its own state, on its worker: the check in this process stands
    for the workers')."""
    if isinstance(X, ChunkedData) and not composition.reduce.chunked:
        return max(X.chunk_rows)
    return composition.reduce.max_rows(X.shape[0], n_clusters)


def batch_rows(state, n_batch, n_rows):
    """The rows of the fit data (of ``n_rows``) that a batch of ``n_batch`` rows holds:
    ``state.run.rows``, checked against the batch (per-sample state is indexed by it); a batch of
    all the rows is all the rows whatever ``state.run.rows`` says (a strategy called outside the
    driver's loop)."""
    rows = state.run.rows
    if isinstance(rows, slice):
        rows = slice(*rows.indices(n_rows))
    count = len(range(n_rows)[rows]) if isinstance(rows, slice) else len(rows)
    if count == n_batch:
        return rows
    if n_batch == n_rows:
        return slice(0, n_rows)
    raise ValueError(f"The batch has {n_batch} rows but state.run.rows selects {count} of the "
                     f"{n_rows} rows the E-step's state was made for.")
