"""A fit's memory: ``Clusterer.estimate_memory`` next to the measured peak, for every preset.

Each fit runs in its own subprocess: the data are made (float32 Gaussian blobs), the resident
memory's high-water mark is reset (``/proc/self/clear_refs``), the fit runs, and the peak
(``VmHWM``) less the resident memory just before the fit is compared with the estimate made
before it. Each fit is the preset's default fit, run to its end (every page it allocates is
then written, e.g. the bounds of a nested mini-batch's last prefix). The baseline is taken
after the imports, the data and, for the presets whose kNN graph pynndescent searches, a
search on a few rows (numba compiles pynndescent's functions in the process once, hundreds of
MB that are no part of a fit's memory). A last fit reads a numpy.memmap larger than its
``memory_limit`` in row blocks; its anonymous memory (``RssAnon``, sampled every 2 ms: the
file's pages the kernel maps in are the page cache's, not the fit's) is shown next to the
limit.

Usage::

    python benchmarks/bench_memory.py                 # the table, appended to RESULTS.md
    python benchmarks/bench_memory.py --no-write      # only print it

Linux only (``/proc``).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

#: (n_samples, n_features, n_clusters) of the preset fits: the three seedings' paths (all
#: rows up to 16 features, a sample up to 64, AFK-MC² above), tens to hundreds of MB of a
#: fit's own memory, each fit within seconds on two cores.
SHAPES = [(50_000, 8, 50), (50_000, 32, 200), (20_000, 128, 100)]

#: The memmap fit: rows, features, clusters, memory_limit.
MEMMAP = (2_000_000, 32, 100, 192 << 20)

HEADER = ("| preset | N x D, C | estimate (MiB) | largest phase | resident peak (MiB) "
          "| resident / estimate | iterations | seconds |\n"
          "|---|---|---:|---|---:|---:|---:|---:|")


def _status():
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon"):
                values[key] = int(value.split()[0]) * 1024
    return values


def _blobs(n_samples, n_features, seed=0):
    rng = np.random.RandomState(seed)
    centres = rng.uniform(-10, 10, size=(64, n_features)).astype(np.float32)
    X = rng.standard_normal((n_samples, n_features)).astype(np.float32)
    X += centres[rng.randint(0, 64, n_samples)]
    return X


def child(args):
    """One fit in this process; prints a JSON line."""
    from clusterkit import Clusterer, presets  # noqa: F401 (imports before the baseline)
    from _common import preset_keywords
    name, n_samples, n_features, n_clusters = args.child
    n_samples, n_features, n_clusters = int(n_samples), int(n_features), int(n_clusters)
    kwargs = dict(random_state=0, n_threads=args.n_threads)
    if args.memmap:
        X = np.memmap(args.memmap, dtype=np.float32, mode="r", shape=(n_samples, n_features))
        kwargs["memory_limit"] = args.limit
    else:
        X = _blobs(n_samples, n_features)
    model = presets.build_preset(name, n_clusters, **kwargs,
                                 **preset_keywords(name, n_samples, n_clusters))
    if name.startswith("slk_"):  # numba compiles pynndescent's search before the baseline
        from clusterkit.slk.graph import knn_graph
        knn_graph(_blobs(2_000, n_features, seed=1), 5, exact=False, random_state=0)
    estimate = model.estimate_memory(X)
    peak_anon = [0]
    done = threading.Event()

    def sample():
        while not done.wait(0.002):
            peak_anon[0] = max(peak_anon[0], _status()["RssAnon"])
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    before = _status()
    peak_anon[0] = before["RssAnon"]
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    after = _status()
    print(json.dumps({
        "preset": name, "shape": [n_samples, n_features, n_clusters],
        "estimate": int(estimate), "phases": estimate.phases,
        "peak": after["VmHWM"] - before["VmRSS"],
        "peak_anon": max(peak_anon[0], after["RssAnon"]) - before["RssAnon"],
        "seconds": seconds, "n_iter": int(model.n_iter_), "limit": args.limit}))


#: The heading of the benchmark's section of RESULTS.md.
MARKER = "\n## Memory: estimate and measured peak"

#: The fits the memory issue named: C = 20,000 on 1,000,000 x 32 float32.
LARGE = ("var_kmeans_s", "large_scale", "lloyd", "elkan", "minibatch", "best_quality")


def large_table(limits=(None, 1 << 30, 256 << 20)):
    """The estimates and decisions of the :data:`LARGE` fits (nothing runs), as rst."""
    from clusterkit import FitMemoryError, presets
    from clusterkit._engine.footprint import plan_memory
    lines = [".. list-table::", "   :header-rows: 1", "",
             "   * - preset", "     - memory_limit", "     - estimate (GiB)",
             "     - by phase (GiB)", "     - decision"]
    for name in LARGE:
        for limit in limits:
            model = presets.build_preset(name, 20_000, memory_limit=limit)
            estimate = model.estimate_memory((1_000_000, 32), np.float32)
            phases = ", ".join(f"{phase} {n_bytes / 2**30:.2f}" for phase, n_bytes
                               in estimate.phases.items() if n_bytes)
            try:
                plan_memory(estimate, 20_000, lambda n_clusters: int(
                    presets.build_preset(name, n_clusters, memory_limit=limit)
                    .estimate_memory((1_000_000, 32), np.float32)) <= estimate.budget)
                decision = "runs within the budget"
            except FitMemoryError as error:
                decision = "refused: " + str(error).split("What would fit: ")[1]
            budget = ("default" if limit is None else f"{limit >> 20} MiB") + \
                f" (budget {estimate.budget / 2**30:.2f} GiB)"
            lines += [f"   * - ``{name}``", f"     - {budget}",
                      f"     - {int(estimate) / 2**30:.2f}", f"     - {phases}",
                      f"     - {decision}"]
    return "\n".join(lines) + "\n"


def write_docs_table(results, inc):
    """``docs/memory_table.inc``: the table of ``RESULTS.md``'s memory section, as rst."""
    with open(results) as handle:
        section = handle.read().partition(MARKER)[2].split("\n## ", 1)[0]
    lines = section.splitlines()
    rows = [line for line in lines if line.startswith("| ") and "---" not in line]
    notes = [line for line in lines if line.startswith(("Command:", "memmap", "Largest"))]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in cells:
        out += [f"   * - {row[0]}"] + [f"     - {cell}" for cell in row[1:]]
    with open(inc, "w") as handle:
        # (rst: code in double backquotes, bars that are not substitutions)
        handle.write("\n".join(out + [""] + [note.replace("`", "``").replace("|", "\\|")
                                              + "\n" for note in notes]))


