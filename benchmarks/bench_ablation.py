"""The ablation of the documentation's "Ablations" page, run for real.

Four presets on a BIRCH grid (C = 400, N = 40,000) over five seeds with
:func:`clusterkit.ablate`; writes the two figures the page shows (``docs/images/``) and a
section of ``benchmarks/RESULTS.md`` with the mean ± sd per preset. Run with the OpenBLAS
override variables unset::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/bench_ablation.py --write
"""
import argparse
import shlex
import sys
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")

from clusterkit import ablate, plot_history, plot_tradeoff  # noqa: E402
from clusterkit.datasets import make_birch_grid  # noqa: E402

from _common import (RESULTS_PATH, format_table, machine_info,  # noqa: E402
                     warn_openblas_overrides, write_results)

TITLE = "Ablation example: four presets on the BIRCH grid (bench_ablation.py)"
IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write the RESULTS.md section")
    args = parser.parse_args()
    warn_openblas_overrides()
    X, _, _ = make_birch_grid(n_side=20, n_per_cluster=100, random_state=0)
    variants = {"lloyd": "lloyd", "lwcs_lloyd": "lwcs_lloyd", "var_kmeans_s": "var_kmeans_s",
                "vc_gmm": "vc_gmm"}
    table = ablate(X, 400, variants, seeds=args.seeds)
    IMAGES.mkdir(exist_ok=True)
    plot_history(table, objective="qe").savefig(IMAGES / "ablation_history.png", dpi=100)
    plot_tradeoff(table).savefig(IMAGES / "ablation_tradeoff.png", dpi=100)
    rows = []
    for name in variants:
        mine = table[table["variant"] == name]
        cell = lambda c, f: f"{mine[c].mean():{f}} ± {mine[c].std():.2g}"  # noqa: E731
        rows.append([name, cell("seconds", ".3g"), cell("qe", ".5g"), cell("eta", "+.3f"),
                     cell("n_distance_evals", ".3g"), cell("n_iter", ".3g")])
    markdown = format_table(["variant", "seconds", "quantization error", "η vs lloyd",
                             "distance evaluations", "iterations"], rows)
    markdown += ("\n\n![history](../docs/images/ablation_history.png)\n"
                 "![trade-off](../docs/images/ablation_tradeoff.png)")
    print(markdown)
    if args.write:
        notes = [f"`clusterkit.ablate(X, 400, ..., seeds={args.seeds})` on "
                 "`make_birch_grid(n_side=20, n_per_cluster=100, random_state=0)`; mean ± sd "
                 "over the seeds. The figures are those of the documentation's Ablations page.",
                 "Command: `" + " ".join(["env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE",
                                          "python"] + [shlex.quote(a) for a in sys.argv]) + "`"]
        write_results(RESULTS_PATH, TITLE, markdown, notes, machine_info())


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
