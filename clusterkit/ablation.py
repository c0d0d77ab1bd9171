"""Ablations: several variants over the same seeds, one tidy table, and the plots of the papers.

:func:`ablate` fits every variant with every seed on the same data and returns one record per
fit; :func:`plot_history` and :func:`plot_tradeoff` draw the two figures the papers compare
variants with (they need matplotlib: ``pip install 'clusterkit[plot]'``).
"""
import math
import sys
import time
import warnings

import numpy as np
from sklearn.base import clone

from ._estimator.clusterer import Clusterer
from ._estimator.guide import unknown_preset
from ._estimator.registry import resolve
from .metrics import quantization_error
from .presets import PRESETS, build_preset

__all__ = ["ablate", "plot_history", "plot_tradeoff"]

#: The columns of :func:`ablate`'s table, in order.
COLUMNS = ("variant", "seed", "seconds", "seconds_seeding", "seconds_reduction",
           "seconds_iterations", "seconds_labels", "qe", "eta", "evals_seeding",
           "evals_reduction", "evals_estep", "evals_labels", "n_distance_evals", "n_iter",
           "converged", "objective_name", "history")


def _error(model, X, sample_weight):
    """The quantization error of a fitted model's centres on ``X``: of the rows the model
    sees (unit rows for a spherical model, whose ``score`` is minus that error)."""
    if model._is_spherical():
        return -model.score(X, sample_weight=sample_weight)
    return quantization_error(X, model.cluster_centers_, sample_weight)


def _relative_error(qe, qe_ref):
    """``qe / qe_ref - 1``; against a zero reference error (as many clusters as distinct
    rows), 0 if ``qe`` is 0 too and ``inf`` otherwise: missing an exact fit is infinitely
    worse, relatively."""
    if qe_ref == 0:
        return 0.0 if qe == 0 else math.inf
    return qe / qe_ref - 1.0


def _variant(spec, n_clusters, name):
    if isinstance(spec, Clusterer):
        return spec
    if isinstance(spec, str):
        if spec not in PRESETS:
            raise ValueError(f"Unknown preset {spec!r} for variant {name!r}; "
                             f"{unknown_preset(spec)}")
        return build_preset(spec, n_clusters)
    raise TypeError(f"Variant {name!r} must be a Clusterer or a preset name, got "
                    f"{type(spec).__name__}.")


class _Progress:
    """A one-line progress bar on a terminal; silent when piped or when not wanted."""

    def __init__(self, total, enabled, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and getattr(self.stream, "isatty", lambda: False)()
        self.total, self.done = total, 0

    def step(self, label):
        self.done += 1
        if self.enabled:
            width = 30
            filled = width * self.done // self.total
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] "
                              f"{self.done}/{self.total} {label:<30.30}")
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()


