"""Schedules: full batches, mini-batches, nested doubling batches and stochastic backward Euler
(:mod:`.schedules`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
