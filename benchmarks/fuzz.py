"""Fuzz every preset, ``partial_fit`` streams and the string shortcuts with extreme inputs.

Each input runs in a worker process with a time limit: a worker killed by a signal is a
crash, one over the limit a hang (the worker is then replaced). A fit must either succeed or
raise a ``ValueError``/``TypeError`` with a message; a successful fit must have finite
centres and inertia, ``labels_`` and ``predict`` must give the nearest centres (to rounding)
and ``inertia_`` must equal the weighted squared distances to the nearest centres.

The inputs cover every preset, the string shortcuts (bounded E-steps, spherical and soft
M-steps, breathing refinement included), ``partial_fit`` streams and ``partial_fit`` with
small batches after ``fit``. A third of the fits read their rows from a read-only memmap or a
dask array: those must give what the same rows give in memory (the same clear error, or the
same centres to rounding). Fits on CSR rows must give the dense fit's centres to rounding.

    python benchmarks/fuzz.py --n-inputs 2000 --seed 1 [--timeout 60] [--write]

prints the counts (per container) and the reproducer of every failure; ``--write`` puts the
counts into ``benchmarks/RESULTS.md`` (replacing the previous fuzz section).

``--mode promises`` draws other inputs (``_fuzz_promise_cases.py``), each checked against
what the docs promise (``_fuzz_promises.py``): fits on dask arrays and memmaps read in row
chunks against the fit in memory, pruning against none, weights scaled by powers of two,
refiners and their budgets, ``IndexTraining``, declared parameter constraints. Its counts
go into their own section of ``RESULTS.md`` (``fuzz.py --mode promises``).
"""
import argparse
import multiprocessing as mp
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np

KINDS = ("preset", "preset", "preset", "partial_fit", "fit_then_partial", "shortcuts")
# a third of the inputs on memmaps and dask arrays; dask and CSR mostly with the presets that
# read them (the others must refuse clearly)
CONTAINERS = {"array": 0.5, "memmap": 0.175, "dask": 0.175, "sparse": 0.15}
READERS = {"dask": ["lwcs_lloyd", "vc_gmm"],
           "sparse": ["lloyd", "elkan", "minibatch", "spherical_kmeans"]}
SCALES = (1e-30, 1e-10, 1.0, 1e10, 1e30, 1e100, 1e153)