def ablate(X, n_clusters, variants, seeds=5, reference=None, X_test=None, sample_weight=None,
           verbose=1):
    """Fit every variant with the same seeds and tabulate time, error and work.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training data.
    n_clusters : int
        Used to build the variants given as preset names (a :class:`Clusterer` keeps its own).
    variants : dict of str to Clusterer or str
        Name of each variant and its estimator, or the name of a preset
        (:mod:`clusterkit.presets`). Each fit is a clone with ``random_state`` set to the
        seed, so all variants see the same seeds.
    seeds : int or sequence of int, default=5
        The seeds: ``range(seeds)`` for an int.
    reference : str or None, default=None
        The variant the relative error ``eta`` refers to; ``None`` takes the first.
    X_test : array-like of shape (n_test, n_features) or None, default=None
        Held-out data the quantization error is measured on (the training data by default).
    sample_weight : array-like of shape (n_samples,) or None, default=None
        Passed to every fit and used for the training-data error.
    verbose : int, default=1
        A progress bar over variants x seeds when standard error is a terminal (never when it
        is piped); 0 is silent.

    Returns
    -------
    table : pandas.DataFrame or list of dict
        One row per fit (a DataFrame if pandas is installed), with the columns of
        :data:`COLUMNS`: ``variant``, ``seed``; ``seconds`` (of ``fit``) and per phase
        (``seconds_seeding``, ``_reduction``, ``_iterations``, ``_labels``); ``qe``, the
        quantization error of the fitted centres on the full data (or ``X_test``; for a
        spherical model, :class:`~clusterkit.SphericalMStep`, on its rows scaled to unit
        norm, twice the cosine dissimilarity); ``eta``,
        the relative error ``qe / qe_ref - 1`` against the reference variant with the same
        seed (the vc-GMM paper's η; when the reference's error is 0, ``eta`` is 0 for an
        error of 0 and ``inf`` otherwise); distance evaluations per phase and in total;
        ``n_iter``; ``converged``; ``objective_name``, what the ``"objective"`` of the
        fit's history is (the name of the M-step's :class:`~clusterkit.Objective`, e.g.
        ``"quantization error"`` or ``"free energy"``); ``history``, the fit's
        ``history_``.

    Examples
    --------
    >>> from clusterkit import ablate
    >>> from clusterkit.datasets import make_birch_grid
    >>> X, _, _ = make_birch_grid(n_side=5, random_state=0)
    >>> table = ablate(X, 25, {"lloyd": "lloyd", "vc-GMM": "vc_gmm"}, seeds=2, verbose=0)
    >>> sorted(set(table["variant"]))
    ['lloyd', 'vc-GMM']
    """
    if not isinstance(variants, dict) or not variants:
        raise ValueError("variants must be a non-empty dict of name -> Clusterer or preset "
                         "name.")
    estimators = {name: _variant(spec, n_clusters, name) for name, spec in variants.items()}
    seeds = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed.")
    reference = next(iter(estimators)) if reference is None else reference
    if reference not in estimators:
        raise ValueError(f"reference={reference!r} is not one of the variants "
                         f"{list(estimators)}.")
    X_eval = X if X_test is None else X_test
    w_eval = sample_weight if X_test is None else None
    progress = _Progress(len(estimators) * len(seeds), verbose > 0)
    rows = []
    for name, estimator in estimators.items():
        for seed in seeds:
            model = clone(estimator).set_params(random_state=seed)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # e.g. max_iter reached: reported below
                model.fit(X, sample_weight=sample_weight)
            seconds = time.perf_counter() - start
            phases = model.seconds_
            rows.append({
                "variant": name, "seed": seed, "seconds": seconds,
                "seconds_seeding": phases["seeding"],
                "seconds_reduction": phases["reduction"],
                "seconds_iterations": phases["estep"] + phases["mstep"],
                "seconds_labels": phases["labels"],
                "qe": _error(model, X_eval, w_eval),
                "eta": math.nan,
                "evals_seeding": model.cost_["seeding"],
                "evals_reduction": model.cost_["reduction"],
                "evals_estep": model.cost_["estep"], "evals_labels": model.cost_["labels"],
                "n_distance_evals": model.n_distance_evals_, "n_iter": model.n_iter_,
                "converged": bool(model.converged_),
                "objective_name": resolve("mstep", model.mstep).objective.name,
                "history": model.history_,
            })
            progress.step(f"{name}, seed {seed}")
    reference_qe = {row["seed"]: row["qe"] for row in rows if row["variant"] == reference}
    for row in rows:
        row["eta"] = _relative_error(row["qe"], reference_qe[row["seed"]])
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _records(table):
    return table.to_dict("records") if hasattr(table, "to_dict") else list(table)


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("The plots need matplotlib: pip install 'clusterkit[plot]'.") \
            from error
    return plt


