"""Scalable Laplacian K-modes: its E-step and M-step (:mod:`.laplacian`) and the kNN graph it
runs on (:mod:`.graph`, the only module that imports pynndescent).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
