"""Never crash, never hang, never lie: extreme values, odd parameters, Ctrl-C, exact ties.

Each reproducer of the robustness issue gets a test; a bounded ``hypothesis`` fuzz over every
preset and ``partial_fit`` checks the general contract (``benchmarks/fuzz.py`` is its long,
process-isolated version).
"""
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from clusterkit import (Clusterer, ElkanEStep, FullEStep, SBEDecay, TruncatedEStep,
                        effective_n_threads, presets)
from clusterkit._estimator.validation import check_bandwidth, check_representable
from clusterkit._kernels import _assign, _topk
from clusterkit.presets import PRESETS

DTYPES = [np.float32, np.float64]


def _uniform(shape, seed=0):
    return np.random.RandomState(seed).uniform(-1, 1, shape)


# --- kernels stay inside their rows whatever the values (#1, #2) ---------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_features", [1, 3, 8, 12, 40])
@pytest.mark.parametrize("fill", [np.nan, np.inf])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_nearest_centre_kernels_give_indices_in_range(dtype, n_features, fill, n_threads):
    X = _uniform((300, n_features)).astype(dtype)
    for n_clusters in (1, 5, 17, 40):
        centers = np.full((n_clusters, n_features), fill, dtype=dtype)
        centers[n_clusters // 2:, 0] = 0 if n_clusters > 1 else fill  # partly finite
        for centres in (centers, np.full_like(centers, fill)):
            labels = np.full(300, -7, dtype=np.int32)
            _assign.assign_full(X, centres, labels, np.empty(300, dtype=dtype), n_threads)
            assert labels.min() >= 0 and labels.max() < n_clusters
            for n_winners in {1, min(3, n_clusters)}:
                winners = np.full((300, n_winners), -7, dtype=np.int32)
                _topk.assign_topk(X, centres, winners, np.empty((300, n_winners), dtype=dtype),
                                  n_threads)
                assert winners.min() >= 0 and winners.max() < n_clusters


def test_nan_centres_at_predict_are_refused():
    X = np.random.RandomState(0).normal(size=(1000, 16))
    model = presets.lloyd(2, random_state=0).fit(X)
    model.cluster_centers_[:] = np.nan
    with pytest.raises(ValueError, match=r"^cluster_centers_ has 32 non-finite entries; the "
                                         r"centres must be finite \(refit the model\)\.$"):
        model.predict(X)


# --- values the working precision cannot hold (#1, #5, #4, #7) -----------------------------

@pytest.mark.parametrize("make", [lambda: presets.gmm(1), lambda: presets.lloyd(1),
                                  lambda: presets.elkan(2), lambda: presets.vc_gmm(2)])
def test_summed_distances_that_overflow_are_refused(make):
    X = _uniform((500, 4)) * 1e153
    with pytest.raises(ValueError, match=r"^X's values are too large: squared distances "
                                         r"between samples \(up to 1\.\d+e\+307\) summed over a "
                                         r"total weight of 500 can overflow the largest "
                                         r"float64 \(1\.8e\+308\)\. Rescale X\.$"):
        make().fit(X)


def test_range_limit_allows_what_fits():
    X = _uniform((500, 4)) * 1e151  # 500 * 4 * (2e151)^2 * 4 = 3.2e306: fits
    model = presets.lloyd(3, random_state=0).fit(X)
    assert np.isfinite(model.inertia_) and np.all(np.isfinite(model.cluster_centers_))
    with pytest.raises(ValueError, match=r"within a factor 4 of the largest float64"):
        check_representable(np.array([[0.0], [1e154]]))
    with pytest.raises(ValueError, match=r"or pass it as float64\.$"):
        check_representable(np.array([[0.0], [1e20]], dtype=np.float32))


def test_partial_fit_refuses_summed_overflow():
    X = _uniform((500, 4)) * 1e153
    with pytest.raises(ValueError, match=r"^X's values are too large"):
        presets.minibatch(2).partial_fit(X)


def test_elkan_bounds_near_the_float32_limit():
    """#4: ElkanEStep on float64 data whose distances pass float32's range: its float32
    bounds saturate, so it gives Lloyd's labels and iterates."""
    for scale in (1e39, 1e100):
        X = np.random.RandomState(0).normal(size=(400, 5)) * scale
        elkan = presets.elkan(8, seed=X[:8]).fit(X)
        lloyd = presets.lloyd(8, seed=X[:8]).fit(X)
        np.testing.assert_array_equal(elkan.labels_, lloyd.labels_)
        np.testing.assert_array_equal(elkan.cluster_centers_, lloyd.cluster_centers_)
        assert elkan.n_iter_ == lloyd.n_iter_


def test_bandwidth_range():
    check_bandwidth(1e-20, np.float32)
    check_bandwidth(1e-60, np.float64)
    with pytest.raises(ValueError, match=r"^sigma=1e-30 is outside the range of float32: "
                                         r"2 sigma\^2 = 2e-60 must lie between 1\.18e-38 and "
                                         r"3\.4e\+38\. Rescale X and sigma together or pass X "
                                         r"as float64\.$"):
        check_bandwidth(1e-60, np.float32)
    with pytest.raises(ValueError, match=r"outside the range of float64"):
        check_bandwidth(0.0, np.float64)


def test_slk_tiny_bandwidth_in_float32():
    """#7: a clear error instead of a NaN objective."""
    X = np.random.RandomState(0).normal(size=(200, 3)).astype(np.float32)
    with pytest.raises(ValueError, match="sigma=1e-30 is outside the range of float32"):
        presets.slk_bo(4, sigma=1e-30, random_state=0).fit(X)
    assert np.isfinite(presets.slk_bo(4, sigma=1e-30, random_state=0).fit(
        X.astype(np.float64)).objective_)


# --- parameters (#3, #9) ----------------------------------------------------------------------

@pytest.mark.parametrize("n_threads", [10**5, 10**9])
def test_huge_thread_counts_are_capped(n_threads):
    X = _uniform((500, 4))
    capped = effective_n_threads(n_threads)
    assert 1 <= capped <= 4 * len(os.sched_getaffinity(0))
    model = presets.lloyd(5, n_threads=n_threads, random_state=0).fit(X)
    reference = presets.lloyd(5, n_threads=1, random_state=0).fit(X)
    np.testing.assert_array_equal(model.cluster_centers_, reference.cluster_centers_)


@pytest.mark.parametrize("n_threads,error,match", [
    (0, ValueError, "n_threads=0 must be a positive number"),
    (2.0, TypeError, "n_threads must be an integer or None, got 2.0"),
    (2 ** 40, ValueError, r"n_threads=1099511627776 is out of range\."),
])
def test_bad_thread_counts(n_threads, error, match):
    with pytest.raises(error, match=match):
        effective_n_threads(n_threads)


@pytest.mark.parametrize("make,match", [
    (lambda: presets.minibatch(3, max_passes=float("nan")),
     r"^MiniBatch: max_passes must be a number > 0; got nan\.$"),
    (lambda: Clusterer(3, schedule=SBEDecay(step=float("inf"))),
     r"^SBEDecay: step must be a finite number > 0 or None; got inf\.$"),
    (lambda: presets.nmbatch(3, rho=float("nan")),
     r"^NestedDoubling: rho must be a number >= 0; got nan\.$"),
])
def test_unusable_budgets_are_refused(make, match):
    """(An infinite mini-batch budget is allowed: max_iter passes bound it, see
    test_minibatch.test_no_budget_hangs.)"""
    with pytest.raises(ValueError, match=match):
        make().fit(_uniform((100, 2)))


# --- exact ties go to the lower index in every exact E-step ---------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_features", [2, 3, 12, 24])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_exact_ties_give_identical_runs(dtype, n_features, n_threads):
    """Integer data on a coarse grid: many points exactly between two centres. Lloyd
    (FullEStep), Elkan and TruncatedEStep(1) must agree on every label and iterate."""
    rng = np.random.RandomState(n_features)
    X = rng.randint(0, 3, size=(600, n_features)).astype(dtype)
    X[:, 0] *= 2
    seeds = X[rng.choice(600, 9, replace=False)]
    # a constructed tie: the first point is exactly between the first two seeds
    seeds[0], seeds[1] = 0, 0
    seeds[1, 0] = 2
    X[0] = 0
    X[0, 0] = 1
    fits = [Clusterer(9, seed=seeds.copy(), estep=estep, tol=0, max_iter=30,
                      n_threads=n_threads).fit(X)
            for estep in (FullEStep(), ElkanEStep(), TruncatedEStep(1))]
    first = Clusterer(9, seed=seeds.copy(), max_iter=1, n_threads=n_threads).fit(X)
    if np.unique(seeds, axis=0).shape[0] == 9:
        assert first.labels_[0] == 0  # the lower index
    for other in fits[1:]:
        np.testing.assert_array_equal(other.labels_, fits[0].labels_)
        np.testing.assert_array_equal(other.cluster_centers_, fits[0].cluster_centers_)
        assert other.n_iter_ == fits[0].n_iter_


# --- Ctrl-C (#10) -------------------------------------------------------------------------------

# The child restores Python's Ctrl-C handler: a process started with SIGINT ignored (in the
# background, under nohup, on some CI runners) inherits that, and would never see the signal.
_CHILD_PRELUDE = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
"""

# A seeder that says "start" when seeding begins, so that the signal is sent while the phase
# under test runs (not after a time that a fast or a busy machine can make too short or long).
# (It announces from ``seeding``, the method the driver calls.)
ANNOUNCING_SEEDER = """
def announcing(model):
    class Announcing(type(model.seed)):
        def seeding(self, *args, **kwargs):
            print("start", flush=True)
            return super().seeding(*args, **kwargs)
    return model.set_params(seed=Announcing(**model.seed.get_params(deep=False)))
"""


def _interrupt(code, after):
    """Run ``code`` in a new interpreter, send it SIGINT ``after`` seconds past its "start"
    line; its output (but that line) and exit status. A child that has not ended 60 s after
    the signal fails the test (``TimeoutExpired``): the phases interrupted here take many
    minutes by construction, so only a child that ignored the signal runs that long."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", _CHILD_PRELUDE + code],
                            stdout=subprocess.PIPE, text=True, env=env)
    lines = queue.Queue()  # the child's lines, read aside so that waiting for "start" can end
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout] + [lines.put("")],
                     daemon=True).start()
    try:
        before = []
        while True:
            # (a child that never announces, or ends first, fails instead of running its
            # whole fit: minutes by construction)
            line = lines.get(timeout=600)
            assert line, "the child ended without announcing its seeding"
            if line.strip() == "start":
                break
            before.append(line)
        time.sleep(after)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        out = []
        while (line := lines.get(timeout=60)):
            out.append(line)
        return "".join(before + out), proc.returncode
    finally:
        proc.kill()


