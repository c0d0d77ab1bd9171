"""Data reducers: none, or a lightweight coreset (:mod:`.lwcs`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
