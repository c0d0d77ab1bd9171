"""Tests for ``python -m clusterkit demo`` (tiny grids only; no timing assertions)."""
import re

import numpy as np
import pytest

from clusterkit import __main__ as cli
from clusterkit import _demo

CORE_ROWS = ("k-means++ + Lloyd", "AFK-MC² + Lloyd", "soft EM (isotropic GMM)")


def parse_table(out):
    """Return {variant: [seconds, error, relative error, evals, iterations]} from the output."""
    lines = out.splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("variant"))
    assert set(lines[header + 1]) <= {"-", " "}
    rows = {}
    for line in lines[header + 2:]:
        if not line.strip():
            break
        label, *numbers = re.split(r"\s{2,}", line.strip())
        rows[label] = [float(number.replace(",", "")) for number in numbers]
    return rows


def test_demo_prints_one_row_per_variant(capsys):
    assert _demo.main(["--n-side", "4", "--random-state", "0", "--n-threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "BIRCH grid 4 x 4 (C=16 clusters, N=1,600 samples" in out
    assert re.search(r"numpy \S+, OpenMP (on|off), 1 thread\b", out)
    assert out.count("variant") == 1
    truth = float(re.search(r"true means ([\d,.]+)", out).group(1).replace(",", ""))
    rows = parse_table(out)
    assert set(CORE_ROWS) <= set(rows)
    assert all(label in CORE_ROWS or label.startswith("preset ") for label in rows)
    for label, (seconds, error, relative, evals, n_iter) in rows.items():
        assert np.isfinite([seconds, error, relative, evals, n_iter]).all(), label
        assert seconds >= 0 and error > 0 and evals > 0 and n_iter >= 1, label
        assert relative == pytest.approx(error / truth, abs=1e-3), label
    # every full E-step evaluates all N C distances at least once
    assert rows["k-means++ + Lloyd"][3] >= 1600 * 16


def test_cli_dispatches_to_the_demo(capsys):
    assert cli.main(["demo", "--n-side", "2", "--n-threads", "1"]) == 0
    out = capsys.readouterr().out
    assert "BIRCH grid 2 x 2 (C=4 clusters, N=400 samples" in out
    assert set(CORE_ROWS) <= set(parse_table(out))


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "python -m clusterkit demo" in out
    assert "--n-side" in out and "--random-state" in out and "--n-threads" in out


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
    # with 4 clusters the presets' neighbourhoods of G=5 are clamped, with a warning
    assert _demo.main(["--n-side", "2", "--n-threads", "1"]) == 0
    table, notes = capsys.readouterr().out.split("\nwarnings:\n")
    assert len(parse_table(table)) == 7
    assert re.search(r"^  preset vc_gmm: G=5 > n_clusters=4; using G=n_clusters\.$", notes,
                     re.M)


def test_demo_presets_get_the_random_state_and_threads():
    # the presets take random_state and n_threads through **kwargs
    rows = _demo._preset_variants(16, dict(random_state=7, n_threads=1, coreset_size=200))
    assert len(rows) == 4
    for label, estimator in rows:
        params = estimator.get_params()
        assert params["random_state"] == 7 and params["n_threads"] == 1, label
