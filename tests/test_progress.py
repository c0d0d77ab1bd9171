"""Progress output of verbose fits: a line (or a bar refresh) at least every interval in every
phase, nothing when quiet, no thread left behind, tqdm bars, the CLI flag."""
import pickle
import re
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

from clusterkit import (LWCS, Clusterer, DataReducer, FullEStep, HardMStep, KMeansPlusPlus, Seeder,
                        __main__ as cli, presets)
from clusterkit._data.chunked import MemmapChunks
from clusterkit._engine import progress as _progress
from clusterkit._engine.state import FitState

PAUSE = 0.3  # seconds a slowed-down phase lasts at least: many heartbeat intervals
BEATS = [0]  # heartbeats shown so far


@pytest.fixture(autouse=True)
def short_interval(monkeypatch):
    monkeypatch.setattr(_progress, "HEARTBEAT_INTERVAL", 0.02)
    for display in (_progress.LineDisplay, _progress.BarDisplay):
        def counted(self, phase, beat=display._beat):
            beat(self, phase)
            BEATS[0] += 1
        monkeypatch.setattr(display, "_beat", counted)


def pause(seconds=PAUSE):
    """Let a slowed-down phase last ``seconds``, and on a busy machine until a verbose fit's
    heartbeat has shown it twice more (at most a minute), so that what the display shows
    does not depend on how fast the machine is."""
    start, beats = time.perf_counter(), BEATS[0]
    time.sleep(seconds)
    while (_threads() and BEATS[0] < beats + 2
           and time.perf_counter() - start < 60):
        time.sleep(0.01)


@pytest.fixture(autouse=True)
def no_convergence_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _data(n_samples=300, n_features=3, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-10, 10, size=(4, n_features))
    return centers[rng.randint(4, size=n_samples)] + rng.normal(size=(n_samples, n_features))


def _threads():
    return [t for t in threading.enumerate() if t.name == "clusterkit-progress"]


class SlowSeeder(Seeder):
    """The first rows, after a pause; reports two halves of its centres."""

    def __init__(self, error=None):
        self.error = error

    def seed(self, X, sample_weight, n_clusters, state):
        state.meter.progress("seeding", 1, 2, "halves")
        pause()
        if self.error is not None:
            raise self.error
        return X[:n_clusters].copy()


class LiveSeeder(Seeder):
    """Reports a counter before its work, as a seeder with one long kernel call does."""

    def seed(self, X, sample_weight, n_clusters, state):
        done = np.zeros(1, dtype=np.int64)
        state.meter.progress("seeding", done, n_clusters, "centres")
        pause(PAUSE / 2)
        done[0] = n_clusters - 1  # what the kernel would write while running
        pause(PAUSE / 2)
        return X[:n_clusters].copy()


class SlowReducer(DataReducer):
    def reduce(self, X, sample_weight, state):
        pause()
        return X[::2].copy(), 2 * sample_weight[::2]


class SlowEStep(FullEStep):
    """Lloyd's E-step, slow where ``where`` says (``"init"``, ``"estep"`` or ``"labels"``)."""

    def __init__(self, where="estep"):
        self.where = where

    def init_state(self, X, sample_weight, centers, state):
        if self.where == "init":
            pause()
        return super().init_state(X, sample_weight, centers, state)

    def assign(self, X, sample_weight, centers, state):
        if self.where == "estep" and not state.run.history:
            pause()
        return super().assign(X, sample_weight, centers, state)

    def final_labels(self, state):
        if self.where == "labels":
            pause()
        return super().final_labels(state)


class SlowMStep(HardMStep):
    def update(self, X, sample_weight, assignment, centers, state):
        if not state.run.history:
            pause()
        return super().update(X, sample_weight, assignment, centers, state)


def _heartbeats(out, phase):
    return [line for line in out.splitlines() if line.startswith(f"  {phase}: ")]


