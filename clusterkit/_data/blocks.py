"""The one block-size policy: how many rows a pass over rows handles at a time.

A pass that would make temporaries of all its rows at once (a float64 copy, a block of
distances) works on blocks of rows instead; every such block size is here, with what it
bounds and why it has that size, and :func:`rows_for_bytes` turns a byte budget into rows.
The sizes are read at call time (``blocks.NEAREST_BLOCK_BYTES``, not a copy taken at
import), so that a test setting one here changes every pass that uses it.

A block size changes the work's grouping, so it may change the rounding of sums over the
blocks; the nearest-centre blocks are whole tiles of the kernels so that theirs do not.
"""
from .._kernels import _dist

__all__ = ["TILE_ROWS", "NEAREST_BLOCK_BYTES", "MEMMAP_BLOCK_BYTES", "CHECK_BLOCK_ROWS",
           "PROJECT_BLOCK_ROWS", "MODE_BLOCK_ROWS", "ORDER_BLOCK_ROWS",
           "SOFT_MSTEP_BLOCK_BYTES", "SOFT_MSTEP_MIN_ROWS", "SOFT_MSTEP_MAX_ROWS",
           "TRUNCATED_MSTEP_BLOCK_BYTES", "rows_for_bytes", "row_slices", "row_blocks"]

#: Rows per tile of the nearest-centre kernels, per thread: the kernels' own constant
#: (``_kernels/_dist.pyx``), so that a block of whole tiles is tiled as all the rows are.
TILE_ROWS = _dist.TILE_ROWS

#: Bytes of rows (or of distances, for :func:`~clusterkit._data.nearest.dist2_blocks`) per
#: block of the nearest-centre pass: bounds the centred copy of a block (or its distances)
#: to a few MiB, whatever the data's size.
NEAREST_BLOCK_BYTES = 8 << 20

#: Bytes of input rows per block of the passes over a memmap (the blocks are
#: ``rows_for_bytes(n_features * itemsize, MEMMAP_BLOCK_BYTES)`` rows, the last one
#: shorter), so that the coreset depends on the file's shape and dtype only.
MEMMAP_BLOCK_BYTES = 32 << 20

#: Rows per block of the dense rows' checks, norms and scaling
#: (:data:`~clusterkit._data.sparse.DENSE`): bounds their float64 temporaries.
CHECK_BLOCK_ROWS = 4096

#: Rows projected onto the principal axes at a time
#: (:func:`~clusterkit.estep.pruning.project`): a float64 block of ``PROJECT_BLOCK_ROWS x D``.
PROJECT_BLOCK_ROWS = 8192

#: Members whose kernel densities SLK-BO sums at a time: a ``MODE_BLOCK_ROWS x MODE_SAMPLE``
#: block of distances, not all ``MODE_SAMPLE^2``.
MODE_BLOCK_ROWS = 64

#: Rows per block of :meth:`~clusterkit.schedules.order.KeyedOrder.permutation`: bounds its
#: temporary arrays (a few uint64 per row).
ORDER_BLOCK_ROWS = 1 << 20

#: Bytes of float64 responsibilities per chunk of the dense soft M-step: about an L2 cache,
#: so the gemm reads the copy back from cache and no N x C float64 array is made.
SOFT_MSTEP_BLOCK_BYTES = 1 << 20

#: Fewest rows per chunk of the dense soft M-step: no tiny gemms for many clusters.
SOFT_MSTEP_MIN_ROWS = 256

#: Most rows per chunk of the dense soft M-step: each gemm sums its rows sequentially and
#: the variance amplifies that rounding by ``||x||^2 / sigma^2`` (at 3e7, 4096 rows gave
#: errors near 1e-8, 65536 5e-6).
SOFT_MSTEP_MAX_ROWS = 4096

#: Bytes of float64 copies of the rows per chunk of the truncated soft M-step on float32
#: data (at least ``n_clusters`` rows: each chunk's sums are ``C x D`` numbers, then they
#: cost no more than the chunk's rows).
TRUNCATED_MSTEP_BLOCK_BYTES = 4 << 20


def rows_for_bytes(row_bytes, budget, multiple=1, at_least=1, at_most=None):
    """Rows of ``row_bytes`` each that fill ``budget`` bytes.

    Parameters
    ----------
    row_bytes : int
        Bytes per row (taken as at least 1).
    budget : int
        Bytes per block.
    multiple : int, default=1
        The rows are a whole number, at least one, of ``multiple`` rows.
    at_least, at_most : int or None
        Bounds on the rows, applied in this order (``at_most=None``: no upper bound).

    Returns
    -------
    rows : int
    """
    rows = max(1, budget // (max(1, row_bytes) * multiple)) * multiple
    rows = max(at_least, rows)
    return rows if at_most is None else min(at_most, rows)


def row_slices(n_rows, block):
    """Consecutive slices of ``block`` rows covering ``range(n_rows)``, the last one shorter.

    Parameters
    ----------
    n_rows : int
        Rows in all.
    block : int
        Rows per slice (positive).

    Returns
    -------
    slices : list of slice
    """
    return [slice(start, min(start + block, n_rows)) for start in range(0, n_rows, block)]


def row_blocks(n_samples, row_bytes):
    """Slices of about :data:`NEAREST_BLOCK_BYTES` of rows of ``row_bytes`` each, in whole
    tiles of the distance kernels, so that a pass block by block gives the same result as
    one pass over all rows.

    Parameters
    ----------
    n_samples : int
        Rows in all.
    row_bytes : int
        Bytes per row.

    Returns
    -------
    blocks : list of slice
        :func:`row_slices` of ``n_samples``.
    """
    block = rows_for_bytes(row_bytes, NEAREST_BLOCK_BYTES, multiple=TILE_ROWS)
    return row_slices(n_samples, block)
