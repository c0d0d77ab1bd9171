"""The checks of ``fuzz.py --mode promises``: each input (``_fuzz_promise_cases.py`` draws
them and says what each kind checks) fitted as the docs describe, and ``'wrong'`` with what
differs where the result breaks their promise."""
import contextlib
import os
import traceback
import types
import warnings

import numpy as np

from _fuzz_promise_cases import CHUNK_PRESETS, ONE_CHUNK_BITS, make_data
from fuzz import _in_memory, _outcome, check, is_spherical, rounding_slack


@contextlib.contextmanager
def _row_blocks(X, rows):
    """Memmaps read in blocks of ``rows`` rows, as if larger than the memory."""
    from clusterkit._data import blocks, chunked
    saved = chunked.exceeds_budget, blocks.MEMMAP_BLOCK_BYTES
    chunked.exceeds_budget = lambda X: True
    blocks.MEMMAP_BLOCK_BYTES = rows * X.shape[1] * X.dtype.itemsize
    try:
        yield
    finally:
        chunked.exceeds_budget, blocks.MEMMAP_BLOCK_BYTES = saved


def _container(case, X, weights, folder):
    """``X`` and the weights as the case's container holds them, and what makes a context
    to fit them in."""
    rows = max(min(case["rows"], len(X)), -(-len(X) // 32))  # (at most 32 chunks)
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
    # (not the warning that fewer distinct clusters than n_clusters were found)
    model.stopped_ = any(issubclass(w.category, ConvergenceWarning)
                         and "did not converge" in str(w.message) for w in caught)
    return model


def _computed(values):
    return np.asarray(_in_memory(values))


def _qe(X, weights, centers):
    """The weighted quantization error of ``centers`` (float64, direct distances)."""
    X = X.astype(np.float64)
    c = np.asarray(centers, np.float64)
    d2 = ((X[:, None, :] - c[None]) ** 2).sum(-1).min(1)
    return float(d2 @ (np.ones(len(X)) if weights is None else weights))


def _same_fit(a, b, X, weights=None, bits=False, steps=True):
    """None if fit ``a`` ends where ``b`` does (``steps``: changing as many labels at each
    step), else how not."""
    if a.n_iter_ != b.n_iter_:
        return f"n_iter_ {a.n_iter_} and {b.n_iter_}"
    if steps and [h["n_changed"] for h in a.history_] != [h["n_changed"] for h in b.history_]:
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
    # (spherical centres are unit vectors: their scale is the unit rows', not the data's)
    rows = X / np.linalg.norm(X, axis=1, keepdims=True) if is_spherical(a) else X
    scale = max(float(np.abs(rows).max()), 1e-300)
    gap = float(np.abs(ca.astype(np.float64) - cb).max(initial=0))
    if gap > rtol * scale:
        return f"centres differ by {gap:.3g} (data scale {scale:.3g})"
    ia, ib = float(a.inertia_), float(b.inertia_)
    # to 1e-6, or where the distances themselves are rounding (||x||^2 - 2 x.c + ||c||^2
    # of unit rows, float32), to their rounding
    slack = float(rounding_slack(rows, cb) @ (np.ones(len(X)) if weights is None else weights))
    if abs(ia - ib) > 1e-6 * max(abs(ia), abs(ib)) + slack + 1e-300:
        return f"inertia {ia!r} and {ib!r} (rounding {slack:.3g})"
    return _labels_differ(rows, ca, la, lb)


def _labels_differ(rows, centers, la, lb):
    """None if the labels ``la`` and ``lb`` of ``rows`` differ only at near-ties of
    ``centers``, else how many differ."""
    wrong = np.flatnonzero(la != lb)
    if wrong.size:
        X64, c = rows[wrong].astype(np.float64), np.asarray(centers, np.float64)
        da = ((X64 - c[la[wrong]]) ** 2).sum(1)
        db = ((X64 - c[lb[wrong]]) ** 2).sum(1)
        slack = 1e3 * float(np.finfo(rows.dtype).eps) * ((X64 ** 2).sum(1) + da + 1e-300)
        if np.any(np.abs(da - db) > slack):
            return f"{wrong.size} labels differ, not at near-ties"
    return None


def _parted_at_tie(X, fits, steps, init):
    """Whether two fits parted at a near-tie, which the docs allow (rounding decides it): the
    centres that the first step where they part (other changed labels or centres) assigned
    to agree to rounding, and a row lies within rounding of two of them."""
    if len(steps[0]) != len(fits[0].history_) or len(steps[1]) != len(fits[1].history_):
        return False  # (several runs)
    tol = (1e-4 if X.dtype == np.float32 else 1e-9) * max(float(np.abs(X).max()), 1e-300)
    changed = [[h["n_changed"] for h in fit.history_] for fit in fits]
    t = next((t for t in range(min(map(len, steps))) if changed[0][t] != changed[1][t]
              or np.abs(steps[0][t] - steps[1][t].astype(np.float64)).max() > tol), None)
    used = init if t == 0 else None if t is None else steps[0][t - 1]
    if used is None or (t > 0 and np.abs(used - steps[1][t - 1].astype(np.float64)).max() > tol):
        return False
    rows, c = X.astype(np.float64), np.asarray(used, np.float64)
    if is_spherical(fits[0]):
        rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    d2 = np.sort((rows ** 2).sum(1)[:, None] - 2 * rows @ c.T + (c ** 2).sum(1), axis=1)
    slack = 1e3 * float(np.finfo(X.dtype).eps) * ((rows ** 2).sum(1) + (c ** 2).sum(1).max())
    return d2.shape[1] > 1 and bool(np.any(d2[:, 1] - d2[:, 0] <= slack))


def _with_steps():
    """A callback recording every step's centres, and the list it fills."""
    steps = []
    return steps, lambda info: steps.append(np.array(info["centers"])) and False


def _check_chunked(case, X, weights, init, folder):
    data, w, context = _container(case, X, weights, folder)
    steps, on_chunks = _with_steps()
    ref_steps, in_memory = _with_steps()
    outcome = _outcomes(lambda: _quiet_fit(_model(case, init), data, w, context, on_chunks))
    reference = _outcomes(lambda: _quiet_fit(_model(case, init), X, weights, callback=in_memory))
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
    if problem and not bits and _parted_at_tie(X, (model, ref), (steps, ref_steps), init):
        return "ok", ""  # (both fits consistent, see check)
    if problem is None and case["container"] == "dask":  # a dask array in, one out
        rows = X / np.linalg.norm(X, axis=1, keepdims=True) if is_spherical(model) else X
        problem = _labels_differ(rows, model.cluster_centers_, _computed(model.predict(data)),
                                 model.predict(X))
        problem = problem and f"predict: {problem}"
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
    if problem and not bits and _parted_at_tie(X, (pruned[2], plain[2]),
                                               (pruned_steps, plain_steps), init):
        return "ok", ""
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
    # Each run is refined, then the runs compete (docs/quality.rst); the rounds draw from
    # the fit's random state, so with n_init > 1 only the first run starts where the
    # unrefined fit's does: the refinement is checked on that run alone (n_init=1), and
    # the fit of n_init runs against it (n_init keeps the best final objective).
    n_init = case["fit"].get("n_init", 1)
    first = dict(case, fit={k: v for k, v in case["fit"].items() if k != "n_init"})
    refined = _outcomes(lambda: _quiet_fit(_model(case, init), X, weights))
    alone = refined if n_init == 1 else _outcomes(
        lambda: _quiet_fit(_model(first, init), X, weights))
    plain = _outcomes(lambda: _quiet_fit(_model(first, init, variant=False), X, weights))
    if refined[0] != "ok" or alone[0] != "ok" or plain[0] != "ok":
        if refined[0] == alone[0] == plain[0] == "error":
            return refined[:2]
        return "wrong", f"refined: {refined[0]} {refined[1]!r}; unrefined: {plain[0]} " \
                        f"{plain[1]!r}" + ("" if n_init == 1 else
                                           f"; first run: {alone[0]} {alone[1]!r}")
    model, unrefined = refined[2], plain[2]
    problem = check(model, X, weights, model.labels_)
    if problem:
        return "wrong", problem
    if n_init > 1 and case["refiner"]["time_budget"] is None:  # (else run 1 may differ)
        kept, run1 = model.objective_, alone[2].objective_
        maximize = case["preset"] == "breathing" and case["mstep"] == "soft"
        if (kept < run1) if maximize else (kept > run1):
            return "wrong", (f"n_init={n_init} kept final objective {kept:.10g}, its first "
                             f"run's {run1:.10g}")
    fit1 = alone[2]
    eps = float(np.finfo(X.dtype).eps)
    qe, qe0 = _qe(X, weights, fit1.cluster_centers_), _qe(X, weights, unrefined.cluster_centers_)
    slack = 64 * (X.shape[1] + 2) * eps * (qe0 + float(np.abs(X).max()) ** 2 * (
        len(X) if weights is None else weights.sum()) * eps)
    if qe > qe0 + slack:
        return "wrong", f"refined error {qe:.10g} above the unrefined run's {qe0:.10g}"
    problem = _log_problem(first, fit1, unrefined, qe0, qe, eps, slack)
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
        if problem:  # (two centres of one cluster tie in utility: either moves, see docs;
            # the labels' numbers then differ from that round on, not where they end)
            problem = _same_fit(_in_order_of(other, model), model, X, weights,
                                steps=False) and problem
        log, ref_log = other.refinement_log_, model.refinement_log_
        if problem is None and [r["kept"] for r in log] != [r["kept"] for r in ref_log]:
            problem = (f"rounds kept {[r['kept'] for r in log]}, in memory "
                       f"{[r['kept'] for r in ref_log]}")
        if problem is None and other.cost_.get("refinement") != model.cost_.get(
                "refinement"):
            problem = (f"cost_['refinement'] {other.cost_.get('refinement')}, in memory "
                       f"{model.cost_.get('refinement')}")
        if problem:
            return "wrong", f"{case['container']} refinement differs from memory's: {problem}"
    return "ok", ""


def _in_order_of(fit, reference):
    """``fit`` with its centres in the order of ``reference``'s nearest ones (labels renamed
    to match), or ``fit`` itself where that order is not a permutation."""
    a = np.asarray(fit.cluster_centers_, np.float64)
    b = np.asarray(reference.cluster_centers_, np.float64)
    order = ((b[:, None, :] - a[None]) ** 2).sum(-1).argmin(1)  # fit's centre for each of b
    if len(set(order.tolist())) != len(order):
        return fit
    rename = np.empty_like(order)
    rename[order] = np.arange(len(order))
    return types.SimpleNamespace(n_iter_=fit.n_iter_, inertia_=fit.inertia_, mstep=fit.mstep,
                                 cluster_centers_=np.asarray(fit.cluster_centers_)[order],
                                 labels_=rename[_computed(fit.labels_)])


def _log_problem(case, model, unrefined, qe0, qe, eps, slack):
    """What in the refinement log does not tell the rounds as the docs say, or None (errors
    compared to ``1e3 eps`` relative and the rounding ``slack`` of an error, absolute)."""
    options = case["refiner"]
    log = list(model.refinement_log_)
    if unrefined.stopped_ and log:
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
        if abs(r["objective_before"] - current) > rtol * current + slack:
            return (f"round {r['round']} starts from {r['objective_before']!r}, the error "
                    f"kept so far is {current!r}")
        if r["kept"] and r is not polish and not r["objective"] < r["objective_before"] * (
                1 - tol):
            return f"round {r['round']} kept without lowering the error by tol={tol}"
        if r["kept"]:
            current = r["objective"]
    if abs(current - qe) > rtol * qe + slack:
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


def notes(seed, timeout, failures):
    """The notes of the promises' section of RESULTS.md; ``failures``: the run's
    ``(outcome, detail, case)`` of every input that was not a fit or a clear error."""
    found = {}
    for outcome, detail, case in failures:
        what = f"{case['kind']}: {outcome}: {detail.strip().splitlines()[-1][:120]}"
        found[what] = found.get(what, 0) + 1
    return [f"Inputs of seed {seed}, timeout {timeout:g} s per input, each in a worker process "
            "(restarted after a crash); dask arrays computed by dask's synchronous scheduler "
            "there; memmaps read in row blocks, as if larger than the memory.",
            "Kinds (`benchmarks/_fuzz_promise_cases.py` says what each checks and where the "
            "docs promise it): `chunked` (presets on all the rows of dask arrays and memmaps "
            "= in memory), `pruning` (`prune` against `prune=None`, every step), `weights` "
            "(weights times 2**-60 to 2**100: bit for bit), `refine` (Breathing and "
            "best_quality: never worse, the refinement log, budgets, chunks = memory), "
            "`index` (IndexTraining's stop rule), `params` (declared constraints refused by "
            "name).",
            "Clear errors are compositions refused as such (a strategy that does not read "
            "chunks, ...) or hyper-parameters refused by name; wrong results are broken "
            "promises."] + (["What failed: " + "; ".join(
                f"{what} ({n}x)" for what, n in sorted(found.items(), key=lambda i: -i[1]))
                + "."] if found else [])
