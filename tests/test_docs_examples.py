"""Every code example of README.md and docs/*.rst runs, as a reader would run it.

The Python examples of one file -- ``.. code-block:: python`` directives, ``::`` literal
blocks that are Python, ``>>>`` doctest blocks, and fences marked ``python`` in README.md --
run in order in one namespace, in a temporary folder, and must not warn from clusterkit.
Shell examples are checked without installing or building anything: a ``clusterkit``
command must name an existing command, options and presets (read from its ``--help``); the
other commands are reported as skipped, each with the reason.

An example that cannot run here (a remote cluster, data of the reader's own) is preceded by
``.. skip-example: <reason>`` (an rst comment) or ``<!-- skip-example: <reason> -->`` (in
Markdown) and is reported as skipped with that reason. Examples that need an optional extra
(dask, matplotlib) are skipped, with the extra named, when it is not installed.
"""
import ast
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
_MD_FENCE = re.compile(r"^```\s*(\S*)\s*$")
_MD_SKIP = re.compile(r"^\s*<!--\s*skip-example:\s*(.*?)\s*-->\s*$")


def rst_blocks(path):
    """The code blocks of an rst file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, skip, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        match_skip, match_code = _RST_SKIP.match(line), _RST_CODE.match(line)
        if match_skip:
            skip = match_skip.group(1) or "(no reason given)"
            i += 1
        elif match_code:
            indent, language = len(match_code.group(1)), match_code.group(2).lower()
            start = i + 1
            while start < len(lines) and lines[start].strip().startswith(":") and \
                    _indent(lines[start]) > indent:  # the directive's options
                start += 1
            first, source, i = _indented_body(lines, start, indent)
            kind = LANGUAGES.get(language, f"unknown: code-block language {language!r}")
            blocks.append(Block(path, first + 1, kind, source, skip))
            skip = None
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
    blocks, skip, i = [], None, 0
    while i < len(lines):
        match_skip, match_fence = _MD_SKIP.match(lines[i]), _MD_FENCE.match(lines[i])
        if match_skip:
            skip = match_skip.group(1) or "(no reason given)"
        elif match_fence:
            language = match_fence.group(1).lower()
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            kind = LANGUAGES.get(language, f"unknown: fence language {language!r}")
            blocks.append(Block(path, i + 2, kind, "\n".join(lines[i + 1:end]) + "\n", skip))
            skip, i = None, end
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
def test_python_examples_run(path, tmp_path, monkeypatch):
    """The file's Python examples run in order in one namespace, without a clusterkit
    warning, and what the page claims about their results holds."""
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib
        matplotlib.use("Agg")  # files only, never a window
    monkeypatch.chdir(tmp_path)  # examples may write files
    namespace = {"__name__": "__main__"}
    package = str(Path(clusterkit.__file__).resolve().parent)
    try:
        for block in (b for b in BLOCKS if b.path == path):
            if block.kind not in ("python", "doctest") or block.skip:
                continue
            missing = _missing_extra(block.source)
            if missing:
                pytest.skip(f"{block.where} and the examples after it: {missing}")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (_run_doctest if block.kind == "doctest" else _run_python)(block, namespace)
            ours = [w for w in caught if w.filename == str(path)
                    or str(Path(w.filename).resolve()).startswith(package)]
            assert not ours, f"{block.where} warns: " + "; ".join(
                f"{w.category.__name__}: {w.message}" for w in ours)
        for claim, holds in CLAIMS.get(path.name, []):
            assert holds(namespace), f"{path.name}: {claim}"
    finally:
        _close_resources(namespace)


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