# Seedings that take many minutes by construction (greedy k-means++ over 1,000,000 rows for
# 4,000 centres; AFK-MC² chains of 200,000), so that only the interruption can end them early.
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
@pytest.mark.parametrize("preset,n_samples,n_features,options", [
    ("lloyd", 1000000, 16, ""), ("vc_gmm", 400000, 100, "chain_length=200000")])
def test_ctrl_c_in_seeding_stops_quickly(preset, n_samples, n_features, options):
    code = ANNOUNCING_SEEDER + textwrap.dedent(f"""
        import sys, numpy as np
        from clusterkit import presets
        X = np.random.RandomState(0).normal(size=({n_samples}, {n_features})).astype(np.float32)
        model = announcing(presets.{preset}(4000, random_state=0, max_iter=1, {options}))
        try:
            model.fit(X)
        except KeyboardInterrupt:
            model.set_params(n_clusters=3).fit(X[:300])  # still usable
            print("interrupted", flush=True)
            sys.exit(0)
        print("finished", flush=True)
    """)
    out, status = _interrupt(code, after=0.5)
    assert out.split()[-1] == "interrupted" and status == 0  # the refit announces itself too


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_ends_a_wait_for_code_that_never_checks_for_it():
    """The approximate kNN graph runs pynndescent's compiled code in a worker thread: Ctrl-C
    stops the caller at once (here a worker that waits 30 s, as compiled code that ignores
    signals would)."""
    code = textwrap.dedent("""
        import sys, threading
        from clusterkit.slk.graph import interruptible
        never = threading.Event()
        print("start", flush=True)
        try:
            interruptible(never.wait, 300)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(0)
        print("finished", flush=True)
    """)
    out, status = _interrupt(code, after=0.5)
    assert out.strip() == "interrupted" and status == 0


