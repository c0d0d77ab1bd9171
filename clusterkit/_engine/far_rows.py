"""The rows an empty cluster may move to: every row's relocation score and the rows of largest
score, found in the rows of a batch in memory or in all the row chunks of the data, so that
the M-steps' one relocation rule (:func:`~clusterkit.mstep.batch_rules.relocate_empty`)
reads them the same way wherever the rows are."""
from dataclasses import dataclass

import numpy as np

from .._data.sparse import dense_rows, kernels_for

__all__ = ["FarRows", "batch_far_rows", "far_scores", "largest"]

#: A squared distance at most ``_ROUNDING_EPS * (n_features + 2)`` machine epsilons times the
#: row's squared norm (in the fit's centred frame) is rounding: ``||x||^2 - 2 x.c + ||c||^2``
#: with ``c`` at ``x`` rounds by at most about ``2 (n_features + 2) eps ||x||^2`` (each of its
#: three dot products of ``n_features`` terms by ``n_features eps / 2`` of its size, whatever
#: the order of the sums), so a row on its centre scores 0 whether its distance came from
#: that expansion, from a direct difference (pruned E-steps: exactly 0) or from another
#: blocking of the products.
_ROUNDING_EPS = 2


def far_scores(X, sample_weight, dist2, n_threads):
    """``w_n * dist2_n`` in float64, the relocation rules' score of each sample, with 0 for a
    sample whose squared distance is within the rounding of any of the E-steps' ways to
    compute it (:data:`_ROUNDING_EPS`): it sits on a centre. Rounding noise would otherwise
    decide where an empty or starved cluster goes (onto a duplicate of a centre, a different
    one at every step, or another one with a pruned E-step than without), and the run would
    cycle instead of reaching its fixed point."""
    score = sample_weight.astype(np.float64) * dist2.astype(np.float64)
    sqnorms = kernels_for(X).sqnorms(X, n_threads)
    rounding = _ROUNDING_EPS * (X.shape[1] + 2) * float(np.finfo(X.dtype).eps)
    score[dist2 <= rounding * sqnorms] = 0.0
    return score


# Up to this many of the largest scores, largest() picks them one argmax at a time: at 56,000
# scores one pass took 0.01-0.02 ms where np.partition took 0.5 ms, and partial E-steps can
# leave the same few clusters empty at every iteration.
_FEW = 8


def largest(score, k):
    """Indices of the ``k`` largest scores, largest first, ties to the lower index.

    The same as ``np.argsort(-score, kind="stable")[:k]`` for finite scores, without sorting
    all ``N`` scores (empty clusters are few, the data are not).
    """
    if k <= _FEW:
        # a few passes of argmax (the first of equal maxima) cost far less than a partition
        score = score.copy()
        chosen = np.empty(k, dtype=np.intp)
        for i in range(k):
            chosen[i] = np.argmax(score)
            score[chosen[i]] = -np.inf
        return chosen
    kth = np.partition(score, score.size - k)[score.size - k]
    above = np.flatnonzero(score > kth)
    ties = np.flatnonzero(score == kth)[:k - above.size]
    chosen = np.concatenate([above, ties])
    return chosen[np.lexsort((chosen, -score[chosen]))]


@dataclass
class FarRows:
    """The rows with the largest relocation scores (:func:`far_scores`), largest first (ties
    to the lower row number), only positive scores: what a relocation of empty clusters
    reads.

    Attributes
    ----------
    score : ndarray of shape (k,), dtype=float64
    rows : ndarray of shape (k, n_features)
        Dense copies of the rows.
    labels : ndarray of shape (k,), dtype=int32
    sample_weight : ndarray of shape (k,)
    n_positive : int
        Rows with a positive score in all (there are more candidates when it exceeds
        ``k``).
    """

    score: np.ndarray
    rows: np.ndarray
    labels: np.ndarray
    sample_weight: np.ndarray
    n_positive: int

    @classmethod
    def top(cls, score, X, sample_weight, labels, k):
        """The ``k`` rows of largest ``score`` (:func:`far_scores`) among the rows ``X``
        (dense or CSR) labelled ``labels``, and their row numbers in ``X``."""
        n_positive = int(np.count_nonzero(score > 0))
        top = largest(score, min(k, n_positive))
        return cls(score[top], dense_rows(X, top), labels[top], sample_weight[top],
                   n_positive), top


def batch_far_rows(X, sample_weight, assignment, n_threads):
    """``far_rows(k)`` of the rows of a batch in memory and their assignment: the
    :class:`FarRows` of the ``k`` rows of largest score (scored at the first call: a step
    without empty clusters never asks)."""
    scores = []

    def far_rows(k):
        if not scores:
            scores.append(far_scores(X, sample_weight, assignment.dist2, n_threads))
        return FarRows.top(scores[0], X, sample_weight, assignment.labels, k)[0]
    return far_rows
