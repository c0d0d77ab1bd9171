"""The model file: a fitted :class:`~clusterkit.Clusterer` saved as arrays and JSON.

:func:`clusterkit.save_model` and ``clusterkit fit`` write it (:func:`write_model`);
``clusterkit predict`` and :func:`clusterkit.load_model` read it (:func:`load_model`). It is
an ``.npz`` archive of ``cluster_centers``, ``x_mean`` (the training data's mean, the frame
new data are centred in), ``sigma2`` (mixtures only) and ``config``, one JSON string: the
format version, the kind of model (k-means, spherical, mixture), the preset and the
``--param`` settings it was built with and which strategies they changed (command line
only), its composition (every strategy's one-line repr), ``n_clusters``, the history,
``n_iter``, ``inertia`` and ``cost``. Nothing in it is pickled, so loading it never
runs code.
"""
import json
import os
from pathlib import Path

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .registry import SHORTCUTS, resolve

__all__ = ["MODEL_FORMAT", "composition", "load_model", "save_model", "write_model"]

#: The model file's format version, stored in it.
MODEL_FORMAT = 1

#: What a model file is, in every message about a file that is not one.
WHAT_A_MODEL_IS = ("a clusterkit model is the .npz archive of arrays and JSON that "
                   "clusterkit.save_model or 'clusterkit fit --out' writes")

#: The kinds of model a file can hold, and the M-step shortcut each loads with.
_KINDS = {"k-means": "hard", "spherical": "spherical", "mixture": "soft"}


def composition(estimator):
    """The six strategies of ``estimator`` as one-line reprs, by parameter name.

    String shortcuts and ``None`` appear as the strategy they stand for; initial centres
    given as an array (``seed``) by their shape.
    """
    strategies = {}
    for name in SHORTCUTS:
        value = getattr(estimator, name)
        try:
            text = repr(resolve(name, value))
        except (TypeError, ValueError):  # only seed takes anything else: initial centres
            text = f"initial centres of shape {np.shape(value)}"
        strategies[name] = " ".join(text.split())
    return strategies


def _kind(estimator):
    """The kind of model (a key of :data:`_KINDS`), from what its M-step declares."""
    if estimator._is_mixture():
        return "mixture"
    return "spherical" if estimator._is_spherical() else "k-means"


def write_model(file, estimator, preset=None, params=None, changed=()):
    """Write a fitted estimator's centres, configuration and history to ``file`` (a path or
    a binary file object; ``.npz``): arrays and one JSON string, so that loading it never
    executes code.

    The configuration names the kind of model, the ``preset`` the estimator was built from,
    the ``params`` it was given and the strategies they ``changed`` from the preset's own
    (the command line's; ``None``, ``{}`` and ``[]`` from Python), and its ``composition``
    (every strategy's repr, see :func:`composition`). ``inertia`` is ``null`` when the fit computed no final
    labels (``compute_labels=False``).
    """
    history = [{k: float(v) for k, v in h.items()}
               for h in getattr(estimator, "history_", [])]
    inertia = getattr(estimator, "inertia_", None)
    n_iter = getattr(estimator, "n_iter_", None)
    config = {"format": MODEL_FORMAT, "model": _kind(estimator), "preset": preset,
              "params": params or {}, "composition": composition(estimator),
              "changed": list(changed),
              "n_clusters": int(estimator.n_clusters), "history": history,
              "n_iter": None if n_iter is None else int(n_iter),
              "inertia": None if inertia is None else float(inertia),
              "cost": {k: int(v) for k, v in getattr(estimator, "cost_", {}).items()}}
    arrays = {"cluster_centers": estimator.cluster_centers_, "x_mean": estimator._x_mean,
              "config": np.array(json.dumps(config))}
    if getattr(estimator, "sigma2_", None) is not None:
        arrays["sigma2"] = np.array(estimator.sigma2_)
    np.savez(file, **arrays)


