"""Plain-NumPy twins of the Cython kernels.

Slow, obvious implementations used by the tests (and benchmarks) as the ground truth for every
kernel in :mod:`clusterkit._kernels`. Each function mirrors one kernel: same arguments, but
returns its outputs instead of writing into preallocated arrays. Not part of the public API.
"""
import numpy as np


def sqdist(X, centers):
    """All squared distances, shape (n_samples, n_clusters), computed the direct way (by
    blocks of rows, so that the differences take at most about 32 MiB)."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    out = np.empty((X.shape[0], centers.shape[0]))
    step = max(1, 2**22 // max(1, centers.size))
    for start in range(0, X.shape[0], step):
        block = X[start:start + step]
        out[start:start + step] = ((block[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    return out


# --- exact assignment (_assign.pyx) ---------------------------------------------------------

def assign_full(X, centers):
    """Nearest centre and squared distance to it; returns (labels, min_dist2, n_evals)."""
    d2 = sqdist(X, centers)
    labels = d2.argmin(axis=1).astype(np.int32)
    return labels, d2[np.arange(len(X)), labels], X.shape[0] * centers.shape[0]


def assign_pruned(X, centers, X_proj, x_rest, centers_proj, centers_rest):
    """Nearest centre with dimension pruning (``_pruned.assign_pruned``): the labels and
    distances of :func:`assign_full`, the pairs bounded by their projections, and the fewest
    direct distances any order of completion needs: one per sample plus every other centre
    whose bound ``||x~ - c~||^2 + (||x_r|| - ||c_r||)^2`` is below the nearest distance.
    Returns ``(labels, min_dist2, n_proj_pairs, n_direct_min)``."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    labels, min_dist2, n_pairs = assign_full(X, centers)
    bound = (sqdist(X_proj, centers_proj)
             + (np.asarray(x_rest, np.float64)[:, None]
                - np.asarray(centers_rest, np.float64)[None, :]) ** 2)
    below = bound < min_dist2[:, None] * (1 - 1e-9)
    below[np.arange(len(X)), labels] = False
    return labels, min_dist2, n_pairs, len(X) + int(below.sum())


def pruning_bounds(X_proj, x_rest, centers_proj, centers_rest):
    """The exact lower bounds of dimension pruning, ``||x~ - c~||^2 + (||x_r|| - ||c_r||)^2``
    for every row and centre (``_pruned.pyx``, ``_pruning._prune_bound2``), in float64."""
    return (sqdist(X_proj, centers_proj)
            + (np.asarray(x_rest, np.float64)[:, None]
               - np.asarray(centers_rest, np.float64)[None, :]) ** 2)


def pruned_stored_bounds(X, centers, X_proj, x_rest, centers_proj, centers_rest, group_of=None):
    """The range the bounded E-steps' first visits with pruning store their bounds in
    (``_pruned.assign_pruned`` with ``lower``), before the shift and the slack: per row and
    group (per centre if ``group_of`` is None, Elkan's), at least the square root of the
    least pruning bound and at most the least exact distance, over the group's centres
    other than the row's nearest (Elkan's: that centre's own, its exact distance). Returns
    ``(low, high)``."""
    d2 = sqdist(np.asarray(X, np.float64), np.asarray(centers, np.float64))
    bound = np.minimum(pruning_bounds(X_proj, x_rest, centers_proj, centers_rest), d2)
    labels = d2.argmin(axis=1)
    rows = np.arange(len(X))
    if group_of is None:
        bound[rows, labels] = d2[rows, labels]
        return np.sqrt(bound), np.sqrt(d2)
    n_groups = int(np.max(group_of)) + 1
    bound[rows, labels] = d2[rows, labels] = np.inf
    low = np.full((len(X), n_groups), np.inf)
    high = np.full((len(X), n_groups), np.inf)
    for g in range(n_groups):
        members = np.flatnonzero(np.asarray(group_of) == g)
        low[:, g] = bound[:, members].min(axis=1)
        high[:, g] = d2[:, members].min(axis=1)
    return np.sqrt(low), np.sqrt(high)


