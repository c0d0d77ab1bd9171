"""What a verbose fit shows while it runs: lines, or progress bars (tqdm).

The driver owns one display per ``fit`` (or ``partial_fit`` call) and is the only code that
writes to it; :class:`~clusterkit.FitState` tells it which phase runs (``timed``/``phase``)
and what a strategy reported (``progress``). A background thread, the *heartbeat*, shows
that a phase is alive when nothing was shown for :data:`HEARTBEAT_INTERVAL` seconds, even
while the fit's thread is inside a long kernel: the kernels release the GIL. Nothing of
this exists when ``verbose=0`` (:data:`QUIET`).
"""
import numbers
import threading
import time

import numpy as np

__all__ = ["HEARTBEAT_INTERVAL", "QUIET", "make_display", "check_verbose"]

#: Seconds without output after which a running phase shows a line (or refreshes its bar).
HEARTBEAT_INTERVAL = 2.0

#: Phases that run inside a step: their heartbeat belongs to the step (the iteration bar).
STEP_PHASES = ("estep", "mstep")

VERBOSE_CHOICES = "0, 1, 2 or 'bar'"


def check_verbose(verbose):
    """``verbose`` checked: an int >= 0 (a bool counts as one) or ``"bar"``; ``ValueError``
    or ``TypeError`` naming the choices otherwise."""
    if isinstance(verbose, str):
        if verbose == "bar":
            return verbose
        raise ValueError(f"verbose={verbose!r} must be {VERBOSE_CHOICES}.")
    if not isinstance(verbose, (numbers.Integral, np.bool_)):
        raise TypeError(f"verbose must be {VERBOSE_CHOICES}, got {type(verbose).__name__}.")
    if verbose < 0:
        raise ValueError(f"verbose={verbose!r} must be {VERBOSE_CHOICES}.")
    return int(verbose)


def import_tqdm():
    """``tqdm.auto.tqdm`` (a notebook widget in Jupyter, text elsewhere), or an
    ``ImportError`` naming the extra that installs it."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise ImportError("verbose='bar' shows progress bars with tqdm, which is not "
                          "installed; install it with pip install 'clusterkit[progress]' "
                          "(or pip install tqdm), or use verbose=1 for lines.") from None
    return tqdm


def make_display(verbose):
    """The display for an estimator's ``verbose`` (validated by :func:`check_verbose`)."""
    if verbose == "bar":
        return BarDisplay()
    if verbose:
        return LineDisplay(verbose)
    return QUIET


def _count(done):
    """A reported amount of work: an int, or a one-element array a running kernel updates."""
    return int(done[0]) if isinstance(done, np.ndarray) else int(done)


class _Phase:
    """A running phase: its name, start, the last report of a strategy and the bar shown."""

    def __init__(self, name):
        self.name = name
        self.start = time.perf_counter()
        self.report = None  # (phase, done, total, unit)
        self.shown = False
        self.bar = None

    def amount(self):
        """``"412/1000 centres"`` from the last report, or ``""``."""
        if self.report is None:
            return ""
        _, done, total, unit = self.report
        return f"{_count(done)}/{total}{' ' + unit if unit else ''}"


class QuietDisplay:
    """``verbose=0``: shows nothing, runs no thread (every method does nothing)."""

    level = 0

    def open(self):
        """Start showing (the heartbeat starts)."""

    def close(self, final=True):
        """Stop showing; ``final=False`` keeps a stream's bar for its next batch."""

    def enter(self, phase):
        """A phase starts."""

    def leave(self, phase):
        """The phase that started last ends."""

    def report(self, phase, done, total, unit=None):
        """A strategy's progress in the running phase (see ``Meter.progress``)."""

    def line(self, level, text):
        """A line of the driver's when ``verbose >= level``."""

    def start_run(self, run, n_init):
        """Run ``run`` (1-based) of ``n_init`` starts."""

    def end_run(self):
        """The run ended (its last step was shown)."""

    def step(self, info, text):
        """A step ended: its history record and the driver's line for it."""


#: The display of quiet fits (it holds nothing, so one is shared).
QUIET = QuietDisplay()


class _Heartbeat(QuietDisplay):
    """The phases and the heartbeat thread that both displays share.

    Every output goes through :meth:`_shown`, which restarts the quiet period; the thread
    sleeps until the quiet period would reach :data:`HEARTBEAT_INTERVAL` and then calls
    :meth:`_beat` for the innermost running phase. One lock serialises the thread and the
    fit's calls.
    """

    def __init__(self, level):
        self.level = level
        self._lock = threading.RLock()
        self._phases = []
        self._thread = None
        self._stop = None
        self._last_output = time.perf_counter()

    def open(self):
        with self._lock:
            self._last_output = self._opened = time.perf_counter()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, name="clusterkit-progress",
                                            daemon=True)
            self._thread.start()

    def close(self, final=True):
        # runs in a finally: after an exception, Ctrl-C included, the thread ends too
        stop, thread = self._stop, self._thread
        if thread is not None:
            stop.set()
            thread.join()
        with self._lock:
            self._thread = self._stop = None
            while self._phases:
                self._end(self._phases.pop(), completed=False)

    def enter(self, phase):
        with self._lock:
            self._phases.append(_Phase(phase))

    def leave(self, phase):
        with self._lock:
            # the innermost phase of that name (a strategy's own phase may still be open if
            # it raised, then the outer phase ends it too)
            while self._phases:
                ended = self._phases.pop()
                self._end(ended, completed=True)
                if ended.name == phase:
                    break

    def report(self, phase, done, total, unit=None):
        with self._lock:
            if self._phases:
                self._phases[-1].report = (phase, done, int(total), unit)

    def _shown(self):
        self._last_output = time.perf_counter()

    def _run(self):
        while True:
            with self._lock:
                wait = self._last_output + HEARTBEAT_INTERVAL - time.perf_counter()
            if self._stop.wait(max(wait, 0.0)):
                return
            with self._lock:
                if self._stop.is_set():
                    return
                if time.perf_counter() - self._last_output >= HEARTBEAT_INTERVAL:
                    self._beat(self._phases[-1] if self._phases else None)
                    self._shown()

    def _end(self, phase, completed):
        """A phase ended (``completed``) or was abandoned by an exception."""

    def _beat(self, phase):
        """Show that ``phase`` (``None``: between phases) is running."""


