"""Every code example of README.md and docs/*.rst runs, as a reader would run it.

The Python examples of one file -- ``.. code-block:: python`` directives, ``::`` literal
blocks that are Python, ``>>>`` doctest blocks, and fences marked ``python`` in README.md --
run in order in one namespace, in a temporary folder, and must not warn from clusterkit.
Shell examples are checked without installing or building anything: a ``clusterkit``
command must name an existing command, options and presets (read from its ``--help``); the
other commands are reported as skipped, each with the reason.

What an example prints, where a page shows it, is checked against what it prints now: a
text block preceded by ``.. printed-output`` (rst) or ``<!-- printed-output -->`` (Markdown)
holds the standard output of the Python block before it (:func:`output_differences` says how
the two are compared). ``python -m pytest tests/test_docs_examples.py --write-outputs``
rewrites those blocks with what the examples print; they are never edited by hand.

An example that cannot run here (a remote cluster, data of the reader's own) is preceded by
``.. skip-example: <reason>`` (an rst comment) or ``<!-- skip-example: <reason> -->`` (in
Markdown) and is reported as skipped with that reason. Examples that need an optional extra
(dask, matplotlib) are skipped, with the extra named, when it is not installed.
"""
import ast
import contextlib
import doctest
import importlib.util
import io
import re
import shlex
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

import clusterkit
from clusterkit import __main__ as cli, presets

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.rst"))]

LANGUAGES = {"python": "python", "py": "python", "python3": "python", "pycon": "doctest",
             "bash": "shell", "sh": "shell", "shell": "shell", "console": "shell",
             "text": "text", "none": "text", "": "text"}

#: Extras an example may need: (pattern in its source, modules to import, the extra).
EXTRAS = [(re.compile(r"^\s*(?:import|from)\s+(?:dask|distributed)\b", re.M),
           ("dask", "distributed"), "dask"),
          (re.compile(r"\bmatplotlib\b|\bplot_(?:history|tradeoff)\b"), ("matplotlib",),
           "plot"),
          (re.compile(r"""verbose=["']bar["']"""), ("tqdm",), "progress")]

#: Shell commands that are not run, by their first words, and why.
NOT_RUN = [(("python", "-m", "pip", "install"), "installs packages"),
           (("python", "-m", "pytest"), "runs the test suite, which includes this test"),
           (("python", "setup.py", "build_ext"), "compiles the extensions the tests import"),
           (("python", "-m", "sphinx"), "tests/test_docs.py builds the documentation")]

#: Files whose examples take more than about five seconds together.
SLOW = {"README.md", "ablations.rst", "dask.rst"}

#: What pages claim about the results of their examples, checked after they ran.
CLAIMS = {
    "README.md": [
        ("best_quality ends below vc-GMM's error on the grid",
         lambda ns: ns["best"].inertia_ < ns["gmm"].inertia_),
        ("in the ablation the composed variant with breathing and best_quality end below "
         "Lloyd's error", lambda ns: (ns["table"].groupby("variant")["eta"].mean()
                                      [["mine", "best_quality"]] < 0).all()),
        ("in the ablation vc_gmm ends above Lloyd's error",
         lambda ns: ns["table"].groupby("variant")["eta"].mean()["vc_gmm"] > 0),
    ],
    "strategies.rst": [
        ("the mini-batch run spends its budget of 3 passes and converges",
         lambda ns: ns["km"].history_[-1]["passes"] == 3.0 and ns["km"].converged_),
    ],
    "quickstart.rst": [
        ("quantization_error equals inertia_ on the training data",
         lambda ns: abs(ns["quantization_error"](ns["X"], ns["km"].cluster_centers_)
                        - ns["km"].inertia_) <= 1e-9 * ns["km"].inertia_),
        ("var-GMM-S evaluates at most N (C' G + 1) = 260,000 distances per E-step",
         lambda ns: all(0 < b - a <= 260_000 for a, b in zip(ns["evals"], ns["evals"][1:]))),
        ("the saved and loaded model predicts as the fitted one",
         lambda ns: (ns["loaded"].predict(ns["X"]) == ns["km"].predict(ns["X"])).all()),
    ],
}


