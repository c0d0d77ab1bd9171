"""E-steps: exact Lloyd, Elkan and truncated (:mod:`.exact`), Yinyang/Hamerly bounds
(:mod:`.yinyang`), the skeleton and memory budget of both (:mod:`.bounds`), the memory-led
choice between the two (:mod:`.bounded`), exact dimension pruning (:mod:`.pruning`), the
rows a per-sample state covers (:mod:`.rows`), and the partial-neighbourhood variational
E-step (:mod:`.variational`, with :mod:`.neighbourhood_sums` for row chunks), and the
assignment under bounds on the clusters' sizes (:mod:`.balanced`, solved by
:mod:`.transport`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
