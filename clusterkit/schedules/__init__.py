"""Schedules: full batches, mini-batches and stochastic backward Euler (:mod:`.schedules`),
nested doubling batches (:mod:`.nested`) in a keyed order of the rows (:mod:`.order`); the
training of an IVF index's centroids (:mod:`.index`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