def run_child(argv):
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    # a fixed threshold: glibc's moving one keeps freed arrays resident for reuse, which
    # hides a fit's allocations from the peak
    env["MALLOC_MMAP_THRESHOLD_"] = str(1 << 17)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), *argv], env=env,
                         capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def mib(n_bytes):
    return f"{n_bytes / 2**20:.1f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--memmap", help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--presets", nargs="*", default=None)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--docs-table", action="store_true",
                        help="only write docs/memory_table.inc from RESULTS.md")
    parser.add_argument("--large", action="store_true",
                        help="only print the estimates of the issue's large fits (rst)")
    args = parser.parse_args()
    if args.child:
        return child(args)
    if args.large:
        return print(large_table(), end="")
    here = os.path.dirname(os.path.abspath(__file__))
    if args.docs_table:
        return write_docs_table(os.path.join(here, "RESULTS.md"),
                                os.path.join(os.path.dirname(here), "docs", "memory_table.inc"))
    from clusterkit import __version__, openmp_enabled
    from clusterkit.presets import PRESETS
    names = args.presets or list(PRESETS)
    common = ["--n-threads", str(args.n_threads)]
    rows, ratios = [], []
    print(HEADER)
    for shape in SHAPES:
        for name in names:
            result = run_child(["--child", name, *map(str, shape), *common])
            if "error" in result:
                line = f"| {name} | {shape[0]} x {shape[1]}, {shape[2]} | error: " \
                       f"{result['error'][:60]} | | | | | |"
            else:
                ratio = result["peak"] / result["estimate"]
                ratios.append(ratio)
                phase = max(result["phases"], key=result["phases"].get)
                line = (f"| {name} | {shape[0]} x {shape[1]}, {shape[2]} | "
                        f"{mib(result['estimate'])} | {phase} | {mib(result['peak'])} | "
                        f"{ratio:.2f} | {result['n_iter']} | {result['seconds']:.1f} |")
            print(line, flush=True)
            rows.append(line)
    n_samples, n_features, n_clusters, limit = MEMMAP
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "X.f32")
        data = np.memmap(path, dtype=np.float32, mode="w+", shape=(n_samples, n_features))
        for start in range(0, n_samples, 200_000):
            stop = min(n_samples, start + 200_000)
            data[start:stop] = _blobs(stop - start, n_features, seed=start)
        data.flush()
        del data
        result = run_child(["--child", "lloyd", str(n_samples), str(n_features),
                            str(n_clusters), "--memmap", path, "--limit", str(limit), *common])
    if "error" in result:
        memmap_line = f"memmap fit: error {result['error']}"
    else:
        memmap_line = (f"memmap {n_samples} x {n_features} float32 "
                       f"({mib(n_samples * n_features * 4)} MiB), lloyd, C={n_clusters}, "
                       f"memory_limit={mib(limit)} MiB: estimate {mib(result['estimate'])} "
                       f"MiB, measured peak {mib(result['peak_anon'])} MiB of anonymous "
                       f"memory ({mib(result['peak'])} MiB resident, the file's pages "
                       f"included), {result['seconds']:.1f} s")
    print()
    print(memmap_line)
    worst = max((abs(ratio - 1) for ratio in ratios), default=0.0)
    within = sum(abs(ratio - 1) <= 0.25 for ratio in ratios)
    summary = (f"Largest |measured / estimate - 1|: {worst:.2f}; within 25 %: {within} of "
               f"{len(rows)} fits.")
    print("\n" + summary)
    if args.no_write:
        return
    machine = (f"{platform.machine()}, {os.cpu_count()} cores, Python "
               f"{platform.python_version()}, clusterkit {__version__}, OpenMP "
               f"{'on' if openmp_enabled() else 'off'}, n_threads={args.n_threads}")
    section = "\n".join([
        "", "## Memory: estimate and measured peak (`bench_memory.py`)", "",
        "Command: `python benchmarks/bench_memory.py`. "
        f"Machine: {machine}. Peak resident memory of each default fit, run to its end in "
        "its own process, less the resident memory before it; float32 blobs.", "",
        HEADER, *rows, "",
        memmap_line, "", summary, ""])
    results = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
    with open(results) as handle:
        text = handle.read()
    if MARKER in text:  # the latest numbers replace the section
        head, _, tail = text.partition(MARKER)
        rest = tail.split("\n## ", 1)
        text = head.rstrip("\n") + "\n" + ("\n## " + rest[1] if len(rest) > 1 else "")
    with open(results, "w") as handle:
        handle.write(text.rstrip("\n") + "\n" + section)
    write_docs_table(results, os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "docs", "memory_table.inc"))


if __name__ == "__main__":
    main()