@pytest.mark.parametrize("phase, params", [
    ("reduction", {"reduce": SlowReducer()}),
    ("seeding", {"seed": SlowSeeder()}),
    ("init", {"estep": SlowEStep("init")}),
    ("estep", {"estep": SlowEStep("estep")}),
    ("mstep", {"mstep": SlowMStep()}),
    ("labels", {"estep": SlowEStep("labels")}),
])
def test_every_phase_shows_a_line_every_interval(phase, params, capsys):
    Clusterer(4, verbose=1, max_iter=3, random_state=0, **params).fit(_data())
    beats = _heartbeats(capsys.readouterr().out, phase)
    # 0.3 s at one line per 0.02 s: at least a few lines even on a busy machine
    assert len(beats) >= 3
    assert all(re.fullmatch(rf"  {phase}: (\d+/\d+ \w+, |done, )?\d+\.\d s", line)
               for line in beats)


def test_a_reported_amount_is_shown_with_its_unit(capsys):
    Clusterer(4, seed=SlowSeeder(), verbose=1, max_iter=2).fit(_data())
    assert "  seeding: 1/2 halves, " in capsys.readouterr().out


def test_a_live_counter_is_read_when_shown(capsys):
    Clusterer(4, seed=LiveSeeder(), verbose=1, max_iter=2).fit(_data())
    beats = _heartbeats(capsys.readouterr().out, "seeding")
    assert any(line.startswith("  seeding: 0/4 centres") for line in beats)
    assert any(line.startswith("  seeding: 3/4 centres") for line in beats)


def test_the_graph_phase_shows_its_stages_and_its_end(monkeypatch, capsys):
    from clusterkit.slk import laplacian as _slk

    def slow_graph(*args, **kwargs):
        pause()
        return knn_graph(*args, **kwargs)
    knn_graph = _slk.knn_graph
    monkeypatch.setattr(_slk, "knn_graph", slow_graph)
    presets.slk_ms(4, verbose=1, max_iter=2, random_state=0).fit(_data())
    out = capsys.readouterr().out
    assert len(_heartbeats(out, "graph")) >= 3
    assert "  graph: 0/3 stages, " in out
    assert re.search(r"^  graph: done, \d+\.\d s$", out, flags=re.M)


def test_the_scan_of_chunked_data_shows_life(monkeypatch, tmp_path, capsys):
    from clusterkit._data import blocks, chunked as _chunked
    moments = _chunked._block_moments

    def slow_moments(*args):
        pause(PAUSE / 3)
        return moments(*args)
    monkeypatch.setattr(_chunked, "_block_moments", slow_moments)
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", 2400)  # 100 rows per block
    path = tmp_path / "X.npy"
    np.save(path, _data())
    X = np.load(path, mmap_mode="r")
    Clusterer(4, reduce=LWCS(size=200), verbose=1, max_iter=2, random_state=0).fit(X)
    beats = _heartbeats(capsys.readouterr().out, "scan")
    assert len(beats) >= 3
    assert any(re.match(r"  scan: (100|200)/300 rows", line) for line in beats)


class Recorder(_progress.QuietDisplay):
    """A display that keeps the reports (what a strategy tells the display)."""

    def __init__(self):
        self.reports = []

    def report(self, phase, done, total, unit=None):
        self.reports.append((phase, done, total, unit))


def test_kmeanspp_reports_a_counter_that_ends_at_n_clusters():
    X = _data(500)
    state = FitState(n_clusters=7, n_features=3, random_state=np.random.RandomState(0))
    state.meter.display = Recorder()
    KMeansPlusPlus().seed(X, np.ones(len(X)), 7, state)
    [(phase, done, total, unit)] = state.meter.display.reports
    assert (phase, int(done[0]), total, unit) == ("seeding", 7, 7, "centres")


