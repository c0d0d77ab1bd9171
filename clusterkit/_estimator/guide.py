"""The presets' registry: one record per preset (:class:`PresetEntry`), in :data:`REGISTRY`.

Each record holds what is known of a preset without building it: its name, the strategies
it sets itself (the command line refuses ``--param`` for them), the row of
:mod:`clusterkit.presets`' table of E-steps and distance evaluations, and its guide
(:class:`PresetGuide`: which preset for which job, rendered by ``clusterkit presets``, the
documentation's "Choosing a preset" page and the README, whose tables add the times and
errors ``benchmarks/bench_presets.py`` measured). :mod:`clusterkit.presets` defines one
function per record; everything else that names the presets derives from :data:`PRESETS`.
"""
import itertools
import re
import textwrap
from collections import namedtuple

from .registry import did_you_mean

__all__ = ["GUIDE", "GUIDE_FIELDS", "GUIDE_SIZES", "PRESETS", "REGISTRY", "SPARSE_PRESETS",
           "PresetEntry", "PresetGuide", "preset_table", "unknown_preset"]


class PresetGuide(namedtuple("PresetGuide", ["use", "model", "cost", "memory", "sparse"],
                             defaults=[False])):
    """What a preset is for and what it costs, in a few words each.

    Sizes: ``N`` samples, ``D`` features, ``C`` clusters, ``G`` the neighbourhood size of
    the variational E-steps, ``N'`` the coreset size, ``b`` the batch size and ``rho`` the
    neighbours per sample in SLK's graph, each at the preset's defaults.

    Parameters
    ----------
    use : str
        When to choose it.
    model : str
        What it fits: ``"k-means"``, ``"spherical k-means"`` (cosine similarity, unit rows
        and centres), ``"isotropic GMM"`` or ``"Laplacian K-modes"``.
    cost : str
        Time per iteration, in multiply-adds, plus any one-off work.
    memory : str
        Memory beyond the data and the fit's centred copy of it (``N·D``; ``N'·D`` for
        the coreset presets), in array entries.
    sparse : bool, default=False
        Whether every strategy of the preset takes sparse (CSR) rows (a test checks it
        against the strategies' ``accepts_sparse``); ``use`` says so too.

    Examples
    --------
    >>> GUIDE["elkan"].model
    'k-means'
    """

    __slots__ = ()


#: What the size symbols of :data:`GUIDE` stand for; one sentence.
GUIDE_SIZES = ("N samples, D features, C clusters, G the neighbourhood size, N' the coreset "
               "size, b the batch size, rho the graph's neighbours per sample; memory in array "
               "entries, beyond the data and the fit's centred copy of it (N·D, or N'·D on a "
               "coreset).")

#: The column titles of the fields of :class:`PresetGuide`, in its order.
GUIDE_FIELDS = {"use": "use it for", "model": "model", "cost": "cost per iteration",
                "memory": "memory beyond the data"}


class PresetEntry(namedtuple("PresetEntry", ["name", "fixes", "steps", "evaluations",
                                             "guide"])):
    """One preset, declared once: the record :data:`REGISTRY` holds for it.

    Parameters
    ----------
    name : str
        The name of its function in :mod:`clusterkit.presets`, and on the command line.
    fixes : tuple of str
        The strategies (``Clusterer``'s parameters) the preset sets itself, as what it is:
        passing one to the preset raises a ``TypeError``.
    steps, evaluations : str
        Its row of the table in :mod:`clusterkit.presets` (reST): its E-step and M-step,
        and the distance evaluations per iteration.
    guide : PresetGuide
        Which job it is for, what it fits and costs (:data:`GUIDE`).
    """

    __slots__ = ()


