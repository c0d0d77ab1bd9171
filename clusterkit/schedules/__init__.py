"""Schedules: full batches, mini-batches, nested doubling batches and stochastic backward Euler
(:mod:`.schedules`); the training of an IVF index's centroids (:mod:`.index`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
