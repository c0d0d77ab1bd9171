"""Tests for ``python -m clusterkit demo`` (tiny grids only; no timing assertions)."""
import re

import numpy as np
import pytest
from sklearn.cluster import KMeans

from clusterkit import Clusterer, __main__ as cli, _demo

ROWS = (_demo.REFERENCE, "preset lloyd", "preset lwcs_lloyd", "preset vc_gmm", _demo.CARD,
        "preset best_quality")


def parse_table(out):
    """Return {variant: [seconds, speed-up, error vs sklearn (%), error / truth, evals]} from
    the output; scikit-learn's uncounted distance evaluations are ``nan``."""
    lines = out.splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("variant"))
    assert re.split(r"\s{2,}", lines[header]) == list(_demo.COLUMNS)
    assert set(lines[header + 1]) <= {"-", " "}
    rows = {}
    for line in lines[header + 2:]:
        if not line.strip():
            break
        label, *cells = re.split(r"\s{2,}", line.strip())
        rows[label] = [float("nan") if cell == "-" else float(cell.rstrip("x %").replace(",", ""))
                       for cell in cells]
    return rows


def run_demo(capsys, *argv):
    assert _demo.main(list(argv)) == 0
    return capsys.readouterr().out


def test_demo_table_is_consistent(capsys):
    out = run_demo(capsys, "--n-side", "4", "--random-state", "0", "--n-threads", "1")
    assert "BIRCH grid 4 x 4 (C=16 clusters, N=1,600 samples, D=2, float32)" in out
    assert re.search(r"numpy \S+, OpenMP (on|off), 1 thread\b", out)
    assert "coresets of 533 draws" in out  # a third of the data on a grid this small
    assert sum(line.startswith("variant") for line in out.splitlines()) == 1
    truth = float(re.search(r"true means ([\d,.]+)", out).group(1).replace(",", ""))
    rows = parse_table(out)
    assert tuple(rows) == ROWS
    ref_seconds, _, _, ref_relative, _ = rows[_demo.REFERENCE]
    assert rows[_demo.REFERENCE][1:3] == [1.0, 0.0]
    for label, (seconds, speed_up, vs_sklearn, relative, evals) in rows.items():
        assert np.isfinite([seconds, speed_up, vs_sklearn, relative]).all(), label
        assert seconds >= 0 and speed_up > 0 and relative > 0, label
        # the error columns agree with each other (both rounded in print)
        assert 100 * (relative / ref_relative - 1) == pytest.approx(vs_sklearn, abs=0.3), label
        if label != _demo.REFERENCE:
            assert evals > 0, label
    assert np.isnan(rows[_demo.REFERENCE][4])  # scikit-learn does not count them
    # every exact E-step evaluates all N C distances at least once
    assert rows["preset lloyd"][4] >= 1600 * 16
    # the summary lines name rows of the table and repeat their numbers
    for what in ("fastest", "lowest error"):
        label, speed_up, vs_sklearn = re.search(
            rf"^{what}: (.+), ([\d.]+)x faster than scikit-learn at ([-+][\d.]+) % error$",
            out, re.M).groups()
        assert rows[label][1:3] == [float(speed_up), float(vs_sklearn)]
    lowest = min(row[3] for label, row in rows.items() if label != _demo.REFERENCE)
    assert rows[re.search(r"^lowest error: (.+), ", out, re.M).group(1)][3] == lowest
    assert truth > 0


def test_demo_is_deterministic(capsys):
    def errors(out):  # and distance evaluations; not the times
        return {label: [row[2], row[3], str(row[4])] for label, row in parse_table(out).items()}

    first = run_demo(capsys, "--n-side", "3", "--random-state", "5", "--n-threads", "1")
    second = run_demo(capsys, "--n-side", "3", "--random-state", "5", "--n-threads", "1")
    assert errors(first) == errors(second)


def test_cli_dispatches_to_the_demo(capsys):
    assert cli.main(["demo", "--n-side", "2", "--n-threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "BIRCH grid 2 x 2 (C=4 clusters, N=400 samples" in out
    assert tuple(parse_table(out)) == ROWS


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "python -m clusterkit demo" in out
    assert "--n-side" in out and "--random-state" in out and "--n-threads" in out
    assert "(default: 32)" in out


def test_cli_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["frobnicate"])
    assert exc.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _demo.main(["--n-side", "four"])
    assert "argument --n-side: invalid int value: 'four'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _demo.main(["--n-side", "0"])
    assert "argument --n-side: must be >= 1, got 0" in capsys.readouterr().err
    for option, value, message in [
            ("--random-state", "-1", "argument --random-state: must be in [0, 2**32), got -1"),
            ("--n-threads", "0", "argument --n-threads: n_threads=0 must be a positive")]:
        with pytest.raises(SystemExit) as exc:
            _demo.main([option, value])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err


def test_demo_prints_warnings_after_the_table(capsys):
    # with 4 clusters the neighbourhoods of G=5 are clamped, with a warning
    out = run_demo(capsys, "--n-side", "2", "--n-threads", "1")
    table, notes = out.split("\nwarnings:\n")
    assert len(parse_table(table)) == len(ROWS)
    assert re.search(r"^  preset vc_gmm: G=5 > n_clusters=4; using G=n_clusters\.$", notes,
                     re.M)


def test_demo_variants_get_the_random_state_threads_and_coreset():
    assert _demo._coreset_size(102_400, 1024) == 2 ** 15  # the presets' default
    assert _demo._coreset_size(409_600, 4096) == 32 * 4096
    assert _demo._coreset_size(1600, 16) == 533
    rows = _demo._variants(16, random_state=7, n_threads=1, coreset_size=200)
    assert [label for label, _ in rows] == list(ROWS)
    assert isinstance(rows[0][1], KMeans) and rows[0][1].n_init == 1
    for label, estimator in rows:
        params = estimator.get_params()
        assert params["random_state"] == 7, label
        if isinstance(estimator, Clusterer):
            assert params["n_threads"] == 1, label
    assert rows[2][1].reduce.size == 200 and rows[4][1].reduce.size == 200