#: Every preset's record, by name, once, in the order of the tables and of ``clusterkit
#: presets``.
REGISTRY = {entry.name: entry for entry in (
    PresetEntry(
        "lloyd", fixes=("estep", "mstep"), steps="exact / hard",
        evaluations="``N C``",
        guide=PresetGuide(
            use="exact k-means; moderate N·C, fastest against scikit-learn with few features; "
                "also sparse (CSR) data",
            model="k-means", cost="N·C·D",
            memory="N (labels, distances)",
            sparse=True)),
    PresetEntry(
        "elkan", fixes=("estep", "mstep"), steps="exact, bounded / hard",
        evaluations="``N C`` at first, then ``N`` plus the distances the bounds keep, ``+ C^2/2`` "
                    "(no ``C^2`` with Yinyang's bounds)",
        guide=PresetGuide(
            use="exact k-means, lloyd's iterates in fewer distances (Elkan's N·C bounds, "
                "Yinyang's N·t where those do not fit); also sparse (CSR) data",
            model="k-means", cost="N·C·D at first, then the few distances the bounds keep, "
                                  "plus C²·D",
            memory="N·C bounds (float32), C² centre distances; or N·t, t ≤ C/10, "
                   "in half the free memory",
            sparse=True)),
    PresetEntry(
        "minibatch", fixes=("estep", "mstep", "schedule"), steps="exact / hard, running means",
        evaluations="``b C`` per batch of ``b`` rows",
        guide=PresetGuide(
            use="a stream, or data that does not fit in memory (partial_fit batch by batch); "
                "speed over accuracy; also sparse (CSR) data",
            model="k-means", cost="b·C·D per batch (b = 1024), up to 10 passes",
            memory="C·D running sums, N labels",
            sparse=True)),
    PresetEntry(
        "nmbatch", fixes=("estep", "mstep", "schedule"), steps="Elkan / hard, nested prefixes",
        evaluations="``b_t C`` at first visits, then as Elkan",
        guide=PresetGuide(
            use="large N: Lloyd's fixed point sooner, from nested growing batches",
            model="k-means", cost="b·C·D on a prefix of b rows that doubles up to N, "
                                  "pruned by Elkan's bounds, plus C²·D",
            memory="N·C bounds (float32), C² centre distances")),
    PresetEntry(
        "sbe", fixes=("estep", "mstep", "schedule"), steps="exact / hard, implicit steps",
        evaluations="``inner_iter b C`` per outer step",
        guide=PresetGuide(
            use="escaping Lloyd's poor local minima; few clusters",
            model="k-means", cost="10·b·C·D per outer step (b = 1000), 100 outer steps",
            memory="b·C per batch")),
    PresetEntry(
        "gmm", fixes=("estep", "mstep"), steps="exact / soft",
        evaluations="``N C``",
        guide=PresetGuide(
            use="probabilities / a mixture, exact; moderate N·C",
            model="isotropic GMM", cost="N·C·D",
            memory="N·C responsibilities")),
    PresetEntry(
        "var_kmeans_x", fixes=("estep", "mstep"), steps="partial, exhaustive ``G_c``",
        evaluations="``N (G + n_explore) + C^2``",
        guide=PresetGuide(
            use="approximate k-means, many clusters, exact neighbourhoods",
            model="k-means", cost="N·G·D + C²·D (G = 5)",
            memory="N·(G+1) candidate distances, C·G neighbourhoods")),
    PresetEntry(
        "var_kmeans_s", fixes=("estep", "mstep"), steps="partial, estimated ``G_c``",
        evaluations="``N (G + n_explore)``",
        guide=PresetGuide(
            use="large N and C: k-means near exact error, work per iteration independent of C",
            model="k-means", cost="N·G·D (G = 5)",
            memory="N·(G+1) candidate distances, C·G neighbourhoods")),
    PresetEntry(
        "var_gmm_x", fixes=("estep", "mstep"), steps="partial (``C' = G``), exhaust.",
        evaluations="``<= N (G^2 + n_explore) + C^2``",
        guide=PresetGuide(
            use="probabilities / a mixture with many clusters, exact neighbourhoods",
            model="isotropic GMM", cost="N·G²·D + C²·D (G = 5)",
            memory="N·(G²+1) candidate distances, N·G winners, C·G neighbourhoods")),
    PresetEntry(
        "var_gmm_s", fixes=("estep", "mstep"), steps="partial (``C' = G``), estim.",
        evaluations="``<= N (G^2 + n_explore)``",
        guide=PresetGuide(
            use="probabilities / a mixture with many clusters, on all the data",
            model="isotropic GMM", cost="N·G²·D (G = 5)",
            memory="N·(G²+1) candidate distances, N·G winners, C·G neighbourhoods")),
    PresetEntry(
        "lwcs_lloyd", fixes=("reduce", "estep", "mstep"), steps="exact / hard, on a coreset",
        evaluations="``N' C`` (plus ``N`` once)",
        guide=PresetGuide(
            use="large N and C, speed first: k-means on a coreset",
            model="k-means", cost="N'·C·D (N' = max(2^15, 32·C)), plus N·D once",
            memory="N'·D coreset, 2·N sampling")),
    PresetEntry(
        "vc_gmm", fixes=("reduce", "estep", "mstep"), steps="as var-GMM-S, on a coreset",
        evaluations="``<= N' (G^2 + n_explore)`` (plus ``N`` once)",
        guide=PresetGuide(
            use="large N and C, speed first: a mixture on a coreset",
            model="isotropic GMM",
            cost="N'·G²·D (N' = max(2^15, 32·C), G = 5), plus N·D once",
            memory="N'·D coreset, N'·(G²+1) candidate distances, 2·N sampling")),
    PresetEntry(
        "best_quality", fixes=("estep", "mstep", "refine"),
        steps="a refined coreset fit, then Lloyd and breathing rounds",
        evaluations='``N C``, plus ``N C`` per breathing round (``cost_["refinement"]``), up to '
                    "``budget`` times the rest",
        guide=PresetGuide(
            use="the lowest k-means error, below restarted k-means++",
            model="k-means", cost="at most N·C·D per iteration (Yinyang's bounds), N·C·D per "
                                  "breathing round, the rounds within twice the rest; after a "
                                  "refined coreset fit",
            memory="N·C/10 bounds (Yinyang's), N'·D pilot coreset")),
    PresetEntry(
        "large_scale", fixes=("estep", "mstep"),
        steps="var-k-means-S as the start, then Lloyd iterations",
        evaluations="``N (G + 1)`` per pilot iteration, then ``N C``",
        guide=PresetGuide(
            use="large N, many clusters, high D (embeddings): faiss-level error, less time",
            model="k-means", cost="N·G·D per pilot iteration (G = 5), then N·C·D per Lloyd "
                                  "iteration (a few)",
            memory="as var_kmeans_s, then N (labels, distances)")),
    PresetEntry(
        "slk_bo", fixes=("estep", "mstep"), steps="Laplacian z-updates / modes by argmax",
        evaluations="``N L`` kernel values, plus ``N rho L`` per z-update (and the kNN graph "
                    "once)",
        guide=PresetGuide(
            use="non-convex shapes, density modes that are samples",
            model="Laplacian K-modes", cost="N·C·D kernel values, N·rho·C per z-update "
                                            "(rho = 5), a kNN graph once",
            memory="kNN graph N·rho, about 5·N·C soft assignments")),
    PresetEntry(
        "slk_ms", fixes=("estep", "mstep"), steps="Laplacian z-updates / modes by mean-shift",
        evaluations="as ``slk_bo``, plus the mean-shift",
        guide=PresetGuide(
            use="non-convex shapes, density modes (mean-shift)",
            model="Laplacian K-modes", cost="as slk_bo, plus mean-shift over each cluster's "
                                            "members",
            memory="kNN graph N·rho, about 5·N·C soft assignments")),
    PresetEntry(
        "spherical_kmeans", fixes=("estep", "mstep"),
        steps="exact / spherical (unit centres), on unit rows",
        evaluations="``N C``",
        guide=PresetGuide(
            use="cosine similarity (text, embeddings): rows scaled to unit norm, unit centres; "
                "also sparse (CSR) data",
            model="spherical k-means", cost="N·C·D",
            memory="N (labels, distances), N·D unit rows",
            sparse=True)),
    PresetEntry(
        "balanced_kmeans", fixes=("estep", "mstep"),
        steps="bounded transport / hard",
        evaluations="``N C`` at first, then about ``N k`` (``k = 8`` candidates per row)",
        guide=PresetGuide(
            use="clusters of bounded sizes (IVF lists, shards, groups of given sizes)",
            model="k-means", cost="N·C·D at first, then about N·8·D once the centres settle, "
                                  "plus the transport solves",
            memory="N·k candidates (k = 8, more where needed): about 500 bytes per row in "
                   "a solve")),
)}

