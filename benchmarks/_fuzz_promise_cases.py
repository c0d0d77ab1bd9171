"""The inputs of ``fuzz.py --mode promises`` (``_fuzz_promises.py`` checks them against
what the docs promise).

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
    centres on chunks, the in-memory rounds. With ``n_init=2`` these are checked on the
    first run alone (``n_init=1``; the rounds draw from the fit's random state, so later
    runs start elsewhere than unrefined, docs/quality.rst), and the fit's final objective
    must be no worse than that run's.
``index``
    ``IndexTraining``: a consistent fit that stops at the first step where at most
    ``change_tol`` of the held-out rows changed cell.
``params``
    A declared hyper-parameter of a strategy set to a random value, or a preset's keyword
    to a bad one: a value the declaration refuses gives a ``ValueError``/``TypeError`` that
    names the parameter; any other value a fit or a clear error.
"""
import numpy as np

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
    if rng.uniform() < 0.1:  # (to max_iter: kept short, chunks make each step slow)
        fit.update(tol=0.0, max_iter=fit.get("max_iter", 30))
    case["fit"] = fit if kind not in ("index", "params") else {}
    if kind == "chunked":  # (tol=0 stops where rounding decides: not the same on chunks)
        fit.pop("tol", None)
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


def tally_key(case):
    """The row of the results table a case counts in."""
    if case["kind"] in ("chunked", "weights", "refine", "pruning") and case.get(
            "container", "array") != "array":
        return f"{case['kind']} ({case['container']})"
    return case["kind"]
