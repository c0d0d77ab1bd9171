"""clusterkit: composable, Cython-accelerated k-means and Gaussian mixtures for many clusters.

One estimator, :class:`Clusterer`, assembles small strategy objects — a :class:`Seeder`, a
:class:`DataReducer`, an :class:`EStep`, an :class:`MStep`, a :class:`Schedule` and a
:class:`Refiner` — so that the
accelerations of the literature (AFK-MC² seeding, lightweight coresets, truncated and partial
variational E-steps, ...) can be combined and ablated. Ready-made configurations of the papers'
algorithms live in :mod:`clusterkit.presets`.

Where the code lives (users import from ``clusterkit``, ``clusterkit.presets``,
``clusterkit.metrics``, ``clusterkit.datasets`` and ``clusterkit.ablation`` only)::

    presets.py, metrics.py, datasets.py, ablation.py   public modules
    __main__.py, _demo.py    the command line and its demo
    _estimator/    the scikit-learn face: Clusterer, partial_fit, mixture methods, lazy dask
                   results, validation, the shortcut registry and preset registry, saved models
    _engine/       the strategy contracts, the fit's state and its runs, the driver, progress
    _data/         rows as the engine sees them: dense or CSR, nearest centre, row chunks
    seeding/  reduction/  estep/  mstep/  schedules/  refine/
                   one subpackage per strategy kind
    slk/           Laplacian K-modes: its E-step and M-step, and the kNN graph
    _kernels/      Cython: one .pyx per algorithm, shared helpers in .pxd files
    _reference.py  plain-NumPy twins of the kernels, for tests and benchmarks

The documentation's layout page says what each module holds and which tests cover it.
"""
from . import datasets, metrics, presets  # public submodules, as attributes of the package
# the engine: contracts and state
from ._engine.assignment import FREE_ENERGY, QUANTIZATION_ERROR, Assignment, Objective
from ._data.memory import FitMemoryError
from ._engine.footprint import MemoryEstimate
from ._engine.contracts import (Composition, DataReducer, EStep, MStep, Refiner, Schedule, Seeder,
                                Seeding)
from ._engine.run import Channel, Run
from ._engine.state import FitConfig, FitState, Meter
# the estimator
from ._estimator.clusterer import Clusterer
from ._estimator.model_file import load_model, save_model
from ._kernels._openmp import effective_n_threads, openmp_enabled
# the strategies, by kind
from .seeding.seeders import KMeansPlusPlus, RandomSeeder
from .seeding.afkmc2 import AFKMC2
from .seeding.composite import ByClusters, ByDimension, SampledSeeder
from .seeding.many_clusters import HierarchicalKMeansPlusPlus, KMeansParallel
from .seeding.pilot import FittedSeeder
from .reduction.lwcs import LWCS, NoReduction
from .estep.exact import ElkanEStep, FullEStep, TruncatedEStep
from .estep.yinyang import YinyangEStep, yinyang_groups
from .estep.bounded import BoundedEStep
from .estep.variational import PartialEStep
from .estep.balanced import BalancedEStep
from .mstep.centres import HardMStep, SoftMStep, SphericalMStep
from .schedules.index import IndexTraining
from .schedules.schedules import FullBatch, MiniBatch, SBEDecay
from .schedules.nested import NestedDoubling
from .refine.breathing import Breathing, NoRefinement
from .refine.moves import SinglePointMoves
from .refine.sequence import RefinerSequence
from .slk.laplacian import SLK_ENERGY, LaplacianEStep, ModeMStep
from .slk.graph import knn_graph

from .ablation import ablate, plot_history, plot_tradeoff  # noqa: E402  (needs the above)

__version__ = "0.1.0"

__all__ = [
    "Clusterer", "MemoryEstimate", "FitMemoryError",
    "Seeder", "DataReducer", "EStep", "MStep", "Schedule", "Refiner", "Assignment",
    "Seeding", "FitState", "FitConfig", "Meter", "Run", "Channel",
    "Objective", "QUANTIZATION_ERROR", "FREE_ENERGY", "Composition",
    "KMeansPlusPlus", "AFKMC2", "RandomSeeder", "SampledSeeder", "ByDimension", "ByClusters",
    "FittedSeeder", "HierarchicalKMeansPlusPlus", "KMeansParallel",
    "NoReduction", "LWCS",
    "FullEStep", "ElkanEStep", "YinyangEStep", "BoundedEStep", "yinyang_groups",
    "TruncatedEStep", "PartialEStep", "LaplacianEStep", "BalancedEStep",
    "HardMStep", "SoftMStep", "SphericalMStep", "ModeMStep", "SLK_ENERGY", "knn_graph",
    "FullBatch", "MiniBatch", "NestedDoubling", "SBEDecay", "IndexTraining",
    "NoRefinement", "Breathing", "SinglePointMoves", "RefinerSequence",
    "openmp_enabled", "effective_n_threads",
    "ablate", "plot_history", "plot_tradeoff",
    "load_model", "save_model",
]
