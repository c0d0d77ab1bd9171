"""Dask arrays as :class:`~clusterkit._data.chunked.ChunkedData`: every block function is a
task on the dask scheduler in use (see :mod:`clusterkit._data.chunked`)."""
import numpy as np

from .checks import unit_rows
from .chunked import (ChunkedData, _call_on_block, _fit_dtype, import_dask, map_rows,
                      row_weights, tree_reduce)
from .nearest import nearest, single_threaded_blas

__all__ = ["DaskChunks", "EMBED_BYTES", "GATHER_BYTES", "embedded_nbytes",
           "shipped_nbytes"]

#: Up to this many bytes of all chunks' results of a step, they come to this process and are
#: added here, in the same tree (one round trip, not a task per level of the tree on the
#: workers); larger ones are added where the chunks ran and only the root comes back.
GATHER_BYTES = 16 << 20

#: Up to this many bytes of arrays (the centres), a step's arguments are written into every
#: chunk's task; larger ones are one task that the workers fetch.
EMBED_BYTES = 1 << 20


def embedded_nbytes(X):
    """Bytes of the NumPy arrays (memmaps included) that the task graph of the dask array
    ``X`` holds as data: what ``da.from_array`` of an array in memory or of a memmap puts in
    the graph (the array, or its chunks), which is pickled and sent with the graph to the
    scheduler and the workers at every compute. Only the materialised layers are read (their
    values are the data); layers of generated tasks are not built."""
    graph = X.__dask_graph__()
    layers = getattr(graph, "layers", {None: graph})
    seen, total = set(), 0
    for layer in layers.values():
        mapping = getattr(layer, "mapping", layer if isinstance(layer, dict) else None)
        if mapping is None:  # a Blockwise layer and the like: tasks, not data
            continue
        for value in mapping.values():
            value = getattr(value, "value", value)  # a task spec's data node
            if isinstance(value, np.ndarray) and id(value) not in seen:
                seen.add(id(value))
                total += value.nbytes
    return total


def shipped_nbytes(X):
    """:func:`embedded_nbytes` of ``X`` if a compute would run on a ``dask.distributed``
    client, which pickles the graph's data and sends them to the scheduler; ``0`` with
    another scheduler, whose tasks read them in this process."""
    return 0 if _distributed_client() is None else embedded_nbytes(X)


def _nearest_rows(X, x_mean, centers, unit=False):
    """Labels and squared distances of one chunk of a dask array (its rows scaled to unit
    norm if ``unit``), as one structured array (``"label"`` int32, ``"dist2"`` float64), so
    that both come from a single task."""
    X = np.ascontiguousarray(X, dtype=centers.dtype)
    if unit:
        X = unit_rows(X, "X's row chunk")
    with single_threaded_blas():  # as in fit: the kernel calls gemm per tile
        labels, dist2, _ = nearest(X, x_mean, centers, 1)
    out = np.empty(X.shape[0], dtype=_NEAREST)
    out["label"], out["dist2"] = labels, dist2
    return out


_NEAREST = np.dtype([("label", np.int32), ("dist2", np.float64)])