def plot_history(table, objective="objective"):
    """The objective against time and against distance evaluations, one curve per variant.

    Each variant's curve is the median over its seeds at every iteration (runs that stopped
    earlier keep their last value), with the range over the seeds shaded. Objectives of
    different kinds (a k-means quantization error, a mixture's free energy, ...) are not
    comparable, so each kind gets its own row of panels, labelled with its name.

    Parameters
    ----------
    table : pandas.DataFrame or list of dict
        The output of :func:`ablate`.
    objective : str, default="objective"
        The history entry to plot: ``"objective"`` (what each fit optimises; a row of panels
        per kind, by the table's ``objective_name``) or ``"qe"`` (the quantization error,
        which every fit records; one row).

    Returns
    -------
    figure : matplotlib.figure.Figure
        Two panels per row (seconds; distance evaluations on a log axis), the objective on
        a log axis where it is positive throughout its row; never shown.
    """
    plt = _pyplot()
    by_kind = {}
    for row in _records(table):
        kind = row.get("objective_name", objective) if objective == "objective" else objective
        by_kind.setdefault(kind, {}).setdefault(row["variant"], []).append(row["history"])
    figure, axes = plt.subplots(len(by_kind), 2, figsize=(10, 4 * len(by_kind)),
                                squeeze=False)
    for (kind, by_variant), row_axes in zip(by_kind.items(), axes):
        for name, histories in by_variant.items():
            length = max(len(h) for h in histories)

            def padded(key):
                return np.array([[h[min(i, len(h) - 1)][key] for i in range(length)]
                                 for h in histories], dtype=float)
            values = padded(objective)
            for axis, key in zip(row_axes, ("seconds", "distance_evals")):
                x = np.median(padded(key), axis=0)
                line, = axis.plot(x, np.median(values, axis=0), label=name)
                axis.fill_between(x, values.min(axis=0), values.max(axis=0), alpha=0.2,
                                  color=line.get_color(), linewidth=0)
        row_axes[0].set_xlabel("seconds")
        row_axes[1].set_xlabel("distance evaluations")
        row_axes[1].set_xscale("log")
        positive = all(h[objective] > 0 for runs in by_variant.values() for run in runs
                       for h in run)
        for axis in row_axes:
            axis.set_ylabel(kind)
            if positive:  # errors span decades between the seeding and the end
                axis.set_yscale("log")
            axis.legend()
    figure.tight_layout()
    return figure


def plot_tradeoff(table, reference=None):
    """Speed-up against relative error η, one point per variant (the vc-GMM paper's figure).

    Parameters
    ----------
    table : pandas.DataFrame or list of dict
        The output of :func:`ablate`.
    reference : str or None, default=None
        The variant the speed-up refers to (its mean ``seconds`` over the mean of each
        variant's); ``None`` takes the first variant of the table.

    Returns
    -------
    figure : matplotlib.figure.Figure
        Speed-up (log axis) against the mean η, with the range of η over the seeds as error
        bars; never shown.

    Notes
    -----
    η is infinite for a seed where the reference's error is 0 and the variant's is not. Such
    seeds are left out of the variant's point and counted in its legend entry; a variant
    with no finite η is drawn as a triangle at the right edge.
    """
    plt = _pyplot()
    rows = _records(table)
    names = list(dict.fromkeys(row["variant"] for row in rows))
    reference = names[0] if reference is None else reference
    seconds = {n: np.mean([r["seconds"] for r in rows if r["variant"] == n]) for n in names}
    figure, axis = plt.subplots(figsize=(5, 4))
    handles = []
    for name in names:
        eta = np.array([r["eta"] for r in rows if r["variant"] == name], dtype=float)
        finite = eta[np.isfinite(eta)]
        speed_up = seconds[reference] / seconds[name]
        label = name if finite.size == eta.size else \
            f"{name} (η = ∞ for {eta.size - finite.size} of {eta.size} seeds)"
        if finite.size:
            low, mean, high = finite.min(), finite.mean(), finite.max()
            handle = axis.errorbar(mean, speed_up, xerr=[[mean - low], [high - mean]],
                                   fmt="o", capsize=3, label=label)
        else:  # at the right edge (x in axes units), pointing off the axis
            handle, = axis.plot([0.97], [speed_up], ">", transform=axis.get_yaxis_transform(),
                                label=label)
        handles.append(handle)
    axis.set_xlabel(f"relative error η (vs {reference})")
    axis.set_ylabel(f"speed-up (vs {reference})")
    axis.set_yscale("log")
    axis.axvline(0, color="grey", linewidth=0.5)
    axis.legend(handles=handles)  # in the table's order
    figure.tight_layout()
    return figure