def test_interruptible_returns_and_raises_like_the_call():
    from clusterkit.slk.graph import interruptible
    assert interruptible(divmod, 7, 2) == (3, 1)
    with pytest.raises(ZeroDivisionError):
        interruptible(divmod, 1, 0)


# --- bounded fuzz ---------------------------------------------------------------------------------

def _check_fit(model, X, sample_weight):
    """Finite centres and inertia, predict gives the nearest centres, inertia_ matches."""
    centers = model.cluster_centers_.astype(np.float64)
    assert np.all(np.isfinite(centers)) and np.isfinite(model.inertia_)
    X64 = X.astype(np.float64)
    d2 = ((X64[:, None, :] - centers[None]) ** 2).sum(-1)
    eps = float(np.finfo(X.dtype).eps)
    slack = 64 * (X.shape[1] + 2) * eps * ((X64 ** 2).sum(1) + (centers ** 2).sum(1).max()
                                           + d2.min(axis=1)) + 1e-300
    chosen = d2[np.arange(len(X)), model.predict(X)]
    assert np.all(chosen <= d2.min(axis=1) + slack)
    w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, np.float64)
    # SLK labels by assignment (its inertia_ uses them), the others by nearest centre
    labels = model.labels_ if hasattr(model, "soft_labels_") else d2.argmin(axis=1)
    expected = float(np.dot(w, d2[np.arange(len(X)), labels]))
    assert abs(model.inertia_ - expected) <= float(np.dot(w, slack)) + 1e-6 * expected


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(preset=st.sampled_from(PRESETS), n_samples=st.integers(1, 60),
       n_features=st.integers(1, 12), n_clusters=st.integers(1, 6),
       dtype=st.sampled_from(DTYPES), log_scale=st.sampled_from([-30, -5, 0, 5, 30, 150]),
       duplicates=st.booleans(), weights=st.sampled_from([None, "zeros", "random"]),
       seed=st.integers(0, 2 ** 16))