@pytest.mark.parametrize("dask_input", [False, True])
def test_lwcs_reports_the_rows_of_its_passes(dask_input):
    X = _data(1000)
    state = FitState(n_clusters=4, n_features=3, random_state=np.random.RandomState(0))
    state.meter.display = Recorder()
    if dask_input:
        da = pytest.importorskip("dask.array")
        from clusterkit._data.dask_chunks import DaskChunks
        data = DaskChunks(da.from_array(X, chunks=(300, 3)), None)
        data.scan()  # the driver's scan
        LWCS(size=100).reduce_chunked(data, state)
        units = ["rows (pass 2 of 2)"]
    else:
        LWCS(size=100).reduce(X, np.ones(len(X)), state)
        units = ["rows (pass 1 of 2)", "rows (pass 2 of 2)"]
    reports = state.meter.display.reports
    assert sorted({unit for *_, unit in reports}) == units
    for unit in units:
        done = [d for _, d, total, u in reports if u == unit]
        assert done == sorted(done) and done[-1] == 1000


def test_memmap_chunks_report_rows_as_blocks_finish(monkeypatch):
    from clusterkit._data import blocks, chunked as _chunked
    monkeypatch.setattr(blocks, "MEMMAP_BLOCK_BYTES", 2400)  # 100 rows per block
    data = MemmapChunks(_data(250), None, 1)
    seen = []
    data.map_chunks(_chunked._whole_block, progress=lambda done, total: seen.append((done,
                                                                                      total)))
    assert seen == [(100, 250), (200, 250), (250, 250)]
    seen.clear()  # labelling a memmap after its fit reports the same way
    labels, _, _ = data.nearest(np.zeros(3), np.zeros((2, 3)), lambda *args: seen.append(args))
    assert seen == [(100, 250), (200, 250), (250, 250)] and labels.shape == (250,)


def test_quiet_fits_print_nothing_and_start_no_thread(capfd, monkeypatch):
    started = []
    monkeypatch.setattr(_progress.threading, "Thread",
                        lambda *args, **kwargs: started.append(args))
    Clusterer(4, seed=SlowSeeder(), verbose=0, max_iter=3).fit(_data())
    presets.minibatch(4, verbose=0).partial_fit(_data())
    assert capfd.readouterr() == ("", "")
    assert started == []


@pytest.mark.parametrize("error", [ValueError("seeding failed"), KeyboardInterrupt()])
@pytest.mark.parametrize("verbose", [1, "bar"])
def test_the_heartbeat_ends_with_the_fit_and_with_an_exception(error, verbose):
    if verbose == "bar":
        pytest.importorskip("tqdm")
    X = _data()
    Clusterer(4, seed=SlowSeeder(), verbose=verbose, max_iter=2).fit(X)
    assert _threads() == []
    with pytest.raises(type(error)):
        Clusterer(4, seed=SlowSeeder(error), verbose=verbose, max_iter=2).fit(X)
    assert _threads() == []


def test_streams_show_each_batch_and_pickle(capsys):
    km = presets.minibatch(4, verbose=1, random_state=0)
    X = _data(600)
    for start in (0, 300):
        km.partial_fit(X[start:start + 300])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("Iteration")] == [
        "Iteration    1", "Iteration    2"]
    assert _threads() == []
    pickle.loads(pickle.dumps(km)).partial_fit(X[:300])


@pytest.mark.parametrize("verbose, error, message", [
    ("bars", ValueError, r"verbose='bars' must be 0, 1, 2 or 'bar'\."),
    (-1, ValueError, r"verbose=-1 must be 0, 1, 2 or 'bar'\."),
    (1.5, TypeError, r"verbose must be 0, 1, 2 or 'bar', got float\."),
])
def test_invalid_verbose_is_refused(verbose, error, message):
    with pytest.raises(error, match=message):
        Clusterer(4, verbose=verbose).fit(_data())


def test_bar_without_tqdm_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'clusterkit[progress]'")):
        Clusterer(4, verbose="bar").fit(_data())