def save_model(model, path):
    """Save a fitted :class:`~clusterkit.Clusterer` to a model file that
    :func:`load_model` reads back.

    The file is an ``.npz`` archive of arrays (the centres, the training mean new rows are
    centred with, a mixture's variance) and one JSON string (the kind of model, its
    composition, ``n_clusters``, ``n_iter_``, ``history_``, ``cost_``, ``inertia_``):
    nothing is pickled, so loading it never runs code. ``clusterkit predict`` reads it too.

    Parameters
    ----------
    model : Clusterer
        A fitted estimator (any composition, a preset's or your own; after a dask fit the
        lazy ``inertia_`` is computed).
    path : str, path-like or binary file object
        Where to write; a path is used as given (no suffix is added; ``.npz`` is the
        convention).

    Raises
    ------
    TypeError
        If ``model`` is not a :class:`~clusterkit.Clusterer`.
    sklearn.exceptions.NotFittedError
        If it is not fitted.
    OSError
        If ``path`` cannot be written.

    Notes
    -----
    A loaded model predicts, transforms and scores as the saved one (for a mixture also
    ``predict_proba``, ``score_samples``, ``bic`` and ``aic``); it is not the same
    composition: its strategies are the defaults but for the M-step, which sets how new rows
    are read (see :func:`load_model`).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from clusterkit import Clusterer, load_model, save_model
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> model = Clusterer(2, random_state=0).fit(X)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.npz")
    >>> save_model(model, path)
    >>> loaded = load_model(path)
    >>> bool((loaded.predict(X) == model.predict(X)).all())
    True
    """
    from .clusterer import Clusterer  # the estimator imports the strategies this reads
    if not isinstance(model, Clusterer):
        raise TypeError(f"model must be a fitted Clusterer, got {type(model).__name__}.")
    check_is_fitted(model)
    if isinstance(path, (str, os.PathLike)):
        with open(path, "wb") as file:  # (np.savez would add .npz to another suffix)
            write_model(file, model)
    else:
        write_model(path, model)


def _not_a_model(path, problem):
    """The error for a file that is not a model file: what it is, and what a model is."""
    return ValueError(f"{path}: not a clusterkit model: {problem}; {WHAT_A_MODEL_IS}.")


def _model_arrays(path):
    """The configuration dict, the two arrays and ``sigma2`` (or ``None``) of a model file;
    ``ValueError`` saying what is missing or malformed, ``OSError`` if it cannot be read."""
    try:
        with open(path, "rb") as file:
            start = file.read(6)
        if start == b"\x93NUMPY":
            raise _not_a_model(path, "not an .npz archive but one .npy array")
        if not start.startswith(b"PK"):
            raise _not_a_model(path, "not an .npz archive (a zip file of .npy arrays)")
        with np.load(path, allow_pickle=False) as archive:
            missing = {"config", "cluster_centers", "x_mean"} - set(archive.files)
            if missing:
                raise _not_a_model(path, f"no array {', '.join(sorted(missing))} (it has "
                                         f"{', '.join(archive.files) or 'none'})")
            arrays = {}
            for name in ("config", "cluster_centers", "x_mean", "sigma2"):
                if name in archive.files:
                    try:
                        arrays[name] = archive[name]
                    except ValueError as error:
                        if "pickle" not in str(error) and "Object arrays" not in str(error):
                            raise
                        raise _not_a_model(path, f"its array {name!r} holds pickled Python "
                                                 "objects, which clusterkit never loads") \
                            from None
    except ValueError as error:
        if str(error).startswith(f"{path}: "):
            raise
        raise _not_a_model(path, _numpy_problem(error)) from None
    except OSError as error:
        raise OSError(f"{path}: cannot read it: {error.strerror or error}") from None
    except Exception as error:  # not a zip, a corrupt member
        raise _not_a_model(path, _numpy_problem(error)) from None
    try:
        config = json.loads(str(arrays["config"]))
    except ValueError:
        raise _not_a_model(path, "its config is not JSON") from None
    if not isinstance(config, dict):
        raise _not_a_model(path, f"its config is a {type(config).__name__}, not a JSON "
                                 "object")
    return config, arrays["cluster_centers"], arrays["x_mean"], arrays.get("sigma2")


def _numpy_problem(error):
    """What numpy's or zipfile's ``error`` says is wrong, without numpy's advice to load
    pickles (a model file never holds any)."""
    text = str(error) or type(error).__name__
    if "pickle" in text or "Object arrays" in text:
        return "it holds pickled Python objects, which clusterkit never loads"
    return text


def _mstep_shortcut(config):
    """The M-step shortcut (``"hard"``, ``"soft"``, ``"spherical"``) of the saved model,
    which decides how new rows are read (unit rows for a spherical model) and whether the
    model is a mixture: its kind (``"model"``) or, in files written before the kind was
    stored, its saved M-step's repr; ``"hard"`` for any other M-step (the nearest centre
    is its label too)."""
    if config.get("model") in _KINDS:
        return _KINDS[config["model"]]
    saved = (config.get("composition") or {}).get("mstep")
    for shortcut, cls in SHORTCUTS["mstep"][2].items():
        if isinstance(saved, str) and saved == repr(cls()):
            return shortcut
    return "hard"


