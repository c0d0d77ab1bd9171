"""Helpers shared by the benchmark scripts: machine description, timing, RESULTS.md.

Every ``bench_*.py`` script imports this module (it sits in the same folder, which Python puts
on ``sys.path`` when a script is run), times clusterkit and its peers with :func:`median_time`,
prints Markdown tables made by :func:`format_table` and, with ``--write``, appends them to
``RESULTS.md`` with :func:`write_results`, which adds the output of :func:`machine_info`.
"""
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS_PATH = Path(__file__).resolve().with_name("RESULTS.md")

# OpenBLAS variables that change which kernels OpenBLAS runs; benchmarks must run without them.
OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")

DATA_ENV_VAR = "CLUSTERKIT_DATA"

#: The note of bench_exact.py and bench_lowd.py on their missed targets.
EXACT_TARGETS_NOTE = ("Targets missed (MNIST C = 50 at 0.8x scikit-learn; BIRCH C = 100 "
                      "against ball k-means) and the decisions with their evidence: "
                      "docs/exact.rst, section \"Targets missed, and what we decided\".")


def preset_keywords(name, n_samples, n_clusters):
    """The keywords a preset gets in the benchmarks beyond ``n_clusters``, ``random_state``
    and ``n_threads``: none, except the bound that makes ``balanced_kmeans`` what it is for
    (without one it bounds nothing), ``size_max = ceil(1.1 N / C)``, clusters at most 10 %
    above the mean size."""
    if name == "balanced_kmeans":
        return {"size_max": -(-11 * n_samples // (10 * n_clusters))}
    return {}


def data_home():
    """Folder of the optional real data sets: ``$CLUSTERKIT_DATA``, or ``None`` when unset."""
    return os.environ.get(DATA_ENV_VAR) or None


def openblas_overrides():
    """The OpenBLAS override variables that are set, as ``{name: value}`` (empty when none)."""
    return {name: os.environ[name] for name in OPENBLAS_VARS if name in os.environ}


def warn_openblas_overrides():
    """Print a loud warning to stderr if an OpenBLAS override variable is set.

    Returns
    -------
    overrides : dict
        What :func:`openblas_overrides` returned.
    """
    overrides = openblas_overrides()
    if overrides:
        line = "!" * 78
        settings = ", ".join(f"{k}={v}" for k, v in overrides.items())
        print(f"{line}\n!! WARNING: {settings} is set. OpenBLAS then runs other kernels than it\n"
              f"!! would on this CPU, so these timings are NOT representative. Rerun with\n"
              f"!!   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python {sys.argv[0]} ...\n"
              f"{line}", file=sys.stderr, flush=True)
    return overrides


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("nan")


def _version(module):
    try:
        return __import__(module).__version__
    except ImportError:
        return "not installed"


def _git_commit(path):
    """``<commit>`` of the git checkout holding ``path`` (``+ local changes`` if dirty)."""
    def git(*args):
        return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    return commit + (" + local changes" if dirty else "")


def machine_info(n_threads=None):
    """Describe the machine, the library versions and the thread set-up.

    Imports scikit-learn, clusterkit and (if installed) faiss first, so that
    ``threadpoolctl.threadpool_info()`` sees every BLAS and OpenMP runtime they load.

    Parameters
    ----------
    n_threads : int or None, default=None
        The thread count the benchmark pins every library to, recorded as given.

    Returns
    -------
    info : dict
        Keys ``"cpu"``, ``"cores"``, ``"memory_gib"``, ``"os"``, ``"python"``, ``"versions"``
        (dict), ``"openmp"`` (clusterkit built with OpenMP), ``"threads"`` (dict),
        ``"clusterkit_commit"``, ``"load_average"``, ``"runtimes"`` (one string per BLAS/OpenMP library) and
        ``"openblas_overrides"`` (dict of the set OpenBLAS override variables; must be empty).
    """
    import sklearn.cluster  # noqa: F401  (loads scikit-learn's OpenMP runtime)
    from threadpoolctl import threadpool_info

    import clusterkit
    try:
        import faiss  # noqa: F401
    except ImportError:
        pass
    runtimes = []
    for lib in threadpool_info():
        details = [lib[key] for key in ("architecture", "threading_layer") if lib.get(key)]
        details.append(f"{lib['num_threads']} threads")
        runtimes.append(f"{lib['internal_api']} {lib.get('version') or ''} "
                        f"({', '.join(details)})".replace("  ", " "))
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in
                     ("numpy", "scipy", "sklearn", "clusterkit", "faiss", "threadpoolctl")},
        "clusterkit_commit": _git_commit(Path(clusterkit.__file__).parent),
        "openmp": clusterkit.openmp_enabled(),
        "threads": {"benchmark n_threads": n_threads, "usable cores (affinity)": affinity,
                    "clusterkit.effective_n_threads()": clusterkit.effective_n_threads(),
                    "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "unset")},
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "runtimes": runtimes,
        "openblas_overrides": openblas_overrides(),
    }


def format_machine_info(info):
    """:func:`machine_info`'s output as one paragraph (its facts separated by semicolons)."""
    v = info["versions"]
    facts = [
        f"{info['cpu']}, {info['cores']} cores, {info['memory_gib']:.1f} GiB memory",
        f"{info['os']}; Python {info['python']}",
        ", ".join(f"{name} {version}" for name, version in v.items()),
        f"clusterkit source {info['clusterkit_commit']}, OpenMP "
        + ("on" if info["openmp"] else "OFF (serial kernels)"),
        "threads: " + ", ".join(f"{k} = {val}" for k, val in info["threads"].items()),
    ]
    if info["load_average"] is not None:
        facts.append("load average (1, 5, 15 min) at start: "
                     + ", ".join(f"{x:.2f}" for x in info["load_average"]))
    facts.append("BLAS / OpenMP runtimes (threadpoolctl): " + "; ".join(info["runtimes"]))
    overrides = info["openblas_overrides"]
    if overrides:
        facts.append("**WARNING: " + ", ".join(f"{k}={val}" for k, val in overrides.items())
                     + " was set: OpenBLAS ran other kernels than it would on this CPU; these "
                     "numbers are not representative.**")
    else:
        facts.append("OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset")
    return "; ".join(facts) + "."


def median_time(fn, repeats, cpu_times=None):
    """Call ``fn()`` ``repeats`` times; return the median wall-clock time.

    Parameters
    ----------
    fn : callable
        Called without arguments.
    repeats : int
        Number of calls (at least 1).
    cpu_times : list or None, default=None
        If given, the process CPU time of each call (all threads) is appended to it;
        CPU time divided by wall time shows how many threads were busy.

    Returns
    -------
    median : float
        Median wall-clock seconds of one call.
    times : list of float
        Wall-clock seconds of every call, in call order.
    result : object
        What the last call returned.
    """
    times, result = [], None
    for _ in range(max(1, int(repeats))):
        cpu0, t0 = time.process_time(), time.perf_counter()
        result = fn()
        wall = time.perf_counter() - t0
        times.append(wall)
        if cpu_times is not None:
            cpu_times.append(time.process_time() - cpu0)
    return statistics.median(times), times, result


def format_table(headers, rows):
    """A Markdown table; ``rows`` are sequences of already formatted cells."""
    rows = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(headers)]
    fmt = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    out = [fmt.format(*headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [fmt.format(*row) for row in rows]
    return "\n".join(out)


def rst_list_table(headers, rows, script):
    """A documentation include: an rST ``list-table`` of already formatted cells, marked as
    generated by ``script`` (e.g. ``"bench_quality.py"``)."""
    lines = [f".. This file is generated by benchmarks/{script} --write; do not edit.",
             "", ".. list-table::", "   :header-rows: 1", ""]
    for row in [headers, *rows]:
        lines.append(f"   * - {row[0]}")
        lines += [f"     - {cell}" for cell in row[1:]]
    return "\n".join(lines) + "\n"


def write_results(path, title, markdown_table, notes, info=None):
    """Write a benchmark's section of a results file, replacing its previous one.

    The section is ``## <title> (<date>)``, the machine description, the table(s) and the
    notes, in that order. A section with the same title is replaced in place (the file shows
    the current state; git keeps the history); a new title is added at the end.

    Parameters
    ----------
    path : str or pathlib.Path
        The Markdown file (usually :data:`RESULTS_PATH`); created if missing.
    title : str
    markdown_table : str
        One or more Markdown tables (with their own sub-headings if needed).
    notes : str or list of str
        Free text, or one bullet per item.
    info : dict or None, default=None
        :func:`machine_info`'s output; collected now when ``None``.
    """
    info = machine_info() if info is None else info
    if not isinstance(notes, str):
        notes = "\n".join(f"- {note}" for note in notes)
    stamp = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    section = (f"## {title} ({stamp})\n\n**Machine:** {format_machine_info(info)}\n\n"
               f"{markdown_table.strip()}\n\n**Notes**\n\n{notes.strip()}\n")
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    head, *sections = re.split(r"\n(?=## )", text)
    mine = [i for i, s in enumerate(sections) if s.startswith(f"## {title} (")]
    if mine:
        sections[mine[0]] = section
    else:
        sections.append(section)
    path.write_text(head.rstrip("\n") + "\n" + "".join(
        "\n" + s.strip("\n") + "\n" for s in sections), encoding="utf-8")


def command_note():
    """The results note that gives the command of this run, with the OpenBLAS override
    variables unset as every benchmark runs; a data folder given by an absolute path is
    written as ``$CLUSTERKIT_DATA`` (results name no paths of the machine)."""
    import shlex
    args = [shlex.quote(a) for a in sys.argv]
    for i in range(1, len(args)):
        if args[i - 1] in ("--data", "--data-home") and os.path.isabs(sys.argv[i]):
            args[i] = '"$CLUSTERKIT_DATA"'
    return ("Command: `" + " ".join(["env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE", "python"]
                                    + args) + "`")


def publish(title, markdown_table, notes, write, info=None):
    """Print a benchmark's table and notes, and write its RESULTS.md section if ``write``."""
    print(markdown_table)
    for note in notes:
        print("-", note)
    if write:
        write_results(RESULTS_PATH, title, markdown_table, notes, info)
