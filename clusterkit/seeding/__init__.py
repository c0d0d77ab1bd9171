"""Seeders: k-means++ and AFK-MC² (greedy or plain), random, sampled and by-dimension seeding
(:mod:`.seeders`), given initial centres, and a pilot fit as the seeding (:mod:`.pilot`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