def make_case(rng, index):
    """A random input (a plain dict of what to build, so that it prints as a reproducer)."""
    from clusterkit.presets import PRESETS
    case = {"index": index, "data_seed": int(rng.randint(2 ** 31)),
            "n_samples": int(rng.choice([1, 2, 3, 5, 10, 30, 100, 250, 500])),
            "n_features": int(rng.choice([1, 2, 3, 5, 8, 9, 16, 40])),
            "dtype": str(rng.choice(["float32", "float64"])),
            "scale": float(rng.choice(SCALES)),
            "offset": float(rng.choice([0.0, 0.0, 1.0, 1e8])),
            "data": str(rng.choice(["normal", "normal", "duplicates", "constant", "integers"])),
            "bad_rows": str(rng.choice(["none"] * 8 + ["nan", "inf"])),
            "weights": str(rng.choice(["none"] * 4 + ["random"] * 2 + ["counts"] * 2
                                      + ["zeros", "negative", "nan", "huge", "tiny"])),
            "n_clusters": int(rng.choice([1, 2, 3, 5, 8, 20])),
            "random_state": int(rng.randint(1000)),
            "kind": str(rng.choice(KINDS)),
            "container": str(rng.choice(list(CONTAINERS), p=list(CONTAINERS.values())))}
    if case["container"] == "dask" or (case["container"] == "sparse"
                                       and case["kind"] == "shortcuts"):
        case["kind"] = "preset"  # streams of dask arrays are not a thing; shortcuts are dense
    if rng.uniform() < 0.85:  # mostly a valid number of clusters
        case["n_clusters"] = min(case["n_clusters"], case["n_samples"])
    if case["dtype"] == "float32" and case["scale"] > 1e30 and rng.uniform() < 0.8:
        case["scale"] = 1e15  # float32 data of 1e100 are refused as inf: try fewer
    odd = {}
    if rng.uniform() < 0.3:
        odd["max_iter"] = int(rng.choice([1, 2, 5]))
    if rng.uniform() < 0.2:
        odd["tol"] = float(rng.choice([0.0, 1e-12, 1.0]))
    if rng.uniform() < 0.2:
        odd["n_threads"] = int(rng.choice([1, 2, 3, 10 ** 5]))
    if case["kind"] == "preset":
        readers = READERS.get(case["container"])
        case["preset"] = str(rng.choice(readers if readers and rng.uniform() < 0.7
                                        else PRESETS))
        if case["preset"] in ("minibatch", "sbe") and rng.uniform() < 0.5:
            odd["batch_size"] = int(rng.choice([1, 2, 7]))
        if case["preset"].startswith(("var_", "vc_")) and rng.uniform() < 0.5:
            odd["G"] = int(rng.choice([1, 2, 3, 50]))
        if case["preset"] in ("lwcs_lloyd", "vc_gmm", "best_quality") and rng.uniform() < 0.5:
            odd["coreset_size"] = int(rng.choice([1, 7, 100, 300]))
        if case["preset"] == "vc_gmm" and rng.uniform() < 0.5:
            odd.update(chain_length=int(rng.choice([1, 2, 20])),
                       n_explore=int(rng.choice([0, 1, 3])),
                       n_init_esteps=int(rng.choice([0, 2])),
                       init=str(rng.choice(["auto", "exact", "random"])))
        if case["preset"] == "nmbatch" and rng.uniform() < 0.5:
            odd.update(initial_batch=int(rng.choice([1, 16, 160])),
                       rho=float(rng.choice([0.0, 1.0, 10.0])),
                       spread=str(rng.choice(["deviation", "standard_error"])))
        if rng.uniform() < 0.15:
            odd["n_init"] = int(rng.choice([2, 3]))
        if case["preset"].startswith("slk") and rng.uniform() < 0.5:
            odd["n_neighbors"] = int(rng.choice([1, 2, 10]))
            odd["lam"] = float(rng.choice([0.0, 0.5, 5.0]))
    elif case["kind"] in ("partial_fit", "fit_then_partial"):
        case["preset"] = str(rng.choice(READERS["sparse"]))
        case["n_batches"] = int(rng.choice([1, 2, 4, 7]))
    else:
        case["strings"] = {
            "seed": str(rng.choice(["k-means++", "afkmc2", "random"])),
            "estep": str(rng.choice(["full", "elkan", "yinyang", "bounded", "truncated",
                                     "partial"])),
            "mstep": str(rng.choice(["hard", "hard", "soft", "spherical"])),
            "schedule": str(rng.choice(["full", "minibatch", "nmbatch"])),
            "refine": str(rng.choice(["none", "none", "breathing"])),
        }
    case["params"] = odd
    return case