def softmax_neg(dist2, sigma2):
    """Rows of ``exp(-dist2 / (2 sigma2))`` normalised; returns (resp, log_norm)."""
    a = -np.asarray(dist2, dtype=np.float64) / (2.0 * sigma2)
    a_max = a.max(axis=1, keepdims=True)
    e = np.exp(a - a_max)
    total = e.sum(axis=1, keepdims=True)
    return e / total, (np.log(total) + a_max)[:, 0]


def responsibilities_full(X, centers, sigma2):
    """Exact GMM responsibilities; returns (resp, labels, min_dist2, log_norm, n_evals)."""
    labels, min_dist2, n_evals = assign_full(X, centers)
    resp, log_norm = softmax_neg(sqdist(X, centers), sigma2)
    return resp, labels, min_dist2, log_norm, n_evals


def gemm_nt(A, B, alpha, beta, C):
    """``alpha * A @ B.T + beta * C``."""
    return alpha * np.asarray(A, np.float64) @ np.asarray(B, np.float64).T + beta * C


# --- M-steps (_mstep.pyx) --------------------------------------------------------------------

# Layout of the fixed blocks (_accumulate.pxd): rows per chunk, chunks per block, most blocks.
CHUNK_SIZE, BLOCK_CHUNKS, MAX_BLOCKS = 256, 32, 32