@dataclass
class Block:
    path: Path
    line: int          # line of the first line of code (1-based)
    kind: str          # "python", "doctest", "shell", "text" or "unknown: <why>"
    source: str
    skip: str = None   # the reason given in a skip-example comment
    printed: bool = False  # a printed-output block: what the Python block before it prints

    @property
    def where(self):
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _indent(line):
    return len(line) - len(line.lstrip())


def _indented_body(lines, start, indent):
    """The block of lines from ``start`` on that are blank or indented deeper than
    ``indent``: ``(index of its first non-blank line, its dedented text, index after it)``."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    content = [i for i in range(start, end) if lines[i].strip()]
    if not content:
        return start, "", end
    first, last = content[0], content[-1]
    return first, textwrap.dedent("\n".join(lines[first:last + 1])) + "\n", end


def _literal_kind(source):
    """What an rst ``::`` literal block holds: a doctest, shell commands, Python, or
    ``unknown`` (the page should say, with ``.. code-block:: text`` for instance)."""
    if source.lstrip().startswith(">>>"):
        return "doctest"
    first = source.split()[0] if source.split() else ""
    if first in ("clusterkit", "python", "pip", "$"):
        return "shell"
    try:
        ast.parse(source)
    except SyntaxError:
        return "unknown: a literal block that is neither Python, a doctest nor a command"
    return "python"


_RST_CODE = re.compile(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode)::\s*(\S*)\s*$")
_RST_SKIP = re.compile(r"^\s*\.\.\s+skip-example:\s*(.*?)\s*$")
_RST_PRINTED = re.compile(r"^\s*\.\.\s+printed-output\s*$")
_MD_FENCE = re.compile(r"^```\s*(\S*)\s*$")
_MD_SKIP = re.compile(r"^\s*<!--\s*skip-example:\s*(.*?)\s*-->\s*$")
_MD_PRINTED = re.compile(r"^\s*<!--\s*printed-output\s*-->\s*$")


def rst_blocks(path):
    """The code blocks of an rst file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, skip, printed, i = [], None, False, 0
    while i < len(lines):
        line = lines[i]
        match_skip, match_code = _RST_SKIP.match(line), _RST_CODE.match(line)
        if match_skip:
            skip = match_skip.group(1) or "(no reason given)"
            i += 1
        elif _RST_PRINTED.match(line):
            printed, i = True, i + 1
        elif match_code:
            indent, language = len(match_code.group(1)), match_code.group(2).lower()
            start = i + 1
            while start < len(lines) and lines[start].strip().startswith(":") and \
                    _indent(lines[start]) > indent:  # the directive's options
                start += 1
            first, source, i = _indented_body(lines, start, indent)
            kind = LANGUAGES.get(language, f"unknown: code-block language {language!r}")
            blocks.append(Block(path, first + 1, kind, source, skip, printed))
            skip, printed = None, False
        elif line.rstrip().endswith("::") and not line.lstrip().startswith(".."):
            first, source, i = _indented_body(lines, i + 1, _indent(line))
            blocks.append(Block(path, first + 1, _literal_kind(source), source, skip))
            skip = None
        elif line.lstrip().startswith(">>>") and (i == 0 or not lines[i - 1].strip()):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            blocks.append(Block(path, i + 1, "doctest",
                                textwrap.dedent("\n".join(lines[i:end])) + "\n", skip))
            skip, i = None, end
        else:
            i += 1
    return blocks


