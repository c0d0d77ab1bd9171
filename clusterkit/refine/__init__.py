"""Refiners: none, or breathing k-means (:mod:`.breathing`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