def block_rows(n_samples):
    """Rows per block of the fixed-block layout (a whole number of chunks)."""
    n_chunks = -(-n_samples // CHUNK_SIZE)
    n_blocks = min(-(-n_chunks // BLOCK_CHUNKS), MAX_BLOCKS)
    return CHUNK_SIZE * -(-n_chunks // max(n_blocks, 1))


def _sum_in_order(terms):
    """``0 + t_0 + t_1 + ...`` along axis 0, one addition at a time, in ``terms``' dtype."""
    zero = np.zeros((1,) + terms.shape[1:], dtype=terms.dtype)
    return np.cumsum(np.concatenate([zero, terms]), axis=0, dtype=terms.dtype)[-1]


def _blocks_in_order(partials):
    """``p_0 + p_1 + ...``: the blocks' partial sums added in block order."""
    return np.cumsum(np.stack(partials), axis=0, dtype=partials[0].dtype)[-1]


def accumulate_statistics(X, sample_weight, winners, resp, dist2, n_clusters, blocks):
    """Per-cluster ``S_j``, ``W_j`` and ``E_j`` in the kernel's order of summation.

    Returns ``(centers_sum, weight_in_clusters, sse)`` (``sse`` None without ``dist2``), bit
    for bit as the kernel computes them: every term in ``X``'s dtype (``w_n r_nj``, then
    ``(w_n r_nj) x_n``; ``E_j``'s terms in float64), summed one at a time. ``blocks=False``
    ("owner computes"): each cluster sums its terms in sample order. ``blocks=True``: each
    block of :func:`block_rows` rows sums its terms in row order, then the blocks' partial
    sums are added in block order. ``resp=None`` means hard (``r_nj = 1``, every term kept);
    with responsibilities, terms with ``w_n r_nj`` below the dtype's smallest normal number
    are left out.
    """
    X = np.asarray(X)
    dtype = X.dtype
    winners = np.asarray(winners)
    winners = winners[:, None] if winners.ndim == 1 else winners
    w = np.asarray(sample_weight, dtype)[:, None]
    if resp is None:
        wr = np.repeat(w, winners.shape[1], axis=1)
        keep = np.ones(wr.shape, bool)
    else:
        wr = w * np.asarray(resp, dtype)
        keep = wr >= np.finfo(dtype).tiny
    rows, cols = np.nonzero(keep)  # entries in sample order
    labels, weights = winners[rows, cols], wr[rows, cols]
    terms = (weights[:, None] * X[rows]).astype(dtype)
    sse_terms = None if dist2 is None else weights.astype(np.float64) * np.asarray(dist2)[rows]
    block = rows // block_rows(len(X)) if blocks else np.zeros(len(rows), dtype=np.intp)
    n_blocks = -(-len(X) // block_rows(len(X))) if blocks else 1
    centers_sum = np.zeros((n_clusters, X.shape[1]), dtype)
    weight_in_clusters = np.zeros(n_clusters, dtype)
    sse = None if dist2 is None else np.zeros(n_clusters)
    for j in range(n_clusters):
        parts = [np.flatnonzero((labels == j) & (block == b)) for b in range(n_blocks)]
        centers_sum[j] = _blocks_in_order([_sum_in_order(terms[p]) for p in parts])
        weight_in_clusters[j] = _blocks_in_order([_sum_in_order(weights[p]) for p in parts])
        if sse is not None:
            sse[j] = _blocks_in_order([_sum_in_order(sse_terms[p]) for p in parts])
    return centers_sum, weight_in_clusters, sse


# --- seeding (_kmeanspp.pyx, _afkmc2.pyx) ---------------------------------------------------------

def d2_update(X, center, min_dist2):
    """Twin of ``d2_update``; returns (min_dist2 lowered by ``center``, n_evals)."""
    d2 = sqdist(X, np.asarray(center)[None, :])[:, 0]
    return np.minimum(np.asarray(min_dist2, dtype=np.float64), d2), X.shape[0]


def _invert(cumsum, value):
    """``searchsorted(cumsum, value, 'right')`` clamped to the last entry with positive mass."""
    return min(np.searchsorted(cumsum, value, side="right"),
               np.searchsorted(cumsum, cumsum[-1], side="left"))


def kmeanspp(X, sample_weight, first, uniforms, block=64):
    """Twin of ``kmeanspp`` without pruning (``block`` is its ``SAMPLER_BLOCK``); returns
    (centers, chosen, labels, min_dist2, n_chosen, n_evals of unpruned greedy k-means++)."""
    n_samples = X.shape[0]
    n_clusters, n_trials = uniforms.shape[0] + 1, uniforms.shape[1]
    w = np.asarray(sample_weight, dtype=np.float64)
    min_dist2 = sqdist(X, X[[first]])[:, 0]
    labels = np.zeros(n_samples, dtype=np.int32)
    chosen = [int(first)]
    n_evals = n_samples
    for i in range(1, n_clusters):
        mass = w * min_dist2
        if not mass.sum() > 0:
            break
        block_cumsum = np.cumsum([mass[b:b + block].sum() for b in range(0, n_samples, block)])
        cands = []
        for u in uniforms[i - 1]:
            target = u * block_cumsum[-1]
            b = _invert(block_cumsum, target)
            offset = target - (block_cumsum[b - 1] if b > 0 else 0.0)
            cands.append(b * block + _invert(np.cumsum(mass[b * block:(b + 1) * block]), offset))
        d2 = sqdist(X, X[cands])
        gains = (w[:, None] * np.maximum(min_dist2[:, None] - d2, 0)).sum(axis=0)
        best = int(np.argmax(gains)) if n_trials > 1 else 0
        n_evals += (n_trials + 1) * n_samples if n_trials > 1 else n_samples
        closer = d2[:, best] < min_dist2
        labels[closer] = i
        min_dist2 = np.minimum(min_dist2, d2[:, best])
        chosen.append(int(cands[best]))
    chosen = np.asarray(chosen, dtype=np.int32)
    return X[chosen].copy(), chosen, labels, min_dist2, len(chosen), n_evals


def afkmc2_chain(X, sample_weight, q, first, candidates, uniforms):
    """Twin of ``afkmc2_chain``; returns (centers, chosen, n_evals)."""
    n_clusters = candidates.shape[0] + 1
    chosen = [int(first)]
    n_evals = 0
    for i in range(1, n_clusters):
        ys = candidates[i - 1]
        p = sample_weight[ys].astype(np.float64) * sqdist(X[ys], X[chosen]).min(axis=1)
        n_evals += len(ys) * i
        state = 0
        for j in range(1, len(ys)):
            if p[state] == 0 or (p[j] / q[ys[j]]) / (p[state] / q[ys[state]]) > uniforms[i - 1, j]:
                state = j
        chosen.append(int(ys[state]))
    chosen = np.asarray(chosen, dtype=np.int32)
    return X[chosen].copy(), chosen, n_evals



def _walk_chain(p, q, ys, uniforms):
    """Final state (a position in ``ys``) of one AFK-MC^2 chain with targets ``p``."""
    state = 0
    for j in range(1, len(ys)):
        if p[state] == 0 or (p[j] / q[ys[j]]) / (p[state] / q[ys[state]]) > uniforms[j]:
            state = j
    return state


def afkmc2_greedy(X, sample_weight, q, first, candidates, uniforms, n_chains, X_pot, w_pot,
                  pot_dist2):
    """Twin of ``afkmc2_greedy`` (with ``pot_labels`` all 0: ``pot_dist2`` is the distance to
    the first centre); returns (centers, chosen, pot_dist2, gains, n_evals), where
    ``gains[i - 1]`` are the chains' estimated gains at centre ``i``. The count has the rows
    the kernel cannot rule out: those whose nearest centre is nearer to the final state than
    twice their distance."""
    n_clusters = candidates.shape[0] + 1
    m = candidates.shape[1] // n_chains
    pot_dist2 = np.asarray(pot_dist2, dtype=np.float64).copy()
    w_pot = np.asarray(w_pot, dtype=np.float64)
    labels = np.zeros(len(X_pot), dtype=np.intp)
    chosen, all_gains = [int(first)], []
    n_evals = 0
    for i in range(1, n_clusters):
        finals = []
        for l in range(n_chains):
            ys = candidates[i - 1, l * m:(l + 1) * m]
            p = sample_weight[ys].astype(np.float64) * sqdist(X[ys], X[chosen]).min(axis=1)
            finals.append(int(ys[_walk_chain(p, q, ys, uniforms[i - 1, l * m:(l + 1) * m])]))
        n_evals += n_chains * m * i
        d2 = sqdist(X_pot, X[finals])  # (n_pot, n_chains)
        final_center_d2 = sqdist(X[finals], X[chosen])  # (n_chains, i)
        n_evals += n_chains * i
        n_evals += int((final_center_d2[:, labels].T < 4 * pot_dist2[:, None]).sum())
        gains = (w_pot[:, None] * np.maximum(pot_dist2[:, None] - d2, 0)).sum(axis=0)
        best = int(np.argmax(gains))  # the first on ties
        closer = d2[:, best] < pot_dist2
        labels[closer] = i
        pot_dist2[closer] = d2[closer, best]
        chosen.append(finals[best])
        all_gains.append(gains)
    chosen = np.asarray(chosen, dtype=np.int32)
    return X[chosen].copy(), chosen, pot_dist2, np.array(all_gains), n_evals

# --- partial E-step (_partial.pyx) -----------------------------------------------------------

def _smallest(values, labels, k):
    """Positions of the ``k`` smallest ``values``, ordered by (value, label)."""
    order = np.lexsort((labels, values))
    return order[:k]


def assign_topk(X, centers, n_winners):
    """The ``n_winners`` nearest centres per sample (ascending, ties to the lower index).

    Returns (winners, win_dist2, n_evals).
    """
    d2 = sqdist(X, centers)
    winners = np.argsort(d2, axis=1, kind="stable")[:, :n_winners].astype(np.int32)
    return winners, np.take_along_axis(d2, winners, axis=1), X.shape[0] * centers.shape[0]


def partial_search(X, centers, neighbourhoods, explore, winners):
    """Search ``S(n) = union_{c in K(n)} G_c`` plus ``explore[n]`` (duplicates removed).

    Returns (winners_new, win_dist2, cand, cand_dist2, n_cand, n_evals); ``cand[n]`` lists
    ``S(n)`` in the order it is built (``winners[n]``, then ``G_c`` for ``c`` in ``winners[n]``
    row order, then the exploratory clusters), padded with -1 (distances with NaN).
    """
    n_samples, n_winners = winners.shape
    sets = []
    for n in range(n_samples):
        seq = list(winners[n]) + list(neighbourhoods[winners[n]].ravel()) + list(explore[n])
        sets.append(list(dict.fromkeys(int(j) for j in seq)))
    max_cand = max([len(s) for s in sets] + [1])
    cand = np.full((n_samples, max_cand), -1, dtype=np.int32)
    cand_dist2 = np.full((n_samples, max_cand), np.nan)
    n_cand = np.array([len(s) for s in sets], dtype=np.int32)
    winners_new = np.empty_like(winners, dtype=np.int32)
    win_dist2 = np.empty(winners.shape)
    for n, s in enumerate(sets):
        s = np.array(s, dtype=np.int32)
        d2 = sqdist(X[n:n + 1], centers[s])[0]
        cand[n, :len(s)] = s
        cand_dist2[n, :len(s)] = d2
        best = _smallest(d2, s, n_winners)
        winners_new[n] = s[best]
        win_dist2[n] = d2[best]
    return winners_new, win_dist2, cand, cand_dist2, n_cand, int(n_cand.sum())


def neighbourhoods_estimated(labels, cand, cand_dist2, n_cand, neighbourhoods, use_dist):
    """Eq. 8 of Forster & Lücke (2018): ``G_c`` from the mean (squared) distances of the
    samples whose best cluster is ``c`` (label -1: no cluster's). Returns the new
    neighbourhoods (input unchanged)."""
    n_clusters, G = neighbourhoods.shape
    result = neighbourhoods.copy()
    acc = {c: {} for c in range(n_clusters)}
    for n in range(len(labels)):  # sample order, float64 sums: the kernel's exact arithmetic
        c = int(labels[n])
        if c < 0:  # in no I_c
            continue
        for k in range(int(n_cand[n])):
            j = int(cand[n, k])
            if j == c:
                continue
            d = float(cand_dist2[n, k])
            s, m = acc[c].get(j, (0.0, 0))
            acc[c][j] = (s + (np.sqrt(d) if use_dist else d), m + 1)
    for c in range(n_clusters):
        if not np.any(labels == c):
            continue
        est = sorted((s / m, j) for j, (s, m) in acc[c].items())
        chosen = [j for _, j in est[:G - 1]]
        old = [int(j) for j in neighbourhoods[c, 1:] if j not in chosen]
        result[c] = [c] + (chosen + old)[:G - 1]
    return result


def neighbourhoods_exhaustive(centers, G):
    """``G_c`` = ``c`` and its ``G - 1`` nearest other centres. Returns (neighbourhoods, n_evals)."""
    n_clusters = centers.shape[0]
    d2 = sqdist(centers, centers)
    result = np.empty((n_clusters, G), dtype=np.int32)
    for c in range(n_clusters):
        others = np.delete(np.arange(n_clusters), c)
        result[c, 0] = c
        result[c, 1:] = others[_smallest(d2[c, others], others, G - 1)]
    return result, n_clusters * n_clusters


# --- lightweight coresets (_lwcs.pyx) -------------------------------------------------------

def moments_weighted(X, sample_weight):
    """Twin of ``moments_weighted``; returns (weight, mean, m2, low, high), float64."""
    X = np.asarray(X, dtype=np.float64)
    w = np.asarray(sample_weight, dtype=np.float64)
    total = w.sum()
    mean = w @ X / total if total > 0 else np.zeros(X.shape[1])
    m2 = float(w @ ((X - mean) ** 2).sum(axis=1)) if total > 0 else 0.0
    return total, mean, m2, X.min(axis=0), X.max(axis=0)


def mass_cumulative(X, sample_weight, mean, a, b):
    """Twin of ``mass_cumulative``; returns (dist2, cumsum, n_evals), float64."""
    dist2 = ((np.asarray(X, dtype=np.float64) - mean) ** 2).sum(axis=1)
    return dist2, np.cumsum(np.asarray(sample_weight, dtype=np.float64) * (a + b * dist2)), \
        X.shape[0]


# --- sparse (CSR) data (_sparse.pyx, _elkan.pyx's elkan_assign_sparse) ----------------------

def sparse_dist2(X, centers):
    """All squared distances of the rows of scipy.sparse ``X`` to ``centers``, in float64,
    computed the direct way on the densified rows."""
    return sqdist(X.toarray(), centers)


def assign_sparse(X, centers):
    """Twin of ``assign_sparse``; returns (labels, min_dist2, n_evals)."""
    return assign_full(X.toarray(), centers)


def accumulate_sparse(X, sample_weight, labels, dist2, n_clusters):
    """Twin of ``accumulate_sparse``: the dense "owner computes" sums of the densified rows,
    in the same order (the zeros add nothing), so the same bits."""
    return accumulate_statistics(X.toarray(), sample_weight, labels, None, dist2, n_clusters,
                                 blocks=False)


def d2_update_sparse(X, candidates, min_dist2):
    """Twin of ``d2_update_sparse``; returns (out of shape (n_candidates, n_samples),
    n_evals)."""
    d2 = sparse_dist2(X, candidates).T
    return np.minimum(np.asarray(min_dist2, dtype=np.float64)[None, :], d2), d2.size


# --- Yinyang's grouped bounds (_yinyang.pyx) -------------------------------------------------

def yinyang_assign(X, rows, centers, members, group_starts, group_of, shift, group_shift_sum,
                   group_shift_prev, last_moved, step, lower, previous, last_dist2, visit,
                   slack, half_min=None):
    """Twin of ``yinyang_assign`` (without the fused sums and the neighbour search; with
    Hamerly's separation test when ``half_min`` is given), one sample at a time as the
    kernel's ``_yinyang_sample``; updates ``lower``, ``last_dist2`` and ``visit`` in place and
    returns (labels, min_dist2, n_evals). Distances are NumPy's direct sums in float64, so
    they may round differently from the kernel's."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    keep = 1.0 - slack
    store = lambda value: np.float32(value * keep)  # noqa: E731  (as _store_lower)
    labels = np.empty(len(rows), dtype=np.int32)
    min_dist2 = np.empty(len(rows))
    n_evals = 0
    for i, r in enumerate(rows):
        x, a, bound = X[i], int(previous[i]), lower[r]
        first = a < 0
        best_c, best, u = -1, np.inf, np.inf
        if not first:
            if last_moved[a] > visit[r]:
                d2_a = float(((x - centers[a]) ** 2).sum())
                n_evals += 1
            else:
                d2_a = float(last_dist2[r])
            u = np.sqrt(d2_a)
            separated = half_min is not None and half_min[a] * keep > u  # Hamerly's test
            if separated or (bound.astype(np.float64) - group_shift_sum).min() > u:  # global filter
                labels[i], min_dist2[i], visit[r] = a, d2_a, step
                last_dist2[r] = d2_a
                continue
            best_c, best = a, d2_a
        best_u = u
        local = not first and visit[r] == step - 1
        best_group, best_m2, scanned_a = -1, np.inf, False
        for g in range(len(group_starts) - 1):
            if not first:
                if float(bound[g]) - group_shift_sum[g] > best_u:  # group filter
                    continue
                old_lb = float(bound[g]) - group_shift_prev[g]
                scanned_a = scanned_a or g == group_of[a]
            m1 = m2 = np.inf
            for c in members[group_starts[g]:group_starts[g + 1]]:
                if c == a:
                    d2 = d2_a
                else:
                    if local and old_lb - shift[c] > best_u:  # local filter
                        v = old_lb - shift[c]
                        m1, m2 = (v, m1) if v < m1 else (m1, min(m2, v))
                        continue
                    d2 = float(((x - centers[c]) ** 2).sum())
                    n_evals += 1
                v = np.sqrt(d2)
                m1, m2 = (v, m1) if v < m1 else (m1, min(m2, v))
                if d2 < best or (d2 == best and c < best_c):
                    best_c, best, best_u = int(c), d2, v
            bound[g] = store(m1 + group_shift_sum[g])
            if group_of[best_c] == g:
                best_group, best_m2 = g, m2
        if best_group >= 0 and group_of[best_c] == best_group:
            bound[best_group] = store(best_m2 + group_shift_sum[best_group])
        if not first and best_c != a and not scanned_a:
            g = group_of[a]
            bound[g] = min(bound[g], store(u + group_shift_sum[g]))
        labels[i], min_dist2[i], visit[r] = best_c, best, step
        last_dist2[r] = best
    return labels, min_dist2, n_evals


def yinyang_init_bounds(X, centers, group_of, n_groups):
    """Twin of ``yinyang_init_bounds``: the nearest centres, the squared distances to them and
    each group's exact smallest distance to a centre other than the label (the kernel's
    bounds are these, lowered by the rounding of its gemm); returns (labels, min_dist2,
    group_min of shape (n_samples, n_groups), n_evals)."""
    d2 = sqdist(X, centers)
    labels = d2.argmin(axis=1).astype(np.int32)
    rows = np.arange(len(X))
    min_dist2 = d2[rows, labels]
    d2[rows, labels] = np.inf
    group_min = np.full((len(X), n_groups), np.inf)
    for g in range(n_groups):
        if np.any(group_of == g):
            group_min[:, g] = np.sqrt(d2[:, group_of == g].min(axis=1))
    return labels, min_dist2, group_min, len(X) * (centers.shape[0] + 1)


# --- single-point moves (_moves.pyx) --------------------------------------------------------

def partition_sums(X, sample_weight, labels, n_clusters):
    """Twin of ``partition_sums``: (centers_sum, weight_in_clusters, n_members) in float64 (the
    rows of positive weight counted)."""
    X, w = np.asarray(X, dtype=np.float64), np.asarray(sample_weight, dtype=np.float64)
    sums = np.zeros((n_clusters, X.shape[1]))
    np.add.at(sums, labels, w[:, None] * X)
    return (sums, np.bincount(labels, w, n_clusters),
            np.bincount(labels[w != 0], minlength=n_clusters).astype(np.int32))


def labelled_dist2(X, labels, centers):
    """Twin of ``labelled_dist2``: (dist2, n_evals)."""
    diff = np.asarray(X, dtype=np.float64) - centers[labels]
    return (diff ** 2).sum(axis=1), X.shape[0]


def far_bounds(X, last_dist2, max_sqnorm):
    """Twin of ``far_bounds``."""
    eps = np.finfo(X.dtype).eps
    xn = (np.asarray(X, dtype=np.float64) ** 2).sum(axis=1)
    window = 4.0 * (X.shape[1] + 2) * eps * (2.0 * xn + 2.0 * max_sqnorm)
    return np.sqrt(np.maximum(np.asarray(last_dist2, dtype=np.float64) - window, 0.0))


def moves_pass(X, sample_weight, labels, centers, weight_in_clusters, n_members, candidates,
               far, ranked_centers, drift, max_drift, move_tol=1e-10):
    """Twin of ``moves_pass`` (one row at a time, the same candidates, bounds and order);
    returns (labels, centers, weight_in_clusters, n_members, drift, n_moved, n_full, n_evals,
    delta, max_drift), new arrays."""
    X = np.asarray(X, dtype=np.float64)
    labels, centers, weight = labels.copy(), centers.copy(), weight_in_clusters.copy()
    n_members, drift = n_members.copy(), drift.copy()
    n_clusters, n_cand = centers.shape[0], candidates.shape[1]
    n_moved = n_full = n_evals = 0
    delta = 0.0

    def gain(x, w, j):  # what adding x to cluster j costs
        return w * weight[j] / (weight[j] + w) * ((x - centers[j]) ** 2).sum()

    for i, x in enumerate(X):
        w = float(sample_weight[i])
        a = labels[i]
        if w <= 0 or n_members[a] <= 1:
            continue
        rem = w * weight[a] / (weight[a] - w) * ((x - centers[a]) ** 2).sum()
        n_evals += 1
        if rem <= 0:
            continue
        listed = [int(b) for b in candidates[i] if b != a]
        adds = {b: gain(x, w, b) for b in listed}
        n_evals += len(listed)
        if n_cand < n_clusters:
            lower = w * weight.min() / (weight.min() + w) * max(far[i] - max_drift, 0.0) ** 2
            if lower < min(adds.values(), default=np.inf) and lower < rem:
                n_full += 1
                for j in range(n_clusters):
                    if j == a or j in candidates[i]:
                        continue
                    r = far[i] - drift[j]
                    best_add = min(adds.values(), default=np.inf)
                    if r > 0 and w * weight[j] / (weight[j] + w) * r * r >= min(best_add, rem):
                        continue  # (its own bound rules it out)
                    adds[j] = gain(x, w, j)
                    n_evals += 1
        if not adds:
            continue
        best = min(adds, key=lambda j: (adds[j], j))
        if not adds[best] < rem * (1.0 - move_tol):
            continue
        wa, wb = weight[a], weight[best]
        centers[a] = centers[a] + w / (wa - w) * (centers[a] - x)
        centers[best] = centers[best] + w / (wb + w) * (x - centers[best])
        weight[a], weight[best] = wa - w, wb + w
        n_members[a] -= 1
        n_members[best] += 1
        labels[i] = best
        delta += adds[best] - rem
        n_moved += 1
        for j in (a, best):
            drift[j] = np.sqrt(((centers[j] - ranked_centers[j]) ** 2).sum())
            max_drift = max(max_drift, drift[j])
        n_evals += 2
    return (labels, centers, weight, n_members, drift, n_moved, n_full, n_evals, delta,
            max_drift)
