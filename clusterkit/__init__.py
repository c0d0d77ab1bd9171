"""clusterkit: composable, Cython-accelerated k-means and Gaussian mixtures for many clusters.

One estimator, :class:`Clusterer`, assembles small strategy objects — a :class:`Seeder`, a
:class:`DataReducer`, an :class:`EStep`, an :class:`MStep`, a :class:`Schedule` and a
:class:`Refiner` — so that the
accelerations of the literature (AFK-MC² seeding, lightweight coresets, truncated and partial
variational E-steps, ...) can be combined and ablated. Ready-made configurations of the papers'
algorithms live in :mod:`clusterkit.presets`.
"""
from . import datasets, metrics, presets  # public submodules, as attributes of the package
from ._assignment import FREE_ENERGY, QUANTIZATION_ERROR, Assignment, Objective
from ._base import Composition, DataReducer, EStep, MStep, Refiner, Schedule, Seeder
from ._clusterer import Clusterer
from ._exact import ElkanEStep, FullEStep, TruncatedEStep
from ._graph import knn_graph
from ._kernels._openmp import effective_n_threads, openmp_enabled
from ._model_file import load_model
from ._mstep import HardMStep, SoftMStep, SphericalMStep
from ._pilot import FittedSeeder
from ._reduction import LWCS, NoReduction
from ._refine import Breathing, NoRefinement
from ._schedules import FullBatch, MiniBatch, NestedDoubling, SBEDecay
from ._seeding import AFKMC2, ByDimension, KMeansPlusPlus, RandomSeeder, SampledSeeder
from ._slk import SLK_ENERGY, LaplacianEStep, ModeMStep
from ._state import Channel, FitState
from ._variational import PartialEStep
from ._bounded import BoundedEStep
from ._yinyang import YinyangEStep, yinyang_groups

from .ablation import ablate, plot_history, plot_tradeoff  # noqa: E402  (needs the above)

__version__ = "0.1.0"

__all__ = [
    "Clusterer",
    "Seeder", "DataReducer", "EStep", "MStep", "Schedule", "Refiner", "Assignment",
    "FitState",
    "Channel",
    "Objective", "QUANTIZATION_ERROR", "FREE_ENERGY", "Composition",
    "KMeansPlusPlus", "AFKMC2", "RandomSeeder", "SampledSeeder", "ByDimension",
    "FittedSeeder",
    "NoReduction", "LWCS",
    "FullEStep", "ElkanEStep", "YinyangEStep", "BoundedEStep", "yinyang_groups",
    "TruncatedEStep", "PartialEStep", "LaplacianEStep",
    "HardMStep", "SoftMStep", "SphericalMStep", "ModeMStep", "SLK_ENERGY", "knn_graph",
    "FullBatch", "MiniBatch", "NestedDoubling", "SBEDecay",
    "NoRefinement", "Breathing",
    "openmp_enabled", "effective_n_threads",
    "ablate", "plot_history", "plot_tradeoff",
    "load_model",
]
