"""Which preset for which job: short, static facts on every preset.

Kept beside the presets (:mod:`clusterkit.presets` re-exports :data:`GUIDE`) and rendered
by ``clusterkit presets``, the documentation's "Choosing a preset" page and the README,
whose tables add the times and errors ``benchmarks/bench_presets.py`` measured.
"""
from collections import namedtuple

__all__ = ["GUIDE", "GUIDE_FIELDS", "GUIDE_SIZES", "PresetGuide", "SPARSE_PRESETS"]


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
    >>> from clusterkit.presets import GUIDE
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

#: Every preset's :class:`PresetGuide`, in the order of :data:`clusterkit.presets.PRESETS`.
GUIDE = {
    "lloyd": PresetGuide(
        use="exact k-means; moderate N·C, fastest against scikit-learn with few features; "
            "also sparse (CSR) data",
        model="k-means", cost="N·C·D",
        memory="N (labels, distances)",
        sparse=True),
    "elkan": PresetGuide(
        use="exact k-means, lloyd's iterates in fewer distances (Elkan's N·C bounds, "
            "Yinyang's N·t where those do not fit); also sparse (CSR) data",
        model="k-means", cost="N·C·D at first, then the few distances the bounds keep, "
                              "plus C²·D",
        memory="N·C bounds (float32), C² centre distances; or N·t, t ≤ C/10, "
               "in half the free memory",
        sparse=True),
    "minibatch": PresetGuide(
        use="a stream, or data that does not fit in memory (partial_fit batch by batch); "
            "speed over accuracy; also sparse (CSR) data",
        model="k-means", cost="b·C·D per batch (b = 1024), up to 10 passes",
        memory="C·D running sums, N labels",
        sparse=True),
    "nmbatch": PresetGuide(
        use="large N: Lloyd's fixed point sooner, from nested growing batches",
        model="k-means", cost="b·C·D on a prefix of b rows that doubles up to N, "
                              "pruned by Elkan's bounds, plus C²·D",
        memory="N·C bounds (float32), C² centre distances"),
    "sbe": PresetGuide(
        use="escaping Lloyd's poor local minima; few clusters",
        model="k-means", cost="10·b·C·D per outer step (b = 1000), 100 outer steps",
        memory="b·C per batch"),
    "gmm": PresetGuide(
        use="probabilities / a mixture, exact; moderate N·C",
        model="isotropic GMM", cost="N·C·D",
        memory="N·C responsibilities"),
    "var_kmeans_x": PresetGuide(
        use="approximate k-means, many clusters, exact neighbourhoods",
        model="k-means", cost="N·G·D + C²·D (G = 5)",
        memory="N·(G+1) candidate distances, C·G neighbourhoods"),
    "var_kmeans_s": PresetGuide(
        use="large N and C: k-means near exact error, work per iteration independent of C",
        model="k-means", cost="N·G·D (G = 5)",
        memory="N·(G+1) candidate distances, C·G neighbourhoods"),
    "var_gmm_x": PresetGuide(
        use="probabilities / a mixture with many clusters, exact neighbourhoods",
        model="isotropic GMM", cost="N·G²·D + C²·D (G = 5)",
        memory="N·(G²+1) candidate distances, N·G winners, C·G neighbourhoods"),
    "var_gmm_s": PresetGuide(
        use="probabilities / a mixture with many clusters, on all the data",
        model="isotropic GMM", cost="N·G²·D (G = 5)",
        memory="N·(G²+1) candidate distances, N·G winners, C·G neighbourhoods"),
    "lwcs_lloyd": PresetGuide(
        use="large N and C, speed first: k-means on a coreset",
        model="k-means", cost="N'·C·D (N' = max(2^15, 32·C)), plus N·D once",
        memory="N'·D coreset, 2·N sampling"),
    "vc_gmm": PresetGuide(
        use="large N and C, speed first: a mixture on a coreset",
        model="isotropic GMM", cost="N'·G²·D (N' = max(2^15, 32·C), G = 5), plus N·D once",
        memory="N'·D coreset, N'·(G²+1) candidate distances, 2·N sampling"),
    "best_quality": PresetGuide(
        use="the lowest k-means error, below restarted k-means++",
        model="k-means", cost="at most N·C·D per iteration (Yinyang's bounds), N·C·D per "
                              "breathing round, the rounds within twice the rest; after a "
                              "refined coreset fit",
        memory="N·C/10 bounds (Yinyang's), N'·D pilot coreset"),
    "large_scale": PresetGuide(
        use="large N, many clusters, high D (embeddings): faiss-level error, less time",
        model="k-means", cost="N·G·D per pilot iteration (G = 5), then N·C·D per Lloyd "
                              "iteration (a few)",
        memory="as var_kmeans_s, then N (labels, distances)"),
    "slk_bo": PresetGuide(
        use="non-convex shapes, density modes that are samples",
        model="Laplacian K-modes", cost="N·C·D kernel values, N·rho·C per z-update "
                                        "(rho = 5), a kNN graph once",
        memory="kNN graph N·rho, about 5·N·C soft assignments"),
    "slk_ms": PresetGuide(
        use="non-convex shapes, density modes (mean-shift)",
        model="Laplacian K-modes", cost="as slk_bo, plus mean-shift over each cluster's "
                                        "members",
        memory="kNN graph N·rho, about 5·N·C soft assignments"),
    "spherical_kmeans": PresetGuide(
        use="cosine similarity (text, embeddings): rows scaled to unit norm, unit centres; "
            "also sparse (CSR) data",
        model="spherical k-means", cost="N·C·D",
        memory="N (labels, distances), N·D unit rows",
        sparse=True),
}

#: The presets whose every strategy takes sparse (CSR) rows, in the order of :data:`GUIDE`.
SPARSE_PRESETS = tuple(name for name, guide in GUIDE.items() if guide.sparse)