def test_fuzz_presets(preset, n_samples, n_features, n_clusters, dtype, log_scale, duplicates,
                      weights, seed):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_samples, n_features)) * 10.0 ** log_scale
    if duplicates:
        X = X[rng.randint(0, max(1, n_samples // 3), n_samples)]
    X = X.astype(dtype)
    sample_weight = None
    if weights == "zeros":
        sample_weight = (rng.uniform(size=n_samples) < 0.5).astype(float)
        sample_weight[0] = 1
    elif weights == "random":
        sample_weight = rng.exponential(size=n_samples)
    model = getattr(presets, preset)(n_clusters, random_state=seed, max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.fit(X, sample_weight=sample_weight)
        except (ValueError, TypeError) as error:
            assert str(error).strip()  # a clear message
            return
    if preset == "spherical_kmeans":  # its model, predict and inertia_ are of the unit rows
        X64 = X.astype(np.float64)
        X = (X64 / np.sqrt((X64 ** 2).sum(axis=1, keepdims=True))).astype(dtype)
    _check_fit(model, X, sample_weight)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(preset=st.sampled_from(["minibatch", "lloyd", "elkan"]), n_batches=st.integers(1, 4),
       n_features=st.integers(1, 12), n_clusters=st.integers(1, 5),
       dtype=st.sampled_from(DTYPES), log_scale=st.sampled_from([-30, 0, 30, 150]),
       seed=st.integers(0, 2 ** 16))
def test_fuzz_partial_fit(preset, n_batches, n_features, n_clusters, dtype, log_scale, seed):
    """A stream ends with finite centres and predict gives the nearest of them (inertia_ is
    that of the last batch's E-step, before the batch moved the centres)."""
    rng = np.random.RandomState(seed)
    X = (rng.normal(size=(40 * n_batches, n_features)) * 10.0 ** log_scale).astype(dtype)
    model = getattr(presets, preset)(n_clusters, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for batch in np.array_split(X, n_batches):
                model.partial_fit(batch)
        except (ValueError, TypeError) as error:
            assert str(error).strip()
            return
    centers = model.cluster_centers_.astype(np.float64)
    assert np.all(np.isfinite(centers)) and np.isfinite(model.inertia_)
    d2 = ((X.astype(np.float64)[:, None, :] - centers[None]) ** 2).sum(-1)
    chosen = d2[np.arange(len(X)), model.predict(X)]
    rtol = 1e-3 if dtype == np.float32 else 1e-9
    assert np.all(chosen <= d2.min(axis=1) * (1 + rtol) + rtol * d2.max() + 1e-300)


# --- never lie, round 2: labels of zero-weight samples, one range policy, the variance floor --

def _not_nearest(model, X):
    """Rows whose ``labels_`` is not their nearest centre (beyond a tie's rounding)."""
    X = np.asarray(X, dtype=np.float64)
    centers = np.asarray(model.cluster_centers_, dtype=np.float64)
    d2 = ((X[:, None, :] - centers[None]) ** 2).sum(-1)
    own = d2[np.arange(X.shape[0]), model.labels_]
    return np.flatnonzero(own > d2.min(axis=1) * (1 + 1e-6) + 1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("preset", ["nmbatch", "lloyd", "elkan"])
@pytest.mark.parametrize("n_clusters", [40, 60])
def test_labels_of_zero_weight_samples_are_their_nearest_centres(dtype, preset, n_clusters):
    """Clusters holding only zero-weight samples are relocated (empty or starved) without any
    label changing: such a step is no fixed point, and the final labels are not the last
    E-step's. (nmbatch stopped there and kept stale labels for the zero-weight rows.) With
    more clusters than distinct weighted rows, no cluster goes where a distance is only
    rounding, and the fit still settles."""
    extra = (dict(initial_batch=160, rho=0.0, spread="standard_error") if preset == "nmbatch"
             else {})
    for seed in (0, 19):
        rs = np.random.RandomState(seed)
        X = rs.normal(size=(60, 3)).astype(dtype)
        w = rs.randint(0, 4, 60).astype(float)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # (duplicates of few distinct clusters)
            model = getattr(presets, preset)(n_clusters, max_iter=50, tol=0.0, n_threads=2,
                                             random_state=seed, **extra).fit(X, sample_weight=w)
        assert _not_nearest(model, X).size == 0
        # relocations onto samples that sit on a centre (their distance is rounding) would
        # cycle to max_iter instead of settling
        assert not [c for c in caught if "did not converge" in str(c.message)]
        assert model.n_iter_ < 10
        np.testing.assert_allclose(model.inertia_, -model.score(X, sample_weight=w),
                                   rtol=1e-5, atol=1e-12)


def _containers(X, sample_weight, tmp_path):
    """The same rows (and weights) as an array, a read-only memmap and, if dask is installed,
    a dask array of several row chunks (computed in this process)."""
    np.save(tmp_path / "X.npy", X)
    yield "array", X, sample_weight
    yield "memmap", np.load(tmp_path / "X.npy", mmap_mode="r"), sample_weight
    try:
        import dask
        import dask.array as da
    except ImportError:
        return
    with dask.config.set(scheduler="synchronous"):
        yield ("dask", da.from_array(X, chunks=(X.shape[0] // 3 + 1, -1)),
               None if sample_weight is None else da.from_array(sample_weight,
                                                                chunks=X.shape[0] // 3 + 1))


@pytest.mark.parametrize("dtype,scale,weight,match", [
    # float64: the sum of the squared distances over 200 samples overflows float64
    (np.float64, 5e152, None, r"^X's values are too large: squared distances between samples "
                              r"\(up to 1\.\d+e\+307\) summed over a total weight of 200 can "
                              r"overflow the largest float64 \(1\.8e\+308\)\. Rescale X\.$"),
    # float32: one weight times a squared distance overflows float32
    (np.float32, 1e15, 1e10, r"^sample_weight is too large for X in float32: weighted sums "
                             r"over the samples can reach \d\.\d+e\+41, beyond the largest "
                             r"float32 \(3\.4e\+38\)\. Rescale the weights \(only their "
                             r"ratios matter\) or pass X as float64\.$"),
])
def test_one_range_policy_for_arrays_memmaps_and_dask_arrays(tmp_path, dtype, scale, weight,
                                                             match):
    """The first pass over a memmap or a dask array refuses the rows the in-memory path (and
    ``score``) refuses, with the same message: before, it accepted them and ``inertia_`` was
    infinite."""
    X = (_uniform((200, 16), seed=540) * scale).astype(dtype)
    w = None if weight is None else np.ones(200)
    if w is not None:
        w[7] = weight
    for name, Xc, wc in _containers(X, w, tmp_path):
        with pytest.raises(ValueError, match=match):
            presets.vc_gmm(6, coreset_size=100, random_state=0).fit(Xc, sample_weight=wc)
    if w is None:  # (score's weights multiply float64 log-likelihoods: no limit there)
        model = presets.vc_gmm(6, coreset_size=100, random_state=0).fit(X / scale)
        with pytest.raises(ValueError, match=match):
            model.score(X)


def test_centring_rounding_is_part_of_the_range_policy(tmp_path):
    """float32 rows equal to the last bit near 1e30: their mean is off by an ulp (about
    1e23), whose square overflows float32 after centring. Every container refuses them (the
    memmap's fit used to end with an infinite ``inertia_``, while the array's happened to
    centre exactly)."""
    X = np.full((10, 9), -8.41615e29, dtype=np.float32)
    for name, Xc, wc in _containers(X, None, tmp_path):
        with pytest.raises(ValueError, match=r"^X's values are too large for float32: "
                                             r"squared distances between samples can reach"):
            presets.lwcs_lloyd(3, coreset_size=300, random_state=921).fit(Xc)


def test_centres_a_rounding_away_from_equal_rows_do_not_make_them_too_close():
    """Equal float32 rows near 1e-31 (their squared differences underflow, but there are
    none): a sparse fit's centres, summed uncentred, land an ulp away from the rows, and
    ``predict`` on those rows must still take them as ``fit`` did (it refused them as "too
    close together")."""
    X = np.full((3, 16), -6.958729e-32, dtype=np.float32)
    model = presets.minibatch(2, random_state=398).fit(sp.csr_matrix(X), np.ones(3))
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    assert model.score(X) == 0.0


def test_sparse_rows_are_checked_uncentred():
    """Sparse rows are never centred: float32 coordinates of 1e23 whose spread is fine once
    centred (the dense fit) overflow float32 as squared norms; the sparse fit refuses them
    clearly instead of ending with a NaN ``inertia_``."""
    X = (1e23 + 1e15 * _uniform((250, 3), seed=736)).astype(np.float32)
    dense = presets.lloyd(3, random_state=736).fit(X)
    assert np.isfinite(dense.inertia_)
    with pytest.raises(ValueError, match=r"squared distances between samples \(sparse rows, "
                                         r"not centred\) can reach .* pass it as float64"):
        presets.lloyd(3, random_state=736).fit(sp.csr_matrix(X))
    sparse64 = presets.lloyd(3, random_state=736).fit(sp.csr_matrix(X.astype(np.float64)))
    assert np.isfinite(sparse64.inertia_)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["one_weighted_row", "one_weighted_row_of_200"])
def test_variance_floor_keeps_scores_finite_on_every_container(tmp_path, dtype, case):
    """Only one row carries weight, so the variance hits its floor: ``score`` and
    ``score_samples`` of the training rows (zero weights included) stay finite, and a memmap
    or a dask array of the same rows gives the same fit as the array (the chunked path
    centred on the weighted mean, and its floor came from the coreset's own rows: 2.2e-308,
    ``score = -inf``)."""
    rs = np.random.RandomState(230)
    if case == "one_weighted_row":
        X = (1e8 + 20 * rs.normal(size=(2, 8))).astype(dtype)
        w = np.array([1.0, 0.0])
        params = dict(n_clusters=1, max_iter=50, G=1, n_explore=0, n_init_esteps=0,
                      init="exact", coreset_size=1, chain_length=1, random_state=230,
                      n_threads=1)
    else:
        X = (4 * rs.normal(size=(200, 1))).astype(dtype)
        w = np.zeros(200)
        w[17] = 1.0
        params = dict(n_clusters=2, n_init=2, tol=0.5, G=2, n_explore=1, n_init_esteps=0,
                      coreset_size=7, chain_length=2, random_state=339)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (LWCS size >= n_samples; one distinct cluster)
        for name, Xc, wc in _containers(X, w, tmp_path):
            fits[name] = presets.vc_gmm(**params).fit(Xc, sample_weight=wc)
    box = X.max(axis=0).astype(np.float64) - X.min(axis=0)
    floor = np.finfo(np.float64).eps * float(box @ box) / X.shape[1]
    for name, model in fits.items():
        assert model.sigma2_ >= floor, name
        log_likelihood = model.score_samples(X)
        assert np.all(np.isfinite(log_likelihood)), name
        assert np.isfinite(model.score(X, sample_weight=w)), name
        np.testing.assert_allclose(model.cluster_centers_, fits["array"].cluster_centers_,
                                   rtol=1e-9 if dtype == np.float64 else 1e-6, atol=0)
        assert model.sigma2_ == pytest.approx(fits["array"].sigma2_,
                                              rel=1e-9 if dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_weighted_memmap_and_dask_fits_equal_the_array_fit(tmp_path, dtype):
    """The same weighted rows give the same fit on every container, bit for bit in one chunk:
    the chunked path centres on the unweighted mean, as the array path (it centred on the
    weighted mean, and its variance and centres differed in the last digits)."""
    rs = np.random.RandomState(11)
    X = (rs.normal(size=(120, 3)) * 1e3 + rs.normal(size=3) * 1e7).astype(dtype)
    w = rs.randint(0, 3, 120).astype(float)
    fits = {name: presets.vc_gmm(3, coreset_size=60, random_state=11).fit(Xc, sample_weight=wc)
            for name, Xc, wc in _containers(X, w, tmp_path)}
    np.testing.assert_array_equal(fits["memmap"].cluster_centers_,
                                  fits["array"].cluster_centers_)
    assert fits["memmap"].sigma2_ == fits["array"].sigma2_
    if "dask" in fits:  # three chunks: the mean's sum in another order
        rtol = 1e-9 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(fits["dask"].cluster_centers_,
                                   fits["array"].cluster_centers_, rtol=rtol, atol=0)
        assert fits["dask"].sigma2_ == pytest.approx(fits["array"].sigma2_, rel=rtol)
