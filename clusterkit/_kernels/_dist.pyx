"""Tables of the centres that the chunked distance kernels share."""
import numpy as np

from ._dist cimport CHUNK_SIZE

#: Rows per tile of the chunked kernels; callers that split the data themselves cut at
#: multiples of it, so that every tile (and so every result) stays the same.
TILE_ROWS = CHUNK_SIZE


def center_tables(centers):
    """Squared norms and a transposed copy of the centres, as ``_dist2_tile`` needs them.

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), dtype=floating

    Returns
    -------
    centers_sqnorm : ndarray of shape (n_clusters,)
        ``||c_j||^2`` in the centres' dtype.
    centers_T : ndarray of shape (n_features, n_clusters)
        C-contiguous transpose (the direct loops run over clusters for each feature).
    """
    centers = np.asarray(centers)
    return (np.einsum("ij,ij->i", centers, centers).astype(centers.dtype, copy=False),
            np.ascontiguousarray(centers.T))
