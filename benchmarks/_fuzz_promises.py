"""The promises mode of ``fuzz.py``: random inputs, each checked against what the docs promise.

Six kinds of input, each drawn as a plain dict (it prints as a reproducer):

``chunked``
    A preset that runs on all the rows of data in row chunks (``docs/dask.rst``) or
    ``IndexTraining``, from given centres (lloyd, elkan, gmm, spherical_kmeans also from
    their own seeding), on a dask array (one chunk or several) or a memmap read in row
    blocks: the fit in memory's iterations and changed labels per step, centres and inertia
    to rounding, labels but for near-ties; bit for bit where the docs promise it (minibatch,
    var_kmeans_s and var_gmm_s on one chunk). Other compositions must refuse clearly.
``pruning``
    The four exact E-steps with ``prune="auto"`` or a number of axes against ``prune=None``
    (``docs/exact.rst``): the same changed labels at every step and labels; the bounded
    E-steps' iterates bit for bit, Lloyd's centres to rounding.
``weights``
    ``sample_weight`` times ``2**k`` (``k`` from -60 to 100), in memory or on chunks: the
    same fit bit for bit (only the ratios of the weights matter).
``refine``
    ``Breathing`` (``carry``, budgets, a time limit, a polish) or ``best_quality``: an error
    not above the unrefined run's, no rounds after a run stopped by ``max_iter``, a
    ``refinement_log_`` that tells the rounds as they went (numbers, kept rounds lower the
    error by ``tol``, the chain of errors, the budget rule, the polish last) and, from given
    centres on chunks, the in-memory rounds.
``index``
    ``IndexTraining``: a consistent fit that stops at the first step where at most
    ``change_tol`` of the held-out rows changed cell.
``params``
    A declared hyper-parameter of a strategy set to a random value, or a preset's keyword
    to a bad one: a value the declaration refuses gives a ``ValueError``/``TypeError`` that
    names the parameter; any other value a fit or a clear error.
"""
import contextlib
import os
import traceback
import warnings

import numpy as np

from fuzz import _in_memory, _outcome, check, is_spherical, rounding_slack

KINDS = ("chunked", "chunked", "pruning", "pruning", "weights", "weights", "refine", "refine",
         "index", "params")
# the presets that read the rows of chunks where they are (docs/dask.rst)
CHUNK_PRESETS = ("lloyd", "elkan", "gmm", "spherical_kmeans", "minibatch", "nmbatch",
                 "var_kmeans_s", "var_kmeans_x", "var_gmm_s", "var_gmm_x", "best_quality",
                 "large_scale")
# whose default seeding draws on chunks the very sample it draws in memory (docs/dask.rst)
SAMPLE_SEEDED = ("lloyd", "elkan", "gmm", "spherical_kmeans")
# bit for bit on one chunk (docs/dask.rst: mini-batches, estimated neighbourhoods)
ONE_CHUNK_BITS = ("minibatch", "var_kmeans_s", "var_gmm_s")
WEIGHT_PRESETS = ("lloyd", "elkan", "minibatch", "nmbatch", "sbe", "gmm", "var_kmeans_x",
                  "var_kmeans_s", "var_gmm_x", "var_gmm_s", "lwcs_lloyd", "vc_gmm",
                  "best_quality", "large_scale", "spherical_kmeans")
POWERS = (-60, -40, -20, -1, 1, 3, 20, 60, 100)
BAD_VALUES = (0, -1, 1.5, -0.5, 2.0, float("nan"), float("inf"), "bogus", None, True, [1],
              10 ** 9)
# presets' own keywords and values no one of them takes
PRESET_KEYWORDS = {"best_quality": ("budget", "polish_tol", "coreset_size", "max_rounds", "m",
                                    "time_budget"),
                   "minibatch": ("batch_size", "max_passes"),
                   "nmbatch": ("initial_batch", "rho", "spread"),
                   "var_kmeans_s": ("G", "n_explore", "n_init_esteps"),
                   "vc_gmm": ("G", "coreset_size", "chain_length"),
                   "lwcs_lloyd": ("coreset_size",), "large_scale": ("G", "chain_length"),
                   "sbe": ("batch_size",), "slk_bo": ("lam", "n_neighbors")}
