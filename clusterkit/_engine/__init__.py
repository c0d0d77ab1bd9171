"""The engine: the strategy contracts (:mod:`.contracts`), what every strategy shares
(:mod:`.strategy`, :mod:`.assignment`), the run's state (:mod:`.state`), the driver that runs
a composition (:mod:`.driver`), progress output (:mod:`.progress`) and user-facing warnings
(:mod:`.warn`).

Where the code lives, not an import path: users import from :mod:`clusterkit`.
"""
