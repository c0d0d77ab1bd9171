"""Progress output of verbose fits: the longest silence in every phase, and what it costs.

Silences: one fit with ``verbose=1`` whose printed lines are time-stamped as they are
written; each gap between two lines (the first from the call to ``fit``) is charged to the
phase the later line belongs to (``"  seeding: ..."`` heartbeat lines and the driver's
``"Seeding: ..."`` summary to seeding, ``"Iteration ..."`` lines to the iterations, ...).
The heartbeat promises a line at least every ``HEARTBEAT_INTERVAL`` (2 s) in every phase;
the table shows the longest gap per phase. ``--gaps lloyd``: ``presets.lloyd(1000)`` on
Gaussian blobs (``--rows`` x 32, float32, greedy k-means++ on all rows); ``--gaps slk``:
``presets.slk_ms`` on blobs above pynndescent's threshold, in a fresh process with an empty
``NUMBA_CACHE_DIR``, so that the kNN graph phase includes pynndescent's first-use numba
compilation.

Overhead (``--overhead``): the same Lloyd fit with ``verbose=0``, ``1`` and ``"bar"``
(output to memory), interleaved, medians of ``--repeats``; ratios to ``verbose=0``. Run with
the OpenBLAS override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_progress.py \\
        --gaps lloyd slk --overhead --write
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from _common import command_note, format_table, machine_info, median_time, publish, \
    warn_openblas_overrides

TITLE = "Progress output: longest silence per phase, cost of verbose (bench_progress.py)"
SUMMARY = {"Scan": "scan", "Reduction": "reduction", "Seeding": "seeding",
           "Iteration": "iterations", "Labels": "labels", "Done": "done", "Run": "run"}


class _Stamped(io.TextIOBase):
    """A stdout that remembers when each line was written (and echoes it)."""

    def __init__(self, echo):
        self.lines, self._echo, self._part = [], echo, ""

    def write(self, text):
        now = time.perf_counter()
        self._part += text
        *complete, self._part = self._part.split("\n")
        self.lines += [(now, line) for line in complete]
        self._echo.write(text)
        return len(text)

    def flush(self):
        self._echo.flush()


def _phase(line):
    if line.startswith("  "):
        return line.strip().split(":")[0]
    return SUMMARY.get(line.split(":")[0].split(" ")[0], "other")


def silences(estimator, X):
    """``{phase: longest gap in seconds}``, the total seconds, the number of lines and the
    fit's ``seconds_`` per phase."""
    stamped = _Stamped(sys.stdout)
    with contextlib.redirect_stdout(stamped), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        estimator.fit(X)
        total = time.perf_counter() - start
    longest, previous = {}, start
    for stamp, line in stamped.lines:
        phase = _phase(line)
        longest[phase] = max(longest.get(phase, 0.0), stamp - previous)
        previous = stamp
    return longest, total, len(stamped.lines), estimator.seconds_


def _lloyd(rows, max_iter, verbose):
    from clusterkit import presets
    from clusterkit.datasets import make_gaussian_blobs
    X, *_ = make_gaussian_blobs(rows, 32, 1000, dtype=np.float32, random_state=0)
    return presets.lloyd(1000, verbose=verbose, max_iter=max_iter, random_state=0), X


def _slk(rows, max_iter, verbose):
    from clusterkit import presets
    from clusterkit.datasets import make_gaussian_blobs
    X, *_ = make_gaussian_blobs(rows, 32, 20, dtype=np.float32, random_state=0)
    return presets.slk_ms(20, verbose=verbose, max_iter=max_iter, random_state=0), X


def _child(which, rows, max_iter, warm_rows):
    """The silences of one fit (for ``slk`` then of a second one on ``warm_rows`` rows, with
    pynndescent compiled), as JSON lines on stdout after the fits' own lines."""
    sizes = [rows] + ([warm_rows] if which == "slk" and warm_rows else [])
    for n_rows in sizes:
        estimator, X = {"lloyd": _lloyd, "slk": _slk}[which](n_rows, max_iter, 1)
        longest, total, n_lines, seconds = silences(estimator, X)
        print("RESULT " + json.dumps({"rows": n_rows, "longest": longest, "total": total,
                                      "lines": n_lines, "seconds": seconds}))


