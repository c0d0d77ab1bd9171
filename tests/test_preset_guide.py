"""The preset guide: an entry for every preset, and the generated tables of the README and
the documentation agree with each other and with the guide; the hand-written list of the API
page and the memory table list the presets of the registry."""
import re
from pathlib import Path

import pytest

from clusterkit import presets
from clusterkit._estimator.guide import GUIDE_FIELDS
from clusterkit.presets import GUIDE, PRESETS, PresetGuide

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "docs" / "presets_table.inc"
README = ROOT / "README.md"
MARKERS = ("<!-- presets:start -->", "<!-- presets:end -->")
MODELS = {"k-means", "spherical k-means", "isotropic GMM", "Laplacian K-modes"}


def _rows(text):
    """The cells of every row of the ``list-table`` in ``text``."""
    rows = []
    for line in text.splitlines():
        if line.startswith("   * - "):
            rows.append([line[len("   * - "):]])
        elif line.startswith("     - "):
            rows[-1].append(line[len("     - "):])
    return rows


def _rst_rows(text):
    """The cells of every row of the ``list-table`` in ``text``; the preset cells'
    ``:func:`` markup reduced to the name."""
    rows = _rows(text)
    for row in rows[1:]:
        match = re.fullmatch(r":func:`(\w+) <clusterkit\.presets\.(\w+)>`", row[0])
        assert match and match.group(1) == match.group(2), row[0]
        row[0] = match.group(1)
    return rows


def _markdown_rows(text):
    """The cells of every row of the Markdown table between the README's markers, without the
    separator row; the preset cells' backquotes removed."""
    start, end = MARKERS
    assert text.count(start) == 1 and text.count(end) == 1, "the README's markers"
    block = text.split(start)[1].split(end)[0]
    rows = [[cell.strip() for cell in line.strip()[1:-1].split(" | ")]
            for line in block.splitlines() if line.startswith("|")]
    assert rows and set(rows[1]) == {"---"}, "a Markdown table with a header row"
    del rows[1]
    for row in rows[1:]:
        assert re.fullmatch(r"`\w+`", row[0]), row[0]
        row[0] = row[0].strip("`")
    return rows


@pytest.fixture(scope="module")
def tables():
    return (_rst_rows(INCLUDE.read_text(encoding="utf-8")),
            _markdown_rows(README.read_text(encoding="utf-8")))


def test_every_preset_has_a_guide_entry():
    assert tuple(GUIDE) == PRESETS
    for name, entry in GUIDE.items():
        assert isinstance(entry, PresetGuide), name
        assert entry.model in MODELS, name
        assert isinstance(entry.sparse, bool), name
        for field in GUIDE_FIELDS:
            text = getattr(entry, field)
            assert isinstance(text, str) and text.strip() == text and text, (name, field)
            # plain text: the same words in the terminal, rST and Markdown
            assert not set(text) & set("`*|\\") and not re.search(r"\w_\b", text), (
                name, field, text)


def test_guide_is_public_in_presets():
    assert {"GUIDE", "PresetGuide"} <= set(presets.__all__)
    assert PresetGuide.__doc__ and "cost" in PresetGuide._fields


def test_readme_and_docs_tables_agree_and_list_every_preset(tables):
    rst, markdown = tables
    assert rst == markdown, "README.md's preset table differs from docs/presets_table.inc; " \
                            "both are written by benchmarks/bench_presets.py --write"
    header, *rows = rst
    assert [row[0] for row in rows] == list(PRESETS)
    assert all(len(row) == len(header) for row in rows)
    # at least one measured data kind, and a measurement in every cell
    assert len(header) > 1 + len(PresetGuide._fields)
    assert all(h.endswith(": time / error") for h in header[1 + len(PresetGuide._fields):])
    for row in rows:
        for cell in row[1 + len(PresetGuide._fields):]:
            assert re.match(r"[\d.e+-]+ / \d+\.\d{3}\b", cell), cell


def test_tables_static_columns_equal_the_guide(tables):
    header, *rows = tables[0]
    n_static = len(GUIDE_FIELDS)
    assert header[0] == "preset" and len(header) > n_static
    for row in rows:
        assert tuple(row[1:1 + n_static]) == tuple(getattr(GUIDE[row[0]], field)
                                                   for field in GUIDE_FIELDS), (
            f"the table's row of {row[0]} is not the package's guide; rerun "
            "benchmarks/bench_presets.py --write")


def test_docs_page_includes_the_table():
    page = (ROOT / "docs" / "choosing.rst").read_text(encoding="utf-8")
    assert ".. include:: presets_table.inc" in page
    assert re.search(r"^   choosing$", (ROOT / "docs" / "index.rst").read_text(
        encoding="utf-8"), re.M)


def test_api_page_lists_the_presets_in_the_registrys_order():
    """``docs/api.rst`` cannot import the registry: its hand-written list of
    :mod:`clusterkit.presets` is checked against it (``__all__``, the presets first)."""
    text = (ROOT / "docs" / "api.rst").read_text(encoding="utf-8")
    section = text.split(".. currentmodule:: clusterkit.presets", 1)[1]
    table = section.split(".. autosummary::", 1)[1].split("\n\n", 2)[1]
    assert [line.strip() for line in table.splitlines()] == presets.__all__


def test_memory_table_lists_every_preset_in_the_registrys_order():
    """``docs/memory_table.inc`` (written by ``benchmarks/bench_memory.py``): per shape, one
    row per preset."""
    header, *rows = _rows((ROOT / "docs" / "memory_table.inc").read_text(encoding="utf-8"))
    assert header[:2] == ["preset", "N x D, C"]
    shapes = list(dict.fromkeys(row[1] for row in rows))
    assert shapes
    for shape in shapes:
        assert [row[0] for row in rows if row[1] == shape] == list(PRESETS), shape