def load_model(path):
    """A :class:`~clusterkit.Clusterer` from a model file written by :func:`save_model` or
    ``clusterkit fit``, ready to ``predict``, ``transform`` and ``score``.

    Parameters
    ----------
    path : str or path-like
        A model file written by :func:`save_model` or ``clusterkit fit --out`` (an ``.npz``
        of arrays and JSON; loading it runs no code).

    Returns
    -------
    model : Clusterer
        With ``n_clusters`` and the saved M-step (``mstep="spherical"`` scales new rows to
        unit norm, ``mstep="soft"`` gives ``predict_proba`` and ``score_samples`` with the
        saved ``sigma2_``); fitted: ``cluster_centers_``, ``n_features_in_`` and the
        training mean new rows are centred with, ``n_iter_``, ``history_``, ``cost_`` and,
        if the fit computed them, ``inertia_``. The other strategies are the defaults (the
        saved composition is in the file's JSON, ``composition``); a fit on new data
        starts afresh.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    OSError
        If it cannot be read.
    ValueError
        If it is not a model file (an ``.npy`` array, a text file, an ``.npz`` archive
        without the model's arrays or with pickled objects: the message names the file,
        what it is not and what a model file is) or not a valid one: config not a JSON
        object, a missing key, another format version, centres that are not a finite 2-D
        floating-point array, a training mean of the wrong shape.

    Examples
    --------
    >>> import numpy as np, subprocess, sys, tempfile, os
    >>> from clusterkit import load_model
    >>> folder = tempfile.mkdtemp()
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> np.save(os.path.join(folder, "X.npy"), X)
    >>> _ = subprocess.run([sys.executable, "-m", "clusterkit", "fit",
    ...                     os.path.join(folder, "X.npy"), "-k", "2", "--param",
    ...                     "random_state=0", "--out", os.path.join(folder, "m.npz")],
    ...                    check=True, capture_output=True)
    >>> model = load_model(os.path.join(folder, "m.npz"))
    >>> bool(model.predict([[0.0, 0.5]])[0] != model.predict([[10.0, 0.5]])[0])
    True
    """
    from .clusterer import Clusterer  # the estimator imports the strategies this reads
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a folder, not a model file; {WHAT_A_MODEL_IS}.")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file; {WHAT_A_MODEL_IS}.")
    config, centers, x_mean, sigma2 = _model_arrays(path)

    def invalid(problem):
        return ValueError(f"{path}: invalid model: {problem}")
    for key in ("format", "n_clusters"):
        if key not in config:
            raise invalid(f"its config has no {key!r}")
    if config["format"] != MODEL_FORMAT:
        raise invalid(f"format {config['format']!r}; this clusterkit reads format "
                      f"{MODEL_FORMAT}")
    if centers.ndim != 2 or centers.dtype not in (np.float32, np.float64) or 0 in centers.shape:
        raise invalid(f"cluster_centers must be a non-empty 2-D float32 or float64 array, "
                      f"got shape {centers.shape} and dtype {centers.dtype}")
    if not np.isfinite(centers).all():
        raise invalid("cluster_centers has non-finite values")
    n_clusters, n_features = centers.shape
    if type(config["n_clusters"]) is not int or config["n_clusters"] != n_clusters:
        raise invalid(f"n_clusters={config['n_clusters']!r} but cluster_centers has "
                      f"{n_clusters} rows")
    if x_mean.shape != (n_features,) or x_mean.dtype.kind != "f" or \
            not np.isfinite(x_mean).all():
        raise invalid(f"x_mean must be {n_features} finite floats, got shape {x_mean.shape} "
                      f"and dtype {x_mean.dtype}")
    mstep = _mstep_shortcut(config)
    if mstep == "soft" and (sigma2 is None or sigma2.shape != () or
                            not float(sigma2) > 0 or not np.isfinite(sigma2)):
        raise invalid("a mixture needs sigma2, one positive finite number")
    model = Clusterer(n_clusters, mstep=mstep)
    model.cluster_centers_ = centers
    model._x_mean = x_mean.astype(centers.dtype)
    model.n_features_in_ = n_features
    if mstep == "soft":
        model.sigma2_ = float(sigma2)
    if isinstance(config.get("n_iter"), int):
        model.n_iter_ = config["n_iter"]
    if isinstance(config.get("history"), list):
        model.history_ = config["history"]
    if isinstance(config.get("cost"), dict):
        model.cost_ = config["cost"]
    if isinstance(config.get("inertia"), (int, float)):
        model.inertia_ = float(config["inertia"])
    return model
