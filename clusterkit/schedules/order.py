"""A random order of the rows given row by row: each row's position in it is a function of
the row's number and a key, so that any holder of some rows (a row chunk, on any worker)
finds their positions without the order of all the rows."""
import numpy as np

from .._data import blocks
from .._engine.state import _GOLDEN, _mix64

__all__ = ["KeyedOrder"]

#: Rounds of the Feistel network (four make a pseudo-random permutation from a pseudo-random
#: round function, Luby & Rackoff; two more for small domains, where each half is short).
_ROUNDS = 6


class KeyedOrder:
    """A random order of ``n_samples`` rows as a keyed bijection of ``[0, n_samples)``: row
    ``i`` comes at position ``positions([i])``.

    The bijection is a balanced Feistel network on ``2h`` bits (``2^(2h)`` the smallest even
    power of two above ``n_samples - 1``, at most ``4 n_samples``) whose round function is
    the splitmix64 finaliser of the half and a round key drawn from ``key``, restricted to
    ``[0, n_samples)`` by cycle walking (a position at or above ``n_samples`` is encrypted
    again until it falls below; a walk stays on the row's cycle of the bijection, so the
    result is a bijection of ``[0, n_samples)``, on average fewer than 4 rounds of the
    network per row). A prefix of the order, the rows of position below ``b``, is then
    ``b`` rows exactly, a uniform-looking draw without replacement, and a longer prefix
    holds every shorter one.

    Parameters
    ----------
    n_samples : int
    key : int
        In ``[0, 2^63)``; drawn from the fit's random stream.
    """

    def __init__(self, n_samples, key):
        self.n_samples = int(n_samples)
        self.key = int(key)

    def _encrypt(self, x):
        half = max(1, (max(1, self.n_samples - 1).bit_length() + 1) // 2)
        shift, mask = np.uint64(half), np.uint64((1 << half) - 1)
        keys = _mix64(np.uint64(self.key)
                      + np.arange(1, _ROUNDS + 1, dtype=np.uint64) * _GOLDEN)
        left, right = x >> shift, x & mask
        for round_key in keys:
            left, right = right, left ^ (_mix64(right ^ round_key) & mask)
        return (left << shift) | right

    def positions(self, rows):
        """The positions of ``rows`` (row numbers in ``[0, n_samples)``) in the order.

        Returns
        -------
        positions : ndarray of shape (n_rows,), dtype=int64
        """
        n = np.uint64(self.n_samples)
        out = self._encrypt(np.asarray(rows, dtype=np.uint64).ravel())
        walking = np.flatnonzero(out >= n)
        while walking.size:
            out[walking] = self._encrypt(out[walking])
            walking = walking[out[walking] >= n]
        return out.astype(np.int64)

    def permutation(self):
        """All rows in the order (the rows sorted by position): ``order[p]`` is the row at
        position ``p``.

        Returns
        -------
        order : ndarray of shape (n_samples,), dtype=intp
        """
        order = np.empty(self.n_samples, dtype=np.intp)
        for block in blocks.row_slices(self.n_samples, blocks.ORDER_BLOCK_ROWS):
            rows = np.arange(block.start, block.stop, dtype=np.intp)
            order[self.positions(rows)] = rows
        return order

    def __repr__(self):
        return f"KeyedOrder(n_samples={self.n_samples}, key={self.key})"