PRESET_BAD = ("bogus", float("nan"), -1, -2.5)


def make_case(rng, index):
    """A random input of the promises mode."""
    case = {"index": index, "mode": "promises", "kind": str(rng.choice(KINDS)),
            "data_seed": int(rng.randint(2 ** 31)),
            "n_samples": int(rng.choice([40, 120, 400, 1500])),
            "n_features": int(rng.choice([1, 2, 3, 5, 9, 16, 40])),
            "dtype": str(rng.choice(["float32", "float64"])),
            "scale": float(rng.choice([1e-6, 1e-2, 1.0, 1.0, 1e3, 1e8])),
            "offset": float(rng.choice([0.0, 0.0, 0.0, 10.0])),
            "data": str(rng.choice(["blobs", "blobs", "normal"])),
            "weights": str(rng.choice(["none", "none", "random", "counts"])),
            "n_clusters": int(rng.choice([1, 2, 3, 5, 8, 20])),
            "random_state": int(rng.randint(1000)),
            "n_threads": int(rng.choice([1, 2])), "given": bool(rng.uniform() < 0.8)}
    case["n_clusters"] = min(case["n_clusters"], case["n_samples"] // 2)
    kind = case["kind"]
    fit = {"n_init": 2} if rng.uniform() < 0.15 else {}
    if rng.uniform() < 0.2:  # runs that end at max_iter (not refined, labelled again)
        fit["max_iter"] = int(rng.choice([1, 2, 3]))
    if rng.uniform() < 0.1:
        fit["tol"] = 0.0
    case["fit"] = fit if kind not in ("index", "params") else {}
    if kind == "chunked":
        case["preset"] = str(rng.choice(CHUNK_PRESETS + ("index",)))
        case["container"] = str(rng.choice(["dask", "dask", "memmap"]))
        case["rows"] = int(rng.choice([case["n_samples"], 7, 50, 333, 1000]))
        # (the presets' seeding draws the in-memory sample when every weight is positive)
        case["given"] = case["given"] or case["preset"] not in SAMPLE_SEEDED
        if not case["given"] and case["weights"] == "counts":
            case["weights"] = "random"
        if case["preset"] == "minibatch":
            case["batch_size"] = int(rng.choice([1, 10, 100, 1024]))
    elif kind == "pruning":
        case["estep"] = str(rng.choice(["FullEStep", "ElkanEStep", "YinyangEStep",
                                        "BoundedEStep"]))
        case["schedule"] = str(rng.choice(["full", "full", "minibatch", "nmbatch"]))
        case["mstep"] = str(rng.choice(["hard", "hard", "spherical"] + (
            ["soft"] if case["estep"] == "FullEStep" else [])))
        case["data"] = str(rng.choice(["blobs", "normal", "duplicates"]))  # (exact ties)
        if rng.uniform() < 0.25:  # where "auto" prunes: 64 features and 256 clusters on
            case.update(n_samples=600, n_features=int(rng.choice([64, 96])), n_clusters=260,
                        prune="auto")
        else:
            case["prune"] = ("auto" if rng.uniform() < 0.2 else
                             int(rng.randint(1, case["n_features"] + 1)))
        case["container"] = str(rng.choice(["array", "array", "array", "dask", "memmap"]))
        case["rows"] = int(rng.choice([7, 50, 333]))
    elif kind == "weights":
        case["power"] = int(rng.choice(POWERS))
        case["weights"] = str(rng.choice(["random", "counts", "ones"]))
        case["scale"] = float(rng.choice([1e-2, 1.0, 1e3]))
        case["preset"] = str(rng.choice(WEIGHT_PRESETS + ("index", "shortcuts")))
        case["strings"] = {"estep": str(rng.choice(["full", "elkan", "yinyang", "bounded",
                                                   "truncated", "partial"])),
                           "mstep": str(rng.choice(["hard", "soft", "spherical"])),
                           "schedule": str(rng.choice(["full", "minibatch", "nmbatch"])),
                           "refine": str(rng.choice(["none", "breathing"]))}
        case["container"] = str(rng.choice(["array", "array", "dask", "memmap"]))
        case["rows"] = int(rng.choice([7, 50, 333, 1000]))
    elif kind == "refine":
        case["preset"] = str(rng.choice(["breathing", "breathing", "best_quality"]))
        case["estep"] = str(rng.choice(["full", "elkan", "yinyang", "bounded"]))
        case["mstep"] = str(rng.choice(["hard", "hard", "hard"] + (
            ["soft"] if case["estep"] == "full" else [])))
        case["refiner"] = {"m": int(rng.choice([1, 2, 3, 5, 10])),
                           "max_rounds": int(rng.choice([1, 3, 8, 30])),
                           "budget": [None, 0.0, 0.3, 1.0, 2.0, 10.0][rng.randint(6)],
                           "time_budget": [None, None, None, 0.0, 0.05, 5.0][rng.randint(6)],
                           "polish_tol": [None, None, 0.0, 1e-3][rng.randint(4)]}
        if case["preset"] == "breathing":
            case["refiner"].update(carry=bool(rng.uniform() < 0.5),
                                   tol=[0.0, 1e-4, 1e-2][rng.randint(3)])
        case["n_clusters"] = max(2, case["n_clusters"])
        case["container"] = str(rng.choice(["array", "array", "dask", "memmap"]))
        case["rows"] = int(rng.choice([7, 50, 333, 1000]))
    elif kind == "index":
        case["schedule"] = {"points_per_centroid": int(rng.choice([1, 2, 5, 40, 256])),
                            "holdout": int(rng.choice([0, 1, 10, 100, 10000])),
                            "change_tol": float(rng.choice([0.0, 0.02, 0.3, 1.0]))}
        case["mstep"] = str(rng.choice(["hard", "hard", "spherical"]))
        case["max_iter"] = int(rng.choice([3, 300]))
    else:
        case.update(n_samples=60, n_features=3, n_clusters=3, data="blobs", scale=1.0,
                    offset=0.0)
        if rng.uniform() < 0.3:
            case["preset"] = str(rng.choice(sorted(PRESET_KEYWORDS)))
            case["param"] = str(rng.choice(PRESET_KEYWORDS[case["preset"]]))
            case["value"] = PRESET_BAD[rng.randint(len(PRESET_BAD))]
        else:
            owners = _constrained()
            case["strategy"] = str(rng.choice(sorted(owners)))
            case["param"] = str(rng.choice(sorted(owners[case["strategy"]])))
            case["value"] = BAD_VALUES[rng.randint(len(BAD_VALUES))]
    return case


def _constrained():
    """Every public strategy class (and Clusterer) with declared constraints: their names."""
    import clusterkit
    owners = {}
    for name in clusterkit.__all__:
        declared = getattr(getattr(clusterkit, name), "_parameter_constraints", None)
        if isinstance(declared, dict) and declared:
            owners[name] = declared
    return owners


def make_data(case):
    rng = np.random.RandomState(case["data_seed"])
    n, d = case["n_samples"], case["n_features"]
    if case["data"] == "blobs":
        means = rng.normal(scale=6.0, size=(max(1, case["n_clusters"]), d))
        X = means[rng.randint(len(means), size=n)] + rng.normal(size=(n, d))
    else:
        X = rng.normal(size=(n, d))
    if case["data"] == "duplicates":
        X = X[rng.randint(0, max(1, n // 4), n)]
    X = ((X + case["offset"]) * case["scale"]).astype(case["dtype"])
    weights = {"none": None, "ones": np.ones(n),
               "random": rng.exponential(size=n),
               "counts": rng.poisson(1.0, size=n).astype(float)}[case["weights"]]
    if weights is not None and not weights.any():
        weights[0] = 1.0
    init = X[rng.choice(n, case["n_clusters"], replace=False)] * 1 if case["given"] else None
    return X, weights, init


@contextlib.contextmanager
def _row_blocks(X, rows):
    """Memmaps read in blocks of ``rows`` rows, as if larger than the memory."""
    from clusterkit._data import chunked
    saved = chunked.available_memory, chunked.MEMMAP_BLOCK_BYTES
    chunked.available_memory = lambda: 1 << 10
    chunked.MEMMAP_BLOCK_BYTES = rows * X.shape[1] * X.dtype.itemsize
    try:
        yield
    finally:
        chunked.available_memory, chunked.MEMMAP_BLOCK_BYTES = saved


def _container(case, X, weights, folder):
    """``X`` and the weights as the case's container holds them, and what makes a context
    to fit them in."""
    rows = max(min(case["rows"], len(X)), -(-len(X) // 24))  # (at most 24 chunks)
    if case.get("container") == "dask":
        import dask.array as da
        return (da.from_array(X, chunks=(rows, X.shape[1])),
                None if weights is None else da.from_array(weights, chunks=rows),
                contextlib.nullcontext)
    if case.get("container") == "memmap":
        path = os.path.join(folder, f"case{case['index']}.npy")
        np.save(path, X)
        return (np.load(path, mmap_mode="r"), weights,
                lambda: _row_blocks(X, rows))
    return X, weights, contextlib.nullcontext


def _model(case, init, variant=True):
    """The case's unfitted model; ``variant=False``: the model it is compared with (no
    pruning, no refinement)."""
    from clusterkit import (Breathing, Clusterer, FullEStep, IndexTraining, MiniBatch,
                            NestedDoubling, presets)
    import clusterkit
    common = {"random_state": case["random_state"], "n_threads": case["n_threads"],
              **case["fit"]}
    if init is not None:
        common["seed"] = init
    kind, C = case["kind"], case["n_clusters"]
    if kind == "pruning":
        schedule = {"full": "full", "minibatch": MiniBatch(batch_size=64),
                    "nmbatch": NestedDoubling(initial_batch=16)}[case["schedule"]]
        estep = getattr(clusterkit, case["estep"])(prune=case["prune"] if variant else None)
        return Clusterer(C, estep=estep, mstep=case["mstep"], schedule=schedule, **common)
    if kind == "index" or case.get("preset") == "index":
        schedule = IndexTraining(**case.get("schedule", {"points_per_centroid": 40,
                                                        "holdout": 100}))
        return Clusterer(C, estep=FullEStep(), mstep=case.get("mstep", "hard"),
                         schedule=schedule, **{"max_iter": case.get("max_iter", 300),
                                               **common})
    if kind == "refine":
        options = dict(case["refiner"]) if variant else None
        if case["preset"] == "best_quality":
            model = presets.best_quality(C, **(options or {}), **common)
            return model if variant else model.set_params(refine="none")
        return Clusterer(C, estep=case["estep"], mstep=case["mstep"],
                         refine=Breathing(**options) if options else "none", **common)
    if case.get("preset") == "shortcuts":
        return Clusterer(C, **case["strings"], **common)
    extra = {"batch_size": case["batch_size"]} if "batch_size" in case else {}
    return getattr(presets, case["preset"])(C, **extra, **common)


def _quiet_fit(model, X, weights, context=contextlib.nullcontext, callback=None):
    """The fitted model; ``model.stopped_`` says whether it warned that its run reached
    ``max_iter``."""
    from sklearn.exceptions import ConvergenceWarning
    with warnings.catch_warnings(record=True) as caught, context():
        warnings.simplefilter("always")
        if callback is not None:
            model.set_params(callback=callback)
        model.fit(X, sample_weight=weights)
    model.stopped_ = any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return model


def _computed(values):
    return np.asarray(_in_memory(values))


def _qe(X, weights, centers):
    """The weighted quantization error of ``centers`` (float64, direct distances)."""
    X = X.astype(np.float64)
    c = np.asarray(centers, np.float64)
    d2 = ((X[:, None, :] - c[None]) ** 2).sum(-1).min(1)
    return float(d2 @ (np.ones(len(X)) if weights is None else weights))


def _same_fit(a, b, X, weights=None, bits=False):
    """None if fit ``a`` ends where ``b`` does, else how not."""
    if a.n_iter_ != b.n_iter_:
        return f"n_iter_ {a.n_iter_} and {b.n_iter_}"
    if [h["n_changed"] for h in a.history_] != [h["n_changed"] for h in b.history_]:
        return (f"changed labels per step {[h['n_changed'] for h in a.history_][:8]} and "
                f"{[h['n_changed'] for h in b.history_][:8]}")
    ca, cb = np.asarray(a.cluster_centers_), np.asarray(b.cluster_centers_)
    la, lb = _computed(a.labels_), _computed(b.labels_)
    if bits:
        if not np.array_equal(ca, cb):
            return f"centres not bit-identical (largest gap {np.abs(ca - cb).max():.3g})"
        if not np.array_equal(la, lb):
            return f"{np.count_nonzero(la != lb)} labels differ"
        return None
    rtol = 1e-4 if X.dtype == np.float32 else 1e-9  # ten times the tests' tolerance
    scale = max(float(np.abs(X).max()), 1e-300)
    gap = float(np.abs(ca.astype(np.float64) - cb).max(initial=0))
    if gap > rtol * scale:
        return f"centres differ by {gap:.3g} (data scale {scale:.3g})"
    ia, ib = float(a.inertia_), float(b.inertia_)
    # to 1e-6, or where the distances themselves are rounding (||x||^2 - 2 x.c + ||c||^2
    # of unit rows, float32), to their rounding
    rows = X / np.linalg.norm(X, axis=1, keepdims=True) if is_spherical(a) else X
    slack = float(rounding_slack(rows, cb) @ (np.ones(len(X)) if weights is None else weights))
    if abs(ia - ib) > 1e-6 * max(abs(ia), abs(ib)) + slack + 1e-300:
        return f"inertia {ia!r} and {ib!r} (rounding {slack:.3g})"
    wrong = np.flatnonzero(la != lb)
    if wrong.size:  # only near-ties may part
        X64, c = X[wrong].astype(np.float64), ca.astype(np.float64)
        da = ((X64 - c[la[wrong]]) ** 2).sum(1)
        db = ((X64 - c[lb[wrong]]) ** 2).sum(1)
        slack = 1e3 * float(np.finfo(X.dtype).eps) * ((X64 ** 2).sum(1) + da + 1e-300)
        if np.any(np.abs(da - db) > slack):
            return f"{wrong.size} labels differ, not at near-ties"
    return None


def _with_steps():
    """A callback recording every step's centres, and the list it fills."""
    steps = []
    return steps, lambda info: steps.append(np.array(info["centers"])) and False


def _check_chunked(case, X, weights, init, folder):
    data, w, context = _container(case, X, weights, folder)
    outcome = _outcomes(lambda: _quiet_fit(_model(case, init), data, w, context))
    reference = _outcomes(lambda: _quiet_fit(_model(case, init), X, weights))
    if outcome[0] == "error" and reference[0] != "error":
        if case["preset"] not in CHUNK_PRESETS and "row chunks" in outcome[1]:
            return "error", outcome[1]  # a composition that does not read chunks, said so
        return "wrong", f"{case['container']}: {outcome[1]!r}; in memory: fitted"
    if outcome[0] != reference[0]:
        return "wrong", f"{case['container']}: {outcome[0]} {outcome[1]!r}; in memory: " \
                        f"{reference[0]} {reference[1]!r}"
    if outcome[0] != "ok":
        return outcome[:2]
    model, ref = outcome[2], reference[2]
    problem = check(model, X, weights, _computed(model.labels_))
    if problem:
        return "wrong", f"{case['container']} fit: {problem}"
    one_chunk = case["container"] == "dask" and case["rows"] >= len(X)
    bits = one_chunk and case["preset"] in ONE_CHUNK_BITS
    problem = _same_fit(model, ref, X, weights, bits=bits)
    if problem:
        return "wrong", (f"{case['container']} fit ({'one chunk, ' if one_chunk else ''}"
                         f"{'bit for bit' if bits else 'to rounding'}) differs from the "
                         f"in-memory fit: {problem}")
    return "ok", ""


def _outcomes(call):
    """('ok', '', result) | ('error', message, None) | ('unexpected', traceback, None)."""
    return _outcome(lambda: (call(), None))


def _check_pruning(case, X, weights, init, folder):
    data, w, context = _container(case, X, weights, folder)
    pruned_steps, on_pruned = _with_steps()
    plain_steps, on_plain = _with_steps()
    pruned = _outcomes(lambda: _quiet_fit(_model(case, init), data, w, context, on_pruned))
    plain = _outcomes(lambda: _quiet_fit(_model(case, init, variant=False), data, w, context,
                                         on_plain))
    if pruned[0] == "error" and plain[0] != "error" and "prune" in pruned[1]:
        return pruned[:2]  # more axes than features, refused as such
    if pruned[0] != plain[0]:
        return "wrong", f"pruned: {pruned[0]} {pruned[1]!r}; unpruned: {plain[0]} {plain[1]!r}"
    if pruned[0] != "ok":
        return pruned[:2]
    bits = case["estep"] != "FullEStep"
    problem = _same_fit(pruned[2], plain[2], X, weights, bits=bits)
    if problem is None and bits and len(pruned_steps) == len(plain_steps):
        for t, (a, b) in enumerate(zip(pruned_steps, plain_steps)):
            if not np.array_equal(a, b):
                problem = f"step {t + 1}'s centres not bit-identical"
                break
    if problem:
        return "wrong", (f"prune={case['prune']!r} against prune=None "
                         f"({'bit for bit' if bits else 'to rounding'}): {problem}")
    return "ok", ""


def _check_weights(case, X, weights, init, folder):
    data, w, context = _container(case, X, weights, folder)
    factor = 2.0 ** case["power"]
    scaled = weights * factor
    data2, w2, _ = _container(dict(case, index=f"{case['index']}b"), X, scaled, folder)
    base = _outcomes(lambda: _quiet_fit(_model(case, init), data, w, context))
    if base[0] == "error" and case["container"] != "array" and "row chunks" in base[1]:
        return base[:2]
    times = _outcomes(lambda: _quiet_fit(_model(case, init), data2, w2, context))
    if base[0] != "ok" or times[0] != "ok":
        if base[0] == times[0] == "error" or (base[0] == "ok" and times[0] == "error"):
            return "error", times[1] or base[1]  # (scaled weights past the dtype's range)
        return "wrong", (f"weights: {base[0]} {base[1]!r}; times 2**{case['power']}: "
                         f"{times[0]} {times[1]!r}")
    a, b = base[2], times[2]
    problem = check(b, X, scaled, _computed(b.labels_))
    if problem is None:
        problem = _same_fit(b, a, X, bits=True)
    if problem is None and "sigma2_" in vars(a) and a.sigma2_ != b.sigma2_:
        problem = f"sigma2_ {a.sigma2_!r} and {b.sigma2_!r}"
    if problem:
        return "wrong", f"weights times 2**{case['power']} ({case['container']}): {problem}"
    return "ok", ""


def _check_refine(case, X, weights, init, folder):
    refined = _outcomes(lambda: _quiet_fit(_model(case, init), X, weights))
    plain = _outcomes(lambda: _quiet_fit(_model(case, init, variant=False), X, weights))
    if refined[0] != "ok" or plain[0] != "ok":
        if refined[0] == plain[0] == "error":
            return refined[:2]
        return "wrong", f"refined: {refined[0]} {refined[1]!r}; unrefined: {plain[0]} " \
                        f"{plain[1]!r}"
    model, unrefined = refined[2], plain[2]
    problem = check(model, X, weights, model.labels_)
    if problem:
        return "wrong", problem
    eps = float(np.finfo(X.dtype).eps)
    qe, qe0 = _qe(X, weights, model.cluster_centers_), _qe(X, weights, unrefined.cluster_centers_)
    slack = 64 * (X.shape[1] + 2) * eps * (qe0 + float(np.abs(X).max()) ** 2 * (
        len(X) if weights is None else weights.sum()) * eps)
    if qe > qe0 + slack:
        return "wrong", f"refined error {qe:.10g} above the unrefined run's {qe0:.10g}"
    problem = _log_problem(case, model, unrefined, qe0, qe, eps, init)
    if problem:
        return "wrong", f"refinement_log_: {problem}"
    options = case["refiner"]
    if case["container"] != "array" and init is not None and options["time_budget"] is None:
        data, w, context = _container(case, X, weights, folder)
        chunked = _outcomes(lambda: _quiet_fit(_model(case, init), data, w, context))
        if chunked[0] != "ok":
            return "wrong", f"{case['container']}: {chunked[0]} {chunked[1]!r}"
        other = chunked[2]
        problem = _same_fit(other, model, X, weights)
        log, ref_log = other.refinement_log_, model.refinement_log_
        if problem is None and [r["kept"] for r in log] != [r["kept"] for r in ref_log]:
            problem = (f"rounds kept {[r['kept'] for r in log]}, in memory "
                       f"{[r['kept'] for r in ref_log]}")
        if problem is None and other.cost_["refinement"] != model.cost_["refinement"]:
            problem = (f"cost_['refinement'] {other.cost_['refinement']}, in memory "
                       f"{model.cost_['refinement']}")
        if problem:
            return "wrong", f"{case['container']} refinement differs from memory's: {problem}"
    return "ok", ""


def _log_problem(case, model, unrefined, qe0, qe, eps, init):
    """What in the refinement log does not tell the rounds as the docs say, or None."""
    options = case["refiner"]
    log = list(model.refinement_log_)
    if unrefined.stopped_ and "n_init" not in case["fit"] and log:
        return f"{len(log)} rounds after a run that ended at max_iter (refined: ended on its own)"
    polish = log.pop() if log and options["polish_tol"] is not None else None
    if polish is not None and polish["moved"] != 0:
        return f"the polish (last entry) moved {polish['moved']} centres"
    if [r["round"] for r in log] != list(range(1, len(log) + 1)):
        return f"rounds numbered {[r['round'] for r in log]}"
    if len(log) > options["max_rounds"]:
        return f"{len(log)} rounds for max_rounds={options['max_rounds']}"
    if (options["budget"] == 0 or options["time_budget"] == 0) and log:
        return f"{len(log)} rounds with budget={options['budget']}, " \
               f"time_budget={options['time_budget']}"
    tol = options.get("tol", 0.0)
    rtol = 1e3 * eps
    current = qe0
    for r in log + ([polish] if polish else []):
        if abs(r["objective_before"] - current) > rtol * max(current, 1e-300):
            return (f"round {r['round']} starts from {r['objective_before']!r}, the error "
                    f"kept so far is {current!r}")
        if r["kept"] and r is not polish and not r["objective"] < r["objective_before"] * (
                1 - tol):
            return f"round {r['round']} kept without lowering the error by tol={tol}"
        if r["kept"]:
            current = r["objective"]
    if abs(current - qe) > rtol * max(qe, 1e-300):
        return f"the last kept error {current!r}, the final centres' {qe!r}"
    for key in ("seconds", "distance_evals"):
        values = [r[key] for r in log]
        if values != sorted(values):
            return f"{key} decreasing: {values}"
    if options["budget"] is not None:  # a round starts only if the last one's cost fits
        before = sum(unrefined.cost_.values()) - unrefined.cost_.get("labels", 0)
        limit = options["budget"] * before
        evals = [before] + [r["distance_evals"] for r in log]
        for r in range(1, len(log)):
            if evals[r] - before + evals[r] - evals[r - 1] >= limit:
                return (f"round {r + 1} started with {evals[r] - before} of "
                        f"{limit:.0f} evaluations spent, the last round took "
                        f"{evals[r] - evals[r - 1]}")
    return None


def _check_index(case, X, weights, init, folder):
    fitted = _outcomes(lambda: _quiet_fit(_model(case, init), X, weights))
    if fitted[0] != "ok":
        return fitted[:2]
    model = fitted[2]
    problem = check(model, X, weights, model.labels_)
    if problem:
        return "wrong", problem
    changed = [h.get("heldout_changed", "missing") for h in model.history_]
    if "missing" in changed:
        return "wrong", "history_ without heldout_changed"
    tol = case["schedule"]["change_tol"]
    early = [t + 1 for t, f in enumerate(changed[:-1]) if f is not None and f <= tol]
    if early:
        return "wrong", (f"did not stop at step {early[0]} where {changed[early[0] - 1]} <= "
                         f"change_tol={tol} of the held-out rows changed cell")
    return "ok", ""


def _check_params(case, X, weights, init, folder):
    import clusterkit
    from clusterkit import Clusterer, presets
    from clusterkit._engine.constraints import _as_constraint
    name, value = case["param"], case["value"]
    if "preset" in case:  # a preset's own keyword, a value no preset takes
        def fit(v):
            return _quiet_fit(getattr(presets, case["preset"])(
                case["n_clusters"], random_state=0, **{name: v}), X, weights)
        valid = False
    else:
        owner = getattr(clusterkit, case["strategy"])
        valid = any(_as_constraint(c).accepts(value)
                    for c in owner._parameter_constraints[name])
        slot = {"Seeder": "seed", "DataReducer": "reduce", "EStep": "estep", "MStep": "mstep",
                "Schedule": "schedule", "Refiner": "refine"}

        def fit(v):
            if owner is Clusterer:
                return _quiet_fit(Clusterer(**{"n_clusters": case["n_clusters"], name: v},
                                            random_state=0), X, weights)
            kind = next(slot[base.__name__] for base in owner.__mro__
                        if base.__name__ in slot)
            extra = ({"mstep": clusterkit.ModeMStep()} if case["strategy"] == "LaplacianEStep"
                     else {"estep": clusterkit.LaplacianEStep()} if case["strategy"] ==
                     "ModeMStep" else {})
            return _quiet_fit(Clusterer(case["n_clusters"], random_state=0, **extra,
                                        **{kind: owner(**{name: v})}), X, weights)
    outcome = _outcomes(lambda: fit(value))
    if outcome[0] == "unexpected":
        return outcome[:2]
    if valid:
        return outcome[:2]
    if outcome[0] == "ok":
        return "wrong", f"{name}={value!r} accepted"
    if name not in outcome[1]:
        return "wrong", f"{name}={value!r} refused without naming it: {outcome[1]}"
    return outcome[:2]


CHECKS = {"chunked": _check_chunked, "pruning": _check_pruning, "weights": _check_weights,
          "refine": _check_refine, "index": _check_index, "params": _check_params}


def run_case(case, folder):
    """('ok' | 'error' | 'unexpected' | 'wrong', detail), in the worker."""
    X, weights, init = make_data(case)
    if case["kind"] == "weights" and weights is None:
        weights = np.ones(len(X))
    try:
        return CHECKS[case["kind"]](case, X, weights, init, folder)
    except Exception:  # noqa: BLE001 - a failure of the check itself is a finding too
        return "unexpected", traceback.format_exc(limit=6)


def tally_key(case):
    """The row of the results table a case counts in."""
    if case["kind"] in ("chunked", "weights", "refine", "pruning") and case.get(
            "container", "array") != "array":
        return f"{case['kind']} ({case['container']})"
    return case["kind"]



def notes(seed, timeout):
    """The notes of the promises' section of RESULTS.md."""
    return [f"Inputs of seed {seed}, timeout {timeout:g} s per input, each in a worker process "
            "(restarted after a crash); dask arrays computed by dask's synchronous scheduler "
            "there; memmaps read in row blocks, as if larger than the memory.",
            "Kinds (`benchmarks/_fuzz_promises.py` says what each checks, and where the docs "
            "promise it): `chunked` (presets on all the rows of dask arrays and memmaps = in "
            "memory), `pruning` (`prune` against `prune=None`, every step), `weights` "
            "(weights times 2**-60 to 2**100: bit for bit), `refine` (Breathing and "
            "best_quality: never worse, the refinement log, budgets, chunks = memory), "
            "`index` (IndexTraining's stop rule), `params` (declared constraints refused by "
            "name).",
            "Clear errors are compositions refused as such (a strategy that does not read "
            "chunks, ...) or hyper-parameters refused by name; wrong results are broken "
            "promises."]