def test_bars_show_phases_runs_and_the_objective(capsys):
    pytest.importorskip("tqdm")
    Clusterer(4, seed=SlowSeeder(), verbose="bar", n_init=2, max_iter=3,
              random_state=0).fit(_data())
    err = capsys.readouterr().err
    assert re.search(r"seeding: +50%.* 1/2", err)  # the slow seeder's bar, at its report
    for run in ("run 1/2", "run 2/2"):
        assert re.search(rf"{run}: \d+step .*objective=", err)
    assert _threads() == []


def test_a_long_first_step_shows_its_bar_while_it_runs(capsys):
    pytest.importorskip("tqdm")
    Clusterer(4, estep=SlowEStep("estep"), verbose="bar", max_iter=2).fit(_data())
    # the bar appears, and its clock is refreshed, before the first step ends
    assert capsys.readouterr().err.count("iterations: 0step") >= 3


def test_a_stream_keeps_one_bar(capsys):
    pytest.importorskip("tqdm")
    km = presets.minibatch(4, verbose="bar", random_state=0)
    X = _data(900)
    for start in (0, 300, 600):
        km.partial_fit(X[start:start + 300])
    err = capsys.readouterr().err
    assert re.search(r"iterations: 3step .*objective=", err)
    assert len(re.findall(r"iterations: 0step", err)) == 1  # one bar for the stream
    pickle.loads(pickle.dumps(km)).partial_fit(X[:300])


@pytest.mark.parametrize("flag, shown", [(["-v"], "Iteration"), (["--verbose", "bar"], None),
                                         ([], None)])
def test_cli_fit_shows_progress(tmp_path, flag, shown, capsys):
    if flag[-1:] == ["bar"]:
        pytest.importorskip("tqdm")
    data = tmp_path / "X.npy"
    np.save(data, _data())
    assert cli.main(["fit", str(data), "-k", "4", *flag, "--out",
                     str(tmp_path / "m.npz")]) == 0
    out, err = capsys.readouterr()
    assert ("Iteration" in out) == (shown is not None)
    assert ("objective=" in err) == (flag[-1:] == ["bar"])


def test_labelling_reports_rows_block_by_block(monkeypatch):
    from clusterkit._data import blocks, nearest as _nearest
    monkeypatch.setattr(blocks, "NEAREST_BLOCK_BYTES", 1)  # one tile of rows per block
    X = _data(1000)
    seen = []
    labels, *_ = _nearest.nearest(X, None, X[:3].copy(), 1,
                                  lambda done, total: seen.append((done, total)))
    assert len(seen) > 1 and seen[-1] == (1000, 1000)
    assert [done for done, _ in seen] == sorted({done for done, _ in seen})
    expected = ((X[:, None, :] - X[None, :3, :]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(labels, expected)


@pytest.mark.slow  # a new interpreter
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_in_a_kernel_ends_the_heartbeat_too():
    from .test_robustness import ANNOUNCING_SEEDER, _interrupt
    code = ANNOUNCING_SEEDER + textwrap.dedent("""
        import sys, threading, numpy as np
        from clusterkit import presets
        from clusterkit._engine import progress as _progress
        _progress.HEARTBEAT_INTERVAL = 0.2
        X = np.random.RandomState(0).normal(size=(1000000, 16)).astype(np.float32)
        model = announcing(presets.lloyd(4000, random_state=0, max_iter=1, verbose=1))
        try:
            model.fit(X)
        except KeyboardInterrupt:
            alive = [t for t in threading.enumerate() if t.name == "clusterkit-progress"]
            print("interrupted", len(alive), flush=True)
            sys.exit(0)
        print("finished", flush=True)
    """)
    out, status = _interrupt(code, after=1.0)
    lines = out.strip().splitlines()
    assert status == 0 and lines[-1] == "interrupted 0"
    assert any(line.startswith("  seeding: ") for line in lines)  # it was showing progress
