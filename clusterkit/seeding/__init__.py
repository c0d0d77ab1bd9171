"""Seeders: k-means++, random rows and given centres (:mod:`.seeders`), AFK-MC², greedy or
plain (:mod:`.afkmc2`), seeding on a sample or by the number of features (:mod:`.composite`),
a pilot fit as the seeding (:mod:`.pilot`), and seeders for many clusters, two-level k-means++
and k-means|| (:mod:`.many_clusters`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
