"""Rows as the engine sees them: dense or CSR, each kind with its kernels (:mod:`.sparse`),
the nearest-centre pass with its BLAS policy (:mod:`.nearest`), and data read in row
chunks, memmaps and dask arrays (:mod:`.chunked`, :mod:`.dask_chunks`, the first pass's
:mod:`.moments`; which an input becomes: :mod:`.containers`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