class DaskChunks(ChunkedData):
    """A row-chunked dask array: every block function is a task on the dask scheduler in use
    (a ``dask.distributed`` client if one is active); only the results come back.

    A chunking along the columns is merged into one column chunk first; ``sample_weight``
    (a dask array, or an array that is split like ``X``) gets ``X``'s row chunks.
    """

    def __init__(self, X, sample_weight):
        import_dask()
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        super().__init__(X.shape, _fit_dtype(X.dtype), X.chunks[0], 1,
                         sample_weight is not None)
        self._X = X
        self._w = row_weights(sample_weight, X)
        self._blocks = None  # (the chunks' and weights' delayed objects, made once)
        self._placed = None  # (the worker of each chunk's steps, found once)
        self._n_workers = None  # (found once)
        self._held = None  # (whether the chunks are persisted, found once)

    def _delayed_blocks(self):
        """The chunks and their weights (``None`` without weights) as delayed objects, one
        per chunk."""
        if self._blocks is None:
            weights = ([None] * self.n_chunks if self._w is None
                       else list(self._w.to_delayed().ravel()))
            self._blocks = list(self._X.to_delayed().ravel()), weights
        return self._blocks

    def _persisted(self):
        """Whether the array (and its weights) are held on the cluster (persisted): its
        chunks' futures are there."""
        if self._held is None:
            from distributed import futures_of
            keys = {future.key for future in futures_of(self._X)}
            if self._w is not None:
                keys |= {future.key for future in futures_of(self._w)}
            blocks, weights = self._delayed_blocks()
            self._held = all(block.key in keys for block in blocks) and all(
                weight is None or weight.key in keys for weight in weights)
        return self._held

    def _placement(self, client, blocks):
        """The worker each chunk's steps run on, the same at every step (its state stays
        there): the worker that holds the chunk where that keeps the workers' shares even
        (at most ``ceil(n_chunks / n_workers)`` chunks each), else the one with the fewest
        chunks, which reads the chunk from its holder at every step. A dask array persisted
        unevenly (7 chunks on one worker, 3 on the other) would otherwise leave a worker
        idle for part of every step. Found at the first step and kept: asking the scheduler
        is a round trip, and a chunk whose worker has left runs where the scheduler puts it
        (the placement is loose). ``None`` for every chunk while the client knows of no
        worker."""
        if self._placed is None:
            workers = sorted(client.scheduler_info()["workers"])
            if not workers:  # (the client has not heard of any yet: the scheduler places)
                return [None] * self.n_chunks
            from distributed import futures_of

            # (who_has finds the holders of futures: a persisted array's; a block key
            # alone finds none)
            holders = client.who_has(futures_of(self._X))
            share = -(-self.n_chunks // len(workers))
            count = dict.fromkeys(workers, 0)
            placement = [None] * self.n_chunks
            for c, block in enumerate(blocks):
                for worker in sorted(holders.get(block.key, ())):
                    if count.get(worker, share) < share:
                        placement[c] = worker
                        count[worker] += 1
                        break
            for c in range(self.n_chunks):
                if placement[c] is None:
                    placement[c] = min(workers, key=lambda worker: count[worker])
                    count[placement[c]] += 1
            self._placed = [[worker] for worker in placement]
        return self._placed

    @property
    def n_processes(self):
        """The workers of the ``dask.distributed`` client in use when first asked (one: this
        process, with another scheduler)."""
        if self._n_workers is None:
            client = _distributed_client()
            self._n_workers = 1 if client is None else max(1, len(client.nthreads()))
        return self._n_workers

    def _map(self, func, chunks, args, progress):
        dask, _ = import_dask()
        from dask.callbacks import Callback
        blocks, weights = self._delayed_blocks()
        call = dask.delayed(_call_on_block)
        frame = None if self._frame is None else dask.delayed(self._frame)
        tasks = [call(func, blocks[c], weights[c], self.dtype, a, frame, unit=self.unit_rows)
                 for c, a in zip(chunks, args)]
        rows = {task.key: self.chunk_rows[c] for task, c in zip(tasks, chunks)}
        done, total = [0], sum(rows.values())

        def finished(key, result, graph, scheduler_state, worker_id):
            if key in rows:  # one of our chunks (not a task reading the data)
                done[0] += rows[key]
                progress(done[0], total)

        with Callback(posttask=finished):
            return list(dask.compute(*tasks))

    def _map_state(self, func, args, states, progress, combine, finish, result_bytes):
        dask, _ = import_dask()
        client = _distributed_client()
        if client is None:  # a local scheduler: the states live in this process
            return super()._map_state(func, args, states, progress, combine, finish,
                                      result_bytes)
        import operator

        from distributed import Future, as_completed
        blocks, weights = self._delayed_blocks()
        # a persisted array's chunk is framed once per run, at its first step, and kept with
        # its state on its worker (as the fit in memory keeps one centred copy): its later
        # steps read neither the chunk nor its weights again
        keep = self._persisted()
        # the arguments every chunk reads (the frame, centres, the step's plan): written into
        # each chunk's task where they are small, so that no worker waits to fetch them from
        # another; else one task of the graph
        arguments = _Arguments(self._frame, args)
        if sum(a.nbytes for a in (self._frame, *args) if isinstance(a, np.ndarray)) > EMBED_BYTES:
            arguments = dask.delayed(arguments, traverse=False)
        call = dask.delayed(_step_task, pure=False)
        # a chunk's state is the future of its last (result, state) pair, held on its worker;
        # a lost one is computed again from the chain of the chunk's tasks, which the
        # scheduler keeps while the last pair is wanted
        tasks = []
        for c, workers in enumerate(self._placement(client, blocks)):
            where = {} if workers is None else dict(workers=workers, allow_other_workers=True)
            with dask.annotate(**where):
                kept = keep and isinstance(states[c], Future)
                tasks.append(call(None if kept else blocks[c], None if kept else weights[c],
                                  self.dtype, func, states[c], arguments, self.unit_rows,
                                  keep))
        pairs = client.compute(tasks)
        del tasks  # (they hold the old states' futures)
        results = client.map(operator.getitem, pairs, [0] * len(pairs), pure=False)
        chunk_of = {future.key: c for c, future in enumerate(results)}
        total = None
        here = (result_bytes is not None
                and result_bytes * self.n_chunks <= GATHER_BYTES)
        if combine is not None and not here:  # (tasks on the workers, as the results come)
            total = tree_reduce(results, lambda first, second: client.submit(
                combine, first, second, pure=False))
            if finish is not None:
                total = client.submit(finish, total, pure=False)
        # the results come here as each chunk finishes, unless the workers add them up
        gathered = [None] * self.n_chunks if total is None else None
        done = 0
        for item in as_completed(results, with_results=gathered is not None):
            future, value = item if gathered is not None else (item, None)
            c = chunk_of[future.key]
            states[c] = None  # its new state is there: the worker may free the old one
            if gathered is not None:
                gathered[c] = value
            done += self.chunk_rows[c]
            progress(done, self.shape[0])
        if total is not None:
            return total.result(), pairs
        results = gathered
        if combine is not None:  # small results: the same tree, added here
            results = tree_reduce(results, combine)
            results = results if finish is None else finish(results)
        return results, pairs

    @property
    def recomputes_states(self):
        return _distributed_client() is not None

    def per_row(self, func, states, dtype, total):
        dask, da = import_dask()
        if _distributed_client() is None:  # (states held here)
            values, total = super().per_row(func, states, dtype, total)
            return da.from_array(values, chunks=(self.chunk_rows,)), da.asarray(total)
        # a state is its chunk's last (result, state) pair, on its worker
        call = dask.delayed(_of_pair, pure=True)
        parts = [da.from_delayed(call(func, pair), shape=(n,), dtype=dtype)
                 for pair, n in zip(states, self.chunk_rows)]
        return da.concatenate(parts), da.asarray(total)

    def nearest(self, x_mean, centers, progress=None):
        nearest = map_rows(self._X, _nearest_rows, (x_mean, centers, self.unit_rows),
                           dtype=_NEAREST)
        dist2 = nearest["dist2"]
        inertia = (dist2 if self._w is None else dist2 * self._w).sum()
        return nearest["label"], inertia, 0


def _of_pair(func, pair):
    """``func`` of the state of a chunk's ``(result, state)`` pair."""
    state = pair[1]
    return func(state.state if isinstance(state, _Framed) else state)


class _Framed:
    """A chunk's state on its worker kept with the chunk's rows as its steps read them (in
    the fit's frame, with the fit's weights; see :meth:`DaskChunks._map_state`)."""

    __slots__ = ("X", "sample_weight", "state")

    def __init__(self, X, sample_weight, state):
        self.X, self.sample_weight, self.state = X, sample_weight, state


def _rows_as_read(X, sample_weight):
    """A block's rows and weights as :func:`~clusterkit._data.chunked._call_on_block` gives
    them to a block function."""
    return X, sample_weight


class _Arguments:
    """A step's arguments for every chunk's task: the fit's frame and the function's other
    arguments (an object dask passes as it is, without searching inside)."""

    __slots__ = ("frame", "args")

    def __init__(self, frame, args):
        self.frame, self.args = frame, args


def _step_task(X, sample_weight, dtype, func, pair, arguments, unit, keep):
    """A chunk's task of :meth:`ChunkedData.map_chunks_with_state` on a cluster:
    :func:`~clusterkit._data.chunked._call_on_block` with the state of the chunk's last
    ``(result, state)`` pair (a state given as such, or ``None``, before the first). With
    ``keep`` the new state keeps the chunk's rows as read (:class:`_Framed`), and a state
    that kept them is stepped on those (``X`` is then ``None``)."""
    state = pair[1] if isinstance(pair, tuple) else pair
    if isinstance(state, _Framed):
        X, sample_weight, state = state.X, state.sample_weight, state.state
    elif keep:
        X, sample_weight = _call_on_block(_rows_as_read, X, sample_weight, dtype, (),
                                          arguments.frame, unit=unit)
    else:
        return _call_on_block(func, X, sample_weight, dtype, arguments.args, arguments.frame,
                              state=state, unit=unit)
    result, state = func(X, sample_weight, state, *arguments.args)
    return result, _Framed(X, sample_weight, state)


def _distributed_client():
    """The ``dask.distributed`` client dask computes with, or ``None`` (another scheduler,
    e.g. ``dask.config.set(scheduler="synchronous")``, or no client)."""
    try:
        from distributed import default_client
        client = default_client()
    except (ImportError, ValueError):
        return None
    import dask.base
    return client if getattr(dask.base.get_scheduler(), "__self__", None) is client else None