def markdown_blocks(path):
    """The fenced code blocks of a Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, skip, printed, i = [], None, False, 0
    while i < len(lines):
        match_skip, match_fence = _MD_SKIP.match(lines[i]), _MD_FENCE.match(lines[i])
        if match_skip:
            skip = match_skip.group(1) or "(no reason given)"
        elif _MD_PRINTED.match(lines[i]):
            printed = True
        elif match_fence:
            language = match_fence.group(1).lower()
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            kind = LANGUAGES.get(language, f"unknown: fence language {language!r}")
            blocks.append(Block(path, i + 2, kind, "\n".join(lines[i + 1:end]) + "\n", skip,
                                printed))
            skip, printed, i = None, False, end
        i += 1
    return blocks


def blocks_of(path):
    return markdown_blocks(path) if path.suffix == ".md" else rst_blocks(path)


BLOCKS = [block for path in FILES for block in blocks_of(path)]
PYTHON_FILES = sorted({b.path for b in BLOCKS if b.kind in ("python", "doctest")},
                      key=FILES.index)


def _commands(block):
    """The commands of a shell block: continuation lines joined, comments and prompts
    dropped, ``&&`` chains split."""
    text = re.sub(r"\\\n", " ", block.source)
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("$ "):
            line = line[2:]
        if not line or line.startswith("#"):
            continue
        for command in line.split("&&"):
            words = shlex.split(command, comments=True)
            while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
                words.pop(0)  # environment settings before the command
            if words:
                yield words


SHELL_COMMANDS = [(block, words) for block in BLOCKS if block.kind == "shell"
                  for words in _commands(block)]


# -- the extraction itself ---------------------------------------------------------------------


def test_extraction_finds_the_examples():
    by_file = {}
    for block in BLOCKS:
        by_file.setdefault(block.path.name, []).append(block.kind)
    assert by_file["README.md"].count("python") >= 2 and "shell" in by_file["README.md"]
    assert by_file["quickstart.rst"].count("python") >= 8
    assert "shell" in by_file["ablations.rst"]  # the "::" literal block of a command
    assert "text" in by_file["composing.rst"]  # the driver's pseudo-code is not run


def test_extraction_of_every_kind_of_block(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text(textwrap.dedent("""\
        Title
        =====

        .. code-block:: python
           :caption: options are not code

           a = 1

        A literal block::

           b = a + 1

        >>> b * 2
        4

        .. skip-example: needs a cluster

        .. code-block:: bash

           clusterkit presets

        Pseudo-code::

           repeat until converged

        .. note::

           .. code-block:: text

              nested
        """))
    blocks = rst_blocks(page)
    assert [(b.kind, b.line, b.skip) for b in blocks] == [
        ("python", 7, None), ("python", 11, None), ("doctest", 13, None),
        ("shell", 20, "needs a cluster"), (blocks[4].kind, 24, None), ("text", 30, None)]
    assert [b.source for b in blocks[:3]] == ["a = 1\n", "b = a + 1\n", ">>> b * 2\n4\n"]
    assert blocks[4].kind.startswith("unknown")
    readme = tmp_path / "README.md"
    readme.write_text("text\n\n<!-- skip-example: downloads -->\n```python\nx = 1\n```\n\n"
                      "```bash\npip install x && clusterkit presets\n```\n")
    blocks = markdown_blocks(readme)
    assert [(b.kind, b.line, b.skip, b.source) for b in blocks] == [
        ("python", 5, "downloads", "x = 1\n"),
        ("shell", 9, None, "pip install x && clusterkit presets\n")]
    assert list(_commands(blocks[1])) == [["pip", "install", "x"], ["clusterkit", "presets"]]


def test_every_block_says_what_it_is():
    unknown = [f"{b.where}: {b.kind[len('unknown: '):]}" for b in BLOCKS
               if b.kind.startswith("unknown")]
    assert not unknown, (
        "these blocks are neither Python, a doctest, shell nor marked as text; write "
        "'.. code-block:: python' (or bash, or text) instead of '::':\n" + "\n".join(unknown))


# -- Python examples ---------------------------------------------------------------------------


def _missing_extra(source):
    for pattern, modules, extra in EXTRAS:
        if pattern.search(source):
            missing = [m for m in modules if importlib.util.find_spec(m) is None]
            if missing:
                return f"needs {', '.join(missing)}: pip install 'clusterkit[{extra}]'"
    return None


def _run_doctest(block, namespace):
    test = doctest.DocTestParser().get_doctest(block.source, namespace, block.where,
                                               str(block.path), block.line - 1)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=False)
    assert not runner.failures, f"{block.where}: the doctest failed:\n{report.getvalue()}"


def _run_python(block, namespace):
    # padded so that a traceback names the line of the page
    code = compile("\n" * (block.line - 1) + block.source, str(block.path), "exec")
    exec(code, namespace)


#: A number as printed: sign, digits (thousands commas), decimals, exponent.
_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", re.I)


def _speed_figures(lines):
    """The places ``(line, token)`` of the speed figures in printed ``lines`` split at
    whitespace: a number followed by the unit ``s`` (``2.0 s``, ``(0.455 s)``), a
    speed-up (``5.7x``), and in a table with a column headed ``seconds``, that column's
    numbers (a row is its label, then one cell per header)."""
    speed, column = set(), None
    for i, line in enumerate(lines):
        tokens = line.split()
        if "seconds" in tokens:
            column = (len(tokens), tokens.index("seconds"))
            continue
        if not tokens:
            column = None
        for j, token in enumerate(tokens):
            unit = tokens[j + 1] if j + 1 < len(tokens) else ""
            if _NUMBER.search(token) and (re.fullmatch(r"s\W*", unit)
                                          or re.fullmatch(r"\W*[\d.]+x\W*", token)):
                speed.add((i, j))
        if column and len(tokens) == column[0] + 1:
            speed.add((i, column[1] + 1))
    return speed


def output_differences(shown, printed):
    """The lines where the output a page ``shown`` differs from what its example
    ``printed``, as ``"shown: ... / printed: ..."`` texts (none: they agree).

    Lines are compared token by token (split at whitespace, so a table column that widens
    is no difference). Every word and number must be exactly as printed, except the speed
    figures (:func:`_speed_figures`: seconds and speed-ups), which vary with the machine
    and its load: those are compared by structure, a number in the same place, of any
    value.
    """
    shown, printed = shown.rstrip("\n").splitlines(), printed.rstrip("\n").splitlines()
    if len(shown) != len(printed):
        return [f"{len(shown)} lines shown, {len(printed)} printed:\n" + "\n".join(printed)]
    speed = _speed_figures(shown)

    def agree(i, j, a, b):
        return a == b or ((i, j) in speed and _NUMBER.search(b) is not None
                          and _NUMBER.sub("#", a) == _NUMBER.sub("#", b))

    return [f"shown:   {a}\nprinted: {b}" for i, (a, b) in enumerate(zip(shown, printed))
            if len(a.split()) != len(b.split())
            or not all(agree(i, j, x, y) for j, (x, y) in enumerate(zip(a.split(), b.split())))]


def _printed_pairs(path):
    """The printed-output blocks of ``path``, each with the Python block before it."""
    blocks = [b for b in BLOCKS if b.path == path]
    return [(blocks[i - 1] if i else None, b) for i, b in enumerate(blocks) if b.printed]


def _write_output(block, printed):
    """Replace the printed-output ``block`` in its file by ``printed`` (same indentation)."""
    lines = block.path.read_text(encoding="utf-8").splitlines(keepends=True)
    start, end = block.line - 1, block.line - 1 + len(block.source.rstrip("\n").splitlines())
    indent = " " * min(_indent(line) for line in lines[start:end] if line.strip())
    lines[start:end] = [(indent + line.rstrip() if line.strip() else "") + "\n"
                        for line in printed.rstrip("\n").splitlines()]
    block.path.write_text("".join(lines), encoding="utf-8")


def _close_resources(namespace):
    """Close what the examples opened: dask clients and clusters, matplotlib figures."""
    for value in namespace.values():
        if type(value).__module__.startswith("distributed") and hasattr(value, "close"):
            value.close()
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt
        plt.close("all")


@pytest.mark.parametrize("path", [
    pytest.param(path, marks=[pytest.mark.slow] if path.name in SLOW else [],
                 id=str(path.relative_to(ROOT))) for path in PYTHON_FILES])
def test_python_examples_run(path, tmp_path, monkeypatch, request):
    """The file's Python examples run in order in one namespace, without a clusterkit
    warning, what the page claims about their results holds, and the outputs it shows are
    what they print now (:func:`output_differences`; ``--write-outputs`` rewrites them)."""
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib
        matplotlib.use("Agg")  # files only, never a window
    monkeypatch.chdir(tmp_path)  # examples may write files
    namespace = {"__name__": "__main__"}
    package = str(Path(clusterkit.__file__).resolve().parent)
    printed = {}  # what each Python block printed, by its line
    try:
        for block in (b for b in BLOCKS if b.path == path):
            if block.kind not in ("python", "doctest") or block.skip:
                continue
            missing = _missing_extra(block.source)
            if missing:
                pytest.skip(f"{block.where} and the examples after it: {missing}")
            out = io.StringIO()
            with warnings.catch_warnings(record=True) as caught, \
                    contextlib.redirect_stdout(out if block.kind == "python" else sys.stdout):
                warnings.simplefilter("always")
                (_run_doctest if block.kind == "doctest" else _run_python)(block, namespace)
            printed[block.line] = out.getvalue()
            ours = [w for w in caught if w.filename == str(path)
                    or str(Path(w.filename).resolve()).startswith(package)]
            assert not ours, f"{block.where} warns: " + "; ".join(
                f"{w.category.__name__}: {w.message}" for w in ours)
        for claim, holds in CLAIMS.get(path.name, []):
            assert holds(namespace), f"{path.name}: {claim}"
        stale = []
        for example, shown in reversed(_printed_pairs(path)):  # rewritten from the end
            now = printed[example.line]
            if request.config.getoption("--write-outputs"):
                _write_output(shown, now)
            elif output_differences(shown.source, now):
                stale.append(f"{shown.where}:\n" + "\n".join(
                    output_differences(shown.source, now)))
        assert not stale, ("the printed output shown is not what the example prints now "
                           "(rewrite it with --write-outputs):\n" + "\n".join(stale))
    finally:
        _close_resources(namespace)


@pytest.mark.parametrize("path", sorted({b.path for b in BLOCKS if b.printed}),
                         ids=lambda path: str(path.relative_to(ROOT)))
def test_printed_outputs_follow_an_example_that_runs(path):
    """A printed-output block is a text block right after a Python block that runs here."""
    for example, shown in _printed_pairs(path):
        assert shown.kind == "text", f"{shown.where}: a printed output is a text block"
        assert example is not None and example.kind == "python" and not example.skip, (
            f"{shown.where}: a printed output follows the Python example that prints it")


def test_printed_outputs_are_compared_exactly_but_speed_figures():
    shown = textwrap.dedent("""\
                     seconds        qe       eta
        variant
        lloyd       0.223408  87918.22  0.000000
        Seeding: 100 centres, 603390 distance evaluations, 0.0964 s
        Iteration 1: objective=34098.2 (0.455 s), 5.7x faster
        """)
    timing = (shown.replace("0.223408", "10.5").replace("0.0964", "0.102")
              .replace("0.455", "1.5").replace("5.7x", "12x"))
    assert output_differences(shown, timing) == []
    for exact in ("87918.22", "603390", "34098.2", "100 centres", "variant"):
        changed = shown.replace(exact, exact.replace("2", "3").replace("0", "1")
                                .replace("variant", "Variant"))
        assert len(output_differences(shown, changed)) == 1, exact
    assert output_differences(shown, shown + "one more line\n")
    assert output_differences(shown, shown.replace("0.0964 s", "s"))


def test_printed_output_is_rewritten_in_place(tmp_path):
    page = tmp_path / "page.rst"
    page.write_text("Title\n\n.. code-block:: python\n\n   print(1)\n\n.. printed-output\n\n"
                    ".. code-block:: text\n\n   0\n   stale\n\nAfter.\n")
    example, shown = rst_blocks(page)
    assert shown.printed and not example.printed and shown.source == "0\nstale\n"
    _write_output(shown, "1\n")
    assert page.read_text().endswith(".. code-block:: text\n\n   1\n\nAfter.\n")
    readme = tmp_path / "README.md"
    readme.write_text("```python\nprint(2)\n```\n\n<!-- printed-output -->\n```text\n  1\n0\n```\n")
    example, shown = markdown_blocks(readme)
    assert shown.printed and shown.source == "  1\n0\n"
    _write_output(shown, "  2\n3\n")
    assert readme.read_text().endswith("```text\n  2\n3\n```\n")


def test_an_example_needing_a_missing_extra_is_skipped_with_the_extra_named(monkeypatch):
    assert _missing_extra("x = 1\n") is None
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert _missing_extra("import dask.array as da\n") == \
        "needs dask, distributed: pip install 'clusterkit[dask]'"
    assert _missing_extra("plot_history(table)\n") == \
        "needs matplotlib: pip install 'clusterkit[plot]'"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.skip],
                         ids=lambda b: b.where)
def test_skipped_examples_say_why(block):
    assert block.skip != "(no reason given)", f"{block.where}: say why it is skipped"
    pytest.skip(f"{block.where}: {block.skip}")


# -- shell examples ----------------------------------------------------------------------------


def _help(command, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0, f"clusterkit {command} --help failed"
    return out


def _check_clusterkit_command(words, capsys, where):
    command, arguments = words[0], words[1:]
    assert command in ("fit", "predict", "ablate", "presets", "demo"), (
        f"{where}: 'clusterkit {command}' is not a command")
    usage = _help(command, capsys)
    for i, word in enumerate(arguments):
        if not word.startswith("-"):
            continue
        option = word.split("=", 1)[0]
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", usage), (
            f"{where}: 'clusterkit {command}' has no option {option}")
        if option in ("--preset", "--presets"):
            value = word.split("=", 1)[1] if "=" in word else arguments[i + 1]
            unknown = [name for name in value.split(",") if name not in presets.PRESETS]
            assert not unknown, f"{where}: no preset {unknown}"
    if command == "presets":  # cheap enough to run
        assert cli.main(["presets"]) == 0
        assert capsys.readouterr().out.startswith("lloyd")


@pytest.mark.parametrize("block, words", SHELL_COMMANDS,
                         ids=[f"{b.where}:{' '.join(w)[:40]}" for b, w in SHELL_COMMANDS])
def test_shell_commands(block, words, capsys):
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    for prefix, reason in NOT_RUN:
        if tuple(words[:len(prefix)]) == prefix:
            pytest.skip(f"{block.where}: '{' '.join(words)}' not run: {reason}")
    if words[:3] == ["python", "-m", "clusterkit"]:
        words = words[3:]
    elif words[0] == "clusterkit":
        words = words[1:]
    else:
        pytest.fail(f"{block.where}: '{' '.join(words)}': neither a clusterkit command nor "
                    "one this test knows not to run (NOT_RUN)")
    _check_clusterkit_command(words, capsys, block.where)


def test_a_wrong_clusterkit_command_is_caught(capsys):
    with pytest.raises(AssertionError, match="has no option --preset-list"):
        _check_clusterkit_command(["ablate", "X.npy", "-k", "3", "--preset-list", "lloyd"],
                                  capsys, "here")
    with pytest.raises(AssertionError, match="no preset"):
        _check_clusterkit_command(["fit", "X.npy", "-k", "3", "--preset", "kmeans"], capsys,
                                  "here")
    with pytest.raises(AssertionError, match="not a command"):
        _check_clusterkit_command(["train", "X.npy"], capsys, "here")
