"""M-steps: hard, soft (isotropic GMM) and spherical centres (:mod:`.centres`), and the rules by
which batches update centres, empty clusters included (:mod:`.batch_rules`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