def run_gaps(which, rows, max_iter, warm_rows):
    """Run :func:`_child` in a fresh process (an empty numba cache for ``slk``)."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        done = subprocess.run([sys.executable, __file__, "--child", which, "--rows",
                               str(rows), "--max-iter", str(max_iter), "--warm-rows",
                               str(warm_rows)], env=env, capture_output=True, text=True,
                              check=True)
    print(done.stdout, end="")
    return [json.loads(part.split("\n", 1)[0])
            for part in done.stdout.split("RESULT ")[1:]]


def run_overhead(rows, max_iter, repeats):
    """Median seconds of the Lloyd fit per ``verbose`` setting, interleaved."""
    from clusterkit import presets
    from clusterkit.datasets import make_gaussian_blobs
    X, *_ = make_gaussian_blobs(rows, 32, 100, dtype=np.float32, random_state=0)
    settings = [0, 1] + (["bar"] if importlib.util.find_spec("tqdm") else [])
    times = {v: [] for v in settings}
    for _ in range(repeats):
        for verbose in settings:
            km = presets.lloyd(100, verbose=verbose, max_iter=max_iter, tol=0.0,
                               random_state=0)
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                times[verbose].append(median_time(lambda: km.fit(X), 1)[0])
    return {v: float(np.median(t)) for v, t in times.items()}, times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gaps", nargs="*", choices=["lloyd", "slk"], default=[],
                        help="measure the longest silence per phase of these fits")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the data (default: 500000 for lloyd, 20000 for slk, "
                             "200000 for --overhead)")
    parser.add_argument("--warm-rows", type=int, default=100_000,
                        help="slk: rows of a second fit in the same process, after "
                             "pynndescent compiled (0: none; default: %(default)s)")
    parser.add_argument("--max-iter", type=int, default=20,
                        help="iterations of every fit (default: %(default)s)")
    parser.add_argument("--overhead", action="store_true",
                        help="time verbose=0, 1 and 'bar' on the same fit")
    parser.add_argument("--repeats", type=int, default=5, help="(default: %(default)s)")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md")
    parser.add_argument("--child", choices=["lloyd", "slk"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return _child(args.child, args.rows, args.max_iter, args.warm_rows)
    warn_openblas_overrides()
    info = machine_info(2)
    tables, notes = [], []
    default_rows = {"lloyd": 500_000, "slk": 20_000}
    for which in args.gaps:
        rows = args.rows or default_rows[which]
        for n, result in enumerate(run_gaps(which, rows, args.max_iter, args.warm_rows)):
            longest, seconds = result["longest"], result["seconds"]
            name = {"lloyd": "lloyd(1000)", "slk": "slk_ms(20)"}[which] + (
                ", pynndescent compiled" if n else ", fresh process" if which == "slk" else "")
            tables.append(f"### {name}: {result['rows']} x 32 float32, {args.max_iter} "
                          f"iterations at most\n\n" + format_table(
                              ["phase", "longest silence (s)", "phase seconds (seconds_)"],
                              [[p, f"{longest[p]:.2f}",
                                f"{seconds[p]:.1f}" if p in seconds else ""]
                               for p in sorted(longest, key=lambda p: -longest[p])]))
            notes.append(f"{name}: {result['lines']} lines in {result['total']:.1f} s.")
    if args.overhead:
        rows = args.rows or 200_000
        medians, times = run_overhead(rows, args.max_iter, args.repeats)
        tables.append(f"### Overhead: lloyd(100), {rows} x 32 float32, {args.max_iter} "
                      f"iterations, median of {args.repeats}\n\n" + format_table(
                          ["verbose", "seconds", "ratio to verbose=0"],
                          [[repr(v), f"{m:.3f}", f"{m / medians[0]:.3f}"]
                           for v, m in medians.items()]))
        notes.append("Overhead: every setting's times in call order: " + "; ".join(
            f"{v!r}: " + ", ".join(f"{t:.3f}" for t in ts) for v, ts in times.items()))
    notes.append(command_note())
    publish(TITLE, "\n\n".join(tables), notes, args.write, info)


if __name__ == "__main__":
    sys.exit(main())