def make_data(case):
    rng = np.random.RandomState(case["data_seed"])
    n, d = case["n_samples"], case["n_features"]
    if case["data"] == "constant":
        X = np.full((n, d), rng.normal())
    elif case["data"] == "integers":
        X = rng.randint(0, 3, size=(n, d)).astype(float)
    else:
        X = rng.normal(size=(n, d))
        if case["data"] == "duplicates":
            X = X[rng.randint(0, max(1, n // 4), n)]
    with np.errstate(over="ignore"):
        X = (X * case["scale"] + case["offset"] * case["scale"]).astype(case["dtype"])
    if case["bad_rows"] != "none" and n > 1:
        X[rng.randint(n)] = np.nan if case["bad_rows"] == "nan" else np.inf
    weights = {"none": None,
               "random": rng.exponential(size=n),
               "zeros": (rng.uniform(size=n) < 0.5).astype(float),
               "counts": rng.poisson(1.0, size=n).astype(float),  # integers, zeros among them
               "negative": rng.normal(size=n),
               "nan": np.where(rng.uniform(size=n) < 0.1, np.nan, 1.0),
               "huge": np.full(n, 1e300),
               "tiny": np.full(n, 1e-300)}[case["weights"]]
    return X, weights


def containers(case, X, weights, folder):
    """The rows as the case fits them: in memory, a read-only memmap, a dask array with random
    row chunks, or CSR."""
    if case["container"] == "memmap":
        path = os.path.join(folder, f"case{case['index']}.npy")
        np.save(path, X)
        return np.load(path, mmap_mode="r"), weights
    if case["container"] == "dask":
        import dask.array as da
        rng = np.random.RandomState(case["data_seed"] + 1)
        rows = int(rng.randint(1, max(2, len(X)) + 1))
        wd = None if weights is None else da.from_array(weights, chunks=rows)
        return da.from_array(X, chunks=(rows, X.shape[1])), wd
    if case["container"] == "sparse":
        import scipy.sparse as sp
        return sp.csr_matrix(np.where(np.abs(X) < np.abs(X).max(initial=0) * 0.3, 0, X)
                             if np.all(np.isfinite(X)) else X), weights
    return X, weights


def build(case):
    from clusterkit import Clusterer, presets
    p = dict(case["params"])
    if case["kind"] == "shortcuts":
        return Clusterer(case["n_clusters"], random_state=case["random_state"],
                         **case["strings"], **p)
    return getattr(presets, case["preset"])(case["n_clusters"],
                                            random_state=case["random_state"], **p)


def is_spherical(model):
    mstep = model.mstep
    return mstep == "spherical" or type(mstep).__name__ == "SphericalMStep"


def check(model, X, sample_weight, labels=None):
    """Return None if the fitted model is consistent, else what is wrong. ``labels``: the
    model's ``labels_`` for ``X`` (checked as ``predict``'s)."""
    centers = np.asarray(model.cluster_centers_)
    if is_spherical(model):  # a spherical model clusters the rows scaled to unit norm
        X = X / np.linalg.norm(X.astype(np.float64), axis=1, keepdims=True).astype(X.dtype)
    if not np.all(np.isfinite(centers)):
        return "non-finite centres"
    if not np.isfinite(float(model.inertia_)):
        return f"inertia_={model.inertia_}"
    X64, c64 = X.astype(np.float64), centers.astype(np.float64)
    d2 = np.maximum(((X64 ** 2).sum(1)[:, None] - 2 * X64 @ c64.T + (c64 ** 2).sum(1)), 0)
    direct = ((X64[:, None, :] - c64[None]) ** 2).sum(-1) if X.size * len(c64) < 4e6 else d2
    nearest = direct.min(axis=1)
    eps = float(np.finfo(X.dtype).eps)
    # rounding of the kernel's distances: relative to the squared norms involved
    slack = 64 * (X.shape[1] + 2) * eps * ((X64 ** 2).sum(1) + (c64 ** 2).sum(1).max()
                                           + nearest) + 1e-300
    if hasattr(model, "soft_labels_"):  # SLK's labels_ are its assignments, not nearest modes
        labels = None
    for name, given in (("predicted labels", model.predict(X)), ("labels_", labels)):
        if given is None:
            continue
        chosen = direct[np.arange(len(X)), np.asarray(given)]
        wrong = np.flatnonzero(chosen > nearest + slack)
        if wrong.size:
            return f"{wrong.size} {name} not the nearest centre (first row {wrong[0]})"
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if hasattr(model, "soft_labels_"):  # SLK labels by assignment (its inertia_ uses them)
        nearest = direct[np.arange(len(X)), model.labels_]
    expected = float(np.dot(w, nearest))
    # below the dtype's smallest normal number a kernel's distances are rounding noise
    tolerance = (float(np.dot(w, slack)) + 1e-6 * expected
                 + float(np.finfo(X.dtype).tiny) * float(w.sum()))
    if abs(float(model.inertia_) - expected) > tolerance:
        return f"inertia_={float(model.inertia_):.6g} but the centres give {expected:.6g}"
    return None


def fit_case(case, X, sample_weight, rows=None):
    """The fitted model and its problem (None if consistent); raises what the fit raises.
    ``rows``: ``X`` as an in-memory array, for the checks (``X`` itself by default)."""
    rows = X if rows is None else rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build(case)
        if case["kind"] in ("partial_fit", "fit_then_partial"):
            if case["kind"] == "fit_then_partial":  # then batches of fewer than C rows
                model.fit(X, sample_weight=sample_weight)
                size = max(1, model.n_clusters - 1)
                parts = np.array_split(np.arange(X.shape[0]), max(1, -(-X.shape[0] // size)))
            else:
                parts = np.array_split(np.arange(X.shape[0]), case["n_batches"])
            for part in parts:
                if len(part):
                    weight = None if sample_weight is None else sample_weight[part]
                    model.partial_fit(X[part], sample_weight=weight)
                    batch = rows[part]  # labels_ and inertia_ are those of the last batch
            return model, check(model, batch, weight, model.labels_)
        model.fit(X, sample_weight=sample_weight)
        return model, check(model, rows, _in_memory(sample_weight), _in_memory(model.labels_))


def _in_memory(values):
    """A dask array computed (labels_ and weights of a dask fit), anything else unchanged."""
    return values.compute() if hasattr(values, "compute") else values


def _outcome(call):
    """('ok' | 'error' | 'unexpected' | 'wrong', detail, model or None)."""
    try:
        model, problem = call()
    except (ValueError, TypeError) as error:
        if not str(error).strip():
            return "unexpected", f"{type(error).__name__} without a message", None
        return "error", f"{type(error).__name__}: {str(error).splitlines()[0]}", None
    except BaseException:  # noqa: BLE001 - every other exception is a finding
        return "unexpected", traceback.format_exc(limit=4), None
    if problem is not None:
        return "wrong", problem, model
    return "ok", "", model


def rounding_slack(X, centers):
    """Per row, the rounding of squared distances computed as ||x||^2 - 2 x.c + ||c||^2."""
    X64, c64 = X.astype(np.float64), np.asarray(centers, np.float64)
    eps = float(np.finfo(X.dtype).eps)
    return 64 * (X.shape[1] + 2) * eps * ((X64 ** 2).sum(1) + (c64 ** 2).sum(1).max())


def same_error(a, b, X, sample_weight):
    """None if two fits of the same rows reach the same error to the rounding of uncentred
    distances (a CSR fit computes them so; its dense twin centres the rows first, so the two
    may settle differently only where distances differ by less than that), else how not."""
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    errors, slack = [], 0.0
    for model in (a, b):
        c = np.asarray(model.cluster_centers_, np.float64)
        d2 = ((X.astype(np.float64)[:, None, :] - c[None]) ** 2).sum(-1).min(1)
        errors.append(float(w @ d2))
        slack += float(w @ rounding_slack(X, c))
    if abs(errors[0] - errors[1]) > slack + 1e-6 * max(errors):
        return f"errors {errors[0]:.6g} and {errors[1]:.6g} (rounding {slack:.3g})"
    return None


def same_model(a, b, dtype):
    """None if two fits of the same rows agree to rounding, else how they differ."""
    ca, cb = np.asarray(a.cluster_centers_, np.float64), np.asarray(b.cluster_centers_, np.float64)
    if ca.shape != cb.shape:
        return f"centres of shape {ca.shape} and {cb.shape}"
    scale = max(np.abs(ca).max(initial=0), np.abs(cb).max(initial=0), 1e-300)
    tol = 1e3 * float(np.finfo(dtype).eps) * scale
    # as sets: with n_init, runs that end at the same centres in another order tie to
    # rounding, and rounding may pick either
    gap = np.abs(ca[:, None, :] - cb[None, :, :]).max(axis=2)
    worst = max(gap.min(axis=1).max(initial=0), gap.min(axis=0).max(initial=0))
    if worst > tol:
        return f"centres differ by {worst:.3g} (scale {scale:.3g})"
    return None


# what a composition that cannot read a container says (a clear refusal, not a wrong result)
# (and sparse rows, never centred, whose squared norms a dtype cannot hold)
REFUSALS = {"sparse": ("cannot take sparse X", "(sparse rows, not centred)"),
            "dask": ("dask array",), "memmap": ("memmap",)}


def run_case(case, folder):
    """('ok' | 'error' | 'unexpected' | 'wrong', detail), in the worker."""
    if case.get("mode") == "promises":
        import _fuzz_promises
        return _fuzz_promises.run_case(case, folder)
    X, sample_weight = make_data(case)
    data, weights = containers(case, X, sample_weight, folder)
    rows = data.toarray() if case["container"] == "sparse" else X
    outcome, detail, model = _outcome(lambda: fit_case(case, data, weights, rows))
    if case["container"] == "array" or outcome in ("unexpected", "wrong"):
        return outcome, detail
    # the same rows in memory (dense): the same clear error, or the same model to rounding
    reference, ref_detail, ref_model = _outcome(lambda: fit_case(case, rows, sample_weight))
    if outcome == "error" and reference != "error" and any(
            refusal in detail for refusal in REFUSALS[case["container"]]):
        return outcome, detail  # a composition that does not take this container, said so
    if (outcome == "error") != (reference == "error"):
        return "wrong", (f"{case['container']}: {outcome} {detail[:80]!r}, in memory: "
                         f"{reference} {ref_detail[:80]!r}")
    # Exact distance ties (duplicated, constant or integer rows) break by rounding: where the
    # container's sums round differently from memory's (a dask array's chunks are reduced
    # in another order; CSR rows are not centred), either fit may take either side, and the
    # runs then part. Those fits are checked for consistency only.
    ties = case["data"] != "normal" and case["container"] in ("dask", "sparse")
    if outcome == "ok" and reference == "ok" and not ties:
        if case["container"] == "sparse":
            differs = same_error(model, ref_model, rows, sample_weight)
        else:
            differs = same_model(model, ref_model, X.dtype)
        if differs:
            return "wrong", f"{case['container']} fit differs from the in-memory fit: {differs}"
    return outcome, detail


#: Address space of a worker: an input that would allocate more fails with a MemoryError (an
#: unexpected exception) instead of taking the memory of a shared machine.
WORKER_MEMORY = 6 << 30


def _worker(conn):
    import resource
    import tempfile
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (the promises' module)
    import dask
    import clusterkit  # noqa: F401 - import once, before the first case
    dask.config.set(scheduler="synchronous")  # the chunks in this process, one at a time
    conn.send("ready")
    with tempfile.TemporaryDirectory() as folder:
        while True:
            case = conn.recv()
            if case is None:
                return
            conn.send(run_case(case, folder))


class Worker:
    def __init__(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        if not self.conn.poll(300):
            raise RuntimeError("the worker did not start")
        self.conn.recv()

    def run(self, case, timeout):
        self.conn.send(case)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                pass
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
            return "hang", f"no answer within {timeout} s"
        self.proc.join()
        return "crash", f"worker exit code {self.proc.exitcode}"

    def close(self):
        if self.proc.is_alive():
            self.conn.send(None)
            self.proc.join(10)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-inputs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the inputs (default: from the clock, printed)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--mode", choices=["robustness", "promises"], default="robustness",
                        help="robustness: extreme inputs, containers against memory; "
                             "promises: each input checked against what the docs promise "
                             "(_fuzz_promise_cases.py)")
    parser.add_argument("--write", action="store_true",
                        help="write the counts into RESULTS.md (replacing its fuzz section)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 2 ** 31
    rng = np.random.RandomState(seed)
    counts = dict.fromkeys(["ok", "error", "crash", "hang", "unexpected", "wrong"], 0)
    by_container = {}
    failures, errors = [], {}
    if args.mode == "promises":
        import _fuzz_promise_cases
        import _fuzz_promises
    worker = Worker()
    start = time.time()
    for index in range(args.n_inputs):
        if args.mode == "promises":
            case = _fuzz_promise_cases.make_case(rng, index)
            key = _fuzz_promise_cases.tally_key(case)
        else:
            case = make_case(rng, index)
            key = case["container"]
        outcome, detail = worker.run(case, args.timeout)
        counts[outcome] += 1
        tally = by_container.setdefault(key, dict.fromkeys(counts, 0))
        tally[outcome] += 1
        if outcome == "error":  # tally the messages, numbers left out
            kind = "".join(ch for ch in detail if not ch.isdigit())[:90]
            errors[kind] = errors.get(kind, 0) + 1
        if outcome not in ("ok", "error"):
            failures.append((outcome, detail, case))
            print(f"[{index}] {outcome}: {detail.strip().splitlines()[-1]}\n    {case}",
                  flush=True)
        if outcome in ("crash", "hang"):
            worker = Worker()
        if (index + 1) % 100 == 0:
            print(f"{index + 1} inputs, {time.time() - start:.0f} s: {counts}", flush=True)
    worker.close()
    summary = (f"inputs {args.n_inputs} (seed {seed}), correct fits {counts['ok']}, clear errors "
               f"{counts['error']}, crashes {counts['crash']}, hangs {counts['hang']}, "
               f"unexpected exceptions {counts['unexpected']}, wrong results {counts['wrong']}")
    print(summary)
    print("\nby kind:" if args.mode == "promises" else "\nby container:")
    for container, tally in sorted(by_container.items()):
        print(f"{container:{18 if args.mode == 'promises' else 8}s} "
              f"{sum(tally.values()):6d} inputs: {tally}")
    print("\nclear errors, by message:")
    for kind, n in sorted(errors.items(), key=lambda item: -item[1]):
        print(f"{n:6d}  {kind}")
    for outcome, detail, case in failures:
        print(f"\n{outcome}: {detail}\nreproducer: {case}")
    if args.write:
        from _common import command_note, format_table, publish
        outcomes = ["ok", "error", "crash", "hang", "unexpected", "wrong"]
        names = ["correct fits", "clear errors", "crashes", "hangs", "unexpected exceptions",
                 "wrong results"]
        rows = [[container, sum(tally.values())] + [tally[o] for o in outcomes]
                for container, tally in sorted(by_container.items())]
        rows.append(["all", args.n_inputs] + [counts[o] for o in outcomes])
        if args.mode == "promises":
            publish("fuzz.py --mode promises", format_table(["kind", "inputs"] + names, rows),
                    _fuzz_promises.notes(seed, args.timeout, failures) + [command_note()],
                    True)
            return 0 if not failures else 1
        notes = [f"Inputs of seed {seed}, timeout {args.timeout:g} s per input, each input in "
                 "a worker process (restarted after a crash); dask arrays computed by dask's "
                 "synchronous scheduler in that process.",
                 "Containers: `memmap` and `dask` fits are compared with the in-memory fit of "
                 "the same rows (same clear error, or the same centres to rounding); `sparse` "
                 "fits (CSR, entries below 0.3 of the largest zeroed) with the dense fit (same "
                 "error to the rounding of uncentred distances). On data with exact distance "
                 "ties (duplicated, constant, integer rows) rounding decides the ties, so dask "
                 "and sparse fits there are checked for consistency only. A composition that "
                 "does not read a container must refuse it clearly. `array` includes "
                 "the `partial_fit` streams, `fit` followed by `partial_fit` on batches of "
                 "fewer than C rows, and the string shortcuts (bounded E-steps, spherical and "
                 "soft M-steps, breathing).",
                 "A fit is correct when its centres and inertia are finite, `labels_` and "
                 "`predict` give the nearest centre of every row (to rounding) and the inertia "
                 "is that of the centres. Clear errors are `ValueError`/`TypeError`s with a "
                 "message for inputs that cannot be computed in the working precision or are "
                 "invalid; the script prints them by message.",
                 command_note()]
        publish("fuzz.py", format_table(["container", "inputs"] + names, rows), notes, True)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
