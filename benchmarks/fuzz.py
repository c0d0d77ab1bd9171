"""Fuzz every preset, ``partial_fit`` streams and the string shortcuts with extreme inputs.

Each input runs in a worker process with a time limit: a worker killed by a signal is a
crash, one over the limit a hang (the worker is then replaced). A fit must either succeed or
raise a ``ValueError``/``TypeError`` with a message; a successful fit must have finite
centres and inertia, ``predict`` must give the nearest centres (to rounding) and
``inertia_`` must equal the weighted squared distances to the nearest centres.

    python benchmarks/fuzz.py --n-inputs 1000 --seed 1 [--timeout 60] [--append]

prints the counts and the reproducer of every failure; ``--append`` adds the counts to
``benchmarks/RESULTS.md``.
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

KINDS = ("preset", "preset", "preset", "partial_fit", "shortcuts")
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
            "weights": str(rng.choice(["none"] * 4 + ["random"] * 2
                                      + ["zeros", "negative", "nan", "huge", "tiny"])),
            "n_clusters": int(rng.choice([1, 2, 3, 5, 8, 20])),
            "random_state": int(rng.randint(1000)),
            "kind": str(rng.choice(KINDS))}
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
        case["preset"] = str(rng.choice(PRESETS))
        if case["preset"] in ("minibatch", "sbe") and rng.uniform() < 0.5:
            odd["batch_size"] = int(rng.choice([1, 2, 7]))
        if case["preset"].startswith(("var_", "vc_")) and rng.uniform() < 0.5:
            odd["G"] = int(rng.choice([1, 2, 3, 50]))
        if case["preset"].startswith("slk") and rng.uniform() < 0.5:
            odd["n_neighbors"] = int(rng.choice([1, 2, 10]))
            odd["lam"] = float(rng.choice([0.0, 0.5, 5.0]))
    elif case["kind"] == "partial_fit":
        case["preset"] = str(rng.choice(["minibatch", "lloyd", "elkan"]))
        case["n_batches"] = int(rng.choice([1, 2, 4]))
    else:
        case["strings"] = {
            "seed": str(rng.choice(["k-means++", "afkmc2", "random"])),
            "estep": str(rng.choice(["full", "elkan", "truncated", "partial"])),
            "mstep": str(rng.choice(["hard", "soft"])),
            "schedule": str(rng.choice(["full", "minibatch", "nmbatch"])),
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
               "negative": rng.normal(size=n),
               "nan": np.where(rng.uniform(size=n) < 0.1, np.nan, 1.0),
               "huge": np.full(n, 1e300),
               "tiny": np.full(n, 1e-300)}[case["weights"]]
    return X, weights


def build(case):
    from clusterkit import Clusterer, presets
    p = dict(case["params"])
    if case["kind"] == "shortcuts":
        return Clusterer(case["n_clusters"], random_state=case["random_state"],
                         **case["strings"], **p)
    return getattr(presets, case["preset"])(case["n_clusters"],
                                            random_state=case["random_state"], **p)


def check(model, X, sample_weight):
    """Return None if the fitted model is consistent, else what is wrong."""
    centers = np.asarray(model.cluster_centers_)
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
    labels = model.predict(X)
    chosen = direct[np.arange(len(X)), labels]
    wrong = np.flatnonzero(chosen > nearest + slack)
    if wrong.size:
        return f"{wrong.size} predicted labels not the nearest centre (first row {wrong[0]})"
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if hasattr(model, "soft_labels_"):  # SLK labels by assignment (its inertia_ uses them)
        nearest = direct[np.arange(len(X)), model.labels_]
    expected = float(np.dot(w, nearest))
    tolerance = float(np.dot(w, slack)) + 1e-6 * expected
    if abs(float(model.inertia_) - expected) > tolerance:
        return f"inertia_={float(model.inertia_):.6g} but the centres give {expected:.6g}"
    return None


def run_case(case):
    """('ok' | 'error' | 'unexpected' | 'wrong', detail), in the worker."""
    X, sample_weight = make_data(case)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = build(case)
            if case["kind"] == "partial_fit":
                for part in np.array_split(np.arange(len(X)), case["n_batches"]):
                    if len(part):
                        weight = None if sample_weight is None else sample_weight[part]
                        model.partial_fit(X[part], sample_weight=weight)
                        batch = X[part]  # labels_ and inertia_ are those of the last batch
                problem = check(model, batch, weight)
            else:
                model.fit(X, sample_weight=sample_weight)
                problem = check(model, X, sample_weight)
    except (ValueError, TypeError) as error:
        if not str(error).strip():
            return "unexpected", f"{type(error).__name__} without a message"
        return "error", f"{type(error).__name__}: {str(error).splitlines()[0]}"
    except BaseException:  # noqa: BLE001 - every other exception is a finding
        return "unexpected", traceback.format_exc(limit=4)
    if problem is not None:
        return "wrong", problem
    return "ok", ""


def _worker(conn):
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    import clusterkit  # noqa: F401 - import once, before the first case
    conn.send("ready")
    while True:
        case = conn.recv()
        if case is None:
            return
        conn.send(run_case(case))


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
    parser.add_argument("--append", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int(time.time()) % 2 ** 31
    rng = np.random.RandomState(seed)
    counts = dict.fromkeys(["ok", "error", "crash", "hang", "unexpected", "wrong"], 0)
    failures, errors = [], {}
    worker = Worker()
    start = time.time()
    for index in range(args.n_inputs):
        case = make_case(rng, index)
        outcome, detail = worker.run(case, args.timeout)
        counts[outcome] += 1
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
    print("\nclear errors, by message:")
    for kind, n in sorted(errors.items(), key=lambda item: -item[1]):
        print(f"{n:6d}  {kind}")
    for outcome, detail, case in failures:
        print(f"\n{outcome}: {detail}\nreproducer: {case}")
    if args.append:
        import clusterkit
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
        with open(path, "a") as out:
            out.write(f"\n## fuzz.py ({time.strftime('%Y-%m-%d')})\n\n"
                      f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                      f"{platform.python_version()}, numpy {np.__version__}, clusterkit "
                      f"{clusterkit.__version__}, OpenMP {clusterkit.openmp_enabled()}, "
                      f"timeout {args.timeout:g} s, one worker process.\n\n{summary}.\n")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