class LineDisplay(_Heartbeat):
    """``verbose=1`` or ``2``: lines on standard output.

    The heartbeat line is ``  seeding: 412/1000 centres, 6.0 s`` (the strategy's last report,
    and the seconds since the phase started), or ``  seeding: 6.0 s`` in a phase that
    reports nothing. A phase that showed heartbeat lines and has no closing line of the
    driver's (the kNN graph) gets ``  graph: done, 41.2 s``.
    """

    def _print(self, text):
        print(text, flush=True)
        self._shown()

    def line(self, level, text):
        if self.level >= level:
            with self._lock:
                self._print(text)

    def step(self, info, text):
        self.line(1, text)

    def _beat(self, phase):
        if phase is None:
            self._print(f"  working: {time.perf_counter() - self._opened:.1f} s")
            return
        name = phase.name if phase.report is None else phase.report[0]
        amount = phase.amount()
        self._print(f"  {name}: {amount + ', ' if amount else ''}"
                    f"{time.perf_counter() - phase.start:.1f} s")
        phase.shown = True

    def _end(self, phase, completed):
        if completed and phase.shown and phase.name not in _SUMMARISED:
            self._print(f"  {phase.name}: done, {time.perf_counter() - phase.start:.1f} s")


#: How a bar of a phase that reports no amount shows it: its name and the time it runs.
_ELAPSED = "{desc}: {elapsed}"

#: The driver's phases that it closes with a line of its own.
_SUMMARISED = ("scan", "reduction", "seeding", "labels") + STEP_PHASES


class BarDisplay(_Heartbeat):
    """``verbose="bar"``: tqdm progress bars (``tqdm.auto``: widgets in a notebook, text in a
    terminal) and the driver's summary lines.

    A phase gets a bar once it has run for :data:`HEARTBEAT_INTERVAL` seconds (short phases
    leave no trace), with the total its strategy reported; each run gets a bar of its steps
    showing the objective, refreshed by the heartbeat during a long step. The steps of a
    ``partial_fit`` stream share one bar, kept open between batches (``close(final=False)``).
    """

    def __init__(self):
        super().__init__(1)
        self._tqdm = import_tqdm()
        self._steps = None  # the current run's (or stream's) bar
        self._run_name = "iterations"

    def close(self, final=True):
        super().close(final)
        if final:
            self._close_steps()
        elif self._steps is not None:  # a stream's batch ended: show where it is
            self._steps.refresh()

    def _close_steps(self):
        with self._lock:
            if self._steps is not None:
                self._steps.close()
                self._steps = None

    def line(self, level, text):
        if self.level >= level:
            with self._lock:
                self._tqdm.write(text)
                self._shown()

    def start_run(self, run, n_init):
        self._run_name = f"run {run}/{n_init}" if n_init > 1 else "iterations"

    def end_run(self):
        self._close_steps()

    def _step_bar(self):
        if self._steps is None:
            self._steps = self._tqdm(desc=self._run_name, unit="step", leave=True)
        return self._steps

    def step(self, info, text):
        with self._lock:
            bar = self._step_bar()
            bar.set_postfix_str(f"objective={info['objective']:.6g}", refresh=False)
            bar.update(1)
            self._shown()

    def _beat(self, phase):
        if phase is None or phase.name in STEP_PHASES:
            self._step_bar().refresh()  # its clock shows that the step runs
            return
        if phase.bar is None:
            phase.bar = self._tqdm(desc=phase.name, leave=True, bar_format=_ELAPSED)
            # the bar appears late: its clock (tqdm's, wall time) starts with the phase
            phase.bar.start_t = time.time() - (time.perf_counter() - phase.start)
        if phase.report is not None:
            name, done, total, unit = phase.report
            # "rows (pass 1 of 2)": the words in brackets describe the bar, not its unit
            unit, _, detail = (unit or "it").partition(" (")
            phase.bar.set_description(f"{name} ({detail}" if detail else name, refresh=False)
            phase.bar.unit, phase.bar.total, phase.bar.n = unit, total, _count(done)
            phase.bar.bar_format = None
        phase.bar.refresh()

    def _end(self, phase, completed):
        if phase.bar is not None:
            if completed and phase.report is not None:
                phase.bar.n = _count(phase.report[1])
            phase.bar.close()
            self._shown()