#: The names of the presets, in the order of :data:`REGISTRY`.
PRESETS = tuple(REGISTRY)

#: Every preset's :class:`PresetGuide`, in the order of :data:`REGISTRY`.
GUIDE = {name: entry.guide for name, entry in REGISTRY.items()}

#: The presets whose every strategy takes sparse (CSR) rows, in the order of :data:`GUIDE`.
SPARSE_PRESETS = tuple(name for name, guide in GUIDE.items() if guide.sparse)


def unknown_preset(name):
    """The end of the message refusing ``name``, which is not a preset: ``"the presets are
    lloyd, ..., spherical_kmeans."``, then the closest names (:func:`did_you_mean`)."""
    return f"the presets are {', '.join(PRESETS)}.{did_you_mean(name, PRESETS)}"


def preset_table():
    """The reST table of :mod:`clusterkit.presets`' notes, from :data:`REGISTRY`: per preset
    its function, E-step / M-step and distance evaluations per iteration, wrapped (never
    inside a literal) to columns of 30 and 41 characters."""
    rows = [("preset", "E-step / M-step", "distance evaluations per iteration")]
    rows += [(f":func:`{name}`", entry.steps, entry.evaluations)
             for name, entry in REGISTRY.items()]
    widths = (max(len(row[0]) for row in rows), 30, 41)
    rule = "  ".join("=" * width for width in widths)
    lines = [rule]
    for i, row in enumerate(rows):
        cells = [textwrap.wrap(re.sub(r"``.*?``", lambda m: m[0].replace(" ", "\0"), text),
                               width, break_long_words=False, break_on_hyphens=False)
                 for text, width in zip(row, widths)]
        for parts in itertools.zip_longest(*cells, fillvalue=""):
            lines.append("  ".join(part.replace("\0", " ").ljust(width)
                                   for part, width in zip(parts, widths)).rstrip())
        if i == 0:
            lines.append(rule)
    return "\n".join(lines + [rule])
